//! [`ShardStats`]: what a member counts as it runs, for logs and for the
//! `informer_shard_*` metrics (feature `metrics`).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::reflector::ShardSelector;

/// The counters a [`ShardMember`](super::ShardMember) keeps, shared with its handles.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    fenced_members: AtomicU64,
    rejoins: AtomicU64,
    dropped_reconciles: AtomicU64,
    refused_writes: AtomicU64,
    request_errors: AtomicU64,
}

impl Counters {
    /// This member deleted the Lease of a member whose lease had expired.
    pub(crate) fn fenced_member(&self) {
        self.fenced_members.fetch_add(1, Ordering::Relaxed);
    }

    /// This member's own Lease was deleted by another member: it joins again.
    pub(crate) fn rejoined(&self) {
        self.rejoins.fetch_add(1, Ordering::Relaxed);
    }

    /// Running reconciles were dropped before their next step.
    pub(crate) fn dropped(&self, reconciles: usize) {
        let reconciles = u64::try_from(reconciles).unwrap_or(u64::MAX);
        self.dropped_reconciles
            .fetch_add(reconciles, Ordering::Relaxed);
    }

    /// A write on this member's behalf was refused before it was sent.
    pub(crate) fn refused_write(&self) {
        self.refused_writes.fetch_add(1, Ordering::Relaxed);
    }

    /// A request to the API server failed (it is retried).
    pub(crate) fn request_failed(&self) {
        self.request_errors.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(
        &self,
        members: usize,
        active: bool,
        changes: u64,
        selector: Option<&ShardSelector>,
    ) -> ShardStats {
        ShardStats {
            members,
            active,
            membership_changes: changes,
            server_selector_ranges: selector.map(ShardSelector::range_count),
            server_selector_bytes: selector.map(|s| s.to_query().len()),
            fenced_members: self.fenced_members.load(Ordering::Relaxed),
            rejoins: self.rejoins.load(Ordering::Relaxed),
            dropped_reconciles: self.dropped_reconciles.load(Ordering::Relaxed),
            refused_writes: self.refused_writes.load(Ordering::Relaxed),
            request_errors: self.request_errors.load(Ordering::Relaxed),
        }
    }
}

/// A member's figures at one moment
/// ([`ShardHandle::stats`](super::ShardHandle::stats)). The counters count from the
/// member's start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShardStats {
    /// Members in the group as last read, this one included once its Lease exists.
    pub members: usize,
    /// Whether this member holds its lease and may reconcile keys
    /// ([`ShardHandle::is_active`](super::ShardHandle::is_active)).
    pub active: bool,
    /// By uid or namespace, how many hash ranges this member's share of the members
    /// last read is, as its shard selector sends it (at most 32; `None` by key, which
    /// sends none).
    pub server_selector_ranges: Option<usize>,
    /// By uid or namespace, the length in bytes of the shard selector this member's
    /// sharded caches send: at most 2,748 (3,398 in the URL, URL-encoded), and for a
    /// member of a group of two to five about 1,100 at most (1,400 in the URL);
    /// `None` by key.
    pub server_selector_bytes: Option<usize>,
    /// How many times a read of the group found other members than known before
    /// (the first read counts): each moves keys, and makes a filtered informer
    /// relist.
    pub membership_changes: u64,
    /// Leases of other members that this member deleted because they had not been
    /// renewed for a lease duration (a crashed or cut-off member).
    pub fenced_members: u64,
    /// Times this member found its own Lease deleted by another member (it had not
    /// renewed for a lease duration: a pause, or a partition) and joined again.
    pub rejoins: u64,
    /// Reconciles of a sharded controller on this member that were dropped before
    /// their next step, whatever dropped them: their key moved away and they were
    /// still running at the hand-off timeout, the member was fenced, its lease may
    /// have expired for the others (a pause, a partition), or a shutdown outlasted
    /// the hand-off timeout.
    pub dropped_reconciles: u64,
    /// Writes through a sharded controller's [`Context`](crate::controller::Context)
    /// refused before they were sent, because this member's lease may have expired
    /// for the others or the key was no longer its own
    /// ([`Fenced`](crate::controller::Fenced)).
    pub refused_writes: u64,
    /// Requests to the API server that failed (each is retried).
    pub request_errors: u64,
}
