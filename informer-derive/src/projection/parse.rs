//! `#[derive(Projection)]`'s input -> [`Projection`], the plain description the
//! expansion works from; every mistake recorded in the [`Ctxt`] with its span.
//!
//! ```text
//! #[projection(
//!     of = Pod,                 // the type projected (required)
//!     metadata = "slim",        // or "full" (resources only; default slim)
//!     annotations,              // slim metadata keeps annotations too
//!     nested,                   // a part, though it has a `metadata` field
//!     crate = path::to::informer,
//! )]
//! struct PodView {
//!     metadata: ObjectMeta,
//!     #[projection(rename = "nodeName")] // the JSON name, when not the camelCase one
//!     node_name: Option<String>,
//! }
//! ```

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{
    Attribute, Data, DeriveInput, Fields, GenericArgument, Ident, LitStr, Path, PathArguments, Type,
};

use crate::ctxt::Ctxt;
use crate::parse::{meta_key, set_once, skip_value, unknown_key};
use crate::suggest;

const CONTAINER_KEYS: &[&str] = &["of", "metadata", "annotations", "nested", "crate"];
const FIELD_KEYS: &[&str] = &["rename"];

/// The annotated struct, as the expansion needs it.
pub(crate) struct Projection<'a> {
    pub(crate) ident: &'a Ident,
    /// The path of the `informer` crate.
    pub(crate) krate: Path,
    /// `of = ...`: the type projected.
    pub(crate) original: Type,
    /// A resource (with its metadata) or a part of one.
    pub(crate) role: Role,
    pub(crate) fields: Vec<ProjectedField<'a>>,
}

/// What the struct is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The resource: `kube::Resource` of the original's kind, its metadata decoded so.
    Resource(Metadata),
    /// A part of a resource (its spec, a container...).
    Part,
}

/// Which metadata a resource keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Metadata {
    /// The slim keys; annotations too when `true`.
    Slim { annotations: bool },
    /// All of `ObjectMeta` but `managedFields`.
    Full,
}

/// One named field.
pub(crate) struct ProjectedField<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) ty: &'a Type,
    /// How its JSON key is found.
    pub(crate) key: JsonKey,
    /// Its type seen through `Option`, `Vec` and maps, for the compile-time check.
    pub(crate) shape: Shape<'a>,
}

/// How a field's JSON key is found.
pub(crate) enum JsonKey {
    /// By the Rust name: the key lower-cased and without `_` and `-` must equal this
    /// (the Rust name lower-cased without `_`), so `podIP` is found for `pod_ip`.
    Canonical(String),
    /// `rename = "..."`: exactly this key.
    Exact(String),
}

impl JsonKey {
    /// The JSON name as the field list shows it (for messages only).
    pub(crate) fn display(&self, ident: &Ident) -> String {
        match self {
            JsonKey::Exact(name) => name.clone(),
            JsonKey::Canonical(_) => {
                let rust = ident.to_string();
                let rust = rust.strip_prefix("r#").unwrap_or(&rust);
                suggest::rename_field("camelCase", rust.trim_end_matches('_'))
                    .unwrap_or_else(|| rust.to_owned())
            }
        }
    }
}

/// A field's type as the check walks it.
pub(crate) enum Shape<'a> {
    /// `Option<T>`.
    Option(Box<Shape<'a>>),
    /// `Vec<T>`.
    Vec(Box<Shape<'a>>),
    /// `BTreeMap<String, T>` (or `HashMap`).
    Map(Box<Shape<'a>>),
    /// Any other type: the original's, or a projection of it.
    Leaf(&'a Type),
}

impl Shape<'_> {
    pub(crate) fn is_option(&self) -> bool {
        matches!(self, Shape::Option(_))
    }
}

/// Parses the derive input; `None` when nothing can be made of it (the errors are
/// recorded).
pub(crate) fn projection<'a>(cx: &Ctxt, input: &'a DeriveInput) -> Option<Projection<'a>> {
    let data = match &input.data {
        Data::Struct(data) => data,
        Data::Enum(data) => {
            cx.error(
                data.enum_token.span,
                "#[derive(Projection)] is for structs: a projection is a struct of the fields you read",
            );
            return None;
        }
        Data::Union(data) => {
            cx.error(
                data.union_token.span,
                "#[derive(Projection)] is for structs: a projection is a struct of the fields you read",
            );
            return None;
        }
    };
    if !input.generics.params.is_empty() {
        cx.error_spanned(
            &input.generics,
            "#[derive(Projection)] does not support generic types",
        );
    }
    let named = match &data.fields {
        Fields::Named(named) => named,
        _ => {
            cx.error(
                input.ident.span(),
                "a projection has named fields, as the original has: `struct PodView { metadata: ObjectMeta, ... }`",
            );
            return None;
        }
    };
    let settings = settings(cx, &input.attrs);
    let fields: Vec<ProjectedField<'_>> = named
        .named
        .iter()
        .filter_map(|field| {
            let ident = field.ident.as_ref()?;
            Some(ProjectedField {
                ident,
                ty: &field.ty,
                key: field_key(cx, ident, &field.attrs),
                shape: shape(&field.ty),
            })
        })
        .collect();
    let has_metadata = fields.iter().any(|f| f.ident == "metadata");
    let role = if has_metadata && settings.nested.is_none() {
        Role::Resource(match settings.metadata {
            Some(Metadata::Full) => Metadata::Full,
            _ => Metadata::Slim {
                annotations: settings.annotations.is_some(),
            },
        })
    } else {
        if let Some(span) = settings.metadata_span {
            cx.error(
                span,
                "`metadata` chooses a resource's metadata, and this struct is a part of one \
                 (no `metadata` field, or `nested`): remove it",
            );
        }
        Role::Part
    };
    if let (Some(span), Some(Metadata::Full)) = (settings.annotations, settings.metadata) {
        cx.error(
            span,
            "`annotations` adds annotations to slim metadata; full metadata has them already: remove it",
        );
    }
    let Some(original) = settings.of else {
        cx.error(
            input.ident.span(),
            "name the type this struct projects: `#[projection(of = Pod)]` \
             (a part names its own type: `#[projection(of = PodSpec)]`)",
        );
        return None;
    };
    Some(Projection {
        ident: &input.ident,
        krate: settings
            .krate
            .unwrap_or_else(|| syn::parse_quote!(::informer)),
        original,
        role,
        fields,
    })
}

/// The container's `#[projection(...)]`, merged.
#[derive(Default)]
struct Settings {
    of: Option<Type>,
    metadata: Option<Metadata>,
    metadata_span: Option<Span>,
    annotations: Option<Span>,
    nested: Option<Span>,
    krate: Option<Path>,
}

fn settings(cx: &Ctxt, attributes: &[Attribute]) -> Settings {
    let mut settings = Settings::default();
    for attr in attributes
        .iter()
        .filter(|a| a.path().is_ident("projection"))
    {
        let result = attr.parse_nested_meta(|meta| {
            let key = meta_key(&meta);
            match key.as_str() {
                "of" => {
                    let ty: Type = meta.value()?.parse()?;
                    set_once(cx, &meta, &mut settings.of, ty);
                }
                "metadata" => {
                    let lit: LitStr = meta.value()?.parse()?;
                    let metadata = match lit.value().as_str() {
                        "slim" => Some(Metadata::Slim { annotations: false }),
                        "full" => Some(Metadata::Full),
                        other => {
                            cx.error(
                                lit.span(),
                                format!("unknown metadata `{other}`{}", {
                                    let hint = suggest::hint(other, ["slim", "full"]);
                                    if hint.is_empty() {
                                        "; expected `slim` or `full`".to_owned()
                                    } else {
                                        hint
                                    }
                                }),
                            );
                            None
                        }
                    };
                    settings.metadata_span = Some(lit.span());
                    if let Some(metadata) = metadata {
                        set_once(cx, &meta, &mut settings.metadata, metadata);
                    }
                }
                "annotations" => flag(cx, &meta, &mut settings.annotations)?,
                "nested" => flag(cx, &meta, &mut settings.nested)?,
                "crate" => {
                    let path: Path = meta.value()?.parse()?;
                    set_once(cx, &meta, &mut settings.krate, path);
                }
                _ => {
                    unknown_key(cx, &meta, &key, "#[projection(...)]", CONTAINER_KEYS);
                    skip_value(&meta)?;
                }
            }
            Ok(())
        });
        if let Err(error) = result {
            cx.syn_error(error);
        }
    }
    settings
}

/// A field's JSON key: its `rename`, or its Rust name found case-insensitively.
/// serde's attributes are refused: the derive writes `Deserialize` and reads none.
fn field_key(cx: &Ctxt, ident: &Ident, attributes: &[Attribute]) -> JsonKey {
    let mut rename: Option<LitStr> = None;
    for attr in attributes {
        if attr.path().is_ident("serde") {
            cx.error_spanned(
                attr,
                "#[derive(Projection)] decodes the fields itself and reads no serde attribute: \
                 name a JSON key with `#[projection(rename = \"...\")]`",
            );
            continue;
        }
        if !attr.path().is_ident("projection") {
            continue;
        }
        let result = attr.parse_nested_meta(|meta| {
            let key = meta_key(&meta);
            if key == "rename" {
                let lit: LitStr = meta.value()?.parse()?;
                set_once(cx, &meta, &mut rename, lit);
            } else {
                unknown_key(cx, &meta, &key, "a field's #[projection(...)]", FIELD_KEYS);
                skip_value(&meta)?;
            }
            Ok(())
        });
        if let Err(error) = result {
            cx.syn_error(error);
        }
    }
    match rename {
        Some(name) => JsonKey::Exact(name.value()),
        None => {
            let rust = ident.to_string();
            let rust = rust.strip_prefix("r#").unwrap_or(&rust);
            JsonKey::Canonical(rust.replace('_', "").to_ascii_lowercase())
        }
    }
}

/// `ty` seen through `Option`, `Vec` and `BTreeMap<String, _>` / `HashMap<String, _>`.
fn shape(ty: &Type) -> Shape<'_> {
    let Type::Path(path) = ty else {
        return Shape::Leaf(ty);
    };
    let Some(last) = path.path.segments.last().filter(|_| path.qself.is_none()) else {
        return Shape::Leaf(ty);
    };
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return Shape::Leaf(ty);
    };
    let types: Vec<&Type> = args
        .args
        .iter()
        .filter_map(|arg| match arg {
            GenericArgument::Type(ty) => Some(ty),
            _ => None,
        })
        .collect();
    match (last.ident.to_string().as_str(), types.as_slice()) {
        ("Option", [inner]) => Shape::Option(Box::new(shape(inner))),
        ("Vec", [inner]) => Shape::Vec(Box::new(shape(inner))),
        ("BTreeMap" | "HashMap", [_, value]) => Shape::Map(Box::new(shape(value))),
        _ => Shape::Leaf(ty),
    }
}

/// A flag (`annotations`, `nested`): no value.
fn flag(cx: &Ctxt, meta: &ParseNestedMeta<'_>, slot: &mut Option<Span>) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) || meta.input.peek(syn::token::Paren) {
        cx.error_spanned(
            &meta.path,
            format!("`{}` takes no value: write it alone", meta_key(meta)),
        );
        skip_value(meta)?;
    }
    set_once(cx, meta, slot, meta.path.span());
    Ok(())
}
