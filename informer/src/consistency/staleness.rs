//! [`Staleness`]: how long after the server the cache gets somewhere, from probes.
//!
//! A probe reads where the server is now (a consistent read, at time `at`) and then
//! learns the last change of the collection up to there (its *target*: a short watch
//! from the cache's point; see `probe.rs`). The cache has reached the server's state of
//! `at` once it holds a point at or past the target; the probe's lag is how long after
//! `at` that happened: 0 when the cache was there already. Its error is the consistent
//! read's round trip (the server's state is read somewhere within it).
//!
//! The gauge ([`Staleness::seconds`]) is the newest resolved probe's lag while every
//! probe is resolved, and, while one is not, the time since the oldest unresolved one
//! began: it grows second by second while the cache lags, and does not wait for the
//! cache to catch up to say so. A probe that could not reach the server counts as
//! unresolved until a later one resolves.
//!
//! resourceVersions are compared as integers: Kubernetes promises that they are from
//! 1.35 (KEP-5504), and every server before it that stores in etcd (1.20 included)
//! already issues etcd revisions, which compare the same way. A version that is not an
//! integer makes a probe give up without a reading.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// Points recorded while a probe looks for its target, at most: when full, every other
/// one is dropped and the spacing doubles, so the times stay spread over the probe's
/// whole flight.
const REACHED_LOG: usize = 128;

/// The least time between two points recorded while a probe looks for its target, at
/// first: the most a probe's lag can be understated by (128 of them cover the usual
/// probe; a longer one doubles it).
const REACHED_SPACING: Duration = Duration::from_millis(20);

/// Unresolved probes kept, at most: past it the second oldest goes (the oldest says
/// since when the cache has lagged).
const PENDING: usize = 16;

/// Probes and what they found; see the [module docs](self).
#[derive(Debug, Default)]
pub(crate) struct Staleness {
    next_id: u64,
    in_flight: Vec<InFlight>,
    /// Points recorded while a probe is in flight: (version, when), at least
    /// `spacing` apart.
    reached: Vec<(u64, Instant)>,
    spacing: Duration,
    pending: VecDeque<Pending>,
    /// The newest resolved probe's lag.
    last: Option<Duration>,
}

/// A probe that has not found its target yet.
#[derive(Debug)]
struct InFlight {
    id: u64,
    at: Instant,
    /// The cache's newest point when the probe began.
    from: Option<u64>,
}

/// A probe whose server state the cache has not reached.
#[derive(Debug)]
struct Pending {
    at: Instant,
    /// `None`: the probe did not reach the server; a later probe's target stands in.
    target: Option<u64>,
}

/// One probe, from [`Staleness::start`] to [`Staleness::finish`] or [`Staleness::abandon`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProbeId(u64);

impl Staleness {
    /// A probe begins at `now`, with the cache's newest point at `from`.
    pub(crate) fn start(&mut self, now: Instant, from: Option<u64>) -> ProbeId {
        self.next_id += 1;
        let id = self.next_id;
        self.in_flight.push(InFlight { id, at: now, from });
        ProbeId(id)
    }

    /// The cache recorded a point at `version`.
    pub(crate) fn reached(&mut self, version: u64, now: Instant) {
        if !self.in_flight.is_empty() {
            self.log_reached(version, now);
        }
        let newest_reached = self
            .pending
            .iter()
            .rposition(|p| p.target.is_some_and(|target| target <= version));
        if let Some(index) = newest_reached {
            let at = self.pending[index].at;
            self.resolve(index, now.saturating_duration_since(at));
        }
    }

    /// The probe found its target (`None`: it could not reach the server).
    pub(crate) fn finish(&mut self, id: ProbeId, target: Option<u64>) {
        let Some(index) = self.in_flight.iter().position(|p| p.id == id.0) else {
            return;
        };
        let reached_at = target.and_then(|target| self.reached_at(&self.in_flight[index], target));
        let probe = self.take(id).expect("found above");
        let Some(target) = target else {
            self.push_pending(Pending {
                at: probe.at,
                target: None,
            });
            return;
        };
        match reached_at {
            Some(reached_at) => {
                let lag = reached_at.saturating_duration_since(probe.at);
                let older = self.pending.iter().take_while(|p| p.at <= probe.at).count();
                match older.checked_sub(1) {
                    Some(index) => self.resolve(index, lag),
                    None => self.last = Some(lag),
                }
            }
            None => self.push_pending(Pending {
                at: probe.at,
                target: Some(target),
            }),
        }
    }

    /// The probe gave up without a reading (versions that do not compare).
    pub(crate) fn abandon(&mut self, id: ProbeId) {
        self.take(id);
    }

    /// The gauge at `now`: `None` before any probe resolved or failed.
    pub(crate) fn seconds(&self, now: Instant) -> Option<Duration> {
        match self.pending.front() {
            Some(oldest) => Some(now.saturating_duration_since(oldest.at)),
            None => self.last,
        }
    }

    /// The newest resolved probe's lag.
    pub(crate) fn last_lag(&self) -> Option<Duration> {
        self.last
    }

    /// Whether a probe is unresolved: the cache lags, or its lag is unknown.
    #[cfg(test)]
    pub(crate) fn is_behind(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Notes that the cache got to `version` at `now`; within the spacing of the last
    /// note, that note's version moves on instead (so a lag is understated by at most
    /// the spacing, and no version is lost).
    fn log_reached(&mut self, version: u64, now: Instant) {
        let spacing = self.spacing.max(REACHED_SPACING);
        if let Some((last_version, at)) = self.reached.last_mut()
            && now.saturating_duration_since(*at) < spacing
        {
            *last_version = (*last_version).max(version);
            return;
        }
        if self.reached.len() == REACHED_LOG {
            let mut index = 0;
            self.reached.retain(|_| {
                index += 1;
                index % 2 == 1
            });
            self.spacing = spacing * 2;
        }
        self.reached.push((version, now));
    }

    /// When the cache first held a point at or past `target` since `probe` began.
    fn reached_at(&self, probe: &InFlight, target: u64) -> Option<Instant> {
        if probe.from.is_some_and(|from| from >= target) {
            return Some(probe.at);
        }
        self.reached
            .iter()
            .find(|(version, at)| *version >= target && *at >= probe.at)
            .map(|(_, at)| *at)
    }

    fn take(&mut self, id: ProbeId) -> Option<InFlight> {
        let index = self.in_flight.iter().position(|p| p.id == id.0)?;
        let probe = self.in_flight.swap_remove(index);
        if self.in_flight.is_empty() {
            self.reached.clear();
            self.spacing = REACHED_SPACING;
        }
        Some(probe)
    }

    fn push_pending(&mut self, pending: Pending) {
        // Probes finish in the order they began, nearly always; keep the queue sorted.
        let index = self.pending.partition_point(|p| p.at <= pending.at);
        self.pending.insert(index, pending);
        if self.pending.len() > PENDING {
            self.pending.remove(1);
        }
    }

    /// The pending probe at `index` resolved with `lag`, and so did every older one:
    /// a cache that reached a server state reached the earlier ones.
    fn resolve(&mut self, index: usize, lag: Duration) {
        self.pending.drain(..=index);
        self.last = Some(lag);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    /// A cache already at the server's version (or past the last change before it)
    /// lags by nothing.
    #[tokio::test(start_paused = true)]
    async fn a_cache_already_there_lags_by_nothing() {
        let mut staleness = Staleness::default();
        assert_eq!(staleness.seconds(Instant::now()), None);
        let probe = staleness.start(Instant::now(), Some(10));
        tokio::time::advance(3 * SECOND).await;
        staleness.finish(probe, Some(8));
        assert_eq!(staleness.seconds(Instant::now()), Some(Duration::ZERO));
        assert!(!staleness.is_behind());
    }

    /// A cache that gets to the target while the probe is still looking for it: the
    /// lag is when it got there, not when the probe finished.
    #[tokio::test(start_paused = true)]
    async fn the_lag_is_when_the_cache_got_there() {
        let mut staleness = Staleness::default();
        let start = Instant::now();
        let probe = staleness.start(start, Some(5));
        staleness.reached(6, start + SECOND);
        staleness.reached(9, start + 2 * SECOND);
        staleness.finish(probe, Some(9));
        assert_eq!(staleness.seconds(start + 4 * SECOND), Some(2 * SECOND));
    }

    /// A cache behind: the gauge grows while it lags, and settles on the lag when it
    /// arrives; a failed probe counts as behind until a later one resolves.
    #[tokio::test(start_paused = true)]
    async fn a_lagging_cache_shows_growing_staleness_until_it_arrives() {
        let mut staleness = Staleness::default();
        let start = Instant::now();
        let failed = staleness.start(start, Some(5));
        staleness.finish(failed, None);
        assert_eq!(staleness.seconds(start + 3 * SECOND), Some(3 * SECOND));
        let probe = staleness.start(start + 10 * SECOND, Some(5));
        staleness.finish(probe, Some(20));
        assert!(staleness.is_behind());
        assert_eq!(staleness.seconds(start + 12 * SECOND), Some(12 * SECOND));
        staleness.reached(19, start + 13 * SECOND);
        assert!(staleness.is_behind());
        staleness.reached(21, start + 14 * SECOND);
        assert!(!staleness.is_behind());
        assert_eq!(staleness.seconds(start + 60 * SECOND), Some(4 * SECOND));
    }

    /// The log of points kept during a long probe stays bounded and spread out.
    #[tokio::test(start_paused = true)]
    async fn points_during_a_probe_stay_bounded() {
        let mut staleness = Staleness::default();
        let start = Instant::now();
        let probe = staleness.start(start, Some(0));
        for i in 0..1000u64 {
            staleness.reached(i, start + Duration::from_millis(i));
        }
        assert!(staleness.reached.len() <= REACHED_LOG);
        staleness.finish(probe, Some(500));
        let lag = staleness.seconds(start).unwrap();
        assert!(lag > Duration::from_millis(480) && lag <= Duration::from_millis(500));
        assert!(staleness.reached.is_empty());
    }
}
