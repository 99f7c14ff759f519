//! [`FakeSource`]: an in-memory collection that lists and watches like an API server,
//! so unit tests drive a reflector or an informer without one (client-go's
//! `FakeControllerSource`). Its rules are on the type, where users read them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use educe::Educe;
use futures::StreamExt;
use futures::future::BoxFuture;
use kube::Resource;
use tokio::sync::mpsc;

use super::capabilities::Capabilities;
use super::lister_watcher::ListerWatcher;
use super::requests::{ListPage, ListRequest, WatchEvent, WatchRequest, WatchStream};
use super::versions::VersionSource;
use crate::key::ObjectKey;
use crate::lock::MutexExt;

type Sender<K> = mpsc::UnboundedSender<Result<WatchEvent<K>, kube::Error>>;

/// An in-memory [`ListerWatcher`] for unit tests: a collection that lists and watches
/// like an API server (client-go's `FakeControllerSource`).
///
/// Clones share one collection: hand one to the informer and keep one to change.
/// [`add`](Self::add), [`modify`](Self::modify) and [`delete`](Self::delete) each
/// stamp the object with the next resourceVersion (1, 2, 3...) in its
/// `metadata.resourceVersion`, and log and send the change. A list answers with every
/// object at the current version; a watch from a version replays the logged changes
/// after it, then sends each new change as it is made. Replay and live changes are
/// handed over under one lock, so a watcher sees every change once, in order, whenever
/// it connects: a test may make changes before, during or after the informer starts
/// without racing it.
///
/// The log is kept whole until [`compact`](Self::compact) forgets it, like etcd's
/// compaction: a watch from an older version is then answered 410 Gone, and the
/// reflector relists. [`delete_missed`](Self::delete_missed) uses that to stage the
/// one case only a relist reveals, a deletion the watch never reported.
///
/// It serves streaming lists ([`WatchRequest::streaming_list`]) as the API server
/// does: an ADDED event for every object now, then a bookmark at the current
/// resourceVersion with `initial_events_end` set, then every new change; from a
/// resourceVersion newer than its own it answers "too large resource version". After
/// [`refuse_streaming_lists`](Self::refuse_streaming_lists) it answers them as a
/// server that predates them does (422 Invalid), and the reflector falls back to list
/// and watch.
///
/// For consistency checks ([`Capabilities::versions`](crate::reflector::source::Capabilities#structfield.versions)) it lists the versions of the
/// collection exactly as it was at any resourceVersion since the last compaction
/// (older ones are 410 Gone, newer ones "too large"), and a watch of versions sends a
/// bookmark at the current version right after the changes it replays.
///
/// What it leaves out: paging (one page, no continue token), label and field
/// selectors, key filters (a reflector with a
/// [`KeyFilter`](crate::reflector::KeyFilter) applies it to what the source sends), bookmarks
/// other than the one that ends a streaming list's initial events, and any check that a change makes sense (an add of a name that exists, a
/// modify or delete of one that does not): it records and sends what it is told, so a
/// test can script an odd server too.
///
/// ```
/// use informer::reflector::source::FakeSource;
/// use informer::shared_informer::{InformerConfig, Notification, SharedIndexInformer};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
/// use futures::StreamExt;
///
/// fn config_map(name: &str, data: &str) -> ConfigMap {
///     ConfigMap {
///         metadata: ObjectMeta {
///             name: Some(name.into()),
///             namespace: Some("default".into()),
///             ..ObjectMeta::default()
///         },
///         data: Some([("value".to_string(), data.to_string())].into()),
///         ..ConfigMap::default()
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap()
/// #     .block_on(async {
/// let source = FakeSource::new();
/// source.add(config_map("web", "v1"));
///
/// let informer = SharedIndexInformer::with_config(source.clone(), InformerConfig::default())?;
/// let mut notifications = informer.subscribe()?;
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// let running = tokio::spawn({
///     let informer = informer.clone();
///     async move { informer.run(async { stopped.await.ok(); }).await }
/// });
///
/// // The initial list...
/// let Some(Notification::Add { object, is_initial_list: true }) = notifications.next().await
/// else { panic!("the listed object first") };
/// assert_eq!(object.metadata.resource_version.as_deref(), Some("1"));
///
/// // ...then every change, in order.
/// source.modify(config_map("web", "v2"));
/// source.delete(config_map("web", "v2"));
/// let Some(Notification::Update { new, .. }) = notifications.next().await else { panic!() };
/// assert_eq!(new.data.as_ref().unwrap()["value"], "v2");
/// let Some(Notification::Delete(gone)) = notifications.next().await else { panic!() };
/// assert!(!gone.is_final_state_unknown());
/// assert_eq!(gone.object().metadata.resource_version.as_deref(), Some("3"));
///
/// stop.send(()).ok();
/// running.await??;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Educe)]
#[educe(Clone)]
pub struct FakeSource<K> {
    state: Arc<Mutex<State<K>>>,
}

struct State<K> {
    /// The collection now, in key order (which is the order a list returns).
    objects: BTreeMap<ObjectKey, K>,
    /// Every change after `compacted`, oldest first.
    log: Vec<Change<K>>,
    /// The collection as it was at `compacted`: with `log`, what it was at any
    /// version since (see [`versions`](versions)).
    base: BTreeMap<ObjectKey, K>,
    /// The resourceVersion of the last change (0 before any).
    resource_version: u64,
    /// Changes up to this resourceVersion are forgotten: a watch from before it is
    /// answered 410 Gone.
    compacted: u64,
    /// One channel per open watch; a closed one is dropped at the next change.
    watchers: Vec<Sender<K>>,
    shut_down: bool,
    /// Streaming lists are answered 422, as by a server that predates them.
    refuse_streaming_lists: bool,
    /// Streaming lists asked for, served or refused.
    streaming_list_requests: usize,
}

struct Change<K> {
    resource_version: u64,
    kind: ChangeKind,
    /// The object as sent, stamped with `resource_version`.
    object: K,
}

#[derive(Debug, Clone, Copy)]
enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

impl ChangeKind {
    fn event<K>(self, object: K) -> WatchEvent<K> {
        match self {
            Self::Added => WatchEvent::Added(object),
            Self::Modified => WatchEvent::Modified(object),
            Self::Deleted => WatchEvent::Deleted(object),
        }
    }
}

impl<K> Default for FakeSource<K> {
    fn default() -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                objects: BTreeMap::new(),
                log: Vec::new(),
                base: BTreeMap::new(),
                resource_version: 0,
                compacted: 0,
                watchers: Vec::new(),
                shut_down: false,
                refuse_streaming_lists: false,
                streaming_list_requests: 0,
            })),
        }
    }
}

impl<K> std::fmt::Debug for FakeSource<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.locked();
        f.debug_struct("FakeSource")
            .field("objects", &state.objects.len())
            .field("resource_version", &state.resource_version)
            .field("compacted", &state.compacted)
            .field("watchers", &state.watchers.len())
            .field("shut_down", &state.shut_down)
            .field("refuse_streaming_lists", &state.refuse_streaming_lists)
            .finish()
    }
}

impl<K> FakeSource<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// An empty source at resourceVersion 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Creates `object` (or replaces the one of its name) and sends ADDED; returns it
    /// as stored, with its new resourceVersion.
    pub fn add(&self, object: K) -> K {
        self.change(ChangeKind::Added, object)
    }

    /// Replaces the object of `object`'s name and sends MODIFIED; returns it as
    /// stored, with its new resourceVersion.
    pub fn modify(&self, object: K) -> K {
        self.change(ChangeKind::Modified, object)
    }

    /// Removes the object of `object`'s name and sends DELETED with `object` as its
    /// final state; returns it as sent, with its new resourceVersion.
    pub fn delete(&self, object: K) -> K {
        self.change(ChangeKind::Deleted, object)
    }

    /// Removes the object of `object`'s name as if it was deleted while every watcher
    /// was disconnected and the history compacted before they came back: no DELETED
    /// is sent, the log is compacted past the deletion, and every open watch ends
    /// with 410 Gone. The reflector relists, finds the object gone, and the informer
    /// delivers a tombstone ([`DeletedObject::Unknown`](crate::fifo::DeletedObject::Unknown))
    /// with the last state it knew.
    pub fn delete_missed(&self, object: &K) {
        let mut state = self.state.locked();
        state.objects.remove(&ObjectKey::of(object));
        state.resource_version += 1;
        state.compact();
        let compacted = state.compacted;
        for watcher in state.watchers.drain(..) {
            watcher.send(Err(compacted_away(compacted))).ok();
        }
    }

    /// Forgets the change log up to now, like etcd's compaction: a later watch from an
    /// older resourceVersion is answered 410 Gone. Open watches go on.
    pub fn compact(&self) {
        self.state.locked().compact();
    }

    /// Ends every open watch, as a server closing its connections does; the reflector
    /// resumes watching from the last resourceVersion it saw (client-go's
    /// `ResetWatches`).
    pub fn disconnect(&self) {
        self.state.locked().watchers.clear();
    }

    /// Ends every open watch and answers every later list and watch with 503
    /// Service Unavailable, like a server gone away. Dropping the last clone of the
    /// source (the informer given one holds it) ends open watches too.
    pub fn shutdown(&self) {
        let mut state = self.state.locked();
        state.shut_down = true;
        state.watchers.clear();
    }

    /// From now on, answers streaming lists ([`WatchRequest::streaming_list`]) with
    /// 422 Invalid, as an API server that predates them (1.20, say) does; lists and
    /// plain watches are served as before.
    pub fn refuse_streaming_lists(&self) {
        self.state.locked().refuse_streaming_lists = true;
    }

    /// How many streaming lists were asked for, served or refused: a reflector that
    /// was refused once asks for none again.
    pub fn streaming_list_requests(&self) -> usize {
        self.state.locked().streaming_list_requests
    }

    /// The resourceVersion of the last change ("0" before any).
    pub fn resource_version(&self) -> String {
        self.state.locked().resource_version.to_string()
    }

    /// The objects now, in key order.
    pub fn objects(&self) -> Vec<K> {
        self.state.locked().objects.values().cloned().collect()
    }

    /// How many watches are open (a watch closed by its reader is counted until the
    /// next change notices).
    pub fn watcher_count(&self) -> usize {
        self.state.locked().watchers.len()
    }

    fn change(&self, kind: ChangeKind, mut object: K) -> K {
        let mut state = self.state.locked();
        state.resource_version += 1;
        object.meta_mut().resource_version = Some(state.resource_version.to_string());
        let key = ObjectKey::of(&object);
        match kind {
            ChangeKind::Added | ChangeKind::Modified => {
                state.objects.insert(key, object.clone());
            }
            ChangeKind::Deleted => {
                state.objects.remove(&key);
            }
        }
        // A watcher whose stream was dropped is dropped here, so watches that come
        // and go do not pile up.
        state
            .watchers
            .retain(|watcher| watcher.send(Ok(kind.event(object.clone()))).is_ok());
        let resource_version = state.resource_version;
        state.log.push(Change {
            resource_version,
            kind,
            object: object.clone(),
        });
        object
    }
}

impl<K: Clone> State<K> {
    fn compact(&mut self) {
        self.log.clear();
        self.compacted = self.resource_version;
        self.base.clone_from(&self.objects);
    }
}

impl<K> ListerWatcher<K> for FakeSource<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// Every object at the current resourceVersion, whatever the request asks (no
    /// paging, no selectors).
    fn list(&self, _request: ListRequest) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>> {
        let state = self.state.locked();
        let page = if state.shut_down {
            Err(unavailable())
        } else {
            Ok(ListPage {
                items: state.objects.values().cloned().collect(),
                resource_version: state.resource_version.to_string(),
                ..ListPage::default()
            })
        };
        Box::pin(std::future::ready(page))
    }

    /// The changes after `request.resource_version` (or, from "" or "0", an ADDED for
    /// every object, as the API server does), then every new change, until the
    /// request's timeout, [`disconnect`](FakeSource::disconnect),
    /// [`shutdown`](FakeSource::shutdown), or the last clone of the source is dropped.
    /// A streaming list sends the initial events and the bookmark that ends them first
    /// (see [`FakeSource`]).
    fn watch(&self, request: WatchRequest) -> BoxFuture<'_, Result<WatchStream<K>, kube::Error>> {
        Box::pin(std::future::ready(self.start_watch(&request, false)))
    }

    /// Streaming lists, and the collection's versions at any resourceVersion since
    /// the last compaction (see [`FakeSource`]).
    fn capabilities(&self) -> Capabilities {
        let versions: Arc<dyn VersionSource> = Arc::new(self.clone());
        Capabilities::default()
            .streaming_list(true)
            .versions(Some(versions))
    }
}

impl<K> FakeSource<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// Starts a watch; `bookmark_after_backlog` sends a bookmark at the current
    /// version right after the replayed changes (a version watch's proof that it has
    /// seen everything up to there).
    fn start_watch(
        &self,
        request: &WatchRequest,
        bookmark_after_backlog: bool,
    ) -> Result<WatchStream<K>, kube::Error> {
        let mut state = self.state.locked();
        if state.shut_down {
            return Err(unavailable());
        }
        let (sender, mut receiver) = mpsc::unbounded_channel();
        // The backlog goes into the channel before the sender joins the watchers, all
        // under the lock, so no change is sent twice or missed in between.
        if request.streaming_list {
            state.streaming_list_requests += 1;
            state.send_initial_events(request, &sender)?;
        } else {
            state.send_backlog(request, &sender)?;
        }
        if bookmark_after_backlog {
            let current = state.resource_version.to_string();
            sender.send(Ok(WatchEvent::bookmark(current))).ok();
        }
        state.watchers.push(sender);
        drop(state);

        let events = futures::stream::poll_fn(move |cx| receiver.poll_recv(cx));
        // Zero means "no timeout asked"; the server would pick one, this source none.
        let timeout = request.timeout;
        if timeout.is_zero() {
            return Ok(events.boxed());
        }
        // The timer is made on first poll, inside whatever runtime polls the stream.
        let timed_out = async move { tokio::time::sleep(timeout).await };
        Ok(events.take_until(timed_out).boxed())
    }
}

impl<K: Clone> State<K> {
    /// What a plain watch from `request.resource_version` replays: an ADDED for every
    /// object from "" or "0", else the logged changes after it.
    fn send_backlog(&self, request: &WatchRequest, sender: &Sender<K>) -> Result<(), kube::Error> {
        match request.resource_version.as_str() {
            "" | "0" => {
                for object in self.objects.values() {
                    sender.send(Ok(WatchEvent::Added(object.clone()))).ok();
                }
            }
            from => {
                let from: u64 = from.parse().map_err(|_| {
                    status(
                        400,
                        "BadRequest",
                        format!("invalid resourceVersion {from:?}"),
                    )
                })?;
                if from < self.compacted {
                    return Err(expired(from, self.compacted));
                }
                for change in self
                    .log
                    .iter()
                    .filter(|change| change.resource_version > from)
                {
                    sender
                        .send(Ok(change.kind.event(change.object.clone())))
                        .ok();
                }
            }
        }
        Ok(())
    }

    /// A streaming list's start: an ADDED for every object now, then the bookmark that
    /// ends the initial events, at the current resourceVersion.
    fn send_initial_events(
        &self,
        request: &WatchRequest,
        sender: &Sender<K>,
    ) -> Result<(), kube::Error> {
        if self.refuse_streaming_lists {
            return Err(streaming_list_forbidden());
        }
        // NotOlderThan: the collection now is recent enough for any version the source
        // has reached (the API server's watch cache, too, answers from its current
        // state however old the version asked for).
        if let Ok(from) = request.resource_version.parse::<u64>()
            && from > self.resource_version
        {
            return Err(too_large_resource_version(from, self.resource_version));
        }
        for object in self.objects.values() {
            sender.send(Ok(WatchEvent::Added(object.clone()))).ok();
        }
        let end = WatchEvent::Bookmark {
            resource_version: self.resource_version.to_string(),
            initial_events_end: true,
        };
        sender.send(Ok(end)).ok();
        Ok(())
    }
}

fn status(code: u16, reason: &str, message: String) -> kube::Error {
    kube::Error::Api(
        kube::core::Status::failure(&message, reason)
            .with_code(code)
            .boxed(),
    )
}

/// 410 Gone for a watch from `from`, worded as the API server words it.
fn expired(from: u64, compacted: u64) -> kube::Error {
    status(
        410,
        "Expired",
        format!("too old resource version: {from} ({compacted})"),
    )
}

/// 410 Gone for an open watch whose history was compacted under it.
fn compacted_away(compacted: u64) -> kube::Error {
    status(
        410,
        "Expired",
        format!("the event history was compacted at resource version {compacted}"),
    )
}

/// 422 for a streaming list, worded as a 1.20 API server words it.
fn streaming_list_forbidden() -> kube::Error {
    status(
        422,
        "Invalid",
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: \
         resourceVersionMatch is forbidden for watch"
            .into(),
    )
}

/// The API server's answer to a watch from a version it has not reached.
fn too_large_resource_version(from: u64, current: u64) -> kube::Error {
    let message = "Too large resource version";
    let mut status = kube::core::Status::failure(
        &format!("Timeout: {message}: {from}, current: {current}"),
        "Timeout",
    )
    .with_code(504);
    status.details = Some(kube::core::response::StatusDetails {
        name: String::new(),
        group: String::new(),
        kind: String::new(),
        uid: String::new(),
        causes: vec![kube::core::response::StatusCause {
            reason: "ResourceVersionTooLarge".into(),
            message: message.into(),
            field: String::new(),
        }],
        retry_after_seconds: 1,
    });
    kube::Error::Api(status.boxed())
}

fn unavailable() -> kube::Error {
    status(
        503,
        "ServiceUnavailable",
        "the fake source has shut down".into(),
    )
}

mod versions;

#[cfg(test)]
mod tests;
