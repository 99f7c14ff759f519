//! The write half of the store: the one [`Writer`] that changes the objects, and
//! [`WriteBatch`], several writes under one acquisition of the lock (the informer's
//! process loop applies a batch of deltas through one).
//!
//! As in kube-runtime's `reflector::store`, the writer and its readers are separate
//! types: only the owner of the `Writer` can change the cache, while
//! [`Indexer`]s handed out by [`Writer::indexer`] can only read it.

use std::{
    fmt,
    sync::{Arc, RwLock, RwLockWriteGuard},
};

use crate::object::Object;

use super::{
    StoreError,
    index::{Index, Indexers, NAMESPACE_INDEX, NamespaceIndex, Scratch},
    indexer::Indexer,
    state::{Shared, State},
};
use crate::key::{KeyCandidate, KeyFn, ObjectKey};

/// The write half of the store: the only handle that changes the objects.
///
/// Owned by whoever keeps the store in sync (the informer's process loop). Not `Clone`:
/// one writer, many [`Indexer`] readers, as kube-runtime's `reflector::store::Writer`.
pub struct Writer<K> {
    shared: Arc<Shared<K>>,
    scratch: Scratch,
}

impl<K: Object + 'static> Writer<K> {
    /// An empty store keyed by [`KeyFn::meta_namespace`] with the namespace index.
    pub fn new() -> Self {
        let namespace = Index::new(NAMESPACE_INDEX.to_owned(), Arc::new(NamespaceIndex));
        Self::from_parts(KeyFn::meta_namespace(), vec![namespace])
    }
}

impl<K: Object + 'static> Default for Writer<K> {
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
