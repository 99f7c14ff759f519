//! Running a controller's workers on this replica's shard of the keys.
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

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::time::Instant;

use super::fence::Fence;
use crate::controller::primaries::Primaries;
use crate::controller::reasons::{Reason, Reasons};
use crate::key::ObjectKey;
use crate::shard::ShardHandle;
use crate::workqueue::{Action, Runner};

/// Runs `runner`'s workers on the keys `shard` gives this replica until `shutdown`
/// completes or the member stops; then shuts the queue down.
pub(crate) async fn run_sharded<K, F, Fut, E, S>(
    runner: Runner<ObjectKey>,
    reconcile: F,
    shard: &ShardHandle,
    primaries: &Primaries<K>,
    reasons: &Arc<Reasons>,
    controller: &str,
    shutdown: S,
) where
    K: Send + Sync + 'static,
    F: Fn(ObjectKey, Fence) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: fmt::Display + Send + 'static,
    S: Future<Output = ()> + Send,
{
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
    let run = runner.run(
        gated(reconcile, shard.clone(), Arc::clone(reasons), None),
        stop,
    );
    tokio::select! {
        () = run => {}
        () = requeue => {}
    }
    queue.shutdown();
}

/// Queues every cached primary that this member may now reconcile and could not at
/// the previous assignment (or whose lease lapsed since). Runs until the member is
/// gone.
async fn queue_keys_as_they_become_ours<K>(
    mut shard: ShardHandle,
    primaries: &Primaries<K>,
    queue: &crate::workqueue::WorkQueue<ObjectKey>,
    reasons: &Reasons,
    controller: &str,
) where
    K: Send + Sync + 'static,
{
    let mut before = shard.assignment();
    loop {
        if !shard.changed().await {
            return std::future::pending().await;
        }
        let now_assigned = shard.assignment();
        let now = Instant::now();
        // A lapse (no renewal within the renew deadline) made every key unworkable
        // for a while: whatever is ours now is queued again.
        let lapsed = now >= before.renew_deadline || !before.active;
        if !lapsed && now_assigned.same_keys_as(&before) {
            // A renewal: only the deadlines moved.
            before = now_assigned;
            continue;
        }
        primaries
            .tombstones
            .retain_keys(|key| now_assigned.keeps(crate::shard::key_hash_of(key)));
        let mut queued = 0usize;
        for key in primaries.keys() {
            let hash = crate::shard::key_hash_of(&key);
            if now_assigned.may_work(hash, now) && (lapsed || !before.may_work(hash, now)) {
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

/// `reconcile`, for keys this member may reconcile now; dropped before its next step
/// when the member asks (hand-off timeout), or once the key is no longer claimed by
/// this member or its lease could have expired for the others (see [`Fence`]).
///
/// The shard decides by `scope` when given (a fleet cluster's key: every key of the
/// cluster goes with it), else by each reconciled key.
pub(super) fn gated<F, Fut, E>(
    reconcile: F,
    shard: ShardHandle,
    reasons: Arc<Reasons>,
    scope: Option<ObjectKey>,
) -> impl Fn(ObjectKey) -> BoxFuture<'static, Result<Action, E>> + Send + Sync + 'static
where
    F: Fn(ObjectKey, Fence) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: Send + 'static,
{
    let reconcile = Arc::new(reconcile);
    move |key: ObjectKey| {
        let shard = shard.clone();
        let reconcile = Arc::clone(&reconcile);
        let reasons = Arc::clone(&reasons);
        let decides = scope.clone().unwrap_or_else(|| key.clone());
        Box::pin(async move {
            // Recorded as running before the check, so a hand-off that starts now
            // either sees it running or is seen by the check.
            let mut running = shard.enter(&decides);
            if !shard.may_reconcile(&decides) {
                reasons.take(&key);
                return Ok(Action::Done);
            }
            let fence = Fence::Shard {
                shard: shard.clone(),
                key: decides,
            };
            let reconciling = fence.run(&key, reconcile(key.clone(), fence.clone()));
            tokio::select! {
                // The member's word first: a process resuming from a pause may find
                // everything ready at once.
                biased;
                () = running.dropped() => {
                    shard.count_dropped_reconcile();
                    tracing::warn!(%key, "reconcile dropped: the key moved to another member");
                    Ok(Action::Done)
                }
                result = reconciling => result,
            }
        })
    }
}
