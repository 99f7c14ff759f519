//! The Reflector against a real API server: listing, paging, watching, errors,
//! undecodable objects, resync and shutdown. Paging, relists after 410 and relists
//! with tombstones run for full, metadata-only and dynamic objects alike
//! ([`common::flavour`]).

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::flavour::Flavour;
use common::{config_map, create_config_maps, eventually};
use futures::future::BoxFuture;
use informer::reflector::source::{
    ApiListerWatcher, ListPage, ListRequest, ListerWatcher, WatchRequest, WatchStream,
};
use informer::reflector::{
    Config, Reflector, ReflectorError, ReflectorStore, ShardField, ShardSelector,
};
use informer::testenv::TestEnv;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{CustomResource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

const WAIT: Duration = Duration::from_secs(20);

/// Every write a reflector made, in order, plus the state those writes build.
#[derive(Debug, Clone, PartialEq)]
enum Op {
    Add(String),
    Update(String),
    Delete(String),
    /// The listed names, and the known names the list lacked (tombstones).
    Replace {
        listed: Vec<String>,
        missing: Vec<String>,
    },
    Resync,
}

struct Recorder<K> {
    ops: Mutex<Vec<Op>>,
    state: Mutex<BTreeMap<String, K>>,
}

impl<K> Default for Recorder<K> {
    fn default() -> Self {
        Self {
            ops: Mutex::default(),
            state: Mutex::default(),
        }
    }
}

impl<K: kube::Resource + Clone> Recorder<K> {
    fn ops(&self) -> Vec<Op> {
        self.ops.lock().unwrap().clone()
    }

    fn names(&self) -> Vec<String> {
        self.state.lock().unwrap().keys().cloned().collect()
    }

    fn replaces(&self) -> usize {
        self.ops()
            .iter()
            .filter(|op| matches!(op, Op::Replace { .. }))
            .count()
    }

    fn record(&self, op: Op) {
        self.ops.lock().unwrap().push(op);
    }
}

impl<K: kube::Resource + Clone + Send + Sync> ReflectorStore<K> for Recorder<K> {
    fn add(&self, object: K) {
        self.record(Op::Add(object.name_any()));
        self.state.lock().unwrap().insert(object.name_any(), object);
    }
    fn update(&self, object: K) {
        self.record(Op::Update(object.name_any()));
        self.state.lock().unwrap().insert(object.name_any(), object);
    }
    fn delete(&self, object: K) {
        self.record(Op::Delete(object.name_any()));
        self.state.lock().unwrap().remove(&object.name_any());
    }
    fn replace(&self, mut objects: Vec<K>, unchanged: Vec<Arc<K>>, _resource_version: &str) {
        // This recorder offers no cache, so nothing comes back unchanged.
        assert!(unchanged.is_empty());
        objects.extend(unchanged.iter().map(|o| (**o).clone()));
        let mut state = self.state.lock().unwrap();
        let listed: Vec<String> = objects.iter().map(|o| o.name_any()).collect();
        let missing = state
            .keys()
            .filter(|k| !listed.contains(k))
            .cloned()
            .collect();
        *state = objects.into_iter().map(|o| (o.name_any(), o)).collect();
        drop(state);
        self.record(Op::Replace { listed, missing });
    }
    fn resync(&self) {
        self.record(Op::Resync);
    }
}

/// Counts list pages on their way through.
struct CountingListerWatcher<K> {
    inner: ApiListerWatcher<K>,
    lists: Arc<AtomicUsize>,
}

impl<K> ListerWatcher<K> for CountingListerWatcher<K>
where
    ApiListerWatcher<K>: ListerWatcher<K>,
    K: Send + 'static,
{
    fn list(&self, request: ListRequest) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list(request)
    }
    fn watch(&self, request: WatchRequest) -> BoxFuture<'_, Result<WatchStream<K>, kube::Error>> {
        self.inner.watch(request)
    }
}

/// A control plane without the watch cache, shared by this binary's tests that need
/// lists to page (the watch cache serves resourceVersion "0" lists whole).
async fn uncached_env() -> &'static TestEnv {
    static ENV: OnceCell<TestEnv> = OnceCell::const_new();
    ENV.get_or_init(|| async { TestEnv::builder().watch_cache(false).start().await.unwrap() })
        .await
}

/// Runs `reflector` on a task until the returned sender is dropped or fired.
fn spawn<K: kube::Resource + Send + Sync + 'static>(
    reflector: Arc<Reflector<K>>,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        reflector
            .run(async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    (stop, task)
}

crate::for_each_flavour! {
    lists_in_pages_then_watches_events_in_order => pages_then_watch;
    api_server_restart_while_objects_change_relists_with_tombstones => restart_relists_with_tombstones;
    compaction_without_watch_cache_forces_410_and_a_relist_that_loses_nothing => compaction_relist;
}

async fn pages_then_watch<F: Flavour>() {
    let env = uncached_env().await;
    let ns = env.create_namespace("reflector-pages").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    create_config_maps(&api, "cm", 120, &[("app", "paged")]).await;

    let recorder = Arc::new(Recorder::<F::K>::default());
    let lists = Arc::new(AtomicUsize::new(0));
    let lister_watcher = CountingListerWatcher {
        inner: F::config_maps(env.client().unwrap(), Some(&ns)).labels("app=paged"),
        lists: lists.clone(),
    };
    let reflector = Arc::new(Reflector::new(
        lister_watcher,
        recorder.clone(),
        Config::default().page_size(Some(50)),
    ));
    let (stop, task) = spawn(reflector.clone());

    eventually("the initial list", WAIT, || recorder.replaces() == 1).await;
    assert_eq!(
        lists.load(Ordering::SeqCst),
        3,
        "120 objects in pages of 50"
    );
    match &recorder.ops()[0] {
        Op::Replace { listed, missing } => {
            assert_eq!(listed.len(), 120);
            assert!(missing.is_empty());
        }
        other => panic!("first op must be the list, got {other:?}"),
    }
    let listed_rv = reflector.last_sync_resource_version();
    assert!(!listed_rv.is_empty());

    api.create(
        &PostParams::default(),
        &config_map("x", "1", &[("app", "paged")]),
    )
    .await
    .unwrap();
    let patch = serde_json::json!({ "data": { "key": "2" } });
    api.patch("x", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    api.delete("x", &DeleteParams::default()).await.unwrap();

    eventually("add, update, delete of x", WAIT, || {
        recorder.ops().len() == 4
    })
    .await;
    assert_eq!(
        recorder.ops()[1..],
        [
            Op::Add("x".into()),
            Op::Update("x".into()),
            Op::Delete("x".into())
        ]
    );
    assert_eq!(recorder.names().len(), 120);
    recorder
        .state
        .lock()
        .unwrap()
        .values()
        .for_each(F::assert_shape);
    assert_ne!(reflector.last_sync_resource_version(), listed_rv);

    stop.send(()).unwrap();
    task.await.unwrap();
}

#[tokio::test]
async fn forbidden_is_reported_with_backoff_and_syncs_once_rbac_allows() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("reflector-rbac").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    api.create(&PostParams::default(), &config_map("visible", "1", &[]))
        .await
        .unwrap();

    let errors = Arc::new(Mutex::new(Vec::<(tokio::time::Instant, Option<u16>)>::new()));
    let seen = errors.clone();
    let recorder = Arc::new(Recorder::<ConfigMap>::default());
    let restricted = Api::<ConfigMap>::namespaced(env.restricted_client().unwrap(), &ns);
    let reflector = Arc::new(Reflector::new(
        ApiListerWatcher::new(restricted),
        recorder.clone(),
        Config::default().error_handler(move |e: &ReflectorError| {
            assert!(e.is_access_denied(), "unexpected error {e}");
            seen.lock()
                .unwrap()
                .push((tokio::time::Instant::now(), e.status_code()));
        }),
    ));
    let (stop, task) = spawn(reflector.clone());

    eventually("three forbidden errors", WAIT, || {
        errors.lock().unwrap().len() >= 3
    })
    .await;
    {
        let errors = errors.lock().unwrap();
        assert!(errors.iter().all(|(_, code)| *code == Some(403)));
        // Backoff, not a busy loop: at least 800 ms, then 1.6 s, between attempts.
        let gaps: Vec<_> = errors.windows(2).map(|w| w[1].0 - w[0].0).collect();
        assert!(gaps[0] >= Duration::from_millis(800), "{gaps:?}");
        assert!(gaps[1] >= Duration::from_millis(1600), "{gaps:?}");
    }
    assert_eq!(recorder.replaces(), 0);

    env.allow_restricted(&ns, "", "configmaps", &["list", "watch"])
        .await
        .unwrap();

    eventually(
        "a list once RBAC allows it",
        Duration::from_secs(60),
        || recorder.replaces() == 1,
    )
    .await;
    assert_eq!(recorder.names(), ["visible"]);

    stop.send(()).unwrap();
    task.await.unwrap();
}

/// A CRD whose Rust type is stricter than its schema, so the server accepts objects
/// the type cannot decode.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "reflector.informer.example.com",
    version = "v1",
    kind = "Gadget",
    namespaced
)]
struct GadgetSpec {
    size: u32,
}

async fn install_gadget_crd(env: &TestEnv) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "gadgets.reflector.informer.example.com" },
        "spec": {
            "group": "reflector.informer.example.com",
            "scope": "Namespaced",
            "names": { "plural": "gadgets", "singular": "gadget", "kind": "Gadget" },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                }},
            }],
        },
    }))
    .unwrap();
    env.install_crd(&crd).await.unwrap();
}

#[tokio::test]
async fn undecodable_objects_are_reported_and_skipped() {
    let env = TestEnv::shared().await.unwrap();
    install_gadget_crd(env).await;
    let ns = env.create_namespace("reflector-decode").await.unwrap();
    let raw = Api::<kube::api::DynamicObject>::namespaced_with(
        env.client().unwrap(),
        &ns,
        &kube::api::ApiResource::erase::<Gadget>(&()),
    );
    let gadget = |name: &str, size: serde_json::Value| -> kube::api::DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "reflector.informer.example.com/v1",
            "kind": "Gadget",
            "metadata": { "name": name },
            "spec": { "size": size },
        }))
        .unwrap()
    };
    for (name, size) in [
        ("good-1", serde_json::json!(1)),
        ("bad-1", serde_json::json!("huge")),
        ("good-2", serde_json::json!(2)),
    ] {
        raw.create(&PostParams::default(), &gadget(name, size))
            .await
            .unwrap();
    }

    // Three objects; the typed list would fail on the bad one, so count raw objects.
    common::wait_for_watch_cache(&raw, 3).await;
    let undecodable = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = undecodable.clone();
    let recorder = Arc::new(Recorder::<Gadget>::default());
    let reflector = Arc::new(Reflector::new(
        ApiListerWatcher::new(Api::<Gadget>::namespaced(env.client().unwrap(), &ns)),
        recorder.clone(),
        Config::default().error_handler(move |e: &ReflectorError| {
            if let ReflectorError::Decode(e) = e {
                seen.lock().unwrap().push(e.key.clone());
            }
        }),
    ));
    let (stop, task) = spawn(reflector);

    eventually("the initial list", WAIT, || recorder.replaces() == 1).await;
    assert_eq!(recorder.names(), ["good-1", "good-2"]);
    assert_eq!(*undecodable.lock().unwrap(), [format!("{ns}/bad-1")]);

    // On the watch too: the bad one is reported, the next good one still arrives.
    raw.create(
        &PostParams::default(),
        &gadget("bad-2", serde_json::json!([1])),
    )
    .await
    .unwrap();
    raw.create(
        &PostParams::default(),
        &gadget("good-3", serde_json::json!(3)),
    )
    .await
    .unwrap();
    eventually("good-3 after bad-2", WAIT, || recorder.names().len() == 3).await;
    assert_eq!(
        *undecodable.lock().unwrap(),
        [format!("{ns}/bad-1"), format!("{ns}/bad-2")]
    );
    assert_eq!(recorder.ops().last(), Some(&Op::Add("good-3".into())));

    stop.send(()).unwrap();
    task.await.unwrap();
}

/// Conformance rule: after any event, an informer's cache equals what a fresh list
/// would give (the decodable part of the server). An object whose schema drifts under
/// a running informer (here `spec.size` turns from a number into a string) leaves its
/// cache with a delete carrying its last known state; one deleted while undecodable
/// is not left behind as a ghost; an informer started afterwards holds the same; and
/// the object comes back as an add once it decodes again.
#[tokio::test]
async fn an_undecodable_watch_event_for_a_cached_object_removes_it() {
    use informer::shared_informer::{ResourceEventHandlerFns, SharedIndexInformer};

    let env = TestEnv::shared().await.unwrap();
    install_gadget_crd(env).await;
    let ns = env.create_namespace("reflector-drift").await.unwrap();
    let raw = Api::<kube::api::DynamicObject>::namespaced_with(
        env.client().unwrap(),
        &ns,
        &kube::api::ApiResource::erase::<Gadget>(&()),
    );
    let set_size = |name: &'static str, size: serde_json::Value| {
        let raw = raw.clone();
        async move {
            let patch = serde_json::json!({ "spec": { "size": size } });
            raw.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        }
    };
    for (name, size) in [("a", 1), ("b", 2)] {
        let gadget: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "reflector.informer.example.com/v1",
            "kind": "Gadget",
            "metadata": { "name": name },
            "spec": { "size": size },
        }))
        .unwrap();
        raw.create(&PostParams::default(), &gadget).await.unwrap();
    }
    common::wait_for_watch_cache(&raw, 2).await;

    let typed = Api::<Gadget>::namespaced(env.client().unwrap(), &ns);
    let names = |informer: &SharedIndexInformer<Gadget>| {
        let mut names: Vec<String> = informer
            .indexer()
            .list()
            .iter()
            .map(|g| g.name_any())
            .collect();
        names.sort();
        names
    };
    let first = SharedIndexInformer::new(typed.clone());
    let deleted = Arc::new(Mutex::new(Vec::<(String, u32, bool)>::new()));
    first
        .add_event_handler(ResourceEventHandlerFns::new().on_delete({
            let deleted = deleted.clone();
            move |gone: informer::fifo::DeletedObject<Gadget>| {
                let last = gone.object();
                deleted.lock().unwrap().push((
                    last.name_any(),
                    last.spec.size,
                    gone.is_final_state_unknown(),
                ));
            }
        }))
        .unwrap();
    let first_running = common::spawn_run(&first);
    informer::shared_informer::wait_for_cache_sync(&[&first]).await;
    assert_eq!(names(&first), ["a", "b"]);

    // a's new state does not decode: it leaves the cache, as a tombstone of size 1.
    // (The cache changes before the handlers hear of it, on their own tasks.)
    set_size("a", serde_json::json!("huge")).await;
    eventually(
        "a to leave the cache and the handler to hear of it",
        WAIT,
        || names(&first) == ["b"] && !deleted.lock().unwrap().is_empty(),
    )
    .await;
    assert_eq!(*deleted.lock().unwrap(), [("a".to_owned(), 1, true)]);

    // b drifts, then is deleted while undecodable: no ghost of it stays behind.
    set_size("b", serde_json::json!([2])).await;
    raw.delete("b", &DeleteParams::default()).await.unwrap();
    eventually("b to leave the cache", WAIT, || names(&first).is_empty()).await;

    // An informer started now agrees.
    let second = SharedIndexInformer::new(typed.clone());
    let second_running = common::spawn_run(&second);
    informer::shared_informer::wait_for_cache_sync(&[&second]).await;
    assert!(names(&second).is_empty());

    // a decodes again: both see it come back.
    set_size("a", serde_json::json!(3)).await;
    eventually("a back in both caches", WAIT, || {
        names(&first) == ["a"] && names(&second) == ["a"]
    })
    .await;
    assert_eq!(first.indexer().list()[0].spec.size, 3);

    first_running.stop().await;
    second_running.stop().await;
}

#[tokio::test]
async fn resync_period_asks_the_store_to_resync() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("reflector-resync").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    api.create(&PostParams::default(), &config_map("a", "1", &[]))
        .await
        .unwrap();

    let recorder = Arc::new(Recorder::<ConfigMap>::default());
    let allowed = Arc::new(AtomicUsize::new(0));
    let asked = allowed.clone();
    let reflector = Arc::new(Reflector::new(
        ApiListerWatcher::new(api),
        recorder.clone(),
        Config::default()
            .resync_period(Duration::from_millis(100))
            // Every other tick is declined, as an informer does when no handler is due.
            .should_resync(move || asked.fetch_add(1, Ordering::SeqCst).is_multiple_of(2)),
    ));
    let (stop, task) = spawn(reflector);

    eventually("three resyncs", WAIT, || {
        recorder
            .ops()
            .iter()
            .filter(|op| **op == Op::Resync)
            .count()
            >= 3
    })
    .await;
    stop.send(()).unwrap();
    task.await.unwrap();
    let resyncs = recorder
        .ops()
        .iter()
        .filter(|op| **op == Op::Resync)
        .count();
    let ticks = allowed.load(Ordering::SeqCst);
    assert!(
        resyncs <= ticks.div_ceil(2),
        "{resyncs} resyncs for {ticks} ticks"
    );
}

#[tokio::test]
async fn shutdown_stops_listing_and_watching() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("reflector-stop").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    let recorder = Arc::new(Recorder::<ConfigMap>::default());
    let reflector = Arc::new(Reflector::new(
        ApiListerWatcher::new(api.clone()),
        recorder.clone(),
        Config::default(),
    ));
    let (stop, task) = spawn(reflector.clone());
    eventually("the initial list", WAIT, || recorder.replaces() == 1).await;

    // A second run while the first is going is refused, not a panic.
    assert_eq!(
        reflector.run(async {}).await,
        Err(informer::reflector::RunError::AlreadyRunning)
    );

    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("run returns promptly after shutdown")
        .unwrap();
    let watches = reflector.stats().watches;

    // Nothing is listening any more: a change reaches no store.
    api.create(&PostParams::default(), &config_map("late", "1", &[]))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(recorder.ops().len(), 1, "{:?}", recorder.ops());
    assert_eq!(reflector.stats().watches, watches);
}

fn replace_ops<K: kube::Resource + Clone>(
    recorder: &Recorder<K>,
) -> Vec<(Vec<String>, Vec<String>)> {
    recorder
        .ops()
        .into_iter()
        .filter_map(|op| match op {
            Op::Replace {
                mut listed,
                missing,
            } => {
                listed.sort();
                Some((listed, missing))
            }
            _ => None,
        })
        .collect()
}

async fn server_names(api: &Api<ConfigMap>) -> Vec<String> {
    let mut names: Vec<_> = api
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|cm| cm.name_any())
        .collect();
    names.sort();
    names
}

async fn restart_relists_with_tombstones<F: Flavour>() {
    let env = TestEnv::start().await.unwrap();
    let proxy = env.fault_proxy().await.unwrap();
    let ns = env.create_namespace("reflector-restart").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    for name in ["a", "b", "c"] {
        api.create(&PostParams::default(), &config_map(name, "1", &[]))
            .await
            .unwrap();
    }

    let recorder = Arc::new(Recorder::<F::K>::default());
    let reflector = Arc::new(Reflector::new(
        F::config_maps(proxy.client().unwrap(), Some(&ns)),
        recorder.clone(),
        Config::default(),
    ));
    let (stop, task) = spawn(reflector.clone());
    eventually("the initial list", WAIT, || recorder.replaces() == 1).await;
    eventually("the watch", WAIT, || reflector.stats().watches == 1).await;

    // The reflector is cut off while the server changes and then restarts, which
    // empties its watch cache: the old resourceVersion is gone when it comes back.
    proxy.disconnect().await;
    api.delete("b", &DeleteParams::default()).await.unwrap();
    let patch = serde_json::json!({ "data": { "key": "2" } });
    api.patch("c", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    api.create(&PostParams::default(), &config_map("d", "1", &[]))
        .await
        .unwrap();
    env.restart_apiserver().await.unwrap();
    proxy.reconnect().await.unwrap();

    eventually("a relist", Duration::from_secs(60), || {
        recorder.replaces() == 2
    })
    .await;
    let replaces = replace_ops(&recorder);
    assert_eq!(replaces[1].0, ["a", "c", "d"]);
    assert_eq!(replaces[1].1, ["b"], "b was deleted while disconnected");
    assert_eq!(recorder.names(), server_names(&api).await);
    let c = recorder.state.lock().unwrap()["c"].clone();
    F::assert_shape(&c);
    if let Some(value) = F::data(&c, "key") {
        assert_eq!(value, "2");
    }

    stop.send(()).unwrap();
    task.await.unwrap();
}

async fn compaction_relist<F: Flavour>() {
    let env = TestEnv::builder().watch_cache(false).start().await.unwrap();
    let ns = env.create_namespace("reflector-compact").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    common::create_watched_pair_and_noise(&api).await;

    let expired = Arc::new(AtomicUsize::new(0));
    let seen = expired.clone();
    let recorder = Arc::new(Recorder::<F::K>::default());
    let reflector = Arc::new(Reflector::new(
        F::config_maps(env.client().unwrap(), Some(&ns)).labels("app=watched"),
        recorder.clone(),
        Config::default()
            // Short watches, so the reflector soon re-watches from its last version.
            .watch_timeout(Duration::from_secs(2)..=Duration::from_secs(2))
            .error_handler(move |e: &ReflectorError| {
                if matches!(e, ReflectorError::Expired(_)) {
                    seen.fetch_add(1, Ordering::SeqCst);
                }
            }),
    ));
    let (stop, task) = spawn(reflector.clone());
    eventually("the initial list", WAIT, || recorder.replaces() == 1).await;
    let listed_rv = reflector.last_sync_resource_version();

    common::expire_watches_on_app_watched(&env, &api).await;

    eventually("410 Gone and a relist", WAIT, || {
        expired.load(Ordering::SeqCst) >= 1 && recorder.replaces() == 2
    })
    .await;
    let relisted_rv: u64 = reflector.last_sync_resource_version().parse().unwrap();
    assert!(relisted_rv > listed_rv.parse().unwrap());
    assert_eq!(
        replace_ops(&recorder)[1],
        (vec!["a".into(), "b".into()], vec![])
    );

    // And the reflector goes on watching after the relist.
    api.delete("b", &DeleteParams::default()).await.unwrap();
    eventually("the delete of b", WAIT, || recorder.names() == ["a"]).await;

    stop.send(()).unwrap();
    task.await.unwrap();
}

/// Conformance (issue #13, defect 8): through cycles of "cut the client off, write,
/// compact etcd, reconnect", with a short backoff, the informer always comes back to
/// a watch with the latest state within its backoff (20 s is ten times its largest
/// delay), never going quiet.
#[tokio::test]
async fn an_informer_comes_back_after_every_cut_and_compaction() {
    use informer::reflector::BackoffConfig;
    use informer::shared_informer::{InformerConfig, SharedIndexInformer};
    let env = TestEnv::start().await.unwrap();
    let proxy = env.fault_proxy().await.unwrap();
    let ns = env.create_namespace("reflector-probe").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    api.create(&PostParams::default(), &config_map("a", "0", &[]))
        .await
        .unwrap();
    let informer = SharedIndexInformer::with_config(
        ApiListerWatcher::new(Api::<ConfigMap>::namespaced(proxy.client().unwrap(), &ns)),
        InformerConfig::default().reflector(
            Config::default().backoff(
                BackoffConfig::default()
                    .initial(Duration::from_millis(100))
                    .max(Duration::from_secs(2)),
            ),
        ),
    )
    .unwrap();
    let running = common::spawn_run(&informer);
    informer::shared_informer::wait_for_cache_sync(&[&informer]).await;
    let stats = || informer.reflector_stats().unwrap();
    eventually("the watch", WAIT, || stats().watches == 1).await;
    let mut quiet = Vec::new();
    for cycle in 0..12 {
        let before = stats();
        proxy.disconnect().await;
        let patch = serde_json::json!({ "data": { "key": cycle.to_string() } });
        api.patch("a", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        env.compact_etcd().await.unwrap();
        proxy.reconnect().await.unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let mut ok = false;
        while std::time::Instant::now() < deadline {
            let now = stats();
            let value = informer
                .indexer()
                .list()
                .first()
                .and_then(|c| c.data.clone())
                .and_then(|d| d.get("key").cloned());
            if value.as_deref() == Some(&cycle.to_string()) && now.watches > before.watches {
                ok = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if !ok {
            quiet.push((cycle, before.clone(), stats()));
        }
    }
    running.stop().await;
    assert!(
        quiet.is_empty(),
        "quiet cycles (cycle, stats before, stats after): {quiet:#?}"
    );
}

/// Conformance (issue #13, defect 8): a connection that dies silently (a partition:
/// no FIN, no RST; the fault proxy holds it open and forwards nothing) is noticed once
/// the watch is past the timeout the server would have ended it at (plus a tenth and
/// 5 s), and the reflector watches again on a new connection, losing nothing.
#[tokio::test]
async fn a_watch_on_a_silently_dead_connection_is_noticed_and_replaced() {
    let env = TestEnv::shared().await.unwrap();
    let proxy = env.fault_proxy().await.unwrap();
    let ns = env.create_namespace("reflector-silent").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    api.create(&PostParams::default(), &config_map("a", "1", &[]))
        .await
        .unwrap();
    common::wait_for_watch_cache(&api, 1).await;
    let dead = Arc::new(AtomicUsize::new(0));
    let seen = dead.clone();
    let recorder = Arc::new(Recorder::<ConfigMap>::default());
    let reflector = Arc::new(Reflector::new(
        ApiListerWatcher::new(Api::<ConfigMap>::namespaced(proxy.client().unwrap(), &ns)),
        recorder.clone(),
        Config::default()
            .watch_timeout(Duration::from_secs(3)..=Duration::from_secs(3))
            .error_handler(move |e: &ReflectorError| {
                if matches!(e, ReflectorError::DeadWatch(_)) {
                    seen.fetch_add(1, Ordering::SeqCst);
                }
            }),
    ));
    let (stop, task) = spawn(reflector.clone());
    eventually("the watch", WAIT, || reflector.stats().watches >= 1).await;

    proxy.silence();
    api.create(&PostParams::default(), &config_map("b", "1", &[]))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        recorder.names(),
        ["a"],
        "nothing passes a silent connection"
    );
    proxy.heal();

    // Dead after 3 s + 0.3 s + 5 s at most; the new watch resumes where it was.
    eventually("b through a new watch", Duration::from_secs(30), || {
        recorder.names() == ["a", "b"]
    })
    .await;
    assert!(
        dead.load(Ordering::SeqCst) >= 1,
        "the dead watch was reported"
    );
    assert_eq!(recorder.replaces(), 1, "resumed, not relisted");

    stop.send(()).unwrap();
    task.await.unwrap();
}

/// Streaming lists (client-go's WatchList) are on by default. A 1.37 server with its
/// `WatchList` gate off refuses them (422), as 1.33 does by default
/// (`oldest_release.rs` runs the same body there): the informer lists and watches, and
/// never asks for a streaming list again.
#[tokio::test]
async fn a_server_that_refuses_streaming_lists_is_listed_and_watched_and_never_asked_again() {
    common::refused_streaming_lists_are_listed_and_watched(without_modern_lists().await).await;
}

/// A control plane of this binary's own with what a modern server adds to lists turned
/// off: streaming lists (the `WatchList` gate), sharded lists (`ShardedListAndWatch`)
/// and the watch cache (so that a compaction makes an old version 410 at once).
async fn without_modern_lists() -> &'static TestEnv {
    static ENV: OnceCell<TestEnv> = OnceCell::const_new();
    ENV.get_or_init(|| async {
        TestEnv::builder()
            .watch_cache(false)
            .sharded_list_and_watch(false)
            .apiserver_arg("--feature-gates=WatchList=false")
            .start()
            .await
            .unwrap()
    })
    .await
}

/// A key filter keeping the objects whose namespace's FNV-1a hash is in the lower half,
/// and asking the server for the same half as a shard selector.
struct LowerHalfOfNamespaces(tokio::sync::watch::Sender<u64>);

/// FNV-1a, 64 bits, written out here: the server's hash of a field.
fn fnv1a(value: &str) -> u64 {
    value.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl informer::reflector::KeyFilter for LowerHalfOfNamespaces {
    fn keeps(&self, namespace: Option<&str>, _name: &str) -> bool {
        fnv1a(namespace.unwrap_or("")) < 1 << 63
    }

    fn generation(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.subscribe()
    }

    fn server_selector(&self) -> Option<ShardSelector> {
        // What the server reads as
        // `shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')`.
        Some(ShardSelector::new(ShardField::Namespace, Some(0..1 << 63)))
    }
}

/// A server without sharded list and watch (1.37 with `ShardedListAndWatch` off, any
/// release before 1.36) answers a request with a shard selector in full (the parameter
/// is ignored, nothing fails), and the key filter keeps exactly its share of what
/// arrives, dropping the rest before decoding. (With the gate on,
/// `custom_resources/server_shards.rs` shows the server dropping them instead.)
#[tokio::test]
async fn a_server_without_sharded_lists_sends_everything_and_the_filter_keeps_the_share() {
    use informer::shared_informer::{InformerConfig, SharedIndexInformer, wait_for_cache_sync};
    let env = without_modern_lists().await;
    let mut namespaces = Vec::new();
    for _ in 0..12 {
        let ns = env.create_namespace("reflector-shard").await.unwrap();
        let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
        api.create(
            &PostParams::default(),
            &config_map("sharded", "1", &[("app", "sharded-fallback")]),
        )
        .await
        .unwrap();
        namespaces.push(ns);
    }
    let filter = Arc::new(LowerHalfOfNamespaces(tokio::sync::watch::Sender::new(0)));
    let informer = SharedIndexInformer::with_config(
        ApiListerWatcher::new(Api::<ConfigMap>::all(env.client().unwrap()))
            .labels("app=sharded-fallback"),
        InformerConfig::default().reflector(Config::default().key_filter(filter)),
    )
    .unwrap();
    let running = common::spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    let cached = || {
        let mut cached: Vec<String> = informer
            .indexer()
            .list()
            .iter()
            .filter_map(|o| o.namespace())
            .filter(|ns| namespaces.contains(ns))
            .collect();
        cached.sort();
        cached
    };
    let mut expected: Vec<String> = namespaces
        .iter()
        .filter(|ns| fnv1a(ns) < 1 << 63)
        .cloned()
        .collect();
    expected.sort();
    assert_eq!(cached(), expected);
    // Objects created after the list arrive by the watch, also unfiltered.
    for ns in &namespaces {
        let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), ns);
        api.create(
            &PostParams::default(),
            &config_map("later", "1", &[("app", "sharded-fallback")]),
        )
        .await
        .unwrap();
    }
    // The watch delivers in the order of creation, but the last object created may be
    // outside the share: wait for the drops too, not only for the share's arrivals.
    let outside = 2 * (namespaces.len() - expected.len());
    eventually(
        "the later ones of the share kept, the others dropped",
        WAIT,
        || {
            informer.indexer().list().len() == 2 * expected.len()
                && informer.reflector_stats().unwrap().filtered_out as usize >= outside
        },
    )
    .await;
    let stats = informer.reflector_stats().unwrap();
    if stats.lists == 1 {
        assert_eq!(
            stats.filtered_out as usize, outside,
            "every object outside the share arrived and was dropped, once: {stats:?}"
        );
    } else {
        // A relist (this server has no watch cache: a watch may meet 410 Gone on a
        // loaded machine) sends everything again, and the filter drops it again.
        assert!(
            stats.filtered_out as usize > outside,
            "every object outside the share arrived and was dropped, once a list: {stats:?}"
        );
    }
    assert_eq!(
        informer.indexer().list().len(),
        2 * expected.len(),
        "and none of them was cached"
    );
    assert_eq!(
        stats.server_filters_shards,
        Some(false),
        "and the informer says so"
    );
    running.stop().await;
}

/// On the default control plane (1.37, `WatchList` on) the informer's initial sync of a
/// built-in type is one streaming list: asked for once, not refused, counted as the one
/// list, every object arriving as an initial event, and the watch going on from it.
/// ConfigMaps and Pods, full and metadata-only (`PartialObjectMeta`).
#[tokio::test]
async fn the_initial_sync_of_built_in_types_is_one_streaming_list() {
    use informer::shared_informer::{InformerConfig, SharedIndexInformer, wait_for_cache_sync};
    use k8s_openapi::api::core::v1::Pod;
    use kube::core::PartialObjectMeta;

    async fn synced_by_one_streaming_list<K>(lister_watcher: ApiListerWatcher<K>, expected: u64)
    where
        K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
        K: Send + Sync + 'static,
    {
        let informer =
            SharedIndexInformer::with_config(lister_watcher, InformerConfig::default()).unwrap();
        let running = common::spawn_run(&informer);
        wait_for_cache_sync(&[&informer]).await;
        let stats = informer.reflector_stats().unwrap();
        assert_eq!(stats.streaming_list_requests, 1, "{stats:?}");
        assert!(!stats.streaming_list_refused, "{stats:?}");
        assert_eq!((stats.lists, stats.list_items), (1, expected), "{stats:?}");
        assert_eq!(informer.indexer().len() as u64, expected);
        eventually("the watch after the streaming list", WAIT, || {
            informer.reflector_stats().unwrap().watches >= 1
        })
        .await;
        running.stop().await;
    }

    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("reflector-watch-list").await.unwrap();
    let client = env.client().unwrap();
    create_config_maps(
        &Api::<ConfigMap>::namespaced(client.clone(), &ns),
        "cm",
        20,
        &[],
    )
    .await;
    let pods = Api::<Pod>::namespaced(client.clone(), &ns);
    for i in 0..10 {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": { "name": format!("pod-{i}") },
            "spec": { "containers": [{ "name": "app", "image": "registry.k8s.io/pause:3.10" }] },
        }))
        .unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    let in_ns = Some(ns.as_str());
    synced_by_one_streaming_list(
        ApiListerWatcher::<ConfigMap>::in_namespace(client.clone(), in_ns),
        20,
    )
    .await;
    synced_by_one_streaming_list(
        ApiListerWatcher::<Pod>::in_namespace(client.clone(), in_ns),
        10,
    )
    .await;
    synced_by_one_streaming_list(
        ApiListerWatcher::<PartialObjectMeta<ConfigMap>>::in_namespace(client.clone(), in_ns),
        20,
    )
    .await;
    synced_by_one_streaming_list(
        ApiListerWatcher::<PartialObjectMeta<Pod>>::in_namespace(client, in_ns),
        10,
    )
    .await;
}
