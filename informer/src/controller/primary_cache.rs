//! [`PrimaryCache`]: what a replica must look at when keys become its own (a term
//! starts, a shard grows): every cached primary, and every deleted one whose cleanup
//! is still due.

use std::sync::Arc;

use crate::object::{Meta, Object};

use super::tombstones::SharedTombstones;
use crate::key::ObjectKey;
use crate::store::Indexer;

/// The uid of the primary under a key, as a [`PrimaryCache`] knows it.
type UidOf = Arc<dyn Fn(&ObjectKey) -> Option<String> + Send + Sync>;

/// The controller's primary cache and its tombstones.
pub(crate) struct PrimaryCache<K> {
    pub(crate) cache: Indexer<K>,
    pub(crate) tombstones: SharedTombstones<K>,
    /// The uid of the primary cached under a key, else of its last known state (a
    /// deletion whose cleanup is due): what a shard deciding by uid decides the key
    /// by. Erased, so that the replication modes need no bound on the primary type.
    uid_of: UidOf,
}

impl<K: Object + Send + Sync + 'static> PrimaryCache<K> {
    /// The primaries of `cache`, and the deletions of `tombstones`.
    pub(crate) fn new(cache: Indexer<K>, tombstones: SharedTombstones<K>) -> Self {
        let uid_of: UidOf = {
            let cache = cache.clone();
            let tombstones = Arc::clone(&tombstones);
            Arc::new(move |key: &ObjectKey| {
                cache
                    .get(key)
                    .or_else(|| tombstones.last_known(key))
                    .and_then(|object| object.metadata().uid().map(str::to_owned))
            })
        };
        Self {
            cache,
            tombstones,
            uid_of,
        }
    }
}

impl<K: 'static> PrimaryCache<K> {
    /// Every cached primary's key, then every key with a tombstone.
    pub(crate) fn keys(&self) -> Vec<Arc<ObjectKey>> {
        let mut keys = self.cache.list_keys();
        keys.extend(self.tombstones.keys().into_iter().map(Arc::new));
        keys
    }

    /// Looks up the uid of the primary under a key (see the field); cheap to clone.
    pub(crate) fn uid_of(&self) -> UidOf {
        Arc::clone(&self.uid_of)
    }
}
