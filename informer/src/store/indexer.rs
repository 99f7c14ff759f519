//! The thread-safe indexed store, split into one [`Writer`] and many [`Indexer`] readers.
//!
//! Layout: objects live in a slab of slots (`Vec`), a hash map gives each key its slot
//! id, and indexes map values to sets of slot ids. Index queries therefore read objects
//! straight from their slots (no second hash lookup per result), index sets hold 4-byte
//! ids, an update swaps the object in its slot with one hash lookup, and full scans walk
//! a contiguous vector.

use std::{
    collections::HashSet,
    fmt,
    sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard},
};

use kube::Resource;

use super::{
    FastState, StoreError,
    index::{IdSet, Index, IndexedField, Indexers, NAMESPACE_INDEX, NamespaceIndex, Scratch},
    selector::{Operator, Requirement, Selector},
};
use crate::key::{KeyCandidate, KeyFn, ObjectKey, ObjectKeyRef};
use crate::lock::RwLockExt;
use crate::reflector::CachedObjects;

/// One stored object and its key.
struct Slot<K> {
    key: Arc<ObjectKey>,
    obj: Arc<K>,
    /// Bit `i`: index `i` files the object exactly under the key's namespace (see
    /// [`Index`]). Indexes from the 65th on never use the shortcut.
    under_key_ns: u64,
}

/// The bit of index number `i` in [`Slot::under_key_ns`] (none past 64 indexes).
fn index_bit(i: usize) -> u64 {
    1u64.checked_shl(i as u32).unwrap_or(0)
}

/// What the lock protects.
struct State<K> {
    /// Key -> slot id; searched by `Arc<ObjectKey>` or by `ObjectKeyRef` (see
    /// [`crate::key`]).
    ids: hashbrown::HashMap<Arc<ObjectKey>, u32, FastState>,
    /// The objects; `None` for a free slot.
    slots: Vec<Option<Slot<K>>>,
    /// Free slot ids, reused first.
    free: Vec<u32>,
    indexes: Vec<Index<K>>,
}

struct Shared<K> {
    state: RwLock<State<K>>,
    key_fn: KeyFn<K>,
}

impl<K> Shared<K> {
    // A panic in a user's index function poisons the lock; the store stays usable (the
    // interrupted object's index entries may be stale), as client-go's would.
    fn read(&self) -> RwLockReadGuard<'_, State<K>> {
        self.state.read_locked()
    }

    fn write(&self) -> RwLockWriteGuard<'_, State<K>> {
        self.state.write_locked()
    }
}

impl<K: 'static> State<K> {
    fn new(indexes: Vec<Index<K>>) -> Self {
        Self {
            ids: hashbrown::HashMap::default(),
            slots: Vec::new(),
            free: Vec::new(),
            indexes,
        }
    }

    fn len(&self) -> usize {
        self.ids.len()
    }

    fn index(&self, name: &str) -> Result<&Index<K>, StoreError> {
        self.indexes
            .iter()
            .find(|i| i.name == name)
            .ok_or_else(|| StoreError::IndexNotFound(name.to_owned()))
    }

    fn slot(&self, id: u32) -> Option<&Slot<K>> {
        self.slots.get(id as usize).and_then(Option::as_ref)
    }

    fn occupied(&self) -> impl Iterator<Item = (u32, &Slot<K>)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(id, slot)| Some((id as u32, slot.as_ref()?)))
    }

    fn get(&self, key: ObjectKeyRef<'_>) -> Option<&Arc<K>> {
        let id = *self.ids.get(&key)?;
        self.slot(id).map(|s| &s.obj)
    }

    fn contains_key(&self, key: ObjectKeyRef<'_>) -> bool {
        self.ids.contains_key(&key)
    }

    /// The key the store holds for `key`, if any.
    fn stored_key(&self, key: ObjectKeyRef<'_>) -> Option<Arc<ObjectKey>> {
        self.ids.get_key_value(&key).map(|(k, _)| Arc::clone(k))
    }

    /// Stores `obj` (updating its slot if the key is stored, allocating the key only if
    /// not); returns the slot id and the replaced object.
    fn upsert(
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

    fn remove(&mut self, key: ObjectKeyRef<'_>) -> Option<Arc<K>> {
        let id = self.ids.remove(&key)?;
        self.free_slot(id)
    }

    /// Empties slot `id` (whose key is already out of `ids`), unindexing its object.
    fn free_slot(&mut self, id: u32) -> Option<Arc<K>> {
        let slot = self.slots.get_mut(id as usize)?.take()?;
        let key_ns = slot.key.namespace.as_deref();
        for (i, index) in self.indexes.iter_mut().enumerate() {
            let under_key_ns = slot.under_key_ns & index_bit(i) != 0;
            index.remove(id, &slot.obj, key_ns, under_key_ns);
        }
        self.free.push(id);
        Some(slot.obj)
    }

    fn add_indexes(&mut self, indexers: Indexers<K>) -> Result<(), StoreError> {
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

    fn objects_of<'a>(&'a self, ids: &'a IdSet) -> impl Iterator<Item = &'a Arc<K>> {
        ids.iter().filter_map(|&id| self.slot(id).map(|s| &s.obj))
    }
}

/// The write half of the store: the only handle that changes the objects.
///
/// Owned by whoever keeps the store in sync (the informer's process loop). Not `Clone`:
/// one writer, many [`Indexer`] readers, as kube-runtime's `reflector::store::Writer`.
pub struct Writer<K> {
    shared: Arc<Shared<K>>,
    scratch: Scratch,
}

impl<K: Resource + 'static> Writer<K> {
    /// An empty store keyed by [`KeyFn::meta_namespace`] with the namespace index.
    pub fn new() -> Self {
        let namespace = Index::new(NAMESPACE_INDEX.to_owned(), Arc::new(NamespaceIndex));
        Self::from_parts(KeyFn::meta_namespace(), vec![namespace])
    }
}

impl<K: Resource + 'static> Default for Writer<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: 'static> Writer<K> {
    /// An empty store keyed by `key_fn`, with no index.
    pub fn with_key_fn(key_fn: KeyFn<K>) -> Self {
        Self::from_parts(key_fn, Vec::new())
    }

    /// An empty store keyed by `key_fn` with `indexers`; fails if two share a name.
    pub fn with_indexers(key_fn: KeyFn<K>, indexers: Indexers<K>) -> Result<Self, StoreError> {
        let writer = Self::with_key_fn(key_fn);
        writer.shared.write().add_indexes(indexers)?;
        Ok(writer)
    }

    fn from_parts(key_fn: KeyFn<K>, indexes: Vec<Index<K>>) -> Self {
        Self {
            shared: Arc::new(Shared {
                state: RwLock::new(State::new(indexes)),
                key_fn,
            }),
            scratch: Scratch::default(),
        }
    }

    /// A new reader handle on this store.
    pub fn indexer(&self) -> Indexer<K> {
        Indexer {
            shared: Arc::clone(&self.shared),
        }
    }

    /// The key function of this store.
    pub fn key_fn(&self) -> &KeyFn<K> {
        &self.shared.key_fn
    }

    /// Adds or updates `obj` under its key (client-go's `Add` and `Update`), keeping every
    /// index current; returns the object it replaced.
    pub fn upsert(&mut self, obj: impl Into<Arc<K>>) -> Option<Arc<K>> {
        let obj = obj.into();
        let key = self.shared.key_fn.candidate(&obj);
        self.shared.write().upsert(key, &obj, &mut self.scratch).1
    }

    /// Like [`upsert`](Self::upsert) with the key already known (e.g. the key of the
    /// [`Deltas`](crate::fifo::Deltas) being processed), sharing that key allocation.
    pub fn upsert_keyed(&mut self, key: &Arc<ObjectKey>, obj: Arc<K>) -> Option<Arc<K>> {
        self.batch().upsert_keyed(key, obj)
    }

    /// Several writes under one acquisition of the store's lock (readers wait until the
    /// batch is dropped).
    pub(crate) fn batch(&mut self) -> WriteBatch<'_, K> {
        let Self { shared, scratch } = self;
        WriteBatch {
            state: shared.write(),
            scratch,
        }
    }

    /// Removes the object stored under the key of `obj`; returns it.
    pub fn delete(&mut self, obj: &K) -> Option<Arc<K>> {
        let candidate = self.shared.key_fn.candidate(obj);
        self.shared.write().remove(candidate.key_ref())
    }

    /// Removes the object stored under `key`; returns it.
    pub fn delete_key(&mut self, key: &ObjectKey) -> Option<Arc<K>> {
        self.batch().delete_key(key)
    }

    /// Replaces the whole content with `objects` (client-go's `Replace`), atomically for
    /// readers.
    ///
    /// Objects still listed are updated in place and the others removed, with the
    /// indexes updated incrementally, so the store never holds two copies of its
    /// content: each old object is released as soon as its replacement is stored.
    pub fn replace<I>(&mut self, objects: I)
    where
        I: IntoIterator,
        I::Item: Into<Arc<K>>,
    {
        let mut state = self.shared.write();
        let mut listed = vec![false; state.slots.len()];
        for obj in objects {
            let obj: Arc<K> = obj.into();
            let key = self.shared.key_fn.candidate(&obj);
            // A replaced object is dropped right here.
            let (id, _replaced) = state.upsert(key, &obj, &mut self.scratch);
            let id = id as usize;
            if id >= listed.len() {
                listed.resize(id + 1, false);
            }
            listed[id] = true;
        }
        for (id, listed) in listed.into_iter().enumerate() {
            if listed {
                continue;
            }
            let id = id as u32;
            let Some(key) = state.slot(id).map(|slot| Arc::clone(&slot.key)) else {
                continue;
            };
            state.ids.remove(&key);
            state.free_slot(id);
        }
    }

    /// Removes every object (indexes stay defined, empty).
    pub fn clear(&mut self) {
        let mut state = self.shared.write();
        state.ids.clear();
        state.slots.clear();
        state.free.clear();
        for index in &mut state.indexes {
            index.clear();
        }
    }
}

/// Writes under one acquisition of the store's write lock, from [`Writer::batch`].
pub(crate) struct WriteBatch<'a, K> {
    state: RwLockWriteGuard<'a, State<K>>,
    scratch: &'a mut Scratch,
}

impl<K: 'static> WriteBatch<'_, K> {
    /// [`Writer::upsert_keyed`].
    pub(crate) fn upsert_keyed(&mut self, key: &Arc<ObjectKey>, obj: Arc<K>) -> Option<Arc<K>> {
        let key = KeyCandidate::Shared(Arc::clone(key));
        self.state.upsert(key, &obj, self.scratch).1
    }

    /// [`Writer::delete_key`].
    pub(crate) fn delete_key(&mut self, key: &ObjectKey) -> Option<Arc<K>> {
        self.state.remove(key.as_key_ref())
    }
}

impl<K> fmt::Debug for Writer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("len", &self.shared.read().ids.len())
            .finish_non_exhaustive()
    }
}

/// A read handle on the store (client-go's `Indexer`): cheap to clone, `Send + Sync`,
/// synchronous.
///
/// Reads take a shared lock and never wait for one another, only (briefly) for the
/// writer. Objects come back as `Arc<K>` clones: no object is ever copied.
pub struct Indexer<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for Indexer<K> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<K> fmt::Debug for Indexer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Indexer")
            .field("len", &self.shared.read().ids.len())
            .finish_non_exhaustive()
    }
}

impl<K: 'static> Indexer<K> {
    /// The object stored under `key`.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.shared.read().get(key.as_key_ref()).cloned()
    }

    /// The object stored under a borrowed key (no allocation).
    pub fn get_ref(&self, key: ObjectKeyRef<'_>) -> Option<Arc<K>> {
        self.shared.read().get(key).cloned()
    }

    /// The object stored under client-go's string key (`ns/name` or `name`); `None` for
    /// a malformed key.
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.get_ref(ObjectKeyRef::parse(key).ok()?)
    }

    /// Whether an object is stored under `key`.
    pub fn contains_key(&self, key: ObjectKeyRef<'_>) -> bool {
        self.shared.read().contains_key(key)
    }

    /// The stored key equal to `key` (one allocation shared by the store and the
    /// DeltaFIFO), if an object is stored under it.
    pub fn stored_key(&self, key: ObjectKeyRef<'_>) -> Option<Arc<ObjectKey>> {
        self.shared.read().stored_key(key)
    }

    /// Every object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        let state = self.shared.read();
        let mut list = Vec::with_capacity(state.len());
        list.extend(state.occupied().map(|(_, s)| Arc::clone(&s.obj)));
        list
    }

    /// Every key, in no particular order.
    pub fn list_keys(&self) -> Vec<Arc<ObjectKey>> {
        let state = self.shared.read();
        let mut keys = Vec::with_capacity(state.len());
        keys.extend(state.occupied().map(|(_, s)| Arc::clone(&s.key)));
        keys
    }

    /// How many objects are stored.
    pub fn len(&self) -> usize {
        self.shared.read().len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` with every key and object, under one read lock (a consistent snapshot
    /// without building a list). `f` must not write to this store nor call into a
    /// DeltaFIFO that feeds it (that would deadlock).
    pub fn for_each(&self, mut f: impl FnMut(&Arc<ObjectKey>, &Arc<K>)) {
        for (_, slot) in self.shared.read().occupied() {
            f(&slot.key, &slot.obj);
        }
    }

    /// The objects whose index `index` includes `value` (client-go's `ByIndex`).
    pub fn by_index(&self, index: &str, value: &str) -> Result<Vec<Arc<K>>, StoreError> {
        let state = self.shared.read();
        let index = state.index(index)?;
        Ok(index
            .ids(value)
            .map(|ids| state.objects_of(ids).cloned().collect())
            .unwrap_or_default())
    }

    /// The keys of the objects whose index `index` includes `value` (client-go's
    /// `IndexKeys`).
    pub fn index_keys(&self, index: &str, value: &str) -> Result<Vec<Arc<ObjectKey>>, StoreError> {
        let state = self.shared.read();
        let index = state.index(index)?;
        Ok(index
            .ids(value)
            .map(|ids| {
                ids.iter()
                    .filter_map(|&id| state.slot(id).map(|s| Arc::clone(&s.key)))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// Every value of index `index` that has at least one object (client-go's
    /// `ListIndexFuncValues`).
    pub fn index_values(&self, index: &str) -> Result<Vec<Arc<str>>, StoreError> {
        Ok(self.shared.read().index(index)?.values().cloned().collect())
    }

    /// The objects sharing at least one value of index `index` with `obj` (client-go's
    /// `Index`).
    pub fn by_index_of(&self, index: &str, obj: &K) -> Result<Vec<Arc<K>>, StoreError> {
        let state = self.shared.read();
        let index = state.index(index)?;
        let mut found = IdSet::default();
        index.values_of(obj, &mut |value| {
            if let Some(ids) = index.ids(value) {
                found.extend(ids);
            }
        });
        Ok(state.objects_of(&found).cloned().collect())
    }

    /// The names of the defined indexes.
    pub fn index_names(&self) -> Vec<String> {
        self.shared
            .read()
            .indexes
            .iter()
            .map(|i| i.name.clone())
            .collect()
    }

    /// Defines more indexes (client-go's `AddIndexers`), also after objects are stored:
    /// each new index is built over the current content. All or nothing: fails if a name
    /// is already defined or given twice.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), StoreError> {
        self.shared.write().add_indexes(indexers)
    }
}

impl<K: Resource + 'static> Indexer<K> {
    /// The objects whose labels match `selector`.
    ///
    /// When the selector has an equality (`=`, `==`) or `in` requirement on a label with a
    /// [`LabelIndex`](super::LabelIndex), only the objects that index lists are examined,
    /// not the whole store.
    pub fn select(&self, selector: &Selector) -> Vec<Arc<K>> {
        self.select_inner(None, selector)
    }

    /// The objects in `namespace` whose labels match `selector`.
    ///
    /// Candidates come from the namespace index or a label index, whichever lists fewer
    /// objects; without either, the store is scanned.
    pub fn select_in_namespace(&self, namespace: &str, selector: &Selector) -> Vec<Arc<K>> {
        self.select_inner(Some(namespace), selector)
    }

    fn select_inner(&self, namespace: Option<&str>, selector: &Selector) -> Vec<Arc<K>> {
        let state = self.shared.read();
        let plan = plan(&state, namespace, selector);
        let keep = |obj: &K| {
            let in_namespace = plan.answers_namespace
                || namespace.is_none_or(|ns| obj.meta().namespace.as_deref() == Some(ns));
            in_namespace && plan.remaining(selector).all(|r| r.matches_object(obj))
        };
        match &plan.sets {
            Some(sets) => sets
                .iter()
                .flat_map(|ids| state.objects_of(ids))
                .filter(|obj| keep(obj))
                .cloned()
                .collect(),
            None => state
                .occupied()
                .map(|(_, slot)| &slot.obj)
                .filter(|obj| keep(obj))
                .cloned()
                .collect(),
        }
    }
}

/// How a selector query is answered.
struct Plan<'s> {
    /// Disjoint id sets holding every candidate, or `None` for a full scan.
    sets: Option<Vec<&'s IdSet>>,
    /// The sets are exactly the namespace's objects.
    answers_namespace: bool,
    /// The sets are exactly the objects meeting this requirement (by position).
    answers_requirement: Option<usize>,
}

impl Plan<'_> {
    /// The requirements the candidates still have to be checked against.
    fn remaining<'a>(&self, selector: &'a Selector) -> impl Iterator<Item = &'a Requirement> {
        let answered = self.answers_requirement;
        selector
            .requirements()
            .iter()
            .enumerate()
            .filter(move |(i, _)| Some(*i) != answered)
            .map(|(_, r)| r)
    }
}

/// Picks the smallest family of candidate sets an index offers for `namespace` and
/// `selector`.
fn plan<'s, K: 'static>(
    state: &'s State<K>,
    namespace: Option<&str>,
    selector: &Selector,
) -> Plan<'s> {
    static NONE: std::sync::LazyLock<IdSet> = std::sync::LazyLock::new(IdSet::default);
    let mut best = Plan {
        sets: None,
        answers_namespace: false,
        answers_requirement: None,
    };
    let mut best_size = usize::MAX;
    for index in &state.indexes {
        let (sets, answers_namespace, answers_requirement) = match index.field() {
            IndexedField::Namespace => match namespace {
                Some(ns) => (vec![index.ids(ns).unwrap_or(&NONE)], true, None),
                None => continue,
            },
            IndexedField::Label(label) => {
                let requirement = selector.requirements().iter().position(|r| {
                    r.key() == label && matches!(r.operator(), Operator::Equals | Operator::In)
                });
                let Some(position) = requirement else {
                    continue;
                };
                let values = selector.requirements()[position].values();
                // A label has one value per object, so these sets are disjoint.
                let sets = values.iter().filter_map(|v| index.ids(v)).collect();
                (sets, false, Some(position))
            }
            IndexedField::Custom => continue,
        };
        let size = sets.iter().map(|s| s.len()).sum();
        if size < best_size {
            best_size = size;
            best = Plan {
                sets: Some(sets),
                answers_namespace,
                answers_requirement,
            };
        }
    }
    best
}

#[cfg(test)]
impl<K: 'static> Indexer<K> {
    /// How many candidates a selector query examines; `None` for a full scan.
    pub(super) fn candidates_for_tests(
        &self,
        namespace: Option<&str>,
        selector: &Selector,
    ) -> Option<usize> {
        let state = self.shared.read();
        let plan = plan(&state, namespace, selector);
        plan.sets.map(|sets| sets.iter().map(|s| s.len()).sum())
    }
}

/// A relist takes from the cache the objects it lists unchanged (same resourceVersion
/// and uid), rather than holding a second, freshly decoded copy of each.
impl<K: Resource + Send + Sync + 'static> CachedObjects<K> for Indexer<K> {
    fn cached(
        &self,
        key: ObjectKeyRef<'_>,
        resource_version: &str,
        uid: Option<&str>,
    ) -> Option<Arc<K>> {
        let object = self.get_ref(key)?;
        let meta = object.meta();
        let same = meta.resource_version.as_deref() == Some(resource_version)
            && (uid.is_none() || meta.uid.as_deref() == uid);
        same.then_some(object)
    }
}
