//! Checks the parsed attributes and resolves them into a [`Model`] ready to expand:
//! the resource type, each index's key source, key type and generated names.
//!
//! Every mistake is recorded in the [`Ctxt`] with the span that caused it, and
//! validation goes on with the next index, so all of them are reported at once.

use std::collections::HashMap;

use proc_macro2::Span;
use quote::format_ident;
use syn::{GenericArgument, Ident, LitStr, Path, PathArguments, Type, Visibility, parse_quote};

use crate::ctxt::Ctxt;
use crate::informable::ast::{Container, Field, Format, IndexAttr, Source};
use crate::informable::path::{self, Segment};
use crate::suggest;

mod owner;
mod resolve;

pub(crate) use owner::{OwnerKeys, OwnerOf};
use resolve::Resolver;

/// Everything expansion needs.
pub(crate) struct Model {
    /// The path of the `informer` crate.
    pub(crate) krate: Path,
    /// The resource type the trait is implemented for.
    pub(crate) kind: Path,
    /// A doc link to the resource type: ``[`Widget`](path::to::Widget)``.
    pub(crate) kind_link: String,
    /// Given to the generated marker types and trait.
    pub(crate) vis: Visibility,
    /// A custom key function.
    pub(crate) key: Option<Path>,
    /// The generated query trait.
    pub(crate) lister_trait: Ident,
    /// With `foreign`: the annotated struct, which carries the index set (inherent
    /// items and `IndexSet<Kind>`); the resource type, from another crate, gets no
    /// `Informable`. `None`: the resource type gets `Informable`.
    pub(crate) index_set: Option<Ident>,
    /// The indexes, in declaration order.
    pub(crate) indexes: Vec<Index>,
}

/// One resolved index.
pub(crate) struct Index {
    /// The index name in the store (`by_node`).
    pub(crate) name: LitStr,
    /// The generated query method (`by_node`).
    pub(crate) method: Ident,
    /// The generated marker type (`ByNode`).
    pub(crate) marker: Ident,
    /// The key type queries take.
    pub(crate) value: Type,
    /// How a key becomes the index's string.
    pub(crate) format: Format,
    /// Where the keys come from.
    pub(crate) keys: Keys,
    /// Blamed for type errors in the generated code (the path literal, the function...).
    pub(crate) span: Span,
    /// What is indexed, for the generated docs.
    pub(crate) describe: String,
    /// The label this index holds the value of (`metadata.labels['app']`), if any.
    pub(crate) label: Option<String>,
}

/// Where an index's keys come from.
pub(crate) enum Keys {
    /// A field path.
    Path {
        /// Where the path starts.
        root: Root,
        /// The steps from there.
        steps: Vec<Step>,
    },
    /// A user function `fn(&K) -> impl keys`.
    Fn(Path),
    /// The owner references.
    Owner(OwnerKeys),
}

/// Where a field path starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Root {
    /// The object.
    Object,
    /// Its `ObjectMeta`, through `kube::Resource::meta`.
    Meta,
}

/// One step of a resolved path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// A field access.
    Field(Ident),
    /// A map lookup.
    Key(String),
}

/// Names an index cannot have: the generated method would be shadowed by (or clash
/// with) a method `Lister` or `NamespaceLister` already has.
const RESERVED: &[&str] = &[
    "namespace",
    "new",
    "list",
    "list_all",
    "get",
    "namespaced",
    "indexer",
    "by_index",
    "index_keys",
    "index_values",
    "clone",
    "fmt",
];

/// How `metadata.<field>` can be indexed.
enum MetaKind {
    /// A string.
    Str,
    /// Several strings.
    Strs,
    /// An `i64`.
    Int,
    /// A map of strings, indexed by one key.
    Map,
    /// Not indexable, with advice.
    No(&'static str),
}

/// `(JSON name, Rust name, kind)` of the `ObjectMeta` fields.
const META_FIELDS: &[(&str, &str, MetaKind)] = &[
    ("name", "name", MetaKind::Str),
    ("namespace", "namespace", MetaKind::Str),
    ("generateName", "generate_name", MetaKind::Str),
    ("uid", "uid", MetaKind::Str),
    ("resourceVersion", "resource_version", MetaKind::Str),
    ("generation", "generation", MetaKind::Int),
    ("labels", "labels", MetaKind::Map),
    ("annotations", "annotations", MetaKind::Map),
    ("finalizers", "finalizers", MetaKind::Strs),
    (
        "ownerReferences",
        "owner_references",
        MetaKind::No("index owner references with `owner` instead of a path"),
    ),
    (
        "creationTimestamp",
        "creation_timestamp",
        MetaKind::No("timestamps are not index keys"),
    ),
    (
        "deletionTimestamp",
        "deletion_timestamp",
        MetaKind::No("timestamps are not index keys"),
    ),
    (
        "managedFields",
        "managed_fields",
        MetaKind::No("managed fields are not index keys"),
    ),
];

/// How the resource type relates to the annotated struct.
enum Mode {
    /// The struct is the resource.
    Resource,
    /// The struct is the `spec` of the resource (a CRD spec). `Some(status)` when kube's
    /// attributes tell the resource's fields exactly (`metadata`, `spec`, and `status`
    /// when declared); `None` when only `kind = ...` was given.
    Spec(Option<bool>),
    /// `foreign`: the resource is a type of another crate, whose fields the derive
    /// cannot see; paths below `metadata` are left to the compiler.
    Foreign,
}

/// Validates `container` into a model; `None` only when no model can be made at all.
pub(crate) fn model(cx: &Ctxt, container: &Container<'_>) -> Option<Model> {
    if !container.generics.params.is_empty() {
        cx.error_spanned(
            container.generics,
            "#[derive(Informable)] does not support generic types",
        );
    }
    let attrs = &container.attrs;
    let (kind, mode) = kind(cx, container)?;
    let foreign = matches!(mode, Mode::Foreign);
    let kind_name = kind
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();
    if foreign {
        check_foreign(cx, container);
    }
    // A foreign set's trait is named after its struct, so it never takes the struct's
    // name (`ConfigMapIndexes` is the natural name of both), and two sets of one kind
    // do not clash.
    let lister_trait = attrs.lister_trait.clone().unwrap_or_else(|| {
        if foreign {
            format_ident!("{}Ext", container.ident)
        } else {
            format_ident!("{}Indexes", kind_name)
        }
    });
    if lister_trait == *container.ident {
        match (&attrs.lister_trait, &attrs.kind) {
            (Some(_), _) => cx.error(
                lister_trait.span(),
                format!(
                    "`lister_trait` names the generated query trait, and `{lister_trait}` is \
                     already this struct's name: pick another"
                ),
            ),
            // The struct is named for the indexes of `kind`: most likely a type of
            // another crate, declared without `foreign`.
            (None, Some(kind)) if container.kube.is_none() => cx.error_spanned(
                kind,
                format!(
                    "the query trait would be named `{lister_trait}`, like this struct; if \
                     `{kind_name}` is a type of another crate (a k8s-openapi type), add \
                     `foreign` to declare its indexes on this struct, else name the trait \
                     with `lister_trait = ...`"
                ),
            ),
            (None, _) => cx.error(
                container.ident.span(),
                format!(
                    "the query trait would be named `{lister_trait}`, like this struct: name \
                     it with `lister_trait = ...`"
                ),
            ),
        }
    }
    let resolver = Resolver {
        cx,
        container,
        mode,
    };
    let mut names: HashMap<String, Span> = HashMap::new();
    let mut markers: HashMap<String, Span> = HashMap::new();
    let mut indexes = Vec::new();
    for attr in &attrs.indexes {
        if let Some(name) = &attr.name
            && names.insert(name.value(), name.span()).is_some()
        {
            cx.error(
                name.span(),
                format!(
                    "duplicate index name `{}`: each index needs its own name",
                    name.value()
                ),
            );
            continue;
        }
        let Some(index) = resolver.index(attr) else {
            continue;
        };
        let marker = index.marker.to_string();
        if markers
            .insert(marker.clone(), index.marker.span())
            .is_some()
        {
            cx.error(
                index.marker.span(),
                format!("two indexes would have the marker type `{marker}`; rename one with `marker = ...`"),
            );
            continue;
        }
        indexes.push(index);
    }
    let kind_link = format!(
        "[`{kind_name}`]({})",
        quote::ToTokens::to_token_stream(&kind)
            .to_string()
            .replace(' ', "")
    );
    Some(Model {
        krate: attrs
            .krate
            .clone()
            .unwrap_or_else(|| parse_quote!(::informer)),
        kind,
        kind_link,
        vis: container.vis.clone(),
        key: attrs.key.clone(),
        lister_trait,
        index_set: foreign.then(|| container.ident.clone()),
        indexes,
    })
}

/// What `foreign` rules out: a key function (it lives in `impl Informable`, which the
/// orphan rule forbids for another crate's type) and an empty set.
fn check_foreign(cx: &Ctxt, container: &Container<'_>) {
    let attrs = &container.attrs;
    if let Some(key) = &attrs.key {
        cx.error_spanned(
            key,
            "`key` cannot go with `foreign`: a key function belongs to `impl Informable`, \
             which only the crate of the resource type can write; give it to the informer \
             (`InformerConfig::key_fn`) instead",
        );
    }
    if attrs.indexes.is_empty()
        && let Some(span) = attrs.foreign
    {
        cx.error(
            span,
            "`foreign` declares indexes of another crate's type, but there is no \
             `index(...)`: add one, e.g. `index(name = \"by_app\", path = \"metadata.labels['app']\")`",
        );
    }
}

/// The resource type and how the struct relates to it.
fn kind(cx: &Ctxt, container: &Container<'_>) -> Option<(Path, Mode)> {
    let own: Path = container.ident.clone().into();
    if let Some(span) = container.attrs.foreign {
        return Some(foreign_kind(cx, container, span));
    }
    if let Some(kind) = &container.attrs.kind {
        if kind.is_ident(container.ident) {
            return Some((kind.clone(), Mode::Resource));
        }
        // A struct without fields and without kube's attributes is no resource's spec:
        // most likely indexes of another crate's type declared without `foreign`,
        // which would end in rustc's orphan-rule error. Said here instead, and the
        // indexes checked as `foreign` ones.
        if container.kube.is_none() && container.fields.is_empty() {
            let kind_name = kind
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            cx.error_spanned(
                kind,
                format!(
                    "`{}` has no fields, so it is not the spec of `{kind_name}`: if `{kind_name}` \
                     is a type of another crate (a k8s-openapi type), add `foreign` to declare \
                     its indexes on this struct (`#[informable(kind = {kind_name}, foreign, ...)]`)",
                    container.ident
                ),
            );
            return Some((kind.clone(), Mode::Foreign));
        }
        let status = container.kube.as_ref().map(|kube| kube.status);
        return Some((kind.clone(), Mode::Spec(status)));
    }
    let Some(kube) = &container.kube else {
        return Some((own, Mode::Resource));
    };
    let Some(name) = kube.root.as_ref().or(kube.kind.as_ref()) else {
        cx.error(
            container.ident.span(),
            "cannot tell the resource type: #[kube(...)] has no `kind`; \
             name it with #[informable(kind = ...)]",
        );
        return None;
    };
    match syn::parse_str::<Ident>(&name.value()) {
        Ok(ident) => Some((
            Ident::new(&ident.to_string(), Span::call_site()).into(),
            Mode::Spec(Some(kube.status)),
        )),
        Err(_) => {
            cx.error(name.span(), "not a valid type name");
            None
        }
    }
}

/// The resource type of a `foreign` set. After a mistake, a stand-in, so that the
/// indexes are still checked.
fn foreign_kind(cx: &Ctxt, container: &Container<'_>, span: Span) -> (Path, Mode) {
    let own: Path = container.ident.clone().into();
    let Some(kind) = &container.attrs.kind else {
        cx.error(
            span,
            "`foreign` declares indexes of a resource type of another crate: name the type \
             with `kind = ...`, e.g. `kind = ConfigMap`",
        );
        return (own, Mode::Foreign);
    };
    if kind.is_ident(container.ident) {
        cx.error(
            span,
            format!(
                "`foreign` is for a resource type of another crate, and `kind` is this \
                 struct `{}`: remove `foreign`",
                container.ident
            ),
        );
        return (own, Mode::Resource);
    }
    if container.kube.is_some() {
        cx.error(
            span,
            "`foreign` is for a resource type of another crate, and a CRD's resource \
             type is generated in this crate by `#[derive(CustomResource)]`: remove `foreign`",
        );
    }
    (kind.clone(), Mode::Foreign)
}
