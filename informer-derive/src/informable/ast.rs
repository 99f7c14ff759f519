//! What the attributes say, as parsed: the input of validation.
//!
//! Parsing keeps every well-formed part and records the malformed ones in the
//! [`Ctxt`](crate::ctxt::Ctxt), so that validation can look for more mistakes.

use proc_macro2::Span;
use syn::{Generics, Ident, LitStr, Path, Type, Visibility};

/// The annotated struct and its attributes.
pub(crate) struct Container<'a> {
    /// The struct's name.
    pub(crate) ident: &'a Ident,
    /// The struct's visibility, given to the generated items.
    pub(crate) vis: &'a Visibility,
    /// Its generic parameters (not supported).
    pub(crate) generics: &'a Generics,
    /// Its named fields (none for a tuple or unit struct).
    pub(crate) fields: Vec<Field<'a>>,
    /// `#[informable(...)]`.
    pub(crate) attrs: Attrs,
    /// What `#[kube(...)]` (kube's `CustomResource` derive) says, if present.
    pub(crate) kube: Option<KubeAttrs>,
}

/// A named field of the annotated struct.
pub(crate) struct Field<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) ty: &'a Type,
    /// The JSON name (after serde's `rename` / `rename_all`).
    pub(crate) json: String,
}

impl Field<'_> {
    /// The Rust name without `r#`.
    pub(crate) fn rust_name(&self) -> String {
        let name = self.ident.to_string();
        name.strip_prefix("r#").map(str::to_owned).unwrap_or(name)
    }
}

/// Container-level settings of `#[informable(...)]`.
#[derive(Default)]
pub(crate) struct Attrs {
    /// `crate = path`: where the `informer` crate is.
    pub(crate) krate: Option<Path>,
    /// `kind = Type`: the resource type, when not the struct itself.
    pub(crate) kind: Option<Path>,
    /// `key = path::to::fn`: the key function.
    pub(crate) key: Option<Path>,
    /// `lister_trait = Name`: the name of the generated query trait.
    pub(crate) lister_trait: Option<Ident>,
    /// `foreign`: `kind` is a type of another crate; the struct only carries its indexes.
    pub(crate) foreign: Option<Span>,
    /// `index(...)`, in order.
    pub(crate) indexes: Vec<IndexAttr>,
}

/// One `index(...)`.
pub(crate) struct IndexAttr {
    /// The span of the whole `index(...)`.
    pub(crate) span: Span,
    /// `name = "by_node"`.
    pub(crate) name: Option<LitStr>,
    /// `path = ...`, `fn = ...`, `owner`: exactly one is valid.
    pub(crate) sources: Vec<Source>,
    /// `value = Type`: the key type, when it cannot be seen.
    pub(crate) value: Option<Type>,
    /// `format = "display"`.
    pub(crate) format: Option<(Format, Span)>,
    /// `marker = Name`: the name of the marker type.
    pub(crate) marker: Option<Ident>,
    /// Whether it has keys the parser did not know (already reported).
    pub(crate) unknown_keys: bool,
}

/// Where an index takes its keys from.
pub(crate) enum Source {
    /// `path = "spec.nodeName"`.
    Path(LitStr),
    /// `fn = path::to::func`.
    Fn(Path),
    /// `owner` or `owner(type = Owner, controller, name)`.
    Owner(Box<Owner>, Span),
}

impl Source {
    pub(crate) fn span(&self) -> Span {
        match self {
            Source::Path(lit) => lit.span(),
            Source::Fn(path) => syn::spanned::Spanned::span(path),
            Source::Owner(_, span) => *span,
        }
    }
}

/// `owner(...)` as written: which owners, and how they are keyed. Validation checks
/// that the owner is named by API group and kind (`type`, or `kind` with `group` or
/// `api_version`).
#[derive(Default)]
pub(crate) struct Owner {
    /// `type = CronJob`: the owner's Rust type, whose `kube::Resource` impl gives the
    /// group and kind.
    pub(crate) ty: Option<Type>,
    /// `kind = "CronJob"`.
    pub(crate) kind: Option<LitStr>,
    /// `group = "batch"` (`""` for the core group).
    pub(crate) group: Option<LitStr>,
    /// `api_version = "batch/v1"`: the group, with a version that does not matter.
    pub(crate) api_version: Option<LitStr>,
    /// `controller`: only the managing controller's reference.
    pub(crate) controller: bool,
    /// `name`: key by the owner's name instead of its UID.
    pub(crate) by_name: bool,
}

/// How a key value becomes the index's string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// The `IndexKey` trait (strings, integers, bool, char, your own types).
    Key,
    /// `Display`.
    Display,
    /// The serde (JSON) form: what the API server stores for an enum.
    Serde,
}

/// The parts of kube's `#[kube(...)]` that locate the generated resource type.
pub(crate) struct KubeAttrs {
    /// `group = "example.com"`.
    pub(crate) group: Option<LitStr>,
    /// `kind = "Widget"`.
    pub(crate) kind: Option<LitStr>,
    /// `root = "WidgetResource"`: the generated struct's name, when not the kind.
    pub(crate) root: Option<LitStr>,
    /// Whether `status = ...` is given (the generated struct then has a `status` field).
    pub(crate) status: bool,
}
