//! Typed keys and indexes: `#[derive(Informable)]` and the traits behind it.
//!
//! # From client-go
//! A Go controller registers indexes by name and gets `interface{}` back:
//!
//! ```go
//! informer.AddIndexers(cache.Indexers{"byNode": func(obj interface{}) ([]string, error) {
//!     return []string{obj.(*v1.Pod).Spec.NodeName}, nil
//! }})
//! objs, err := informer.GetIndexer().ByIndex("byNod", "n1") // typo: error at run time
//! pod := objs[0].(*v1.Pod)                                  // type assertion
//! ```
//!
//! Nothing checks that `"byNod"` exists, that the value is a node name, or that the
//! objects are Pods. Here the index is a type:
//!
//! - [`Index<K>`] is one named index of resource `K`: its [`NAME`](crate::store::Index::NAME), its
//!   key type [`Value`](crate::store::Index::Value) (a `String`, an integer, an enum...), and the
//!   function that lists an object's keys. Implementing it makes a *marker type*
//!   (`ByNode`) that queries name: `lister.by_index::<ByNode>("n1")` returns
//!   `Vec<Arc<Pod>>`. Asking a `Lister<Widget>` for an index of `Pod` does not
//!   compile, nor does passing an `i32` where the index holds node names.
//! - [`Informable`] is a resource type with a key function and a set of such indexes.
//!   [`SharedIndexInformer::informable`], [`InformerOptions::informable`] and
//!   [`SharedInformerFactory::informable`] build informers that maintain them from the
//!   first object on.
//! - [`derive@Informable`] writes both for you from attributes, and adds a query trait
//!   with one method per index, so `lister.by_node("n1")` reads like the generated
//!   listers of client-go.
//!
//! # The derive
//! On a CRD spec struct, beside kube's `#[derive(CustomResource)]`, it implements the
//! traits for the generated resource type (`Widget` for `WidgetSpec`, found from
//! `#[kube(kind = ...)]`). On any other struct implementing [`kube::Resource`] (a
//! hand-written resource, or a slim projection of a built-in type that decodes only
//! what a controller reads) it implements them for the struct itself.
//!
//! ```
//! use informer::informable::Informable;
//! use informer::lister::Lister;
//! use informer::store::Writer;
//! use kube::CustomResource;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(CustomResource, Informable, Deserialize, Serialize, Clone, Debug)]
//! #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, schema = "disabled")]
//! #[informable(
//!     index(name = "by_color", path = "spec.color"),
//!     index(name = "by_size", path = "spec.size"),            // keys are u32
//!     index(name = "by_tag", path = "spec.tags"),             // one key per tag
//!     index(name = "by_app", path = "metadata.labels['app']"),
//!     index(name = "by_parent", owner(kind = "Widget", name)),
//! )]
//! pub struct WidgetSpec {
//!     color: String,
//!     size: u32,
//!     tags: Option<Vec<String>>,
//! }
//!
//! // What an informer does with the derived key function and indexes:
//! let mut cache = Writer::with_indexers(Widget::key_fn(), Widget::indexers()).unwrap();
//! let spec = |color: &str, size, tags: &[&str]| WidgetSpec {
//!     color: color.into(),
//!     size,
//!     tags: Some(tags.iter().map(|t| t.to_string()).collect()),
//! };
//! for (name, spec) in [
//!     ("a", spec("red", 1, &["new"])),
//!     ("b", spec("red", 3, &["new", "big"])),
//!     ("c", spec("blue", 3, &[])),
//! ] {
//!     let mut widget = Widget::new(name, spec);
//!     widget.metadata.namespace = Some("default".into());
//!     cache.upsert(widget);
//! }
//! let lister = Lister::new(cache.indexer());
//!
//! // A generated method per index (trait `WidgetIndexes`), typed keys:
//! assert_eq!(lister.by_color("red").len(), 2);
//! assert_eq!(lister.by_size(3u32).len(), 2);
//! assert_eq!(lister.by_tag("big")[0].metadata.name.as_deref(), Some("b"));
//! assert_eq!(lister.namespaced("default").by_color("blue").len(), 1);
//! // ...or the marker types, for generic code:
//! assert_eq!(lister.by_index::<ByTag>("new").len(), 2);
//! assert!(lister.by_index::<ByApp>("web").is_empty());
//! ```
//!
//! An index the type does not have, or a key of the wrong type, is a compile error:
//!
//! ```compile_fail
//! # use informer::informable::Informable;
//! # use kube::CustomResource;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(CustomResource, Informable, Deserialize, Serialize, Clone, Debug)]
//! # #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, schema = "disabled")]
//! # #[informable(index(name = "by_size", path = "spec.size"))]
//! # pub struct WidgetSpec { size: u32 }
//! # fn demo(lister: informer::lister::Lister<Widget>) {
//! lister.by_size("three"); // keys of `by_size` are u32
//! # }
//! ```
//!
//! # Attributes
//! All in `#[informable(...)]` on the struct; every mistake is reported at once, with
//! did-you-mean hints for misspelt keys and fields.
//!
//! | Attribute | Meaning |
//! |-----------|---------|
//! | `index(name = "by_x", path = "spec.x")` | keys from a field path; JSON (`spec.nodeName`) or Rust (`spec.node_name`) names; `Option`, `Vec` and sets are looked into (one key per element); `['key']` reads a map (`metadata.labels['app']`) |
//! | `index(name = "by_x", fn = path::to::f)` | keys from `fn(&K) -> R`, where `R` is a key, an `Option`, `Vec` or set of keys, or a reference to one |
//! | `index(name = "by_x", owner)` | keys from `metadata.ownerReferences`: the owner's UID; `owner(kind = "Widget", controller, name)` keeps only owners of that kind, only the controller, and keys by the owner's name |
//! | `value = Type` (in `index`) | the key type, when the derive cannot see it (deep paths, functions); default `String`, and checked against the field |
//! | `format = "key" \| "display" \| "serde"` (in `index`) | how a key becomes the index's string: [`IndexKey`] (default), `Display`, or its serde JSON form (for enums as the API server stores them) |
//! | `marker = Name` (in `index`) | the marker type's name; default the index name in UpperCamelCase (`ByX`) |
//! | `key = path::to::f` | the key function, `fn(&K) -> ObjectKey` (default: `namespace/name`) |
//! | `kind = Type` | the resource type, when it is not the struct and there is no `#[kube(kind)]` |
//! | `lister_trait = Name` | the query trait's name; default `{Kind}Indexes` |
//! | `crate = path` | where this crate is, when not `::informer` |
//!
//! Index names are snake_case: each becomes a query method. Whether an informer lists
//! one namespace or all, and whether [`Lister::get`] or [`Lister::namespaced`] exists,
//! follows the resource's `kube::Resource::Scope` as always.
//!
//! # Built-in types
//! `k8s-openapi` types need no derive to be cached. To index one by type, implement
//! [`Index`] for a marker type of your own:
//!
//! ```
//! use std::borrow::Cow;
//! use informer::store::{Index, IndexKey};
//! use k8s_openapi::api::core::v1::Pod;
//!
//! /// Pods by the node they run on.
//! struct ByNode;
//!
//! impl Index<Pod> for ByNode {
//!     const NAME: &'static str = "by_node";
//!     type Value = String;
//!     fn encode(node: &String) -> Cow<'_, str> {
//!         node.index_key()
//!     }
//!     fn index_values(pod: &Pod, emit: &mut dyn FnMut(&str)) {
//!         if let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
//!             emit(node);
//!         }
//!     }
//! }
//!
//! # fn demo(lister: informer::lister::Lister<Pod>) {
//! let on_n1 = lister.by_index::<ByNode>("n1");
//! # let _ = on_n1;
//! # }
//! ```
//!
//! A typed query on a cache that does not maintain the index yet (an informer made
//! with [`SharedIndexInformer::new`], say) adds it first, built over the current
//! content ([`Indexer::add_indexers`]); informers made with the `informable`
//! constructors above maintain the derived indexes from the start.
//!
//! [`Index<K>`]: crate::store::Index
//! [`Index`]: crate::store::Index
//! [`IndexKey`]: crate::store::IndexKey
//! [`Indexer::add_indexers`]: crate::store::Indexer::add_indexers
//! [`Lister::get`]: crate::lister::Lister::get
//! [`Lister::namespaced`]: crate::lister::Lister::namespaced
//! [`SharedInformerFactory::informable`]: crate::factory::SharedInformerFactory::informable
//! [`SharedIndexInformer::informable`]: crate::shared_informer::SharedIndexInformer::informable
//! [`SharedIndexInformer::new`]: crate::shared_informer::SharedIndexInformer::new
//! [`InformerOptions::informable`]: crate::shared_informer::InformerOptions::informable

use kube::Resource;

use crate::key::KeyFn;
use crate::store::Indexers;

pub use informer_derive::Informable;

/// A resource type with a key function and a set of typed indexes: what an informer
/// of it maintains. Implemented by [`derive@Informable`].
///
/// The derive implements it for the resource type: for a CRD spec struct, the type
/// kube generates from it (`Widget` for `WidgetSpec`).
pub trait Informable: IsResource + Sized + Send + Sync + 'static {
    /// The names of [`indexers`](Self::indexers), in declaration order.
    const INDEX_NAMES: &'static [&'static str];

    /// The key function (client-go's `KeyFunc`); `namespace/name` unless overridden.
    fn key_fn() -> KeyFn<Self> {
        KeyFn::meta_namespace()
    }

    /// The indexes, one [`TypedIndex`](crate::store::TypedIndex) per
    /// [`Index`](crate::store::Index) of the type.
    fn indexers() -> Indexers<Self>;
}

/// A Kubernetes resource type: any [`kube::Resource`].
///
/// [`Informable`] asks for it instead of asking for `kube::Resource` directly so that
/// deriving `Informable` on a type that is not a resource explains what to do.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Kubernetes resource",
    label = "not a `kube::Resource`",
    note = "derive `Informable` on a CRD spec struct beside kube's `#[derive(CustomResource)]`, \
            name the resource type with `#[informable(kind = ...)]`, or implement \
            `kube::Resource` (or k8s-openapi's `Resource` and `Metadata`) for `{Self}`"
)]
pub trait IsResource: Resource {}

impl<K: Resource> IsResource for K {}

#[doc(hidden)]
#[path = "informable/derive_support.rs"]
pub mod __private;

#[cfg(test)]
mod tests;
