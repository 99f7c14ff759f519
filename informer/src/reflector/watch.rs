//! Watching: reading watch streams into the store, resuming them, and ending them
//! when a relist is due (410 Gone, an error event, or a new key filter generation).

use std::future::Future;
use std::task::{Poll, ready};

use futures::StreamExt;
use tokio::time::Instant;

use super::backoff::Backoff;
use super::error::{
    is_connection_refused, is_expired, is_too_large_resource_version, is_too_many_requests,
};
use super::progress::{FilterGeneration, OpenWatch, Progress, Relist};
use super::source::{WatchEvent, WatchRequest};
use super::{Phase, Reflector, ReflectorError, SHORT_WATCH, dead_watch_grace, random_in};
use crate::key::ObjectKey;
use crate::object::{Meta, Object};

/// Why reading a watch stopped.
enum Stopped {
    /// The stream ended with this error.
    Error(kube::Error),
    /// The server closed the stream.
    Closed,
    /// The key filter's generation moved.
    FilterChanged,
    /// A relist was asked for (see [`RelistTrigger`](super::RelistTrigger)).
    RelistAsked,
}

impl<K> Reflector<K>
where
    K: Object + Send + 'static,
{
    /// Watches from the last resourceVersion, first reading on `streamed` (the watch
    /// of the streaming list that synced the store) when there is one.
    pub(super) async fn watch(
        &self,
        progress: &mut Progress,
        mut streamed: Option<OpenWatch<K>>,
    ) -> Result<Relist, ReflectorError> {
        let mut connect_backoff = Backoff::new(self.config.backoff.clone());
        loop {
            if progress.key_filter_moved() {
                return Ok(self.filter_changed());
            }
            if progress.relist_requests.pending() {
                return Ok(self.relist_asked());
            }
            self.stats.set_phase(Phase::Watching);
            if let Some(open) = streamed.take() {
                tracing::debug!(resource_version = %progress.last_resource_version, "watching on from the streamed list");
                match self.read_watch(open, progress).await {
                    WatchEnd::Resume => continue,
                    WatchEnd::BackOff => {
                        self.back_off(&mut connect_backoff).await;
                        continue;
                    }
                    WatchEnd::Return(result) => return result,
                    WatchEnd::Relist => return Ok(self.filter_changed()),
                    WatchEnd::RelistAsked => return Ok(self.relist_asked()),
                }
            }
            let timeout = random_in(&self.config.watch_timeout);
            let request = WatchRequest {
                resource_version: progress.last_resource_version.clone(),
                timeout,
                allow_bookmarks: self.config.allow_bookmarks,
                streaming_list: false,
                key_filter: self.request_key_filter(),
            };
            let started = Instant::now();
            let deadline = started + timeout + dead_watch_grace(timeout);
            let opened = tokio::time::timeout_at(deadline, self.lister_watcher.watch(request));
            let Ok(opened) = opened.await else {
                // Not even the response's headers came back: a dead connection.
                self.report(&ReflectorError::DeadWatch(started.elapsed()));
                self.back_off(&mut connect_backoff).await;
                continue;
            };
            let stream = match opened {
                Ok(stream) => stream,
                Err(e) if is_connection_refused(&e) || is_too_many_requests(&e) => {
                    // The server is down or busy: the list we have is still good.
                    self.report(&ReflectorError::Watch(e));
                    self.back_off(&mut connect_backoff).await;
                    continue;
                }
                Err(e) if is_expired(&e) || is_too_large_resource_version(&e) => {
                    return Ok(self.expired(e));
                }
                Err(e) => return Err(ReflectorError::Watch(e)),
            };
            connect_backoff.reset();
            self.record(|metrics| metrics.watch_started());
            tracing::debug!(resource_version = %progress.last_resource_version, ?timeout, "watching");
            let open = OpenWatch {
                stream,
                started,
                deadline,
                events: 0,
            };
            match self.read_watch(open, progress).await {
                WatchEnd::Resume => {}
                WatchEnd::BackOff => self.back_off(&mut connect_backoff).await,
                WatchEnd::Return(result) => return result,
                WatchEnd::Relist => return Ok(self.filter_changed()),
                WatchEnd::RelistAsked => return Ok(self.relist_asked()),
            }
        }
    }

    /// Reads an open watch until it ends, applying its events.
    async fn read_watch(&self, open: OpenWatch<K>, progress: &mut Progress) -> WatchEnd {
        let OpenWatch {
            mut stream,
            started,
            deadline,
            mut events,
        } = open;
        // A new generation of the key filter ends the watch between two events: the
        // generation is looked at before each one, and, while the stream waits, a
        // change wakes the task.
        let generation = progress.key_filter_generation();
        let relist_requests = progress.relist_requests.clone();
        let mut moved = std::pin::pin!(async {
            let filter_moved = async {
                match &generation {
                    Some(generation) => generation.moved().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = filter_moved => Stopped::FilterChanged,
                () = relist_requests.asked() => Stopped::RelistAsked,
            }
        });
        // Events are applied inside the poll, where the stream hands them out:
        // awaiting `next()` would copy every object (hundreds of bytes) twice more,
        // into the future's state and out of it.
        let ended = tokio::time::timeout_at(
            deadline,
            std::future::poll_fn(|cx| {
                loop {
                    if generation.as_ref().is_some_and(FilterGeneration::has_moved) {
                        return Poll::Ready(Stopped::FilterChanged);
                    }
                    if relist_requests.pending() {
                        return Poll::Ready(Stopped::RelistAsked);
                    }
                    match stream.poll_next_unpin(cx) {
                        Poll::Ready(Some(Ok(event))) => {
                            events += 1;
                            self.apply(event, progress);
                        }
                        Poll::Ready(Some(Err(e))) => return Poll::Ready(Stopped::Error(e)),
                        Poll::Ready(None) => return Poll::Ready(Stopped::Closed),
                        Poll::Pending => return Poll::Ready(ready!(moved.as_mut().poll(cx))),
                    }
                }
            }),
        )
        .await;
        let ended = match ended {
            Ok(Stopped::FilterChanged) => return WatchEnd::Relist,
            Ok(Stopped::RelistAsked) => return WatchEnd::RelistAsked,
            Ok(Stopped::Error(e)) => Some(e),
            Ok(Stopped::Closed) => None,
            Err(_) => {
                // Past the server's own timeout and still open: the connection died
                // without a word. Resume from the last version on a new one.
                self.report(&ReflectorError::DeadWatch(started.elapsed()));
                return WatchEnd::Resume;
            }
        };
        match ended {
            // The server closed the watch (its timeout): resume.
            None => {}
            Some(e) if is_expired(&e) => return WatchEnd::Return(Ok(self.expired(e))),
            Some(e) if is_too_many_requests(&e) => {
                // The server asks us to slow down (client-go: back off, then watch
                // again from the last resourceVersion; the cache is still good).
                self.report(&ReflectorError::Watch(e));
                return WatchEnd::BackOff;
            }
            Some(kube::Error::Api(status)) => {
                // An error event from the server: start over with a relist.
                let error = ReflectorError::Watch(kube::Error::Api(status));
                return WatchEnd::Return(Err(error));
            }
            // The connection broke: resume the watch where it was.
            Some(e) => self.report(&ReflectorError::Watch(e)),
        }
        let elapsed = started.elapsed();
        if events == 0 && elapsed < SHORT_WATCH {
            self.record(|metrics| metrics.short_watch());
            return WatchEnd::Return(Err(ReflectorError::ShortWatch(elapsed)));
        }
        tracing::debug!(events, ?elapsed, "watch ended; resuming");
        WatchEnd::Resume
    }

    /// Waits out the next delay of `backoff`, saying so in the stats.
    pub(super) async fn back_off(&self, backoff: &mut Backoff) {
        self.stats.set_phase(Phase::BackingOff);
        tokio::time::sleep(backoff.next_delay()).await;
    }

    /// 410 Gone on a watch: relist without an error (client-go logs this at debug
    /// level: it is the normal way to catch up after a long disconnect).
    pub(super) fn expired(&self, e: kube::Error) -> Relist {
        let error = ReflectorError::Expired(e);
        tracing::debug!(%error, "relisting");
        self.notify(&error);
        Relist::AfterBackoff
    }

    /// A relist was asked for while watching: the watch ends, and the reflector
    /// relists at once.
    fn relist_asked(&self) -> Relist {
        tracing::debug!("a relist was asked for; relisting");
        Relist::AtOnce
    }

    fn apply(&self, event: WatchEvent<K>, progress: &mut Progress) {
        self.record(|metrics| metrics.watch_event());
        // The object's resourceVersion is copied into a reused buffer before the object
        // moves into the store (and recorded after it), so events allocate nothing here.
        let mut rv = std::mem::take(&mut progress.event_resource_version);
        rv.clear();
        match event {
            // An object whose new state the key filter does not keep leaves the store,
            // as a relist would drop it: a filter can stop keeping an object that
            // changes (one on its controller reference, say).
            WatchEvent::Added(object) => {
                push_resource_version(&mut rv, &object);
                if self.passes_filter(&object) {
                    self.store.add(object);
                } else {
                    self.store.left_filter(&ObjectKey::of(&object));
                }
            }
            WatchEvent::Modified(object) => {
                push_resource_version(&mut rv, &object);
                if self.passes_filter(&object) {
                    self.store.update(object);
                } else {
                    self.store.left_filter(&ObjectKey::of(&object));
                }
            }
            WatchEvent::Deleted(object) => {
                push_resource_version(&mut rv, &object);
                if self.passes_filter(&object) {
                    self.store.delete(object);
                } else {
                    self.store.left_filter(&ObjectKey::of(&object));
                }
            }
            WatchEvent::Bookmark {
                resource_version, ..
            } => {
                self.store.progressed(&resource_version);
                rv = resource_version;
            }
            // Skipped as a bookmark is: the watch has got this far.
            WatchEvent::FilteredOut {
                resource_version,
                key,
            } => {
                self.record(|metrics| metrics.filtered_out(1));
                if let Some(key) = key {
                    self.store.left_filter(&key);
                }
                self.store.progressed(&resource_version);
                rv = resource_version;
            }
            WatchEvent::Undecodable(error) => {
                let decode = match &error {
                    ReflectorError::Decode(e) => Some(e),
                    _ => None,
                };
                if let Some(version) = decode.and_then(|e| e.resource_version.as_ref()) {
                    rv.push_str(version);
                }
                if decode.is_some_and(|e| !self.passes_filter_undecodable(e)) {
                    // Not ours: passed over unreported, as if filtered out unread.
                } else {
                    // Whatever the event's type, the server now holds something under
                    // this name that a fresh list would skip: the cache must not keep
                    // an older version of it (nor a deleted one).
                    if let Some(key) = decode.and_then(|e| e.object_key.as_deref()) {
                        self.store.forget(key);
                    }
                    self.report(&error);
                }
            }
        }
        if !rv.is_empty() {
            self.record(|metrics| metrics.resource_version(&rv));
            progress.last_resource_version.clone_from(&rv);
        }
        progress.event_resource_version = rv;
    }
}

/// How reading a watch ended.
enum WatchEnd {
    /// Watch again from the last resourceVersion, at once.
    Resume,
    /// Watch again from the last resourceVersion, after a backoff.
    BackOff,
    /// Stop watching: `Ok` relists, `Err` relists after a report and a backoff.
    Return(Result<Relist, ReflectorError>),
    /// The key filter's generation moved: relist at once.
    Relist,
    /// A relist was asked for: relist at once.
    RelistAsked,
}

fn push_resource_version<K: Object>(buffer: &mut String, object: &K) {
    if let Some(version) = object.metadata().resource_version() {
        buffer.push_str(version);
    }
}
