//! SharedIndexInformer against a real API server: handlers, replay, removal, resync,
//! isolation of slow and panicking handlers, tombstones, transform, subscribe, listers.
//! The tests of what every informer must do (sequence and replay, tombstones, relists
//! after 410, listers and label indexes) run for full, metadata-only and dynamic
//! informers alike ([`common::flavour`]).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::flavour::Flavour;
use common::{config_map, create_config_maps, eventually};
use futures::StreamExt;
use informer::fifo::DeletedObject;
use informer::reflector::source::{ApiListerWatcher, ManagedFields};
use informer::reflector::{Config, FnKeyFilter};
use informer::shared_informer::{
    InformerConfig, InformerError, Notification, ResourceEventHandler, SharedIndexInformer,
    wait_for_cache_sync,
};
use informer::store::{Indexers, Selector};
use informer::testenv::TestEnv;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};

const WAIT: Duration = Duration::from_secs(20);

/// Records every notification as a line: `add x`, `add x (initial)`, `update x`,
/// `resync x` (an update that changed nothing), `delete x`, `tombstone x`.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    fn push(&self, line: String) {
        self.0.lock().unwrap().push(line);
    }
    fn count(&self, prefix: &str) -> usize {
        self.lines()
            .iter()
            .filter(|l| l.starts_with(prefix))
            .count()
    }
}

impl<K: kube::Resource + Send + Sync + 'static> ResourceEventHandler<K> for Log {
    fn on_add(&mut self, object: &Arc<K>, is_initial_list: bool) {
        let suffix = if is_initial_list { " (initial)" } else { "" };
        self.push(format!("add {}{suffix}", object.name_any()));
    }
    fn on_update(&mut self, old: &Arc<K>, new: &Arc<K>) {
        if Arc::ptr_eq(old, new) || old.resource_version() == new.resource_version() {
            self.push(format!("resync {}", new.name_any()));
        } else {
            self.push(format!("update {}", new.name_any()));
        }
    }
    fn on_delete(&mut self, deleted: DeletedObject<K>) {
        let what = match &deleted {
            DeletedObject::Final(_) => "delete",
            DeletedObject::Unknown(_) => "tombstone",
        };
        self.push(format!("{what} {}", deleted.object().name_any()));
    }
}

/// Runs an informer on a task; the returned sender stops it.
fn start<K: kube::Resource + Send + Sync + 'static>(
    informer: &SharedIndexInformer<K>,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), InformerError>>,
) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let informer = informer.clone();
    let task = tokio::spawn(async move {
        informer
            .run(async {
                let _ = stopped.await;
            })
            .await
    });
    (stop, task)
}

async fn namespace_api(env: &TestEnv, prefix: &str) -> (String, Api<ConfigMap>) {
    let ns = env.create_namespace(prefix).await.unwrap();
    let api = Api::namespaced(env.client().unwrap(), &ns);
    (ns, api)
}

/// An informer of `F`'s ConfigMaps in `namespace` (all with `None`), from `client`.
fn informer_of<F: Flavour>(
    client: kube::Client,
    namespace: Option<&str>,
    tweak: impl FnOnce(ApiListerWatcher<F::K>) -> ApiListerWatcher<F::K>,
    options: InformerConfig<F::K>,
) -> SharedIndexInformer<F::K> {
    SharedIndexInformer::with_config(tweak(F::config_maps(client, namespace)), options).unwrap()
}

async fn set_value(api: &Api<ConfigMap>, name: &str, value: &str) {
    let patch = serde_json::json!({ "data": { "key": value } });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
}

crate::for_each_flavour! {
    handlers_see_the_same_sequence_and_late_handlers_get_a_replay => sequence_and_replay;
    deletion_missed_while_disconnected_arrives_as_a_tombstone => missed_deletion_tombstone;
    a_relist_after_410_keeps_the_cached_copies_of_unchanged_objects => relist_after_410;
    lister_queries_agree_with_the_api_server => lister_queries;
    a_key_filter_keeps_only_its_objects_and_a_switch_relists => key_filter;
}

/// A hand-made informer given a key filter in its reflector settings caches only the
/// objects it keeps, listed or watched (the rest are skipped before decoding, for every
/// flavour); when the filter switches, newly kept objects arrive as adds and no longer
/// kept ones leave as tombstones.
async fn key_filter<F: Flavour>() {
    let env = TestEnv::shared().await.unwrap();
    let (ns, api) = namespace_api(env, "informer-filter").await;
    for name in ["a1", "a2", "b1"] {
        api.create(&PostParams::default(), &config_map(name, "1", &[]))
            .await
            .unwrap();
    }
    common::wait_for_watch_cache(&api, 3).await;
    let filter = Arc::new(FnKeyFilter::new(|_, name| name.starts_with('a')));
    let informer = informer_of::<F>(
        env.client().unwrap(),
        Some(&ns),
        |lw| lw,
        InformerConfig::default().reflector(Config::default().key_filter(filter.clone())),
    );
    let log = Log::default();
    informer.add_event_handler(log.clone()).unwrap();
    let (stop, task) = start(&informer);
    wait_for_cache_sync(&[&informer]).await;
    let cached = || {
        let mut names: Vec<String> = informer
            .lister()
            .list_all()
            .iter()
            .map(|o| o.name_any())
            .collect();
        names.sort();
        names
    };
    assert_eq!(cached(), ["a1", "a2"]);

    for name in ["a3", "b2"] {
        api.create(&PostParams::default(), &config_map(name, "1", &[]))
            .await
            .unwrap();
    }
    set_value(&api, "b1", "2").await;
    api.delete("b2", &DeleteParams::default()).await.unwrap();
    set_value(&api, "a1", "2").await;
    eventually("the update of a1", WAIT, || log.count("update a1") == 1).await;
    assert_eq!(cached(), ["a1", "a2", "a3"]);
    F::assert_shape(&informer.lister().namespaced(&ns).get("a3").unwrap());

    filter.set(|_, name| name.starts_with('b') || name == "a2");
    eventually("the switch", WAIT, || cached() == ["a2", "b1"]).await;
    eventually("its notifications", WAIT, || {
        log.count("add b1") == 1 && log.count("tombstone a1") == 1 && log.count("tombstone a3") == 1
    })
    .await;
    let mut lines = log.lines();
    lines.sort();
    lines.dedup();
    assert!(
        lines.iter().all(|line| !line.contains("b2")),
        "b2 was never kept: {lines:?}"
    );
    let stats = informer.reflector_stats().unwrap();
    assert_eq!(stats.filter_relists, 1);
    assert!(stats.filtered_out >= 4, "{stats:?}");
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

async fn sequence_and_replay<F: Flavour>() {
    let env = TestEnv::shared().await.unwrap();
    let (ns, api) = namespace_api(env, "informer-seq").await;
    for name in ["a", "b"] {
        api.create(&PostParams::default(), &config_map(name, "1", &[]))
            .await
            .unwrap();
    }

    common::wait_for_watch_cache(&api, 2).await;
    let informer = informer_of::<F>(
        env.client().unwrap(),
        Some(&ns),
        |lw| lw,
        InformerConfig::default(),
    );
    let (first, second) = (Log::default(), Log::default());
    let first_reg = informer.add_event_handler(first.clone()).unwrap();
    let second_reg = informer.add_event_handler(second.clone()).unwrap();
    assert!(!first_reg.has_synced());
    let (stop, task) = start(&informer);
    wait_for_cache_sync(&[&informer, &first_reg, &second_reg]).await;

    api.create(&PostParams::default(), &config_map("c", "1", &[]))
        .await
        .unwrap();
    set_value(&api, "a", "2").await;
    api.delete("b", &DeleteParams::default()).await.unwrap();
    eventually("all events", WAIT, || {
        first.lines().len() == 5 && second.lines().len() == 5
    })
    .await;

    let mut initial = first.lines()[..2].to_vec();
    initial.sort();
    assert_eq!(initial, ["add a (initial)", "add b (initial)"]);
    assert_eq!(first.lines()[2..], ["add c", "update a", "delete b"]);
    assert_eq!(
        first.lines(),
        second.lines(),
        "every handler sees the same sequence"
    );

    // A handler added now first gets the cache as initial-list adds, then changes.
    let late = Log::default();
    let late_reg = informer.add_event_handler(late.clone()).unwrap();
    eventually("the late handler's replay", WAIT, || late_reg.has_synced()).await;
    let mut replay = late.lines();
    replay.sort();
    assert_eq!(replay, ["add a (initial)", "add c (initial)"]);
    api.create(&PostParams::default(), &config_map("d", "1", &[]))
        .await
        .unwrap();
    eventually("d reaches the late handler", WAIT, || {
        late.lines().len() == 3
    })
    .await;
    assert_eq!(late.lines()[2], "add d");
    F::assert_shape(&informer.lister().namespaced(&ns).get("d").unwrap());
    if let Some(value) = F::data(&informer.lister().namespaced(&ns).get("a").unwrap(), "key") {
        assert_eq!(value, "2");
    }

    // Starting twice is an error, not a panic.
    assert!(matches!(
        informer.run(async {}).await,
        Err(InformerError::AlreadyStarted)
    ));
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn removed_handler_gets_nothing_more() {
    let env = TestEnv::shared().await.unwrap();
    let (_, api) = namespace_api(env, "informer-remove").await;
    let informer = SharedIndexInformer::new(api.clone());
    let (kept, removed) = (Log::default(), Log::default());
    informer.add_event_handler(kept.clone()).unwrap();
    let registration = informer.add_event_handler(removed.clone()).unwrap();
    let (stop, task) = start(&informer);
    wait_for_cache_sync(&[&informer]).await;

    api.create(&PostParams::default(), &config_map("before", "1", &[]))
        .await
        .unwrap();
    eventually("before", WAIT, || removed.lines() == ["add before"]).await;
    registration.remove();
    assert_eq!(informer.handler_count(), 1);
    api.create(&PostParams::default(), &config_map("after", "1", &[]))
        .await
        .unwrap();
    eventually("after reaches the kept handler", WAIT, || {
        kept.lines().len() == 2
    })
    .await;
    assert_eq!(removed.lines(), ["add before"]);

    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn resync_reaches_only_handlers_whose_period_is_due() {
    let env = TestEnv::shared().await.unwrap();
    let (_, api) = namespace_api(env, "informer-resync").await;
    api.create(&PostParams::default(), &config_map("x", "1", &[]))
        .await
        .unwrap();
    common::wait_for_watch_cache(&api, 1).await;
    let informer = SharedIndexInformer::new(api.clone());
    let (resyncing, quiet) = (Log::default(), Log::default());
    informer
        .add_event_handler_with_resync(resyncing.clone(), Duration::from_millis(200))
        .unwrap();
    informer.add_event_handler(quiet.clone()).unwrap();
    let (stop, task) = start(&informer);

    eventually("three resyncs", WAIT, || resyncing.count("resync x") >= 3).await;
    assert_eq!(
        quiet.lines(),
        ["add x (initial)"],
        "no resync without a period"
    );
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

/// Handler isolation: a handler blocked on its thread delays neither the others nor
/// the informer; a panicking one (here on the runtime, as a controller's run) is
/// contained and goes on; a light one on the runtime sees everything in order.
#[tokio::test]
async fn a_slow_handler_delays_no_other_and_a_panicking_one_is_contained() {
    let env = TestEnv::shared().await.unwrap();
    let (_, api) = namespace_api(env, "informer-slow").await;
    let informer = SharedIndexInformer::new(api.clone());

    // The slow handler blocks on its first event until the test opens the gate.
    let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    let slow = Log::default();
    let slow_log = slow.clone();
    let mut gate = Some(gate_rx);
    let slow_reg = informer
        .add_event_handler(
            informer::shared_informer::ResourceEventHandlerFns::new().on_add(
                move |cm: &Arc<ConfigMap>, _| {
                    if let Some(gate) = gate.take() {
                        gate.recv().unwrap();
                    }
                    slow_log.push(format!("add {}", cm.name_any()));
                },
            ),
        )
        .unwrap();
    let panicky = Log::default();
    let panicky_log = panicky.clone();
    let panicky_reg = informer
        .add_event_handler_on_runtime(
            informer::shared_informer::ResourceEventHandlerFns::new().on_add(
                move |cm: &Arc<ConfigMap>, _| {
                    assert_ne!(cm.name_any(), "cm-1", "this handler panics on cm-1");
                    panicky_log.push(format!("add {}", cm.name_any()));
                },
            ),
        )
        .unwrap();
    let fast = Log::default();
    informer.add_event_handler(fast.clone()).unwrap();
    let light = Log::default();
    informer
        .add_event_handler_on_runtime(light.clone())
        .unwrap();
    let (stop, task) = start(&informer);
    wait_for_cache_sync(&[&informer]).await;

    for i in 0..5 {
        api.create(
            &PostParams::default(),
            &config_map(&format!("cm-{i}"), "1", &[]),
        )
        .await
        .unwrap();
    }
    eventually("the fast handlers see all five", WAIT, || {
        fast.lines().len() == 5 && light.lines().len() == 5
    })
    .await;
    assert_eq!(light.lines(), fast.lines());
    // Meanwhile the slow one is still stuck on its first event, the rest buffered.
    assert!(slow.lines().is_empty());
    assert_eq!(slow_reg.stats().pending, 5);
    eventually("the panicking handler goes on", WAIT, || {
        panicky.lines().len() == 4
    })
    .await;
    assert_eq!(
        panicky.lines(),
        ["add cm-0", "add cm-2", "add cm-3", "add cm-4"]
    );
    assert_eq!(panicky_reg.stats().panics, 1);

    gate_tx.send(()).unwrap();
    eventually("the slow handler catches up", WAIT, || {
        slow.lines().len() == 5
    })
    .await;
    assert_eq!(
        slow.lines(),
        fast.lines().iter().map(|l| l.as_str()).collect::<Vec<_>>()
    );
    assert!(slow_reg.stats().peak_pending >= 5);

    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

async fn missed_deletion_tombstone<F: Flavour>() {
    let env = TestEnv::start().await.unwrap();
    let proxy = env.fault_proxy().await.unwrap();
    let (ns, api) = namespace_api(&env, "informer-tombstone").await;
    for name in ["keep", "gone"] {
        api.create(&PostParams::default(), &config_map(name, "1", &[]))
            .await
            .unwrap();
    }
    let informer = informer_of::<F>(
        proxy.client().unwrap(),
        Some(&ns),
        |lw| lw,
        InformerConfig::default(),
    );
    let log = Log::default();
    informer.add_event_handler(log.clone()).unwrap();
    let (stop, task) = start(&informer);
    wait_for_cache_sync(&[&informer]).await;
    eventually("the watch", WAIT, || {
        informer.reflector_stats().is_some_and(|s| s.watches == 1)
    })
    .await;

    proxy.disconnect().await;
    api.delete("gone", &DeleteParams::default()).await.unwrap();
    env.restart_apiserver().await.unwrap();
    proxy.reconnect().await.unwrap();

    eventually("the tombstone", Duration::from_secs(60), || {
        log.lines().contains(&"tombstone gone".to_owned())
    })
    .await;
    assert!(informer.lister().namespaced(&ns).get("gone").is_err());
    assert!(informer.lister().namespaced(&ns).get("keep").is_ok());

    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn managed_fields_are_left_out_by_default_and_an_update_keeps_them_on_the_server() {
    let env = TestEnv::shared().await.unwrap();
    let (ns, api) = namespace_api(env, "informer-managed-fields").await;
    let as_manager = |manager: &str| PostParams {
        field_manager: Some(manager.to_owned()),
        ..PostParams::default()
    };
    api.create(&as_manager("creator"), &config_map("x", "1", &[]))
        .await
        .unwrap();
    common::wait_for_watch_cache(&api, 1).await;
    let on_server = api.get("x").await.unwrap().metadata.managed_fields;
    let managers = |fields: &[ManagedFieldsEntry]| -> Vec<String> {
        fields.iter().filter_map(|e| e.manager.clone()).collect()
    };
    assert_eq!(managers(on_server.as_ref().unwrap()), ["creator"]);

    // Each through a proxy of its own, which counts the bytes the server sent it: the
    // dropping one asks the server to leave managedFields out (KEP-5958); 1.37.2 does
    // not know the request and serves it as if it were not there.
    let (to_dropping, to_keeping) = (
        env.fault_proxy().await.unwrap(),
        env.fault_proxy().await.unwrap(),
    );
    let through = |proxy: &informer::testenv::FaultProxy| {
        Api::<ConfigMap>::namespaced(proxy.client().unwrap(), &ns)
    };
    let dropping = SharedIndexInformer::new(through(&to_dropping));
    let keeping = SharedIndexInformer::with_config(
        ApiListerWatcher::new(through(&to_keeping)).managed_fields(ManagedFields::Keep),
        InformerConfig::default(),
    )
    .unwrap();
    let (stop_dropping, dropping_task) = start(&dropping);
    let (stop_keeping, keeping_task) = start(&keeping);
    wait_for_cache_sync(&[&dropping, &keeping]).await;
    eprintln!(
        "bytes received to sync, asking to leave managedFields out: {}; not asking: {}",
        to_dropping.bytes_to_clients(),
        to_keeping.bytes_to_clients()
    );

    let cached = dropping.lister().namespaced(&ns).get("x").unwrap();
    assert!(cached.metadata.managed_fields.is_none());
    assert_eq!(cached.data.as_ref().unwrap()["key"], "1");
    let kept = keeping.lister().namespaced(&ns).get("x").unwrap();
    assert_eq!(kept.metadata.managed_fields, on_server);

    // A controller updates from its cache: the object it sends has no managedFields,
    // and the server keeps the creator's record (and adds the controller's).
    let mut changed = (*cached).clone();
    changed
        .data
        .get_or_insert_default()
        .insert("other".into(), "2".into());
    let updated = api
        .replace("x", &as_manager("controller"), &changed)
        .await
        .unwrap();
    let after = updated.metadata.managed_fields.unwrap();
    let mut after_managers = managers(&after);
    after_managers.sort();
    assert_eq!(after_managers, ["controller", "creator"]);
    let creator = on_server.unwrap().remove(0);
    assert!(
        after.contains(&creator),
        "{creator:?} is still on the server"
    );
    eventually("both caches see the update", WAIT, || {
        [&dropping, &keeping].iter().all(|informer| {
            informer
                .lister()
                .namespaced(&ns)
                .get("x")
                .is_ok_and(|cm| cm.data.as_ref().is_some_and(|d| d.contains_key("other")))
        })
    })
    .await;
    let cached = dropping.lister().namespaced(&ns).get("x").unwrap();
    assert!(cached.metadata.managed_fields.is_none());
    let kept = keeping.lister().namespaced(&ns).get("x").unwrap();
    assert_eq!(kept.metadata.managed_fields.as_ref(), Some(&after));

    stop_dropping.send(()).unwrap();
    stop_keeping.send(()).unwrap();
    dropping_task.await.unwrap().unwrap();
    keeping_task.await.unwrap().unwrap();
}

async fn relist_after_410<F: Flavour>() {
    // Without the watch cache, compaction makes the next watch answer 410 Gone.
    let env = TestEnv::builder().watch_cache(false).start().await.unwrap();
    let ns = env.create_namespace("informer-relist").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    common::create_watched_pair_and_noise(&api).await;

    let informer = informer_of::<F>(
        env.client().unwrap(),
        Some(&ns),
        |lw| lw.labels("app=watched"),
        InformerConfig::default().reflector(
            // Short watches, so the informer soon watches again from its last version.
            informer::reflector::Config::default()
                .watch_timeout(Duration::from_secs(2)..=Duration::from_secs(2)),
        ),
    );
    let expired = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = expired.clone();
    informer
        .set_watch_error_handler(move |e| {
            if matches!(e, informer::reflector::ReflectorError::Expired(_)) {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        })
        .unwrap();
    let log = Log::default();
    informer.add_event_handler(log.clone()).unwrap();
    let (stop, task) = start(&informer);
    wait_for_cache_sync(&[&informer]).await;
    let cached = |name: &str| informer.lister().namespaced(&ns).get(name).unwrap();
    let (a, b) = (cached("a"), cached("b"));

    common::expire_watches_on_app_watched(&env, &api).await;
    eventually("410 Gone and a relist", Duration::from_secs(60), || {
        expired.load(std::sync::atomic::Ordering::SeqCst) >= 1
            && informer.reflector_stats().is_some_and(|s| s.lists == 2)
    })
    .await;
    // A relist at an unchanged version tells handlers nothing (a resync, for handlers
    // that are due one). An object created now is queued after the relisted keys, so
    // once its add arrives, they have been applied.
    api.create(
        &PostParams::default(),
        &config_map("z", "1", &[("app", "watched")]),
    )
    .await
    .unwrap();
    eventually("the add of z", WAIT, || log.count("add z") == 1).await;
    // Both were listed at the versions the cache held: the cache kept its own copies
    // rather than a second, freshly decoded one of each.
    assert!(Arc::ptr_eq(&a, &cached("a")));
    assert!(Arc::ptr_eq(&b, &cached("b")));
    assert_eq!(log.count("update"), 0);

    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn transform_runs_before_storing_and_settings_freeze_at_start() {
    let env = TestEnv::shared().await.unwrap();
    let (ns, api) = namespace_api(env, "informer-transform").await;
    api.create(&PostParams::default(), &config_map("x", "1", &[]))
        .await
        .unwrap();
    common::wait_for_watch_cache(&api, 1).await;
    let informer = SharedIndexInformer::new(api.clone());
    informer
        .set_transform(|mut cm: ConfigMap| {
            cm.metadata.managed_fields = None;
            cm.annotations_mut()
                .insert("transformed".into(), "yes".into());
            cm
        })
        .unwrap();
    let (stop, task) = start(&informer);
    wait_for_cache_sync(&[&informer]).await;

    let cached = informer.lister().namespaced(&ns).get("x").unwrap();
    assert_eq!(cached.annotations()["transformed"], "yes");
    assert!(cached.metadata.managed_fields.is_none());
    assert!(matches!(
        informer.set_transform(|cm| cm),
        Err(InformerError::SetAfterStart(_))
    ));

    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn subscribe_streams_the_cache_then_changes() {
    let env = TestEnv::shared().await.unwrap();
    let (_, api) = namespace_api(env, "informer-stream").await;
    api.create(&PostParams::default(), &config_map("x", "1", &[]))
        .await
        .unwrap();
    common::wait_for_watch_cache(&api, 1).await;
    let informer = SharedIndexInformer::new(api.clone());
    let mut stream = informer.subscribe().unwrap();
    let (stop, task) = start(&informer);

    let first = tokio::time::timeout(WAIT, stream.next())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(
        &first,
        Notification::Add { object, is_initial_list: true } if object.name_any() == "x"
    ));
    eventually("the subscription syncs", WAIT, || stream.has_synced()).await;
    api.delete("x", &DeleteParams::default()).await.unwrap();
    let next = tokio::time::timeout(WAIT, stream.next())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(
        next,
        Notification::Delete(DeletedObject::Final(_))
    ));

    drop(stream);
    assert_eq!(informer.handler_count(), 0, "dropping unsubscribes");
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn shutdown_stops_handler_threads() {
    let env = TestEnv::shared().await.unwrap();
    let (_, api) = namespace_api(env, "informer-shutdown").await;
    let informer = SharedIndexInformer::new(api);
    let token = Arc::new(());
    let held = token.clone();
    informer
        .add_event_handler(
            informer::shared_informer::ResourceEventHandlerFns::<ConfigMap>::new().on_add(
                move |_, _| {
                    let _ = &held;
                },
            ),
        )
        .unwrap();
    let (stop, task) = start(&informer);
    wait_for_cache_sync(&[&informer]).await;
    assert_eq!(Arc::strong_count(&token), 2);
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
    // The handler (and the closure holding the token) is gone with its thread.
    assert_eq!(Arc::strong_count(&token), 1);
    assert!(matches!(
        informer.add_event_handler(Log::default()),
        Err(InformerError::Stopped)
    ));
}

async fn lister_queries<F: Flavour>() {
    let env = TestEnv::shared().await.unwrap();
    let (ns1, api1) = namespace_api(env, "informer-lister-a").await;
    let (ns2, api2) = namespace_api(env, "informer-lister-b").await;
    let run = format!("run={ns1}");
    let run_label = ("run", ns1.as_str());
    for (api, prefix) in [(&api1, "one"), (&api2, "two")] {
        create_config_maps(
            api,
            &format!("{prefix}-web-a"),
            4,
            &[run_label, ("app", "web"), ("tier", "a")],
        )
        .await;
        create_config_maps(
            api,
            &format!("{prefix}-web-b"),
            3,
            &[run_label, ("app", "web"), ("tier", "b")],
        )
        .await;
        create_config_maps(
            api,
            &format!("{prefix}-db"),
            5,
            &[run_label, ("app", "db"), ("tier", "a")],
        )
        .await;
        create_config_maps(api, &format!("{prefix}-bare"), 2, &[run_label]).await;
    }

    common::wait_for_watch_cache(&api1, 14).await;
    common::wait_for_watch_cache(&api2, 14).await;
    // All namespaces, with an index on the app label.
    let all = Api::<ConfigMap>::all(env.client().unwrap());
    let informer = informer_of::<F>(
        env.client().unwrap(),
        None,
        |lw| lw.labels(run.clone()),
        InformerConfig::default().indexers(Indexers::new().with_label_index("app")),
    );
    let (stop, task) = start(&informer);
    wait_for_cache_sync(&[&informer]).await;
    let lister = informer.lister();
    // Namespaced listing is answered from the namespace index, present by default.
    assert!(
        informer
            .indexer()
            .index_names()
            .contains(&informer::store::NAMESPACE_INDEX.to_owned())
    );

    fn names<K: kube::Resource>(
        items: impl IntoIterator<Item = impl std::ops::Deref<Target = K>>,
    ) -> Vec<String> {
        let mut names: Vec<String> = items.into_iter().map(|o| o.name_any()).collect();
        names.sort();
        names
    }
    for selector in [
        "app=web",
        "app!=web",
        "tier in (a)",
        "app=web,tier notin (a)",
        "!app",
        "app",
        "app in (web,db),tier=a",
    ] {
        let full = format!("{run},{selector}");
        let parsed: Selector = full.parse().unwrap();
        let params = ListParams::default().labels(&full);
        for (ns, api) in [(&ns1, &api1), (&ns2, &api2)] {
            let server = api.list(&params).await.unwrap().items;
            let server: Vec<Box<ConfigMap>> = server.into_iter().map(Box::new).collect();
            assert_eq!(
                names(lister.namespaced(ns).list(&parsed)),
                names(server),
                "{selector} in {ns}"
            );
        }
        let server: Vec<Box<ConfigMap>> = all
            .list(&params)
            .await
            .unwrap()
            .items
            .into_iter()
            .map(Box::new)
            .collect();
        assert_eq!(
            names(lister.list(&parsed)),
            names(server),
            "{selector} everywhere"
        );
    }
    assert_eq!(lister.namespaced(&ns1).list_all().len(), 14);
    // The label index answers for every flavour: 7 `app=web` in each namespace.
    let label_index = informer::store::label_index_name("app");
    let web = informer.indexer().by_index(&label_index, "web").unwrap();
    assert_eq!(web.len(), 14);
    web.iter().for_each(|o| F::assert_shape(o));
    let missing = lister.namespaced(&ns1).get("nope").unwrap_err();
    assert!(
        missing.is_not_found(),
        "the informer has synced: {missing:?}"
    );
    assert_eq!(missing.key().to_string(), format!("{ns1}/nope"));

    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_panicking_transform_skips_that_object_and_the_informer_goes_on() {
    let env = TestEnv::shared().await.unwrap();
    let (ns, api) = namespace_api(env, "informer-transform-panic").await;
    for name in ["good", "bad"] {
        api.create(&PostParams::default(), &config_map(name, "1", &[]))
            .await
            .unwrap();
    }
    common::wait_for_watch_cache(&api, 2).await;
    let informer = SharedIndexInformer::new(api.clone());
    informer
        .set_transform(|cm: ConfigMap| {
            assert_ne!(cm.name_any(), "bad", "this transform panics on bad");
            cm
        })
        .unwrap();
    let log = Log::default();
    informer.add_event_handler(log.clone()).unwrap();
    let (stop, task) = start(&informer);
    wait_for_cache_sync(&[&informer]).await;
    assert!(informer.lister().namespaced(&ns).get("good").is_ok());
    assert!(informer.lister().namespaced(&ns).get("bad").is_err());

    api.create(&PostParams::default(), &config_map("after", "1", &[]))
        .await
        .unwrap();
    eventually("later objects still arrive", WAIT, || {
        log.lines().contains(&"add after".to_owned())
    })
    .await;

    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

/// The cache's own resourceVersion (client-go's `LastStoreSyncResourceVersion`): after a
/// write, waiting for the version it returned ends once the cache shows the write, and
/// never before; it is never ahead of the reflector's; the informer's lister knows it
/// too; a version that is no integer is refused at once.
#[tokio::test]
async fn the_cache_knows_its_resource_version_and_a_write_can_be_waited_for() {
    let env = TestEnv::shared().await.unwrap();
    let (ns, api) = namespace_api(env, "informer-store-rv").await;
    api.create(&PostParams::default(), &config_map("x", "0", &[]))
        .await
        .unwrap();
    let informer = SharedIndexInformer::new(api.clone());
    let (stop, task) = start(&informer);
    wait_for_cache_sync(&[&informer]).await;
    eventually("a store resourceVersion", WAIT, || {
        !informer.store_resource_version().is_empty()
    })
    .await;
    for value in 1..=20 {
        let patch = serde_json::json!({ "data": { "key": value.to_string() } });
        let written = api
            .patch("x", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        let version = written.resource_version().unwrap();
        let waited = tokio::time::timeout(WAIT, informer.wait_for_resource_version(&version))
            .await
            .expect("the cache reached the write's version");
        assert!(waited);
        // Reached means the cache shows the write (or something newer), and the
        // informer's lister says so too.
        let lister = informer.lister();
        let listed: u64 = lister.store_resource_version().parse().unwrap();
        assert!(listed >= version.parse::<u64>().unwrap());
        let cached = lister.namespaced(&ns).get("x").unwrap();
        let cached_version: u64 = cached.resource_version().unwrap().parse().unwrap();
        assert!(cached_version >= version.parse::<u64>().unwrap());
        assert_eq!(cached.data.as_ref().unwrap()["key"], value.to_string());
        let store: u64 = informer.store_resource_version().parse().unwrap();
        let reflector: u64 = informer.last_sync_resource_version().parse().unwrap();
        assert!(
            store <= reflector,
            "{store} ahead of the reflector's {reflector}"
        );
    }
    assert!(!informer.wait_for_resource_version("not-a-number").await);
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}
