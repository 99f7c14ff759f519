//! Builders, fakes and collectors shared by the ported tests, so each helper is
//! written once.
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use informer::fifo::{
    DeletedFinalStateUnknown, DeletedObject, Delta, DeltaFifo, DeltaFifoOptions, Deltas,
    KnownObjects, ProcessError,
};
use informer::key::{ObjectKey, ObjectKeyRef};
use informer::shared_informer::{
    InformerError, Notification, ResourceEventHandler, SharedIndexInformer,
};
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
    value_of(obj)
        .parse()
        .expect("a numeric val")
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
    let mut options = DeltaFifoOptions::default().emit_replaced(emit_replaced);
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

/// A running informer: stop it with [`Running::stop`].
pub struct Running {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), InformerError>>,
}

impl Running {
    /// Stops the informer and waits until `run` has returned.
    pub async fn stop(self) {
        self.stop.send(()).ok();
        tokio::time::timeout(WAIT, self.task)
            .await
            .expect("run returned in time")
            .expect("run did not panic")
            .expect("run succeeded");
    }
}

/// Runs `informer` in a task (client-go's `go informer.Run(stop)`).
pub fn spawn_run(informer: &SharedIndexInformer<ConfigMap>) -> Running {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let informer = informer.clone();
    let task = tokio::spawn(async move {
        informer
            .run(async {
                stopped.await.ok();
            })
            .await
    });
    Running { stop, task }
}

/// Waits until `informer` has synced.
pub async fn synced_informer(informer: &SharedIndexInformer<ConfigMap>) {
    tokio::time::timeout(
        WAIT,
        informer::shared_informer::wait_for_cache_sync(&[informer]),
    )
    .await
    .expect("the informer synced in time");
}
