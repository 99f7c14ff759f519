//! The election record kept in a Lease's spec, and the decision client-go's
//! `tryAcquireOrRenew` makes from it: a pure state machine over what this replica
//! observed and when, tested without a server.

use std::time::{Duration, SystemTime};

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

/// client-go's `LeaderElectionRecord`: the part of a Lease's spec the election uses.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Record {
    /// Who holds the lease; empty when nobody does (never taken, or released).
    pub(crate) holder: String,
    /// How long the holder's lease lasts after an observed renewal, in seconds.
    pub(crate) lease_duration_seconds: i32,
    /// When the holder acquired it (its wall clock; informational).
    pub(crate) acquire_time: Option<Timestamp>,
    /// When the holder last renewed it (its wall clock; informational, and what
    /// changes on every renewal so the others observe it).
    pub(crate) renew_time: Option<Timestamp>,
    /// How many times the lease changed hands.
    pub(crate) transitions: i32,
}

impl Record {
    /// client-go's `LeaseSpecToLeaderElectionRecord`.
    pub(crate) fn from_spec(spec: Option<&LeaseSpec>) -> Self {
        let Some(spec) = spec else {
            return Self::default();
        };
        Self {
            holder: spec.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or_default(),
            acquire_time: spec.acquire_time.as_ref().map(|t| t.0),
            renew_time: spec.renew_time.as_ref().map(|t| t.0),
            transitions: spec.lease_transitions.unwrap_or_default(),
        }
    }

    /// client-go's `LeaderElectionRecordToLeaseSpec` (which drops `preferredHolder`
    /// and `strategy`, as ours does: they belong to coordinated election).
    pub(crate) fn to_spec(&self) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.holder.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: self.acquire_time.map(MicroTime),
            renew_time: self.renew_time.map(MicroTime),
            lease_transitions: Some(self.transitions),
            ..LeaseSpec::default()
        }
    }

    /// The record that releases a lease this replica holds (client-go's
    /// `tryRelease`): no holder, a one-second duration, the transitions kept.
    pub(crate) fn released(&self, wall: Timestamp) -> Self {
        Self {
            holder: String::new(),
            lease_duration_seconds: 1,
            acquire_time: Some(wall),
            renew_time: Some(wall),
            transitions: self.transitions,
        }
    }
}

/// The wall clock as the Lease records it. Only written, never trusted: expiry is
/// judged by this replica's own monotonic clock.
pub(crate) fn wall_now() -> Timestamp {
    let micros = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_micros()).unwrap_or(i64::MAX)
        });
    Timestamp::from_microsecond(micros).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// What a try decided after reading the Lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Plan {
    /// Another replica holds a lease that has not expired: write nothing.
    Held {
        /// The holder's identity.
        holder: String,
    },
    /// Write this record (acquire, or renew what we hold).
    Write(Record),
}

/// What this replica observed of the record, and when: client-go's `observedRecord`
/// and `observedTime`.
///
/// The other replicas' timestamps are never compared with our clock. A lease is
/// valid for `lease_duration_seconds` (the holder's own setting) after the moment
/// *we* saw the record change; a holder that keeps renewing keeps changing it, so it
/// never expires for us, however wrong its clock is.
#[derive(Debug)]
pub(crate) struct Observer {
    identity: String,
    observed: Record,
    observed_at: Option<Instant>,
}

impl Observer {
    pub(crate) fn new(identity: impl Into<String>) -> Self {
        Self {
            identity: identity.into(),
            observed: Record::default(),
            observed_at: None,
        }
    }

    /// The record last observed.
    pub(crate) fn observed(&self) -> &Record {
        &self.observed
    }

    /// Takes in a record read at `now`: the observed time moves only if it changed.
    pub(crate) fn observe(&mut self, record: Record, now: Instant) {
        if self.observed_at.is_none() || record != self.observed {
            self.observed = record;
            self.observed_at = Some(now);
        }
    }

    /// A record this replica wrote at `now` (client-go's `setObservedRecord`).
    pub(crate) fn wrote(&mut self, record: Record, now: Instant) {
        self.observed = record;
        self.observed_at = Some(now);
    }

    /// Whether the observed holder is this replica.
    pub(crate) fn is_leader(&self) -> bool {
        self.observed.holder == self.identity
    }

    /// When the observed lease expires for us: observed time + its duration.
    pub(crate) fn expiry(&self) -> Option<Instant> {
        let seconds = u64::try_from(self.observed.lease_duration_seconds).unwrap_or(0);
        self.observed_at.map(|at| at + Duration::from_secs(seconds))
    }

    /// client-go's `isLeaseValid`: the observed lease has not expired at `now`.
    pub(crate) fn lease_valid(&self, now: Instant) -> bool {
        self.expiry().is_some_and(|expiry| expiry > now)
    }

    /// The record a holder writes to renew on the fast path, without reading first
    /// (client-go's step 1), or `None` if we do not hold a valid lease.
    pub(crate) fn renewal(&self, now: Instant, wall: Timestamp, seconds: i32) -> Option<Record> {
        (self.is_leader() && self.lease_valid(now)).then(|| Record {
            holder: self.identity.clone(),
            lease_duration_seconds: seconds,
            acquire_time: self.observed.acquire_time,
            renew_time: Some(wall),
            transitions: self.observed.transitions,
        })
    }

    /// The record that creates a Lease nobody made yet (client-go's step 2).
    pub(crate) fn fresh(&self, wall: Timestamp, seconds: i32) -> Record {
        Record {
            holder: self.identity.clone(),
            lease_duration_seconds: seconds,
            acquire_time: Some(wall),
            renew_time: Some(wall),
            transitions: 0,
        }
    }

    /// client-go's steps 3 and 4: observe the record read at `now`, then leave a
    /// valid lease of someone else alone, or write ours (keeping the acquire time and
    /// transitions when renewing, counting one more transition when taking over).
    pub(crate) fn plan(
        &mut self,
        read: Record,
        now: Instant,
        wall: Timestamp,
        seconds: i32,
    ) -> Plan {
        self.observe(read, now);
        if !self.observed.holder.is_empty() && self.lease_valid(now) && !self.is_leader() {
            return Plan::Held {
                holder: self.observed.holder.clone(),
            };
        }
        let mut record = self.fresh(wall, seconds);
        if self.is_leader() {
            record.acquire_time = self.observed.acquire_time;
            record.transitions = self.observed.transitions;
        } else {
            record.transitions = self.observed.transitions + 1;
        }
        Plan::Write(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    fn held_by(holder: &str, seconds: i32, renewed: i64, transitions: i32) -> Record {
        Record {
            holder: holder.to_owned(),
            lease_duration_seconds: seconds,
            acquire_time: Some(at(0)),
            renew_time: Some(at(renewed)),
            transitions,
        }
    }

    /// client-go's TestTryAcquireOrRenew "acquire from no object": the creating
    /// record starts the transitions at 0.
    #[test]
    fn creating_starts_a_fresh_record() {
        let me = Observer::new("me");
        let record = me.fresh(at(5), 10);
        assert_eq!(record.holder, "me");
        assert_eq!(record.transitions, 0);
        assert_eq!(record.acquire_time, record.renew_time);
        assert_eq!(record.lease_duration_seconds, 10);
    }

    /// client-go's TestTryAcquireOrRenew "acquire from unled object", "acquire from
    /// empty led, acked object" and "acquire from object without annotations": no
    /// holder means take it at once, even if the record was seen just now (a
    /// released lease), counting one more transition.
    #[tokio::test(start_paused = true)]
    async fn an_unheld_lease_is_taken_at_once() {
        let mut me = Observer::new("me");
        let released = held_by("other", 10, 3, 4).released(at(4));
        let now = Instant::now();
        me.observe(released.clone(), now);
        let Plan::Write(record) = me.plan(released, now, at(5), 10) else {
            panic!("an unheld lease is taken");
        };
        assert_eq!(record.holder, "me");
        assert_eq!(record.transitions, 5);
        assert_eq!(record.acquire_time, Some(at(5)));

        // "acquire from object without annotations": a Lease with an empty spec.
        let mut fresh_eyes = Observer::new("me");
        let Plan::Write(record) = fresh_eyes.plan(Record::from_spec(None), now, at(5), 10) else {
            panic!("a Lease without a record is taken");
        };
        assert_eq!((record.holder.as_str(), record.transitions), ("me", 1));
    }

    /// client-go's TestTryAcquireOrRenew "don't acquire from led, acked object",
    /// "acquire from led, unacked object" and "acquire from led object with the
    /// lease duration seconds": a held record is valid until its holder's duration
    /// (not ours) has passed since *we* first saw it, whatever its timestamps say.
    #[tokio::test(start_paused = true)]
    async fn a_held_lease_expires_by_observed_time_only() {
        let mut me = Observer::new("me");
        // Renewed "an hour ago" by its holder's clock: a skewed clock, not a dead
        // holder. We saw it just now, so it is valid for 10 s of our time.
        let record = held_by("other", 10, -3600, 2);
        let start = Instant::now();
        assert_eq!(
            me.plan(record.clone(), start, at(0), 15),
            Plan::Held {
                holder: "other".into()
            }
        );
        tokio::time::advance(9 * SECOND).await;
        assert!(matches!(
            me.plan(record.clone(), Instant::now(), at(9), 15),
            Plan::Held { .. }
        ));
        tokio::time::advance(SECOND).await;
        let Plan::Write(taken) = me.plan(record, Instant::now(), at(10), 15) else {
            panic!("expired after the holder's 10 s, not our 15 s");
        };
        assert_eq!((taken.holder.as_str(), taken.transitions), ("me", 3));
        assert_eq!(taken.lease_duration_seconds, 15);
    }

    /// A holder that keeps renewing never expires for us, even with a renew time
    /// that jumps around (clock skew): each change restarts the observed time.
    #[tokio::test(start_paused = true)]
    async fn a_renewing_holder_never_expires() {
        let mut me = Observer::new("me");
        for step in 0..10 {
            let renewed = if step % 2 == 0 { -7200 } else { 7200 } + step;
            let record = held_by("other", 10, renewed, 1);
            assert!(matches!(
                me.plan(record, Instant::now(), at(step), 10),
                Plan::Held { .. }
            ));
            tokio::time::advance(8 * SECOND).await;
        }
    }

    /// client-go's TestTryAcquireOrRenew "renew already acquired object" and
    /// TestFastPathLeaderElection "Exercise fast path after lock acquired": our own
    /// record is renewed without a read while valid, and after a read once it
    /// expired for us, keeping its acquire time and transitions either way.
    #[tokio::test(start_paused = true)]
    async fn renewing_keeps_acquire_time_and_transitions() {
        let mut me = Observer::new("me");
        let ours = held_by("me", 10, 0, 7);
        me.wrote(ours.clone(), Instant::now());
        let fast = me
            .renewal(Instant::now(), at(2), 10)
            .expect("valid: fast path");
        assert_eq!((fast.acquire_time, fast.transitions), (Some(at(0)), 7));
        assert_eq!(fast.renew_time, Some(at(2)));

        tokio::time::advance(11 * SECOND).await;
        assert_eq!(
            me.renewal(Instant::now(), at(11), 10),
            None,
            "expired: no fast path"
        );
        let Plan::Write(slow) = me.plan(ours, Instant::now(), at(11), 10) else {
            panic!("our own lease is renewed");
        };
        assert_eq!((slow.acquire_time, slow.transitions), (Some(at(0)), 7));
    }

    /// A record someone else wrote over ours makes us a follower at once.
    #[tokio::test(start_paused = true)]
    async fn another_holder_over_ours_is_respected() {
        let mut me = Observer::new("me");
        me.wrote(held_by("me", 10, 0, 1), Instant::now());
        tokio::time::advance(SECOND).await;
        let taken = held_by("other", 10, 1, 2);
        assert_eq!(
            me.plan(taken, Instant::now(), at(1), 10),
            Plan::Held {
                holder: "other".into()
            }
        );
        assert!(!me.is_leader());
    }

    /// client-go's TestLeaseSpecToLeaderElectionRecordRoundTrip, and release.
    #[test]
    fn record_round_trips_through_the_lease_spec() {
        let record = held_by("me", 15, 4, 3);
        assert_eq!(Record::from_spec(Some(&record.to_spec())), record);
        assert_eq!(Record::from_spec(None), Record::default());
        let released = record.released(at(9));
        assert_eq!(released.holder, "");
        assert_eq!(released.transitions, 3);
        assert_eq!(released.lease_duration_seconds, 1);
        assert!(wall_now() > at(0));
    }
}
