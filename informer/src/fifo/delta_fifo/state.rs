//! The DeltaFIFO's state under its lock: the deltas per key, the pop order, and the
//! counters its sync rule reads; with how a change is queued, taken and requeued.

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

use hashbrown::{Equivalent, HashTable, hash_table::Entry};
use tokio::sync::Notify;

use crate::fifo::queue_state::QueueState;
use crate::fifo::{DeletedFinalStateUnknown, DeletedObject, Delta, Deltas, KnownObjects};
use crate::key::{KeyCandidate, KeyFn, ObjectKey, ObjectKeyRef};
use crate::store::FastState;

pub(super) struct Shared<K> {
    pub(super) state: Mutex<State<K>>,
    pub(super) notify: Notify,
    pub(super) key_fn: KeyFn<K>,
    pub(super) known: Option<Arc<dyn KnownObjects<K>>>,
    pub(super) emit_replaced: bool,
}

pub(super) struct State<K> {
    /// Pending deltas, found by the hash of their key; a key is here if and only if it
    /// is in `queue`.
    pub(super) items: HashTable<Deltas<K>>,
    pub(super) hasher: FastState,
    /// Keys in pop order, each once, with their hash.
    pub(super) queue: VecDeque<Queued>,
    /// Some operation (other than `resync`) has happened.
    pub(super) populated: bool,
    /// Keys of the first `replace` not yet processed.
    pub(super) initial_pending: usize,
    /// Pops waiting for a key: producers wake one only if there is one.
    pub(super) waiters: usize,
    pub(super) closed: bool,
    /// How many `replace` calls there were; the keys the latest one listed carry its
    /// number in [`Deltas::listed_by`].
    pub(super) replaces: u64,
}

/// A queued key and its hash (the same allocation as the key of its [`Deltas`]).
pub(super) struct Queued {
    pub(super) hash: u64,
    pub(super) key: Arc<ObjectKey>,
}

impl<K> State<K> {
    pub(super) fn hash(&self, key: ObjectKeyRef<'_>) -> u64 {
        self.hasher.hash_one(key)
    }

    /// The deltas queued for `key` (an `ObjectKeyRef`, or an `Arc<ObjectKey>` compared
    /// by address first), whose hash is `hash`.
    pub(super) fn find<Q>(&self, hash: u64, key: &Q) -> Option<&Deltas<K>>
    where
        Q: Equivalent<Arc<ObjectKey>> + ?Sized,
    {
        self.items.find(hash, |d| key.equivalent(&d.key))
    }

    pub(super) fn find_mut<Q>(&mut self, hash: u64, key: &Q) -> Option<&mut Deltas<K>>
    where
        Q: Equivalent<Arc<ObjectKey>> + ?Sized,
    {
        self.items.find_mut(hash, |d| key.equivalent(&d.key))
    }

    /// The key the known objects hold for `candidate` (whose key is not queued), or a
    /// new one.
    pub(super) fn new_key(
        candidate: KeyCandidate<'_>,
        known: Option<&dyn KnownObjects<K>>,
    ) -> Arc<ObjectKey> {
        match known.and_then(|k| k.get_key(candidate.key_ref())) {
            Some(key) => key,
            None => candidate.into_shared(),
        }
    }

    /// Queues a tombstoned deletion of `key` carrying `last_known`.
    pub(super) fn push_tombstone(
        &mut self,
        hash: u64,
        key: Arc<ObjectKey>,
        last_known: Arc<K>,
        initial: bool,
    ) {
        let tombstone = DeletedFinalStateUnknown {
            key: Arc::clone(&key),
            last_known,
        };
        let delta = Delta::Deleted(DeletedObject::Unknown(tombstone));
        self.push(hash, key, delta, initial);
    }

    /// Appends `delta` to the deltas of `key` (whose hash is `hash`), queueing the key
    /// if it is new. With `initial`, the key joins the initial list. Returns the key's
    /// deltas.
    pub(super) fn push(
        &mut self,
        hash: u64,
        key: Arc<ObjectKey>,
        delta: Delta<K>,
        initial: bool,
    ) -> &mut Deltas<K> {
        let entry = self
            .items
            .entry(hash, |d| key.equivalent(&d.key), |d| d.hash);
        let deltas = match entry {
            Entry::Occupied(entry) => {
                let deltas = entry.into_mut();
                deltas.push(delta);
                deltas
            }
            Entry::Vacant(entry) => {
                self.queue.push_back(Queued {
                    hash,
                    key: Arc::clone(&key),
                });
                entry.insert(Deltas::new(key, hash, delta)).into_mut()
            }
        };
        if initial && !deltas.initial {
            deltas.initial = true;
            self.initial_pending += 1;
        }
        deltas
    }

    /// Appends a delta made from `obj`, allocating a key only if neither the queue nor the
    /// known objects hold one. The key is hashed once.
    pub(super) fn push_object(
        &mut self,
        shared: &Shared<K>,
        obj: Arc<K>,
        make: fn(Arc<K>) -> Delta<K>,
    ) {
        let candidate = shared.key_fn.candidate(&obj);
        let hash = self.hash(candidate.key_ref());
        if let Some(deltas) = self.find_mut(hash, &candidate.key_ref()) {
            deltas.push(make(Arc::clone(&obj)));
            return;
        }
        let key = Self::new_key(candidate, shared.known.as_deref());
        self.queue.push_back(Queued {
            hash,
            key: Arc::clone(&key),
        });
        self.items
            .insert_unique(hash, Deltas::new(key, hash, make(obj)), |d| d.hash);
    }

    /// Removes the deltas of the queued key `key` (just taken from `queue`).
    pub(super) fn take(&mut self, hash: u64, key: &Arc<ObjectKey>) -> Option<Deltas<K>> {
        // `Arc<ObjectKey>` equality compares addresses first, and the queue and the map
        // share the key allocation: no string is read.
        let found = self.items.find_entry(hash, |d| key.equivalent(&d.key));
        let Ok(found) = found else {
            tracing::error!(%key, "DeltaFIFO invariant broken: queued key without deltas");
            return None;
        };
        let (deltas, _) = found.remove();
        if deltas.initial {
            self.initial_pending -= 1;
        }
        Some(deltas)
    }

    /// Puts taken deltas back at the end of the queue.
    pub(super) fn requeue(&mut self, hash: u64, key: Arc<ObjectKey>, deltas: Deltas<K>) {
        if deltas.initial {
            self.initial_pending += 1;
        }
        self.queue.push_back(Queued { hash, key });
        self.items.insert_unique(hash, deltas, |d| d.hash);
    }
}

impl<K> QueueState for State<K> {
    fn len(&self) -> usize {
        self.queue.len()
    }
    fn is_closed(&self) -> bool {
        self.closed
    }
    fn set_closed(&mut self) {
        self.closed = true;
    }
    fn has_synced(&self) -> bool {
        self.populated && self.initial_pending == 0
    }
    fn waiters_mut(&mut self) -> &mut usize {
        &mut self.waiters
    }
}
