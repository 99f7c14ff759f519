//! Attribute syntax -> [`ast`](super::ast).
//!
//! ```text
//! #[informable(
//!     kind = Widget,                      // the resource type (default: found from #[kube] or Self)
//!     key = path::to::key_fn,             // fn(&K) -> ObjectKey (default: namespace/name)
//!     crate = path::to::informer,         // default ::informer
//!     lister_trait = WidgetIndexes,       // name of the generated query trait
//!     foreign,                            // `kind` is another crate's type: indexes only
//!     index(name = "by_color", path = "spec.color"),
//!     index(name = "by_replicas", path = "spec.replicas", value = i32, format = "display"),
//!     index(name = "by_team", fn = crate::team_of),
//!     // the owner by its type (group and kind from its kube::Resource impl)...
//!     index(name = "by_owner", owner(type = Widget, controller, name), marker = ByParent),
//!     // ...or by group and kind (`group = ""`: core; or `api_version = "batch/v1"`)
//!     index(name = "by_cronjob", owner(kind = "CronJob", group = "batch", controller)),
//! )]
//! ```

use syn::meta::ParseNestedMeta;
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, LitStr, Token};

use super::ast::{Attrs, Container, Field, Format, IndexAttr, KubeAttrs, Owner, Source};
use crate::attr::{meta_key, set_once, skip_value, unknown_key};
use crate::ctxt::Ctxt;
use crate::suggest;

const CONTAINER_KEYS: &[&str] = &["kind", "key", "crate", "lister_trait", "foreign", "index"];
const INDEX_KEYS: &[&str] = &["name", "path", "fn", "owner", "value", "format", "marker"];
const OWNER_KEYS: &[&str] = &["type", "kind", "group", "api_version", "controller", "name"];
const FORMATS: &[&str] = &["key", "display", "serde"];

/// Parses the derive input; `None` when it is not a struct (the error is recorded).
pub(crate) fn container<'a>(cx: &Ctxt, input: &'a DeriveInput) -> Option<Container<'a>> {
    let data = match &input.data {
        Data::Struct(data) => data,
        Data::Enum(data) => {
            cx.error(
                data.enum_token.span,
                "#[derive(Informable)] is for structs (a resource, or a CRD's spec struct); \
                 an enum is not a Kubernetes resource",
            );
            return None;
        }
        Data::Union(data) => {
            cx.error(
                data.union_token.span,
                "#[derive(Informable)] is for structs (a resource, or a CRD's spec struct); \
                 a union is not a Kubernetes resource",
            );
            return None;
        }
    };
    for attr in data
        .fields
        .iter()
        .flat_map(|field| &field.attrs)
        .filter(|attr| attr.path().is_ident("informable"))
    {
        cx.error_spanned(
            attr,
            "#[informable(...)] goes on the struct, not on a field: \
             `#[informable(index(name = \"...\", path = \"spec.field\"))]`",
        );
    }
    let rename_all = serde_rename_all(&input.attrs);
    let fields = match &data.fields {
        Fields::Named(named) => named
            .named
            .iter()
            .filter_map(|field| {
                let ident = field.ident.as_ref()?;
                let rust = ident.to_string();
                let rust = rust.strip_prefix("r#").unwrap_or(&rust).to_owned();
                let json = serde_rename(&field.attrs)
                    .or_else(|| {
                        rename_all
                            .as_deref()
                            .and_then(|rule| suggest::rename_field(rule, &rust))
                    })
                    .unwrap_or(rust);
                Some(Field {
                    ident,
                    ty: &field.ty,
                    json,
                })
            })
            .collect(),
        Fields::Unnamed(_) | Fields::Unit => Vec::new(),
    };
    Some(Container {
        ident: &input.ident,
        vis: &input.vis,
        generics: &input.generics,
        fields,
        attrs: attrs(cx, &input.attrs),
        kube: kube_attrs(&input.attrs),
    })
}

/// Every `#[informable(...)]` of the container, merged.
fn attrs(cx: &Ctxt, attributes: &[Attribute]) -> Attrs {
    let mut attrs = Attrs::default();
    for attr in attributes
        .iter()
        .filter(|a| a.path().is_ident("informable"))
    {
        let result = attr.parse_nested_meta(|meta| {
            let key = meta_key(&meta);
            match key.as_str() {
                "crate" => set_once(cx, &meta, &mut attrs.krate, meta.value()?.parse()?),
                "kind" => set_once(cx, &meta, &mut attrs.kind, meta.value()?.parse()?),
                "key" => set_once(cx, &meta, &mut attrs.key, parse_path_or_str(&meta)?),
                "lister_trait" => {
                    set_once(cx, &meta, &mut attrs.lister_trait, meta.value()?.parse()?)
                }
                "foreign" => {
                    if meta.input.peek(Token![=]) || meta.input.peek(syn::token::Paren) {
                        cx.error_spanned(
                            &meta.path,
                            "`foreign` takes no value: write `foreign` alone, beside `kind = ...`",
                        );
                        skip_value(&meta)?;
                    }
                    set_once(cx, &meta, &mut attrs.foreign, meta.path.span());
                }
                "index" => {
                    if let Some(index) = index(cx, &meta)? {
                        attrs.indexes.push(index);
                    }
                }
                _ => {
                    unknown_key(cx, &meta, &key, "#[informable(...)]", CONTAINER_KEYS);
                    skip_value(&meta)?;
                }
            }
            Ok(())
        });
        if let Err(error) = result {
            cx.syn_error(error);
        }
    }
    attrs
}

/// `index(...)`: `None` when its parentheses do not parse at all.
fn index(cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<Option<IndexAttr>> {
    let mut index = IndexAttr {
        span: meta.path.span(),
        name: None,
        sources: Vec::new(),
        value: None,
        format: None,
        marker: None,
        unknown_keys: false,
    };
    if !meta.input.peek(syn::token::Paren) {
        cx.error(
            meta.path.span(),
            "expected `index(name = \"...\", path = \"...\")`",
        );
        skip_value(meta)?;
        return Ok(None);
    }
    meta.parse_nested_meta(|meta| {
        let key = meta_key(&meta);
        match key.as_str() {
            "name" => set_once(cx, &meta, &mut index.name, meta.value()?.parse()?),
            "path" => {
                let path: LitStr = meta.value()?.parse()?;
                index.sources.push(Source::Path(path));
            }
            "fn" => {
                let path = parse_path_or_str(&meta)?;
                index.sources.push(Source::Fn(path));
            }
            "owner" => {
                let owner = owner(cx, &meta)?;
                index
                    .sources
                    .push(Source::Owner(Box::new(owner), meta.path.span()));
            }
            "value" => set_once(cx, &meta, &mut index.value, meta.value()?.parse()?),
            "format" => {
                let lit: LitStr = meta.value()?.parse()?;
                let format = match lit.value().as_str() {
                    "key" => Some(Format::Key),
                    "display" => Some(Format::Display),
                    "serde" => Some(Format::Serde),
                    other => {
                        cx.error(
                            lit.span(),
                            format!(
                                "unknown format `{other}`{}; expected `key`, `display` or `serde`",
                                suggest::hint(other, FORMATS.iter().copied())
                            ),
                        );
                        None
                    }
                };
                if let Some(format) = format {
                    set_once(cx, &meta, &mut index.format, (format, lit.span()));
                }
            }
            "marker" => set_once(cx, &meta, &mut index.marker, meta.value()?.parse()?),
            _ => {
                unknown_key(cx, &meta, &key, "index(...)", INDEX_KEYS);
                index.unknown_keys = true;
                skip_value(&meta)?;
            }
        }
        Ok(())
    })?;
    Ok(Some(index))
}

/// `owner` or `owner(type = Owner, controller, name)` /
/// `owner(kind = "...", group = "...", ...)`; what goes together is checked later.
fn owner(cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<Owner> {
    let mut owner = Owner::default();
    if !meta.input.peek(syn::token::Paren) {
        return Ok(owner);
    }
    meta.parse_nested_meta(|meta| {
        let key = meta_key(&meta);
        match key.as_str() {
            "type" => {
                let ty = parse_type_or_str(&meta)?;
                set_once(cx, &meta, &mut owner.ty, ty);
            }
            "kind" => set_once(cx, &meta, &mut owner.kind, meta.value()?.parse()?),
            "group" => set_once(cx, &meta, &mut owner.group, meta.value()?.parse()?),
            "api_version" => set_once(cx, &meta, &mut owner.api_version, meta.value()?.parse()?),
            "controller" => owner.controller = true,
            "name" => owner.by_name = true,
            // `owner(CronJob)`: a type where a key goes.
            _ if !meta.input.peek(Token![=]) && looks_like_a_type(&key) => {
                cx.error_spanned(
                    &meta.path,
                    format!("to name the owner by its Rust type, write `type = {key}`"),
                );
                skip_value(&meta)?;
            }
            _ => {
                unknown_key(cx, &meta, &key, "owner(...)", OWNER_KEYS);
                skip_value(&meta)?;
            }
        }
        Ok(())
    })?;
    Ok(owner)
}

/// Whether a key is rather a type's path: `CronJob`, `batch::v1::CronJob`.
fn looks_like_a_type(key: &str) -> bool {
    key.contains("::") || key.starts_with(|c: char| c.is_ascii_uppercase())
}

/// A type, written bare (`type = CronJob`) or quoted (`type = "CronJob"`).
fn parse_type_or_str(meta: &ParseNestedMeta<'_>) -> syn::Result<syn::Type> {
    let value = meta.value()?;
    if value.peek(LitStr) {
        let lit: LitStr = value.parse()?;
        lit.parse()
    } else {
        value.parse()
    }
}

/// A path, written bare (`fn = crate::f`) or quoted (`fn = "crate::f"`, as serde does).
fn parse_path_or_str(meta: &ParseNestedMeta<'_>) -> syn::Result<syn::Path> {
    let value = meta.value()?;
    if value.peek(LitStr) {
        let lit: LitStr = value.parse()?;
        lit.parse()
    } else {
        value.parse()
    }
}

/// kube's `#[kube(group = "...", kind = "...", root = "...", status = ...)]`, read leniently: kube's
/// own derive reports its mistakes.
fn kube_attrs(attributes: &[Attribute]) -> Option<KubeAttrs> {
    let mut found = None;
    for attr in attributes.iter().filter(|a| a.path().is_ident("kube")) {
        let kube = found.get_or_insert(KubeAttrs {
            group: None,
            kind: None,
            root: None,
            status: false,
        });
        let _ignored = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("kind") {
                kube.kind = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("group") {
                kube.group = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("root") {
                kube.root = Some(meta.value()?.parse()?);
            } else {
                if meta.path.is_ident("status") {
                    kube.status = true;
                }
                skip_value(&meta)?;
            }
            Ok(())
        });
    }
    found
}

/// serde's container `rename_all` (the deserialize side).
fn serde_rename_all(attributes: &[Attribute]) -> Option<String> {
    serde_setting(attributes, "rename_all")
}

/// serde's field `rename` (the deserialize side).
fn serde_rename(attributes: &[Attribute]) -> Option<String> {
    serde_setting(attributes, "rename")
}

/// `#[serde(name = "x")]` or `#[serde(name(deserialize = "x"))]`.
fn serde_setting(attributes: &[Attribute], name: &str) -> Option<String> {
    let mut value = None;
    for attr in attributes.iter().filter(|a| a.path().is_ident("serde")) {
        let _ignored = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(name) {
                if meta.input.peek(Token![=]) {
                    value = Some(meta.value()?.parse::<LitStr>()?.value());
                } else {
                    meta.parse_nested_meta(|inner| {
                        if inner.path.is_ident("deserialize") {
                            value = Some(inner.value()?.parse::<LitStr>()?.value());
                        } else {
                            skip_value(&inner)?;
                        }
                        Ok(())
                    })?;
                }
            } else {
                skip_value(&meta)?;
            }
            Ok(())
        });
    }
    value
}
