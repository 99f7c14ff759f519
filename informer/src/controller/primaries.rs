//! [`Primaries`]: what a replica must look at when keys become its own (a term
//! starts, a shard grows): every cached primary, and every deleted one whose cleanup
//! is still due.

use std::sync::Arc;

use super::tombstones::SharedTombstones;
use crate::key::ObjectKey;
use crate::store::Indexer;

/// The controller's primary cache and its tombstones.
pub(crate) struct Primaries<K> {
    pub(crate) cache: Indexer<K>,
    pub(crate) tombstones: SharedTombstones<K>,
}

impl<K: 'static> Primaries<K> {
    /// Every cached primary's key, then every key with a tombstone.
    pub(crate) fn keys(&self) -> Vec<Arc<ObjectKey>> {
        let mut keys = self.cache.list_keys();
        keys.extend(self.tombstones.keys().into_iter().map(Arc::new));
        keys
    }
}
