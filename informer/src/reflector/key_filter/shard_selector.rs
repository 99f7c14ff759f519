//! [`ShardSelector`]: what a [`KeyFilter`](super::KeyFilter) asks the API server to
//! send, as a value: the hashed field and the hash ranges, written as the query
//! parameter only when a request goes.

use std::fmt::Write as _;
use std::ops::Range;

/// The end of the 64-bit hash space, exclusive.
const SPACE_END: u128 = 1 << 64;

/// The object field a [`ShardSelector`] hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShardField {
    /// `object.metadata.uid`: objects fall in a range independently of each other.
    Uid,
    /// `object.metadata.namespace`: a namespace's objects fall in one range together.
    Namespace,
}

impl ShardField {
    /// The field as the selector names it.
    fn path(self) -> &'static str {
        match self {
            ShardField::Uid => "object.metadata.uid",
            ShardField::Namespace => "object.metadata.namespace",
        }
    }
}

/// A shard selector of Kubernetes 1.36's sharded list and watch (KEP-5866, feature
/// gate `ShardedListAndWatch`): the objects whose [field](ShardField), hashed with
/// FNV-1a (64 bits), falls in one of the ranges.
///
/// ```
/// use informer::reflector::{ShardField, ShardSelector};
///
/// let lower_half = ShardSelector::new(ShardField::Uid, Some(0..1 << 63));
/// assert_eq!(
///     lower_half.to_query(),
///     "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
/// );
/// assert!(!lower_half.asks_everything());
/// assert!(ShardSelector::new(ShardField::Uid, Some(0..1 << 64)).asks_everything());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShardSelector {
    field: ShardField,
    /// Sorted, none empty, none touching another, within the hash space.
    ranges: Vec<Range<u128>>,
}

impl ShardSelector {
    /// The objects whose `field` hashes into one of `ranges` (`[start, end)`, within
    /// `0..2^64`; cut to it, and sorted and merged here). No range asks for nothing.
    pub fn new(field: ShardField, ranges: impl IntoIterator<Item = Range<u128>>) -> Self {
        let mut sorted: Vec<Range<u128>> = ranges
            .into_iter()
            .map(|range| range.start.min(SPACE_END)..range.end.min(SPACE_END))
            .filter(|range| !range.is_empty())
            .collect();
        sorted.sort_by_key(|range| range.start);
        let mut ranges: Vec<Range<u128>> = Vec::with_capacity(sorted.len());
        for range in sorted {
            match ranges.last_mut() {
                Some(last) if last.end >= range.start => last.end = last.end.max(range.end),
                _ => ranges.push(range),
            }
        }
        ShardSelector { field, ranges }
    }

    /// The field it hashes.
    pub fn field(&self) -> ShardField {
        self.field
    }

    /// How many ranges the query joins (at least one: asking for nothing is written
    /// as asking for the first hash value).
    pub fn range_count(&self) -> usize {
        self.ranges.len().max(1)
    }

    /// Whether it asks for every object: one range over the whole hash space. A server
    /// that applies it sends what one that ignores it sends.
    pub fn asks_everything(&self) -> bool {
        matches!(&*self.ranges, [only] if *only == (0..SPACE_END))
    }

    /// The `shardSelector` query parameter: `shardRange(field, 'start', 'end')`
    /// joined by ` || `, each bound `0x` and 16 hex digits (`0x10000000000000000` for
    /// the end of the space), the only form the server takes. Asking for nothing
    /// asks for the first hash value only: the server cannot be asked for nothing,
    /// and the key filter drops what it sends anyway.
    pub fn to_query(&self) -> String {
        let field = self.field.path();
        let nothing = 0..1;
        let ranges = if self.ranges.is_empty() {
            std::slice::from_ref(&nothing)
        } else {
            &self.ranges
        };
        let mut query = String::with_capacity(ranges.len() * 70);
        for (i, range) in ranges.iter().enumerate() {
            if i > 0 {
                query.push_str(" || ");
            }
            let _ = write!(
                query,
                "shardRange({field}, '{:#018x}', '{:#018x}')",
                range.start, range.end
            );
        }
        query
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_written_as_the_server_takes_them() {
        let selector = ShardSelector::new(
            ShardField::Uid,
            [
                0xffe0 << 48..SPACE_END,
                0..0x40 << 48,
                0xa0 << 48..0xc0 << 48,
            ],
        );
        assert_eq!(
            selector.to_query(),
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x0040000000000000') || \
             shardRange(object.metadata.uid, '0x00a0000000000000', '0x00c0000000000000') || \
             shardRange(object.metadata.uid, '0xffe0000000000000', '0x10000000000000000')"
        );
        assert_eq!(selector.range_count(), 3);
        assert_eq!(selector.field(), ShardField::Uid);
    }

    #[test]
    fn nothing_is_asked_as_the_first_hash_value() {
        let nothing = ShardSelector::new(ShardField::Namespace, []);
        assert_eq!(
            nothing.to_query(),
            "shardRange(object.metadata.namespace, '0x0000000000000000', '0x0000000000000001')"
        );
        assert_eq!(nothing.range_count(), 1);
        assert!(!nothing.asks_everything());
    }

    #[test]
    fn touching_ranges_merge_and_the_whole_space_asks_everything() {
        let halves = ShardSelector::new(ShardField::Uid, [1 << 63..SPACE_END, 0..1 << 63]);
        assert!(halves.asks_everything());
        assert_eq!(
            halves,
            ShardSelector::new(ShardField::Uid, Some(0..u128::MAX))
        );
        assert_eq!(halves.range_count(), 1);
        let apart = ShardSelector::new(ShardField::Uid, [0..1, 2..SPACE_END]);
        assert!(!apart.asks_everything());
        assert_eq!(apart.range_count(), 2);
    }
}
