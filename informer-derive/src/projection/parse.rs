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
//!     #[projection(rename = "colour")] // the JSON key, when the original's is not
//!     color: Option<String>,            // the Rust name (a serde rename)
//! }
//! ```

use proc_macro2::Span;
use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{
    Attribute, Data, DeriveInput, Fields, GenericArgument, Ident, LitStr, Path, PathArguments, Type,
};

use crate::attr::{meta_key, set_once, skip_value, unknown_key};
use crate::ctxt::Ctxt;
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
    /// A metadata type of its own (not `ObjectMeta`: `CompactMeta`), which decodes
    /// what it holds; the resource is an `Object` listed as the original.
    Own,
}

/// Whether `ty` names k8s-openapi's `ObjectMeta` (by its last path segment, however
/// it is imported); any other type is a metadata of its own.
fn is_object_meta(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.path.segments.last().is_some_and(|s| s.ident == "ObjectMeta"))
}

/// One named field.
pub(crate) struct ProjectedField<'a> {
    pub(crate) ident: &'a Ident,
    pub(crate) ty: &'a Type,
    /// What its JSON key is found from.
    pub(crate) key: JsonKey,
    /// Its type seen through `Option`, `Vec` and maps, for the compile-time check.
    pub(crate) shape: Shape<'a>,
}

/// What a field's one JSON key is found from, at run time, among the keys the
/// original's `Deserialize` reads (`informer::projection::__private::Layout`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct JsonKey {
    /// The Rust name, without `r#`.
    pub(crate) rust: String,
    /// serde's `rename_all = "camelCase"` of the Rust name: the key, if the original
    /// has it.
    pub(crate) camel: String,
    /// `#[projection(rename = "...")]`: the key, which the original must have.
    pub(crate) rename: Option<String>,
}

impl JsonKey {
    /// The JSON name as the field list shows it (for messages only).
    pub(crate) fn display(&self) -> &str {
        self.rename.as_deref().unwrap_or(&self.camel)
    }
}

/// serde's `rename_all = "camelCase"` of a Rust field name (as serde_derive writes it:
/// PascalCase, its first letter lower-cased): `node_name` is `nodeName`, `pod_ip`
/// `podIp`, `type_` `type`.
pub(crate) fn serde_camel_case(field: &str) -> String {
    let mut pascal = String::new();
    let mut capitalize = true;
    for ch in field.chars() {
        if ch == '_' {
            capitalize = true;
        } else if capitalize {
            pascal.push(ch.to_ascii_uppercase());
            capitalize = false;
        } else {
            pascal.push(ch);
        }
    }
    match pascal.chars().next() {
        Some(first) => first.to_ascii_lowercase().to_string() + &pascal[first.len_utf8()..],
        None => pascal,
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
    /// `Shared<T>`: a `T` stored once (`informer::projection::Shared`), read as `T`.
    Shared(Box<Shape<'a>>),
    /// Any other type: the original's, or a projection of it.
    Leaf(&'a Type),
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
    let metadata = fields.iter().find(|f| f.ident == "metadata");
    let role = if let Some(metadata) = metadata
        && settings.nested.is_none()
    {
        Role::Resource(match settings.metadata {
            _ if !is_object_meta(metadata.ty) => {
                for span in [settings.metadata_span, settings.annotations]
                    .into_iter()
                    .flatten()
                {
                    cx.error(
                        span,
                        "`metadata` and `annotations` choose what an `ObjectMeta` keeps; a \
                         `metadata` field of another type (`CompactMeta`) decodes what it \
                         holds itself: remove it",
                    );
                }
                Metadata::Own
            }
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
    if let (Some(span), Some(Metadata::Full)) = (settings.annotations, settings.metadata)
        && role != Role::Resource(Metadata::Own)
    {
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

/// What a field's JSON key is found from: its `rename`, or its Rust name.
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
    let rust = ident.to_string();
    let rust = rust.strip_prefix("r#").unwrap_or(&rust).to_owned();
    JsonKey {
        camel: serde_camel_case(&rust),
        rust,
        rename: rename.map(|name| name.value()),
    }
}

/// `ty` seen through `Option`, `Vec`, `BTreeMap<String, _>` / `HashMap<String, _>`
/// and `Shared` (by its last name, as the others: a type of the user's named `Shared`
/// with one type argument is taken for ours, and its check fails at the field).
fn shape(ty: &Type) -> Shape<'_> {
    let Some((name, types)) = generic(ty) else {
        return Shape::Leaf(ty);
    };
    match (name.as_str(), types.as_slice()) {
        ("Option", [inner]) => Shape::Option(Box::new(shape(inner))),
        ("Vec", [inner]) => Shape::Vec(Box::new(shape(inner))),
        ("BTreeMap" | "HashMap", [_, value]) => Shape::Map(Box::new(shape(value))),
        ("Shared", [inner]) => Shape::Shared(Box::new(shape(inner))),
        _ => Shape::Leaf(ty),
    }
}

/// `T` of `ty = Option<T>`.
pub(crate) fn option_inner(ty: &Type) -> Option<&Type> {
    match generic(ty)? {
        (name, types) if name == "Option" && types.len() == 1 => Some(types[0]),
        _ => None,
    }
}

/// The last name of a path type with its type arguments (`Option` and `[T]` for
/// `std::option::Option<T>`).
fn generic(ty: &Type) -> Option<(String, Vec<&Type>)> {
    let Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last().filter(|_| path.qself.is_none())?;
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let types = args
        .args
        .iter()
        .filter_map(|arg| match arg {
            GenericArgument::Type(ty) => Some(ty),
            _ => None,
        })
        .collect();
    Some((last.ident.to_string(), types))
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
