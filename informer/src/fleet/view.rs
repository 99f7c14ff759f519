//! [`FleetInformer`]: one type's informers in every cluster of a fleet, read as one.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use super::cluster::{Cluster, InCluster};
use super::set::{AnySpread, ClusterSet};
use crate::factory::Cacheable;
use crate::lister::Lister;
use crate::reflector::Phase;
use crate::store::{AsIndexKey, Index, Selector};

/// What [`FleetInformer::troubled`] says of a member whose watch failed and whose
/// lists have not (yet).
const BACKING_OFF: &str = "its watch failed; backing off before the next attempt";

/// The informer of `K` in every member of a [`ClusterSet`], now and to come, read as
/// one: lists and index queries across clusters, each result with its cluster's
/// name. From [`ClusterSet::informer`].
pub struct FleetInformer<K> {
    set: ClusterSet<AnySpread>,
    _type: PhantomData<fn() -> K>,
}

impl<K> Clone for FleetInformer<K> {
    fn clone(&self) -> Self {
        Self {
            set: self.set.clone(),
            _type: PhantomData,
        }
    }
}

impl<K> fmt::Debug for FleetInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetInformer")
            .field("type", &std::any::type_name::<K>())
            .field("set", &self.set)
            .finish()
    }
}

impl<S> ClusterSet<S> {
    /// The informer of `K` in every member, now and to come (each member's factory
    /// makes it and starts it as the member joins).
    pub fn informer<K: Cacheable>(&self) -> FleetInformer<K> {
        self.on_join(Arc::new(|cluster: &Cluster| {
            cluster.factory().informer::<K>();
        }));
        FleetInformer {
            set: self.with_spread(),
            _type: PhantomData,
        }
    }
}

impl<K> FleetInformer<K>
where
    K: Cacheable,
{
    /// Each member's lister, with the member.
    pub fn listers(&self) -> Vec<(Cluster, Lister<K>)> {
        self.set
            .clusters()
            .into_iter()
            .map(|cluster| {
                let lister = cluster.factory().informer::<K>().lister();
                (cluster, lister)
            })
            .collect()
    }

    /// What `query` returns from each member's lister, each with its cluster's name.
    pub fn query<T>(&self, query: impl Fn(&Lister<K>) -> Vec<T>) -> Vec<InCluster<T>> {
        let mut found = Vec::new();
        for (cluster, lister) in self.listers() {
            let name = cluster.shared_name();
            found.extend(query(&lister).into_iter().map(|value| InCluster {
                cluster: Arc::clone(&name),
                value,
            }));
        }
        found
    }

    /// Every cached object in every member.
    pub fn list_all(&self) -> Vec<InCluster<Arc<K>>> {
        self.query(Lister::list_all)
    }

    /// The cached objects matching `selector` in every member.
    pub fn list(&self, selector: &Selector) -> Vec<InCluster<Arc<K>>> {
        self.query(|lister| lister.list(selector))
    }

    /// The objects of every member whose index `I` holds `value`.
    pub fn by_index<I: Index<K>>(
        &self,
        value: impl AsIndexKey<I::Value> + Clone,
    ) -> Vec<InCluster<Arc<K>>> {
        self.query(|lister| lister.by_index::<I>(value.clone()))
    }

    /// Whether every member's informer has synced (true for no member).
    pub fn has_synced(&self) -> bool {
        self.listers().iter().all(|(_, lister)| lister.has_synced())
    }

    /// The members whose informer has not synced, whose last list failed (and no list
    /// succeeded since), or which is backing off after a failed watch, with the
    /// error: a cluster that cannot be reached is named here while it cannot, and
    /// leaves the list by itself once it can again.
    pub fn troubled(&self) -> Vec<InCluster<Option<String>>> {
        self.set
            .clusters()
            .into_iter()
            .filter_map(|cluster| {
                let informer = cluster.factory().informer::<K>();
                let backing_off = informer
                    .reflector_stats()
                    .is_some_and(|stats| stats.phase == Phase::BackingOff);
                let error = informer
                    .last_sync_error()
                    .map(|error| error.to_string())
                    .or_else(|| backing_off.then(|| BACKING_OFF.to_owned()));
                (!informer.has_synced() || error.is_some()).then(|| InCluster {
                    cluster: cluster.shared_name(),
                    value: error,
                })
            })
            .collect()
    }
}
