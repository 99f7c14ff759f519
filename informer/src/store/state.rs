//! The store's shared state: the objects, their keys and the indexes, behind the one
//! lock that the [`Writer`](super::Writer) and every [`Indexer`](super::Indexer) hold.
//!
//! Layout: objects live in a slab of slots (`Vec`), a hash map gives each key its slot
//! id, and indexes map values to sets of slot ids. Index queries therefore read objects
//! straight from their slots (no second hash lookup per result), index sets hold 4-byte
//! ids, an update swaps the object in its slot with one hash lookup, and full scans walk
//! a contiguous vector. The update logic lives here, beside the layout it maintains, so
//! the writer and the readers see one definition of a slot.

use std::{
    collections::HashSet,
    sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard},
};

use super::{
    FastState, StoreError,
    index::{IdSet, Index, Indexers, Scratch},
};
use crate::key::{KeyCandidate, KeyFn, ObjectKey, ObjectKeyRef};
use crate::lock::RwLockExt;

/// One stored object and its key.
pub(super) struct Slot<K> {
    pub(super) key: Arc<ObjectKey>,
    pub(super) obj: Arc<K>,
    /// Bit `i`: index `i` files the object exactly under the key's namespace (see
    /// [`Index`]). Indexes from the 65th on never use the shortcut.
    under_key_ns: u64,
}

/// The bit of index number `i` in [`Slot::under_key_ns`] (none past 64 indexes).
fn index_bit(i: usize) -> u64 {
    1u64.checked_shl(i as u32).unwrap_or(0)
}

/// What the lock protects.
pub(super) struct State<K> {
    /// Key -> slot id; searched by `Arc<ObjectKey>` or by `ObjectKeyRef` (see
    /// [`crate::key`]).
    pub(super) ids: hashbrown::HashMap<Arc<ObjectKey>, u32, FastState>,
    /// The objects; `None` for a free slot.
    pub(super) slots: Vec<Option<Slot<K>>>,
    /// Free slot ids, reused first.
    pub(super) free: Vec<u32>,
    pub(super) indexes: Vec<Index<K>>,
}

/// The lock and the key function: what a [`Writer`](super::Writer) and its readers share.
pub(super) struct Shared<K> {
    pub(super) state: RwLock<State<K>>,
    pub(super) key_fn: KeyFn<K>,
}

impl<K> Shared<K> {
    // A panic in a user's index function poisons the lock; the store stays usable (the
    // interrupted object's index entries may be stale), as client-go's would.
    pub(super) fn read(&self) -> RwLockReadGuard<'_, State<K>> {
        self.state.read_locked()
    }

    pub(super) fn write(&self) -> RwLockWriteGuard<'_, State<K>> {
        self.state.write_locked()
    }
}

impl<K: 'static> State<K> {
    pub(super) fn new(indexes: Vec<Index<K>>) -> Self {
        Self {
            ids: hashbrown::HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            indexes,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.ids.len()
    }

    pub(super) fn index(&self, name: &str) -> Result<&Index<K>, StoreError> {
        self.indexes
            .iter()
            .find(|i| i.name == name)
            .ok_or_else(|| StoreError::IndexNotFound(name.to_owned()))
    }

    pub(super) fn slot(&self, id: u32) -> Option<&Slot<K>> {
        self.slots.get(id as usize).and_then(Option::as_ref)
    }

    pub(super) fn occupied(&self) -> impl Iterator<Item = (u32, &Slot<K>)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(id, slot)| Some((id as u32, slot.as_ref()?)))
    }

    pub(super) fn get(&self, key: ObjectKeyRef<'_>) -> Option<&Arc<K>> {
        let id = *self.ids.get(&key)?;
        self.slot(id).map(|s| &s.obj)
    }

    pub(super) fn contains_key(&self, key: ObjectKeyRef<'_>) -> bool {
        self.ids.contains_key(&key)
    }

    /// The key the store holds for `key`, if any.
    pub(super) fn stored_key(&self, key: ObjectKeyRef<'_>) -> Option<Arc<ObjectKey>> {
        self.ids.get_key_value(&key).map(|(k, _)| Arc::clone(k))
    }

    /// Stores `obj` (updating its slot if the key is stored, allocating the key only if
    /// not); returns the slot id and the replaced object.
    pub(super) fn upsert(
        &mut self,
        key: KeyCandidate<'_>,
        obj: &Arc<K>,
        scratch: &mut Scratch,
    ) -> (u32, Option<Arc<K>>) {
        // A key shared with the DeltaFIFO is normally the stored allocation itself:
        // looked up as an `Arc<ObjectKey>`, it compares by address first.
        let key = match key {
            KeyCandidate::Shared(key) => Ok(key),
            other => Err(other),
        };
        let found = match &key {
            Ok(shared) => self.ids.get(shared),
            Err(candidate) => self.ids.get(&candidate.key_ref()),
        };
        if let Some(&id) = found
            && let Some(slot) = self.slots.get_mut(id as usize).and_then(Option::as_mut)
        {
            let old = std::mem::replace(&mut slot.obj, Arc::clone(obj));
            // The key equals the stored key: same namespace.
            let key_ns = match &key {
                Ok(shared) => shared.namespace.as_deref(),
                Err(candidate) => candidate.key_ref().namespace,
            };
            let mut under_key_ns = 0;
            for (i, index) in self.indexes.iter_mut().enumerate() {
                let bit = index_bit(i);
                let old_under = slot.under_key_ns & bit != 0;
                if index.update(id, &old, obj, key_ns, old_under, scratch) {
                    under_key_ns |= bit;
                }
            }
            slot.under_key_ns = under_key_ns;
            return (id, Some(old));
        }
        let key = key.unwrap_or_else(KeyCandidate::into_shared);
        (self.insert(key, Arc::clone(obj)), None)
    }

    /// Stores `obj` under `key`, which is not stored yet.
    fn insert(&mut self, key: Arc<ObjectKey>, obj: Arc<K>) -> u32 {
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.slots.push(None);
                (self.slots.len() - 1) as u32
            }
        };
        let key_ns = key.namespace.as_deref();
        let mut under_key_ns = 0;
        for (i, index) in self.indexes.iter_mut().enumerate() {
            if index.add(id, &obj, key_ns) {
                under_key_ns |= index_bit(i);
            }
        }
        self.ids.insert(Arc::clone(&key), id);
        self.slots[id as usize] = Some(Slot {
            key,
            obj,
            under_key_ns,
        });
        id
    }

    pub(super) fn remove(&mut self, key: ObjectKeyRef<'_>) -> Option<Arc<K>> {
        let id = self.ids.remove(&key)?;
        self.free_slot(id)
    }

    /// Empties slot `id` (whose key is already out of `ids`), unindexing its object.
    pub(super) fn free_slot(&mut self, id: u32) -> Option<Arc<K>> {
        let slot = self.slots.get_mut(id as usize)?.take()?;
        let key_ns = slot.key.namespace.as_deref();
        for (i, index) in self.indexes.iter_mut().enumerate() {
            let under_key_ns = slot.under_key_ns & index_bit(i) != 0;
            index.remove(id, &slot.obj, key_ns, under_key_ns);
        }
        self.free.push(id);
        Some(slot.obj)
    }

    pub(super) fn add_indexes(&mut self, indexers: Indexers<K>) -> Result<(), StoreError> {
        let mut seen = HashSet::new();
        for name in indexers.names() {
            if !seen.insert(name) || self.index(name).is_ok() {
                return Err(StoreError::IndexConflict(name.to_owned()));
            }
        }
        for (name, func) in indexers.entries {
            let mut index = Index::new(name, func);
            let bit = index_bit(self.indexes.len());
            for (id, slot) in self.slots.iter_mut().enumerate() {
                let Some(slot) = slot else { continue };
                if index.add(id as u32, &slot.obj, slot.key.namespace.as_deref()) {
                    slot.under_key_ns |= bit;
                }
            }
            self.indexes.push(index);
        }
        Ok(())
    }

    pub(super) fn objects_of<'a>(&'a self, ids: &'a IdSet) -> impl Iterator<Item = &'a Arc<K>> {
        ids.iter().filter_map(|&id| self.slot(id).map(|s| &s.obj))
    }
}
