//! [`Shared`]: a value stored once for every object that holds it (public as
//! `informer::projection::Shared`; here, on the ground floor, because the store's
//! index keys and the informable derive's walk read it too).

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use serde::de::{Deserialize, Deserializer};

use crate::allocator::measured;

mod table;
#[cfg(test)]
mod tests;

use table::{Entry, Table};

/// A value stored once for the whole process and shared by every object that holds
/// an equal one: 8 bytes in the object, wherever the value repeats.
///
/// Most values of a cache repeat across objects: the Pods of a ReplicaSet have the
/// same namespace, labels but one, owner kind, container names and images; fifty
/// node names serve thirty thousand Pods; a phase is one of five words. A projection
/// field of type `Shared<T>` (where the original has `T`, or anything a `T` field
/// could project) decodes the value as `T` would, then looks it up among the values
/// of `T` alive in the process: an equal one is shared, and the decoded copy freed;
/// else this one is stored. The last handle to go frees the value (and its slot), so
/// a cache that churns returns what it no longer holds.
///
/// ```
/// use informer::projection::{Projection, Shared};
/// use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodStatus};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// #[derive(Projection, Clone, Debug)]
/// #[projection(of = Pod)]
/// pub struct PodView {
///     pub metadata: ObjectMeta,
///     pub spec: Option<PodViewSpec>,
///     pub status: Option<PodViewStatus>,
/// }
///
/// #[derive(Projection, Clone, Debug, Default)]
/// #[projection(of = PodSpec)]
/// pub struct PodViewSpec {
///     pub node_name: Option<Shared<String>>,         // fifty nodes, one copy each
///     pub containers: Shared<Vec<ContainerImage>>,   // one list per Pod template
/// }
///
/// #[derive(Projection, Clone, Debug, Default, PartialEq, Eq, Hash)]
/// #[projection(of = Container)]
/// pub struct ContainerImage {
///     pub name: String,
///     pub image: Option<String>,
/// }
///
/// #[derive(Projection, Clone, Debug, Default)]
/// #[projection(of = PodStatus)]
/// pub struct PodViewStatus {
///     pub phase: Option<Shared<String>>,
/// }
///
/// let pod = |name: &str| -> PodView {
///     serde_json::from_str(&format!(r#"{{"metadata":{{"name":"{name}"}},
///         "spec":{{"nodeName":"n1","containers":[{{"name":"app","image":"nginx"}}]}}}}"#))
///     .unwrap()
/// };
/// let (a, b) = (pod("web-0"), pod("web-1"));
/// let (a, b) = (a.spec.unwrap(), b.spec.unwrap());
/// assert_eq!(a.node_name.as_deref().map(String::as_str), Some("n1"));
/// assert!(Shared::ptr_eq(&a.containers, &b.containers)); // one list for both
/// assert_eq!(a.containers[0].image.as_deref(), Some("nginx"));
/// ```
///
/// # Which fields to share
/// Those whose values repeat: a `Shared` value costs an entry (about 80 bytes beside
/// the value, once per distinct value) and, per object, a hash and a lookup while
/// decoding. A value of its own per object (a name, a uid, a resourceVersion) only
/// gains the cost; keep it a `String`. The derive shares nothing by itself: which
/// values repeat is a fact of the user's cluster, not of the type.
///
/// `T` is compared for equality when looked up (so it is `Eq + Hash`: derive both on
/// a projected struct held in one), and is immutable once shared: there is no
/// `DerefMut`; build a new value and [`Shared::new`] it.
///
/// # Equality, order and hashing
/// Two handles are equal when their values are (which, as equal values are stored
/// once, is when they point to the same entry: [`ptr_eq`](Self::ptr_eq), compared
/// without reading the values); order and hash are the value's, so a `Shared<T>` can
/// be looked up by a `&T` in a map ([`Borrow`]).
///
/// # Memory accounting
/// A value is counted once for the process, in [`shared_size`], not in any object:
/// [`CacheSize::bytes`](crate::shared_informer::CacheSize::bytes) counts each object's
/// handle (inline in it) and none of the values. The bytes of a value are what
/// decoding it allocated (measured as the decoder measures objects) and its entry; a
/// value made by [`Shared::new`] counts its entry only.
pub struct Shared<T: Eq + Hash + Send + Sync + 'static>(Arc<Entry<T>>);

impl<T: Eq + Hash + Send + Sync + 'static> Shared<T> {
    /// The shared copy of `value`: the one alive in the process, if any (and `value`
    /// is dropped), else `value` itself, stored.
    pub fn new(value: T) -> Self {
        Shared(Table::get().intern(value, 0))
    }

    /// Whether `a` and `b` are the same stored value. For values made by this type,
    /// the same as `a == b`.
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

/// The number of distinct [`Shared`] values alive in the process, of every type,
/// and an estimate of the bytes they hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SharedSize {
    /// Distinct values stored.
    pub values: u64,
    /// Their bytes: each value's own allocations as decoding measured them (nothing
    /// for a value made by [`Shared::new`]), its entry and its slot in the table.
    pub bytes: u64,
}

/// The [`Shared`] values alive in the process, counted once each, whichever objects
/// and caches hold them (see [Memory accounting](Shared#memory-accounting)).
pub fn shared_size() -> SharedSize {
    let (values, bytes) = table::usage();
    SharedSize { values, bytes }
}

impl<T: Eq + Hash + Send + Sync + 'static> Deref for Shared<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0.value
    }
}

impl<T: Eq + Hash + Send + Sync + 'static> AsRef<T> for Shared<T> {
    fn as_ref(&self) -> &T {
        self
    }
}

impl<T: Eq + Hash + Send + Sync + 'static> Borrow<T> for Shared<T> {
    fn borrow(&self) -> &T {
        self
    }
}

impl<T: Eq + Hash + Send + Sync + 'static> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(Arc::clone(&self.0))
    }
}

impl<T: Eq + Hash + Send + Sync + 'static> From<T> for Shared<T> {
    fn from(value: T) -> Self {
        Shared::new(value)
    }
}

impl<T: Eq + Hash + Send + Sync + Default + 'static> Default for Shared<T> {
    fn default() -> Self {
        Shared::new(T::default())
    }
}

impl<T: Eq + Hash + Send + Sync + 'static> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        Shared::ptr_eq(self, other)
    }
}

impl<T: Eq + Hash + Send + Sync + 'static> Eq for Shared<T> {}

impl PartialEq<str> for Shared<String> {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Shared<String> {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl<T: Eq + Hash + Send + Sync + PartialOrd + 'static> PartialOrd for Shared<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        (**self).partial_cmp(&**other)
    }
}

impl<T: Eq + Hash + Send + Sync + Ord + 'static> Ord for Shared<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (**self).cmp(&**other)
    }
}

impl<T: Eq + Hash + Send + Sync + 'static> Hash for Shared<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (**self).hash(state);
    }
}

impl<T: Eq + Hash + Send + Sync + fmt::Debug + 'static> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: Eq + Hash + Send + Sync + fmt::Display + 'static> fmt::Display for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

/// Decodes a `T`, measured apart from the object being decoded (its bytes are the
/// entry's, if it is stored), then shares it.
impl<'de, T: Eq + Hash + Send + Sync + Deserialize<'de> + 'static> Deserialize<'de> for Shared<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (value, bytes) = measured(|| T::deserialize(deserializer));
        Ok(Shared(Table::get().intern(value?, bytes)))
    }
}

impl<T: Eq + Hash + Send + Sync + serde::Serialize + 'static> serde::Serialize for Shared<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}
