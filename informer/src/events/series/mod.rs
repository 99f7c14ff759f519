//! Folding identical events into a series: client-go's event cache
//! (`eventBroadcasterImpl.eventCache` with `recordToSink` and `finishSeries`).
//!
//! An event identical to one seen within the window (6 minutes, client-go's
//! `finishTime`) is not created again: the first repeat turns the existing Event into
//! a series (`series.count = 2`, `lastObservedTime`) and goes out at once; later
//! repeats only count, and the writer sends the counts that changed at each flush.
//! The cache holds no lock and does no I/O: it says what to write next and hears
//! back how the write went.
//!
//! Per cached Event, `count` is how many times it was observed and `written` the count
//! the server has (0: not created yet). At most one write per Event is queued or in
//! flight (`busy`), so a create and the patches after it never race; counts that
//! arrive meanwhile are written next. An Event whose window has passed is retired:
//! the next identical event starts a new Event, and the retired one is forgotten once
//! its last count is written.

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use super::spec::{EventSpec, EventType};
use crate::claim::Fence;

/// Every field of an `ObjectReference`, hashable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct RefKey([Option<String>; 7]);

impl From<&ObjectReference> for RefKey {
    fn from(r: &ObjectReference) -> Self {
        Self(
            [
                &r.api_version,
                &r.kind,
                &r.namespace,
                &r.name,
                &r.uid,
                &r.field_path,
                &r.resource_version,
            ]
            .map(Clone::clone),
        )
    }
}

/// What makes two events identical (client-go's `getKey`, with the note): type,
/// reason, action, note, regarding and related object. The reporting controller and
/// instance are those of the recorder, the same for every event in its cache.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct EventKey {
    event_type: EventType,
    reason: String,
    action: String,
    note: Option<String>,
    regarding: RefKey,
    related: Option<RefKey>,
}

impl EventKey {
    /// The key of `spec` about `regarding`.
    pub(super) fn new(regarding: &ObjectReference, spec: &EventSpec) -> Self {
        Self {
            event_type: spec.event_type,
            reason: spec.reason.clone(),
            action: spec.action.clone(),
            note: spec.note.clone(),
            regarding: regarding.into(),
            related: spec.related.as_ref().map(Into::into),
        }
    }
}

/// What [`SeriesCache::observe`] made of an event.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Observed {
    /// A new Event: queue this write (a create).
    New(u64),
    /// The first repeat of an Event the server has: queue this write (the patch that
    /// makes it a series).
    SeriesStarted(u64),
    /// Counted in an existing Event's series; written at the next flush.
    Folded,
}

/// One write for the API server.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Write {
    /// Create the Event (with its series when it has been seen more than once).
    Create(Box<Event>),
    /// Patch the series of the Event `namespace/name`.
    Patch {
        /// The Event's namespace.
        namespace: String,
        /// The Event's name.
        name: String,
        /// The series as it is now.
        series: EventSeries,
    },
}

impl Write {
    /// The `namespace/name` of the Event written.
    pub(super) fn event_name(&self) -> (&str, &str) {
        match self {
            Self::Create(event) => (
                event.metadata.namespace.as_deref().unwrap_or_default(),
                event.metadata.name.as_deref().unwrap_or_default(),
            ),
            Self::Patch {
                namespace, name, ..
            } => (namespace, name),
        }
    }
}

/// The next write for a cached Event, and the count it carries.
#[derive(Debug)]
pub(super) struct Pending {
    /// The request to make.
    pub(super) write: Write,
    /// The count the server has once it succeeds.
    pub(super) count: i32,
    /// The fence of the claim the Event's last occurrence was published under: the
    /// write is sent only while it holds.
    pub(super) fence: Fence,
}

/// One cached Event.
#[derive(Debug)]
struct Entry {
    /// The Event as first made, without a series.
    event: Event,
    /// Observations so far.
    count: i32,
    /// Wall time of the last observation (`series.lastObservedTime`).
    last_observed: MicroTime,
    /// When it was last observed, for the window.
    last_seen: Instant,
    /// The count the server has; 0 before the create.
    written: i32,
    /// A write is queued or in flight.
    busy: bool,
    /// The index maps the Event's key here (false once retired).
    current: bool,
    /// The fence its last occurrence was published under.
    fence: Fence,
}

impl Entry {
    /// Nothing to write and nothing being written.
    fn settled(&self) -> bool {
        !self.busy && self.written >= self.count
    }
}

/// The recently seen Events of one recorder, by [`EventKey`].
#[derive(Debug)]
pub(super) struct SeriesCache {
    entries: HashMap<u64, Entry>,
    index: HashMap<EventKey, u64>,
    next_id: u64,
    window: Duration,
    capacity: usize,
}

impl SeriesCache {
    /// Folds repeats within `window` of the last observation; correlates at most
    /// `capacity` distinct events (more are written without folding).
    pub(super) fn new(window: Duration, capacity: usize) -> Self {
        Self {
            entries: HashMap::new(),
            index: HashMap::new(),
            next_id: 0,
            window,
            capacity,
        }
    }

    /// Records one event with `key`, observed at `now` (`wall` on the wall clock)
    /// and published under `fence`; `make` builds its Event when it starts a new one.
    pub(super) fn observe(
        &mut self,
        key: EventKey,
        now: Instant,
        wall: Timestamp,
        fence: Fence,
        make: impl FnOnce() -> Event,
    ) -> Observed {
        if let Some(&id) = self.index.get(&key) {
            let entry = self
                .entries
                .get_mut(&id)
                .expect("the index points at entries");
            if now.saturating_duration_since(entry.last_seen) <= self.window {
                entry.fence = fence;
                entry.count += 1;
                entry.last_seen = now;
                entry.last_observed = MicroTime(wall);
                if !entry.busy && entry.written == 1 {
                    entry.busy = true;
                    return Observed::SeriesStarted(id);
                }
                return Observed::Folded;
            }
            self.index.remove(&key);
            entry.current = false;
            if entry.settled() {
                self.entries.remove(&id);
            }
        }
        if self.index.len() >= self.capacity {
            self.sweep(now);
        }
        let id = self.next_id;
        self.next_id += 1;
        let current = self.index.len() < self.capacity;
        if current {
            self.index.insert(key, id);
        }
        let entry = Entry {
            event: make(),
            count: 1,
            last_observed: MicroTime(wall),
            last_seen: now,
            written: 0,
            busy: true,
            current,
            fence,
        };
        self.entries.insert(id, entry);
        Observed::New(id)
    }

    /// The write to make now for Event `id`: its create, or the patch of its series.
    /// `None` when it is gone or the server has its count already: the Event is then
    /// no longer busy.
    pub(super) fn next_write(&mut self, id: u64) -> Option<Pending> {
        let entry = self.entries.get_mut(&id)?;
        if entry.written >= entry.count {
            entry.busy = false;
            return None;
        }
        let series = (entry.count > 1).then(|| EventSeries {
            count: entry.count,
            last_observed_time: entry.last_observed.clone(),
        });
        let write = match series {
            Some(series) if entry.written > 0 => Write::Patch {
                namespace: entry.event.metadata.namespace.clone().unwrap_or_default(),
                name: entry.event.metadata.name.clone().unwrap_or_default(),
                series,
            },
            series => Write::Create(Box::new(Event {
                series,
                ..entry.event.clone()
            })),
        };
        Some(Pending {
            write,
            count: entry.count,
            fence: entry.fence.clone(),
        })
    }

    /// The server has `count` for Event `id`. Returns `id` again when its series must
    /// go out at once (repeats came while the create was in flight).
    pub(super) fn written(&mut self, id: u64, count: i32) -> Option<u64> {
        let entry = self.entries.get_mut(&id)?;
        entry.written = count;
        entry.busy = entry.written == 1 && entry.count > 1;
        entry.busy.then_some(id)
    }

    /// A patch found no Event (its TTL ran out, or someone deleted it): the next write
    /// creates it again.
    pub(super) fn mark_absent(&mut self, id: u64) {
        if let Some(entry) = self.entries.get_mut(&id) {
            entry.written = 0;
        }
    }

    /// A create found the Event there already (an earlier attempt did reach the
    /// server): the next write, if any, patches it.
    pub(super) fn mark_present(&mut self, id: u64) {
        if let Some(entry) = self.entries.get_mut(&id) {
            entry.written = entry.written.max(1);
        }
    }

    /// The write of Event `id` was given up: an Event never created is forgotten (a
    /// repeat starts afresh), a series keeps the server's count as final.
    pub(super) fn failed(&mut self, id: u64) {
        let Some(entry) = self.entries.get_mut(&id) else {
            return;
        };
        if entry.written == 0 {
            self.forget(id);
        } else {
            entry.written = entry.count;
            entry.busy = false;
        }
    }

    /// The write for `id` could not be queued: a new Event is forgotten, a series
    /// keeps its count for the next flush.
    pub(super) fn cancel(&mut self, id: u64) {
        let Some(entry) = self.entries.get_mut(&id) else {
            return;
        };
        if entry.written == 0 {
            self.forget(id);
        } else {
            entry.busy = false;
        }
    }

    /// The Events whose count changed since their last write, marked busy: the
    /// flush writes them.
    pub(super) fn take_dirty(&mut self) -> Vec<u64> {
        let mut dirty: Vec<u64> = self
            .entries
            .iter_mut()
            .filter(|(_, e)| !e.busy && e.written > 0 && e.count > e.written)
            .map(|(id, e)| {
                e.busy = true;
                *id
            })
            .collect();
        dirty.sort_unstable();
        dirty
    }

    /// Forgets settled Events that are retired or whose window has passed
    /// (client-go's `finishSeries`).
    pub(super) fn sweep(&mut self, now: Instant) {
        let window = self.window;
        self.entries.retain(|_, e| {
            let expired = now.saturating_duration_since(e.last_seen) > window;
            !(e.settled() && (expired || !e.current))
        });
        let entries = &self.entries;
        self.index.retain(|_, id| entries.contains_key(id));
    }

    /// How many Events are cached (retired ones included).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }

    /// Drops Event `id` and its place in the index.
    fn forget(&mut self, id: u64) {
        if let Some(entry) = self.entries.remove(&id)
            && entry.current
        {
            self.index.retain(|_, v| *v != id);
        }
    }
}

#[cfg(test)]
mod tests;
