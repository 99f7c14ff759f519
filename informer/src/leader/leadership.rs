//! What the rest of the process sees of the election: [`Leadership`], the
//! [`LeadershipHandle`] to watch it, and the [`Term`] a leader works under.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::lock::MutexExt;

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
        }
    }

    fn term_is_on(&self, term: u64) -> bool {
        self.term == term && self.leadership == Leadership::Leading && !self.stepping_down
    }
}

/// Every [`Term`] holds a clone of the sender; the elector waits until all are
/// dropped before it releases the lease.
pub(crate) type Holds = Arc<Mutex<Option<mpsc::Sender<()>>>>;

/// A view of one [`LeaderElector`](super::LeaderElector): where this replica stands,
/// and a [`Term`] to work under while it leads. Cheap to clone; each clone watches on
/// its own.
///
/// ```no_run
/// # async fn demo(handle: informer::leader::LeadershipHandle) {
/// while let Some(term) = handle.leading().await {
///     // Leader-only work goes here, until:
///     let expiry = term.lost().await;
///     // Stop it now; nothing may run past `expiry`.
///     # let _ = expiry;
///     drop(term); // lets a clean shutdown release the lease
/// }
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct LeadershipHandle {
    state: watch::Receiver<State>,
    holds: Holds,
    identity: Arc<str>,
}

impl LeadershipHandle {
    pub(crate) fn new(state: watch::Receiver<State>, holds: Holds, identity: Arc<str>) -> Self {
        Self {
            state,
            holds,
            identity,
        }
    }

    /// This replica's identity in the election.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Where this replica stands now.
    pub fn leadership(&self) -> Leadership {
        self.state.borrow().leadership.clone()
    }

    /// Whether this replica leads now (and is not stepping down).
    pub fn is_leading(&self) -> bool {
        let state = self.state.borrow();
        state.term_is_on(state.term) && Instant::now() < state.renew_deadline
    }

    /// The leader's identity as last observed: this replica's while it leads,
    /// `None` if nobody is known to lead.
    pub fn leader(&self) -> Option<String> {
        match &self.state.borrow().leadership {
            Leadership::Leading => Some(self.identity.to_string()),
            Leadership::Following { leader } => leader.clone(),
            Leadership::Stopped => None,
        }
    }

    /// Waits for the next change of [`Leadership`] and returns it; `None` once the
    /// elector is gone. Changes are not queued: a quick succession may show only the
    /// last state.
    pub async fn changed(&mut self) -> Option<Leadership> {
        loop {
            let before = self.state.borrow_and_update().leadership.clone();
            self.state.changed().await.ok()?;
            let now = self.state.borrow_and_update().leadership.clone();
            if now != before {
                return Some(now);
            }
        }
    }

    /// Waits until this replica leads and returns the [`Term`] to work under; `None`
    /// if the elector stops (or is stopping) first.
    pub async fn leading(&self) -> Option<Term> {
        let mut state = self.state.clone();
        let current = state
            .wait_for(|s| {
                s.term_is_on(s.term) || s.stepping_down || s.leadership == Leadership::Stopped
            })
            .await
            .ok()?
            .clone();
        if !current.term_is_on(current.term) {
            return None;
        }
        let hold = self.holds.locked().clone()?;
        Some(Term {
            term: current.term,
            state,
            _hold: hold,
        })
    }
}

/// One stretch of leadership. Leader-only work runs while [`is_leading`](Self::is_leading)
/// and stops when [`lost`](Self::lost) resolves; nothing may run past the instant it
/// returns, when another replica may take over.
///
/// A clean shutdown of the elector waits (up to its renew deadline) until every term
/// is dropped before it releases the lease: drop the term once the work under it has
/// stopped.
#[derive(Debug)]
pub struct Term {
    term: u64,
    state: watch::Receiver<State>,
    _hold: mpsc::Sender<()>,
}

impl Term {
    /// Whether this term is still on: the elector has neither lost the lease nor
    /// begun to step down, and the renew deadline has not passed (checked against
    /// the clock, so a process resuming from a pause sees it at once).
    pub fn is_leading(&self) -> bool {
        let state = self.state.borrow();
        state.term_is_on(self.term) && Instant::now() < state.renew_deadline
    }

    /// The instant the lease could expire as another replica observes it, as of the
    /// last successful renewal (it moves forward with each one).
    pub fn lease_expiry(&self) -> Instant {
        self.state.borrow().lease_expiry
    }

    /// Resolves when this term ends: the renew deadline passed without a successful
    /// renewal, another replica took the lease, or the elector is stepping down or
    /// gone. Returns the instant the lease could expire for the others: work still
    /// running must be stopped (or abandoned) by then.
    pub async fn lost(&self) -> Instant {
        let mut state = self.state.clone();
        loop {
            let (on, deadline, expiry) = {
                let s = state.borrow_and_update();
                (s.term_is_on(self.term), s.renew_deadline, s.lease_expiry)
            };
            if !on {
                return expiry;
            }
            // The deadline counts even if the elector's task is late to say so.
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {
                    if Instant::now() >= state.borrow().renew_deadline {
                        return state.borrow().lease_expiry;
                    }
                }
                changed = state.changed() => {
                    if changed.is_err() {
                        return state.borrow().lease_expiry;
                    }
                }
            }
        }
    }

    /// How long until [`lease_expiry`](Self::lease_expiry).
    pub fn time_to_expiry(&self) -> Duration {
        self.lease_expiry()
            .saturating_duration_since(Instant::now())
    }
}
