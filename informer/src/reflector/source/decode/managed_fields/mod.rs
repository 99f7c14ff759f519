//! The serde adapter every list item and watch event is decoded through, which
//!
//! - drops `metadata.managedFields` while decoding, unless told to keep them
//!   ([`ManagedFields`]): the entries are skipped in the JSON and never allocated,
//!   which saves the memory they would take in the cache (about 2.5 KB of a 5.7 KB
//!   ConfigMap) and the time to build them;
//! - tells every sequence to expect one element when JSON cannot say how many there
//!   are. `Vec`'s deserializer sizes its first allocation from that hint; without one
//!   it starts at zero and grows to four elements on the first push, so every
//!   one-element list in an object (an owner reference, a finalizer, a container...)
//!   would keep room for three more. With a hint of one, a one-element list is
//!   allocated exactly and longer ones grow as before.
//!
//! Apart from `managedFields`, decoded values are the same as plain `serde_json`'s;
//! only the capacity of their vectors differs.

use std::borrow::Cow;
use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};

use super::size;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess,
    SeqAccess, VariantAccess, Visitor,
};

/// Whether cached objects keep `metadata.managedFields`, the server-side-apply field
/// ownership records the API server adds to every object.
///
/// The default is [`Drop`](ManagedFields::Drop): a controller reads objects from its
/// cache, and `managedFields` are rarely read there yet often take a third to a half of
/// an object's memory. Dropping them loses nothing on the server: an update (`PUT`)
/// of an object without `managedFields` leaves the server's records as they are, and
/// server-side apply never needs them on the client. This is what controller-runtime's
/// `TransformStripManagedFields` and kube-rs's optimisation guide recommend; here it
/// happens while decoding, so the entries are never built at all.
///
/// Choose [`Keep`](ManagedFields::Keep) when your code reads field ownership from the
/// cache (say, a tool that shows who manages which field).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ManagedFields {
    /// Skip `metadata.managedFields` while decoding: cached objects have `None`.
    #[default]
    Drop,
    /// Keep `metadata.managedFields` as the server sent them.
    Keep,
}

/// The serde name of `ObjectMeta`, whose `managedFields` key is skipped.
const OBJECT_META: &str = "ObjectMeta";

/// The `managedFields` key of `ObjectMeta`.
const MANAGED_FIELDS: &str = "managedFields";

/// `T` decoded through the adapter. `DROP` (whether to drop `managedFields`) is a type
/// parameter, not a field, so that each mode compiles to a decoder as direct as a
/// plain one.
pub(super) struct Decoded<T, const DROP: bool>(pub(super) T);

impl<'de, T: de::Deserialize<'de>, const DROP: bool> de::Deserialize<'de> for Decoded<T, DROP> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        size::measure(|| T::deserialize(Wrap::<_, DROP>(deserializer))).map(Decoded)
    }
}

/// Decodes one object from `text` through the adapter.
pub(super) fn from_str<T: DeserializeOwned>(
    text: &str,
    managed_fields: ManagedFields,
) -> serde_json::Result<T> {
    match managed_fields {
        ManagedFields::Drop => serde_json::from_str::<Decoded<T, true>>(text).map(|d| d.0),
        ManagedFields::Keep => serde_json::from_str::<Decoded<T, false>>(text).map(|d| d.0),
    }
}

/// Wraps a deserializer, visitor, seed or access so that everything nested is wrapped.
struct Wrap<T, const DROP: bool>(T);

macro_rules! forward_deserialize {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            self.0.$method(Wrap::<_, DROP>(visitor))
        }
    )*};
}

impl<'de, D: Deserializer<'de>, const DROP: bool> Deserializer<'de> for Wrap<D, DROP> {
    type Error = D::Error;

    forward_deserialize! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq
        deserialize_identifier deserialize_ignored_any
    }

    // The values that allocate are counted on their way ([`size`]).
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        let visitor = size::Counted {
            visitor,
            strings: true,
        };
        self.0.deserialize_string(Wrap::<_, DROP>(visitor))
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        let visitor = size::Counted {
            visitor,
            strings: false,
        };
        self.0.deserialize_map(Wrap::<_, DROP>(visitor))
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        let visitor = size::Counted {
            visitor,
            strings: true,
        };
        self.0.deserialize_any(Wrap::<_, DROP>(visitor))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0
            .deserialize_unit_struct(name, Wrap::<_, DROP>(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0
            .deserialize_newtype_struct(name, Wrap::<_, DROP>(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_tuple(len, Wrap::<_, DROP>(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0
            .deserialize_tuple_struct(name, len, Wrap::<_, DROP>(visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        if DROP && name == OBJECT_META {
            let visitor = ObjectMetaVisitor(Wrap::<_, DROP>(visitor));
            return self.0.deserialize_struct(name, fields, visitor);
        }
        self.0
            .deserialize_struct(name, fields, Wrap::<_, DROP>(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0
            .deserialize_enum(name, variants, Wrap::<_, DROP>(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident: $ty:ty)*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.0.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>, const DROP: bool> Visitor<'de> for Wrap<V, DROP> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(formatter)
    }

    forward_visit! {
        visit_bool: bool visit_i8: i8 visit_i16: i16 visit_i32: i32 visit_i64: i64
        visit_i128: i128 visit_u8: u8 visit_u16: u16 visit_u32: u32 visit_u64: u64
        visit_u128: u128 visit_f32: f32 visit_f64: f64 visit_char: char
        visit_str: &str visit_borrowed_str: &'de str visit_string: String
        visit_bytes: &[u8] visit_borrowed_bytes: &'de [u8] visit_byte_buf: Vec<u8>
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_some(Wrap::<_, DROP>(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_newtype_struct(Wrap::<_, DROP>(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.visit_seq(size::Elements::new(Wrap::<_, DROP>(seq)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(Wrap::<_, DROP>(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.0.visit_enum(Wrap::<_, DROP>(data))
    }
}

impl<'de, S: DeserializeSeed<'de>, const DROP: bool> DeserializeSeed<'de> for Wrap<S, DROP> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(Wrap::<_, DROP>(d))
    }
}

impl<'de, A: SeqAccess<'de>, const DROP: bool> SeqAccess<'de> for Wrap<A, DROP> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        self.0.next_element_seed(Wrap::<_, DROP>(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.size_hint().unwrap_or(1))
    }
}

impl<'de, A: MapAccess<'de>, const DROP: bool> MapAccess<'de> for Wrap<A, DROP> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        self.0.next_key_seed(Wrap::<_, DROP>(seed))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.next_value_seed(Wrap::<_, DROP>(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>, const DROP: bool> EnumAccess<'de> for Wrap<A, DROP> {
    type Error = A::Error;
    type Variant = Wrap<A::Variant, DROP>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), Self::Error> {
        self.0
            .variant_seed(Wrap::<_, DROP>(seed))
            .map(|(value, variant)| (value, Wrap::<_, DROP>(variant)))
    }
}

impl<'de, A: VariantAccess<'de>, const DROP: bool> VariantAccess<'de> for Wrap<A, DROP> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), Self::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, Self::Error> {
        self.0.newtype_variant_seed(Wrap::<_, DROP>(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.tuple_variant(len, Wrap::<_, DROP>(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.struct_variant(fields, Wrap::<_, DROP>(visitor))
    }
}

/// The visitor of an `ObjectMeta`: hands it a map without the `managedFields` entry.
struct ObjectMetaVisitor<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for ObjectMetaVisitor<V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(formatter)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(WithoutManagedFields(map))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.visit_seq(seq)
    }
}

/// A map that skips its `managedFields` entry, value unread (only scanned for its end).
struct WithoutManagedFields<A>(A);

impl<'de, A: MapAccess<'de>> MapAccess<'de> for WithoutManagedFields<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        // The key is read first, as text, so that it can be looked at; then it is
        // handed to `seed` as the same text.
        while let Some(key) = self.0.next_key_seed(KeyText)? {
            if key == MANAGED_FIELDS {
                self.0.next_value::<IgnoredAny>()?;
                continue;
            }
            return match key {
                Cow::Borrowed(key) => seed.deserialize(BorrowedStrDeserializer::new(key)),
                Cow::Owned(key) => seed.deserialize(StringDeserializer::new(key)),
            }
            .map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// Reads a map key as text: borrowed from the input where it can be (JSON keys
/// without escapes), owned otherwise. (A projection's slim metadata reads its keys
/// with it too.)
pub(crate) struct KeyText;

impl<'de> DeserializeSeed<'de> for KeyText {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for KeyText {
    type Value = Cow<'de, str>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a field name")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

#[cfg(test)]
mod tests;
