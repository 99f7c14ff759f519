//! Sharding a controller's keys across replicas, on `coordination.k8s.io/v1` Leases.
//!
//! Leader election ([`leader`](crate::leader)) makes one replica of N work. Sharding
//! makes all N work, each on its own part of the keys, for a controller that outgrows
//! one process. The API server is the only referee: every replica keeps one Lease in
//! a namespace, named `{group}-{identity}` and labelled [`GROUP_LABEL`]` = {group}`,
//! and reads the others'.
//!
//! # Who holds a key
//!
//! A key's hash (of its namespace and name, its namespace, or its object's uid: see
//! [`ShardBy`]) falls in one of 2,048 buckets, and every bucket has one holder,
//! computed from the member list alone, so every member that read the same members
//! agrees on it. By key, the holder is chosen by rendezvous (highest random weight) hashing per
//! bucket: every member scores every bucket with a fixed hash and the highest score
//! wins; a member joining takes about `1/N` of each other member's keys, a member
//! leaving gives away only its own. By uid or namespace, where the API server is sent
//! the member's share as a shard selector (Kubernetes 1.36's sharded list and watch),
//! each member holds exactly `1/N` of the buckets in a few contiguous ranges, ranked
//! by rendezvous hashing over 32 groups of buckets: the selector stays short (at most
//! 32 ranges), and a join or a leave moves about `1/N` of the keys (1.0 to 1.4 times
//! what must move, for two to five members: a few keys may move between members that
//! stay). The cache of a sharded controller's primary type keeps only the member's
//! shard, filtered before objects are decoded ([`ShardHandle`] is a
//! [`KeyFilter`](crate::reflector::KeyFilter)), and relists when the members change;
//! where the server filters, the member receives only its share.
//!
//! # The protocol
//!
//! A key must never be reconciled by two replicas at once, although replicas see
//! membership changes at different moments. Each member, every retry period (2 s),
//! and again when a lease it watches expires:
//!
//! 1. **Writes** its Lease (a new `renewTime`, under the resourceVersion it last
//!    wrote), *publishing* in the [`VIEW_ANNOTATION`] the view it acts under: the
//!    members it shares keys with. A member claims exactly the keys it holds in its
//!    published view.
//! 2. **Reads** every Lease of the group, from etcd (a list, not a cache), so the
//!    read reflects every write that completed before it. The Leases present are the
//!    *target view*.
//! 3. **Fences** a member whose Lease has not changed for its lease duration, as this
//!    member observed on its own clock: it deletes that Lease *under the
//!    resourceVersion it observed*, so a renewal that landed meanwhile makes the
//!    delete fail (409) and the member stays.
//! 4. **Works** on key `k` only if it holds `k` in the target view *and* in its
//!    published view, and no other member's published view (as just read) claims
//!    `k` for that member.
//! 5. **Hands over.** When the target view differs from its published view, it stops
//!    taking keys it no longer holds, waits until their reconciles end (dropping them
//!    after [`handoff_timeout`](ShardConfig::handoff_timeout)), and only then
//!    publishes the target view (at once, not a retry period later), releasing them.
//!
//! A member that has just created its Lease (joining, or again after being fenced)
//! waits one retry period before its first read, so that replicas started together
//! find each other at once instead of each owning every key for a round (and
//! listing the whole collection into a cache meant for its shard).
//!
//! On a clean shutdown a member stops taking keys, lets its reconciles end (up to the
//! hand-off timeout), lets its sharded controllers write their pending Events (as
//! long again at most), ends its membership (no claim it made holds any more) and
//! deletes its Lease: the others take its keys at their next read.
//!
//! **Why two members never work on one key.** Say A and B both work on `k`. Each
//! published a view claiming `k` and then read the group before starting; say A
//! published first. B's read came after B's publication, so after A's, while A was
//! still working on `k`: A's Lease then showed a claim on `k` (A releases a key only
//! after its reconciles ended) and B would not have started, unless A's Lease was
//! gone by then. It is gone only if A deleted it (after its reconciles ended) or
//! someone fenced it, which needs a lease duration without an observed renewal:
//! A's own renew deadline (counted from when it *sent* its last successful renewal,
//! earlier than anyone observed it) is shorter, so A had stopped working by then.
//! A write that landed after the fencer's read makes the fencing delete fail.
//!
//! # Failure cases
//!
//! - **Crash (SIGKILL).** The member's Lease stops changing; a lease duration after
//!   another member last saw it change, that member fences it and publishes a view
//!   without it at once. Every member reads the group again the moment a lease it
//!   watches expires (not at its next retry period), so the killed member's keys
//!   are taken over within the lease duration plus one retry period (the last
//!   renewal is seen up to one retry period late) and a few requests.
//! - **Partition.** A member cut off from the API server cannot renew: it stops
//!   taking keys at its renew deadline and drops running reconciles halfway from
//!   there to its lease expiry (the lease duration after its last successful renewal
//!   was *sent*), before the others can fence it. When it is back, its renewal finds its Lease fenced
//!   (404) and it joins again as a new member, waiting for the others to release
//!   its keys.
//! - **Paused process.** A member frozen longer than its lease (a debugger, a
//!   stopped VM) may resume after it was fenced. Its deadlines are checked against
//!   the clock (with the time a suspended VM's monotonic clock missed added) before
//!   every key, so it takes no new key; a reconcile already past that check runs
//!   until its next await, and work claimed under the membership that was fenced
//!   never goes on under the next. As with leader election, a write already sent can
//!   still land late: writes that must never come from a replica that lost its keys
//!   should be conditional (a resourceVersion precondition).
//! - **Clock skew.** Other members' timestamps are never compared with ours: a
//!   Lease's expiry is timed on this member's monotonic clock from the moment it saw
//!   the Lease change. Work stops at the drop deadline, halfway from the renew
//!   deadline to the lease's expiry: a difference in clock *rate* larger than
//!   `lease_duration` over that (15 s / 12.5 s = 1.2 by default) is not tolerated.
//! - **Duplicate identities.** Two live processes with one identity share one Lease
//!   and would both work: identities must be unique (the default one is).
//!
//! Each of these leaves a trace in [`ShardHandle::stats`]: members fenced, rejoins
//! after being fenced, reconciles dropped, failed requests (with the `metrics`
//! feature, also on `/metrics`: `Metrics::observe_shard`).
//!
//! ```no_run
//! use informer::shard::{ShardConfig, ShardMember};
//!
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let member = ShardMember::new(client, ShardConfig::new("default", "backup-controller"))?;
//! let shard = member.handle();
//! let membership = tokio::spawn(member.run(informer::shutdown_signal()));
//! let key = informer::key::ObjectKey::new(Some("default".into()), "nightly");
//! println!("members {:?}; mine now: {}", shard.members(), shard.may_reconcile(&key));
//! membership.await?;
//! # Ok(())
//! # }
//! ```

mod assignment;
mod config;
mod contiguous;
mod error;
mod handle;
mod in_flight;
mod key_claim;
mod lease;
mod member;
mod ranges;
mod ring;
mod stats;

pub use config::{GROUP_LABEL, ShardBy, ShardConfig, VIEW_ANNOTATION};
pub use error::ShardError;
pub use handle::ShardHandle;
pub use member::ShardMember;
pub use stats::ShardStats;

/// The hash of `key`'s namespace and name, as [`ShardBy::Key`] decides: how a fleet
/// shares its clusters out by name, whatever its member decides keys by.
pub(crate) fn name_hash(key: &crate::key::ObjectKey) -> u64 {
    ring::key_hash(key.namespace.as_deref(), &key.name)
}

/// Compile-time checks that the public types (and the run future) cross threads.
#[cfg(test)]
mod send_sync {
    use super::*;

    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>(_: &T) {}

    const _: fn() = || {
        send_sync::<ShardConfig>();
        send_sync::<ShardHandle>();
        send_sync::<ShardError>();
        send_sync::<ShardStats>();
    };

    #[allow(dead_code)]
    fn run_is_send(member: ShardMember) {
        send(&member.run(std::future::pending()));
    }
}
