//! Projections: cache only the fields a controller reads, decoded straight from the
//! wire.
//!
//! A full k8s-openapi `Pod` in a cache costs about 45 KB (30,000 Pods of a realistic
//! shape on a 1.20 server, managedFields already skipped): its layout alone is large
//! (a `Container` is 2,120 bytes, a `Volume` 3,208, before any string), and most of
//! it is fields a controller never reads. client-go's `SetTransform` and
//! controller-runtime's `ByObject.Transform` trim an object *after* decoding it whole;
//! a projection is never decoded whole. It is a struct of the fields you read, made
//! a resource of the original's group, version, kind, plural and scope by
//! [`derive@Projection`]:
//!
//! ```
//! use informer::projection::Projection;
//! use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodStatus};
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//!
//! /// What the controller reads of a Pod.
//! #[derive(Projection, Clone, Debug)]
//! #[projection(of = Pod)]
//! pub struct PodView {
//!     pub metadata: ObjectMeta,          // slim: name, namespace, uid, labels, owners...
//!     pub spec: Option<PodViewSpec>,
//!     pub status: Option<PodViewStatus>,
//! }
//!
//! #[derive(Projection, Clone, Debug, Default)]
//! #[projection(of = PodSpec)]
//! pub struct PodViewSpec {
//!     pub node_name: Option<String>,     // reads spec.nodeName: no rename needed
//!     pub containers: Vec<ContainerImage>,
//! }
//!
//! #[derive(Projection, Clone, Debug, Default)]
//! #[projection(of = Container)]
//! pub struct ContainerImage {
//!     pub name: String,
//!     pub image: Option<String>,
//! }
//!
//! #[derive(Projection, Clone, Debug, Default)]
//! #[projection(of = PodStatus)]
//! pub struct PodViewStatus {
//!     pub phase: Option<String>,
//!     pub pod_ip: Option<String>,        // reads status.podIP
//! }
//!
//! let json = r#"{"apiVersion":"v1","kind":"Pod",
//!     "metadata":{"name":"web-0","namespace":"default","uid":"u1","resourceVersion":"7",
//!                 "annotations":{"a":"b"},"creationTimestamp":"2026-01-01T00:00:00Z"},
//!     "spec":{"nodeName":"n1","containers":[{"name":"app","image":"nginx","args":["-g"]}],
//!             "volumes":[{"name":"v","emptyDir":{}}]},
//!     "status":{"phase":"Running","podIP":"10.0.0.7","conditions":[]}}"#;
//! let pod: PodView = serde_json::from_str(json).unwrap();
//! assert_eq!(pod.metadata.name.as_deref(), Some("web-0"));
//! assert_eq!(pod.metadata.annotations, None);          // slim metadata leaves them out
//! let spec = pod.spec.unwrap();
//! assert_eq!(spec.node_name.as_deref(), Some("n1"));
//! assert_eq!(spec.containers[0].image.as_deref(), Some("nginx"));
//! assert_eq!(pod.status.unwrap().pod_ip.as_deref(), Some("10.0.0.7"));
//! ```
//!
//! `PodView` is then cached and listed like any resource: `factory.informer::<PodView>()`
//! is a `SharedIndexInformer<PodView>` listing and watching Pods, `Lister<PodView>`
//! reads it, `#[derive(Informable)]` beside it gives it typed indexes, and a
//! [`Controller`](crate::controller::Controller) takes it as its primary, owned or
//! watched type (`owns::<PodView>()` maps owners as for `Pod`).
//!
//! # The derive
//! The struct with a `metadata` field is the resource: it names the original with
//! `of = Pod` (a `kube::Resource` whose group, version, kind, plural and scope it takes).
//! Its `metadata` is an `ObjectMeta` (slim or full: see the attributes), and the struct
//! a `kube::Resource`; or a [`CompactMeta`] (any type but `ObjectMeta`: the type
//! decodes what it holds), and the struct an [`Object`](crate::object::Object) listed
//! and watched as the original, which every informer, lister and index takes, though
//! not a controller's primary nor `Api<T>` (see [`CompactMeta`]).
//! Every other struct of the projection is a part of one: `of = PodSpec` names the
//! type it projects. Each field reads exactly one JSON key: the one the original's own
//! `Deserialize` reads it from (`node_name` reads `nodeName`, `pod_ip` reads `podIP`,
//! as k8s-openapi and serde's `rename_all = "camelCase"` name them), so no serde
//! attribute is needed; look-alike keys (`nodeName_`, `NodeName`, `node_name`) are
//! skipped, as the full type skips them. See [Decoding](#decoding).
//!
//! A field's type is the original's, a [`derive@Projection`] of it, or either inside
//! the same `Option`, `Vec` or `BTreeMap<String, _>` as in the original; a field
//! that the original always has may still be an `Option`. Any of these may be held in
//! a [`Shared`], stored once for every object with an equal value. Where the original may
//! lack a field (an `Option` there), the projection has an `Option` too.
//!
//! A misspelt field, or one of another type than the original's, is a compile
//! error at the projection's field: the derive writes a function that is never called
//! and reads each field's path on the original type (k8s-openapi types and CRDs'
//! Rust types alike), so rustc's own error points there, with its suggestion:
//!
//! ```compile_fail
//! # use informer::projection::Projection;
//! # use k8s_openapi::api::core::v1::PodSpec;
//! #[derive(Projection)]
//! #[projection(of = PodSpec)]
//! struct Spec {
//!     nod_name: Option<String>, // error[E0609]: no field `nod_name` on type `&PodSpec`
//! }
//! ```
//!
//! | Attribute | Meaning |
//! |-----------|---------|
//! | `of = Type` (on the struct) | the type this struct projects (required) |
//! | `metadata = "slim"` (default) \| `"full"` | for `metadata: ObjectMeta`, the resource's metadata: slim keeps `name`, `namespace`, `uid`, `resourceVersion`, `generation`, `labels`, `ownerReferences`, `deletionTimestamp`, `finalizers`; full keeps all but `managedFields` |
//! | `annotations` | slim metadata keeps `annotations` too |
//! | `nested` | the struct is a part, though it has a `metadata` field (a Pod template's) |
//! | `crate = path` | where this crate is, when not `::informer` |
//! | `#[projection(rename = "json")]` (on a field) | the field's JSON key, when the original's key for it is not its Rust name (a CRD field renamed by serde, k8s-openapi's `$ref`); it must be a key the original reads |
//!
//! # Decoding
//! The derive writes the `Deserialize` impl itself: each key of the JSON is compared
//! exactly with the one key of each projected field (no allocation), and every value
//! no field wants is skipped by the parser without being built, in list pages, watch
//! events, streaming lists and relists alike. What the original reads is learnt from
//! the original's own `Deserialize`, once per projection, on its first decode (it is
//! asked with made-up objects; nothing is allocated for a k8s-openapi type):
//!
//! - **the key**: among the keys the original's `Deserialize` names, the field's
//!   `rename`, else serde's camelCase of the Rust name, else the one key that is the
//!   Rust name written another way (ignoring case, `_` and `-`: `podIP`, `hostIPs`,
//!   `x-kubernetes-preserve-unknown-fields`). A field the original has no key for (a
//!   serde rename the derive cannot see) makes every decode the error saying so;
//! - **`null`**: where the original reads an `Option` (an `Option` field, and every
//!   field of k8s-openapi's, required ones included), `None`, or the default of a
//!   field that is not an `Option`; elsewhere the projected type reads the `null`, and
//!   refuses it as the original's type does (`invalid type: null, expected a string`);
//! - **a missing key**: the default (or `None`) where the original has one, else the
//!   error `missing field`, as serde's derive has it for a field without `default`;
//! - **a repeated key**: the error `duplicate field` where the original has it
//!   (serde's derive), else the last one wins (k8s-openapi);
//! - **unknown keys**: the error `unknown field` where the original refuses them
//!   (`deny_unknown_fields`).
//!
//! So the decoded values of projected fields are exactly those of the full type, and
//! an object the full type refuses for a value the projection reads is the same error
//! (in the original's words: `expected struct WidgetSpec`): the reflector reports the
//! object and skips it, as ever. What the projection does not read it does not look
//! at: an object the full type refuses only for such a value (another type, nesting
//! deeper than serde_json's limit, a required field missing) is read.
//!
//! # Writes stay whole
//! A projection has no `Serialize` (the derive writes none, and a projection must not
//! derive one): `Api<PodView>::replace` or `create` does not compile, so the half
//! object can never overwrite the whole. Write through the full type, with a patch or
//! server-side apply, which leave the fields you did not read as they are:
//! `ctx.api::<Pod>().patch(..)`, conditional on the projection's `resourceVersion`
//! with `ctx.api::<Pod>().if_unchanged(&view)` ([`ProjectionOf`] lets a projection
//! stand for its original there).
//!
//! # What a projection cannot do
//! - hold a field it does not name: read another field and you must add it (and the
//!   informer relists nothing by itself: a new field shows from the next decode on,
//!   i.e. after a restart);
//! - be written back or serialized (see above);
//! - share a cache with the full type: two projections of `Pod`, or a projection and
//!   the full `Pod`, are two informers, each with its own list, watch and cache, so
//!   the API server sends every Pod to each; share one projection of the union of the
//!   fields instead when several controllers read Pods;
//! - read a field a CRD renamed in serde without `#[projection(rename = "...")]`
//!   (every decode is then an error naming the field and the original's keys), or the
//!   keys of a serde `alias`, or the value of a `#[serde(default = "function")]`
//!   (it reads `Default::default()`); an original whose `Deserialize` names no keys
//!   (`#[serde(flatten)]`) is read by the camelCase names (or renames), unchecked.
//!
//! [`derive@Projection`]: macro@Projection

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

pub use informer_derive::Projection;

/// `Self` holds a projection of a value of type `O`: `O` itself, or a
/// [`derive@Projection`] of it (the derive implements this trait).
///
/// The derive's compile-time check asks it of every projected field, and
/// [`TrackedApi::if_unchanged`](crate::controller::TrackedApi::if_unchanged) of the
/// object it is given, so that a write to `Pod` can be conditional on the
/// `resourceVersion` and `uid` of a `PodView` read from the cache.
///
/// [`derive@Projection`]: macro@Projection
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold a projected value of type `{O}`",
    label = "the original has `{O}` here",
    note = "a projected field has the original's type, a `#[derive(Projection)]` struct with \
            `#[projection(of = ...)]` naming it, or either in the same `Option`, `Vec` or \
            `BTreeMap<String, _>`; where the original has an `Option`, the projection needs one too"
)]
pub trait ProjectionOf<O: ?Sized> {}

impl<T: ?Sized> ProjectionOf<T> for T {}

/// A projection of `ObjectMeta`: what a projection's `metadata` field may hold.
impl ProjectionOf<ObjectMeta> for CompactMeta {}

#[doc(hidden)]
#[path = "derive_support.rs"]
pub mod __private;
mod probe;
mod rules;

pub use crate::compact_meta::CompactMeta;
pub use crate::shared::{Shared, SharedSize, shared_size};

#[cfg(test)]
mod tests;
