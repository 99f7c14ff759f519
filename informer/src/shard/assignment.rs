//! [`Assignment`]: which keys one member may reconcile, decided from its last read of
//! the group. A pure value, tested without a server.

use std::sync::Arc;

use tokio::time::Instant;

use super::ring::View;
use crate::clock::{ClockReading, MissedTime};

/// What one member may do, as of its last read of the group's Leases.
#[derive(Debug, Clone)]
pub(crate) struct Assignment {
    /// This member's identity.
    pub(crate) me: Arc<str>,
    /// The target view: the members whose Lease existed at the last read.
    pub(crate) members: View,
    /// The view this member's Lease carried, as written (and confirmed) before that
    /// read: the keys it claims.
    pub(crate) published: View,
    /// The other members' published views at that read.
    pub(crate) others: Vec<(Arc<str>, View)>,
    /// This member's lease is held (renewed, not fenced) and it is not stepping down.
    pub(crate) active: bool,
    /// When work stops unless renewed: the last successful renewal's send time plus
    /// the renew deadline.
    pub(crate) renew_deadline: Instant,
    /// When another member could fence this one: the last successful renewal's send
    /// time plus the lease duration.
    pub(crate) lease_expiry: Instant,
    /// The member has stopped for good.
    pub(crate) stopped: bool,
    /// This member's membership: the uid of its Lease as last written. A member
    /// fenced (its Lease deleted by another) or stepping down has none; one that
    /// joins again has a new one. Work claimed under one membership never goes on
    /// under the next.
    pub(crate) membership: Option<Arc<str>>,
    /// The clocks when the last successful renewal was sent, to tell the time the
    /// monotonic clock missed since (see [`crate::clock`]).
    pub(crate) renewed_clocks: Option<ClockReading>,
}

impl Assignment {
    /// Before the first read: nothing is ours.
    pub(crate) fn initial(me: Arc<str>) -> Self {
        let now = Instant::now();
        Self {
            me,
            members: View::default(),
            published: View::default(),
            others: Vec::new(),
            active: false,
            renew_deadline: now,
            lease_expiry: now,
            stopped: false,
            membership: None,
            renewed_clocks: None,
        }
    }

    /// `Instant::now()` plus the time the monotonic clock missed since the renewal
    /// this assignment stands on: where its deadlines really stand.
    pub(crate) fn effective_now(&self, clocks: &MissedTime) -> Instant {
        Instant::now() + clocks.since(self.renewed_clocks.as_ref())
    }

    /// When reconciles still running must be dropped, unless the lease is renewed
    /// (leader election's rule: halfway from the renew deadline to the lease expiry).
    pub(crate) fn drop_deadline(&self) -> Instant {
        crate::leader::drop_deadline(self.renew_deadline, self.lease_expiry)
    }

    /// Whether the key whose hash is `key` belongs to this member's shard in the
    /// target view (what its cache keeps).
    pub(crate) fn in_shard(&self, key: u64) -> bool {
        self.members.assigns(&self.me, key)
    }

    /// Whether this member may reconcile the key whose hash is `key` at `now`: its
    /// lease is held, it holds the key in the target view *and* in the view it
    /// published before its last read, and no other member's published view claims
    /// the key for that member.
    pub(crate) fn may_reconcile(&self, key: u64, now: Instant) -> bool {
        self.active
            && now < self.renew_deadline
            && self.members.assigns(&self.me, key)
            && self.published.assigns(&self.me, key)
            && self
                .others
                .iter()
                .all(|(member, view)| !view.assigns(member, key))
    }

    /// Whether a reconcile of the key whose hash is `key`, begun when
    /// [`may_reconcile`](Self::may_reconcile) allowed it, may go on at `now`: this member's
    /// published view still claims the key (so no other member may start it: each
    /// waits until no published view claims its keys), and its lease cannot have
    /// expired for the others yet (the [`drop_deadline`](Self::drop_deadline) has not
    /// passed, by the clock, whatever the member's task has had the chance to say).
    /// A key moving away may finish here until the hand-off publishes the new view.
    pub(crate) fn may_continue(&self, key: u64, now: Instant) -> bool {
        now < self.drop_deadline() && self.published.assigns(&self.me, key)
    }

    /// Whether this member's work lapsed since this assignment, as of `now`: no
    /// renewal within the renew deadline (every key was unworkable for a while), or
    /// it was not active. Whatever is its own after a lapse must be looked at again.
    pub(crate) fn lapsed_by(&self, now: Instant) -> bool {
        now >= self.renew_deadline || !self.active
    }

    /// Whether `other` gives this member the same keys (only its deadlines may
    /// differ): the same members, claims and standing.
    pub(crate) fn same_keys_as(&self, other: &Assignment) -> bool {
        self.active == other.active
            && self.stopped == other.stopped
            && self.members == other.members
            && self.published == other.published
            && self.others == other.others
    }

    /// Whether the key is claimed by this member's published view but not owned in
    /// the target view: it is moving away, and the member must finish with it
    /// before publishing the target view.
    pub(crate) fn moving_away(&self, key: u64) -> bool {
        self.published.assigns(&self.me, key) && !self.members.assigns(&self.me, key)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::shard::ring::{Layout, key_hash};

    /// Both layouts: the protocol holds whichever decides the holders.
    const LAYOUTS: [Layout; 2] = [Layout::PerBucket, Layout::Ranges];

    fn member(
        layout: Layout,
        me: &str,
        members: &[&str],
        published: &[&str],
        others: &[(&str, &[&str])],
    ) -> Assignment {
        let now = Instant::now();
        Assignment {
            me: Arc::from(me),
            members: View::of(layout, members),
            published: View::of(layout, published),
            others: others
                .iter()
                .map(|(who, view)| (Arc::from(*who), View::of(layout, *view)))
                .collect(),
            active: true,
            renew_deadline: now + Duration::from_secs(10),
            lease_expiry: now + Duration::from_secs(15),
            stopped: false,
            membership: Some(Arc::from("uid-1")),
            renewed_clocks: None,
        }
    }

    fn keys() -> Vec<u64> {
        (0..3000)
            .map(|i| key_hash(Some("ns"), &format!("k{i}")))
            .collect()
    }

    fn working(assignments: &[&Assignment], key: u64) -> usize {
        let now = Instant::now();
        assignments
            .iter()
            .filter(|a| a.may_reconcile(key, now))
            .count()
    }

    #[test]
    fn settled_members_split_every_key_exactly_once() {
        for layout in LAYOUTS {
            let all: &[&str] = &["a", "b", "c"];
            let a = member(layout, "a", all, all, &[("b", all), ("c", all)]);
            let b = member(layout, "b", all, all, &[("a", all), ("c", all)]);
            let c = member(layout, "c", all, all, &[("a", all), ("b", all)]);
            for key in keys() {
                assert_eq!(working(&[&a, &b, &c], key), 1);
                assert_eq!([&a, &b, &c].iter().filter(|m| m.in_shard(key)).count(), 1);
            }
        }
    }

    #[test]
    fn a_newcomer_waits_until_the_old_owners_published_views_with_it() {
        for layout in LAYOUTS {
            let old: &[&str] = &["a", "b"];
            let new: &[&str] = &["a", "b", "c"];
            // c has joined and published; a and b have seen it but not yet published.
            let c = member(layout, "c", new, new, &[("a", old), ("b", old)]);
            let a = member(layout, "a", new, old, &[("b", old), ("c", new)]);
            let b = member(layout, "b", new, old, &[("a", old), ("c", new)]);
            for key in keys() {
                assert!(!c.may_reconcile(key, Instant::now()));
                // Whichever claims, never two at once (under ranges, a key may also
                // move between a and b: each then waits for the other's release).
                assert!(working(&[&a, &b, &c], key) <= 1);
                // What c will own is what a and b are letting go of.
                if c.in_shard(key) {
                    assert!(a.moving_away(key) || b.moving_away(key));
                }
            }
            // a has published the new view, b not yet: c may take a's keys only.
            let c = member(layout, "c", new, new, &[("a", new), ("b", old)]);
            let mut from_a = 0;
            for key in keys() {
                if c.may_reconcile(key, Instant::now()) {
                    assert!(View::of(layout, old).assigns("a", key));
                    from_a += 1;
                }
            }
            assert!(from_a > 300, "{layout:?}: {from_a}");
        }
    }

    /// Under ranges, a join can move a key between two old members too (where a
    /// quota runs out): neither works on it until both have published the new view.
    #[test]
    fn a_key_moving_between_old_members_waits_for_both() {
        let old: &[&str] = &["a", "b"];
        let before = View::of(Layout::Ranges, old);
        // A newcomer whose arrival moves some of a's keys to b.
        let (newcomer, moving) = (0..100)
            .map(|i| format!("c{i}"))
            .find_map(|c| {
                let after = View::of(Layout::Ranges, ["a", "b", c.as_str()]);
                let moving: Vec<u64> = keys()
                    .into_iter()
                    .filter(|key| before.assigns("a", *key) && after.assigns("b", *key))
                    .collect();
                (!moving.is_empty()).then_some((c, moving))
            })
            .expect("some newcomer moves a key from a to b");
        let c = newcomer.as_str();
        let new: &[&str] = &["a", "b", c];
        // b has published the new view, a not yet: b may not take a's keys.
        let b = member(Layout::Ranges, "b", new, new, &[("a", old), (c, new)]);
        let a = member(Layout::Ranges, "a", new, old, &[("b", new), (c, new)]);
        for key in &moving {
            assert!(!b.may_reconcile(*key, Instant::now()));
            assert!(a.moving_away(*key));
        }
        // Once a published it too, b takes them.
        let b = member(Layout::Ranges, "b", new, new, &[("a", new), (c, new)]);
        for key in &moving {
            assert!(b.may_reconcile(*key, Instant::now()));
        }
    }

    #[test]
    fn a_member_that_saw_a_departure_takes_the_keys_once_it_published() {
        for layout in LAYOUTS {
            let before: &[&str] = &["a", "b", "c"];
            let after: &[&str] = &["a", "b"];
            // c's lease is gone (released or fenced); a has not published the new view.
            let a = member(layout, "a", after, before, &[("b", before)]);
            let a_published = member(layout, "a", after, after, &[("b", before)]);
            let mut gained = 0;
            for key in keys() {
                if View::of(layout, before).assigns("c", key) {
                    assert!(!a.may_reconcile(key, Instant::now()));
                    if a_published.may_reconcile(key, Instant::now()) {
                        gained += 1;
                    }
                }
            }
            assert!(gained > 300, "{layout:?}: {gained}");
        }
    }

    #[test]
    fn nothing_is_worked_on_without_a_held_lease() {
        let all: &[&str] = &["a"];
        let mut a = member(Layout::Ranges, "a", all, all, &[]);
        let key = key_hash(None, "x");
        assert!(a.may_reconcile(key, Instant::now()));
        assert!(!a.may_reconcile(key, a.renew_deadline));
        a.active = false;
        assert!(!a.may_reconcile(key, Instant::now()));
        assert!(!Assignment::initial(Arc::from("a")).may_reconcile(key, Instant::now()));
    }
}
