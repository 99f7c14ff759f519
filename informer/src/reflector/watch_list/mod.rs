//! Streaming lists (client-go's WatchList): a (re)sync as one watch that first sends
//! the whole collection.
//!
//! The reflector asks for a watch with `sendInitialEvents=true` and
//! `resourceVersionMatch=NotOlderThan` ([`WatchRequest::streaming_list`]), from the
//! last synced resourceVersion, or from "" (the most recent state, read consistently)
//! on the first sync and after a 410. The server sends an ADDED event for every object,
//! then a bookmark annotated `k8s.io/initial-events-end: "true"` at the version those
//! objects were read at, then carries on as a plain watch. The reflector gathers the
//! initial objects, hands them to the store in one
//! [`ReflectorStore::replace`](super::ReflectorStore::replace) at the
//! bookmark's version (exactly what a list does), and goes on reading the same stream
//! as its watch. Its rules, client-go's unless said otherwise:
//!
//! - Nothing partial reaches the store: if the stream ends, breaks or dies before the
//!   bookmark, what it sent is dropped and the sync starts over after a backoff.
//! - MODIFIED and DELETED events before the bookmark change the gathered objects, as
//!   they would client-go's temporary store; an object that does not decode is
//!   reported and left out, as from a list. A bookmark without the annotation is not
//!   the end.
//! - 410 Gone or "too large resource version" asks again at once, from "".
//!   A refused connection or 429 asks again after a backoff.
//! - 400 Bad Request or 422 Invalid is a server that does not serve streaming lists
//!   (before 1.27, or with the feature off): the reflector logs one warning (the
//!   error handler is not told: nothing is wrong, as for client-go), lists instead,
//!   and, unlike client-go, which asks again at every sync, never asks this server
//!   again
//!   ([`StatsSnapshot::streaming_list_refused`](super::StatsSnapshot::streaming_list_refused)).
//! - 401 or 403 fails the sync as a denied list does: reported, then a backoff, then
//!   a streaming list again (client-go lists at once, and is denied the same way:
//!   two errors where one says it all).
//! - Any other error answer falls back to a list for this sync only.
//! - Objects the key filter does not keep are passed over, as in a list (see
//!   [`KeyFilter`](super::KeyFilter)).
//! - An object the store already holds at the streamed version is taken from the store
//!   ([`ReflectorStore::cached_objects`](super::ReflectorStore::cached_objects)), and the decoded copy dropped at once: a
//!   resync by streaming list does not hold the collection twice, as a relist does not.

use std::sync::Arc;
use std::task::{Poll, ready};

use futures::StreamExt;
use tokio::time::Instant;

use super::backoff::Backoff;
use super::error::{
    api_status_code, is_connection_refused, is_expired, is_too_large_resource_version,
    is_too_many_requests,
};
use super::progress::{OpenWatch, StreamingList};
use super::source::{WatchEvent, WatchRequest, WatchStream};
use super::{
    CachedObjects, Phase, Progress, Reflector, ReflectorError, dead_watch_grace, random_in,
};
use crate::key::{ObjectKeyRef, meta_namespace_key_ref};
use crate::object::{Meta, Object};

/// What to do after a streaming list failed.
enum Retry {
    /// Ask again at once.
    Now,
    /// Ask again after a backoff.
    AfterBackoff,
    /// List and watch instead.
    ListInstead,
    /// Fail the sync with this error (reported, then a backoff).
    Fail(ReflectorError),
}

/// What the initial events stopped at.
enum Ended {
    /// The bookmark that ends them, at this resourceVersion.
    Synced(String),
    /// An error answer in the stream.
    Failed(kube::Error),
    /// The server closed the stream.
    Closed,
}

/// Whether the server says it does not serve streaming lists: 422 Invalid is what API
/// servers that predate them, or have them off, answer (`resourceVersionMatch` or
/// `sendInitialEvents` "is forbidden for watch"); 400 is the same refusal worded by
/// servers and proxies that do not validate the options one by one. client-go's tests
/// single out Invalid as the server that "doesn't support streaming".
fn is_streaming_list_refused(e: &kube::Error) -> bool {
    matches!(api_status_code(e), Some(400 | 422))
}

impl<K> Reflector<K>
where
    K: Object + Send + 'static,
{
    /// Whether the next sync tries a streaming list: the config asks for it, the
    /// lister-watcher serves it, and no server has refused it yet.
    pub fn uses_streaming_list(&self) -> bool {
        self.config.streaming_list
            && self.streams
            && !self
                .streaming_list_refused
                .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Syncs the store with a streaming list (see the [module docs](self)).
    pub(super) async fn streaming_list(
        &self,
        progress: &mut Progress,
    ) -> Result<StreamingList<K>, ReflectorError> {
        let mut backoff = Backoff::new(self.config.backoff.clone());
        loop {
            // client-go's `rewatchResourceVersion`: "" is the most recent state.
            let resource_version = if progress.resource_version_unavailable {
                String::new()
            } else {
                progress.last_resource_version.clone()
            };
            let timeout = random_in(&self.config.watch_timeout);
            let request = WatchRequest {
                resource_version,
                timeout,
                allow_bookmarks: true,
                streaming_list: true,
                key_filter: self.request_key_filter(),
            };
            self.stats.set_phase(Phase::Listing);
            self.record(|metrics| metrics.streaming_list_requested());
            let started = Instant::now();
            let deadline = started + timeout + dead_watch_grace(timeout);
            let opened = tokio::time::timeout_at(deadline, self.lister_watcher.watch(request));
            let Ok(opened) = opened.await else {
                return Err(ReflectorError::DeadWatch(started.elapsed()));
            };
            let retry = match opened {
                Ok(mut stream) => {
                    backoff.reset();
                    self.record(|metrics| metrics.watch_started());
                    let mut initial = InitialEvents::new(self.store.cached_objects());
                    let ended = tokio::time::timeout_at(
                        deadline,
                        self.read_initial_events(&mut stream, &mut initial),
                    );
                    let Ok(ended) = ended.await else {
                        // Past the server's own timeout and still no end: a dead
                        // connection. What came is dropped with `initial`.
                        return Err(ReflectorError::DeadWatch(started.elapsed()));
                    };
                    match ended {
                        Ended::Synced(resource_version) => {
                            let events = initial.events;
                            self.replace_with(initial, resource_version, progress, started);
                            let watch = OpenWatch {
                                stream,
                                started,
                                deadline,
                                events,
                            };
                            return Ok(StreamingList::Synced(watch));
                        }
                        Ended::Closed => {
                            let events = initial.events;
                            return Err(ReflectorError::InitialEventsIncomplete { events });
                        }
                        Ended::Failed(e) => self.streaming_list_failed(e, progress),
                    }
                }
                Err(e) => self.streaming_list_failed(e, progress),
            };
            match retry {
                Retry::Now => {}
                Retry::AfterBackoff => self.back_off(&mut backoff).await,
                Retry::ListInstead => return Ok(StreamingList::ListInstead),
                Retry::Fail(error) => return Err(error),
            }
        }
    }

    /// Reads the initial events into `initial` until the bookmark that ends them.
    /// Events are taken inside the poll, where the stream hands them out, as the watch
    /// does: awaiting `next()` would move every object twice more.
    async fn read_initial_events(
        &self,
        stream: &mut WatchStream<K>,
        initial: &mut InitialEvents<K>,
    ) -> Ended {
        std::future::poll_fn(|cx| {
            loop {
                match ready!(stream.poll_next_unpin(cx)) {
                    Some(Ok(event)) => {
                        if let Some(resource_version) = self.receive_initial(event, initial) {
                            return Poll::Ready(Ended::Synced(resource_version));
                        }
                    }
                    Some(Err(e)) => return Poll::Ready(Ended::Failed(e)),
                    None => return Poll::Ready(Ended::Closed),
                }
            }
        })
        .await
    }

    /// Takes one initial event; returns the resourceVersion of the bookmark that ends
    /// them.
    fn receive_initial(
        &self,
        event: WatchEvent<K>,
        initial: &mut InitialEvents<K>,
    ) -> Option<String> {
        initial.events += 1;
        match event {
            // An object the key filter does not keep is passed over; one that was
            // gathered before the filter changed goes in the relist that follows.
            WatchEvent::Added(object) => {
                if self.passes_filter(&object) {
                    initial.add(object);
                }
            }
            WatchEvent::Modified(object) => {
                if self.passes_filter(&object) {
                    initial.remove(meta_namespace_key_ref(&object));
                    initial.add(object);
                }
            }
            WatchEvent::Deleted(object) => {
                if self.passes_filter(&object) {
                    initial.remove(meta_namespace_key_ref(&object));
                }
            }
            WatchEvent::FilteredOut { .. } => self.record(|metrics| metrics.filtered_out(1)),
            WatchEvent::Bookmark {
                resource_version,
                initial_events_end: true,
            } => return Some(resource_version),
            // Progress, but not the end: the objects so far are not the whole
            // collection, and the store's version moves only with them.
            WatchEvent::Bookmark { .. } => {}
            WatchEvent::Undecodable(ReflectorError::Decode(e))
                if !self.passes_filter_undecodable(&e) => {}
            WatchEvent::Undecodable(error) => {
                // Left out, as from a list; and a version gathered before it is stale.
                if let ReflectorError::Decode(e) = &error
                    && let Some(key) = &e.object_key
                {
                    initial.remove(key.as_key_ref());
                }
                self.report(&error);
            }
        }
        None
    }

    /// The initial events are all in: they replace the store's content, as a list does.
    fn replace_with(
        &self,
        initial: InitialEvents<K>,
        resource_version: String,
        progress: &mut Progress,
        started: Instant,
    ) {
        progress.resource_version_unavailable = false;
        let count = initial.items.len() + initial.unchanged.len();
        self.replacing(progress);
        self.store
            .replace(initial.items, initial.unchanged, &resource_version);
        self.set_resource_version(progress, resource_version);
        let elapsed = started.elapsed();
        tracing::debug!(items = count, resource_version = %progress.last_resource_version, ?elapsed, "streamed the list");
        self.record(|metrics| metrics.list_completed(count, elapsed));
    }

    /// Decides what follows a failed streaming list, and reports the failure.
    fn streaming_list_failed(&self, e: kube::Error, progress: &mut Progress) -> Retry {
        if is_connection_refused(&e) || is_too_many_requests(&e) {
            // The sync fails, though it is tried again here rather than by the caller.
            self.sync_failed(ReflectorError::Watch(e));
            Retry::AfterBackoff
        } else if is_expired(&e) || is_too_large_resource_version(&e) {
            let error = ReflectorError::Expired(e);
            tracing::debug!(%error, "streaming the list again from the most recent version");
            self.notify(&error);
            if std::mem::replace(&mut progress.resource_version_unavailable, true) {
                // Already asked from "": the server is not ready; do not hammer it.
                Retry::AfterBackoff
            } else {
                Retry::Now
            }
        } else if matches!(api_status_code(&e), Some(401 | 403)) {
            Retry::Fail(ReflectorError::Watch(e))
        } else if is_streaming_list_refused(&e) {
            self.streaming_list_refused
                .store(true, std::sync::atomic::Ordering::Relaxed);
            self.record(|metrics| metrics.streaming_list_refused());
            // Normal on a server before 1.34 (or with WatchList off): one short line,
            // the refusal itself counted in the stats and metrics.
            tracing::info!(
                status = api_status_code(&e),
                "the server does not serve streaming lists; listing and watching instead"
            );
            Retry::ListInstead
        } else {
            // Not (yet) a failed sync: the list that follows decides, and its error,
            // if any, is the one reported as the sync's.
            let error = ReflectorError::Watch(e);
            tracing::debug!(
                "streaming list failed; listing instead: {}",
                crate::cause::Chain(&error)
            );
            self.notify(&error);
            Retry::ListInstead
        }
    }
}

/// The objects of a streaming list's initial events, gathered until the bookmark that
/// ends them. Objects the store holds at the same version stand in for the decoded
/// ones, which are dropped at once.
struct InitialEvents<K> {
    items: Vec<K>,
    unchanged: Vec<Arc<K>>,
    cache: Option<Arc<dyn CachedObjects<K>>>,
    /// Events read, bookmarks and undecodable ones included.
    events: usize,
}

impl<K: Object> InitialEvents<K> {
    fn new(cache: Option<Arc<dyn CachedObjects<K>>>) -> Self {
        Self {
            items: Vec::new(),
            unchanged: Vec::new(),
            cache,
            events: 0,
        }
    }

    fn add(&mut self, object: K) {
        if let Some(cache) = &self.cache {
            let meta = object.metadata();
            if let Some(resource_version) = meta.resource_version()
                && let Some(cached) = cache.cached(
                    meta_namespace_key_ref(&object),
                    resource_version,
                    meta.uid(),
                )
            {
                self.unchanged.push(cached);
                return;
            }
        }
        self.items.push(object);
    }

    /// Forgets the object named `key`. A scan: servers send only ADDED events before
    /// the bookmark, so this serves the odd server and costs nothing otherwise.
    fn remove(&mut self, key: ObjectKeyRef<'_>) {
        self.items
            .retain(|object| meta_namespace_key_ref(object) != key);
        self.unchanged
            .retain(|object| meta_namespace_key_ref(object.as_ref()) != key);
    }
}

#[cfg(test)]
mod tests;
