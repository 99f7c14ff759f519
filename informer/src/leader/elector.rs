//! [`LeaderElector`]: the acquire and renew loops of client-go's `LeaderElector`, on
//! a Lease.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};

use super::config::jittered;
use super::leadership::LeadershipHandle;
use super::lease_lock::{LeaseLock, is_conflict};
use super::record::{Observer, Plan, Record, wall_now};
use super::state::{Candidate, Leadership, State};
use super::{LeaderElectionConfig, LeaderError};
use crate::clock::{ClockReading, MissedTime};
use crate::hold::Holds;

/// Runs the election for one replica; see the [module documentation](super).
///
/// Build it with [`new`](Self::new), hand [`handle`](Self::handle)s to what should
/// run only while leading (a [`Controller`](crate::controller::Controller) takes one
/// with [`leader_election`](crate::controller::Controller::leader_election)), and
/// drive it with [`run`](Self::run).
#[derive(Debug)]
pub struct LeaderElector {
    config: LeaderElectionConfig,
    lock: LeaseLock,
    state: watch::Sender<State>,
    /// Held by every [`Term`](super::Term): a release waits until none is left.
    terms: Arc<Holds>,
    candidate: Arc<Candidate>,
}

/// The outcome of one try on the Lease.
enum Outcome {
    /// We hold it: acquired or renewed, by a write sent at this instant.
    Holding { sent: Instant },
    /// Someone else holds a valid lease.
    HeldBy(String),
}

/// How a term ended.
enum TermEnd {
    /// The renew deadline passed, or someone else took the lease.
    Lost,
    /// Shut down and every term dropped: release (if configured) and stop.
    SteppedDown,
    /// Shut down, but the terms were not dropped within the renew deadline: stop
    /// without releasing (the lease expires on its own).
    Abandoned,
}

/// What the elector keeps between tries: what it observed, and the Lease as last
/// read or written (whose resourceVersion the next update carries).
struct Tries {
    observer: Observer,
    last: Option<Lease>,
    /// The clocks when the last write was sent (with the `sent` it returned).
    sent_clocks: Option<ClockReading>,
}

impl LeaderElector {
    /// An elector for `config`, talking to the API server through `client`.
    ///
    /// # Errors
    /// A [`LeaderError`] config variant if the Lease or identity is unnamed or the
    /// timings break client-go's rules (`lease_duration > renew_deadline >
    /// retry_period * 1.2`, all above zero, the lease at least a second).
    pub fn new(client: kube::Client, config: LeaderElectionConfig) -> Result<Self, LeaderError> {
        config.validate()?;
        let lock = LeaseLock::new(client, &config.namespace, &config.name);
        Ok(Self {
            candidate: Arc::new(Candidate {
                identity: config.identity.clone(),
                lease: config.name.clone(),
                lease_duration: config.timings.lease_duration,
                slow_path_renewals: AtomicU64::new(0),
                dropped_reconciles: AtomicU64::new(0),
                refused_writes: AtomicU64::new(0),
                clocks: MissedTime::new(crate::clock::system()),
                writes: Arc::default(),
            }),
            lock,
            state: watch::Sender::new(State::new()),
            terms: Arc::default(),
            config,
        })
    }

    /// This replica's identity.
    pub fn identity(&self) -> &str {
        &self.candidate.identity
    }

    /// The config it runs with.
    pub fn config(&self) -> &LeaderElectionConfig {
        &self.config
    }

    /// A handle to watch the election and to wait for a [`Term`](super::Term).
    pub fn handle(&self) -> LeadershipHandle {
        LeadershipHandle::new(
            self.state.subscribe(),
            Arc::clone(&self.terms),
            Arc::clone(&self.candidate),
        )
    }

    /// Competes for the lease until `shutdown` completes: acquires it when it is
    /// free or has expired (by observed time), renews it every retry period while
    /// leading, stops leading when a renewal has not succeeded within the renew
    /// deadline (and competes again), and on shutdown waits until every
    /// [`Term`](super::Term) is dropped and then releases the lease (with
    /// [`release_on_shutdown`](LeaderElectionConfig::release_on_shutdown)).
    ///
    /// Failed requests are logged and retried, as in client-go; they never end the
    /// run. When it returns, the handles show [`Leadership::Stopped`].
    pub async fn run(mut self, shutdown: impl Future<Output = ()> + Send) {
        let mut shutdown = pin!(shutdown);
        let mut tries = Tries {
            observer: Observer::new(self.identity().to_owned()),
            last: None,
            sent_clocks: None,
        };
        tracing::info!(lease = self.lock.describe(), identity = %self.identity(), "attempting to acquire the leader lease");
        loop {
            let Some(sent) = self.acquire(&mut tries, shutdown.as_mut()).await else {
                break;
            };
            match self.lead(&mut tries, sent, shutdown.as_mut()).await {
                TermEnd::Lost => continue,
                TermEnd::SteppedDown => {
                    if self.config.release_on_shutdown {
                        self.end_term_for_writes().await;
                        self.release(&mut tries).await;
                    }
                    break;
                }
                TermEnd::Abandoned => break,
            }
        }
        self.state
            .send_modify(|s| s.leadership = Leadership::Stopped);
    }

    /// Tries until the lease is ours (returns the send time of the winning write),
    /// or `None` on shutdown. Shutdown is checked between tries, not during one, so
    /// a write that won is never left unknown.
    async fn acquire(
        &self,
        tries: &mut Tries,
        mut shutdown: Pin<&mut impl Future<Output = ()>>,
    ) -> Option<Instant> {
        let mut failing = false;
        loop {
            let limit = self.request_limit();
            match self.try_acquire_or_renew(tries, limit).await {
                Ok(Outcome::Holding { sent }) => return Some(sent),
                Ok(Outcome::HeldBy(holder)) => {
                    failing = false;
                    self.follow(Some(holder));
                }
                Err(error) => {
                    if !failing {
                        tracing::warn!(lease = self.lock.describe(), %error, "leader election: could not try the lease; retrying");
                    }
                    failing = true;
                    self.follow(self.observed_holder(tries));
                }
            }
            // Wake at the observed expiry if it comes before the jittered retry:
            // a standby then takes over as soon as the rules allow.
            let mut wake = Instant::now() + jittered(self.config.timings.retry_period);
            if let Some(expiry) = tries.observer.expiry()
                && expiry > Instant::now()
                && expiry < wake
                && !tries.observer.is_leader()
            {
                wake = expiry + Duration::from_millis(1);
            }
            tokio::select! {
                () = sleep_until(wake) => {}
                () = &mut shutdown => return None,
            }
        }
    }

    /// Leads until the lease is lost or the elector steps down.
    async fn lead(
        &mut self,
        tries: &mut Tries,
        sent: Instant,
        mut shutdown: Pin<&mut impl Future<Output = ()>>,
    ) -> TermEnd {
        tracing::info!(lease = self.lock.describe(), identity = %self.identity(), "became leader");
        self.renewed(sent, tries.sent_clocks, true);
        let mut stepping_down: Option<Instant> = None;
        let mut renewed_at = sent;
        loop {
            let next = Instant::now() + self.config.timings.retry_period;
            tokio::select! {
                () = sleep_until(next) => {}
                () = &mut shutdown, if stepping_down.is_none() => {
                    tracing::info!(lease = self.lock.describe(), "stepping down: waiting for the leader's work to stop");
                    self.state.send_modify(|s| s.stepping_down = true);
                    stepping_down = Some(Instant::now() + self.config.timings.renew_deadline);
                    continue;
                }
                () = self.terms.released(), if stepping_down.is_some() => return TermEnd::SteppedDown,
                () = sleep_until(stepping_down.unwrap_or_else(Instant::now)), if stepping_down.is_some() => {
                    tracing::warn!(lease = self.lock.describe(), "the leader's work did not stop within the renew deadline; not releasing the lease");
                    self.lose(None);
                    return TermEnd::Abandoned;
                }
            }
            match self.renew(tries, renewed_at).await {
                Ok(sent) => {
                    renewed_at = sent;
                    self.renewed(sent, tries.sent_clocks, false);
                }
                Err(holder) => {
                    tracing::warn!(lease = self.lock.describe(), identity = %self.identity(), "stopped leading: the lease was not renewed within the renew deadline");
                    self.lose(holder);
                    return if stepping_down.is_some() {
                        TermEnd::Abandoned
                    } else {
                        TermEnd::Lost
                    };
                }
            }
        }
    }

    /// Renews until it succeeds (the send time of the write) or the renew deadline
    /// since `renewed_at` passes or another replica holds the lease (`Err` with the
    /// holder, if known).
    async fn renew(
        &self,
        tries: &mut Tries,
        renewed_at: Instant,
    ) -> Result<Instant, Option<String>> {
        let deadline = renewed_at + self.config.timings.renew_deadline;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Err(None);
            }
            let limit = self.request_limit().min(deadline - now);
            // A try may take several requests: the deadline bounds them all.
            let Ok(tried) =
                tokio::time::timeout_at(deadline, self.try_acquire_or_renew(tries, limit)).await
            else {
                return Err(None);
            };
            match tried {
                Ok(Outcome::Holding { sent }) => return Ok(sent),
                // Someone else holds it: never lead beside them.
                Ok(Outcome::HeldBy(holder)) => return Err(Some(holder)),
                Err(error) => {
                    tracing::debug!(lease = self.lock.describe(), %error, "failed to renew the lease; retrying");
                }
            }
            let retry = (Instant::now() + self.config.timings.retry_period).min(deadline);
            sleep_until(retry).await;
        }
    }

    /// client-go's `tryAcquireOrRenew`: the fast path (update what we hold without
    /// reading), else read, then create, leave alone, or write.
    async fn try_acquire_or_renew(
        &self,
        tries: &mut Tries,
        limit: Duration,
    ) -> Result<Outcome, LeaderError> {
        let seconds = self.config.lease_duration_seconds();
        let sent = self.send_time(tries);
        if let (Some(record), Some(last)) = (
            tries.observer.renewal(sent, wall_now(), seconds),
            tries.last.as_ref(),
        ) {
            match self.lock.update(last, &record, limit).await {
                Ok(written) => {
                    tries.last = Some(written);
                    tries.observer.wrote(record, Instant::now());
                    return Ok(Outcome::Holding { sent });
                }
                Err(error) => {
                    tracing::debug!(lease = self.lock.describe(), %error, "optimistic renewal failed; reading the lease");
                }
            }
        }

        let Some(lease) = self.lock.get(limit).await? else {
            let record = tries.observer.fresh(wall_now(), seconds);
            let sent = self.send_time(tries);
            let created = self.lock.create(&record, limit).await?;
            tries.last = Some(created);
            tries.observer.wrote(record, Instant::now());
            return Ok(Outcome::Holding { sent });
        };
        let read = Record::from_spec(lease.spec.as_ref());
        let plan = tries
            .observer
            .plan(read, Instant::now(), wall_now(), seconds);
        match plan {
            Plan::Held { holder } => {
                tries.last = Some(lease);
                Ok(Outcome::HeldBy(holder))
            }
            Plan::Write(record) => {
                if tries.observer.is_leader() {
                    // The Lease as read names us: a renewal the fast path could
                    // not make (client-go's slow path).
                    self.candidate
                        .slow_path_renewals
                        .fetch_add(1, Ordering::Relaxed);
                }
                let sent = self.send_time(tries);
                match self.lock.update(&lease, &record, limit).await {
                    Ok(written) => {
                        tries.last = Some(written);
                        tries.observer.wrote(record, Instant::now());
                        Ok(Outcome::Holding { sent })
                    }
                    Err(error) => {
                        tries.last = Some(lease);
                        Err(error)
                    }
                }
            }
        }
    }

    /// Before a release: the term ends for the work (a write through a context a task
    /// kept is refused from now on), then the writes that passed the fence just
    /// before are answered (within the renew deadline): were the lease released while
    /// one is on its way, another replica could lead and the old write land after its
    /// first.
    async fn end_term_for_writes(&self) {
        self.state
            .send_modify(|s| s.renew_deadline = s.renew_deadline.min(Instant::now()));
        let answered = self.candidate.writes.released();
        if tokio::time::timeout(self.config.timings.renew_deadline, answered)
            .await
            .is_err()
        {
            tracing::warn!(
                lease = self.lock.describe(),
                "a write was still unanswered at the renew deadline; releasing the lease anyway"
            );
        }
    }

    /// client-go's `tryRelease`: if the Lease still names us, write a record with no
    /// holder (keeping the transitions), retrying on conflict, all within the renew
    /// deadline.
    async fn release(&self, tries: &mut Tries) {
        let until = Instant::now() + self.config.timings.renew_deadline;
        loop {
            let limit = until.saturating_duration_since(Instant::now());
            if limit.is_zero() {
                tracing::warn!(
                    lease = self.lock.describe(),
                    "could not release the lease in time; it will expire"
                );
                return;
            }
            let lease = match self.lock.get(limit).await {
                Ok(Some(lease)) => lease,
                Ok(None) => return,
                Err(error) => {
                    tracing::warn!(lease = self.lock.describe(), %error, "could not release the lease; it will expire");
                    return;
                }
            };
            let current = Record::from_spec(lease.spec.as_ref());
            if current.holder != self.identity() {
                return;
            }
            let released = current.released(wall_now());
            match self.lock.update(&lease, &released, limit).await {
                Ok(written) => {
                    tries.last = Some(written);
                    tries.observer.wrote(released, Instant::now());
                    tracing::info!(lease = self.lock.describe(), identity = %self.identity(), "released the lease");
                    return;
                }
                Err(error) if is_conflict(&error) => continue,
                Err(error) => {
                    tracing::warn!(lease = self.lock.describe(), %error, "could not release the lease; it will expire");
                    return;
                }
            }
        }
    }

    /// The send time of a write about to be sent, with the clocks then (kept in
    /// `tries` for [`renewed`](Self::renewed)).
    fn send_time(&self, tries: &mut Tries) -> Instant {
        tries.sent_clocks = Some(self.candidate.clocks.read());
        Instant::now()
    }

    /// A successful acquisition (`new_term`) or renewal sent at `sent`, with the
    /// clocks then.
    fn renewed(&self, sent: Instant, clocks: Option<ClockReading>, new_term: bool) {
        self.state.send_modify(|s| {
            if new_term {
                s.term += 1;
                s.leadership = Leadership::Leading;
            }
            s.renew_deadline = sent + self.config.timings.renew_deadline;
            s.lease_expiry = sent + self.config.timings.lease_duration;
            s.renewed_clocks = clocks;
        });
    }

    /// The term is over; `holder` took the lease, if known.
    fn lose(&self, holder: Option<String>) {
        self.state.send_modify(|s| {
            s.leadership = Leadership::Following { leader: holder };
            s.renew_deadline = s.renew_deadline.min(Instant::now());
        });
    }

    /// A candidate that observed `leader`: tell the handles if it changed.
    fn follow(&self, leader: Option<String>) {
        let leadership = Leadership::Following { leader };
        self.state.send_if_modified(|s| {
            if s.leadership == leadership {
                return false;
            }
            if let Leadership::Following {
                leader: Some(leader),
            } = &leadership
            {
                tracing::info!(lease = self.lock.describe(), %leader, "new leader observed");
            }
            s.leadership = leadership;
            true
        });
    }

    fn observed_holder(&self, tries: &Tries) -> Option<String> {
        let holder = &tries.observer.observed().holder;
        (!holder.is_empty() && holder != self.identity()).then(|| holder.clone())
    }

    /// How long one request may take: client-go's `max(1 s, renew deadline / 2)`
    /// (`NewFromKubeconfig`), so one hung request cannot use up the renew deadline.
    fn request_limit(&self) -> Duration {
        (self.config.timings.renew_deadline / 2).max(Duration::from_secs(1))
    }
}
