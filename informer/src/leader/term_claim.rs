//! [`TermClaim`]: a leader's claim on every key, for the length of one term.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio::time::Instant;

use super::state::{Candidate, State};
use crate::claim::{Claim, ended_when, holds_by_the_clocks};
use crate::hold::Holds;

/// Work begun under one [`Term`](super::Term) may go on while that term still holds
/// the lease (also while the elector steps down, which waits for the work before
/// releasing) and its drop deadline has not passed by the clock. A term lost and won
/// again is a new term: work of the old one may not go on.
#[derive(Debug, Clone)]
pub(crate) struct TermClaim {
    pub(super) term: u64,
    pub(super) state: watch::Receiver<State>,
    pub(super) candidate: Arc<Candidate>,
}

impl Claim for TermClaim {
    fn holds(&self) -> bool {
        let state = self.state.borrow();
        holds_by_the_clocks(
            |at| state.may_continue(self.term, at),
            &self.candidate.clocks,
            state.renewed_clocks.as_ref(),
            || self.describe_loss(),
        )
    }

    fn ended(&self) -> BoxFuture<'_, ()> {
        ended_when(
            self.state.clone(),
            |state| {
                let now = self.candidate.effective_now(state, Instant::now());
                state.may_continue(self.term, now)
            },
            State::drop_deadline,
        )
    }

    fn count_dropped_reconcile(&self) {
        self.candidate
            .dropped_reconciles
            .fetch_add(1, Ordering::Relaxed);
    }

    fn count_refused_write(&self) {
        self.candidate
            .refused_writes
            .fetch_add(1, Ordering::Relaxed);
    }

    fn describe_loss(&self) -> String {
        format!(
            "leadership term {} of {} on Lease {} has ended (or may have expired for the other replicas)",
            self.term, self.candidate.identity, self.candidate.lease
        )
    }

    fn writes(&self) -> Option<&Holds> {
        Some(&self.candidate.writes)
    }
}
