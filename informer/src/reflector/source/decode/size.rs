//! What a decoded object holds in memory, estimated while it is decoded: the
//! allocations serde makes for it, each rounded up as glibc's allocator rounds it.
//!
//! The [adapter](super::managed_fields) every object goes through sees each value
//! that is built (values it skips are never seen), so it counts, into a per-thread
//! total that [`measure`] opens for one object:
//!
//! - a string decoded into a `String` (`deserialize_string`): its length;
//! - a list: the `Vec`'s buffer, its capacity computed as `Vec` grows it from the
//!   adapter's size hint of one element, times the element's size;
//! - a map (`deserialize_map`, and a JSON object decoded through `deserialize_any`
//!   into a `serde_json::Value`) with `String` keys and values of one type: the
//!   `BTreeMap`'s nodes, their number computed as sorted insertion splits them (the
//!   API server writes keys sorted);
//! - the object itself in the `Arc` the cache holds it in.
//!
//! The total is the allocator's open measurement (`crate::allocator::measured`). A
//! [`Shared`](crate::projection::Shared) value is measured apart: its bytes are the
//! shared entry's (counted once for the process), and the object counts only its
//! handle, inline in it.
//!
//! What it misses is small and stated: strings decoded through `deserialize_any` into
//! other types than `String` or `Value` (an `IntOrString`), `Box`es, and base64
//! bytes; and it counts as kept the strings serde buffers for a `#[serde(flatten)]`
//! field (kube's `PartialObjectMeta` buffers `apiVersion` and `kind`). Structs are
//! inline in their parent and cost nothing apart.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use crate::allocator::{allocation, count, measured};

thread_local! {
    /// What the last [`measure`] on this thread counted.
    static LAST: Cell<usize> = const { Cell::new(0) };
}

/// Runs `decode` (the decoding of one `T`), counting the allocations of what it
/// builds; [`last`] then says how many bytes they and `T`'s own `Arc` take.
pub(super) fn measure<T, E>(decode: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
    let (decoded, counted) = measured(decode);
    // `Arc<T>`: two counters and the value.
    let total = counted + allocation(2 * size_of::<usize>() + size_of::<T>());
    LAST.set(total);
    decoded
}

/// The estimate of the last object [`measure`]d on this thread.
pub(in crate::reflector) fn last() -> usize {
    LAST.get()
}

/// The capacity a `Vec` of elements of `size` bytes has after `len` pushes into
/// `Vec::with_capacity(1)` (serde sizes a `Vec` from the hint, which the adapter
/// makes 1): doubled when full, and at least 4 (8 for bytes, 1 for elements over
/// 1 KiB) once it grows, as `RawVec` grows it.
pub(super) fn vec_capacity(len: usize, size: usize) -> usize {
    let smallest = match size {
        1 => 8,
        s if s <= 1024 => 4,
        _ => 1,
    };
    let mut capacity = 1;
    while capacity < len {
        capacity = (capacity * 2).max(smallest);
    }
    capacity
}

/// The bytes of the nodes of a `BTreeMap` of `len` entries of `entry` bytes, built
/// by inserting sorted keys: one leaf up to 11 entries; past that, each full leaf
/// splits and keeps 6, and every 6 leaves need an internal node (12 edges more).
pub(super) fn btree_bytes(len: usize, entry: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let leaf = 16 + 11 * entry;
    let leaves = if len <= 11 {
        1
    } else {
        1 + (len - 11).div_ceil(6)
    };
    let internals = if leaves == 1 { 0 } else { leaves.div_ceil(6) };
    leaves * allocation(leaf) + internals * allocation(leaf + 12 * size_of::<usize>())
}

/// A visitor of a value that allocates when it is built: with `deserialize_map` a
/// `BTreeMap` (its entries counted by [`Entries`]); with `deserialize_string` a
/// `String`; with `deserialize_any` either (a `serde_json::Value`'s). `strings` says
/// whether a string visited here is built into a `String`.
pub(super) struct Counted<V> {
    pub(super) visitor: V,
    pub(super) strings: bool,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Counted<V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(formatter)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<V::Value, E> {
        if self.strings {
            count(v.len());
        }
        self.visitor.visit_str(v)
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        if self.strings {
            count(v.len());
        }
        self.visitor.visit_borrowed_str(v)
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<V::Value, E> {
        if self.strings {
            count(v.len());
        }
        self.visitor.visit_string(v)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<V::Value, E> {
        self.visitor.visit_bool(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<V::Value, E> {
        self.visitor.visit_i64(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<V::Value, E> {
        self.visitor.visit_u64(v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<V::Value, E> {
        self.visitor.visit_f64(v)
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_unit()
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_none()
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<V::Value, D::Error> {
        self.visitor.visit_some(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(Entries {
            map,
            len: 0,
            key: 0,
            value: None,
            uniform: true,
        })
    }
}

/// A map's entries, counted as they are read; its nodes counted at its end.
///
/// Only a map with `String` keys and values of one type is a `BTreeMap` (every map
/// of a Kubernetes object is one): a struct that serde decodes as a map
/// (`#[serde(flatten)]`: kube's `PartialObjectMeta`, `DynamicObject`) has field
/// identifiers for keys and values of several types, and is inline in its parent.
struct Entries<A> {
    map: A,
    len: usize,
    key: usize,
    value: Option<usize>,
    uniform: bool,
}

impl<A> Entries<A> {
    fn is_btree_map(&self) -> bool {
        self.uniform && self.key == size_of::<String>()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Entries<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        let key = self.map.next_key_seed(seed)?;
        match key {
            Some(_) => {
                self.len += 1;
                self.key = size_of::<K::Value>();
            }
            None if self.is_btree_map() => {
                count(btree_bytes(self.len, self.key + self.value.unwrap_or(0)));
            }
            None => {}
        }
        Ok(key)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        let size = size_of::<S::Value>();
        self.uniform &= self.value.is_none_or(|value| value == size);
        self.value = Some(size);
        self.map.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// A list's elements, counted as they are read; its buffer counted at its end.
pub(super) struct Elements<A> {
    pub(super) seq: A,
    len: usize,
    size: usize,
}

impl<A> Elements<A> {
    pub(super) fn new(seq: A) -> Self {
        Self {
            seq,
            len: 0,
            size: 0,
        }
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Elements<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        let element = self.seq.next_element_seed(seed)?;
        match element {
            Some(_) => {
                self.len += 1;
                self.size = size_of::<T::Value>();
            }
            None if self.len > 0 => count(vec_capacity(self.len, self.size) * self.size),
            None => {}
        }
        Ok(element)
    }

    fn size_hint(&self) -> Option<usize> {
        self.seq.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_grow_as_raw_vec_grows_them_from_one() {
        assert_eq!(vec_capacity(1, 24), 1);
        assert_eq!(vec_capacity(2, 24), 4);
        assert_eq!(vec_capacity(5, 24), 8);
        assert_eq!(vec_capacity(2, 2000), 2);
        assert_eq!(vec_capacity(3, 2000), 4);
        // Checked against the real thing:
        let mut v: Vec<[u8; 24]> = Vec::with_capacity(1);
        for len in 1..=40 {
            v.push([0; 24]);
            assert_eq!(vec_capacity(len, 24), v.capacity(), "at {len}");
        }
    }

    #[test]
    fn maps_take_a_leaf_then_more_as_they_split() {
        assert_eq!(btree_bytes(0, 48), 0);
        assert_eq!(btree_bytes(1, 48), allocation(16 + 11 * 48));
        assert_eq!(btree_bytes(11, 48), btree_bytes(1, 48));
        assert!(btree_bytes(12, 48) > 2 * btree_bytes(1, 48));
    }

    #[test]
    fn nothing_counts_outside_a_measurement() {
        count(100);
        let measured: Result<u8, ()> = measure(|| {
            count(100);
            Ok(1)
        });
        assert_eq!(measured, Ok(1));
        assert_eq!(last(), allocation(100) + allocation(16 + 1));
    }
}
