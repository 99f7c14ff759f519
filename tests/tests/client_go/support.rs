//! Builders, fakes and collectors shared by the ported tests, so each helper is
//! written once.
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use informer::fifo::{
    DeletedFinalStateUnknown, DeletedObject, Delta, DeltaFifo, DeltaFifoConfig, Deltas,
    KnownObjects, ProcessError,
};
use informer::key::{ObjectKey, ObjectKeyRef};
use informer::reflector::source::{ListPage, ListRequest, ListWatch, WatchEvent, WatchRequest};
use informer::shared_informer::{Notification, ResourceEventHandler, SharedIndexInformer};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// How long a test waits for something asynchronous before failing: generous, so a
/// loaded machine never makes a test flaky.
pub const WAIT: Duration = Duration::from_secs(10);

/// client-go's `mkFifoObj(name, val)`: an object keyed by `name` alone (no namespace)
/// that carries `val`, so tests can tell its states apart.
pub fn fifo_obj(name: &str, val: u64) -> ConfigMap {
    valued(name, &val.to_string())
}

/// client-go's `testStoreObject{id, val}`: an object keyed by `name` alone carrying
/// the string `val` (read back with [`value_of`]).
pub fn valued(name: &str, val: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("val".to_owned(), val.to_owned())])),
        ..ConfigMap::default()
    }
}

/// The string set by [`valued`].
pub fn value_of(obj: &ConfigMap) -> &str {
    &obj.data.as_ref().expect("data")["val"]
}

/// The `val` set by [`fifo_obj`].
pub fn val_of(obj: &ConfigMap) -> u64 {
    value_of(obj).parse().expect("a numeric val")
}

/// An object as client-go's tests build pods: `name` in `namespace` (if any) with
/// `labels`.
pub fn object(namespace: Option<&str>, name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: namespace.map(Into::into),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

/// The name of an object.
pub fn name_of(obj: &ConfigMap) -> &str {
    obj.metadata.name.as_deref().unwrap_or_default()
}

/// The names of `objects`, sorted, to compare results whatever their order.
pub fn sorted_names(objects: &[Arc<ConfigMap>]) -> Vec<String> {
    let mut names: Vec<String> = objects.iter().map(|o| name_of(o).to_owned()).collect();
    names.sort();
    names
}

/// client-go's `literalListerGetter`: known objects given as a fixed list.
pub struct Known(Vec<(Arc<ObjectKey>, Arc<ConfigMap>)>);

impl Known {
    pub fn new(objects: impl IntoIterator<Item = ConfigMap>) -> Self {
        Self(
            objects
                .into_iter()
                .map(|obj| (Arc::new(ObjectKey::of(&obj)), Arc::new(obj)))
                .collect(),
        )
    }
}

impl KnownObjects<ConfigMap> for Known {
    fn get_key(&self, key: ObjectKeyRef<'_>) -> Option<Arc<ObjectKey>> {
        self.0
            .iter()
            .find(|(known, _)| key == **known)
            .map(|(known, _)| Arc::clone(known))
    }

    fn for_each_known(&self, f: &mut dyn FnMut(&Arc<ObjectKey>, &Arc<ConfigMap>)) {
        for (key, obj) in &self.0 {
            f(key, obj);
        }
    }
}

/// A DeltaFIFO with the default key function, the `known` objects when given, and
/// Replaced deltas when `emit_replaced`.
pub fn fifo(known: Option<Vec<ConfigMap>>, emit_replaced: bool) -> DeltaFifo<ConfigMap> {
    let mut options = DeltaFifoConfig::default().emit_replaced(emit_replaced);
    if let Some(known) = known {
        options = options.known_objects(Known::new(known));
    }
    DeltaFifo::new(options)
}

/// client-go's `Pop(f)`: the deltas of the next key (fails after [`WAIT`]).
pub async fn pop(fifo: &DeltaFifo<ConfigMap>) -> Deltas<ConfigMap> {
    let popped = fifo.pop(|deltas| Ok::<_, ProcessError<()>>(deltas.clone()));
    tokio::time::timeout(WAIT, popped)
        .await
        .expect("pop waited too long")
        .expect("the queue is open")
}

/// client-go's `testPop(f)`: the newest object of the next key.
pub async fn pop_newest(fifo: &DeltaFifo<ConfigMap>) -> Arc<ConfigMap> {
    Arc::clone(pop(fifo).await.newest().object())
}

/// The `val` of the newest object of the next key.
pub async fn pop_val(fifo: &DeltaFifo<ConfigMap>) -> u64 {
    let newest = pop_newest(fifo).await;
    val_of(&newest)
}

/// The deltas of `deltas`, to compare with an expected list.
pub fn delta_list(deltas: &Deltas<ConfigMap>) -> Vec<Delta<ConfigMap>> {
    deltas.iter().cloned().collect()
}

pub fn added(obj: ConfigMap) -> Delta<ConfigMap> {
    Delta::Added(Arc::new(obj))
}

pub fn updated(obj: ConfigMap) -> Delta<ConfigMap> {
    Delta::Updated(Arc::new(obj))
}

pub fn replaced(obj: ConfigMap) -> Delta<ConfigMap> {
    Delta::Replaced(Arc::new(obj))
}

pub fn synced(obj: ConfigMap) -> Delta<ConfigMap> {
    Delta::Sync(Arc::new(obj))
}

/// A deletion with the object's final state.
pub fn deleted(obj: ConfigMap) -> Delta<ConfigMap> {
    Delta::Deleted(DeletedObject::Final(Arc::new(obj)))
}

/// client-go's `DeletedFinalStateUnknown{Key, Obj}`: a deletion found by a relist.
pub fn tombstone(obj: ConfigMap) -> Delta<ConfigMap> {
    Delta::Deleted(DeletedObject::Unknown(DeletedFinalStateUnknown {
        key: Arc::new(ObjectKey::of(&obj)),
        last_known: Arc::new(obj),
    }))
}

/// client-go's `testListener`: records what a handler is told, one line per
/// notification: `add NAME`, `update NAME`, `delete NAME`, `tombstone NAME`.
#[derive(Clone, Default)]
pub struct Recorder(Arc<Mutex<Vec<Notification<ConfigMap>>>>);

impl Recorder {
    pub fn notifications(&self) -> Vec<Notification<ConfigMap>> {
        self.0.lock().unwrap().clone()
    }

    pub fn lines(&self) -> Vec<String> {
        self.notifications().iter().map(line).collect()
    }

    /// The names of the objects notified about, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .notifications()
            .iter()
            .map(|n| name_of(n.object()).to_owned())
            .collect();
        names.sort();
        names
    }

    pub fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    pub fn clear(&self) {
        self.0.lock().unwrap().clear();
    }

    /// Waits until at least `count` notifications arrived.
    pub async fn wait_for(&self, count: usize) {
        let what = format!("{count} notifications");
        crate::common::eventually(&what, WAIT, || self.len() >= count).await;
    }
}

/// One line per notification (see [`Recorder`]).
pub fn line(notification: &Notification<ConfigMap>) -> String {
    match notification {
        Notification::Add { object, .. } => format!("add {}", name_of(object)),
        Notification::Update { new, .. } => format!("update {}", name_of(new)),
        Notification::Delete(DeletedObject::Final(obj)) => format!("delete {}", name_of(obj)),
        Notification::Delete(DeletedObject::Unknown(t)) => {
            format!("tombstone {}", name_of(&t.last_known))
        }
    }
}

impl ResourceEventHandler<ConfigMap> for Recorder {
    fn on_add(&mut self, object: &Arc<ConfigMap>, is_initial_list: bool) {
        self.0.lock().unwrap().push(Notification::Add {
            object: Arc::clone(object),
            is_initial_list,
        });
    }

    fn on_update(&mut self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        self.0.lock().unwrap().push(Notification::Update {
            old: Arc::clone(old),
            new: Arc::clone(new),
        });
    }

    fn on_delete(&mut self, deleted: DeletedObject<ConfigMap>) {
        self.0.lock().unwrap().push(Notification::Delete(deleted));
    }
}

pub use crate::common::spawn_run;

/// Waits until `informer` has synced.
pub async fn synced_informer(informer: &SharedIndexInformer<ConfigMap>) {
    tokio::time::timeout(
        WAIT,
        informer::shared_informer::wait_for_cache_sync(&[informer]),
    )
    .await
    .expect("the informer synced in time");
}

/// An API error as the server sends it (`code`, `reason`, `message`).
pub fn api_error(code: u16, reason: &str, message: &str) -> kube::Error {
    kube::Error::Api(
        kube::core::Status::failure(message, reason)
            .with_code(code)
            .boxed(),
    )
}

type WatchSender =
    futures::channel::mpsc::UnboundedSender<Result<WatchEvent<ConfigMap>, kube::Error>>;

/// A scripted server for the cases [`FakeSource`](informer::reflector::source::FakeSource)
/// cannot stage: changes no watcher hears of (client-go's `AddDropWatch`), watches
/// ended with 410 Gone on demand, failing lists, and a record of every request.
/// Objects are keyed by name; each change stamps the next resourceVersion.
#[derive(Clone, Default)]
pub struct Scripted(Arc<Mutex<ScriptState>>);

#[derive(Default)]
struct ScriptState {
    objects: BTreeMap<String, ConfigMap>,
    resource_version: u64,
    watchers: Vec<WatchSender>,
    lists: Vec<ListRequest>,
    watches: Vec<WatchRequest>,
    /// Lists still to fail, with (status code, message).
    failing_lists: std::collections::VecDeque<(u16, String)>,
}

impl Scripted {
    pub fn new() -> Self {
        Self::default()
    }

    /// The lister-watcher serving this script.
    pub fn source(&self) -> ListWatch<ConfigMap> {
        let lists = self.clone();
        let watches = self.clone();
        ListWatch::new(
            move |request: ListRequest| {
                let script = lists.clone();
                async move { script.list(request) }
            },
            move |request: WatchRequest| {
                let script = watches.clone();
                async move { Ok(script.watch(request)) }
            },
        )
    }

    fn list(&self, request: ListRequest) -> Result<ListPage<ConfigMap>, kube::Error> {
        let mut state = self.0.lock().unwrap();
        state.lists.push(request);
        if let Some((code, message)) = state.failing_lists.pop_front() {
            return Err(api_error(code, "Failure", &message));
        }
        Ok(ListPage::new(
            state.objects.values().cloned().collect(),
            state.resource_version.to_string(),
        ))
    }

    fn watch(
        &self,
        request: WatchRequest,
    ) -> futures::channel::mpsc::UnboundedReceiver<Result<WatchEvent<ConfigMap>, kube::Error>> {
        let (sender, receiver) = futures::channel::mpsc::unbounded();
        let mut state = self.0.lock().unwrap();
        state.watches.push(request);
        state.watchers.push(sender);
        receiver
    }

    fn stamp(state: &mut ScriptState, mut obj: ConfigMap) -> ConfigMap {
        state.resource_version += 1;
        obj.metadata.resource_version = Some(state.resource_version.to_string());
        obj
    }

    fn send(state: &mut ScriptState, event: impl Fn() -> WatchEvent<ConfigMap>) {
        state
            .watchers
            .retain(|watcher| watcher.unbounded_send(Ok(event())).is_ok());
    }

    /// Creates or replaces `obj` without telling any watcher: only a relist sees it.
    pub fn put_silently(&self, obj: ConfigMap) -> ConfigMap {
        let mut state = self.0.lock().unwrap();
        let obj = Self::stamp(&mut state, obj);
        state.objects.insert(name_of(&obj).to_owned(), obj.clone());
        obj
    }

    /// Removes `name` without telling any watcher.
    pub fn remove_silently(&self, name: &str) {
        let mut state = self.0.lock().unwrap();
        state.resource_version += 1;
        state.objects.remove(name);
    }

    /// Creates `obj` and sends ADDED.
    pub fn add(&self, obj: ConfigMap) -> ConfigMap {
        let obj = self.put_silently(obj);
        let mut state = self.0.lock().unwrap();
        Self::send(&mut state, || WatchEvent::Added(obj.clone()));
        obj
    }

    /// Replaces `obj` and sends MODIFIED.
    pub fn modify(&self, obj: ConfigMap) -> ConfigMap {
        let obj = self.put_silently(obj);
        let mut state = self.0.lock().unwrap();
        Self::send(&mut state, || WatchEvent::Modified(obj.clone()));
        obj
    }

    /// Removes `obj` and sends DELETED.
    pub fn delete(&self, obj: ConfigMap) -> ConfigMap {
        let mut state = self.0.lock().unwrap();
        let obj = Self::stamp(&mut state, obj);
        state.objects.remove(name_of(&obj));
        Self::send(&mut state, || WatchEvent::Deleted(obj.clone()));
        obj
    }

    /// Sends a BOOKMARK at the current resourceVersion.
    pub fn bookmark(&self) {
        let mut state = self.0.lock().unwrap();
        let resource_version = state.resource_version.to_string();
        Self::send(&mut state, || {
            WatchEvent::bookmark(resource_version.clone())
        });
    }

    /// Ends every open watch with 410 Gone: the reflector must relist.
    pub fn expire_watches(&self) {
        let mut state = self.0.lock().unwrap();
        for watcher in state.watchers.drain(..) {
            watcher
                .unbounded_send(Err(api_error(410, "Expired", "too old resource version")))
                .ok();
        }
    }

    /// Ends every open watch with an error of `code`.
    pub fn fail_watches(&self, code: u16, message: &str) {
        let mut state = self.0.lock().unwrap();
        for watcher in state.watchers.drain(..) {
            watcher
                .unbounded_send(Err(api_error(code, "Failure", message)))
                .ok();
        }
    }

    /// Ends every open watch normally (the server's timeout).
    pub fn close_watches(&self) {
        self.0.lock().unwrap().watchers.clear();
    }

    /// The next `count` lists fail with `code` and `message`.
    pub fn fail_lists(&self, count: usize, code: u16, message: &str) {
        let mut state = self.0.lock().unwrap();
        for _ in 0..count {
            state.failing_lists.push_back((code, message.to_owned()));
        }
    }

    /// Every list request so far.
    pub fn lists(&self) -> Vec<ListRequest> {
        self.0.lock().unwrap().lists.clone()
    }

    /// Every watch request so far.
    pub fn watches(&self) -> Vec<WatchRequest> {
        self.0.lock().unwrap().watches.clone()
    }

    /// How many watches are open.
    pub fn watcher_count(&self) -> usize {
        let mut state = self.0.lock().unwrap();
        state.watchers.retain(|w| !w.is_closed());
        state.watchers.len()
    }
}
