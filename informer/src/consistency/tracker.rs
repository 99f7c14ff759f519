//! [`Tracker`]: an informer's digest, its points, and its staleness probes, kept as
//! the informer runs.
//!
//! Three parties write to it, each under its own rule:
//!
//! - the reflector's side of the queue notes the resourceVersion of everything it
//!   queues (an event's object, a list's end) or skips over (a bookmark), holding the
//!   tracker's *marks* lock while it queues;
//! - the process loop adds each applied change to the digest (one hash in, one out);
//! - whoever finds the queue settled while holding the marks lock takes a *point*: no
//!   change can be queued meanwhile, and every change queued before has been applied
//!   (a batch the process loop has taken out counts until it is applied: the queue is
//!   settled only when nothing is queued and no batch is being applied), so the cache
//!   is exactly the server's collection at the last version noted.
//!
//! Lock order: marks, then the queue's lock (only to ask whether it is settled,
//! released at once), then the cache's read lock (a snapshot), then the state. The
//! process loop takes the queue's lock to take a batch out and to finish it, and the
//! cache's write lock and the state while applying it, never the two groups at once;
//! nobody takes another lock while holding the state, so no two of them wait on each
//! other.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::digest::{Digest, hash_meta};
use super::points::{Point, Points};
use super::staleness::{ProbeId, Staleness};
use crate::lock::MutexExt;
use crate::object::Meta;

/// Says whether the informer's queue is settled: nothing queued, and no batch taken out
/// still being applied (taking the queue's lock).
pub(crate) type QueueIsSettled = Box<dyn Fn() -> bool + Send + Sync>;

/// See the [module docs](self).
pub(crate) struct Tracker {
    marks: Mutex<Marks>,
    state: Mutex<State>,
    /// Woken whenever a point is taken or the queue is found empty.
    settled: Notify,
    queue_is_settled: QueueIsSettled,
    /// The key filter's generation the cache's objects were filtered with, as the
    /// reflector sets it (see [`follow_filter_generation`](Tracker::follow_filter_generation)).
    store_generation: OnceLock<Arc<AtomicU64>>,
}

/// The last resourceVersion the reflector queued or skipped over.
struct Marks {
    latest: String,
}

struct State {
    digest: Digest,
    objects: usize,
    points: Points,
    staleness: Staleness,
    /// A change was applied since the last point.
    moved: bool,
}

impl std::fmt::Debug for Tracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.locked();
        f.debug_struct("Tracker")
            .field("objects", &state.objects)
            .field("newest_point", &state.points.newest())
            .finish_non_exhaustive()
    }
}

/// The marks lock, held while something is queued: see [`Tracker::marking`].
pub(crate) struct Marking<'a> {
    marks: MutexGuard<'a, Marks>,
}

impl Marking<'_> {
    /// What is being queued carries `version` (`None`: it carries none, and the cache
    /// cannot be said to be at any version until the next one that does).
    pub(crate) fn note(&mut self, version: Option<&str>) {
        self.marks.latest.clear();
        self.marks.latest.push_str(version.unwrap_or_default());
    }
}

/// The state, held while the process loop applies a batch: see [`Tracker::applying`].
pub(crate) struct Applying<'a> {
    state: MutexGuard<'a, State>,
}

impl Applying<'_> {
    /// An object entered the cache.
    pub(crate) fn added(&mut self, new: &impl Meta) {
        self.state.digest.add(hash_meta(new));
        self.state.objects += 1;
        self.state.moved = true;
    }

    /// An object in the cache was replaced by another version of it.
    pub(crate) fn replaced<M: Meta>(&mut self, old: &M, new: &M) {
        if old.resource_version() == new.resource_version() && old.uid() == new.uid() {
            // A resync, or a relist that found it unchanged.
            return;
        }
        self.state.digest.remove(hash_meta(old));
        self.state.digest.add(hash_meta(new));
        self.state.moved = true;
    }

    /// An object left the cache.
    pub(crate) fn removed(&mut self, old: &impl Meta) {
        self.state.digest.remove(hash_meta(old));
        self.state.objects = self.state.objects.saturating_sub(1);
        self.state.moved = true;
    }
}

impl Tracker {
    /// A tracker for a cache fed through a queue that `queue_is_settled` looks into.
    pub(crate) fn new(queue_is_settled: QueueIsSettled) -> Self {
        Self {
            marks: Mutex::new(Marks {
                latest: String::new(),
            }),
            state: Mutex::new(State {
                digest: Digest::default(),
                objects: 0,
                points: Points::default(),
                staleness: Staleness::default(),
                moved: false,
            }),
            settled: Notify::new(),
            queue_is_settled,
            store_generation: OnceLock::new(),
        }
    }

    /// Points record the key filter's generation `generation` holds (the reflector's
    /// for its store), from now on.
    pub(crate) fn follow_filter_generation(&self, generation: Arc<AtomicU64>) {
        let _ = self.store_generation.set(generation);
    }

    fn filter_generation(&self) -> u64 {
        self.store_generation
            .get()
            .map_or(0, |g| g.load(Ordering::Acquire))
    }

    /// Holds the marks lock while the caller queues something and notes its version.
    pub(crate) fn marking(&self) -> Marking<'_> {
        Marking {
            marks: self.marks.locked(),
        }
    }

    /// Holds the state while the process loop applies changes.
    pub(crate) fn applying(&self) -> Applying<'_> {
        Applying {
            state: self.state.locked(),
        }
    }

    /// The reflector got to `version` without queueing anything (a bookmark).
    pub(crate) fn progressed(&self, version: &str) {
        let mut marks = self.marks.locked();
        marks.latest.clear();
        marks.latest.push_str(version);
        self.point_if_settled(&marks);
    }

    /// The process loop emptied the queue.
    pub(crate) fn drained(&self) {
        // The reflector holds the marks while it queues: then the queue is not empty
        // for long, and the process loop will drain it again. Not waiting keeps the
        // two from taking turns on the lock under a stream of events.
        let marks = match self.marks.try_lock() {
            Ok(marks) => marks,
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        self.point_if_settled(&marks);
    }

    /// Takes a point if the queue is empty (the marks held).
    fn point_if_settled(&self, marks: &Marks) {
        if !(self.queue_is_settled)() {
            return;
        }
        self.take_point(&marks.latest, &marks.latest);
        self.settled.notify_waiters();
    }

    /// Records that the cache, settled at the reflector's `latest`, is the server's
    /// collection at `version` (the same, or one a probe vouched for).
    fn take_point(&self, latest: &str, version: &str) -> Option<Point> {
        if latest.is_empty() {
            return None;
        }
        let now = Instant::now();
        let filter_generation = self.filter_generation();
        let mut state = self.state.locked();
        let unchanged = state.points.newest().is_some_and(|p| {
            p.resource_version == version && p.filter_generation == filter_generation
        });
        if !unchanged || state.moved {
            let point = Point {
                resource_version: version.to_owned(),
                digest: state.digest,
                objects: state.objects,
                filter_generation,
                at: now,
            };
            state.points.record(point);
            state.moved = false;
        }
        if let Ok(number) = version.parse() {
            state.staleness.reached(number, now);
        }
        state.points.newest().cloned()
    }

    /// The newest point.
    pub(crate) fn newest_point(&self) -> Option<Point> {
        self.state.locked().points.newest().cloned()
    }

    /// The resourceVersion of the newest point: the version up to which the cache
    /// reflects the server ("" before the first list is in it).
    pub(crate) fn store_resource_version(&self) -> String {
        self.newest_point()
            .map(|point| point.resource_version)
            .unwrap_or_default()
    }

    /// Waits until the cache has been the server's collection at `target` or a later
    /// version (its newest point, compared as integers).
    pub(crate) async fn reached(&self, target: u64) {
        loop {
            let settled = self.settled.notified();
            let newest = self
                .newest_point()
                .and_then(|p| p.resource_version.parse::<u64>().ok());
            if newest.is_some_and(|at| at >= target) {
                return;
            }
            settled.await;
        }
    }

    /// The newest point taken before `than`.
    pub(crate) fn older_point(&self, than: &Point) -> Option<Point> {
        self.state.locked().points.older(than).cloned()
    }

    /// Waits until the newest point is another than `than` (any, with `None`) and was
    /// taken under the key filter's `generation`, for at most `limit`; returns it.
    pub(crate) async fn point_after(
        &self,
        than: Option<&Point>,
        generation: u64,
        limit: Duration,
    ) -> Option<Point> {
        let deadline = Instant::now() + limit;
        loop {
            let settled = self.settled.notified();
            if let Some(newest) = self.newest_point()
                && than.is_none_or(|than| newest.resource_version != than.resource_version)
                && newest.filter_generation == generation
            {
                return Some(newest);
            }
            if tokio::time::timeout_at(deadline, settled).await.is_err() {
                return None;
            }
        }
    }

    /// Runs `visit` over the cache when it is settled at a point (the queue empty,
    /// nothing being queued), and returns the point with what `visit` returned; waits
    /// for such a moment for at most `limit`. The reflector cannot queue while `visit`
    /// runs: keep it short.
    pub(crate) async fn at_a_point<T>(
        &self,
        limit: Duration,
        mut visit: impl FnMut() -> T,
    ) -> Option<(Point, T)> {
        let deadline = Instant::now() + limit;
        loop {
            let settled = self.settled.notified();
            {
                let marks = self.marks.locked();
                if (self.queue_is_settled)() && !marks.latest.is_empty() {
                    let seen = visit();
                    let point = self.take_point(&marks.latest, &marks.latest)?;
                    return Some((point, seen));
                }
            }
            // Woken by the next point; polled too, in case the queue emptied without
            // one (a resync's deltas).
            let wait = tokio::time::sleep(Duration::from_millis(20));
            tokio::select! {
                () = settled => {}
                () = wait => {}
            }
            if Instant::now() >= deadline {
                return None;
            }
        }
    }

    /// A staleness probe begins; returns it with the cache's newest point.
    pub(crate) fn probe_started(&self) -> (ProbeId, Option<Point>) {
        let mut state = self.state.locked();
        let newest = state.points.newest().cloned();
        let from = newest
            .as_ref()
            .and_then(|p| p.resource_version.parse().ok());
        (state.staleness.start(Instant::now(), from), newest)
    }

    /// The probe found the last change up to the server's version (`None`: it could
    /// not reach the server).
    pub(crate) fn probe_finished(&self, probe: ProbeId, target: Option<u64>) {
        self.state.locked().staleness.finish(probe, target);
    }

    /// The probe gave up without a reading.
    pub(crate) fn probe_abandoned(&self, probe: ProbeId) {
        self.state.locked().staleness.abandon(probe);
    }

    /// A probe proved that nothing changed between `target` and `server_version`: if
    /// the cache is settled at a version between the two, it is also the collection at
    /// `server_version`, a newer point for a check to use.
    pub(crate) fn vouch(&self, target: u64, server_version: &str) {
        let Ok(server) = server_version.parse::<u64>() else {
            return;
        };
        let marks = self.marks.locked();
        let settled_between = marks
            .latest
            .parse::<u64>()
            .is_ok_and(|at| target <= at && at <= server);
        if settled_between && (self.queue_is_settled)() {
            self.take_point(&marks.latest, server_version);
            self.settled.notify_waiters();
        }
    }

    /// The staleness gauge now, and the newest resolved probe's lag (see
    /// `staleness.rs`).
    pub(crate) fn staleness(&self) -> (Option<Duration>, Option<Duration>) {
        let state = self.state.locked();
        let staleness = &state.staleness;
        (staleness.seconds(Instant::now()), staleness.last_lag())
    }

    /// Whether a probe found the cache behind (or could not tell).
    #[cfg(test)]
    pub(crate) fn is_behind(&self) -> bool {
        self.state.locked().staleness.is_behind()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    fn meta(name: &str, version: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            resource_version: Some(version.into()),
            ..ObjectMeta::default()
        }
    }

    fn tracker() -> (Tracker, Arc<AtomicBool>) {
        let empty = Arc::new(AtomicBool::new(true));
        let queue = Arc::clone(&empty);
        (
            Tracker::new(Box::new(move || queue.load(Ordering::SeqCst))),
            empty,
        )
    }

    /// A point is the version last queued, with the digest of what was applied; none
    /// is taken while something is queued.
    #[tokio::test]
    async fn points_are_taken_when_the_queue_is_settled() {
        let (tracker, empty) = tracker();
        empty.store(false, Ordering::SeqCst);
        tracker.marking().note(Some("5"));
        tracker.applying().added(&meta("a", "5"));
        tracker.drained();
        assert_eq!(tracker.newest_point(), None);
        empty.store(true, Ordering::SeqCst);
        tracker.drained();
        let point = tracker.newest_point().unwrap();
        assert_eq!((point.resource_version.as_str(), point.objects), ("5", 1));
        let mut expected = Digest::default();
        expected.add(hash_meta(&meta("a", "5")));
        assert_eq!(point.digest, expected);
        // A bookmark moves the point on without a change.
        tracker.progressed("9");
        let point = tracker.newest_point().unwrap();
        assert_eq!(
            (point.resource_version.as_str(), point.digest),
            ("9", expected)
        );
    }

    /// A change without a version leaves the cache at no version until one comes.
    #[tokio::test]
    async fn a_change_without_a_version_takes_no_point() {
        let (tracker, _) = tracker();
        tracker.marking().note(None);
        tracker.applying().added(&meta("a", ""));
        tracker.drained();
        assert_eq!(tracker.newest_point(), None);
        let visited = tracker.at_a_point(Duration::from_millis(50), || ()).await;
        assert!(visited.is_none());
    }

    /// A probe's proof makes the settled cache a point at the server's version, only
    /// when the cache is settled between the last change and it.
    #[tokio::test]
    async fn a_vouched_point_needs_the_cache_between_target_and_server() {
        let (tracker, _) = tracker();
        tracker.progressed("10");
        tracker.vouch(11, "20");
        assert_eq!(tracker.newest_point().unwrap().resource_version, "10");
        tracker.vouch(10, "20");
        assert_eq!(tracker.newest_point().unwrap().resource_version, "20");
    }

    /// A resync (the same version applied again) changes nothing.
    #[test]
    fn a_resync_leaves_the_digest() {
        let (tracker, _) = tracker();
        tracker.marking().note(Some("3"));
        tracker.applying().added(&meta("a", "3"));
        tracker.drained();
        let before = tracker.newest_point().unwrap();
        tracker
            .applying()
            .replaced(&meta("a", "3"), &meta("a", "3"));
        tracker.drained();
        assert_eq!(tracker.newest_point().unwrap(), before);
    }
}
