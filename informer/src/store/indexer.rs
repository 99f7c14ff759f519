//! The read half of the store: [`Indexer`], client-go's `Indexer` without the writes,
//! and the planning of selector queries.
//!
//! A selector query is answered from the smallest family of candidate sets an index
//! offers (the namespace index, or a label index ([`Indexers::with_label_index`](super::Indexers::with_label_index)) on a label the
//! selector requires to equal one of some values); only the requirements that family
//! does not already answer are checked against each candidate, and without such an
//! index the store is scanned.

use educe::Educe;
use std::{fmt, sync::Arc};

use crate::object::{Meta, Object};

use super::{
    StoreError,
    index::{IdSet, IndexedField, Indexers},
    selector::{Operator, Requirement, Selector},
    state::{Shared, State},
};
use crate::cached::CachedObjects;
use crate::key::{ObjectKey, ObjectKeyRef};

/// A read handle on the store (client-go's `Indexer`): cheap to clone, `Send + Sync`,
/// synchronous.
///
/// Reads take a shared lock and never wait for one another, only (briefly) for the
/// writer. Objects come back as `Arc<K>` clones: no object is ever copied.
#[derive(Educe)]
#[educe(Clone)]
pub struct Indexer<K> {
    /// Built by [`Writer::indexer`](super::Writer::indexer).
    pub(super) shared: Arc<Shared<K>>,
}

impl<K> Indexer<K> {
    /// Whether its keys are the objects' namespaces and names (the default key
    /// function), so that a name is a key.
    pub(crate) fn keyed_by_name(&self) -> bool {
        self.shared.key_fn.is_meta_namespace()
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

impl<K: Object + 'static> Indexer<K> {
    /// The objects whose labels match `selector`.
    ///
    /// When the selector has an equality (`=`, `==`) or `in` requirement on a label with a
    /// label index ([`Indexers::with_label_index`](super::Indexers::with_label_index)), only the objects that index lists are examined,
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
                || namespace.is_none_or(|ns| obj.metadata().namespace() == Some(ns));
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
impl<K: Object + Send + Sync + 'static> CachedObjects<K> for Indexer<K> {
    fn cached(
        &self,
        key: ObjectKeyRef<'_>,
        resource_version: &str,
        uid: Option<&str>,
    ) -> Option<Arc<K>> {
        let object = self.get_ref(key)?;
        let meta = object.metadata();
        let same = meta.resource_version() == Some(resource_version)
            && (uid.is_none() || meta.uid() == uid);
        same.then_some(object)
    }
}
