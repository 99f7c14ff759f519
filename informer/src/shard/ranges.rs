//! A member's share as the API server can serve it: hash ranges, which a
//! [`ShardSelector`](crate::reflector::ShardSelector) asks for.
//!
//! Kubernetes 1.36 can filter a list or watch by a hash of one field of each object
//! (KEP-5866, feature gate `ShardedListAndWatch`, alpha): the query parameter
//! `shardSelector=shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')` keeps
//! the objects whose field hashes (FNV-1a, 64 bits, over the field's bytes) into
//! `[start, end)` (both written `0x` and 16 hex digits, and `0x10000000000000000` for
//! the end of the space: the server refuses other forms), and ranges can be joined
//! with ` || `. So holding is decided in
//! *buckets*: the top [`BUCKET_BITS`] bits of that hash. Each bucket has a holder
//! ([`View::holder`](super::ring::View::holder)); a member's buckets, merged where they
//! touch, are its ranges, and the server sends it exactly the objects it would keep
//! itself. By uid or namespace the buckets are laid out in a few contiguous runs per
//! member ([`contiguous`](super::contiguous)), so the selector has at most 32 ranges
//! (2.7 KB; a member of two to five members sends 1.1 KB at most).

/// How many top bits of a hash name its bucket: 2,048 buckets. By key each bucket's
/// holder is drawn independently, so a member's share of `1/N` varies by about
/// `sqrt((N - 1) / 2048)` (3% for three members); by uid or namespace every member
/// holds exactly `2,048 / N` buckets (±1) in a few runs.
pub(crate) const BUCKET_BITS: u32 = 11;

/// The number of buckets.
pub(crate) const BUCKETS: u64 = 1 << BUCKET_BITS;

/// The bucket of `hash`: its top [`BUCKET_BITS`] bits.
pub(crate) fn bucket_of(hash: u64) -> u64 {
    hash >> (64 - BUCKET_BITS)
}

/// FNV-1a, 64 bits, over `parts` separated by a byte no name contains (one part: the
/// plain FNV-1a of its bytes, as the API server hashes a shard selector's field).
pub(super) fn fnv1a(parts: &[&[u8]]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            hash = (hash ^ 0xff).wrapping_mul(PRIME);
        }
        for byte in *part {
            hash = (hash ^ u64::from(*byte)).wrapping_mul(PRIME);
        }
    }
    hash
}

/// FNV-1a, 64 bits, over `value`'s bytes: the hash the API server computes of the
/// field a shard selector names.
pub(crate) fn field_hash(value: &str) -> u64 {
    fnv1a(&[value.as_bytes()])
}

/// A run of buckets `[first, end)`, as one hash range `[first << 53, end << 53)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BucketRun {
    pub(crate) first: u64,
    pub(crate) end: u64,
}

impl BucketRun {
    /// The hash range of the run's buckets, `[start, end)` (the end of the space is
    /// `2^64`).
    pub(crate) fn hashes(self) -> std::ops::Range<u128> {
        let shift = 64 - BUCKET_BITS;
        u128::from(self.first) << shift..u128::from(self.end) << shift
    }
}

/// The runs of the buckets `holds` accepts, merged where they touch, in order.
pub(crate) fn runs(holds: impl Fn(u64) -> bool) -> Vec<BucketRun> {
    let mut runs: Vec<BucketRun> = Vec::new();
    for bucket in 0..BUCKETS {
        if !holds(bucket) {
            continue;
        }
        match runs.last_mut() {
            Some(run) if run.end == bucket => run.end = bucket + 1,
            _ => runs.push(BucketRun {
                first: bucket,
                end: bucket + 1,
            }),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reflector::{ShardField, ShardSelector};

    #[test]
    fn the_field_hash_is_fnv1a_64() {
        // FNV-1a's published test vectors: these values are the protocol.
        assert_eq!(field_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(field_hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(field_hash("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn buckets_are_the_top_bits() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        assert_eq!(bucket_of(1 << 53), 1);
        assert_eq!(bucket_of((1 << 53) - 1), 0);
    }

    #[test]
    fn runs_merge_touching_buckets_and_write_exclusive_ends() {
        let runs = runs(|bucket| bucket < 2 || bucket == 5 || bucket == BUCKETS - 1);
        assert_eq!(
            runs,
            [
                BucketRun { first: 0, end: 2 },
                BucketRun { first: 5, end: 6 },
                BucketRun {
                    first: BUCKETS - 1,
                    end: BUCKETS
                },
            ]
        );
        let selector = ShardSelector::new(ShardField::Uid, runs.iter().map(|run| run.hashes()));
        assert_eq!(
            selector.to_query(),
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x0040000000000000') || \
             shardRange(object.metadata.uid, '0x00a0000000000000', '0x00c0000000000000') || \
             shardRange(object.metadata.uid, '0xffe0000000000000', '0x10000000000000000')"
        );
    }

    #[test]
    fn a_range_holds_exactly_the_hashes_of_its_buckets() {
        let hashes = BucketRun { first: 3, end: 4 }.hashes();
        let (start, end) = (hashes.start as u64, hashes.end as u64);
        assert_eq!(bucket_of(start), 3);
        assert_eq!(bucket_of(end - 1), 3);
        assert_eq!(bucket_of(end), 4);
        assert_eq!(
            BucketRun {
                first: 0,
                end: BUCKETS
            }
            .hashes(),
            0..1 << 64
        );
    }
}
