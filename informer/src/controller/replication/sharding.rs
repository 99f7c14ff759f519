//! [`Sharded`]: running a controller's workers on this replica's shard of the keys.
//!
//! Every replica runs the controller; its primary cache holds only its shard, its
//! owned caches only the children of that shard (see
//! [`Controller::sharded`](crate::controller::Controller::sharded)), its watched and read caches
//! are whole. Objects leaving the shard leave the primary cache as deletions; they are
//! not remembered for a cleanup (they were not deleted). A worker takes a key only if
//! the [`ShardHandle`] says this member may reconcile it now; any other key is dropped
//! (its owner reconciles it). When keys become this member's (a hand-off completed, a member
//! left, its lease came back), every cached primary among them is queued, and every
//! deletion whose cleanup is due, so a key dropped while it was not yet ours is not
//! forgotten. The tombstones of keys that moved to another member are forgotten: that
//! member may reconcile a new object of the same key, and the cleanup must not run
//! beside it. A running reconcile is dropped when its key must be handed over and the
//! hand-off timeout passed, or before its next step once this member's lease could
//! have expired for the others (checked against the clock: see [`Fence`]).

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::time::Instant;

use super::{Replicate, Workload};
use crate::claim::Claim;
use crate::claim::Fence;
use crate::controller::primary_cache::PrimaryCache;
use crate::controller::reasons::{Reason, Reasons};
use crate::controller::reconciler::{Failure, KeyWork};
use crate::factory::NamedKeyFilter;
use crate::key::ObjectKey;
use crate::shard::ShardHandle;
use crate::workqueue::{Action, WorkQueue};

/// The mode of a controller whose replicas share the keys, each reconciling its own
/// shard (see [`Controller::sharded`](crate::controller::Controller::sharded)).
#[derive(Debug)]
pub struct Sharded {
    shard: ShardHandle,
}

impl Sharded {
    pub(crate) fn new(shard: &ShardHandle) -> Self {
        Self {
            shard: shard.clone(),
        }
    }
}

impl Replicate for Sharded {
    fn cache_filter(&self) -> Option<NamedKeyFilter> {
        Some(NamedKeyFilter::new(
            format!("shard {}/{}", self.shard.group(), self.shard.identity()),
            Arc::new(self.shard.clone()),
        ))
    }

    /// The primary and owned caches keep this member's shard, unknown until the
    /// member's first read of the group: listing before would read the whole
    /// collection to keep none of it, and load the server while replicas started
    /// together are still creating their Leases.
    fn ready(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.shard.read_once())
    }

    #[cfg(feature = "metrics")]
    fn observe(&self, metrics: &crate::metrics::Metrics) {
        metrics.observe_shard(&self.shard);
    }

    /// Runs the workers on the keys the shard gives this replica until `shutdown`
    /// completes or the member stops; then shuts the queue down.
    async fn run_workers<'a, K: Send + Sync + 'static>(
        &'a self,
        workload: Workload<'a, K>,
        shutdown: BoxFuture<'a, ()>,
    ) {
        let Workload {
            runner,
            work,
            primaries,
            reasons,
            controller,
            flush_events,
        } = workload;
        let shard = &self.shard;
        // The member waits for this (up to its hand-off timeout) before it deletes its
        // Lease on shutdown: the events are flushed first.
        let release = shard.hold_release();
        let queue = runner.queue().clone();
        let stopped = {
            let mut shard = shard.clone();
            async move {
                while !shard.is_stopped() {
                    if !shard.changed().await {
                        break;
                    }
                }
                tracing::info!(controller, "the shard member stopped; the controller stops");
            }
        };
        let stop = async {
            tokio::select! {
                () = shutdown => {}
                () = stopped => {}
            }
        };
        let requeue =
            queue_keys_as_they_become_ours(shard.clone(), primaries, &queue, reasons, controller);
        let decide: Decide = {
            let shard = shard.clone();
            let uid_of = primaries.uid_of();
            Arc::new(move |key: &ObjectKey| {
                let hash = shard.hash_of_key(key, || uid_of(key))?;
                Some((key.clone(), hash))
            })
        };
        let run = runner.run(
            gated_by_shard(work, shard.clone(), Arc::clone(reasons), decide),
            stop,
        );
        tokio::select! {
            () = run => {}
            () = requeue => {}
        }
        queue.shutdown();
        if let Some(flush) = flush_events {
            flush.await;
        }
        drop(release);
    }
}

/// Queues every cached primary that this member may now reconcile and could not at
/// the previous assignment (or whose lease lapsed since). Runs until the member is
/// gone.
async fn queue_keys_as_they_become_ours<K>(
    mut shard: ShardHandle,
    primaries: &PrimaryCache<K>,
    queue: &WorkQueue<ObjectKey>,
    reasons: &Reasons,
    controller: &str,
) where
    K: Send + Sync + 'static,
{
    let mut before = shard.assignment();
    let uid_of = primaries.uid_of();
    let hash_by = shard.clone();
    let hash_of = |key: &ObjectKey| hash_by.hash_of_key(key, || uid_of(key));
    loop {
        if !shard.changed().await {
            return std::future::pending().await;
        }
        let now_assigned = shard.assignment();
        let now = Instant::now();
        // A lapse (no renewal within the renew deadline) made every key unworkable
        // for a while: whatever is ours now is queued again.
        let lapsed = before.lapsed_by(now);
        if !lapsed && now_assigned.same_keys_as(&before) {
            // A renewal: only the deadlines moved.
            before = now_assigned;
            continue;
        }
        // Decided outside the tombstones' lock: by uid, a key's hash is read from its
        // tombstone.
        for key in primaries.tombstones.keys() {
            if !hash_of(&key).is_some_and(|hash| now_assigned.in_shard(hash)) {
                primaries.tombstones.take(&key);
            }
        }
        let mut queued = 0usize;
        for key in primaries.keys() {
            let Some(hash) = hash_of(&key) else {
                continue;
            };
            if now_assigned.may_reconcile(hash, now) && (lapsed || !before.may_reconcile(hash, now))
            {
                reasons.queue(queue, ObjectKey::clone(&key), Reason::TookOver);
                queued += 1;
            }
        }
        if queued > 0 {
            tracing::info!(controller, queued, members = ?now_assigned.members, "keys became this member's: queued");
        }
        before = now_assigned;
    }
}

/// What the shard decides a reconciled key by: the key it records as running and
/// claims (the key itself, or a fleet cluster's key: every key of the cluster goes
/// with it) and that key's hash; `None` when nothing says whose the key is (by uid,
/// a key whose object this member has not seen).
pub(crate) type Decide = Arc<dyn Fn(&ObjectKey) -> Option<(ObjectKey, u64)> + Send + Sync>;

/// `work`, for keys this member may reconcile now; dropped before its next step when
/// the member asks (hand-off timeout), or once the key is no longer claimed by this
/// member or its lease could have expired for the others (see [`Fence`]).
pub(crate) fn gated_by_shard(
    work: KeyWork,
    shard: ShardHandle,
    reasons: Arc<Reasons>,
    decide: Decide,
) -> impl Fn(ObjectKey) -> BoxFuture<'static, Result<Action, Failure>> + Send + Sync + 'static {
    move |key: ObjectKey| {
        let shard = shard.clone();
        let work = Arc::clone(&work);
        let reasons = Arc::clone(&reasons);
        let decided = decide(&key);
        Box::pin(async move {
            let Some((decides, hash)) = decided else {
                tracing::debug!(%key, "not reconciled: no object says whose key it is");
                reasons.take(&key);
                return Ok(Action::Done);
            };
            // Recorded as running before the check, so a hand-off that starts now
            // either sees it running or is seen by the check.
            let mut running = shard.enter(&decides, hash);
            let Some(claim) = shard.claim(&decides, hash) else {
                reasons.take(&key);
                return Ok(Action::Done);
            };
            let fence = Fence::claimed(claim.clone());
            let reconciling = fence.run(&key, work(key.clone(), fence.clone()));
            tokio::select! {
                // The member's word first: a process resuming from a pause may find
                // everything ready at once.
                biased;
                () = running.dropped() => {
                    claim.count_dropped_reconcile();
                    tracing::warn!(%key, "reconcile dropped: the key moved to another member");
                    Ok(Action::Done)
                }
                // Dropped because the claim ended: done, queued again when the key is
                // this member's again.
                result = reconciling => result.unwrap_or(Ok(Action::Done)),
            }
        })
    }
}
