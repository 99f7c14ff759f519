//! [`LeaderElected`]: running a controller's workers only while this replica leads.
//!
//! The informers run on every replica, so a standby's caches are warm when it takes
//! over. The queue is filled on every replica too (it only holds keys, deduplicated),
//! but workers take keys only during a [`Term`]: when one starts, every cached
//! primary is queued (a new leader must look at everything: the old one may have
//! left work half done); when it is lost, workers take no more keys, and reconciles
//! in hand may finish while the term still holds the lease: each is dropped before
//! its next step (a write, say) once the lease may no longer be this replica's, by
//! the clock, even if the process was paused and nothing else has run yet (see
//! [`Fence`]). The controller then waits to lead again, its caches kept warm.
//!
//! A standby keeps no backlog: what its handlers queue is taken off the queue
//! unreconciled (a term starts by queueing everything anyway), and the deletions
//! it sees, cleaned up by the leader of the time, are forgotten after
//! [`HANDOVER_WINDOW_LEASES`] lease durations. A new term cleans up those seen
//! within that window before it: deletions made while the lease changed hands,
//! which no leader may have seen. (Without this, a standby in a cluster that
//! creates and deletes objects under fresh names would keep every deleted object.)

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::sleep_until;

use super::{Replicate, Workload};
use crate::claim::Fence;
use crate::controller::reasons::{Reason, Reasons};
use crate::controller::reconciler::{Failure, KeyWork};
use crate::controller::tombstones::Tombstones;
use crate::key::ObjectKey;
use crate::leader::{LeadershipHandle, Term};
use crate::workqueue::{Action, WorkQueue};

/// How many lease durations a standby remembers a deletion for: a new leader takes
/// over within one lease duration (and a retry) of the old leader's last renewal,
/// and the old leader stopped working at its renew deadline, before that.
const HANDOVER_WINDOW_LEASES: u32 = 2;

/// The mode of a controller that reconciles only while its replica leads an election
/// (see [`Controller::leader_election`](crate::controller::Controller::leader_election)).
#[derive(Debug)]
pub struct LeaderElected {
    leadership: LeadershipHandle,
}

impl LeaderElected {
    pub(crate) fn new(leadership: LeadershipHandle) -> Self {
        Self { leadership }
    }
}

impl Replicate for LeaderElected {
    #[cfg(feature = "metrics")]
    fn observe(&self, metrics: &crate::metrics::Metrics) {
        metrics.observe_leader_election(&self.leadership);
    }

    /// Runs the workers during each term of the election until `shutdown`
    /// completes, the elector stops, or the queue is shut down; then shuts the queue
    /// down.
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
            mut flush_events,
        } = workload;
        let leadership = &self.leadership;
        let mut shutdown = shutdown;
        let window = leadership.lease_duration() * HANDOVER_WINDOW_LEASES;
        loop {
            let term = tokio::select! {
                () = stand_by(runner.queue(), &primaries.tombstones, reasons, window) => break,
                term = leadership.leading() => match term {
                    Some(term) => Arc::new(term),
                    None => {
                        tracing::info!(controller, "the leader elector stopped; the controller stops");
                        break;
                    }
                },
                () = shutdown.as_mut() => break,
            };
            let queue = runner.queue();
            if queue.is_shutting_down() {
                break;
            }
            primaries.tombstones.forget_older_than(window);
            let primaries_now = primaries.keys();
            tracing::info!(
                controller,
                primaries = primaries_now.len(),
                "leading: reconciling every cached object and recent deletion"
            );
            for key in primaries_now {
                reasons.queue(queue, ObjectKey::clone(&key), Reason::TookOver);
            }

            let mut shut_down = false;
            let stop = async {
                tokio::select! {
                    _ = term.lost() => {}
                    () = shutdown.as_mut() => shut_down = true,
                }
            };
            // In-flight reconciles are dropped by their fence at the drop deadline;
            // this is the backstop for one that ignores it (a blocking call). A
            // controller shut down while still leading lets them finish.
            let abandon = {
                let term = Arc::clone(&term);
                async move { sleep_until(term.lost().await).await }
            };
            runner
                .run_until(
                    gated_by_term(work.clone(), Arc::clone(&term), Arc::clone(reasons)),
                    stop,
                    abandon,
                )
                .await;
            if shut_down && let Some(flush) = flush_events.take() {
                // Before the term is dropped, which lets the elector release the
                // Lease: no event of this term goes out after.
                flush.await;
            }
            drop(term);
            if shut_down || runner.queue().is_shutting_down() {
                break;
            }
            tracing::info!(
                controller,
                "no longer leading: workers stopped; waiting to lead again"
            );
        }
        runner.queue().shutdown();
    }
}

/// While this replica follows: takes what the handlers queue off the queue
/// unreconciled, and forgets the tombstones older than `window`. Returns only if the
/// queue is shut down.
async fn stand_by<K>(
    queue: &WorkQueue<ObjectKey>,
    tombstones: &Tombstones<K>,
    reasons: &Reasons,
    window: Duration,
) {
    let mut prune = tokio::time::interval(window / 2);
    loop {
        tokio::select! {
            // `get` is cancel-safe: a term starting meanwhile loses no key.
            key = queue.get() => match key {
                Some(key) => {
                    reasons.take(&key);
                    queue.forget(&key);
                    queue.done(&key);
                }
                None => return,
            },
            _ = prune.tick() => tombstones.forget_older_than(window),
        }
    }
}

/// `work` under `term`: skipped (the key is left for the next term) once the term is
/// over, as a worker that took a key just as the term ended must not act on it;
/// dropped before its next step once the term can no longer hold the lease (see
/// [`Fence`]).
fn gated_by_term(
    work: KeyWork,
    term: Arc<Term>,
    reasons: Arc<Reasons>,
) -> impl Fn(ObjectKey) -> BoxFuture<'static, Result<Action, Failure>> + Send + Sync + 'static {
    let fence = Fence::claimed(term.claim());
    move |key| {
        if !term.is_leading() {
            reasons.take(&key);
            return Box::pin(std::future::ready(Ok(Action::Done)));
        }
        let fence = fence.clone();
        let reconciling = work(key.clone(), fence.clone());
        // A reconcile dropped because the term ended counts as done: the key is queued
        // again when this replica leads again.
        Box::pin(async move {
            fence
                .run(&key, reconciling)
                .await
                .unwrap_or(Ok(Action::Done))
        })
    }
}
