//! The thread-safe indexed store: client-go's `Indexer` / `threadSafeMap`, typed.
//!
//! # Objects and keys
//! The store maps an [`ObjectKey`](crate::key::ObjectKey) to an `Arc<K>`. Each object is
//! held once; [`Indexer::get`], [`Indexer::list`] and every other read hand out clones
//! of the `Arc`, never copies of the object (treat them as read-only, as client-go asks
//! you to treat cached objects). The key comes from a pluggable
//! [`KeyFn`](crate::key::KeyFn), by default client-go's `MetaNamespaceKeyFunc`.
//!
//! # One writer, many readers
//! client-go hands everybody the same `Indexer` and trusts that only the informer writes.
//! Here the split is in the types, as in kube-runtime's `reflector::store`:
//!
//! - [`Writer`] is the only handle that changes objects ([`Writer::upsert`],
//!   [`Writer::delete`], [`Writer::replace`]). It is not `Clone`; the informer's process
//!   loop owns it.
//! - [`Indexer`] is the reader: cheap to clone, `Send + Sync`, with synchronous reads
//!   under a shared lock, so readers never wait for one another, only briefly for the
//!   writer.
//!
//! # Indexes
//! An index is a named [`IndexFunc`] (client-go's `IndexFunc`, registered through
//! [`Indexers`]) plus the map it maintains from each value to the keys of the objects
//! that produce it. [`Writer::new`] defines the namespace index ([`NAMESPACE_INDEX`]);
//! more can be added at any time with [`Indexer::add_indexers`], also once objects are
//! stored (the new index is built over the current content). Indexes are kept current
//! incrementally: an update re-indexes only the values that changed (no allocation when
//! none did), and a value whose last object goes away is removed, so churn leaks
//! nothing. Query them with [`Indexer::by_index`], [`Indexer::index_keys`],
//! [`Indexer::index_values`] and [`Indexer::by_index_of`].
//!
//! # Typed indexes
//! A marker type implementing [`Index<K>`] is one named index with a typed key:
//! register it with [`Indexers::with_index`] and query it with
//! [`IndexQuery::by_index`], which takes a key of the index's type and checks at
//! compile time that the index belongs to `K` (see [`Index`]).
//!
//! # Replace without two copies
//! client-go's `Replace` builds a second map beside the first and rebuilds every index.
//! [`Writer::replace`] instead stores each listed object in place (releasing the object
//! it replaces at once, updating only the index values that changed) and then removes
//! what was not listed, so the store never holds two copies of its content. It runs under
//! one write lock: readers see the old content or the new, never a mix.
//!
//! # Layout
//! Objects sit in a slab of slots; a hash map gives each key its slot, and index sets
//! hold 4-byte slot ids. An index query reads its objects straight from their slots, an
//! update swaps the object in its slot after one hash lookup, and scans walk a vector.
//! Keys are allocated once per object and shared (`Arc<ObjectKey>`) with the DeltaFIFO.
//!
//! # Label selectors
//! [`Selector`] is apimachinery's label selector: equality- and set-based requirements,
//! parsed from the API server's string grammar or converted from a `metav1.LabelSelector`.
//! [`Indexer::select`] and [`Indexer::select_in_namespace`] answer a selector from the
//! namespace index or from a label index ([`Indexers::with_label_index`]) when the selector has an equality or `in`
//! requirement on an indexed label, and fall back to a scan only when neither applies.
//!
//! ```
//! use std::sync::Arc;
//! use informer::store::{Indexers, Selector, Writer};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//!
//! let mut writer = Writer::<ConfigMap>::new();
//! let indexer = writer.indexer();
//! indexer
//!     .add_indexers(Indexers::new().with_label_index("app"))
//!     .unwrap();
//! writer.upsert(ConfigMap {
//!     metadata: ObjectMeta {
//!         name: Some("web-config".into()),
//!         namespace: Some("default".into()),
//!         labels: Some([("app".to_owned(), "web".to_owned())].into()),
//!         ..Default::default()
//!     },
//!     ..Default::default()
//! });
//! let selector: Selector = "app=web".parse().unwrap();
//! let found: Vec<Arc<ConfigMap>> = indexer.select_in_namespace("default", &selector);
//! assert_eq!(found.len(), 1);
//! assert!(indexer.get_by_key("default/web-config").is_some());
//! ```
//!
//! # Selector grammar
//!
//! Label selectors, as the API server understands them.
//!
//! A [`Selector`] is a conjunction of [`Requirement`]s on an object's labels, exactly
//! apimachinery's `labels.Selector`:
//!
//! - equality-based: `app=web`, `app==web`, `tier!=db`;
//! - set-based: `env in (a,b)`, `env notin (c)`, `has` (the label exists), `!legacy`
//!   (it does not);
//! - numeric: `replicas>2`, `replicas<5` (the label's value parsed as an integer).
//!
//! It is built from the API server's string grammar ([`Selector::parse`], [`FromStr`](std::str::FromStr)),
//! from a `metav1.LabelSelector` (`matchLabels` plus `matchExpressions`, via
//! [`TryFrom`]), or from requirements. Its [`Display`](std::fmt::Display) form is the
//! canonical string (requirements sorted by key, values sorted), which parses back to
//! the same selector and can be sent as a list call's `labelSelector`.
//!
//! The store answers selectors with an equality or `in` requirement on a label that has
//! a label index ([`Indexers::with_label_index`]) from that index instead of scanning
//! ([`Indexer::select`](Indexer::select)).
//!
//! ```
//! use std::collections::BTreeMap;
//! use informer::store::Selector;
//!
//! let sel: Selector = "app=web,tier!=db,env in (a,b),!legacy,has".parse().unwrap();
//! let labels: BTreeMap<String, String> =
//!     [("app", "web"), ("env", "a"), ("has", "")].map(|(k, v)| (k.into(), v.into())).into();
//! assert!(sel.matches(&labels));
//! assert_eq!(sel.to_string(), "app=web,env in (a,b),has,!legacy,tier!=db");
//! ```

mod index;
mod indexer;
mod selector;
mod size;
mod state;
mod typed_index;
mod writer;

#[cfg(test)]
mod tests;

pub use index::{IndexFunc, IndexedField, Indexers, NAMESPACE_INDEX, label_index_name};
pub use indexer::Indexer;
pub use selector::{Operator, Requirement, Selector, SelectorError};
pub(crate) use size::per_object_overhead;
pub(crate) use typed_index::typed_query;
pub use typed_index::{AsIndexKey, Index, IndexKey, IndexQuery, TypedIndex};
pub(crate) use writer::WriteBatch;
pub use writer::Writer;

/// The hasher of the maps keyed by object keys (the store's and the DeltaFIFO's) and
/// by index values: foldhash, seeded per process, several times cheaper than SipHash on
/// short keys and still resistant to the simple collision floods a client of the API
/// server could stage through object names.
pub(crate) type FastState = foldhash::fast::RandomState;

/// A hash map with [`FastState`].
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, FastState>;

/// A hash set with [`FastState`].
pub(crate) type FastSet<T> = std::collections::HashSet<T, FastState>;

/// Errors of the store's index operations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No index with this name is defined.
    #[error("index {0:?} does not exist")]
    IndexNotFound(String),
    /// An index with this name is already defined (or was given twice).
    #[error("index {0:?} already exists")]
    IndexConflict(String),
}
