//! A factory's informers as the metrics see them (feature `metrics`): sampled at each
//! scrape from the factory's state.

use std::sync::{Mutex, Weak};

use super::state::State;
use crate::lock::MutexExt;

/// A factory's informers as the metrics see them, held weakly: metrics do not keep a
/// dropped factory's informers alive.
pub(super) struct FactoryInformers(pub(super) Weak<Mutex<State>>);

impl crate::metrics::InformerSource for FactoryInformers {
    fn sample(&self, samples: &mut Vec<crate::metrics::InformerSample>) -> bool {
        let Some(state) = self.0.upgrade() else {
            return false;
        };
        let state = state.locked();
        samples.extend(state.informers.values().map(|entry| {
            let mut sample = entry.informer.sample(&entry.name);
            sample.projection = entry.projection;
            sample
        }));
        true
    }
}
