//! [`Claim`]: what entitles this replica to act for a key right now.
//!
//! Run as several replicas, a controller works a key only while it holds a claim on
//! it, granted through the API server's Leases: a leader election's term (every key,
//! while this replica leads), a shard member's claim on a key (while its published
//! view gives it the key and its lease holds), a fleet member's claim on a cluster
//! (every key of the cluster, while the shard gives it the cluster). A claim can end
//! at any moment, seen by nobody yet: a process resuming from a pause finds every
//! deadline passed at once. So a claim answers by the clock, in the task that is about
//! to act, and its [`Fence`] asks it before every step of a reconcile and before every
//! write sent for it, Events included.
//!
//! Each kind of claim lives beside what grants it (`leader`, `shard`); the fence
//! knows only this trait.

mod fence;

pub use fence::Fenced;
pub(crate) use fence::{Fence, fenced_client};

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::clock::{ClockReading, MissedTime};
use crate::hold::Holds;

/// Whether a claim holds now, by the clocks, for a claim that holds at instant `t`
/// when `holds_at(t)`: at `Instant::now()`, and again with the time the monotonic
/// clock missed since `renewal` added (a suspended machine's); when only the second
/// fails, that is logged once per renewal, with `describe()` saying what ended.
pub(crate) fn holds_by_the_clocks(
    holds_at: impl Fn(Instant) -> bool,
    clocks: &MissedTime,
    renewal: Option<&ClockReading>,
    describe: impl FnOnce() -> String,
) -> bool {
    let now = Instant::now();
    if !holds_at(now) {
        return false;
    }
    let missed = clocks.since(renewal);
    if holds_at(now + missed) {
        return true;
    }
    if let Some(renewal) = renewal {
        clocks.warn_once(renewal, missed, &describe());
    }
    false
}

/// Resolves once `holds` says no of the state `state` shows, looking again whenever
/// it changes and at `deadline` of it (by when the claim ends unless the state
/// changes), and at once when the state's sender is gone: a claim's
/// [`ended`](Claim::ended).
pub(crate) fn ended_when<'a, S: Send + Sync + 'a>(
    mut state: watch::Receiver<S>,
    holds: impl Fn(&S) -> bool + Send + 'a,
    deadline: impl Fn(&S) -> Instant + Send + 'a,
) -> BoxFuture<'a, ()> {
    async move {
        loop {
            let deadline = {
                let now = state.borrow_and_update();
                if !holds(&now) {
                    return;
                }
                deadline(&now)
            };
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {}
                changed = state.changed() => if changed.is_err() { return },
            }
        }
    }
    .boxed()
}

/// What entitles this replica to act for one key now; see the [module docs](self).
pub(crate) trait Claim: Send + Sync + std::fmt::Debug {
    /// Whether the claim holds now, by the clock: work under it may take its next
    /// step, and a write on its behalf may be sent.
    fn holds(&self) -> bool;

    /// Resolves once the claim no longer holds: at the latest at its drop deadline
    /// (the instant after which another replica could hold it), earlier when the
    /// grantor says so (a new term, a hand-off).
    fn ended(&self) -> BoxFuture<'_, ()>;

    /// Counts a reconcile dropped before its next step because the claim had ended.
    fn count_dropped_reconcile(&self);

    /// Counts a write refused before it was sent because the claim had ended.
    fn count_refused_write(&self);

    /// Why work under the claim must stop, in words, for the logs and for the error
    /// a refused write fails with: what the claim was and how it ends.
    fn describe_loss(&self) -> String;

    /// Where the writes let through under this claim are held until answered, for
    /// a grantor that waits for them before it gives the claim up to others (a shard
    /// member stepping down); `None` when nothing waits.
    fn writes(&self) -> Option<&Holds> {
        None
    }
}

/// A claim a test holds or drops by hand, counting what it is told.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct TestClaim {
    pub(crate) lost: std::sync::atomic::AtomicBool,
    pub(crate) dropped: std::sync::atomic::AtomicU64,
    pub(crate) refused: std::sync::atomic::AtomicU64,
}

#[cfg(test)]
impl Claim for TestClaim {
    fn holds(&self) -> bool {
        !self.lost.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn ended(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {
            while self.holds() {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        })
    }

    fn count_dropped_reconcile(&self) {
        self.dropped
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn count_refused_write(&self) {
        self.refused
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    fn describe_loss(&self) -> String {
        "the test's claim ended".to_owned()
    }
}

/// A test's claim shared with the fence it is behind, so the test can end it.
#[cfg(test)]
impl Claim for std::sync::Arc<TestClaim> {
    fn holds(&self) -> bool {
        TestClaim::holds(self)
    }

    fn ended(&self) -> BoxFuture<'_, ()> {
        TestClaim::ended(self)
    }

    fn count_dropped_reconcile(&self) {
        TestClaim::count_dropped_reconcile(self);
    }

    fn count_refused_write(&self) {
        TestClaim::count_refused_write(self);
    }

    fn describe_loss(&self) -> String {
        TestClaim::describe_loss(self)
    }
}
