//! The election as its elector keeps it: where this replica stands ([`Leadership`]),
//! the current term and its deadlines ([`State`]), and who this replica is
//! ([`Candidate`]), shared with every handle, term and claim.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use tokio::time::Instant;

use super::timings::drop_deadline;
use crate::clock::{ClockReading, MissedTime};
use crate::hold::Holds;

/// Where this replica stands in the election.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leadership {
    /// This replica is a candidate. `leader` is the holder it last observed, or
    /// `None` when nobody holds the lease (or it has not been read yet). It changes
    /// only when the holder does (client-go's `OnNewLeader`).
    Following {
        /// The observed leader's identity.
        leader: Option<String>,
    },
    /// This replica holds the lease.
    Leading,
    /// The elector has stopped (shut down, or its task dropped): this replica will
    /// not lead again.
    Stopped,
}

/// The elector's state, shared with handles and terms.
#[derive(Debug, Clone)]
pub(crate) struct State {
    pub(crate) leadership: Leadership,
    /// Counts terms: a new one starts with every acquisition.
    pub(crate) term: u64,
    /// The elector was shut down and waits for the terms to end before releasing.
    pub(crate) stepping_down: bool,
    /// When the current (or last) term stops, unless renewed: the last successful
    /// renewal's send time + renew deadline.
    pub(crate) renew_deadline: Instant,
    /// When the lease could expire as another replica observes it: the last
    /// successful renewal's send time + lease duration.
    pub(crate) lease_expiry: Instant,
    /// The clocks when the last successful renewal was sent, to tell the time the
    /// monotonic clock missed since (see [`crate::clock`]).
    pub(crate) renewed_clocks: Option<ClockReading>,
}

impl State {
    pub(crate) fn new() -> Self {
        let now = Instant::now();
        Self {
            leadership: Leadership::Following { leader: None },
            term: 0,
            stepping_down: false,
            renew_deadline: now,
            lease_expiry: now,
            renewed_clocks: None,
        }
    }

    pub(crate) fn term_is_on(&self, term: u64) -> bool {
        self.term == term && self.leadership == Leadership::Leading && !self.stepping_down
    }

    /// When work still running under the current term must stop, unless renewed
    /// (see [`drop_deadline`]).
    pub(crate) fn drop_deadline(&self) -> Instant {
        drop_deadline(self.renew_deadline, self.lease_expiry)
    }

    /// Whether work begun under `term` may go on at `now`: the lease is still held
    /// in that term (also while stepping down, which waits for the work before
    /// releasing) and the drop deadline has not passed, by the clock, whatever the
    /// elector's task has had the chance to say.
    pub(crate) fn may_continue(&self, term: u64, now: Instant) -> bool {
        self.term == term && self.leadership == Leadership::Leading && now < self.drop_deadline()
    }
}

/// This replica as a candidate: who it is, on which Lease, and a counter its elector
/// keeps; shared by the elector and its handles.
#[derive(Debug)]
pub(crate) struct Candidate {
    /// This replica's identity.
    pub(crate) identity: String,
    /// The Lease's name (client-go's `name` label on its leader election metrics).
    pub(crate) lease: String,
    /// The lease duration the elector runs with.
    pub(crate) lease_duration: Duration,
    /// Renewals that had to read the Lease first (client-go's slow path).
    pub(crate) slow_path_renewals: AtomicU64,
    /// Reconciles dropped because their term ended while they ran.
    pub(crate) dropped_reconciles: AtomicU64,
    /// Writes refused before they were sent because their term had ended.
    pub(crate) refused_writes: AtomicU64,
    /// The clocks terms are checked with (the system's; a test's in unit tests).
    pub(crate) clocks: MissedTime,
    /// Writes let through under a term and not yet answered: a release waits for
    /// them.
    pub(crate) writes: Arc<Holds>,
}

impl Candidate {
    /// `now` plus the time the monotonic clock missed since the last renewal of
    /// `state`: where the deadlines really stand.
    pub(crate) fn effective_now(&self, state: &State, now: Instant) -> Instant {
        now + self.clocks.since(state.renewed_clocks.as_ref())
    }

    /// Whether `term` is on in `state` now: the elector has neither lost the lease
    /// nor begun to step down, and the renew deadline has not passed (by the clock,
    /// so a process resuming from a pause sees it at once). What a handle and a term
    /// both answer.
    pub(crate) fn leads_in(&self, state: &State, term: u64) -> bool {
        state.term_is_on(term) && self.effective_now(state, Instant::now()) < state.renew_deadline
    }
}
