//! What the steps of a reflector's run hand each other: its [`Progress`] between lists
//! and watches, the key filter's [`FilterGeneration`] it follows, a watch left
//! [`OpenWatch`] by a streaming list, and what follows a watch ([`Relist`]). The run
//! (`mod.rs`), its watch, streaming list and filtering steps all use them, so they
//! sit below those files.

use tokio::sync::watch;
use tokio::time::Instant;

use super::key_filter::KeyFilter;
use super::relist::RelistRequests;
use super::source::WatchStream;

/// What the reflector remembers between lists and watches.
pub(super) struct Progress {
    pub(super) last_resource_version: String,
    /// A buffer for the resourceVersion of the event being applied.
    pub(super) event_resource_version: String,
    /// The last resourceVersion answered 410 to a list: the next list must be a
    /// consistent read.
    pub(super) resource_version_unavailable: bool,
    /// The first list at "0" came back in pages: the server pages (its watch cache is
    /// off), so relists at a specific version are paged too (client-go's
    /// `paginatedResult`).
    pub(super) paginated_result: bool,
    /// The key filter's generation, followed to relist when it moves.
    pub(super) key_filter_generation: Option<FilterGeneration>,
    /// Relists asked for from outside (see [`RelistTrigger`](super::RelistTrigger)).
    pub(super) relist_requests: RelistRequests,
}

/// The key filter's generation as a reflector follows it: the one its last sync
/// started with, and whether it has moved since.
#[derive(Clone)]
pub(super) struct FilterGeneration {
    receiver: watch::Receiver<u64>,
    /// The generation the last sync started with.
    synced: u64,
}

impl FilterGeneration {
    pub(super) fn of(filter: &dyn KeyFilter) -> Self {
        let receiver = filter.generation();
        let synced = *receiver.borrow();
        Self { receiver, synced }
    }

    /// A sync starts: it filters with the generation there is now.
    pub(super) fn mark_synced(&mut self) {
        self.synced = *self.receiver.borrow_and_update();
    }

    /// The generation the last sync started with: what a store filled by that sync
    /// holds objects of.
    pub(super) fn synced(&self) -> u64 {
        self.synced
    }

    /// Whether the generation moved since the last sync started. A filter that
    /// dropped its sender never changes again.
    pub(super) fn has_moved(&self) -> bool {
        self.receiver.has_changed().unwrap_or(false)
    }

    /// Completes once the generation has moved since the last sync started (at once
    /// if it already has); never, if the filter can no longer change.
    pub(super) async fn moved(&self) {
        let mut generation = self.receiver.clone();
        if generation.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// What follows a watch that stopped without an error: a relist.
pub(super) enum Relist {
    /// After the usual backoff between list-and-watch rounds (client-go's
    /// `BackoffUntil`), as after 410 Gone.
    AfterBackoff,
    /// At once: nothing went wrong (the key filter changed).
    AtOnce,
}

/// A watch that is open and read up to some point: a streaming list's, after its
/// initial events, which the reflector goes on reading as its watch.
pub(super) struct OpenWatch<K> {
    pub(super) stream: WatchStream<K>,
    /// When it was asked for.
    pub(super) started: Instant,
    /// When it is given up for dead (see [`dead_watch_grace`](super::dead_watch_grace)).
    pub(super) deadline: Instant,
    /// The events read so far.
    pub(super) events: usize,
}

/// How a streaming list ended.
pub(super) enum StreamingList<K> {
    /// The store holds the collection; the watch goes on.
    Synced(OpenWatch<K>),
    /// No streaming list this time (or, once refused, ever): list and watch instead.
    ListInstead,
}
