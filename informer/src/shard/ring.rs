//! Rendezvous (highest random weight) hashing: which member of a [`View`] owns a key.
//!
//! A key's hash ([`ShardBy`](super::ShardBy) says of what) falls into one of 2,048
//! buckets (its top bits, see [`ranges`](super::ranges)). Every member scores every
//! bucket; the member with the highest score owns it, and every key in it. When a
//! member leaves, only its buckets move (each to the member with the next-highest
//! score); when one joins, it takes about `1/N` of each other member's. No other
//! bucket moves, and no coordination beyond agreeing on the member list is needed.
//! Deciding by buckets rather than by each hash is what lets a member's share be
//! written as a few hundred hash ranges, which the API server can serve.
//!
//! The hash is part of the protocol: replicas of different builds (a rolling upgrade)
//! must agree on every owner. So it is written out here (FNV-1a over the key or the
//! field, the bucket mixed with the member's hash by a SplitMix64 finaliser) rather
//! than std's `DefaultHasher`, whose output may change between Rust releases.

use std::fmt;
use std::sync::Arc;

use super::ranges::{BucketRun, bucket_of, runs};

/// FNV-1a, 64 bits, over `parts` separated by a byte no name contains.
fn fnv1a(parts: &[&[u8]]) -> u64 {
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

/// SplitMix64's finaliser: a bijection that spreads every input bit over the output.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The hash of an object key (`namespace`, `name`), computed once per key: FNV-1a,
/// then mixed, since FNV-1a's top bits (which pick the bucket) hardly change with the
/// last bytes, and keys often differ only there (`web-1`, `web-2`).
pub(crate) fn key_hash(namespace: Option<&str>, name: &str) -> u64 {
    mix(fnv1a(&[
        namespace.unwrap_or("").as_bytes(),
        name.as_bytes(),
    ]))
}

/// One member of a view: its identity and its hash.
#[derive(Clone, PartialEq, Eq)]
struct Member {
    identity: Arc<str>,
    hash: u64,
}

/// A set of member identities, sorted: who shares the keys.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct View {
    members: Vec<Member>,
}

impl View {
    /// The view of these identities (duplicates and empty names dropped).
    pub(crate) fn of<I, S>(identities: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut members: Vec<Member> = identities
            .into_iter()
            .filter(|identity| !identity.as_ref().is_empty())
            .map(|identity| Member {
                identity: Arc::from(identity.as_ref()),
                hash: mix(fnv1a(&[identity.as_ref().as_bytes()])),
            })
            .collect();
        members.sort_by(|a, b| a.identity.cmp(&b.identity));
        members.dedup_by(|a, b| a.identity == b.identity);
        Self { members }
    }

    /// The view written in a Lease annotation: identities joined by commas.
    pub(crate) fn parse(annotation: &str) -> Self {
        Self::of(annotation.split(',').map(str::trim))
    }

    /// The annotation form of this view.
    pub(crate) fn to_annotation(&self) -> String {
        self.identities().collect::<Vec<_>>().join(",")
    }

    /// The members' identities, sorted.
    pub(crate) fn identities(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|member| &*member.identity)
    }

    /// The owner of the key whose hash is `key`: the member with the highest score
    /// for its bucket (ties, which need a 64-bit collision, go to the smaller
    /// identity). `None` for an empty view.
    pub(crate) fn owner(&self, key: u64) -> Option<&str> {
        self.bucket_owner(bucket_of(key))
    }

    /// The owner of `bucket`.
    fn bucket_owner(&self, bucket: u64) -> Option<&str> {
        let mut best: Option<(u64, &Member)> = None;
        for member in &self.members {
            let score = mix(bucket ^ member.hash);
            if best.is_none_or(|(top, _)| score > top) {
                best = Some((score, member));
            }
        }
        best.map(|(_, member)| &*member.identity)
    }

    /// Whether `identity` owns the key whose hash is `key`.
    pub(crate) fn assigns(&self, identity: &str, key: u64) -> bool {
        self.owner(key) == Some(identity)
    }

    /// The bucket runs `identity` owns: its share as hash ranges.
    pub(crate) fn runs_of(&self, identity: &str) -> Vec<BucketRun> {
        runs(|bucket| self.bucket_owner(bucket) == Some(identity))
    }
}

impl fmt::Debug for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.identities()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn keys(n: usize) -> Vec<u64> {
        (0..n)
            .map(|i| key_hash(Some("default"), &format!("object-{i}")))
            .collect()
    }

    #[test]
    fn the_hash_is_fixed_across_builds() {
        // Replicas of different versions must agree: these values are the protocol.
        assert_eq!(key_hash(None, ""), mix(0xaf64_724c_8602_eb6e));
        assert_eq!(
            key_hash(Some("default"), "web"),
            key_hash(Some("default"), "web")
        );
        assert_ne!(key_hash(Some("a"), "bc"), key_hash(Some("ab"), "c"));
        let view = View::of(["replica-a", "replica-b", "replica-c"]);
        let owner = view.owner(key_hash(Some("default"), "web")).unwrap();
        assert_eq!(owner, view.owner(key_hash(Some("default"), "web")).unwrap());
    }

    #[test]
    fn keys_spread_evenly_over_members() {
        let view = View::of(["a", "b", "c", "d"]);
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for key in keys(40_000) {
            *counts.entry(view.owner(key).unwrap()).or_default() += 1;
        }
        for (member, count) in counts {
            assert!((9_000..11_000).contains(&count), "{member}: {count}");
        }
    }

    #[test]
    fn a_join_or_leave_moves_only_about_one_nth_of_the_keys() {
        let three = View::of(["a", "b", "c"]);
        let four = View::of(["a", "b", "c", "d"]);
        let all = keys(30_000);
        let moved: Vec<u64> = all
            .iter()
            .copied()
            .filter(|key| three.owner(*key) != four.owner(*key))
            .collect();
        // Every moved key moved to the newcomer; about a quarter moved.
        assert!(moved.iter().all(|key| four.owner(*key) == Some("d")));
        assert!((6_500..8_500).contains(&moved.len()), "{}", moved.len());
        // A leave moves exactly the leaver's keys.
        let two = View::of(["a", "c"]);
        for key in all {
            if three.owner(key) != Some("b") {
                assert_eq!(three.owner(key), two.owner(key));
            }
        }
    }

    #[test]
    fn a_members_runs_hold_exactly_the_hashes_it_owns() {
        let view = View::of(["a", "b", "c"]);
        let runs: Vec<Vec<BucketRun>> = ["a", "b", "c"].map(|m| view.runs_of(m)).into();
        let total: u64 = runs.iter().flatten().map(|run| run.end - run.first).sum();
        assert_eq!(total, crate::shard::ranges::BUCKETS);
        for key in keys(3_000) {
            let owner = view.owner(key).unwrap();
            let index = ["a", "b", "c"].iter().position(|m| *m == owner).unwrap();
            let bucket = bucket_of(key);
            assert!(
                runs[index]
                    .iter()
                    .any(|r| (r.first..r.end).contains(&bucket))
            );
        }
        // A selector a server takes: a few hundred ranges, well under 100,000 characters.
        for member in &runs {
            let selector = crate::shard::ranges::selector("object.metadata.uid", member);
            assert!(selector.len() < 50_000, "{}", selector.len());
        }
    }

    #[test]
    fn views_parse_sort_and_dedup() {
        let view = View::parse("c, a,,b,a");
        assert_eq!(view.to_annotation(), "a,b,c");
        assert_eq!(View::parse("").identities().count(), 0);
        assert_eq!(View::default().owner(1), None);
        assert_eq!(View::of(["solo"]).owner(42), Some("solo"));
    }
}
