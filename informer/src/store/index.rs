//! Index functions and the indexes they maintain.
//!
//! An index function maps an object to zero or more string values (client-go's
//! `IndexFunc func(obj interface{}) ([]string, error)`); the index built from it maps
//! each value to the set of keys of the objects that produced it. Indexes are named
//! (client-go's `Indexers map[string]IndexFunc`).
//!
//! Any `Fn(&K) -> impl IntoIterator<Item: AsRef<str>>` closure is an [`IndexFunc`]
//! (`Vec<String>`, `Option<String>`, `[&'static str; 1]`, ...). Implementing the trait by
//! hand lets a function hand out values borrowed from the object, so keeping an index up
//! to date allocates nothing when an update leaves the values unchanged: the built-in
//! [`NamespaceIndex`] and `LabelIndex` do so.

use educe::Educe;
use std::{
    collections::HashSet,
    fmt,
    hash::{BuildHasherDefault, Hasher},
    sync::Arc,
};

use crate::object::{Meta, Object};

use super::FastMap;

/// The name of the built-in namespace index (client-go's `cache.NamespaceIndex`).
pub const NAMESPACE_INDEX: &str = "namespace";

/// The name [`Indexers::with_label_index`] gives to the index of label `label`.
pub fn label_index_name(label: &str) -> String {
    format!("label:{label}")
}

/// What an index function indexes, when the store can make use of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexedField<'a> {
    /// Anything else: the index is used only through its name.
    Custom,
    /// The object's namespace: namespaced queries are answered from it. Such a function
    /// must emit exactly the non-empty `metadata.namespace`, and nothing without it.
    Namespace,
    /// The value of one label: equality and `in` selectors on it are answered from it.
    /// Such a function must emit exactly the label's value, and nothing without it.
    Label(&'a str),
}

/// A named index function: the values under which an object is indexed.
///
/// Implemented for every closure `Fn(&K) -> I` where `I: IntoIterator` yields
/// `AsRef<str>` items. Index functions run under the store's write lock on every add,
/// update and delete: keep them quick, deterministic and free of panics.
pub trait IndexFunc<K>: Send + Sync + 'static {
    /// Calls `emit` once for each index value of `obj` (duplicates are harmless).
    fn index_values(&self, obj: &K, emit: &mut dyn FnMut(&str));

    /// What this function indexes; [`IndexedField::Custom`] unless overridden.
    fn indexed_field(&self) -> IndexedField<'_> {
        IndexedField::Custom
    }
}

impl<K, F, I> IndexFunc<K> for F
where
    F: Fn(&K) -> I + Send + Sync + 'static,
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    fn index_values(&self, obj: &K, emit: &mut dyn FnMut(&str)) {
        for value in self(obj) {
            emit(value.as_ref());
        }
    }
}

/// Indexes objects by namespace (client-go's `MetaNamespaceIndexFunc`).
///
/// Cluster-scoped objects have no value in this index (client-go files them under `""`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NamespaceIndex;

impl<K: Object + 'static> IndexFunc<K> for NamespaceIndex {
    fn index_values(&self, obj: &K, emit: &mut dyn FnMut(&str)) {
        if let Some(ns) = obj.metadata().namespace().filter(|ns| !ns.is_empty()) {
            emit(ns);
        }
    }

    fn indexed_field(&self) -> IndexedField<'_> {
        IndexedField::Namespace
    }
}

/// Indexes objects by the value of one label; objects without the label are not indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LabelIndex {
    label: String,
}

impl LabelIndex {
    /// An index over the values of label `label`.
    pub(crate) fn new(label: impl Into<String>) -> Self {
        Self {
            label: label.into(),
        }
    }
}

impl<K: Object + 'static> IndexFunc<K> for LabelIndex {
    fn index_values(&self, obj: &K, emit: &mut dyn FnMut(&str)) {
        if let Some(value) = obj.metadata().labels().and_then(|l| l.get(&self.label)) {
            emit(value);
        }
    }

    fn indexed_field(&self) -> IndexedField<'_> {
        IndexedField::Label(&self.label)
    }
}

/// A set of named index functions (client-go's `Indexers`), given to
/// [`Writer::with_indexers`](super::Writer::with_indexers) or
/// [`Indexer::add_indexers`](super::Indexer::add_indexers).
#[derive(Educe)]
#[educe(Clone)]
pub struct Indexers<K> {
    pub(crate) entries: Vec<(String, Arc<dyn IndexFunc<K>>)>,
}

impl<K> Indexers<K> {
    /// No index functions.
    pub fn new() -> Self {
        Self {
            entries: Vec::new(),
        }
    }

    /// Adds the index function `func` under `name`.
    #[must_use]
    pub fn with(mut self, name: impl Into<String>, func: impl IndexFunc<K>) -> Self {
        self.entries.push((name.into(), Arc::new(func)));
        self
    }

    /// Adds a closure index function under `name` (the closure's argument type is inferred).
    #[must_use]
    pub fn with_fn<F, I>(self, name: impl Into<String>, func: F) -> Self
    where
        F: Fn(&K) -> I + Send + Sync + 'static,
        I: IntoIterator,
        I::Item: AsRef<str>,
    {
        self.with(name, func)
    }

    /// The names, in the order added.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(name, _)| name.as_str())
    }

    /// How many index functions there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<K: Object + 'static> Indexers<K> {
    /// Adds the namespace index under [`NAMESPACE_INDEX`].
    #[must_use]
    pub fn with_namespace_index(self) -> Self {
        self.with(NAMESPACE_INDEX, NamespaceIndex)
    }

    /// Adds an index on label `label`, named [`label_index_name`]`(label)`.
    #[must_use]
    pub fn with_label_index(self, label: &str) -> Self {
        self.with(label_index_name(label), LabelIndex::new(label))
    }
}

impl<K> Default for Indexers<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K> fmt::Debug for Indexers<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// Reusable buffers for the index values of an object, so that updates allocate nothing
/// when the values do not change.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    old: ValueBuf,
    new: ValueBuf,
}

/// A list of strings stored end to end in one buffer.
#[derive(Debug, Default, PartialEq, Eq)]
struct ValueBuf {
    text: String,
    ends: Vec<usize>,
}

impl ValueBuf {
    fn fill<K: 'static>(&mut self, func: &dyn IndexFunc<K>, obj: &K) {
        self.text.clear();
        self.ends.clear();
        let Self { text, ends } = self;
        func.index_values(obj, &mut |value| {
            text.push_str(value);
            ends.push(text.len());
        });
    }

    fn iter(&self) -> impl Iterator<Item = &str> {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let value = &self.text[start..end];
            start = end;
            value
        })
    }

    fn contains(&self, value: &str) -> bool {
        self.iter().any(|v| v == value)
    }

    /// Whether the list is exactly `namespace`: one value equal to it, or no value when
    /// it is `None`.
    fn is_exactly(&self, namespace: Option<&str>) -> bool {
        match namespace {
            Some(ns) => self.ends.len() == 1 && self.text == ns,
            None => self.ends.is_empty(),
        }
    }
}

/// A hasher for slot ids. Ids are dense integers chosen by the store, never by the API
/// server, so a multiplicative hash is both fast and safe from collision attacks.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ u64::from(n)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A set of slot ids.
pub(crate) type IdSet = HashSet<u32, BuildHasherDefault<IdHasher>>;

/// One named index: value -> ids of the slots of the objects indexed under it. Empty
/// sets are removed, so churn does not leak.
///
/// # Indexed under the key's namespace
/// A namespace index usually files an object under the namespace of its key, and an
/// update (same key) rarely moves it. The store therefore remembers, per object, whether
/// a namespace index's values for it are exactly its key's namespace (nothing for a
/// key without namespace); `add` and `update` report it. When both the stored object
/// and its replacement are, `update` has nothing to do and never reads the replaced
/// object (which is cold in the CPU cache by then), and `remove` needs no object at all.
/// The fact is checked on the values the function actually emits, so an index function
/// that breaks the [`IndexedField::Namespace`] contract, or a key function whose
/// namespace is not the object's, only loses the shortcut.
pub(crate) struct Index<K> {
    pub(crate) name: String,
    func: Arc<dyn IndexFunc<K>>,
    values: FastMap<Arc<str>, IdSet>,
    /// The function claims to index the namespace: worth checking the values against
    /// the key's namespace.
    by_namespace: bool,
}

impl<K: 'static> Index<K> {
    pub(crate) fn new(name: String, func: Arc<dyn IndexFunc<K>>) -> Self {
        let by_namespace = func.indexed_field() == IndexedField::Namespace;
        Self {
            name,
            func,
            values: FastMap::default(),
            by_namespace,
        }
    }

    pub(crate) fn field(&self) -> IndexedField<'_> {
        self.func.indexed_field()
    }

    /// The ids indexed under `value`.
    pub(crate) fn ids(&self, value: &str) -> Option<&IdSet> {
        self.values.get(value)
    }

    /// Every value with at least one object.
    pub(crate) fn values(&self) -> impl Iterator<Item = &Arc<str>> {
        self.values.keys()
    }

    /// Calls `emit` with the index values of `obj`.
    pub(crate) fn values_of(&self, obj: &K, emit: &mut dyn FnMut(&str)) {
        self.func.index_values(obj, emit);
    }

    /// Indexes a newly stored object whose key has namespace `key_ns`; returns whether
    /// it is indexed exactly under `key_ns` (see the [type docs](Index)).
    pub(crate) fn add(&mut self, id: u32, obj: &K, key_ns: Option<&str>) -> bool {
        let Self { func, values, .. } = self;
        let mut emitted = 0usize;
        let mut all_key_ns = true;
        func.index_values(obj, &mut |value| {
            insert(values, value, id);
            emitted += 1;
            all_key_ns &= key_ns == Some(value);
        });
        self.by_namespace && all_key_ns && emitted == usize::from(key_ns.is_some())
    }

    /// Unindexes a removed object whose key has namespace `key_ns`. With
    /// `under_key_ns` (what `add` or `update` last returned for it), the object is not
    /// read.
    pub(crate) fn remove(&mut self, id: u32, obj: &K, key_ns: Option<&str>, under_key_ns: bool) {
        let Self { func, values, .. } = self;
        if under_key_ns {
            if let Some(ns) = key_ns {
                remove(values, ns, id);
            }
            return;
        }
        func.index_values(obj, &mut |value| remove(values, value, id));
    }

    /// Moves `id` from the values of `old` to those of `new`, touching only what changed.
    /// `old_under_key_ns` is what `add` or `update` last returned for `old`; returns
    /// whether `new` is indexed exactly under `key_ns` (the namespace of their key).
    pub(crate) fn update(
        &mut self,
        id: u32,
        old: &K,
        new: &K,
        key_ns: Option<&str>,
        old_under_key_ns: bool,
        scratch: &mut Scratch,
    ) -> bool {
        scratch.new.fill(self.func.as_ref(), new);
        let new_under_key_ns = self.by_namespace && scratch.new.is_exactly(key_ns);
        if old_under_key_ns && new_under_key_ns {
            // Both are indexed exactly under `key_ns`: nothing moves, `old` is not read.
            return true;
        }
        scratch.old.fill(self.func.as_ref(), old);
        if scratch.old == scratch.new {
            return new_under_key_ns;
        }
        for value in scratch.old.iter() {
            if !scratch.new.contains(value) {
                remove(&mut self.values, value, id);
            }
        }
        for value in scratch.new.iter() {
            if !scratch.old.contains(value) {
                insert(&mut self.values, value, id);
            }
        }
        new_under_key_ns
    }

    /// Drops every entry, keeping the index function.
    pub(crate) fn clear(&mut self) {
        self.values.clear();
    }
}

fn insert(values: &mut FastMap<Arc<str>, IdSet>, value: &str, id: u32) {
    match values.get_mut(value) {
        Some(ids) => {
            ids.insert(id);
        }
        None => {
            let mut ids = IdSet::default();
            ids.insert(id);
            values.insert(Arc::from(value), ids);
        }
    }
}

fn remove(values: &mut FastMap<Arc<str>, IdSet>, value: &str, id: u32) {
    if let Some(ids) = values.get_mut(value) {
        ids.remove(&id);
        if ids.is_empty() {
            values.remove(value);
        }
    }
}
