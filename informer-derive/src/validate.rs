//! Checks the parsed attributes and resolves them into a [`Model`] ready to expand:
//! the resource type, each index's key source, key type and generated names.
//!
//! Every mistake is recorded in the [`Ctxt`] with the span that caused it, and
//! validation goes on with the next index, so all of them are reported at once.

use std::collections::HashMap;

use proc_macro2::Span;
use quote::format_ident;
use syn::{GenericArgument, Ident, LitStr, Path, PathArguments, Type, Visibility, parse_quote};

use crate::ast::{Container, Field, Format, IndexAttr, Owner, Source};
use crate::ctxt::Ctxt;
use crate::path::{self, Segment};
use crate::suggest;

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
    Owner(Owner),
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
             (`InformerOptions::key_fn`) instead",
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

struct Resolver<'a, 'c> {
    cx: &'a Ctxt,
    container: &'a Container<'c>,
    mode: Mode,
}

/// What a path walk knows about the value it has reached.
enum Cursor<'a> {
    /// The resource itself, before its first field.
    Root,
    /// A value whose type is the annotated struct (the spec of a CRD).
    Struct,
    /// A value whose type is written down (a field of the annotated struct).
    Typed(&'a Type),
    /// A value of a type the derive cannot see; the compiler checks what follows.
    Unknown,
    /// A metadata value of a known kind.
    Meta(&'static MetaKind),
}

impl Resolver<'_, '_> {
    fn index(&self, attr: &IndexAttr) -> Option<Index> {
        let cx = self.cx;
        let Some(name) = &attr.name else {
            cx.error(
                attr.span,
                "an index needs a name: `index(name = \"by_node\", ...)`",
            );
            // Still look at the source for more mistakes.
            if let Some(Source::Path(lit)) = attr.sources.first() {
                let _ = self.path(lit, attr.value.as_ref());
            }
            return None;
        };
        let name_ok = self.check_name(name);
        let source = match attr.sources.as_slice() {
            // A misspelt source key is reported already: no second error for it.
            [] if attr.unknown_keys => return None,
            [] => {
                cx.error(
                    name.span(),
                    format!(
                        "index `{}` needs a source: `path = \"spec.field\"`, `fn = path::to::function` or `owner`",
                        name.value()
                    ),
                );
                return None;
            }
            [source] => source,
            [_, second, ..] => {
                cx.error(
                    second.span(),
                    "an index takes its keys from one of `path`, `fn` or `owner`, not several",
                );
                return None;
            }
        };
        let format = attr.format.map(|(format, _)| format).unwrap_or(Format::Key);
        let string: Type = parse_quote!(::std::string::String);
        let (keys, value, describe, label) = match source {
            Source::Path(lit) => {
                let resolved = self.path(lit, attr.value.as_ref())?;
                (
                    resolved.keys,
                    resolved.value,
                    format!("`{}`", resolved.display),
                    resolved.label,
                )
            }
            Source::Fn(func) => {
                let describe = format!(
                    "what `{}` returns",
                    quote::ToTokens::to_token_stream(func)
                        .to_string()
                        .replace(' ', "")
                );
                let value = attr.value.clone().unwrap_or(string);
                (Keys::Fn(func.clone()), value, describe, None)
            }
            Source::Owner(owner, _) => {
                if let Some(value) = &attr.value {
                    cx.error_spanned(value, "owner indexes are keyed by strings: remove `value`");
                }
                if let Some((_, span)) = attr.format {
                    cx.error(span, "owner indexes are keyed by strings: remove `format`");
                }
                let mut describe = String::from("the ");
                if owner.controller {
                    describe.push_str("controller ");
                }
                describe.push_str("owner references");
                if let Some(kind) = &owner.kind {
                    describe.push_str(&format!(" of kind `{kind}`"));
                }
                describe.push_str(if owner.by_name {
                    " (by owner name)"
                } else {
                    " (by owner UID)"
                });
                (Keys::Owner(owner.clone()), string, describe, None)
            }
        };
        if !name_ok {
            return None;
        }
        let method = Ident::new(&name.value(), name.span());
        let marker = attr
            .marker
            .clone()
            .unwrap_or_else(|| Ident::new(&suggest::upper_camel_case(&name.value()), name.span()));
        Some(Index {
            name: name.clone(),
            method,
            marker,
            value,
            format,
            keys,
            span: source.span(),
            describe,
            label: if format == Format::Key { label } else { None },
        })
    }

    /// An index name must make a good method name.
    fn check_name(&self, name: &LitStr) -> bool {
        let value = name.value();
        let snake = value.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && value
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !snake || syn::parse_str::<Ident>(&value).is_err() {
            let mut suggestion = suggest::snake_case(&value)
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect::<String>();
            if !suggestion.starts_with(|c: char| c.is_ascii_lowercase()) {
                suggestion.insert_str(0, "by_");
            }
            self.cx.error(
                name.span(),
                format!(
                    "index name `{value}` must be a snake_case identifier (it names the generated \
                     query method), e.g. `{suggestion}`"
                ),
            );
            return false;
        }
        if RESERVED.contains(&value.as_str()) {
            self.cx.error(
                name.span(),
                format!(
                    "index name `{value}` is reserved: {}",
                    if value == "namespace" {
                        "it is the built-in namespace index".to_owned()
                    } else {
                        format!("`Lister` already has a method `{value}`")
                    }
                ),
            );
            return false;
        }
        true
    }

    fn path(&self, lit: &LitStr, value: Option<&Type>) -> Option<ResolvedPath> {
        let cx = self.cx;
        let segments = match path::parse(&lit.value()) {
            Ok(segments) => segments,
            Err(message) => {
                cx.error(lit.span(), message);
                return None;
            }
        };
        let display = path::display(&segments);
        let mut steps = Vec::new();
        let mut root = Root::Object;
        let mut cursor = Cursor::Root;
        let mut label = None;
        for (i, segment) in segments.iter().enumerate() {
            let at = || path::display(&segments[..=i]);
            cursor = match (cursor, segment) {
                (Cursor::Root, Segment::Name(name)) if name == "metadata" => {
                    root = Root::Meta;
                    Cursor::Meta(&MetaKind::No(""))
                }
                (Cursor::Meta(_), Segment::Name(name)) if i == 1 => {
                    let Some((_, rust, kind)) = META_FIELDS
                        .iter()
                        .find(|(json, rust, _)| json == name || rust == name)
                    else {
                        let candidates = META_FIELDS.iter().map(|(json, _, _)| *json);
                        cx.error(
                            lit.span(),
                            format!(
                                "`metadata` has no indexable field `{name}`{}",
                                suggest::hint(name, candidates)
                            ),
                        );
                        return None;
                    };
                    if let MetaKind::No(why) = kind {
                        cx.error(lit.span(), format!("`{}` cannot be indexed: {why}", at()));
                        return None;
                    }
                    steps.push(Step::Field(Ident::new(rust, lit.span())));
                    Cursor::Meta(kind)
                }
                (Cursor::Meta(MetaKind::Map), Segment::Key(key)) => {
                    if steps == [Step::Field(Ident::new("labels", lit.span()))] {
                        label = Some(key.clone());
                    }
                    steps.push(Step::Key(key.clone()));
                    Cursor::Meta(&MetaKind::Str)
                }
                (Cursor::Meta(_), _) => {
                    let advice = if i == 1 {
                        "write a metadata field after `metadata`, e.g. `metadata.labels['app']`"
                    } else {
                        "nothing below it can be indexed"
                    };
                    cx.error(lit.span(), format!("in path `{display}`: {advice}"));
                    return None;
                }
                (Cursor::Root, Segment::Name(name)) => match self.mode {
                    Mode::Resource => {
                        let owner = format!("`{}`", self.container.ident);
                        let field = self.field(lit, name, &self.container.fields, &owner)?;
                        steps.push(Step::Field(field.ident.clone()));
                        Cursor::Typed(field.ty)
                    }
                    Mode::Spec(status) => {
                        let known = status.is_some();
                        let has_status = status.unwrap_or(false);
                        if name == "spec" {
                            steps.push(Step::Field(Ident::new("spec", lit.span())));
                            Cursor::Struct
                        } else if name == "status" && (has_status || !known) {
                            steps.push(Step::Field(Ident::new("status", lit.span())));
                            Cursor::Unknown
                        } else if known {
                            let mut candidates = vec!["metadata", "spec"];
                            if has_status {
                                candidates.push("status");
                            }
                            let extra = if name == "status" {
                                "; declare it with `status = \"...\"` in #[kube(...)]".to_owned()
                            } else {
                                suggest::hint(name, candidates.iter().copied())
                            };
                            cx.error(
                                lit.span(),
                                format!(
                                    "`{}` has no field `{name}` (it has {}){extra}",
                                    self.kind_display(),
                                    candidates
                                        .iter()
                                        .map(|c| format!("`{c}`"))
                                        .collect::<Vec<_>>()
                                        .join(", ")
                                ),
                            );
                            return None;
                        } else {
                            steps.push(Step::Field(rust_ident(name, lit.span())));
                            Cursor::Unknown
                        }
                    }
                    Mode::Foreign => {
                        steps.push(Step::Field(rust_ident(name, lit.span())));
                        Cursor::Unknown
                    }
                },
                (Cursor::Struct, Segment::Name(name)) => {
                    let owner = format!("`{}`", self.container.ident);
                    let field = self.field(lit, name, &self.container.fields, &owner)?;
                    steps.push(Step::Field(field.ident.clone()));
                    Cursor::Typed(field.ty)
                }
                (Cursor::Typed(ty), Segment::Key(key)) => {
                    steps.push(Step::Key(key.clone()));
                    match map_value(ty) {
                        Some(value) => Cursor::Typed(value),
                        None => Cursor::Unknown,
                    }
                }
                (Cursor::Typed(ty), Segment::Name(name)) => {
                    if self.is_container(ty) {
                        let owner = format!("`{}`", self.container.ident);
                        let field = self.field(lit, name, &self.container.fields, &owner)?;
                        steps.push(Step::Field(field.ident.clone()));
                        Cursor::Typed(field.ty)
                    } else {
                        steps.push(Step::Field(rust_ident(name, lit.span())));
                        Cursor::Unknown
                    }
                }
                (Cursor::Unknown, Segment::Name(name)) => {
                    steps.push(Step::Field(rust_ident(name, lit.span())));
                    Cursor::Unknown
                }
                (Cursor::Unknown, Segment::Key(key)) => {
                    steps.push(Step::Key(key.clone()));
                    Cursor::Unknown
                }
                (Cursor::Root | Cursor::Struct, Segment::Key(_)) => {
                    cx.error(
                        lit.span(),
                        format!(
                            "in path `{display}`: `[...]` looks up a key in a map, not in a struct"
                        ),
                    );
                    return None;
                }
            };
        }
        let inferred: Option<Type> = match cursor {
            Cursor::Root => None,
            Cursor::Struct => {
                cx.error(
                    lit.span(),
                    format!(
                        "`{display}` is the struct `{}`: index one of its fields, e.g. `{display}.{}`",
                        self.container.ident,
                        self.container
                            .fields
                            .first()
                            .map(|f| f.json.as_str())
                            .unwrap_or("field")
                    ),
                );
                return None;
            }
            Cursor::Meta(MetaKind::Str | MetaKind::Strs) => {
                Some(parse_quote!(::std::string::String))
            }
            Cursor::Meta(MetaKind::Int) => Some(parse_quote!(i64)),
            Cursor::Meta(MetaKind::Map) => {
                cx.error(
                    lit.span(),
                    format!(
                        "`{display}` is a map: index the value of one key, e.g. `{display}['app']`"
                    ),
                );
                return None;
            }
            Cursor::Meta(MetaKind::No(_)) => {
                cx.error(
                    lit.span(),
                    format!("`{display}` is a struct: index one of its fields, e.g. `metadata.labels['app']`"),
                );
                return None;
            }
            Cursor::Typed(ty) => Some(strip(ty, 2).clone()),
            Cursor::Unknown => None,
        };
        let value = value
            .cloned()
            .or(inferred)
            .unwrap_or_else(|| parse_quote!(::std::string::String));
        Some(ResolvedPath {
            keys: Keys::Path { root, steps },
            value,
            display,
            label,
        })
    }

    /// Finds a field of the annotated struct by its JSON or Rust name.
    fn field<'f>(
        &self,
        lit: &LitStr,
        name: &str,
        fields: &'f [Field<'f>],
        owner: &str,
    ) -> Option<&'f Field<'f>> {
        let snake = suggest::snake_case(name);
        let found = fields.iter().find(|f| f.json == name).or_else(|| {
            fields
                .iter()
                .find(|f| f.rust_name() == name || f.rust_name() == snake)
        });
        if found.is_none() {
            let candidates: Vec<&str> = fields.iter().map(|f| f.json.as_str()).collect();
            let listing = if candidates.is_empty() {
                "it has no named fields".to_owned()
            } else {
                format!(
                    "it has {}",
                    candidates
                        .iter()
                        .map(|c| format!("`{c}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let hint = suggest::hint(name, candidates.iter().copied());
            let detail = if hint.is_empty() {
                format!(" ({listing})")
            } else {
                hint
            };
            self.cx
                .error(lit.span(), format!("{owner} has no field `{name}`{detail}"));
        }
        found
    }

    /// Whether `ty` is the annotated struct (perhaps in an `Option`).
    fn is_container(&self, ty: &Type) -> bool {
        matches!(strip(ty, 2), Type::Path(p) if p.qself.is_none() && p.path.is_ident(self.container.ident))
    }

    fn kind_display(&self) -> String {
        match &self.container.kube {
            Some(kube) => kube
                .root
                .as_ref()
                .or(kube.kind.as_ref())
                .map(LitStr::value)
                .unwrap_or_default(),
            None => self
                .container
                .attrs
                .kind
                .as_ref()
                .map(|k| quote::ToTokens::to_token_stream(k).to_string())
                .unwrap_or_default(),
        }
    }
}

struct ResolvedPath {
    keys: Keys,
    value: Type,
    display: String,
    label: Option<String>,
}

/// The Rust field name for a path segment the derive cannot check: snake_case, and
/// `r#` for keywords written so.
///
/// Spanned at the path literal, so that rustc reports a field the type lacks there,
/// with the fields it has.
fn rust_ident(name: &str, span: Span) -> Ident {
    if let Some(raw) = name.strip_prefix("r#") {
        return Ident::new_raw(raw, span);
    }
    let snake = suggest::snake_case(name);
    match syn::parse_str::<Ident>(&snake) {
        Ok(_) => Ident::new(&snake, span),
        Err(_) => Ident::new_raw(&snake, span),
    }
}

/// The element type of `Option<T>`, `Vec<T>`, `BTreeSet<T>`, `HashSet<T>`, `[T; N]`,
/// up to `levels` deep: what the generated walk steps into.
fn strip(ty: &Type, levels: usize) -> &Type {
    let mut ty = ty;
    for _ in 0..levels {
        let inner = match ty {
            Type::Array(array) => Some(&*array.elem),
            ty => single_argument(ty, &["Option", "Vec", "BTreeSet", "HashSet"]),
        };
        match inner {
            Some(inner) => ty = inner,
            None => break,
        }
    }
    ty
}

/// `V` of a (perhaps optional) `BTreeMap<K, V>` / `HashMap<K, V>`.
fn map_value(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = strip(ty, 1) else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != "BTreeMap" && last.ident != "HashMap" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    args.args
        .iter()
        .filter_map(|a| match a {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .nth(1)
}

fn single_argument<'t>(ty: &'t Type, wrappers: &[&str]) -> Option<&'t Type> {
    let ty = match ty {
        Type::Group(group) => &*group.elem,
        Type::Paren(paren) => &*paren.elem,
        ty => ty,
    };
    let Type::Path(path) = ty else {
        return None;
    };
    if path.qself.is_some() {
        return None;
    }
    let last = path.path.segments.last()?;
    if !wrappers.iter().any(|w| last.ident == w) {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(inner) => Some(inner),
        _ => None,
    }
}
