//! [`Tombstones`]: the last state of deleted primaries whose cleanup is still due,
//! kept from the informer's deletion until a worker runs the cleanup.
//!
//! A replica that is not working a key (a standby under leader election, or a shard
//! member the key has moved away from) must not keep them for ever: a standby sees
//! every deletion while another replica cleans up, and in a cluster that creates
//! and deletes objects under fresh names that is a leak of whole objects. So each
//! tombstone records when it was made, and the controller forgets what it will
//! not clean up (see the `leading` and `sharding` modules).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::key::ObjectKey;
use crate::lock::MutexExt;

/// Deleted primaries by key, each with its last known state.
pub(crate) struct Tombstones<K> {
    entries: Mutex<HashMap<ObjectKey, Tombstone<K>>>,
}

struct Tombstone<K> {
    last_known: Arc<K>,
    /// When the deletion was seen (or the failed cleanup put it back).
    since: Instant,
}

impl<K> Default for Tombstones<K> {
    fn default() -> Self {
        Self {
            entries: Mutex::default(),
        }
    }
}

impl<K> Tombstones<K> {
    /// The informer reported `key` deleted, last seen as `last_known`.
    pub(crate) fn insert(&self, key: ObjectKey, last_known: Arc<K>) {
        let since = Instant::now();
        self.entries
            .locked()
            .insert(key, Tombstone { last_known, since });
    }

    /// Takes `key`'s tombstone, to clean up after it (or because the key exists
    /// again).
    pub(crate) fn take(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.entries.locked().remove(key).map(|t| t.last_known)
    }

    /// `key`'s tombstone, left in place.
    pub(crate) fn last_known(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.entries
            .locked()
            .get(key)
            .map(|t| Arc::clone(&t.last_known))
    }

    /// The keys with a tombstone.
    pub(crate) fn keys(&self) -> Vec<ObjectKey> {
        self.entries.locked().keys().cloned().collect()
    }

    /// Forgets the tombstones made more than `age` ago.
    pub(crate) fn forget_older_than(&self, age: Duration) {
        let now = Instant::now();
        self.entries
            .locked()
            .retain(|_, tombstone| now.duration_since(tombstone.since) <= age);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.locked().len()
    }
}

/// Shared by the primary informer's deletion handler and the workers.
pub(crate) type SharedTombstones<K> = Arc<Tombstones<K>>;

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(Some("ns".into()), name)
    }

    #[tokio::test(start_paused = true)]
    async fn tombstones_are_taken_once_and_forgotten_by_age() {
        let tombstones = Tombstones::default();
        tombstones.insert(key("old"), Arc::new(1));
        tokio::time::advance(Duration::from_secs(10)).await;
        tombstones.insert(key("new"), Arc::new(2));
        tombstones.insert(key("moved"), Arc::new(3));
        assert_eq!(tombstones.len(), 3);

        tombstones.forget_older_than(Duration::from_secs(5));
        let mut keys = tombstones.keys();
        keys.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(keys, [key("moved"), key("new")]);

        assert_eq!(tombstones.last_known(&key("moved")).as_deref(), Some(&3));
        assert_eq!(tombstones.take(&key("moved")).as_deref(), Some(&3));
        assert_eq!(tombstones.take(&key("new")).as_deref(), Some(&2));
        assert_eq!(tombstones.take(&key("new")), None);
        assert_eq!(tombstones.len(), 0);
    }
}
