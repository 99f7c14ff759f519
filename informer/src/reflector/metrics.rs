//! Counters of a reflector's work, after client-go's reflector metrics.
//!
//! Every reflector keeps [`ReflectorStats`] (a few atomics, always on, read with
//! [`super::Reflector::stats`]). To feed another metrics system, implement
//! [`ReflectorMetrics`] and pass it in the [`super::Config`].

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::error::{ReflectorError, SyncError};

use crate::lock::MutexExt;

/// Hooks called as a reflector works; every method has an empty default.
pub trait ReflectorMetrics: Send + Sync {
    /// A full (re)list finished with `items` objects after `duration`.
    fn list_completed(&self, items: usize, duration: Duration) {
        let _ = (items, duration);
    }
    /// A watch was started (a streaming list's included).
    fn watch_started(&self) {}
    /// A streaming list was asked for.
    fn streaming_list_requested(&self) {}
    /// The server refused a streaming list; the reflector lists and watches from now
    /// on. (A refusal is logged, but is no error: [`error`](Self::error) is not
    /// called for it.)
    fn streaming_list_refused(&self) {}
    /// A watch ended at once without events.
    fn short_watch(&self) {}
    /// A watch event (including bookmarks) was received.
    fn watch_event(&self) {}
    /// `objects` listed or watched objects were skipped, not decoded, because the key
    /// filter does not keep them (see [`KeyFilter`](super::KeyFilter)).
    fn filtered_out(&self, objects: usize) {
        let _ = objects;
    }
    /// The key filter's generation changed: the reflector relists.
    fn filter_changed(&self) {}
    /// An error happened (the reflector goes on).
    fn error(&self, error: &ReflectorError) {
        let _ = error;
    }
    /// The last synced resourceVersion changed.
    fn resource_version(&self, resource_version: &str) {
        let _ = resource_version;
    }
}

/// What a reflector is doing: a reflector that runs is always listing, watching, or
/// waiting out a backoff, never anything else.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Phase {
    /// Not started yet.
    #[default]
    Idle = 0,
    /// Listing (a first list or a relist), or receiving a streaming list's initial
    /// events.
    Listing = 1,
    /// Opening a watch, or reading one (a streaming list's, after its initial
    /// events, included).
    Watching = 2,
    /// Waiting before the next attempt, after an error.
    BackingOff = 3,
    /// `run` has returned.
    Stopped = 4,
}

impl Phase {
    fn from_u8(value: u8) -> Self {
        match value {
            1 => Phase::Listing,
            2 => Phase::Watching,
            3 => Phase::BackingOff,
            4 => Phase::Stopped,
            _ => Phase::Idle,
        }
    }
}

/// The counters every reflector keeps; read as a [`StatsSnapshot`]
/// ([`Reflector::stats`](super::Reflector::stats)).
#[derive(Debug, Default)]
pub(crate) struct ReflectorStats {
    phase: AtomicU8,
    lists: AtomicU64,
    list_items: AtomicU64,
    watches: AtomicU64,
    short_watches: AtomicU64,
    watch_events: AtomicU64,
    filtered_out: AtomicU64,
    filter_relists: AtomicU64,
    errors: AtomicU64,
    expired: AtomicU64,
    streaming_list_requests: AtomicU64,
    streaming_list_refused: AtomicBool,
    sync_failures: AtomicU64,
    last_resource_version: Mutex<LastResourceVersion>,
    last_sync_error: Mutex<Option<SyncError>>,
}

/// The last synced resourceVersion and when it was reached.
#[derive(Debug, Default)]
struct LastResourceVersion {
    value: String,
    reached: Option<Instant>,
}

/// A copy of a reflector's counters at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StatsSnapshot {
    /// Completed (re)lists, streaming lists included.
    pub lists: u64,
    /// Objects received by lists.
    pub list_items: u64,
    /// Watches started.
    pub watches: u64,
    /// Watches that ended at once without events.
    pub short_watches: u64,
    /// Watch events received, bookmarks included.
    pub watch_events: u64,
    /// Objects skipped before decoding because the key filter does not keep them
    /// (list items, a streaming list's initial events and watch events alike).
    pub filtered_out: u64,
    /// Relists because the key filter's generation changed.
    pub filter_relists: u64,
    /// Errors seen.
    pub errors: u64,
    /// Watches or lists the server ended with 410 Gone (the resourceVersion had
    /// expired), each followed by a relist.
    pub expired: u64,
    /// Streaming lists asked for (see
    /// [`Config::streaming_list`](super::Config#structfield.streaming_list)).
    pub streaming_list_requests: u64,
    /// The server refused a streaming list, so this reflector lists and watches for
    /// the rest of its life.
    pub streaming_list_refused: bool,
    /// (Re)syncs that failed in a row, up to now: 0 once one succeeds (see
    /// [`Reflector::last_sync_error`](super::Reflector::last_sync_error)).
    pub sync_failures: u64,
    /// The last synced resourceVersion.
    pub last_resource_version: String,
    /// How long ago the last synced resourceVersion was reached (by a list, an event
    /// or a bookmark); `None` before the first. A watch that stays quiet longer than
    /// its bookmark interval (about a minute) is stuck or its server is.
    pub resource_version_age: Option<Duration>,
    /// What the reflector was doing.
    pub phase: Phase,
    /// Whether the API server filters this collection by the key filter's shard
    /// selector (see [`ListerWatcher::server_filters_shards`](super::source::ListerWatcher::server_filters_shards)):
    /// filled in by [`SharedIndexInformer::reflector_stats`](crate::shared_informer::SharedIndexInformer::reflector_stats);
    /// `None` where not known.
    pub server_filters_shards: Option<bool>,
}

impl ReflectorStats {
    /// What the reflector is doing now.
    pub(crate) fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Relaxed))
    }

    pub(super) fn set_phase(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::Relaxed);
    }

    /// The last synced resourceVersion.
    pub(crate) fn last_resource_version(&self) -> String {
        self.last_resource_version.locked().value.clone()
    }

    /// Why the last (re)sync (a list or streaming list) failed, as long as no sync has
    /// succeeded since: `None` once one does.
    pub(crate) fn last_sync_error(&self) -> Option<SyncError> {
        self.last_sync_error.locked().clone()
    }

    /// Records a failed sync; returns how many failed in a row, this one included,
    /// and the error of the one before, if it failed too.
    pub(super) fn sync_failed(&self, error: SyncError) -> (u64, Option<SyncError>) {
        let mut last = self.last_sync_error.locked();
        let failures = self.sync_failures.fetch_add(1, Ordering::Relaxed) + 1;
        (failures, last.replace(error))
    }

    /// Records a sync that succeeded; returns how many failed in a row before it.
    pub(super) fn sync_succeeded(&self) -> u64 {
        let mut last = self.last_sync_error.locked();
        *last = None;
        self.sync_failures.swap(0, Ordering::Relaxed)
    }

    /// Reads all counters.
    pub(crate) fn snapshot(&self) -> StatsSnapshot {
        let last = self.last_resource_version.locked();
        StatsSnapshot {
            lists: self.lists.load(Ordering::Relaxed),
            list_items: self.list_items.load(Ordering::Relaxed),
            watches: self.watches.load(Ordering::Relaxed),
            short_watches: self.short_watches.load(Ordering::Relaxed),
            watch_events: self.watch_events.load(Ordering::Relaxed),
            filtered_out: self.filtered_out.load(Ordering::Relaxed),
            filter_relists: self.filter_relists.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            expired: self.expired.load(Ordering::Relaxed),
            streaming_list_requests: self.streaming_list_requests.load(Ordering::Relaxed),
            streaming_list_refused: self.streaming_list_refused.load(Ordering::Relaxed),
            sync_failures: self.sync_failures.load(Ordering::Relaxed),
            last_resource_version: last.value.clone(),
            resource_version_age: last.reached.map(|at| at.elapsed()),
            phase: self.phase(),
            server_filters_shards: None,
        }
    }
}

impl ReflectorMetrics for ReflectorStats {
    fn list_completed(&self, items: usize, _duration: Duration) {
        self.lists.fetch_add(1, Ordering::Relaxed);
        self.list_items.fetch_add(items as u64, Ordering::Relaxed);
    }
    fn watch_started(&self) {
        self.watches.fetch_add(1, Ordering::Relaxed);
    }
    fn streaming_list_requested(&self) {
        self.streaming_list_requests.fetch_add(1, Ordering::Relaxed);
    }
    fn streaming_list_refused(&self) {
        self.streaming_list_refused.store(true, Ordering::Relaxed);
    }
    fn short_watch(&self) {
        self.short_watches.fetch_add(1, Ordering::Relaxed);
    }
    fn watch_event(&self) {
        self.watch_events.fetch_add(1, Ordering::Relaxed);
    }
    fn filtered_out(&self, objects: usize) {
        self.filtered_out
            .fetch_add(objects as u64, Ordering::Relaxed);
    }
    fn filter_changed(&self) {
        self.filter_relists.fetch_add(1, Ordering::Relaxed);
    }
    fn error(&self, error: &ReflectorError) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        if matches!(error, ReflectorError::Expired(_)) {
            self.expired.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn resource_version(&self, resource_version: &str) {
        let mut last = self.last_resource_version.locked();
        last.value.clear();
        last.value.push_str(resource_version);
        last.reached = Some(Instant::now());
    }
}
