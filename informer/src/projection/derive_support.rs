//! The hidden runtime of `#[derive(Projection)]`, reached as
//! `informer::projection::__private`. Not public API: it may change in any release,
//! together with the derive.
//!
//! - decoding: a [`Layout`] (learnt once per projection from the original's own
//!   `Deserialize`, see `rules.rs`) gives each field its one JSON key ([`FieldKey`]
//!   finds it, comparing the key exactly, without allocating), how `null` is read
//!   ([`Read`], [`SlimMeta`]) and what a missing key is ([`filled`], [`optional`]);
//!   [`SlimMeta`] decodes the slim metadata (the other keys skipped unread);
//! - the compile-time check of the derive's never-called function, which walks the
//!   original type along the projection's fields: the walk both derives share
//!   (`crate::walk`, named at `informable::__private`: `Step` in mode `Check`) looks
//!   into an `Option` only where the original has one, [`each`]
//!   and [`values`] into lists and maps, and [`leaf`] asks that the projected type
//!   be the original's ([`ProjectionOf`], checked by [`Leaf::holds`]).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::marker::PhantomData;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::ProjectionOf;
pub use super::rules::{FieldSpec, Layout, Original};
use crate::reflector::source::KeyText;

// The crate, not its items: an item re-exported here would be what rustc names in
// users' error messages (`__private::Resource`); the derive names kube's and
// k8s-openapi's types by their own paths (`::kube::Resource`).
pub use serde;

/// Finds the projected field a JSON key is (by [`Layout::field`]): its index, or `N`
/// for a key no field reads.
pub struct FieldKey<'a, const N: usize>(pub &'a Layout<N>);

impl<'de, const N: usize> DeserializeSeed<'de> for FieldKey<'_, N> {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<'de, const N: usize> Visitor<'de> for FieldKey<'_, N> {
    type Value = usize;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<usize, E> {
        self.0.field(key)
    }

    fn visit_bytes<E: de::Error>(self, key: &[u8]) -> Result<usize, E> {
        match std::str::from_utf8(key) {
            Ok(key) => self.0.field(key),
            Err(_) => Ok(N),
        }
    }
}

/// A projected value read as the original reads it: `Option<X>` where the original
/// reads an `Option` (`null` is `None`), else `X` itself (which refuses `null` where
/// `X` does).
pub struct Read<X> {
    null_is_none: bool,
    read: PhantomData<fn() -> X>,
}

impl<X> Read<X> {
    /// Reads `Option<X>` if `null_is_none`, else `X`.
    pub const fn new(null_is_none: bool) -> Self {
        Read {
            null_is_none,
            read: PhantomData,
        }
    }
}

impl<'de, X: de::Deserialize<'de>> DeserializeSeed<'de> for Read<X> {
    type Value = Option<X>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<X>, D::Error> {
        if self.null_is_none {
            <Option<X> as de::Deserialize<'de>>::deserialize(deserializer)
        } else {
            <X as de::Deserialize<'de>>::deserialize(deserializer).map(Some)
        }
    }
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

/// The value of the projected field `field` (not an `Option`) read as `slot` (`None`
/// if its key was `null` where the original reads an `Option`, or missing): the
/// value, else its default, or the error `missing field` where the original has one.
pub fn filled<T: MissingField, E: de::Error, const N: usize>(
    slot: Option<T>,
    seen: bool,
    layout: &Layout<N>,
    field: usize,
) -> Result<T, E> {
    match slot {
        Some(value) => Ok(value),
        None if seen || !layout.missing_refused(field) => Ok(T::missing()),
        None => Err(E::missing_field(layout.key(field))),
    }
}

/// The value of the projected `Option` field `field` read as `slot`: the error
/// `missing field` if its key is missing where the original has that error.
pub fn optional<T, E: de::Error, const N: usize>(
    slot: Option<T>,
    seen: bool,
    layout: &Layout<N>,
    field: usize,
) -> Result<Option<T>, E> {
    if !seen && layout.missing_refused(field) {
        return Err(E::missing_field(layout.key(field)));
    }
    Ok(slot)
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
#[derive(Debug, Clone, Copy)]
pub struct SlimMeta<const ANNOTATIONS: bool> {
    null_is_none: bool,
}

impl<const ANNOTATIONS: bool> SlimMeta<ANNOTATIONS> {
    /// Reads `"metadata": null` as `None` if `null_is_none` (as k8s-openapi reads it),
    /// else refuses it as `ObjectMeta` does (as a serde-derived resource reads it).
    pub const fn new(null_is_none: bool) -> Self {
        SlimMeta { null_is_none }
    }
}

impl<'de, const ANNOTATIONS: bool> DeserializeSeed<'de> for SlimMeta<ANNOTATIONS> {
    type Value = Option<ObjectMeta>;

    fn deserialize<D: Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Option<ObjectMeta>, D::Error> {
        let slim = Slim::<D, ANNOTATIONS>(deserializer);
        if self.null_is_none {
            serde::Deserialize::deserialize(slim)
        } else {
            <ObjectMeta as serde::Deserialize>::deserialize(slim).map(Some)
        }
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
