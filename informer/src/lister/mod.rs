//! Listers: typed, synchronous reads of an informer's cache.
//!
//! client-go's generated listers (`DeploymentLister`, `DeploymentNamespaceLister`),
//! for every type at once. A [`Lister<K>`] reads the informer's [`Indexer`] and hands
//! out `Arc<K>`: no copies, no API calls, no type assertions.
//!
//! The scope is checked by the compiler: [`Lister::get`] exists for cluster-scoped
//! types (`Namespace`, `Node`...), [`Lister::namespaced`] for namespaced ones (`Pod`,
//! `ConfigMap`...); types whose scope is known only at run time get both.
//! Namespaced listing is answered from the namespace index, and a label selector with
//! an equality on an indexed label from that label's index, never by a full scan.
//!
//! A miss is [`LookupError::NotFound`] only once the informer has synced: before that
//! it is [`LookupError::NotSynced`], since the object may well exist and just not be
//! listed yet (a controller retries later rather than acting on a deletion). Lists
//! return what the cache holds; [`Lister::has_synced`] tells whether that is all.
//!
//! Typed index queries ([`Lister::by_index`], [`Lister::index_keys`],
//! [`Lister::index_values`], [`NamespaceLister::by_index`]) take an
//! [`Index`] marker type and a key of its type; they are also the
//! [`IndexQuery`] implementations behind the query traits `#[derive(Informable)]`
//! generates.
//!
//! ```no_run
//! # fn demo(lister: informer::lister::Lister<k8s_openapi::api::core::v1::Pod>)
//! #     -> Result<(), Box<dyn std::error::Error>> {
//! use informer::lister::LookupError;
//! use informer::store::Selector;
//!
//! let web: Selector = "app=web,tier in (frontend)".parse()?;
//! for pod in lister.namespaced("default").list(&web) {
//!     println!("{:?}", pod.metadata.name);
//! }
//! match lister.namespaced("default").get("web-0") {
//!     Ok(pod) => println!("web-0 runs on {:?}", pod.spec.as_ref().and_then(|s| s.node_name.as_ref())),
//!     Err(LookupError::NotFound { .. }) => println!("web-0 is gone"),
//!     Err(not_synced) => return Err(not_synced.into()), // try again later
//! }
//! # Ok(())
//! # }
//! ```

use educe::Educe;
use std::sync::Arc;

use crate::object::{Meta, Object};

use crate::consistency::Tracker;
use crate::key::ObjectKey;
use crate::scope::{ClusterScoped, NamespaceScoped};
use crate::store::{AsIndexKey, Index, IndexQuery, Indexer, Selector, typed_query};
use crate::synced::HasSynced;

/// Why a lister's `get` found nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LookupError {
    /// The informer has synced and its cache holds no such object: as far as the
    /// informer knows, it does not exist.
    #[error("{kind} {key} not found in the cache")]
    NotFound {
        /// The resource kind (the Rust type's name).
        kind: &'static str,
        /// The key looked up.
        key: ObjectKey,
    },
    /// The informer has not synced yet (not started, or its first list has not come,
    /// or keeps failing: see
    /// [`SharedIndexInformer::last_sync_error`](crate::shared_informer::SharedIndexInformer::last_sync_error)),
    /// so a miss says nothing: the object may exist. Try again once it has synced.
    #[error("{kind} {key} not in the cache, which has not synced yet")]
    NotSynced {
        /// The resource kind (the Rust type's name).
        kind: &'static str,
        /// The key looked up.
        key: ObjectKey,
    },
}

impl LookupError {
    /// Whether the synced cache has no such object.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    /// Whether the cache had not synced yet.
    pub fn is_not_synced(&self) -> bool {
        matches!(self, Self::NotSynced { .. })
    }

    /// The key looked up.
    pub fn key(&self) -> &ObjectKey {
        match self {
            Self::NotFound { key, .. } | Self::NotSynced { key, .. } => key,
        }
    }
}

/// Whether a lister's cache has synced: its informer's flag, or always for a lister
/// over a bare indexer.
#[derive(Clone, Default)]
struct SyncedFlag(Option<Arc<dyn HasSynced>>);

impl SyncedFlag {
    fn get(&self) -> bool {
        self.0.as_ref().is_none_or(|synced| synced.has_synced())
    }
}

impl std::fmt::Debug for SyncedFlag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.get())
    }
}

/// Looks `key` up in `indexer`, telling a miss in a synced cache from one in a cache
/// still filling.
fn lookup<K: Object + 'static>(
    indexer: &Indexer<K>,
    synced: &SyncedFlag,
    key: ObjectKey,
) -> Result<Arc<K>, LookupError> {
    // Read before the lookup: a miss after the cache synced is a true miss.
    let synced = synced.get();
    indexer.get(&key).ok_or_else(|| {
        let kind = crate::key::short_type_name::<K>();
        if synced {
            LookupError::NotFound { kind, key }
        } else {
            LookupError::NotSynced { kind, key }
        }
    })
}

/// Typed reads of a cache; see the [module docs](self).
#[derive(Educe)]
#[educe(Clone)]
pub struct Lister<K> {
    indexer: Indexer<K>,
    synced: SyncedFlag,
    /// The informer's record of the versions its cache reached, for an informer's
    /// lister.
    versions: Option<Arc<Tracker>>,
}

impl<K> std::fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lister")
            .field("indexer", &self.indexer)
            .field("synced", &self.synced)
            .finish()
    }
}

impl<K: Object + 'static> Lister<K> {
    /// A lister over `indexer`, taken as synced: a miss is
    /// [`LookupError::NotFound`].
    pub fn new(indexer: Indexer<K>) -> Self {
        Self {
            indexer,
            synced: SyncedFlag::default(),
            versions: None,
        }
    }

    /// A lister over `indexer` that `synced` fills: a miss before it has synced is
    /// [`LookupError::NotSynced`]. [`SharedIndexInformer::lister`] is one.
    ///
    /// [`SharedIndexInformer::lister`]: crate::shared_informer::SharedIndexInformer::lister
    pub fn with_synced(indexer: Indexer<K>, synced: impl HasSynced + 'static) -> Self {
        Self {
            indexer,
            synced: SyncedFlag(Some(Arc::new(synced))),
            versions: None,
        }
    }

    /// This lister, reading the cache's resourceVersion from `versions`: an informer's.
    pub(crate) fn knowing_version(mut self, versions: Arc<Tracker>) -> Self {
        self.versions = Some(versions);
        self
    }

    /// Whether the cache has synced: what it lists is everything (as of its last
    /// update), and a miss means not found.
    pub fn has_synced(&self) -> bool {
        self.synced.get()
    }

    /// The resourceVersion up to which the cache reflects the server, as the informer
    /// says it ([`SharedIndexInformer::store_resource_version`], client-go's
    /// `LastStoreSyncResourceVersion` on its store): a read from this lister after
    /// this call sees the cache at least that new. "" before the first list is in the cache, and for a
    /// lister over a bare indexer ([`Lister::new`], [`Lister::with_synced`]), which
    /// knows no version.
    ///
    /// [`SharedIndexInformer::store_resource_version`]: crate::shared_informer::SharedIndexInformer::store_resource_version
    pub fn store_resource_version(&self) -> String {
        self.versions
            .as_ref()
            .map(|versions| versions.store_resource_version())
            .unwrap_or_default()
    }

    /// The objects (in every namespace) whose labels match `selector`.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        self.indexer.select(selector)
    }

    /// Every object.
    pub fn list_all(&self) -> Vec<Arc<K>> {
        self.indexer.list()
    }

    /// The cache underneath, for index queries.
    pub fn indexer(&self) -> &Indexer<K> {
        &self.indexer
    }
}

impl<K> Lister<K>
where
    K: Object + 'static,
    <K::Resource as kube::Resource>::Scope: ClusterScoped,
{
    /// The cluster-scoped object named `name`; a miss is [`LookupError::NotSynced`]
    /// until the cache has synced.
    pub fn get(&self, name: &str) -> Result<Arc<K>, LookupError> {
        lookup(&self.indexer, &self.synced, ObjectKey::cluster_scoped(name))
    }
}

impl<K> Lister<K>
where
    K: Object + 'static,
    <K::Resource as kube::Resource>::Scope: NamespaceScoped,
{
    /// Reads of one namespace.
    pub fn namespaced(&self, namespace: &str) -> NamespaceLister<K> {
        NamespaceLister {
            indexer: self.indexer.clone(),
            synced: self.synced.clone(),
            namespace: namespace.to_owned(),
        }
    }
}

/// Reads of one namespace of a cache, from [`Lister::namespaced`].
pub struct NamespaceLister<K> {
    indexer: Indexer<K>,
    synced: SyncedFlag,
    namespace: String,
}

impl<K> std::fmt::Debug for NamespaceLister<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamespaceLister")
            .field("namespace", &self.namespace)
            .field("synced", &self.synced)
            .finish()
    }
}

impl<K> NamespaceLister<K> {
    /// The namespace this lister reads.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The cache underneath, for index queries.
    pub fn indexer(&self) -> &Indexer<K> {
        &self.indexer
    }

    /// Whether the cache has synced (see [`Lister::has_synced`]).
    pub fn has_synced(&self) -> bool {
        self.synced.get()
    }
}

impl<K: Object + 'static> NamespaceLister<K> {
    /// The objects of this namespace whose labels match `selector`.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        self.indexer.select_in_namespace(&self.namespace, selector)
    }

    /// Every object of this namespace.
    pub fn list_all(&self) -> Vec<Arc<K>> {
        self.list(&Selector::everything())
    }

    /// The object named `name` in this namespace; a miss is
    /// [`LookupError::NotSynced`] until the cache has synced.
    pub fn get(&self, name: &str) -> Result<Arc<K>, LookupError> {
        let key = ObjectKey::namespaced(self.namespace.as_str(), name);
        lookup(&self.indexer, &self.synced, key)
    }
}

impl<K: Object + 'static> IndexQuery<K> for Lister<K> {
    fn by_index<I: Index<K>>(&self, value: impl AsIndexKey<I::Value>) -> Vec<Arc<K>> {
        IndexQuery::by_index::<I>(self.indexer(), value)
    }
}

impl<K: Object + 'static> IndexQuery<K> for NamespaceLister<K> {
    fn by_index<I: Index<K>>(&self, value: impl AsIndexKey<I::Value>) -> Vec<Arc<K>> {
        let mut found = IndexQuery::by_index::<I>(self.indexer(), value);
        found.retain(|object| object.metadata().namespace() == Some(self.namespace()));
        found
    }
}

impl<K: Object + 'static> Lister<K> {
    /// The objects with the key `value` in index `I` (client-go's `ByIndex`, typed):
    /// [`IndexQuery::by_index`] without the import.
    ///
    /// `I` must be an index of `K` and `value` a key of `I`'s key type, or this does
    /// not compile. A cache that lacks the index gets it first.
    pub fn by_index<I: Index<K>>(&self, value: impl AsIndexKey<I::Value>) -> Vec<Arc<K>> {
        IndexQuery::by_index::<I>(self, value)
    }

    /// The keys of the objects with the key `value` in index `I` (client-go's
    /// `IndexKeys`, typed).
    pub fn index_keys<I: Index<K>>(&self, value: impl AsIndexKey<I::Value>) -> Vec<Arc<ObjectKey>> {
        let key = value.as_index_key(I::encode);
        typed_query::<K, I, _>(self.indexer(), |indexer| indexer.index_keys(I::NAME, &key))
    }

    /// Every key of index `I` that has at least one object, in its string form
    /// (client-go's `ListIndexFuncValues`).
    pub fn index_values<I: Index<K>>(&self) -> Vec<Arc<str>> {
        typed_query::<K, I, _>(self.indexer(), |indexer| indexer.index_values(I::NAME))
    }
}

impl<K: Object + 'static> NamespaceLister<K> {
    /// The objects of this namespace with the key `value` in index `I`:
    /// [`IndexQuery::by_index`] without the import.
    pub fn by_index<I: Index<K>>(&self, value: impl AsIndexKey<I::Value>) -> Vec<Arc<K>> {
        IndexQuery::by_index::<I>(self, value)
    }
}

#[cfg(test)]
mod tests;
