//! [`RecorderStats`]: what a recorder did with the events it was given.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counts of what a [`Recorder`](super::Recorder) did, since it was made: read them
/// with [`Recorder::stats`](super::Recorder::stats) (for metrics, or to see how many
/// events the spam filter dropped).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecorderStats {
    /// Calls to `publish`.
    pub published: u64,
    /// Events counted in an existing Event's series instead of creating one.
    pub folded: u64,
    /// Events dropped by the spam filter.
    pub throttled: u64,
    /// Events dropped because the writer's queue was full.
    pub queue_full: u64,
    /// Events dropped because the API server would reject them.
    pub invalid: u64,
    /// Events dropped because the recorder was shut down.
    pub after_shutdown: u64,
    /// Events the API server created (re-creations included).
    pub created: u64,
    /// Events created again because a patch found them gone (TTL expired or deleted).
    pub recreated: u64,
    /// Series updates the API server accepted.
    pub patched: u64,
    /// Writes given up (refused by the server, or out of retries).
    pub failed: u64,
    /// Writes not sent because the claim the event was published under had ended
    /// (a controller replica's term or shard ended before the writer got to it): the
    /// Event, or the rest of its series count, is dropped.
    pub fenced: u64,
}

/// One counter per [`RecorderStats`] field.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) published: AtomicU64,
    pub(super) folded: AtomicU64,
    pub(super) throttled: AtomicU64,
    pub(super) queue_full: AtomicU64,
    pub(super) invalid: AtomicU64,
    pub(super) after_shutdown: AtomicU64,
    pub(super) created: AtomicU64,
    pub(super) recreated: AtomicU64,
    pub(super) patched: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) fenced: AtomicU64,
}

/// Adds one to `counter`, returning the new count.
pub(super) fn bump(counter: &AtomicU64) -> u64 {
    counter.fetch_add(1, Ordering::Relaxed) + 1
}

impl Counters {
    /// The counts now.
    pub(super) fn snapshot(&self) -> RecorderStats {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        RecorderStats {
            published: read(&self.published),
            folded: read(&self.folded),
            throttled: read(&self.throttled),
            queue_full: read(&self.queue_full),
            invalid: read(&self.invalid),
            after_shutdown: read(&self.after_shutdown),
            created: read(&self.created),
            recreated: read(&self.recreated),
            patched: read(&self.patched),
            failed: read(&self.failed),
            fenced: read(&self.fenced),
        }
    }
}
