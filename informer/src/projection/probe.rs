//! Made-up objects that ask the original type's `Deserialize` what it reads: its
//! keys and "expected" text ([`shape`]), and what it does with an object of chosen
//! keys and values ([`ask`]): which values it asks for, which it refuses, whether it
//! reads one as an `Option`, which missing key it names.
//!
//! Nothing is allocated: the made-up values are empty (`""`, `0`, `[]`, `{}`, a struct
//! of such, an enum's first variant) or `null`, the error formats nothing, and the
//! "expected" text is kept inline.

use std::cell::Cell;
use std::fmt::{self, Write as _};

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

/// The original's keys (when its `Deserialize` names them) and its "expected" text.
pub(super) fn shape<O: DeserializeOwned>() -> (Option<&'static [&'static str]>, Text) {
    let mut shape = Shape {
        keys: None,
        expecting: Text::default(),
    };
    let _ = O::deserialize(&mut shape);
    (shape.keys, shape.expecting)
}

/// What the original said to a made-up object.
#[derive(Debug, Clone, Copy)]
pub(super) enum Said {
    /// `missing field`.
    Missing(&'static str),
    /// Any other refusal.
    Other,
}

/// The made-up objects' error: what the original said, nothing formatted.
#[derive(Debug)]
struct Refusal(Said);

impl fmt::Display for Refusal {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("the original refused a made-up object")
    }
}

impl std::error::Error for Refusal {}

impl de::Error for Refusal {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Refusal(Said::Other)
    }

    fn missing_field(field: &'static str) -> Self {
        Refusal(Said::Missing(field))
    }
}

/// What the original did with a made-up object.
#[derive(Default)]
pub(super) struct Log {
    /// Keys handed to it.
    pub(super) keys: Cell<usize>,
    /// Values it asked for.
    pub(super) values: Cell<usize>,
    /// Whether it refused the last value it asked for.
    pub(super) refused: Cell<bool>,
    /// Whether it read the last value as an `Option`.
    pub(super) option: Cell<bool>,
    /// Whether it asked for a key after the last one.
    pub(super) ended: Cell<bool>,
}

/// Decodes `O` from an object of `entries`: what it said, and what it did.
pub(super) fn ask<O: DeserializeOwned>(
    entries: &[(&'static str, Made)],
) -> (Result<(), Said>, Log) {
    let log = Log::default();
    let said = O::deserialize(Object { entries, log: &log })
        .map(drop)
        .map_err(|Refusal(said)| said);
    (said, log)
}

/// A made-up value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Made {
    /// `null`, as serde_json decodes it.
    Null,
    /// The emptiest value of whatever is asked for: `""`, `0`, `false`, `[]`, `{}`,
    /// a struct of such values, an enum's first variant.
    Empty,
    /// The same with strings that are timestamps (for `Time` and the like).
    Dated,
}

impl Made {
    /// The kind of value to try after this one was refused.
    pub(super) fn next(self) -> Option<Made> {
        match self {
            Made::Null => Some(Made::Empty),
            Made::Empty => Some(Made::Dated),
            Made::Dated => None,
        }
    }
}

/// The original's "expected ..." text, kept inline (it is learnt without allocating).
#[derive(Debug, Clone, Copy)]
pub(super) struct Text {
    bytes: [u8; 96],
    len: usize,
    whole: bool,
}

impl Default for Text {
    fn default() -> Self {
        Text {
            bytes: [0; 96],
            len: 0,
            whole: false,
        }
    }
}

impl Text {
    pub(super) fn get(&self) -> Option<&str> {
        self.whole
            .then(|| std::str::from_utf8(&self.bytes[..self.len]).ok())
            .flatten()
    }
}

impl fmt::Write for Text {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        if end > self.bytes.len() {
            self.whole = false;
            return Err(fmt::Error);
        }
        self.bytes[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// The deserializer that asks the original for its keys and "expected" text, and
/// decodes nothing.
struct Shape {
    keys: Option<&'static [&'static str]>,
    expecting: Text,
}

impl<'de> Deserializer<'de> for &mut Shape {
    type Error = Refusal;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        self.keys = Some(fields);
        self.expecting.whole = write!(self.expecting, "{}", &visitor as &dyn de::Expected).is_ok();
        Err(Refusal(Said::Other))
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        self.expecting.whole = write!(self.expecting, "{}", &visitor as &dyn de::Expected).is_ok();
        Err(Refusal(Said::Other))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map
        enum identifier ignored_any
    }
}

/// A made-up object: `entries`, in order.
struct Object<'a> {
    entries: &'a [(&'static str, Made)],
    log: &'a Log,
}

impl<'de> Deserializer<'de> for Object<'_> {
    type Error = Refusal;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        visitor.visit_map(Entries {
            entries: self.entries,
            log: self.log,
            at: 0,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map
        struct enum identifier ignored_any
    }
}

struct Entries<'a> {
    entries: &'a [(&'static str, Made)],
    log: &'a Log,
    at: usize,
}

impl<'de> MapAccess<'de> for Entries<'_> {
    type Error = Refusal;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Refusal> {
        let Some((key, _)) = self.entries.get(self.at) else {
            self.log.ended.set(true);
            return Ok(None);
        };
        self.log.keys.set(self.log.keys.get() + 1);
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Refusal> {
        let (_, made) = self.entries[self.at];
        self.at += 1;
        self.log.values.set(self.log.values.get() + 1);
        self.log.option.set(false);
        let value = seed.deserialize(Value {
            made,
            depth: 0,
            log: Some(self.log),
        });
        self.log.refused.set(value.is_err());
        value
    }
}

/// A made-up value, `depth` levels into the object's.
#[derive(Clone, Copy)]
struct Value<'a> {
    made: Made,
    depth: usize,
    /// The object's log, for a value of its own (not one inside it).
    log: Option<&'a Log>,
}

/// How deep made-up values go (structs of structs...) before they are refused.
const DEPTH: usize = 16;

impl Value<'_> {
    fn inner(self) -> Result<Value<'static>, Refusal> {
        if self.depth >= DEPTH {
            return Err(Refusal(Said::Other));
        }
        Ok(Value {
            made: self.made,
            depth: self.depth + 1,
            log: None,
        })
    }

    fn text(self) -> &'static str {
        match self.made {
            Made::Dated => "1970-01-01T00:00:00Z",
            _ => "",
        }
    }
}

/// What serde_json's `null` says to a visitor that does not take it.
fn refuse_null<T>(visitor: &dyn de::Expected) -> Result<T, Refusal> {
    Err(de::Error::invalid_type(de::Unexpected::Unit, visitor))
}

/// A method of a made-up value: `null` refuses it (as serde_json's `null` does), an
/// empty value calls the visitor with `$visit`.
macro_rules! made_up {
    ($($method:ident => $visit:ident($($arg:expr)?);)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
                match self.made {
                    Made::Null => refuse_null(&visitor),
                    _ => visitor.$visit($($arg)?),
                }
            }
        )*
    };
}

impl<'de> Deserializer<'de> for Value<'_> {
    type Error = Refusal;

    made_up! {
        deserialize_bool => visit_bool(false);
        deserialize_i8 => visit_i8(0);
        deserialize_i16 => visit_i16(0);
        deserialize_i32 => visit_i32(0);
        deserialize_i64 => visit_i64(0);
        deserialize_u8 => visit_u8(0);
        deserialize_u16 => visit_u16(0);
        deserialize_u32 => visit_u32(0);
        deserialize_u64 => visit_u64(0);
        deserialize_f32 => visit_f32(0.0);
        deserialize_f64 => visit_f64(0.0);
        deserialize_char => visit_char('0');
        deserialize_bytes => visit_borrowed_bytes(b"");
        deserialize_byte_buf => visit_borrowed_bytes(b"");
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        match self.made {
            Made::Null => visitor.visit_unit(),
            _ => visitor.visit_borrowed_str(self.text()),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        match self.made {
            Made::Null => refuse_null(&visitor),
            _ => visitor.visit_borrowed_str(self.text()),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        self.deserialize_str(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        if let Some(log) = self.log {
            log.option.set(true);
        }
        visitor.visit_none()
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        self.deserialize_tuple(0, visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        match self.made {
            Made::Null => refuse_null(&visitor),
            _ => visitor.visit_seq(Elements {
                value: self.inner()?,
                left: len,
            }),
        }
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        self.deserialize_struct("", &[], visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        match self.made {
            Made::Null => refuse_null(&visitor),
            _ => visitor.visit_map(Fields {
                value: self.inner()?,
                fields,
            }),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        match (self.made, variants.first()) {
            (Made::Null, _) | (_, None) => refuse_null(&visitor),
            (_, Some(variant)) => visitor.visit_enum(Variant {
                value: self.inner()?,
                variant,
            }),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Refusal> {
        visitor.visit_unit()
    }
}

/// A made-up list (or tuple) of `left` values.
struct Elements {
    value: Value<'static>,
    left: usize,
}

impl<'de> SeqAccess<'de> for Elements {
    type Error = Refusal;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Refusal> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(self.value).map(Some)
    }
}

/// A made-up struct: each of its fields, a made-up value.
struct Fields {
    value: Value<'static>,
    fields: &'static [&'static str],
}

impl<'de> MapAccess<'de> for Fields {
    type Error = Refusal;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Refusal> {
        match self.fields.first() {
            Some(field) => seed
                .deserialize(BorrowedStrDeserializer::new(field))
                .map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Refusal> {
        self.fields = &self.fields[1..];
        seed.deserialize(self.value)
    }
}

/// A made-up enum value: its first variant.
struct Variant {
    value: Value<'static>,
    variant: &'static str,
}

impl<'de> EnumAccess<'de> for Variant {
    type Error = Refusal;
    type Variant = Value<'static>;

    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, Value<'static>), Refusal> {
        let variant = seed.deserialize(BorrowedStrDeserializer::new(self.variant))?;
        Ok((variant, self.value))
    }
}

impl<'de> VariantAccess<'de> for Value<'static> {
    type Error = Refusal;

    fn unit_variant(self) -> Result<(), Refusal> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Refusal> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Refusal> {
        Deserializer::deserialize_tuple(self, len, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Refusal> {
        Deserializer::deserialize_struct(self, "", fields, visitor)
    }
}
