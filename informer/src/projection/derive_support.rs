//! The hidden runtime of `#[derive(Projection)]`, reached as
//! `informer::projection::__private`. Not public API: it may change in any release,
//! together with the derive.
//!
//! - decoding: [`key_is`] matches a JSON key to a projected field without allocating,
//!   [`SlimMeta`] decodes the slim metadata (the other keys skipped unread), and
//!   [`or_default`] fills a field the object lacks as k8s-openapi does;
//! - the compile-time check of the derive's never-called function, which walks the
//!   original type along the projection's fields: [`Opt`] (with [`OptInto`] /
//!   [`OptStay`]) looks into an `Option` only where the original has one, [`each`]
//!   and [`values`] into lists and maps, and [`leaf`] asks that the projected type
//!   be the original's ([`ProjectionOf`], checked by [`Leaf::holds`]).

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::ProjectionOf;
use crate::reflector::KeyText;

// The crate, not its items: an item re-exported here would be what rustc names in
// users' error messages (`__private::Resource`); the derive names kube's and
// k8s-openapi's types by their own paths (`::kube::Resource`).
pub use serde;

/// Whether the JSON `key` names the field whose Rust name, lower-cased and without
/// `_`, is `canonical`: Kubernetes' JSON names are the Rust names in camelCase, with
/// initialisms in capitals (`podIP` is `pod_ip`, `hostIPs` is `host_ips`), and `-`
/// in a few (`x-kubernetes-...`). Compared byte by byte: nothing is allocated.
pub fn key_is(key: &str, canonical: &str) -> bool {
    let (key, canonical) = (key.as_bytes(), canonical.as_bytes());
    // A key without `_` or `-` (all but a few) has the canonical name's length.
    if key.len() == canonical.len() {
        return key.eq_ignore_ascii_case(canonical);
    }
    if key.len() < canonical.len() {
        return false;
    }
    let mut letters = key.iter().filter(|b| !matches!(b, b'_' | b'-'));
    canonical
        .iter()
        .all(|c| letters.next().is_some_and(|b| b.eq_ignore_ascii_case(c)))
        && letters.next().is_none()
}

/// What a projected field that the object lacks (or sends as `null`) holds: its
/// default, as k8s-openapi decodes a required field it does not find.
#[diagnostic::on_unimplemented(
    message = "a projected field of type `{Self}` needs a default for objects that lack it",
    label = "`{Self}` does not implement `Default`",
    note = "make the field an `Option<...>`, or derive `Default` for `{Self}` \
            (k8s-openapi decodes a missing required field as its default)"
)]
pub trait MissingField: Sized {
    /// The value of the missing field.
    fn missing() -> Self;
}

impl<T: Default> MissingField for T {
    fn missing() -> Self {
        T::default()
    }
}

/// `value`, or the default of a field the object lacks.
pub fn or_default<T: MissingField>(value: Option<T>) -> T {
    value.unwrap_or_else(T::missing)
}

/// The keys of the slim metadata: what the key function, the store, the owner index
/// and the controller read (`annotations` only on request).
const SLIM_KEYS: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "labels",
    "ownerReferences",
    "deletionTimestamp",
    "finalizers",
];

/// Decodes an `ObjectMeta` from its slim keys (and `annotations` if `ANNOTATIONS`),
/// every other key skipped in the JSON, its value never built.
#[derive(Debug, Clone, Copy, Default)]
pub struct SlimMeta<const ANNOTATIONS: bool>;

impl<'de, const ANNOTATIONS: bool> DeserializeSeed<'de> for SlimMeta<ANNOTATIONS> {
    /// `None` for `"metadata": null`, as k8s-openapi reads it.
    type Value = Option<ObjectMeta>;

    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Option<ObjectMeta>, D::Error> {
        serde::Deserialize::deserialize(Slim::<D, ANNOTATIONS>(deserializer))
    }
}

/// A deserializer of one `ObjectMeta` that hides the keys slim metadata leaves out.
struct Slim<D, const ANNOTATIONS: bool>(D);

impl<'de, D: Deserializer<'de>, const ANNOTATIONS: bool> Deserializer<'de>
    for Slim<D, ANNOTATIONS>
{
    type Error = D::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_struct(name, fields, SlimVisitor::<V, ANNOTATIONS>(visitor))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_option(SlimOption::<V, ANNOTATIONS>(visitor))
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_any(SlimVisitor::<V, ANNOTATIONS>(visitor))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf unit unit_struct newtype_struct seq tuple tuple_struct map
        enum identifier ignored_any
    }
}

/// The visitor of `Option<ObjectMeta>`: the value, if any, is slim.
struct SlimOption<V, const ANNOTATIONS: bool>(V);

impl<'de, V: Visitor<'de>, const ANNOTATIONS: bool> Visitor<'de> for SlimOption<V, ANNOTATIONS> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(formatter)
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(Slim::<D, ANNOTATIONS>(deserializer))
    }
}

struct SlimVisitor<V, const ANNOTATIONS: bool>(V);

impl<'de, V: Visitor<'de>, const ANNOTATIONS: bool> Visitor<'de> for SlimVisitor<V, ANNOTATIONS> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(formatter)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(SlimKeys::<A, ANNOTATIONS>(map))
    }
}

/// The metadata's map with only the slim keys: the others are skipped, unread.
struct SlimKeys<A, const ANNOTATIONS: bool>(A);

impl<'de, A: MapAccess<'de>, const ANNOTATIONS: bool> MapAccess<'de> for SlimKeys<A, ANNOTATIONS> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        while let Some(key) = self.0.next_key_seed(KeyText)? {
            let kept = SLIM_KEYS.contains(&&*key) || (ANNOTATIONS && key == "annotations");
            if !kept {
                self.0.next_value::<IgnoredAny>()?;
                continue;
            }
            return match key {
                std::borrow::Cow::Borrowed(key) => {
                    seed.deserialize(de::value::BorrowedStrDeserializer::new(key))
                }
                std::borrow::Cow::Owned(key) => {
                    seed.deserialize(de::value::StringDeserializer::new(key))
                }
            }
            .map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        self.0.next_value_seed(seed)
    }
}

/// A field of the original on the way to the check of its projected type.
pub struct Opt<'a, T: ?Sized>(pub &'a T);

/// Into the value of an `Option` of the original, where the projection has an
/// `Option` too. Chosen over [`OptStay`] by method resolution when it applies.
pub trait OptInto<'a> {
    /// The value's type.
    type Item: ?Sized + 'a;
    /// Calls `f` with the value, if any.
    fn each(&self, f: &mut dyn FnMut(&'a Self::Item));
}

/// A field the original always has: a projection may still make it an `Option`.
pub trait OptStay<'a> {
    /// The field's type.
    type Item: ?Sized + 'a;
    /// Calls `f` with the field.
    fn each(&self, f: &mut dyn FnMut(&'a Self::Item));
}

impl<'a, T: 'a> OptInto<'a> for Opt<'a, Option<T>> {
    type Item = T;
    fn each(&self, f: &mut dyn FnMut(&'a T)) {
        if let Some(value) = self.0 {
            f(value);
        }
    }
}

impl<'a, T: ?Sized + 'a> OptStay<'a> for &Opt<'a, T> {
    type Item = T;
    fn each(&self, f: &mut dyn FnMut(&'a T)) {
        f(self.0);
    }
}

/// A list of the original, where the projection has a `Vec`.
#[diagnostic::on_unimplemented(
    message = "the projection has a list where the original has `{Self}`",
    label = "not a list in the original type",
    note = "a `Vec` in a projection reads a list (`Vec`) of the original"
)]
pub trait Sequence {
    /// The element type.
    type Item;
    /// Calls `f` with each element.
    fn each_element(&self, f: &mut dyn FnMut(&Self::Item));
}

impl<T> Sequence for Vec<T> {
    type Item = T;
    fn each_element(&self, f: &mut dyn FnMut(&T)) {
        self.iter().for_each(f);
    }
}

/// Calls `f` with each element of the original's list.
pub fn each<S: Sequence>(list: &S, mut f: impl FnMut(&S::Item)) {
    list.each_element(&mut f);
}

/// A map of the original, where the projection has a `BTreeMap<String, _>`.
#[diagnostic::on_unimplemented(
    message = "the projection has a map where the original has `{Self}`",
    label = "not a map with string keys in the original type",
    note = "a `BTreeMap<String, _>` in a projection reads a map of the original"
)]
pub trait Map {
    /// The value type.
    type Value;
    /// Calls `f` with each value.
    fn each_value(&self, f: &mut dyn FnMut(&Self::Value));
}

impl<V> Map for BTreeMap<String, V> {
    type Value = V;
    fn each_value(&self, f: &mut dyn FnMut(&V)) {
        self.values().for_each(f);
    }
}

impl<V, S> Map for HashMap<String, V, S> {
    type Value = V;
    fn each_value(&self, f: &mut dyn FnMut(&V)) {
        self.values().for_each(f);
    }
}

/// Calls `f` with each value of the original's map.
pub fn values<M: Map>(map: &M, mut f: impl FnMut(&M::Value)) {
    map.each_value(&mut f);
}

/// A value of the original, whose type is known before the projected type is
/// checked against it (so that rustc reports the projected type, not the value).
pub struct Leaf<'a, O: ?Sized>(&'a O);

/// The original's value at the end of a projected field's walk.
pub fn leaf<O: ?Sized>(original: &O) -> Leaf<'_, O> {
    Leaf(original)
}

impl<O: ?Sized> Leaf<'_, O> {
    /// Checks that the projected type `P` can hold the value.
    pub fn holds<P: ?Sized + ProjectionOf<O>>(self) {
        let _ = self.0;
    }
}
