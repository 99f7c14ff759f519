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
//! Typed index queries ([`Lister::by_index`], [`Lister::index_keys`],
//! [`Lister::index_values`], [`NamespaceLister::by_index`]) take an
//! [`Index`] marker type and a key of its type; they are also the
//! [`IndexQuery`] implementations behind the query traits `#[derive(Informable)]`
//! generates.
//!
//! ```no_run
//! # fn demo(lister: informer::lister::Lister<k8s_openapi::api::core::v1::Pod>)
//! #     -> Result<(), Box<dyn std::error::Error>> {
//! use informer::store::Selector;
//!
//! let web: Selector = "app=web,tier in (frontend)".parse()?;
//! for pod in lister.namespaced("default").list(&web) {
//!     println!("{:?}", pod.metadata.name);
//! }
//! let pod = lister.namespaced("default").get("web-0")?;
//! # let _ = pod;
//! # Ok(())
//! # }
//! ```

use educe::Educe;
use std::sync::Arc;

use kube::Resource;
use kube::core::{ClusterResourceScope, DynamicResourceScope, NamespaceResourceScope};

use crate::key::ObjectKey;
use crate::store::{AsIndexKey, Index, IndexQuery, Indexer, Selector, typed_query};

/// The object asked for is not in the cache.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} {key} not found in the cache")]
pub struct NotFound {
    /// The resource kind (the Rust type's name).
    pub kind: &'static str,
    /// The key looked up.
    pub key: ObjectKey,
}

/// Scopes whose objects can be fetched by name alone.
pub trait ClusterScoped {}
impl ClusterScoped for ClusterResourceScope {}
impl ClusterScoped for DynamicResourceScope {}

/// Scopes whose objects live in namespaces.
pub trait NamespaceScoped {}
impl NamespaceScoped for NamespaceResourceScope {}
impl NamespaceScoped for DynamicResourceScope {}

/// Typed reads of a cache; see the [module docs](self).
#[derive(Educe)]
#[educe(Clone)]
pub struct Lister<K> {
    indexer: Indexer<K>,
}

impl<K> std::fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lister")
            .field("indexer", &self.indexer)
            .finish()
    }
}

impl<K: Resource + 'static> Lister<K> {
    /// A lister over `indexer`.
    pub fn new(indexer: Indexer<K>) -> Self {
        Self { indexer }
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
    K: Resource + 'static,
    K::Scope: ClusterScoped,
{
    /// The cluster-scoped object named `name`.
    pub fn get(&self, name: &str) -> Result<Arc<K>, NotFound> {
        let key = ObjectKey::cluster_scoped(name);
        self.indexer.get(&key).ok_or_else(|| NotFound {
            kind: crate::key::short_type_name::<K>(),
            key,
        })
    }
}

impl<K> Lister<K>
where
    K: Resource + 'static,
    K::Scope: NamespaceScoped,
{
    /// Reads of one namespace.
    pub fn namespaced(&self, namespace: &str) -> NamespaceLister<K> {
        NamespaceLister {
            indexer: self.indexer.clone(),
            namespace: namespace.to_owned(),
        }
    }
}

/// Reads of one namespace of a cache, from [`Lister::namespaced`].
pub struct NamespaceLister<K> {
    indexer: Indexer<K>,
    namespace: String,
}

impl<K> std::fmt::Debug for NamespaceLister<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamespaceLister")
            .field("namespace", &self.namespace)
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
}

impl<K: Resource + 'static> NamespaceLister<K> {
    /// The objects of this namespace whose labels match `selector`.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        self.indexer.select_in_namespace(&self.namespace, selector)
    }

    /// Every object of this namespace.
    pub fn list_all(&self) -> Vec<Arc<K>> {
        self.list(&Selector::everything())
    }

    /// The object named `name` in this namespace.
    pub fn get(&self, name: &str) -> Result<Arc<K>, NotFound> {
        let key = ObjectKey::namespaced(self.namespace.as_str(), name);
        self.indexer.get(&key).ok_or_else(|| NotFound {
            kind: crate::key::short_type_name::<K>(),
            key,
        })
    }
}

impl<K: Resource + 'static> IndexQuery<K> for Lister<K> {
    fn by_index<I: Index<K>>(&self, value: impl AsIndexKey<I::Value>) -> Vec<Arc<K>> {
        IndexQuery::by_index::<I>(self.indexer(), value)
    }
}

impl<K: Resource + 'static> IndexQuery<K> for NamespaceLister<K> {
    fn by_index<I: Index<K>>(&self, value: impl AsIndexKey<I::Value>) -> Vec<Arc<K>> {
        let mut found = IndexQuery::by_index::<I>(self.indexer(), value);
        found.retain(|object| object.meta().namespace.as_deref() == Some(self.namespace()));
        found
    }
}

impl<K: Resource + 'static> Lister<K> {
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

impl<K: Resource + 'static> NamespaceLister<K> {
    /// The objects of this namespace with the key `value` in index `I`:
    /// [`IndexQuery::by_index`] without the import.
    pub fn by_index<I: Index<K>>(&self, value: impl AsIndexKey<I::Value>) -> Vec<Arc<K>> {
        IndexQuery::by_index::<I>(self, value)
    }
}
