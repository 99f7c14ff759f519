//! What the rest of the process sees of the election: the [`LeadershipHandle`] to
//! watch it, and the [`Term`] a leader works under.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::state::{Candidate, Leadership, State};
use super::term_claim::TermClaim;
use crate::hold::{Hold, Holds};

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
    /// What [`changed`](Self::changed) last reported.
    reported: Leadership,
    /// What every [`Term`] holds, for the elector's release to wait on.
    terms: Arc<Holds>,
    candidate: Arc<Candidate>,
}

impl LeadershipHandle {
    pub(crate) fn new(
        state: watch::Receiver<State>,
        terms: Arc<Holds>,
        candidate: Arc<Candidate>,
    ) -> Self {
        let reported = state.borrow().leadership.clone();
        Self {
            reported,
            state,
            terms,
            candidate,
        }
    }

    /// This replica's identity in the election.
    pub fn identity(&self) -> &str {
        &self.candidate.identity
    }

    /// The name of the Lease the election runs on.
    pub fn lease_name(&self) -> &str {
        &self.candidate.lease
    }

    /// The lease duration the elector runs with.
    pub(crate) fn lease_duration(&self) -> Duration {
        self.candidate.lease_duration
    }

    /// How many renewals so far could not update the Lease as last written and had
    /// to read it first (client-go's "slow path": a conflicting write, or a failed
    /// request). A steady rise means something else writes the Lease, or the API
    /// server is struggling.
    pub fn slow_path_renewals(&self) -> u64 {
        self.candidate.slow_path_renewals.load(Ordering::Relaxed)
    }

    /// How many reconciles a leader-elected controller dropped so far because their
    /// term ended while they ran (a lost lease, a pause past the renew deadline):
    /// each stopped before its next step, sending nothing more.
    pub fn dropped_reconciles(&self) -> u64 {
        self.candidate.dropped_reconciles.load(Ordering::Relaxed)
    }

    /// How many writes through a leader-elected controller's
    /// [`Context`](crate::controller::Context) were refused before they were sent,
    /// because their term had ended ([`Fenced`](crate::controller::Fenced)).
    pub fn refused_writes(&self) -> u64 {
        self.candidate.refused_writes.load(Ordering::Relaxed)
    }

    /// Whether the elector has stopped or its task is gone: nothing will change.
    #[cfg(feature = "metrics")]
    pub(crate) fn is_gone(&self) -> bool {
        self.state.has_changed().is_err() || self.state.borrow().leadership == Leadership::Stopped
    }

    /// Where this replica stands now.
    pub fn leadership(&self) -> Leadership {
        self.state.borrow().leadership.clone()
    }

    /// Whether this replica leads now (and is not stepping down).
    pub fn is_leading(&self) -> bool {
        let state = self.state.borrow();
        self.candidate.leads_in(&state, state.term)
    }

    /// The leader's identity as last observed: this replica's while it leads,
    /// `None` if nobody is known to lead.
    pub fn leader(&self) -> Option<String> {
        match &self.state.borrow().leadership {
            Leadership::Leading => Some(self.candidate.identity.clone()),
            Leadership::Following { leader } => leader.clone(),
            Leadership::Stopped => None,
        }
    }

    /// Waits until [`Leadership`] differs from what this handle last reported (or
    /// saw when it was made) and returns it; `None` once the elector is gone and
    /// nothing new is left to report. Changes are not queued: a quick succession may
    /// show only the last state.
    pub async fn changed(&mut self) -> Option<Leadership> {
        loop {
            let now = self.state.borrow_and_update().leadership.clone();
            if now != self.reported {
                self.reported = now.clone();
                return Some(now);
            }
            self.state.changed().await.ok()?;
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
        // The hold is taken before the step-down is checked again: an elector
        // stepping down marks it first and then waits for the holds, so it either
        // waits for this one or the check below sees the step-down and drops it.
        let hold = self.terms.hold();
        if state.borrow().stepping_down || state.borrow().leadership == Leadership::Stopped {
            return None;
        }
        Some(Term {
            term: current.term,
            state,
            candidate: Arc::clone(&self.candidate),
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
    candidate: Arc<Candidate>,
    _hold: Hold,
}

impl Term {
    /// The claim of work begun under this term (see [`TermClaim`]).
    pub(crate) fn claim(&self) -> TermClaim {
        TermClaim {
            term: self.term,
            state: self.state.clone(),
            candidate: Arc::clone(&self.candidate),
        }
    }

    /// Whether this term is still on: the elector has neither lost the lease nor
    /// begun to step down, and the renew deadline has not passed (checked against
    /// the clock, so a process resuming from a pause sees it at once).
    pub fn is_leading(&self) -> bool {
        self.candidate.leads_in(&self.state.borrow(), self.term)
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

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::atomic::AtomicU64;

    use super::*;
    use crate::clock::MissedTime;

    const SECOND: Duration = Duration::from_secs(1);

    /// A handle on a state the test drives, as the elector would.
    pub(crate) fn handle() -> (watch::Sender<State>, LeadershipHandle) {
        handle_with_clocks(crate::clock::system())
    }

    /// [`handle`], its terms checked with `clocks`.
    pub(crate) fn handle_with_clocks(
        clocks: Arc<dyn crate::clock::ClockSource>,
    ) -> (watch::Sender<State>, LeadershipHandle) {
        let state = watch::Sender::new(State::new());
        let handle = LeadershipHandle::new(
            state.subscribe(),
            Arc::default(),
            Arc::new(Candidate {
                identity: "me".to_owned(),
                lease: "lease".to_owned(),
                lease_duration: 4 * SECOND,
                slow_path_renewals: AtomicU64::new(0),
                dropped_reconciles: AtomicU64::new(0),
                refused_writes: AtomicU64::new(0),
                clocks: MissedTime::new(clocks),
                writes: Arc::default(),
            }),
        );
        (state, handle)
    }

    /// Starts a term: renew deadline in 3 s, lease expiry in 4 s.
    pub(crate) fn lead(state: &watch::Sender<State>) {
        let now = Instant::now();
        state.send_modify(|s| {
            s.term += 1;
            s.leadership = Leadership::Leading;
            s.renew_deadline = now + 3 * SECOND;
            s.lease_expiry = now + 4 * SECOND;
        });
    }

    #[tokio::test(start_paused = true)]
    async fn a_term_ends_at_the_renew_deadline_even_if_the_elector_says_nothing() {
        let (state, handle) = handle();
        let waiting = tokio::spawn({
            let handle = handle.clone();
            async move { handle.leading().await.is_some() }
        });
        tokio::task::yield_now().await;
        lead(&state);
        assert!(waiting.await.unwrap());
        let start = Instant::now();
        let term = handle.leading().await.unwrap();
        assert!(term.is_leading() && handle.is_leading());
        // The elector is stuck (a paused process, a starved task): the clock decides.
        let expiry = term.lost().await;
        assert_eq!(start.elapsed(), 3 * SECOND);
        assert_eq!(expiry, start + 4 * SECOND);
        assert!(!term.is_leading() && !handle.is_leading());
        assert_eq!(term.time_to_expiry(), SECOND);
    }

    #[tokio::test(start_paused = true)]
    async fn a_renewal_moves_the_deadline_and_a_new_term_ends_the_old_one() {
        let (state, handle) = handle();
        lead(&state);
        let term = handle.leading().await.unwrap();
        tokio::time::advance(2 * SECOND).await;
        let renewed = Instant::now();
        state.send_modify(|s| {
            s.renew_deadline = renewed + 3 * SECOND;
            s.lease_expiry = renewed + 4 * SECOND;
        });
        tokio::time::advance(2 * SECOND).await;
        assert!(
            term.is_leading(),
            "renewed: the old deadline no longer counts"
        );
        assert_eq!(term.lease_expiry(), renewed + 4 * SECOND);
        // Lost and won again before anyone looked: still a different term.
        lead(&state);
        assert!(!term.is_leading());
        let _ = term.lost().await;
        assert!(handle.leading().await.unwrap().is_leading());
    }

    #[tokio::test(start_paused = true)]
    async fn stepping_down_ends_terms_and_waits_for_them_to_be_dropped() {
        let (state, handle) = handle();
        let terms = Arc::clone(&handle.terms);
        lead(&state);
        let term = handle.leading().await.unwrap();
        // The elector steps down: no new terms, the current one is over.
        state.send_modify(|s| s.stepping_down = true);
        let _ = term.lost().await;
        assert!(handle.leading().await.is_none());
        assert_eq!(
            handle.leadership(),
            Leadership::Leading,
            "it still holds the lease"
        );
        assert!(
            tokio::time::timeout(SECOND, terms.released())
                .await
                .is_err(),
            "the term still holds the release back"
        );
        drop(term);
        terms.released().await;
    }

    #[tokio::test(start_paused = true)]
    async fn changes_report_new_leaders_only() {
        let (state, mut handle) = handle();
        let follow = |leader: &str| {
            let leadership = Leadership::Following {
                leader: Some(leader.to_owned()),
            };
            state.send_modify(|s| s.leadership = leadership);
        };
        follow("a");
        assert_eq!(
            handle.changed().await,
            Some(Leadership::Following {
                leader: Some("a".into())
            })
        );
        assert_eq!(handle.leader().as_deref(), Some("a"));
        follow("a"); // the same leader again: no news
        follow("b");
        assert_eq!(
            handle.changed().await,
            Some(Leadership::Following {
                leader: Some("b".into())
            })
        );
        state.send_modify(|s| s.leadership = Leadership::Stopped);
        drop(state);
        assert_eq!(handle.changed().await, Some(Leadership::Stopped));
        assert_eq!(handle.changed().await, None);
        assert!(handle.leading().await.is_none());
    }
}
