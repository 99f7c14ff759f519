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
//!   [`SharedIndexInformer::informable`], [`InformerConfig::informable`] and
//!   [`SharedInformerFactory::informable`] build informers that maintain them from the
//!   first object on.
//! - [`derive@Informable`] writes both for you from attributes, and adds a query trait
//!   with one method per index, so `lister.by_node("n1")` reads like the generated
//!   listers of client-go.
//! - [`IndexSet<K>`] is a set of such indexes declared apart from `K`: the derive with
//!   `foreign` makes one for a type of another crate, such as a k8s-openapi `ConfigMap`
//!   ([Built-in types](#built-in-types)).
//!
//! # The derive
//! On a CRD spec struct, beside kube's `#[derive(CustomResource)]`, it implements the
//! traits for the generated resource type (`Widget` for `WidgetSpec`, found from
//! `#[kube(kind = ...)]`). On any other struct implementing [`kube::Resource`] (a
//! hand-written resource, or a [projection](crate::projection) of a built-in type that
//! decodes only what a controller reads, `#[derive(Projection, Informable)]`) it
//! implements them for the struct itself.
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
//!     index(name = "by_parent", owner(type = Widget, name)),  // owner names
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
//! | `index(name = "by_x", path = "spec.x")` | keys from a field path; JSON (`spec.nodeName`) or Rust (`spec.node_name`) names; `Option`, `Vec`, sets and `Shared` are looked into (one key per element); `['key']` reads a map (`metadata.labels['app']`) |
//! | `index(name = "by_x", fn = path::to::f)` | keys from `fn(&K) -> R`, where `R` is a key, an `Option`, `Vec` or set of keys, or a reference to one |
//! | `index(name = "by_x", owner)` | keys from `metadata.ownerReferences`: the owner's UID; `owner(type = Widget, controller, name)` keeps only owners of that type (its API group and kind), only the controller, and keys by the owner's name; `owner(kind = "CronJob", group = "batch")` or `api_version = "batch/v1"` names the group and kind of an owner without a Rust type ([Owner indexes](#owner-indexes)) |
//! | `value = Type` (in `index`) | the key type, when the derive cannot see it (deep paths, functions); default `String`, and checked against the field |
//! | `format = "key" \| "display" \| "serde"` (in `index`) | how a key becomes the index's string: [`IndexKey`] (default), `Display`, or its serde JSON form (for enums as the API server stores them) |
//! | `marker = Name` (in `index`) | the marker type's name; default the index name in UpperCamelCase (`ByX`) |
//! | `key = path::to::f` | the key function, `fn(&K) -> ObjectKey` (default: `namespace/name`) |
//! | `kind = Type` | the resource type, when it is not the struct and there is no `#[kube(kind)]`; with `foreign` when it is a type of another crate |
//! | `lister_trait = Name` | the query trait's name; default `{Kind}Indexes`, with `foreign` `{Struct}Ext` |
//! | `foreign` | `kind` is a type of another crate: the struct carries the indexes ([`IndexSet`]) and `kind` gets no `Informable` ([Built-in types](#built-in-types)) |
//! | `crate = path` | where this crate is, when not `::informer` |
//!
//! Index names are snake_case: each becomes a query method. Whether an informer lists
//! one namespace or all, and whether [`Lister::get`] or [`Lister::namespaced`] exists,
//! follows the resource's `kube::Resource::Scope` as always.
//!
//! # Owner indexes
//! `owner` indexes `metadata.ownerReferences`, client-go's usual owner field index
//! ("the Jobs this CronJob controls"). An owner reference names its owner by
//! `apiVersion`, `kind`, `name` and `uid`, and a kind is unique only within its API
//! group: a CRD `CronJob` of yours and the built-in `batch/v1` `CronJob` are two
//! different owners, possibly with the same name in the same namespace. An index that
//! compared kinds alone would hand a controller the other one's children, to list in
//! its status or to delete. So `owner(...)` that keeps some owners names them by
//! group and kind, like [`Controller::owns`](crate::controller::Controller::owns):
//!
//! - `owner(type = CronJob)`: the owner's Rust type (a k8s-openapi type, the type of
//!   a `#[derive(CustomResource)]`, in scope where the derive is); its group and kind
//!   come from its [`kube::Resource`] impl, so they cannot drift from the type;
//! - `owner(kind = "CronJob", group = "batch")`, for owners without a Rust type here
//!   (`group = ""` is the core group); or `api_version = "batch/v1"`, which means
//!   the same group.
//!
//! The version never matters: a reference keeps the version it was written with
//! while the owner is served under others, so `api_version = "batch/v1"` matches a
//! `batch/v1beta1` reference too. `kind` without a group does not compile (the error
//! spells both forms out), nor does `name` without an owner type: a name is unique
//! only within a kind. `owner` and `owner(controller)` alone read every owner, keyed
//! by UID, which is unique across kinds.
//!
//! ```
//! use informer::informable::Informable;
//! use k8s_openapi::api::batch::v1::CronJob;
//! use kube::CustomResource;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(CustomResource, Informable, Deserialize, Serialize, Clone, Debug)]
//! #[kube(group = "example.com", version = "v1", kind = "Task", namespaced, schema = "disabled")]
//! #[informable(
//!     index(name = "by_cron_job", owner(type = CronJob, controller, name)),
//!     index(name = "by_schedule", owner(kind = "Schedule", group = "example.com", controller)),
//!     index(name = "by_parent", owner(type = Task, name)),
//! )]
//! pub struct TaskSpec {
//!     command: String,
//! }
//! ```
//!
//! ```compile_fail
//! # use informer::informable::Informable;
//! # use kube::CustomResource;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(CustomResource, Informable, Deserialize, Serialize, Clone, Debug)]
//! # #[kube(group = "example.com", version = "v1", kind = "Task", namespaced, schema = "disabled")]
//! #[informable(index(name = "by_cron_job", owner(kind = "CronJob", controller, name)))]
//! // error: `owner(kind = "CronJob")` would match a `CronJob` of any API group [...]
//! # pub struct TaskSpec { command: String }
//! ```
//!
//! # Built-in types
//! `k8s-openapi` types need no derive to be cached, and cannot get one: the orphan rule
//! forbids `impl Informable for ConfigMap` outside k8s-openapi. Declare their indexes
//! on a struct of your own instead, with `foreign`: the derive then writes the marker
//! types, the query trait (named after the struct: `ConfigMapIndexesExt` here) for
//! `Lister<ConfigMap>`, `NamespaceLister<ConfigMap>` and `Indexer<ConfigMap>`, and
//! makes the struct the [`IndexSet`] of those indexes, with `INDEX_NAMES`,
//! `indexers()` and `add_to(&indexer)` also as inherent items.
//!
//! ```
//! use informer::informable::Informable;
//! use informer::key::KeyFn;
//! use informer::lister::Lister;
//! use informer::store::Writer;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
//!
//! /// Typed indexes of ConfigMaps.
//! #[derive(Informable)]
//! #[informable(
//!     kind = ConfigMap,
//!     foreign,
//!     index(name = "by_backup", owner(kind = "Backup", group = "example.com", controller, name)),
//!     index(name = "by_app", path = "metadata.labels['app']"),
//!     index(name = "by_team", path = "data['team']"),
//! )]
//! struct ConfigMapIndexes;
//!
//! let mut cache = Writer::with_indexers(KeyFn::meta_namespace(), ConfigMapIndexes::indexers())
//!     .unwrap();
//! cache.upsert(ConfigMap {
//!     metadata: ObjectMeta {
//!         name: Some("copy".into()),
//!         namespace: Some("default".into()),
//!         owner_references: Some(vec![OwnerReference {
//!             api_version: "example.com/v1".into(),
//!             kind: "Backup".into(),
//!             name: "nightly".into(),
//!             uid: "8d6c".into(),
//!             controller: Some(true),
//!             ..Default::default()
//!         }]),
//!         ..Default::default()
//!     },
//!     ..Default::default()
//! });
//! let lister = Lister::new(cache.indexer());
//! assert_eq!(lister.by_backup("nightly").len(), 1);                      // ConfigMapIndexesExt
//! assert_eq!(lister.namespaced("default").by_index::<ByBackup>("nightly").len(), 1);
//! assert!(lister.by_app("web").is_empty());
//! ```
//!
//! The derive cannot see the fields of another crate's type, so a path below
//! `metadata` is left to the compiler: it becomes field accesses (`spec.nodeName` is
//! `spec.node_name`; k8s-openapi spells a field named `type` as `type_`), a field the
//! type lacks is a compile error at the path, and keys are `String` unless `value =
//! Type` says otherwise (`path = "spec.containers.ports.containerPort", value = i32`).
//! `key` cannot go with `foreign` (the key function is part of `Informable`): give one
//! to the informer with [`InformerConfig::key_fn`].
//!
//! An informer from [`SharedInformerFactory::informer`] has no such indexes at first
//! (a query would add the one it asks for, but only then, building it over the whole
//! cache); [`IndexSet::add_to`] adds the missing ones, so every controller sharing the
//! informer can call it, before or after the factory starts:
//!
//! ```no_run
//! # use informer::informable::Informable;
//! # use k8s_openapi::api::core::v1::ConfigMap;
//! # #[derive(Informable)]
//! # #[informable(kind = ConfigMap, foreign, index(name = "by_backup", owner(kind = "Backup", group = "example.com", controller, name)))]
//! # struct ConfigMapIndexes;
//! # fn demo(factory: informer::factory::SharedInformerFactory) {
//! let config_maps = factory.informer::<ConfigMap>();
//! ConfigMapIndexes::add_to(&config_maps.indexer());
//! factory.start();
//! // ...
//! let copies = config_maps.lister().by_backup("nightly");
//! # }
//! ```
//!
//! An [`InformerConfig`] can take them from the start:
//! `InformerConfig::default().indexers(ConfigMapIndexes::indexers())`.
//!
//! ## By hand
//! For each index the derive implements [`Index`] for a marker type. Without the
//! derive, or for a key type that needs its own `encode`, write that impl yourself:
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
//! Register it with [`Indexers::with_index`](crate::store::Indexers::with_index).
//!
//! # Metadata-only informers
//! An index whose keys come only from `metadata` (a `metadata.*` path, `owner`) also
//! indexes the metadata-only [`PartialObjectMeta<K>`](kube::core::PartialObjectMeta)
//! of a [metadata informer](crate::factory::SharedInformerFactory::metadata_informer):
//! the derive implements its marker for both, and writes a second query trait,
//! `{Kind}MetadataIndexes` (`ConfigMapIndexesMetadataExt` with `foreign`), with those
//! indexes' methods for the metadata-only listers.
//! [`SharedInformerFactory::metadata_informable`] maintains them from the start
//! ([`Informable::metadata_indexers`]). Paths into `spec` or `data` and functions of
//! `&K` need the whole object: they are not there, and querying them does not compile.
//!
//! ```
//! # use informer::informable::Informable;
//! # use kube::CustomResource;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(CustomResource, Informable, Deserialize, Serialize, Clone, Debug)]
//! # #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, schema = "disabled")]
//! # #[informable(index(name = "by_app", path = "metadata.labels['app']"), index(name = "by_color", path = "spec.color"))]
//! # pub struct WidgetSpec { color: String }
//! # fn demo(factory: informer::factory::SharedInformerFactory) {
//! let widgets = factory.metadata_informable::<Widget>();   // PartialObjectMeta<Widget>
//! let web = widgets.lister().by_app("web");                 // trait WidgetMetadataIndexes
//! // widgets.lister().by_color("red")                       -> does not compile
//! # let _ = web;
//! # }
//! ```
//!
//! # Indexes a cache lacks
//! A typed query on a cache that does not maintain the index yet (an informer made
//! with [`SharedIndexInformer::new`], say) adds it first, built over the current
//! content ([`Indexer::add_indexers`]); informers made with the `informable`
//! constructors above maintain the derived indexes from the start, and
//! [`IndexSet::add_to`] adds a foreign set's.
//!
//! [`Index<K>`]: crate::store::Index
//! [`Index`]: crate::store::Index
//! [`IndexKey`]: crate::store::IndexKey
//! [`Indexer::add_indexers`]: crate::store::Indexer::add_indexers
//! [`Lister::get`]: crate::lister::Lister::get
//! [`Lister::namespaced`]: crate::lister::Lister::namespaced
//! [`SharedInformerFactory::informable`]: crate::factory::SharedInformerFactory::informable
//! [`SharedInformerFactory::informer`]: crate::factory::SharedInformerFactory::informer
//! [`SharedInformerFactory::metadata_informable`]: crate::factory::SharedInformerFactory::metadata_informable
//! [`InformerConfig`]: crate::shared_informer::InformerConfig
//! [`InformerConfig::key_fn`]: crate::shared_informer::InformerConfig::key_fn
//! [`SharedIndexInformer::informable`]: crate::shared_informer::SharedIndexInformer::informable
//! [`SharedIndexInformer::new`]: crate::shared_informer::SharedIndexInformer::new
//! [`InformerConfig::informable`]: crate::shared_informer::InformerConfig::informable

use std::collections::HashSet;

use kube::core::PartialObjectMeta;

use crate::key::KeyFn;
use crate::object::Object;
use crate::store::{Indexer, Indexers};

pub use informer_derive::Informable;

/// A resource type with a key function and a set of typed indexes: what an informer
/// of it maintains. Implemented by [`derive@Informable`].
///
/// The derive implements it for the resource type: for a CRD spec struct, the type
/// kube generates from it (`Widget` for `WidgetSpec`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no derived key function and indexes: it is not `Informable`",
    label = "`{Self}` does not derive `Informable`",
    note = "a type of another crate (a k8s-openapi type) cannot derive it: ask the factory for \
            `informer::<{Self}>()` and declare its indexes on a struct of your own, \
            `#[derive(Informable)] #[informable(kind = {Self}, foreign, index(...))] struct Indexes;`, \
            then `Indexes::add_to(&informer.indexer())` (see `informer::informable`, \"Built-in types\"); \
            or cache a projection of it (`#[derive(Projection, Informable)]`, see `informer::projection`)"
)]
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

    /// The indexes of [`indexers`](Self::indexers) that read only `metadata` (its
    /// fields, labels, owner references), for the metadata-only
    /// [`PartialObjectMeta`] of the resource `Self` is
    /// listed as (`PartialObjectMeta<Self>` for a `kube::Resource`) that
    /// [`SharedInformerFactory::metadata_informable`](crate::factory::SharedInformerFactory::metadata_informable) caches. None unless the derive
    /// (or your impl) says.
    fn metadata_indexers() -> Indexers<PartialObjectMeta<<Self as Object>::Resource>> {
        Indexers::new()
    }
}

/// A set of typed indexes of resource type `K`, declared apart from `K`: how a type of
/// another crate (a k8s-openapi `ConfigMap`), which cannot be [`Informable`] here, gets
/// named indexes. Implemented by [`derive@Informable`] with `foreign` for the annotated
/// struct (see [Built-in types](crate::informable#built-in-types)).
///
/// The derive also gives the struct the same three items as inherent ones, so
/// `ConfigMapIndexes::add_to(&indexer)` needs no import of this trait.
pub trait IndexSet<K: 'static> {
    /// The names of [`indexers`](Self::indexers), in declaration order.
    const INDEX_NAMES: &'static [&'static str];

    /// The indexes, one [`TypedIndex`](crate::store::TypedIndex) per
    /// [`Index`](crate::store::Index) of the set.
    fn indexers() -> Indexers<K>;

    /// Adds the indexes of the set to `indexer` (an informer's
    /// [`indexer()`](crate::shared_informer::SharedIndexInformer::indexer)), each built
    /// over the current content and maintained from then on.
    ///
    /// Unlike [`Indexer::add_indexers`], it skips the names `indexer` already has, so
    /// every component sharing a factory's informer can call it, before or after the
    /// informer starts, and after typed queries have added some of the indexes
    /// already. An index defined by name elsewhere is taken to be the same index.
    fn add_to(indexer: &Indexer<K>) {
        loop {
            let defined: HashSet<String> = indexer.index_names().into_iter().collect();
            let mut missing = Self::indexers();
            let mut seen = HashSet::new();
            missing
                .entries
                .retain(|(name, _)| !defined.contains(name) && seen.insert(name.clone()));
            if missing.is_empty() {
                return;
            }
            // All or nothing: a conflict means that someone added one of these names
            // since `index_names`. Indexes are never removed, so this ends.
            if indexer.add_indexers(missing).is_ok() {
                return;
            }
        }
    }
}

/// A Kubernetes resource type, or an object listed as one: any [`Object`] (every
/// [`kube::Resource`], and a projection with a metadata of its own).
///
/// [`Informable`] asks for it instead of asking for `Object` directly so that
/// deriving `Informable` on a type that is not a resource explains what to do.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Kubernetes resource",
    label = "not a `kube::Resource`",
    note = "derive `Informable` on a CRD spec struct beside kube's `#[derive(CustomResource)]`, \
            name the resource type with `#[informable(kind = ...)]`, or implement \
            `kube::Resource` (or k8s-openapi's `Resource` and `Metadata`) for `{Self}`"
)]
pub trait IsResource: Object {}

impl<K: Object> IsResource for K {}

#[doc(hidden)]
#[path = "derive_support.rs"]
pub mod __private;

#[cfg(test)]
mod tests;
