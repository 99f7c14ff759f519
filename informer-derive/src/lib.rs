//! The derives of the [`informer`](https://docs.rs/informer) crate, checked by the
//! compiler:
//!
//! - `#[derive(Informable)]` (module `informable`): typed keys and named, typed
//!   indexes for any Kubernetes resource struct;
//! - `#[derive(Projection)]` (module `projection`): a struct of the fields a
//!   controller reads, decoded straight from the wire and checked against the
//!   original type.
//!
//! Use them through the `informer` crate (`informer::informable::Informable` and
//! `informer::projection::Projection` are each the trait and the derive); its
//! `informable` and `projection` modules document what they generate, with examples.
//! Each derive has its own module (parse, check, expand); what both use sits here:
//! `ctxt` (the errors of one expansion), `attr` (the attribute parsers' shared
//! steps), `suggest` (did-you-mean hints).
//!
//! Every attribute mistake is reported at once, each with the span that caused it.
#![deny(missing_docs)]

mod attr;
mod ctxt;
mod informable;
mod projection;
mod suggest;

/// Implements `informer::informable::Informable` for a resource type, with a typed
/// index (a marker type implementing `informer::store::Index`) per
/// `index(...)`, and a query trait with one method per index for the resource's
/// `Lister` and `NamespaceLister`.
///
/// On a CRD spec struct (beside kube's `#[derive(CustomResource)]`) the resource type
/// is the generated one (`Widget` for `WidgetSpec`, read from `#[kube(kind = ...)]`);
/// on any other struct it is the struct itself, which must implement `kube::Resource`.
///
/// With `foreign`, the resource type `kind` is another crate's (a k8s-openapi
/// `ConfigMap`) and gets no `Informable`, which the orphan rule forbids: the marker
/// types and the query trait are generated as usual, and the annotated struct becomes
/// the set of indexes (`informer::informable::IndexSet<Kind>`, with `INDEX_NAMES`,
/// `indexers()` and `add_to(&indexer)` as inherent items too).
///
/// ```text
/// #[informable(
///     kind = Widget,                   // the resource type, when it cannot be found
///     key = path::to::key_fn,          // fn(&K) -> ObjectKey; default namespace/name
///     crate = path::to::informer,      // default ::informer
///     lister_trait = WidgetIndexes,    // the query trait's name; default {Kind}Indexes
///     foreign,                         // `kind` is another crate's type: the struct holds
///                                      // the indexes; the query trait is {Struct}Ext
///
///     // By field path (JSON or Rust field names; Option, Vec and sets are looked into):
///     index(name = "by_color", path = "spec.color"),
///     index(name = "by_app", path = "metadata.labels['app']"),
///     // Key types other than String: seen from the field, or given with `value`;
///     // `format` picks the string form: "key" (IndexKey, default), "display", "serde".
///     index(name = "by_phase", path = "status.phase", value = Phase, format = "serde"),
///     // By function: fn(&K) -> String, Option<..>, Vec<..>, ... of keys:
///     index(name = "by_team", fn = crate::team_of),
///     // By owner reference (UID by default, or the owner's name). The owner is named by
///     // API group and kind, never kind alone (a kind is unique only in its group: the
///     // built-in batch/v1 CronJob is not yours): its Rust type, in scope here...
///     index(name = "by_parent", owner(type = Widget, controller, name), marker = ByParent),
///     // ...or its kind and group (`group = ""`: core), or apiVersion (any version matches):
///     index(name = "by_cron_job", owner(kind = "CronJob", group = "batch", controller)),
///     index(name = "by_schedule", owner(kind = "Schedule", api_version = "example.com/v1")),
///     // Any owner, by UID:
///     index(name = "by_owner", owner),
/// )]
/// ```
///
/// See the `informer::informable` module documentation for the full story.
#[proc_macro_derive(Informable, attributes(informable))]
pub fn derive_informable(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    informable::derive(input.into()).into()
}

/// Makes a struct of the fields a controller reads a projection of a resource type:
/// `kube::Resource` of the original's group, version, kind, plural and scope (the
/// struct with `metadata`), or a part of one (`#[projection(of = PodSpec)]`), with a
/// `Deserialize` impl that reads each field from the one JSON key the original's
/// `Deserialize` reads it from, as the original reads it (`null`, missing and repeated
/// keys alike), skips every field it does not name without building it, and a
/// compile-time check of every field's name and type against the original.
///
/// ```text
/// #[projection(
///     of = Pod,               // the type projected (required)
///     metadata = "slim",      // or "full": the resource's metadata (default slim)
///     annotations,            // slim metadata keeps annotations too
///     nested,                 // a part, though it has a `metadata` field
///     crate = path::to::informer,
/// )]
/// // on a field, its JSON key when the original's is not its Rust name (a field
/// // renamed with `#[serde(rename)]`, k8s-openapi's `$ref`):
/// #[projection(rename = "colour")]
/// ```
///
/// The generated code names `::kube` and `::k8s_openapi`: the crate using the derive
/// depends on both (it names a k8s-openapi type or a kube `CustomResource` anyway).
///
/// See the `informer::projection` module documentation for the full story.
#[proc_macro_derive(Projection, attributes(projection))]
pub fn derive_projection(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    projection::derive(input.into()).into()
}
