//! [`Layout::Ranges`](super::ring::Layout::Ranges): every member its quota of the
//! 2,048 buckets, in a few contiguous runs, so that its share is a shard selector of
//! a few ranges (a kilobyte or so) rather than hundreds (30 KB and more, past the
//! 8 KB request line many proxies take).
//!
//! The buckets form [`GROUPS`] groups of [`GROUP_BUCKETS`] contiguous buckets. Each
//! member scores each group as rendezvous hashing scores a bucket (its hash mixed
//! with the group's), and every (member, group) pair is an *offer*. The offers are
//! taken from the highest score down: an offer gives its member as many of the
//! group's free buckets as its quota has left, from the group's first free bucket
//! on. A member's quota is `2,048 / N` buckets, one more for the first `2,048 % N`
//! members by identity. The result:
//!
//! - **Even to the bucket.** Every member holds exactly its quota (the offers run out
//!   only once every bucket is owned: a group left with free buckets at the end would
//!   mean every member's quota was used, so all 2,048 buckets are owned).
//! - **Few runs.** A member takes one contiguous piece of each group it takes
//!   anything of: at most 32 runs, on average 6 to 9 for two to five members (13 at
//!   most), a few (or one) for more.
//! - **About `1/N` moves.** A member's high offers win the same groups in every view
//!   it is part of, as in rendezvous hashing; only where a quota runs out does a
//!   group go to its next offer, and that point moves a little when a member joins
//!   or leaves. On average, a join or a leave moves 1.0 to 1.4 times the `1/N` of
//!   the buckets that must move, for two to five members (tested below).
//! - **The same everywhere.** The holders are a function of the members' identities
//!   alone (the offers are sorted by score, then identity, then group: no ties left).

use super::ranges::BUCKETS;

/// How many groups of contiguous buckets members are ranked for: at most this many
/// runs (and hash ranges) per member.
pub(crate) const GROUPS: usize = 32;

/// Buckets per group.
pub(crate) const GROUP_BUCKETS: usize = BUCKETS as usize / GROUPS;

/// The holder of every bucket, as an index into `hashes`: the members' hashes, in the
/// order of their identities, each scoring group `g` as `score(g, hash)` (rendezvous
/// hashing's score, which [`ring`](super::ring) keeps with the bucket's). Empty
/// without members.
pub(crate) fn holders(hashes: &[u64], score: impl Fn(u64, u64) -> u64) -> Vec<u32> {
    let buckets = BUCKETS as usize;
    let count = hashes.len();
    if count == 0 {
        return Vec::new();
    }
    let mut quota: Vec<usize> = (0..count)
        .map(|member| buckets / count + usize::from(member < buckets % count))
        .collect();
    let mut offers: Vec<(u64, usize, usize)> = hashes
        .iter()
        .enumerate()
        .flat_map(|(member, hash)| {
            let score = &score;
            (0..GROUPS).map(move |group| (score(group as u64, *hash), member, group))
        })
        .collect();
    offers.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut taken = [0usize; GROUPS];
    let mut holders = vec![0u32; buckets];
    for (_, member, group) in offers {
        let take = (GROUP_BUCKETS - taken[group]).min(quota[member]);
        if take == 0 {
            continue;
        }
        let first = group * GROUP_BUCKETS + taken[group];
        holders[first..first + take].fill(u32::try_from(member).unwrap_or(u32::MAX));
        taken[group] += take;
        quota[member] -= take;
    }
    holders
}

#[cfg(test)]
mod tests;
