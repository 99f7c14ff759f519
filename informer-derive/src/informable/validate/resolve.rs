//! Resolving one `index(...)` attribute into an [`Index`]: its name, its key source
//! (a field path such as `spec.nodeName` or `metadata.labels['app']`, walked against
//! the annotated struct and the resource's metadata; a function; owner references)
//! and the key type found at the end.

// The model types and helpers of the parent module, split off from it for size.
use super::*;

/// Resolves the index attributes of one container.
pub(super) struct Resolver<'a, 'c> {
    pub(super) cx: &'a Ctxt,
    pub(super) container: &'a Container<'c>,
    pub(super) mode: Mode,
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
    pub(super) fn index(&self, attr: &IndexAttr) -> Option<Index> {
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
                let keys = owner::owner(cx, self.container, owner, source.span())?;
                let describe = owner::describe(&keys);
                (Keys::Owner(keys), string, describe, None)
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
    // Located at the literal but made in the macro: rustc still reports the field
    // there, without its "a field with a similar name exists" fix, which would put
    // a bare identifier in place of the quoted path and break the attribute.
    let span = Span::mixed_site().located_at(span);
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
