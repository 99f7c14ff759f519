//! SharedInformerFactory against a real API server: sharing, scoping, start, sync
//! report, options, CRDs, shutdown, key-filtered selections.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{config_map, eventually};
use informer::factory::{
    ByObject, CacheSyncError, FactoryConfig, Selection, SharedInformerFactory,
};
use informer::reflector::FnKeyFilter;
use informer::reflector::source::ManagedFields;
use informer::shared_informer::{HasSynced, ResourceEventHandlerFns};
use informer::testenv::TestEnv;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{CustomResource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const WAIT: Duration = Duration::from_secs(20);

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "factory.informer.example.com",
    version = "v1",
    kind = "Widget",
    namespaced
)]
struct WidgetSpec {
    size: u32,
}

async fn install_widget_crd(env: &TestEnv) {
    use kube::CustomResourceExt;
    env.install_crd(&Widget::crd()).await.unwrap();
}

#[tokio::test]
async fn one_informer_per_type_and_selection_shared_by_all_who_ask() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("factory-share").await.unwrap();
    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryConfig::default().namespace(ns.clone()),
    );
    let a = factory.informer::<ConfigMap>();
    let b = factory.informer::<ConfigMap>();
    assert_eq!(a, b, "asking twice returns the same informer");
    let labelled = factory.informer_for::<ConfigMap>(
        Selection::default()
            .namespace(ns.clone())
            .label_selector("app=x"),
    );
    assert_ne!(a, labelled, "another selector is another informer");
    let _secrets = factory.informer::<Secret>();
    // Cluster-scoped types ignore the namespace, so these two are one.
    let namespaces = factory.informer::<Namespace>();
    let namespaces_elsewhere =
        factory.informer_for::<Namespace>(Selection::default().namespace("elsewhere"));
    assert_eq!(namespaces, namespaces_elsewhere);
    assert_eq!(factory.len(), 4);

    // A handler on one handle is on the other.
    a.add_event_handler(ResourceEventHandlerFns::new()).unwrap();
    assert_eq!(b.handler_count(), 1);
}

#[tokio::test]
async fn start_is_idempotent_sync_reports_per_type_and_shutdown_stops_everything() {
    let env = TestEnv::shared().await.unwrap();
    install_widget_crd(env).await;
    let ns = env.create_namespace("factory-run").await.unwrap();
    let configmaps = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    configmaps
        .create(&PostParams::default(), &config_map("cm", "1", &[]))
        .await
        .unwrap();
    Api::<Widget>::namespaced(env.client().unwrap(), &ns)
        .create(
            &PostParams::default(),
            &Widget::new("w", WidgetSpec { size: 3 }),
        )
        .await
        .unwrap();

    common::wait_for_watch_cache(&configmaps, 1).await;
    common::wait_for_watch_cache(&Api::<Widget>::namespaced(env.client().unwrap(), &ns), 1).await;
    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryConfig::default()
            .namespace(ns.clone())
            .transform_metadata(|meta| {
                let annotations = meta.annotations.get_or_insert_default();
                annotations.insert("seen-by".into(), "every type".into());
            })
            .by_object(
                ByObject::<ConfigMap>::default()
                    .managed_fields(ManagedFields::Keep)
                    .transform(|mut cm| {
                        cm.labels_mut().insert("seen-by".into(), "factory".into());
                        cm
                    })
                    .resync(Duration::from_millis(200)),
            ),
    );
    let cms = factory.informer::<ConfigMap>();
    let token = Arc::new(());
    let held = token.clone();
    let resyncs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = resyncs.clone();
    cms.add_event_handler(ResourceEventHandlerFns::<ConfigMap>::new().on_update(
        move |old, new| {
            let _ = &held;
            if old.resource_version() == new.resource_version() {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        },
    ))
    .unwrap();
    factory.start();
    factory.start();
    factory.wait_for_cache_sync().await.unwrap();
    assert!(cms.has_synced());
    assert!(factory.has_synced());

    // Ask for more after start: waiting for it before the next start is an error
    // naming it, and the next start runs just the new one.
    let widgets = factory.informer::<Widget>();
    assert!(!widgets.has_synced());
    assert!(
        !factory.has_synced(),
        "an informer not started has not synced"
    );
    match factory.wait_for_cache_sync().await {
        Err(CacheSyncError::NotStarted { informers }) => {
            assert_eq!(informers, [format!("Widget in {ns}")]);
        }
        other => panic!("expected NotStarted, got {other:?}"),
    }
    factory.start();
    factory.wait_for_cache_sync().await.unwrap();
    assert!(widgets.has_synced());
    assert!(factory.has_synced());

    let widget = widgets.lister().namespaced(&ns).get("w").unwrap();
    assert_eq!(widget.spec.size, 3);
    assert_eq!(widget.annotations()["seen-by"], "every type");
    // Left out by default, kept for the one type that asked.
    assert!(widget.metadata.managed_fields.is_none());
    let cm = cms.lister().namespaced(&ns).get("cm").unwrap();
    assert_eq!(cm.labels()["seen-by"], "factory");
    assert_eq!(cm.annotations()["seen-by"], "every type");
    assert!(!cm.metadata.managed_fields.as_ref().unwrap().is_empty());
    eventually("per-type resync", WAIT, || {
        resyncs.load(std::sync::atomic::Ordering::SeqCst) >= 2
    })
    .await;

    tokio::time::timeout(WAIT, factory.shutdown())
        .await
        .expect("shutdown completes");
    assert_eq!(Arc::strong_count(&token), 1, "handler threads have ended");
    // After shutdown nothing starts again.
    let late = factory.informer::<Secret>();
    factory.start();
    let error = factory.wait_for_cache_sync().await.unwrap_err();
    assert!(
        matches!(error, CacheSyncError::ShutDown { .. }),
        "{error:?}"
    );
    let unsynced: Vec<&str> = error
        .unsynced()
        .iter()
        .map(|u| u.informer.as_str())
        .collect();
    assert_eq!(unsynced, [format!("Secret in {ns}")]);
    assert!(!late.has_synced());
}

/// The number in a ConfigMap's name `cm-<n>`.
fn number(name: &str) -> usize {
    name.trim_start_matches("cm-")
        .parse()
        .expect("named cm-<n>")
}

/// Keeps `cm-<n>` when `keeps(n)`.
fn by_number(keeps: fn(usize) -> bool) -> impl Fn(Option<&str>, &str) -> bool {
    move |_, name| {
        name.strip_prefix("cm-")
            .and_then(|n| n.parse().ok())
            .is_some_and(keeps)
    }
}

/// What the server holds now that `keeps` keeps, by a fresh (consistent) list:
/// name -> resourceVersion.
async fn kept_on_server(
    api: &Api<ConfigMap>,
    keeps: fn(usize) -> bool,
) -> BTreeMap<String, String> {
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|cm| keeps(number(&cm.name_any())))
        .map(|cm| (cm.name_any(), cm.resource_version().unwrap()))
        .collect()
}

/// Churn on `cm-<from>..cm-<to>`: creates them, updates every third, deletes every
/// fourth, and updates or deletes some of the older ones.
async fn churn(api: &Api<ConfigMap>, from: usize, to: usize) {
    for n in from..to {
        api.create(
            &PostParams::default(),
            &config_map(&format!("cm-{n}"), "new", &[]),
        )
        .await
        .unwrap();
    }
    for n in (0..to).filter(|n| n % 3 == 0) {
        let patch = serde_json::json!({ "data": { "key": format!("changed at {to}") } });
        // Deleted ones are gone: a 404 is fine.
        let _ = api
            .patch(
                &format!("cm-{n}"),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await;
    }
    for n in (from..to).filter(|n| n % 4 == 1) {
        api.delete(&format!("cm-{n}"), &DeleteParams::default())
            .await
            .unwrap();
    }
}

/// A factory informer whose selection carries a key filter that switches at run time: under
/// churn, and after each switch, its cache holds exactly what the server holds that
/// the filter keeps (name and resourceVersion, against a fresh list), and what its
/// handler was told adds up to the same; objects not kept are counted, never cached.
#[tokio::test]
async fn a_filtered_selection_caches_exactly_the_kept_objects_through_churn_and_switches() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("factory-filter").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    churn(&api, 0, 10).await;

    let even: fn(usize) -> bool = |n| n % 2 == 0;
    let odd: fn(usize) -> bool = |n| n % 2 == 1;
    let low: fn(usize) -> bool = |n| n < 12;
    let filter = Arc::new(FnKeyFilter::new(by_number(even)));
    let factory = SharedInformerFactory::new(env.client().unwrap(), FactoryConfig::default());
    let selection = Selection::default()
        .namespace(ns.clone())
        .filtered("parity", filter.clone());
    let informer = factory.informer_for::<ConfigMap>(selection);
    // What the handler was told, applied to a map: name -> resourceVersion.
    let told: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
    let (on_add, on_update, on_delete) = (told.clone(), told.clone(), told.clone());
    informer
        .add_event_handler(
            ResourceEventHandlerFns::<ConfigMap>::new()
                .on_add(move |cm, _| {
                    let previous = on_add
                        .lock()
                        .unwrap()
                        .insert(cm.name_any(), cm.resource_version().unwrap());
                    assert!(
                        previous.is_none(),
                        "an add of {} while known",
                        cm.name_any()
                    );
                })
                .on_update(move |_, cm| {
                    let previous = on_update
                        .lock()
                        .unwrap()
                        .insert(cm.name_any(), cm.resource_version().unwrap());
                    assert!(previous.is_some(), "an update of unknown {}", cm.name_any());
                })
                .on_delete(move |gone| {
                    let name = gone.object().name_any();
                    assert!(on_delete.lock().unwrap().remove(&name).is_some(), "{name}");
                }),
        )
        .unwrap();
    factory.start();
    factory.wait_for_cache_sync().await.unwrap();

    let cached = || -> BTreeMap<String, String> {
        informer
            .lister()
            .list_all()
            .iter()
            .map(|cm| (cm.name_any(), cm.resource_version().unwrap()))
            .collect()
    };
    let mut relists = 0;
    let mut next = 10;
    for (round, keeps) in [even, odd, low, even].into_iter().enumerate() {
        if round > 0 {
            // Switch while objects change.
            let switch = async {
                tokio::time::sleep(Duration::from_millis(30)).await;
                filter.set(by_number(keeps));
            };
            tokio::join!(churn(&api, next, next + 10), switch);
            next += 10;
            relists += 1;
        }
        churn(&api, next, next + 10).await;
        next += 10;
        let expected = kept_on_server(&api, keeps).await;
        assert!(!expected.is_empty());
        eventually(
            &format!("round {round}: the cache holds the kept set"),
            WAIT,
            || cached() == expected && *told.lock().unwrap() == expected,
        )
        .await;
        let stats = informer.reflector_stats().unwrap();
        assert!(stats.filtered_out > 0);
        assert!(stats.filter_relists >= relists, "{stats:?}");
    }
    factory.shutdown().await;
}
