//! What a projection reads, learnt from the original type's own `Deserialize`, once
//! per projection (a [`Layout`], kept in a `static` of the derive's impl):
//!
//! - the one JSON key of each projected field: its `#[projection(rename)]`, or the key
//!   of the original's that is the Rust name (serde's camelCase of it, or else the
//!   one key that is the same word: `podIP` for `pod_ip`, `node_name` under serde's
//!   `rename_all = "snake_case"`), never a look-alike (`palette_`, `Palette`);
//! - whether a `null` there is `None` (the original reads an `Option`: k8s-openapi
//!   reads every field so, required ones too) or a value of the field's type, which
//!   refuses it where that type does (a serde-derived `String`);
//! - whether a missing key is the field's default or the error `missing field`;
//! - whether a repeated key is refused (serde's derive: `duplicate field`) or the last
//!   one wins (k8s-openapi);
//! - whether keys the original does not know are refused (`deny_unknown_fields`);
//! - the original's own "expected ..." text, so that a value of another JSON type is
//!   the same error for both.
//!
//! The original is asked by decoding made-up objects with this module's deserializers
//! (a key with `null`, the same key twice, no keys...) and watching what it asks for
//! and what it refuses. Nothing here allocates for a type whose missing fields all
//! have defaults (every k8s-openapi type): the made-up values are empty, and what is
//! learnt is `&'static str`s of the original's and flags.

use std::fmt;

use serde::de::{self, DeserializeOwned};

use super::probe::{Made, Said, Text, ask, shape};

/// A type a projection can name with `of = ...`: one serde can decode, so that the
/// projection reads what it reads.
#[diagnostic::on_unimplemented(
    message = "a projection of `{Self}` needs `{Self}: serde::Deserialize`",
    label = "`{Self}` cannot be deserialized",
    note = "a projection reads the JSON keys the original's `Deserialize` reads, as it reads \
            them: name a k8s-openapi type or a type that derives `serde::Deserialize`"
)]
pub trait Original: DeserializeOwned {}

impl<T: DeserializeOwned> Original for T {}

/// A projected field as the derive knows it.
#[derive(Debug, Clone, Copy)]
pub struct FieldSpec {
    /// The Rust name (without `r#`).
    pub rust: &'static str,
    /// serde's `rename_all = "camelCase"` of the Rust name.
    pub camel: &'static str,
    /// `#[projection(rename = "...")]`.
    pub rename: Option<&'static str>,
    /// Whether the projected type is an `Option`.
    pub optional: bool,
}

/// How one projected field is read.
#[derive(Debug, Clone, Copy)]
struct Rule {
    key: &'static str,
    null_is_none: bool,
    missing_refused: bool,
}

/// Why a projection cannot read a field as the original does: every object it
/// decodes is this error (the reflector reports each and skips it).
#[derive(Debug, Clone, Copy)]
enum Problem {
    /// The original has no key for the field.
    NoKey { field: &'static str },
    /// Two keys of the original are the field's name.
    TwoKeys {
        field: &'static str,
        first: &'static str,
        second: &'static str,
    },
    /// `rename` names a key the original does not read.
    NotAKey {
        field: &'static str,
        key: &'static str,
    },
}

/// What a projection reads, as the original reads it (see the module docs).
#[derive(Debug)]
pub struct Layout<const N: usize> {
    rules: [Rule; N],
    /// The original's keys, when its `Deserialize` names them (`deserialize_struct`).
    keys: Option<&'static [&'static str]>,
    repeats_refused: bool,
    unknown_refused: bool,
    expecting: Text,
    problem: Option<Problem>,
    projection: &'static str,
    original: &'static str,
}

impl<const N: usize> Layout<N> {
    /// Learns from `O`'s `Deserialize` how to read `fields`, projected by `projection`
    /// (names for messages: the projection's and the original's).
    pub fn learn<O: Original>(
        fields: &[FieldSpec; N],
        projection: &'static str,
        original: &'static str,
    ) -> Self {
        let (keys, expecting) = shape::<O>();
        let mut layout = Layout {
            rules: [Rule {
                key: "",
                null_is_none: true,
                missing_refused: false,
            }; N],
            keys,
            repeats_refused: true,
            unknown_refused: false,
            expecting,
            problem: None,
            projection,
            original,
        };
        for (rule, field) in layout.rules.iter_mut().zip(fields) {
            match key_of(field, keys) {
                Ok(key) => rule.key = key,
                Err(problem) => {
                    layout.problem = Some(problem);
                    return layout;
                }
            }
        }
        for rule in &mut layout.rules {
            let (_, log) = ask::<O>(&[(rule.key, Made::Null)]);
            rule.null_is_none = log.values.get() == 1 && !log.refused.get() && log.option.get();
        }
        layout.learn_missing::<O>(fields);
        layout.repeats_refused = repeats_refused::<O>(&layout.rules, keys.unwrap_or_default());
        // A key no original has: refused before its value is asked for, or skipped.
        let (_, log) = ask::<O>(&[("\u{0}informer: no such key", Made::Null)]);
        layout.unknown_refused = keys.is_some() && log.keys.get() == 1 && log.values.get() == 0;
        layout
    }

    /// Which fields' keys the original cannot do without: asked with no keys, it names
    /// the first it misses; given that one (a made-up value), the next, and so on.
    fn learn_missing<O: Original>(&mut self, fields: &[FieldSpec; N]) {
        let mut given: Vec<(&'static str, Made)> = Vec::new();
        let limit = self.keys.map_or(N, <[_]>::len) + N + 1;
        let mut decided = false;
        for _ in 0..=2 * limit {
            let (said, log) = ask::<O>(&given);
            match said {
                Ok(()) => {
                    decided = true;
                    break;
                }
                Err(Said::Missing(key)) if log.ended.get() => {
                    if given.iter().any(|(k, _)| *k == key) {
                        break;
                    }
                    given.push((key, Made::Null));
                }
                // The value made up for a key was refused: try the next kind of value.
                Err(_) if log.refused.get() => {
                    let at = log.values.get() - 1;
                    match given[at].1.next() {
                        Some(next) => given[at].1 = next,
                        None => break,
                    }
                }
                Err(_) => break,
            }
        }
        for (rule, field) in self.rules.iter_mut().zip(fields) {
            rule.missing_refused = if given.iter().any(|(k, _)| *k == rule.key) {
                true
            } else if decided {
                false
            } else {
                // The original could not be given what it needs before this field:
                // the projected type decides (an `Option` may be missing).
                !field.optional
            };
        }
    }

    /// The field's one JSON key.
    pub fn key(&self, field: usize) -> &'static str {
        self.rules[field].key
    }

    /// Whether the original reads the field as an `Option`, so that `null` is `None`
    /// (the field's default, where the projected type is not an `Option`).
    pub fn null_is_none(&self, field: usize) -> bool {
        self.rules[field].null_is_none
    }

    /// Whether an object without the field's key is the error `missing field`.
    pub fn missing_refused(&self, field: usize) -> bool {
        self.rules[field].missing_refused
    }

    /// Whether a key that comes twice is the error `duplicate field` (else the last
    /// one wins).
    pub fn repeats_refused(&self) -> bool {
        self.repeats_refused
    }

    /// The field whose key `key` is (`N` for none), or the error of a key the original
    /// refuses to know.
    pub fn field<E: de::Error>(&self, key: &str) -> Result<usize, E> {
        if let Some(field) = self.rules.iter().position(|rule| rule.key == key) {
            return Ok(field);
        }
        match self.keys {
            Some(keys) if self.unknown_refused && !keys.contains(&key) => {
                Err(E::unknown_field(key, keys))
            }
            _ => Ok(N),
        }
    }

    /// Why no object can be decoded, if there is a reason.
    pub fn problem(&self) -> Option<impl fmt::Display + '_> {
        self.problem.map(|problem| Explained {
            problem,
            layout: self,
        })
    }

    /// The original's "expected ..." text (or `fallback`, if it was too long to keep).
    pub fn expecting(&self, formatter: &mut fmt::Formatter<'_>, fallback: &str) -> fmt::Result {
        formatter.write_str(self.expecting.get().unwrap_or(fallback))
    }
}

/// The key of `field` among the original's `keys` (any key, if they are unknown).
fn key_of(
    field: &FieldSpec,
    keys: Option<&'static [&'static str]>,
) -> Result<&'static str, Problem> {
    let Some(keys) = keys else {
        return Ok(field.rename.unwrap_or(field.camel));
    };
    if let Some(rename) = field.rename {
        return keys
            .iter()
            .copied()
            .find(|key| *key == rename)
            .ok_or(Problem::NotAKey {
                field: field.rust,
                key: rename,
            });
    }
    if let Some(key) = keys.iter().copied().find(|key| *key == field.camel) {
        return Ok(key);
    }
    let mut same = keys
        .iter()
        .copied()
        .filter(|key| same_word(key, field.rust));
    match (same.next(), same.next()) {
        (Some(key), None) => Ok(key),
        (Some(first), Some(second)) => Err(Problem::TwoKeys {
            field: field.rust,
            first,
            second,
        }),
        (None, _) => Err(Problem::NoKey { field: field.rust }),
    }
}

/// Whether the JSON `key` is the Rust name `rust` written another way: the same
/// letters and digits, ignoring case and `_` / `-` (`podIP` and `pod_ip`,
/// `x-kubernetes-embedded-resource` and `x_kubernetes_embedded_resource`).
fn same_word(key: &str, rust: &str) -> bool {
    fn letters(name: &str) -> impl Iterator<Item = u8> + '_ {
        name.bytes()
            .filter(|b| !matches!(b, b'_' | b'-'))
            .map(|b| b.to_ascii_lowercase())
    }
    letters(key).eq(letters(rust))
}

/// Whether the original refuses a key that comes twice: asked with the same key twice
/// (a value it takes), it either asks for the second value (the last one wins) or
/// refuses before it. Undecided (no value of any key taken), refused.
fn repeats_refused<O: Original>(rules: &[Rule], keys: &'static [&'static str]) -> bool {
    let candidates = rules
        .iter()
        .map(|rule| rule.key)
        .chain(keys.iter().copied());
    for key in candidates {
        let mut made = Some(Made::Null);
        while let Some(value) = made {
            let (_, log) = ask::<O>(&[(key, value), (key, value)]);
            if log.values.get() == 2 {
                return false;
            }
            if log.keys.get() == 2 && !log.refused.get() {
                return true;
            }
            made = value.next();
        }
    }
    true
}

/// A [`Problem`] with the names it is about.
struct Explained<'a, const N: usize> {
    problem: Problem,
    layout: &'a Layout<N>,
}

impl<const N: usize> fmt::Display for Explained<'_, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Layout {
            projection,
            original,
            ..
        } = self.layout;
        match self.problem {
            Problem::NoKey { field } => write!(
                f,
                "the projection {projection} reads `{field}`, and {original} reads no JSON key \
                 of that name (its keys: {}): name the key with #[projection(rename = \"...\")]",
                Keys(self.layout.keys)
            ),
            Problem::TwoKeys {
                field,
                first,
                second,
            } => write!(
                f,
                "the projection {projection} reads `{field}`, and {original} has two JSON keys \
                 of that name, `{first}` and `{second}`: name the key with \
                 #[projection(rename = \"...\")]"
            ),
            Problem::NotAKey { field, key } => write!(
                f,
                "the projection {projection} reads `{field}` from the JSON key `{key}` \
                 (#[projection(rename)]), which {original} does not read (its keys: {})",
                Keys(self.layout.keys)
            ),
        }
    }
}

/// The original's keys, for a message.
struct Keys(Option<&'static [&'static str]>);

impl fmt::Display for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, key) in self.0.unwrap_or_default().iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "`{key}`")?;
        }
        Ok(())
    }
}
