//! [`ShardMember`]: the loop that keeps this replica's Lease, reads the group, fences
//! members whose lease expired, and hands keys over (see the [protocol](super)).

use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use tokio::sync::watch;
use tokio::time::{Instant, sleep, sleep_until, timeout};

use super::assignment::Assignment;
use super::handle::{HandleParts, ShardHandle};
use super::in_flight::InFlight;
use super::lease::{GroupLeases, holder, published_view};
use super::ring::View;
use super::stats::Counters;
use super::{ShardConfig, ShardError};
use crate::clock::{ClockReading, MissedTime};
use crate::hold::Holds;

/// One replica's membership in a shard group; see the [module documentation](super).
///
/// Build it with [`new`](Self::new), give [`handle`](Self::handle)s to what reconciles
/// (a [`Controller`](crate::controller::Controller) built with
/// [`Controller::sharded`](crate::controller::Controller::sharded)), and drive it
/// with [`run`](Self::run).
#[derive(Debug)]
pub struct ShardMember {
    config: ShardConfig,
    leases: GroupLeases,
    state: watch::Sender<Arc<Assignment>>,
    generation: watch::Sender<u64>,
    in_flight: Arc<InFlight>,
    /// Writes let through under this member's claims and not yet answered.
    writes: Arc<Holds>,
    counters: Arc<Counters>,
    /// The clocks the member's deadlines are checked with.
    clocks: Arc<MissedTime>,
    /// Held by the controllers working this member's keys until their
    /// pending events are written: a clean shutdown waits for them before it deletes
    /// the Lease.
    releases: Arc<Holds>,
    identity: Arc<str>,
}

/// Another member's Lease as this member last saw it change, and when.
struct Seen {
    uid: Option<String>,
    resource_version: Option<String>,
    at: Instant,
}

/// What a read of the group found: the members (the Leases present) and the other
/// members' published views.
type GroupRead = (View, Vec<(Arc<str>, View)>);

/// What the loop keeps between rounds.
#[derive(Default)]
struct Round {
    /// This member's Lease as last written (its resourceVersion goes with the next
    /// renewal); `None` before it exists or after it was fenced.
    own: Option<Lease>,
    /// The view the last successful write published.
    published: View,
    /// The view to publish next.
    want: View,
    /// When the last successful write was sent.
    renewed: Option<Instant>,
    /// The clocks then.
    renewed_clocks: Option<ClockReading>,
    /// A read of the group succeeded since this member's Lease was created: until
    /// then no key is ours (what the others claim is not known).
    read_since_created: bool,
    /// The other members' Leases by name.
    seen: HashMap<String, Seen>,
    /// The target view whose hand-off started, and when.
    handoff: Option<(View, Instant)>,
    /// The earliest moment another member's Lease, unchanged since, expires as this
    /// member times it (the next read is then, not a retry period later).
    next_expiry: Option<Instant>,
    /// The last request failure logged (logged once per streak).
    failing: Option<String>,
    /// The last write created this member's Lease: the next read waits a retry
    /// period (see [`ShardMember::run`]).
    joined: bool,
}

impl ShardMember {
    /// A member for `config`, talking to the API server through `client`.
    ///
    /// # Errors
    /// A [`ShardError`] config variant if the group or identity is unusable in a
    /// Lease name, or the timings break leader election's rules.
    pub fn new(client: kube::Client, config: ShardConfig) -> Result<Self, ShardError> {
        config.validate()?;
        let identity: Arc<str> = Arc::from(config.identity.as_str());
        Ok(Self {
            leases: GroupLeases::new(client, &config),
            state: watch::Sender::new(Arc::new(Assignment::initial(Arc::clone(&identity)))),
            generation: watch::Sender::new(0),
            in_flight: Arc::default(),
            writes: Arc::default(),
            counters: Arc::default(),
            clocks: Arc::new(MissedTime::new(crate::clock::system())),
            releases: Arc::default(),
            identity,
            config,
        })
    }

    /// This member's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The config it runs with.
    pub fn config(&self) -> &ShardConfig {
        &self.config
    }

    /// How this member's views lay the buckets out (its [`ShardBy`](super::ShardBy)'s).
    fn layout(&self) -> super::ring::Layout {
        self.config.shard_by.layout()
    }

    /// A handle to ask which keys are this member's.
    pub fn handle(&self) -> ShardHandle {
        ShardHandle::new(
            self.state.subscribe(),
            self.generation.subscribe(),
            HandleParts {
                in_flight: Arc::clone(&self.in_flight),
                writes: Arc::clone(&self.writes),
                counters: Arc::clone(&self.counters),
                clocks: Arc::clone(&self.clocks),
                releases: Arc::clone(&self.releases),
                identity: Arc::clone(&self.identity),
                group: Arc::from(self.config.group.as_str()),
                shard_by: self.config.shard_by,
            },
        )
    }

    /// Takes part in the group until `shutdown` completes: renews this member's
    /// Lease every retry period, reads the group's, fences members whose lease
    /// expired, and hands keys over as members come and go. On shutdown it stops
    /// taking keys, lets running reconciles finish (up to the hand-off timeout) and
    /// deletes its Lease, so the others take its keys at their next read.
    ///
    /// Failed requests are logged and retried; they never end the run.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) {
        let mut shutdown = pin!(shutdown);
        let mut round = Round::default();
        tracing::info!(lease = self.leases.describe(), identity = %self.identity, "joining the shard group");
        round.want = match self.leases.list().await {
            Ok(leases) => View::of(
                self.layout(),
                leases.iter().filter_map(holder).chain([&*self.identity]),
            ),
            // Claiming every key only makes the others wait one round.
            Err(_) => View::of(self.layout(), [&*self.identity]),
        };
        loop {
            self.write(&mut round).await;
            if std::mem::take(&mut round.joined) {
                // Replicas started together (a rollout) create their Leases within
                // moments of each other. Read right after creating, each would find
                // itself alone, own every key for a round and, through a filtered
                // cache, list the whole collection before shrinking to its shard.
                // One retry period lets the others' Leases appear first.
                tokio::select! {
                    () = sleep(self.config.timings.retry_period) => {}
                    () = shutdown.as_mut() => break,
                }
            }
            let Some(assignment) = self.read(&mut round).await else {
                tokio::select! {
                    () = sleep(self.config.timings.retry_period) => continue,
                    () = shutdown.as_mut() => break,
                }
            };
            let next = self.handoff(&mut round, &assignment);
            tokio::select! {
                () = next => {}
                () = shutdown.as_mut() => break,
            }
        }
        self.step_down(&mut round).await;
    }

    /// Creates or renews this member's Lease, publishing `round.want`.
    async fn write(&self, round: &mut Round) {
        for _ in 0..2 {
            let clocks = self.clocks.read();
            let sent = Instant::now();
            let result = match &round.own {
                None => self.leases.create(&round.want).await,
                Some(last) => self.leases.renew(last, &round.want).await,
            };
            match result {
                Ok(lease) => {
                    let created = round.own.as_ref().and_then(|l| l.metadata.uid.as_ref())
                        != lease.metadata.uid.as_ref();
                    if created {
                        round.read_since_created = false;
                        round.joined = true;
                    }
                    if round.published != round.want || round.own.is_none() {
                        tracing::info!(identity = %self.identity, view = ?round.want, "published the view this member acts under");
                    }
                    round.own = Some(lease);
                    round.published = round.want.clone();
                    round.renewed = Some(sent);
                    round.renewed_clocks = Some(clocks);
                    round.failing = None;
                    return;
                }
                Err(error) if error.status() == Some(404) && round.own.is_some() => {
                    // Fenced: another member saw no renewal for a lease duration. Our
                    // renew deadline has passed, so nothing of ours runs; join anew.
                    tracing::warn!(identity = %self.identity, "this member's Lease was deleted by another member (no renewal seen for a lease duration); joining again");
                    self.fenced(round);
                }
                Err(error) if error.status() == Some(409) => {
                    // An earlier write went through but its answer was lost, or our
                    // Lease survives from an earlier run under this identity: go on
                    // from the Lease as it is.
                    match self.leases.get_own().await {
                        Ok(own) => round.own = own,
                        Err(error) => return self.failed(round, &error),
                    }
                }
                Err(error) => return self.failed(round, &error),
            }
        }
    }

    /// Reads the group, fences expired members, and publishes the new assignment to
    /// the handles. `None` if the read failed.
    async fn read(&self, round: &mut Round) -> Option<Arc<Assignment>> {
        let leases = match self.leases.list().await {
            Ok(leases) => leases,
            Err(error) => {
                self.failed(round, &error);
                self.refresh(round, None);
                return None;
            }
        };
        let now = Instant::now();
        let own_name = self.config.lease_name();
        let mut me_present = false;
        let mut others = Vec::new();
        let mut names = Vec::new();
        let mut next_expiry = None;
        for lease in leases {
            let name = lease.metadata.name.clone().unwrap_or_default();
            if name == own_name {
                me_present = true;
                continue;
            }
            let Some(member) = holder(&lease).map(Arc::<str>::from) else {
                continue;
            };
            names.push(name.clone());
            let seen = round.seen.entry(name).or_insert_with(|| Seen {
                uid: None,
                resource_version: None,
                at: now,
            });
            if seen.uid != lease.metadata.uid
                || seen.resource_version != lease.metadata.resource_version
            {
                seen.uid.clone_from(&lease.metadata.uid);
                seen.resource_version
                    .clone_from(&lease.metadata.resource_version);
                seen.at = now;
            }
            let duration = lease
                .spec
                .as_ref()
                .and_then(|spec| spec.lease_duration_seconds)
                .and_then(|seconds| u64::try_from(seconds).ok())
                .map_or(self.config.timings.lease_duration, Duration::from_secs)
                .max(Duration::from_secs(1));
            let expiry = seen.at + duration;
            if now >= expiry && self.fence(&lease, &member, duration).await {
                continue;
            }
            if expiry > now {
                next_expiry = Some(next_expiry.map_or(expiry, |next: Instant| next.min(expiry)));
            }
            others.push((member, published_view(self.layout(), &lease)));
        }
        round.seen.retain(|name, _| names.contains(name));
        round.next_expiry = next_expiry;
        if !me_present && round.own.is_some() {
            tracing::warn!(identity = %self.identity, "this member's Lease is gone; joining again");
            self.fenced(round);
        }
        let members = View::of(
            self.layout(),
            others
                .iter()
                .map(|(member, _)| &**member)
                .chain(me_present.then_some(&*self.identity)),
        );
        Some(self.refresh(round, Some((members, others))))
    }

    /// Deletes an expired member's Lease as observed; `true` if it is gone.
    async fn fence(&self, lease: &Lease, member: &str, duration: Duration) -> bool {
        match self.leases.delete_as_observed("fencing", lease).await {
            Ok(()) => {
                tracing::info!(identity = %self.identity, member, ?duration, "fenced a member whose lease expired: its keys move to the others");
                self.counters.fenced_member();
                true
            }
            Err(error) => {
                // Renewed meanwhile (409), or the delete failed: still a member.
                tracing::debug!(identity = %self.identity, member, error = %error, "not fenced");
                false
            }
        }
    }

    /// Publishes the assignment for `read` (the members and the others' views; `None`
    /// keeps the last read's) with this member's current deadlines.
    ///
    /// The published view goes into the assignment only with a read: what the others
    /// claim must have been read *after* the claims this member acts on were
    /// published. A failed read keeps the last read's views and only moves the
    /// deadlines.
    fn refresh(&self, round: &mut Round, read: Option<GroupRead>) -> Arc<Assignment> {
        let previous = self.state.borrow().clone();
        let (members, published, others) = match read {
            Some((members, others)) => {
                round.read_since_created = round.own.is_some();
                (members, round.published.clone(), others)
            }
            None => (
                previous.members.clone(),
                previous.published.clone(),
                previous.others.clone(),
            ),
        };
        let (renew_deadline, lease_expiry, active) = match round.renewed {
            Some(sent) => (
                sent + self.config.timings.renew_deadline,
                sent + self.config.timings.lease_duration,
                round.own.is_some() && round.read_since_created,
            ),
            None => (previous.renew_deadline, previous.lease_expiry, false),
        };
        let members_changed = members != previous.members;
        let membership = round
            .own
            .as_ref()
            .and_then(|own| own.metadata.uid.as_deref())
            .map(Arc::from);
        let assignment = Arc::new(Assignment {
            me: Arc::clone(&self.identity),
            members,
            published,
            others,
            active,
            renew_deadline,
            lease_expiry,
            stopped: false,
            membership,
            renewed_clocks: round.renewed_clocks,
        });
        self.state.send_replace(Arc::clone(&assignment));
        if members_changed {
            // After the new assignment is visible: a filtered informer relisting on
            // the generation must read the new answer.
            tracing::info!(identity = %self.identity, members = ?assignment.members, "shard group members changed");
            self.generation.send_modify(|generation| *generation += 1);
        }
        assignment
    }

    /// What to wait for before the next round: when the target view differs from the
    /// published one, the end of the reconciles of keys moving away (then publish at
    /// once), dropping them after the hand-off timeout; otherwise one retry period,
    /// or less when another member's lease expires sooner.
    async fn handoff(&self, round: &mut Round, assignment: &Assignment) {
        if assignment.members == round.published {
            round.handoff = None;
            round.want = round.published.clone();
            // Read again the moment a silent member's lease expires: waiting for the
            // next retry period would add up to one to every takeover after a crash.
            let next = Instant::now() + self.config.timings.retry_period;
            let wake = round.next_expiry.map_or(next, |expiry| expiry.min(next));
            return sleep_until(wake).await;
        }
        let now = Instant::now();
        let started = match &round.handoff {
            Some((target, since)) if *target == assignment.members => *since,
            _ => now,
        };
        round.handoff = Some((assignment.members.clone(), started));
        let moving = |key| assignment.moving_away(key);
        let deadline = started + self.config.handoff_timeout;
        let wait = if now >= deadline {
            // Counted by the controller where each ends (a reconcile may finish first).
            let dropped = self.in_flight.drop_matching(moving);
            if dropped > 0 {
                tracing::warn!(identity = %self.identity, dropped, "dropped reconciles of keys that moved away (hand-off timeout)");
            }
            // Dropped reconciles end at their next poll.
            self.config.timings.retry_period
        } else {
            (deadline - now).min(self.config.timings.retry_period)
        };
        if timeout(wait, self.in_flight.drained(moving)).await.is_ok() {
            round.want = assignment.members.clone();
        }
    }

    /// Our Lease was deleted: nothing of ours may run; the next write creates it anew.
    fn fenced(&self, round: &mut Round) {
        round.own = None;
        round.renewed = None;
        round.renewed_clocks = None;
        round.read_since_created = false;
        round.published = View::default();
        self.counters.rejoined();
        self.in_flight.drop_matching(|_| true);
        self.refresh(round, None);
    }

    fn failed(&self, round: &mut Round, error: &ShardError) {
        self.counters.request_failed();
        let message = error.to_string();
        if round.failing.as_deref() != Some(message.as_str()) {
            tracing::warn!(identity = %self.identity, %error, "shard group request failed; retrying");
            round.failing = Some(message);
        }
    }

    /// Stops taking keys, lets running reconciles end (up to the hand-off timeout),
    /// deletes this member's Lease and marks the handles stopped.
    async fn step_down(&self, round: &mut Round) {
        self.state
            .send_modify(|state| Arc::make_mut(state).active = false);
        if timeout(
            self.config.handoff_timeout,
            self.in_flight.drained(|_| true),
        )
        .await
        .is_err()
        {
            self.in_flight.drop_matching(|_| true);
        }
        // The controllers write their pending events (within the hand-off timeout).
        if timeout(self.config.handoff_timeout, self.releases.released())
            .await
            .is_err()
        {
            tracing::warn!(identity = %self.identity, "a controller did not finish within the hand-off timeout; leaving the group anyway");
        }
        // The membership ends before the Lease goes: work claimed under it (a
        // context a task kept, an event not yet written) may not go on while others
        // take the keys.
        self.state
            .send_modify(|state| Arc::make_mut(state).membership = None);
        // And the writes that passed the fence just before are answered first: were
        // the Lease gone while one is on its way, another member could take its key
        // and the old write land after that member's.
        if timeout(self.config.handoff_timeout, self.writes.released())
            .await
            .is_err()
        {
            tracing::warn!(identity = %self.identity, "a write was still unanswered at the hand-off timeout; leaving the group anyway");
        }
        if let Some(own) = &round.own {
            match self.leases.delete_as_observed("releasing", own).await {
                Ok(()) => {
                    tracing::info!(identity = %self.identity, "left the shard group: Lease deleted")
                }
                Err(error) => {
                    tracing::warn!(identity = %self.identity, error = %error, "could not delete this member's Lease; the others take its keys once it expires")
                }
            }
        }
        self.state.send_modify(|state| {
            let state = Arc::make_mut(state);
            state.active = false;
            state.stopped = true;
        });
    }
}
