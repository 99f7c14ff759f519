//! [`KeyClaim`]: a shard member's claim on one key, for one membership.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::watch;
use tokio::time::Instant;

use super::assignment::Assignment;
use super::stats::Counters;
use crate::claim::{Claim, ended_when, holds_by_the_clocks};
use crate::clock::MissedTime;
use crate::hold::Holds;
use crate::key::ObjectKey;

/// Work on a key, begun when the member [may reconcile](super::ShardHandle::may_reconcile)
/// it, may go on while the member's published view still claims the key, its lease
/// cannot have expired for the others (see [`Assignment::may_continue`]; time the
/// monotonic clock missed counts), and the membership it began in lasts: once the
/// member steps down, or is fenced and joins again, work of the old membership stops
/// for good, as a leader's work stops with its term.
#[derive(Debug, Clone)]
pub(crate) struct KeyClaim {
    pub(super) state: watch::Receiver<Arc<Assignment>>,
    /// The membership (Lease uid) the claim was made in.
    pub(super) membership: Option<Arc<str>>,
    pub(super) key: ObjectKey,
    pub(super) hash: u64,
    /// The member's writes on their way, which it waits for before deleting its Lease.
    pub(super) writes: Arc<Holds>,
    pub(super) counters: Arc<Counters>,
    pub(super) clocks: Arc<MissedTime>,
    pub(super) group: Arc<str>,
    pub(super) identity: Arc<str>,
}

impl KeyClaim {
    /// Whether the claim holds in `assignment` at `now`.
    fn holds_in(&self, assignment: &Assignment, now: Instant) -> bool {
        self.membership.is_some()
            && assignment.membership == self.membership
            && assignment.may_continue(self.hash, now)
    }
}

impl Claim for KeyClaim {
    fn holds(&self) -> bool {
        let assignment = self.state.borrow();
        holds_by_the_clocks(
            |at| self.holds_in(&assignment, at),
            &self.clocks,
            assignment.renewed_clocks.as_ref(),
            || self.describe_loss(),
        )
    }

    /// Resolves once the claim no longer holds: at the latest when the lease was
    /// not renewed and its expiry for the others draws near
    /// ([`Assignment::drop_deadline`]), at once when the membership ends or the
    /// member is gone.
    fn ended(&self) -> BoxFuture<'_, ()> {
        ended_when(
            self.state.clone(),
            |assignment| self.holds_in(assignment, assignment.effective_now(&self.clocks)),
            |assignment| assignment.drop_deadline(),
        )
    }

    fn count_dropped_reconcile(&self) {
        self.counters.dropped(1);
    }

    fn count_refused_write(&self) {
        self.counters.refused_write();
    }

    fn describe_loss(&self) -> String {
        format!(
            "shard member {}/{} may no longer reconcile {} (the key moved, the member left or was fenced, or its lease may have expired for the others)",
            self.group, self.identity, self.key
        )
    }

    fn writes(&self) -> Option<&Holds> {
        Some(&self.writes)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::shard::ring::{Layout, View, key_hash};

    fn assignment(membership: Option<&str>) -> Arc<Assignment> {
        let now = Instant::now();
        let me: Arc<str> = Arc::from("a");
        Arc::new(Assignment {
            members: View::of(Layout::PerBucket, ["a"]),
            published: View::of(Layout::PerBucket, ["a"]),
            others: Vec::new(),
            active: true,
            renew_deadline: now + Duration::from_secs(10),
            lease_expiry: now + Duration::from_secs(15),
            stopped: false,
            membership: membership.map(Arc::from),
            renewed_clocks: None,
            ..Assignment::initial(me)
        })
    }

    fn claim(state: &watch::Sender<Arc<Assignment>>) -> KeyClaim {
        let key = ObjectKey::new(Some("ns".into()), "k");
        KeyClaim {
            state: state.subscribe(),
            membership: state.borrow().membership.clone(),
            hash: key_hash(key.namespace.as_deref(), &key.name),
            key,
            writes: Arc::default(),
            counters: Arc::default(),
            clocks: Arc::new(MissedTime::new(crate::clock::system())),
            group: Arc::from("g"),
            identity: Arc::from("a"),
        }
    }

    /// Work claimed under one membership stops when it ends (stepping down, or
    /// fenced) and does not come back when the member joins again with the same
    /// view: the keys may have been another member's meanwhile.
    #[tokio::test]
    async fn a_claim_lasts_one_membership() {
        let state = watch::Sender::new(assignment(Some("uid-1")));
        let claim = claim(&state);
        assert!(claim.holds());
        state.send_replace(assignment(None));
        assert!(!claim.holds());
        tokio::time::timeout(Duration::from_secs(1), claim.ended())
            .await
            .expect("lost resolves at once");
        state.send_replace(assignment(Some("uid-2")));
        assert!(
            !claim.holds(),
            "a new membership does not revive the old claim"
        );
        // A claim made in the new membership holds.
        assert!(self::claim(&state).holds());
        // No membership at all (before the first Lease): no claim holds.
        state.send_replace(assignment(None));
        assert!(!self::claim(&state).holds());
    }
}
