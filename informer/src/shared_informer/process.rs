//! The process loop (client-go's `processLoop` and `HandleDeltas`): pops deltas from
//! the informer's queue, writes them to the cache first, then hands the notifications
//! to the handlers.

use std::sync::Arc;
#[cfg(feature = "metrics")]
use std::time::Instant;

use crate::object::{Meta, Object};

use super::handler::Notification;
use super::inner::Inner;
use super::listener::Listener;
use super::processor::Processor;
use crate::consistency::Applying;
use crate::fifo::{Delta, DeltaBatch, Deltas};
use crate::lock::MutexExt;
use crate::store::WriteBatch;

/// Pops (keys, or single changes in order) processed at most between two wake-ups of
/// the handlers while the queue stays busy.
const WAKE_EVERY: usize = 256;

/// Pops applied under one acquisition of the queue's, the cache's and the handler
/// list's locks. Readers of the cache wait for at most this many updates.
const POP_BATCH: usize = 32;

impl<K: Object + Send + Sync + 'static> Inner<K> {
    /// Pops and applies deltas until the queue is closed.
    pub(super) async fn process(&self) {
        let mut since_wake = 0usize;
        let mut announced_sync = false;
        loop {
            let popped = self
                .queue
                .pop_batch(POP_BATCH, |batch| self.handle_batch(batch))
                .await;
            let Some((processed, drained)) = popped else {
                break;
            };
            // Handlers are woken when the queue runs dry (and at least every
            // `WAKE_EVERY` keys while it does not), not for every notification.
            since_wake += processed;
            if since_wake >= WAKE_EVERY || drained {
                since_wake = 0;
                self.processor.wake();
            }
            if drained {
                self.tracker.drained();
            }
            if !announced_sync && self.has_synced() {
                announced_sync = true;
                self.sync_signal.announce();
            }
        }
    }

    /// Applies the deltas of one batch, each as [`handle_deltas`](Self::handle_deltas),
    /// with the writer, the cache and the handler list locked once for the batch;
    /// returns how many pops it applied. With the `metrics` feature, its time is the
    /// processing latency.
    fn handle_batch(&self, batch: &mut dyn DeltaBatch<K>) -> usize {
        #[cfg(feature = "metrics")]
        let started = Instant::now();
        let processed = self.apply_batch(batch);
        #[cfg(feature = "metrics")]
        self.processing_latency.record(started.elapsed());
        processed
    }

    fn apply_batch(&self, batch: &mut dyn DeltaBatch<K>) -> usize {
        let mut writer = self.writer.locked();
        let mut store = writer.batch();
        let mut tracked = self.tracker.applying();
        let listeners = self.processor.listeners();
        let mut processed = 0;
        while batch.apply_next(&mut |deltas| {
            self.handle_deltas(&mut store, &mut tracked, &listeners, deltas);
        }) {
            processed += 1;
        }
        processed
    }

    /// Applies one key's deltas: the cache first, then the handlers (client-go's
    /// `HandleDeltas`).
    fn handle_deltas(
        &self,
        writer: &mut WriteBatch<'_, K>,
        tracked: &mut Applying<'_>,
        listeners: &[Arc<Listener<K>>],
        deltas: &Deltas<K>,
    ) {
        let distribute = |notification, is_resync| {
            Processor::distribute_to(listeners, notification, is_resync);
        };
        let is_initial_list = deltas.is_initial_list();
        let key = deltas.key();
        for delta in deltas.iter() {
            match delta {
                Delta::Added(object)
                | Delta::Updated(object)
                | Delta::Sync(object)
                | Delta::Replaced(object) => match writer.upsert_keyed(key, Arc::clone(object)) {
                    Some(old) => {
                        tracked.replaced(old.metadata(), object.metadata());
                        let is_resync = matches!(delta, Delta::Sync(_))
                            || (matches!(delta, Delta::Replaced(_))
                                && same_version(old.as_ref(), object.as_ref()));
                        distribute(
                            Notification::Update {
                                old,
                                new: Arc::clone(object),
                            },
                            is_resync,
                        );
                    }
                    None => {
                        tracked.added(object.metadata());
                        distribute(
                            Notification::Add {
                                object: Arc::clone(object),
                                is_initial_list,
                            },
                            false,
                        );
                    }
                },
                Delta::Deleted(deleted) => {
                    // Handlers hear of the deletion of what they were told exists. The
                    // in-order queue queues every deletion (client-go's RealFIFO), also
                    // one for an object already gone from the cache, e.g. a watch
                    // DELETED after a relist or an undecodable update removed it.
                    if let Some(old) = writer.delete_key(key) {
                        tracked.removed(old.metadata());
                        distribute(Notification::Delete(deleted.clone()), false);
                    }
                }
            }
        }
    }
}

fn same_version<K: Object>(old: &K, new: &K) -> bool {
    let (old, new) = (
        old.metadata().resource_version(),
        new.metadata().resource_version(),
    );
    old.is_some() && old == new
}
