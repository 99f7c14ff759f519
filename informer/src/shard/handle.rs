//! [`ShardHandle`]: what the rest of the process asks a [`ShardMember`](super::ShardMember):
//! whose keys are whose, and whether a key may be reconciled now.

use std::sync::Arc;

use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};

use super::assignment::Assignment;
use super::in_flight::{InFlight, InFlightGuard};
use super::ring::key_hash;
use super::stats::{Counters, ShardStats};
use crate::key::ObjectKey;
use crate::reflector::KeyFilter;

/// A view of one [`ShardMember`](super::ShardMember). Cheap to clone.
///
/// It is also a [`KeyFilter`]: an informer filtered by it keeps only this member's
/// shard of the target view, and relists when the members change.
#[derive(Debug, Clone)]
pub struct ShardHandle {
    state: watch::Receiver<Arc<Assignment>>,
    generation: watch::Receiver<u64>,
    in_flight: Arc<InFlight>,
    counters: Arc<Counters>,
    identity: Arc<str>,
    group: Arc<str>,
}

impl ShardHandle {
    pub(crate) fn new(
        state: watch::Receiver<Arc<Assignment>>,
        generation: watch::Receiver<u64>,
        in_flight: Arc<InFlight>,
        counters: Arc<Counters>,
        identity: Arc<str>,
        group: Arc<str>,
    ) -> Self {
        Self {
            state,
            generation,
            in_flight,
            counters,
            identity,
            group,
        }
    }

    /// The group this member belongs to.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// This member's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The members this one last read (identities, sorted), itself included once its
    /// Lease exists.
    pub fn members(&self) -> Vec<String> {
        self.state
            .borrow()
            .members
            .identities()
            .map(str::to_owned)
            .collect()
    }

    /// Whether `key` is in this member's shard of the members last read (what its
    /// filtered cache keeps). It may not be reconciled yet: see
    /// [`may_reconcile`](Self::may_reconcile).
    pub fn owns(&self, key: &ObjectKey) -> bool {
        self.state
            .borrow()
            .keeps(key_hash(key.namespace.as_deref(), &key.name))
    }

    /// Whether this member may reconcile `key` now: its lease is held, the key is in
    /// its shard, and every other member has published a view in which the key is
    /// not theirs (see the [protocol](super#the-protocol)).
    pub fn may_reconcile(&self, key: &ObjectKey) -> bool {
        self.state.borrow().may_work(
            key_hash(key.namespace.as_deref(), &key.name),
            Instant::now(),
        )
    }

    /// Whether this member holds its lease (renewed within the renew deadline) and
    /// is not stepping down.
    pub fn is_active(&self) -> bool {
        let state = self.state.borrow();
        state.active && Instant::now() < state.renew_deadline
    }

    /// Whether the member has stopped (its `run` returned or is stepping down for
    /// good).
    pub fn is_stopped(&self) -> bool {
        self.state.borrow().stopped
    }

    /// The member's figures now: members, whether active, and its counters.
    pub fn stats(&self) -> ShardStats {
        let members = self.state.borrow().members.identities().count();
        self.counters
            .snapshot(members, self.is_active(), *self.generation.borrow())
    }

    /// Whether the member has stopped or its task is gone: nothing will change.
    #[cfg(feature = "metrics")]
    pub(crate) fn is_gone(&self) -> bool {
        self.state.has_changed().is_err() || self.state.borrow().stopped
    }

    /// Waits until the member's assignment changes (a read of the group, a renewal,
    /// a hand-off); `false` once the member is gone.
    pub async fn changed(&mut self) -> bool {
        self.state.changed().await.is_ok()
    }

    /// The current assignment.
    pub(crate) fn assignment(&self) -> Arc<Assignment> {
        Arc::clone(&self.state.borrow())
    }

    /// Resolves once the member has read the group (this member's shard is known,
    /// even if empty), or has stopped.
    pub(crate) async fn read_once(&self) {
        let mut state = self.state.clone();
        // An error means the member is gone: nothing more to wait for.
        let _ = state
            .wait_for(|assignment| {
                assignment.stopped || assignment.members.identities().next().is_some()
            })
            .await;
    }

    /// Whether a reconcile of `key` begun when [`may_reconcile`](Self::may_reconcile)
    /// allowed it may take its next step now (see [`Assignment::may_continue`]).
    pub(crate) fn may_continue(&self, key: &ObjectKey) -> bool {
        self.state.borrow().may_continue(
            key_hash(key.namespace.as_deref(), &key.name),
            Instant::now(),
        )
    }

    /// Counts a reconcile dropped before its next step (its key moved away, or the
    /// lease may have expired for the others).
    pub(crate) fn count_dropped_reconcile(&self) {
        self.counters.dropped(1);
    }

    /// Counts a write refused before it was sent.
    pub(crate) fn count_refused_write(&self) {
        self.counters.refused_write();
    }

    /// Records a reconcile of `key` as running, for hand-offs to wait on.
    pub(crate) fn enter(&self, key: &ObjectKey) -> InFlightGuard {
        self.in_flight.enter(key)
    }

    /// Resolves when reconciles still running must stop: the lease was not renewed
    /// and its expiry for the others draws near ([`Assignment::drop_deadline`]), or
    /// the member is gone.
    pub(crate) async fn lease_lost(&self) {
        let mut state = self.state.clone();
        loop {
            let expiry = state.borrow_and_update().drop_deadline();
            if Instant::now() >= expiry {
                return;
            }
            tokio::select! {
                () = sleep_until(expiry) => {}
                changed = state.changed() => if changed.is_err() { return },
            }
        }
    }
}

impl KeyFilter for ShardHandle {
    fn keeps(&self, namespace: Option<&str>, name: &str) -> bool {
        self.state.borrow().keeps(key_hash(namespace, name))
    }

    fn generation(&self) -> watch::Receiver<u64> {
        self.generation.clone()
    }
}
