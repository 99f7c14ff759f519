//! Object keys: how the cache names an object.
//!
//! client-go names every cached object by a string key built by a `KeyFunc`, by default
//! `MetaNamespaceKeyFunc`: `namespace/name` for namespaced objects and `name` for
//! cluster-scoped ones. Here the key is typed:
//!
//! - [`ObjectKey`] is the owned key, `{ namespace: Option<String>, name: String }`. Its
//!   [`Display`](std::fmt::Display) form is client-go's string key (`ns/name` or `name`),
//!   and it parses back from that string ([`ObjectKey::parse`], [`FromStr`]).
//! - [`ObjectKeyRef`] is the same key borrowed from an object or a string, so lookups
//!   such as [`Indexer::get_by_key`](crate::store::Indexer::get_by_key) need no allocation.
//! - [`KeyFn`] is the pluggable key function. [`KeyFn::meta_namespace`] (the default)
//!   is client-go's `MetaNamespaceKeyFunc` for any [`Object`]; it borrows the key
//!   straight from the object's metadata.
//!
//! Inside the store and the DeltaFIFO a key is allocated once per object and shared as
//! an `Arc<ObjectKey>`: the FIFO's queue and map and the store's map and slots hold the
//! same allocation, so cloning a key is a reference-count increment. Those maps are
//! hashbrown maps and tables keyed by the `Arc<ObjectKey>`, searched either by the shared
//! key itself (equal allocations compare equal without reading the strings) or by an
//! [`ObjectKeyRef`], through its `hashbrown::Equivalent<Arc<ObjectKey>>` impl: one lookup
//! scheme, no allocation.
//!
//! ```
//! use informer::key::ObjectKey;
//!
//! let key: ObjectKey = "default/web".parse().unwrap();
//! assert_eq!(key, ObjectKey::namespaced("default", "web"));
//! assert_eq!(key.to_string(), "default/web");
//! assert_eq!(ObjectKey::cluster_scoped("node-1").to_string(), "node-1");
//! ```

use std::{
    fmt,
    hash::{Hash, Hasher},
    str::FromStr,
    sync::Arc,
};

use crate::object::{Meta, Object};

/// Why a string is not a valid object key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The string is empty.
    #[error("an object key cannot be empty")]
    Empty,
    /// The string has more than one `/`; a key is `name` or `namespace/name`.
    #[error("object key {0:?} has more than one '/'; expected `name` or `namespace/name`")]
    TooManySegments(String),
    /// The namespace or the name part of `namespace/name` is empty.
    #[error("object key {0:?} has an empty namespace or name")]
    EmptySegment(String),
}

/// The typed key of a cached object: its namespace (none when cluster-scoped) and name.
///
/// Displays as client-go's string key: `namespace/name`, or `name` when cluster-scoped.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The namespace, or `None` for a cluster-scoped object.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
}

impl ObjectKey {
    /// A key from an optional namespace and a name.
    pub fn new(namespace: Option<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.filter(|ns| !ns.is_empty()),
            name: name.into(),
        }
    }

    /// The key of a namespaced object.
    pub fn namespaced(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self::new(Some(namespace.into()), name)
    }

    /// The key of a cluster-scoped object.
    pub fn cluster_scoped(name: impl Into<String>) -> Self {
        Self {
            namespace: None,
            name: name.into(),
        }
    }

    /// The key of `obj` by client-go's `MetaNamespaceKeyFunc` (see [`meta_namespace_key`]).
    pub fn of<K: Object>(obj: &K) -> Self {
        meta_namespace_key(obj)
    }

    /// Parses client-go's string form: `namespace/name` or `name`.
    pub fn parse(key: &str) -> Result<Self, KeyError> {
        ObjectKeyRef::parse(key).map(ObjectKeyRef::to_object_key)
    }

    /// This key, borrowed.
    pub fn as_key_ref(&self) -> ObjectKeyRef<'_> {
        ObjectKeyRef {
            namespace: self.namespace.as_deref(),
            name: &self.name,
        }
    }
}

impl Hash for ObjectKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Must hash exactly like `ObjectKeyRef`, so that borrowed lookups find owned keys.
        self.as_key_ref().hash(state);
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_key_ref().fmt(f)
    }
}

impl FromStr for ObjectKey {
    type Err = KeyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl From<ObjectKeyRef<'_>> for ObjectKey {
    fn from(key: ObjectKeyRef<'_>) -> Self {
        key.to_object_key()
    }
}

/// An object key borrowed from an object's metadata or from a string.
///
/// Equal to, and hashing like, the [`ObjectKey`] with the same parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKeyRef<'a> {
    /// The namespace, or `None` for a cluster-scoped object.
    pub namespace: Option<&'a str>,
    /// The object's name.
    pub name: &'a str,
}

impl<'a> ObjectKeyRef<'a> {
    /// A borrowed key from its parts; an empty namespace means cluster-scoped.
    pub fn new(namespace: Option<&'a str>, name: &'a str) -> Self {
        Self {
            namespace: namespace.filter(|ns| !ns.is_empty()),
            name,
        }
    }

    /// Parses client-go's string form, `namespace/name` or `name`, without allocating.
    pub fn parse(key: &'a str) -> Result<Self, KeyError> {
        if key.is_empty() {
            return Err(KeyError::Empty);
        }
        match key.split_once('/') {
            None => Ok(Self {
                namespace: None,
                name: key,
            }),
            Some((_, rest)) if rest.contains('/') => Err(KeyError::TooManySegments(key.into())),
            Some((ns, name)) if ns.is_empty() || name.is_empty() => {
                Err(KeyError::EmptySegment(key.into()))
            }
            Some((ns, name)) => Ok(Self {
                namespace: Some(ns),
                name,
            }),
        }
    }

    /// The owned key.
    pub fn to_object_key(self) -> ObjectKey {
        ObjectKey {
            namespace: self.namespace.map(str::to_owned),
            name: self.name.to_owned(),
        }
    }
}

impl fmt::Display for ObjectKeyRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(self.name),
        }
    }
}

impl PartialEq<ObjectKey> for ObjectKeyRef<'_> {
    fn eq(&self, other: &ObjectKey) -> bool {
        *self == other.as_key_ref()
    }
}

impl PartialEq<ObjectKeyRef<'_>> for ObjectKey {
    fn eq(&self, other: &ObjectKeyRef<'_>) -> bool {
        self.as_key_ref() == *other
    }
}

/// client-go's `MetaNamespaceKeyFunc`: the key of `obj` from its metadata, borrowed.
///
/// The name is `metadata.name`, falling back to `metadata.generateName` (as
/// [`kube::ResourceExt::name_any`] does) and then to the empty string; an empty namespace
/// counts as cluster-scoped.
pub fn meta_namespace_key_ref<K: Object>(obj: &K) -> ObjectKeyRef<'_> {
    let meta = obj.metadata();
    ObjectKeyRef::new(
        meta.namespace(),
        meta.name().or(meta.generate_name()).unwrap_or(""),
    )
}

/// client-go's `MetaNamespaceKeyFunc`: the owned key of `obj` from its metadata.
///
/// Agrees with [`kube::ResourceExt::namespace`] and [`kube::ResourceExt::name_any`].
pub fn meta_namespace_key<K: Object>(obj: &K) -> ObjectKey {
    meta_namespace_key_ref(obj).to_object_key()
}

/// A pluggable key function: computes the [`ObjectKey`] of an object.
///
/// The store and the DeltaFIFO that feed one another must use the same key function.
/// [`KeyFn::meta_namespace`] (also the [`Default`]) is what almost everyone wants.
pub struct KeyFn<K>(KeyFnRepr<K>);

enum KeyFnRepr<K> {
    /// client-go's `MetaNamespaceKeyFunc`, borrowed: the key is the object's namespace
    /// and name (told apart so that a key can be looked up by a name).
    MetaNamespace(for<'a> fn(&'a K) -> ObjectKeyRef<'a>),
    /// Borrows the key from the object: no allocation unless the key is new to the cache.
    Borrowed(for<'a> fn(&'a K) -> ObjectKeyRef<'a>),
    /// Builds an owned key.
    Owned(Arc<dyn Fn(&K) -> ObjectKey + Send + Sync>),
}

impl<K: Object> KeyFn<K> {
    /// client-go's `MetaNamespaceKeyFunc` ([`meta_namespace_key_ref`]).
    pub fn meta_namespace() -> Self {
        Self(KeyFnRepr::MetaNamespace(meta_namespace_key_ref::<K>))
    }
}

impl<K: Object> Default for KeyFn<K> {
    fn default() -> Self {
        Self::meta_namespace()
    }
}

impl<K> KeyFn<K> {
    /// A key function that borrows the key from the object (the cheapest kind).
    pub fn borrowed(f: for<'a> fn(&'a K) -> ObjectKeyRef<'a>) -> Self {
        Self(KeyFnRepr::Borrowed(f))
    }

    /// A key function that builds an owned key, for keys that are not parts of the object.
    pub fn owned(f: impl Fn(&K) -> ObjectKey + Send + Sync + 'static) -> Self {
        Self(KeyFnRepr::Owned(Arc::new(f)))
    }

    /// The key of `obj`.
    pub fn key(&self, obj: &K) -> ObjectKey {
        match &self.0 {
            KeyFnRepr::MetaNamespace(f) | KeyFnRepr::Borrowed(f) => f(obj).to_object_key(),
            KeyFnRepr::Owned(f) => f(obj),
        }
    }

    /// The key of `obj`, borrowed where the key function allows it.
    pub(crate) fn candidate<'a>(&self, obj: &'a K) -> KeyCandidate<'a> {
        match &self.0 {
            KeyFnRepr::MetaNamespace(f) | KeyFnRepr::Borrowed(f) => KeyCandidate::Ref(f(obj)),
            KeyFnRepr::Owned(f) => KeyCandidate::Owned(f(obj)),
        }
    }

    /// Whether the key of an object is its namespace and name (the default).
    pub(crate) fn is_meta_namespace(&self) -> bool {
        matches!(self.0, KeyFnRepr::MetaNamespace(_))
    }
}

impl<K> Clone for KeyFn<K> {
    fn clone(&self) -> Self {
        Self(match &self.0 {
            KeyFnRepr::MetaNamespace(f) => KeyFnRepr::MetaNamespace(*f),
            KeyFnRepr::Borrowed(f) => KeyFnRepr::Borrowed(*f),
            KeyFnRepr::Owned(f) => KeyFnRepr::Owned(Arc::clone(f)),
        })
    }
}

impl<K> fmt::Debug for KeyFn<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            KeyFnRepr::MetaNamespace(_) => "KeyFn(meta_namespace)",
            KeyFnRepr::Borrowed(_) => "KeyFn(borrowed)",
            KeyFnRepr::Owned(_) => "KeyFn(owned)",
        })
    }
}

/// A key on its way into a map: borrowed from the object, owned, or already shared.
pub(crate) enum KeyCandidate<'a> {
    Ref(ObjectKeyRef<'a>),
    Owned(ObjectKey),
    Shared(Arc<ObjectKey>),
}

impl KeyCandidate<'_> {
    pub(crate) fn key_ref(&self) -> ObjectKeyRef<'_> {
        match self {
            KeyCandidate::Ref(r) => *r,
            KeyCandidate::Owned(k) => k.as_key_ref(),
            KeyCandidate::Shared(k) => k.as_key_ref(),
        }
    }

    /// The shared key, allocating only if needed.
    pub(crate) fn into_shared(self) -> Arc<ObjectKey> {
        match self {
            KeyCandidate::Ref(r) => Arc::new(r.to_object_key()),
            KeyCandidate::Owned(k) => Arc::new(k),
            KeyCandidate::Shared(k) => k,
        }
    }
}

/// Lets maps and tables keyed by a shared key (the store's, the DeltaFIFO's) be searched
/// with a borrowed key, without allocating. Sound because `ObjectKeyRef` hashes like
/// `ObjectKey` and so like `Arc<ObjectKey>`.
impl hashbrown::Equivalent<Arc<ObjectKey>> for ObjectKeyRef<'_> {
    #[inline]
    fn equivalent(&self, key: &Arc<ObjectKey>) -> bool {
        *self == key.as_key_ref()
    }
}

/// The API group of an `apiVersion`: `apps` for `apps/v1`, `""` for the core group's
/// `v1`.
pub(crate) fn api_group(api_version: &str) -> &str {
    api_version
        .rsplit_once('/')
        .map_or("", |(group, _version)| group)
}

/// The last path segment of `K`'s type name, without generics: `Deployment` for
/// `k8s_openapi::api::apps::v1::Deployment`. Names informers, listers and reflectors in
/// logs and errors.
pub(crate) fn short_type_name<K>() -> &'static str {
    let name = std::any::type_name::<K>();
    let name = name.split('<').next().unwrap_or(name);
    name.rsplit("::").next().unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use std::{collections::hash_map::DefaultHasher, hash::BuildHasher};

    use hashbrown::{Equivalent, HashMap, HashTable};
    use k8s_openapi::{
        api::core::v1::{ConfigMap, Namespace},
        apimachinery::pkg::apis::meta::v1::ObjectMeta,
    };
    use kube::ResourceExt;

    use super::*;
    use crate::store::FastState;

    fn hash_of(v: &(impl Hash + ?Sized)) -> u64 {
        let mut h = DefaultHasher::new();
        v.hash(&mut h);
        h.finish()
    }

    #[test]
    fn display_is_client_go_string_key() {
        assert_eq!(ObjectKey::namespaced("ns", "a").to_string(), "ns/a");
        assert_eq!(ObjectKey::cluster_scoped("a").to_string(), "a");
        assert_eq!(ObjectKeyRef::new(Some(""), "a").to_string(), "a");
    }

    #[test]
    fn parse_round_trips_and_rejects_bad_keys() {
        for s in ["ns/a", "a", "kube-system/coredns-1"] {
            assert_eq!(ObjectKey::parse(s).unwrap().to_string(), s);
        }
        assert_eq!(ObjectKey::parse(""), Err(KeyError::Empty));
        assert!(matches!(
            ObjectKey::parse("a/b/c"),
            Err(KeyError::TooManySegments(_))
        ));
        assert!(matches!(
            ObjectKey::parse("/a"),
            Err(KeyError::EmptySegment(_))
        ));
        assert!(matches!(
            ObjectKey::parse("a/"),
            Err(KeyError::EmptySegment(_))
        ));
        assert_eq!(
            "x".parse::<ObjectKey>().unwrap(),
            ObjectKey::cluster_scoped("x")
        );
    }

    #[test]
    fn key_of_namespaced_and_cluster_scoped_resources() {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some("demo".into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(ObjectKey::of(&cm), ObjectKey::namespaced("default", "demo"));
        assert_eq!(ObjectKey::of(&cm).namespace, cm.namespace());
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some("default".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            KeyFn::meta_namespace().key(&ns),
            ObjectKey::cluster_scoped("default")
        );
        let generated = ConfigMap {
            metadata: ObjectMeta {
                generate_name: Some("gen-".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(ObjectKey::of(&generated).name, generated.name_any());
    }

    #[test]
    fn borrowed_and_owned_keys_hash_alike() {
        let owned = ObjectKey::namespaced("ns", "a");
        let borrowed = ObjectKeyRef::parse("ns/a").unwrap();
        assert_eq!(hash_of(&owned), hash_of(&borrowed));
        let shared = Arc::new(owned.clone());
        assert_eq!(hash_of(&shared), hash_of(&borrowed));
        assert_eq!(owned, borrowed);
        let mut map = HashMap::with_hasher(FastState::default());
        map.insert(shared, 1);
        assert_eq!(map.get(&borrowed), Some(&1));
        assert_eq!(map.get(&owned), Some(&1));
        assert_eq!(map.get(&ObjectKeyRef::parse("a").unwrap()), None);
    }

    /// The DeltaFIFO's scheme: a table of entries under a shared key, probed with the
    /// hash of a borrowed key computed once.
    #[test]
    fn a_borrowed_key_finds_a_shared_key_in_a_hash_table() {
        let hasher = FastState::default();
        let shared = Arc::new(ObjectKey::namespaced("ns", "a"));
        let mut table = HashTable::new();
        table.insert_unique(hasher.hash_one(&shared), Arc::clone(&shared), |k| {
            hasher.hash_one(k)
        });
        let borrowed = ObjectKeyRef::parse("ns/a").unwrap();
        let found = table.find(hasher.hash_one(borrowed), |k| borrowed.equivalent(k));
        assert!(found.is_some_and(|k| Arc::ptr_eq(k, &shared)));
        let other = ObjectKeyRef::parse("a").unwrap();
        assert!(
            table
                .find(hasher.hash_one(other), |k| other.equivalent(k))
                .is_none()
        );
    }

    #[test]
    fn owned_key_fn_is_pluggable() {
        let by_name_only = KeyFn::<ConfigMap>::owned(|cm| ObjectKey::cluster_scoped(cm.name_any()));
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some("demo".into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(by_name_only.key(&cm), ObjectKey::cluster_scoped("demo"));
        assert_eq!(
            by_name_only.clone().candidate(&cm).key_ref().to_string(),
            "demo"
        );
    }
}
