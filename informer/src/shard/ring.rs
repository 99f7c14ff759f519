//! Which member of a [`View`] holds a key: rendezvous (highest random weight) hashing
//! over 2,048 buckets, laid out one of two ways ([`Layout`]).
//!
//! A key's hash ([`ShardBy`](super::ShardBy) says of what) falls into one of 2,048
//! buckets (its top bits, see [`ranges`](super::ranges)). How the buckets are shared
//! out depends on whether the API server must be told a member's share:
//!
//! - **[`Layout::PerBucket`]** (by key: the server is never told). Every member scores
//!   every bucket; the highest score holds it. When a member leaves, only its buckets
//!   move (each to the member with the next-highest score); when one joins, it takes
//!   about `1/N` of each other member's. No other bucket moves. A member's share is
//!   scattered over the whole hash space: several hundred runs of buckets.
//! - **[`Layout::Ranges`]** (by uid or namespace: the share is sent as a shard
//!   selector). The buckets form 32 groups of 64 contiguous buckets. Every member
//!   scores every group (rendezvous hashing again), and the offers are taken from the
//!   highest score down: a group's free buckets go, from its start, to the member
//!   whose offer it is, as far as the member's quota allows (2,048 / N buckets, the
//!   first `2,048 % N` members by identity one more). So every member holds exactly
//!   its quota (±1 bucket), in at most 32 contiguous runs (on average 6 to 9 for
//!   two to five members, 13 at most), which a short selector can name. Where a
//!   member's quota runs out, its next groups go to their next-highest offer: so a
//!   join or a leave moves, besides what has to move, a few more buckets between the
//!   others (in all, on average 1.0 to 1.4 times the `1/N` that must move, for two to
//!   five members).
//!   The exact "only the leaver's buckets move" of the per-bucket layout is what a
//!   short selector costs: no layout can give every member an even share in a few
//!   ranges and keep it (see docs/replicas.md).
//!
//! Either way the holder is a function of the member list alone: every member that
//! reads the same members computes the same holder for every bucket, which is what
//! hand-offs and fencing rest on.
//!
//! The hash is part of the protocol: replicas of different builds (a rolling upgrade)
//! must agree on every holder. So it is written out here (FNV-1a over the key or the
//! field, a bucket or group mixed with the member's hash by a SplitMix64 finaliser)
//! rather than std's `DefaultHasher`, whose output may change between Rust releases.

use std::fmt;
use std::sync::Arc;

use super::ranges::{BucketRun, bucket_of, fnv1a, runs};

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

/// How a view shares the buckets out (see the [module documentation](self)). Part
/// of the protocol, like the hash: [`ShardBy`](super::ShardBy) picks it, and every
/// member of a group uses the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Layout {
    /// Each bucket to the member with the highest score for it: a scattered share,
    /// and exactly the leaver's buckets move on a leave. By key.
    #[default]
    PerBucket,
    /// Each member its quota of buckets in a few contiguous runs, what a shard
    /// selector can name ([`contiguous`](super::contiguous)). By uid or namespace.
    Ranges,
}

/// One member of a view: its identity and its hash.
#[derive(Clone, PartialEq, Eq)]
struct Member {
    identity: Arc<str>,
    hash: u64,
}

/// A set of member identities, sorted: who shares the keys, and how.
#[derive(Clone, Default)]
pub(crate) struct View {
    members: Vec<Member>,
    layout: Layout,
    /// Under [`Layout::Ranges`], the holder of every bucket (an index into `members`),
    /// computed once; empty otherwise.
    holders: Arc<[u32]>,
}

impl PartialEq for View {
    /// The same members, laid out the same way (the holders follow from them).
    fn eq(&self, other: &Self) -> bool {
        self.members == other.members && self.layout == other.layout
    }
}

impl Eq for View {}

impl View {
    /// The view of these identities (duplicates and empty names dropped), laid out
    /// by `layout`.
    pub(crate) fn of<I, S>(layout: Layout, identities: I) -> Self
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
        if members.is_empty() {
            // No one holds anything, however laid out: all empty views are equal.
            return Self::default();
        }
        let holders = match layout {
            Layout::PerBucket => Arc::default(),
            Layout::Ranges => {
                let hashes: Vec<u64> = members.iter().map(|member| member.hash).collect();
                // A group is scored as a bucket is.
                super::contiguous::holders(&hashes, |group, hash| mix(group ^ hash)).into()
            }
        };
        Self {
            members,
            layout,
            holders,
        }
    }

    /// The view written in a Lease annotation (identities joined by commas), laid
    /// out by `layout`.
    pub(crate) fn parse(layout: Layout, annotation: &str) -> Self {
        Self::of(layout, annotation.split(',').map(str::trim))
    }

    /// The annotation form of this view.
    pub(crate) fn to_annotation(&self) -> String {
        self.identities().collect::<Vec<_>>().join(",")
    }

    /// The members' identities, sorted.
    pub(crate) fn identities(&self) -> impl Iterator<Item = &str> {
        self.members.iter().map(|member| &*member.identity)
    }

    /// The holder of the key whose hash is `key`: the holder of its bucket. `None` for
    /// an empty view.
    pub(crate) fn holder(&self, key: u64) -> Option<&str> {
        self.bucket_owner(bucket_of(key))
    }

    /// The holder of `bucket`: under [`Layout::PerBucket`] the member with the highest
    /// score for it (ties, which need a 64-bit collision, go to the smaller
    /// identity); under [`Layout::Ranges`] as computed for the view.
    fn bucket_owner(&self, bucket: u64) -> Option<&str> {
        if self.layout == Layout::Ranges {
            let index = usize::try_from(bucket).ok()?;
            let holder = usize::try_from(*self.holders.get(index)?).ok()?;
            return self.members.get(holder).map(|member| &*member.identity);
        }
        let mut best: Option<(u64, &Member)> = None;
        for member in &self.members {
            let score = mix(bucket ^ member.hash);
            if best.is_none_or(|(top, _)| score > top) {
                best = Some((score, member));
            }
        }
        best.map(|(_, member)| &*member.identity)
    }

    /// Whether `identity` holds the key whose hash is `key`.
    pub(crate) fn assigns(&self, identity: &str, key: u64) -> bool {
        self.holder(key) == Some(identity)
    }

    /// The bucket runs `identity` holds: its share as hash ranges, in order.
    pub(crate) fn runs_of(&self, identity: &str) -> Vec<BucketRun> {
        if self.layout == Layout::Ranges {
            let Some(index) = self
                .members
                .iter()
                .position(|member| &*member.identity == identity)
            else {
                return Vec::new();
            };
            return runs(|bucket| {
                usize::try_from(bucket)
                    .ok()
                    .and_then(|bucket| self.holders.get(bucket))
                    .is_some_and(|holder| usize::try_from(*holder).ok() == Some(index))
            });
        }
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
    use crate::shard::ranges::BUCKETS;

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
        let view = View::of(Layout::PerBucket, ["replica-a", "replica-b", "replica-c"]);
        let holder = view.holder(key_hash(Some("default"), "web")).unwrap();
        assert_eq!(
            holder,
            view.holder(key_hash(Some("default"), "web")).unwrap()
        );
    }

    #[test]
    fn keys_spread_evenly_over_members() {
        for layout in [Layout::PerBucket, Layout::Ranges] {
            let view = View::of(layout, ["a", "b", "c", "d"]);
            let mut counts: HashMap<&str, usize> = HashMap::new();
            for key in keys(40_000) {
                *counts.entry(view.holder(key).unwrap()).or_default() += 1;
            }
            for (member, count) in counts {
                assert!((9_000..11_000).contains(&count), "{member}: {count}");
            }
        }
    }

    #[test]
    fn a_join_or_leave_moves_only_about_one_nth_of_the_keys() {
        let three = View::of(Layout::PerBucket, ["a", "b", "c"]);
        let four = View::of(Layout::PerBucket, ["a", "b", "c", "d"]);
        let all = keys(30_000);
        let moved: Vec<u64> = all
            .iter()
            .copied()
            .filter(|key| three.holder(*key) != four.holder(*key))
            .collect();
        // Every moved key moved to the newcomer; about a quarter moved.
        assert!(moved.iter().all(|key| four.holder(*key) == Some("d")));
        assert!((6_500..8_500).contains(&moved.len()), "{}", moved.len());
        // A leave moves exactly the leaver's keys.
        let two = View::of(Layout::PerBucket, ["a", "c"]);
        for key in all {
            if three.holder(key) != Some("b") {
                assert_eq!(three.holder(key), two.holder(key));
            }
        }
    }

    #[test]
    fn a_members_runs_hold_exactly_the_hashes_it_owns() {
        for layout in [Layout::PerBucket, Layout::Ranges] {
            let view = View::of(layout, ["a", "b", "c"]);
            let runs: Vec<Vec<BucketRun>> = ["a", "b", "c"].map(|m| view.runs_of(m)).into();
            let total: u64 = runs.iter().flatten().map(|run| run.end - run.first).sum();
            assert_eq!(total, BUCKETS);
            for key in keys(3_000) {
                let holder = view.holder(key).unwrap();
                let index = ["a", "b", "c"].iter().position(|m| *m == holder).unwrap();
                let bucket = bucket_of(key);
                assert!(
                    runs[index]
                        .iter()
                        .any(|r| (r.first..r.end).contains(&bucket))
                );
            }
            // Scattered, a member of three has hundreds of runs; in ranges, a few.
            for member in &runs {
                match layout {
                    Layout::PerBucket => assert!(member.len() > 200, "{}", member.len()),
                    Layout::Ranges => assert!(member.len() <= 16, "{}", member.len()),
                }
            }
        }
    }

    #[test]
    fn views_parse_sort_and_dedup() {
        for layout in [Layout::PerBucket, Layout::Ranges] {
            let view = View::parse(layout, "c, a,,b,a");
            assert_eq!(view.to_annotation(), "a,b,c");
            assert_eq!(View::parse(layout, "").identities().count(), 0);
            assert_eq!(View::parse(layout, ""), View::default());
            assert_eq!(View::default().holder(1), None);
            assert_eq!(View::of(layout, ["solo"]).holder(42), Some("solo"));
            assert_eq!(View::of(layout, ["solo"]).runs_of("solo").len(), 1);
            assert!(View::of(layout, ["solo"]).runs_of("other").is_empty());
        }
        // The same members laid out otherwise are another view.
        assert_ne!(
            View::of(Layout::PerBucket, ["a", "b"]),
            View::of(Layout::Ranges, ["a", "b"])
        );
    }
}
