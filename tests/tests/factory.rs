//! SharedInformerFactory against a real API server: sharing, scoping, start, sync
//! report, options, CRDs, shutdown.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{config_map, eventually};
use informer::factory::{CacheSyncError, FactoryOptions, InformerScope, SharedInformerFactory};
use informer::reflector::ManagedFields;
use informer::shared_informer::{HasSynced, ResourceEventHandlerFns};
use informer::testenv::TestEnv;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, PostParams};
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
async fn one_informer_per_type_and_scope_shared_by_all_who_ask() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("factory-share").await.unwrap();
    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryOptions::default().namespace(ns.clone()),
    );
    let a = factory.informer::<ConfigMap>();
    let b = factory.informer::<ConfigMap>();
    assert_eq!(a, b, "asking twice returns the same informer");
    let labelled = factory.informer_for::<ConfigMap>(InformerScope {
        namespace: Some(ns.clone()),
        label_selector: Some("app=x".into()),
        field_selector: None,
    });
    assert_ne!(a, labelled, "another selector is another informer");
    let _secrets = factory.informer::<Secret>();
    // Cluster-scoped types ignore the namespace, so these two are one.
    let namespaces = factory.informer::<Namespace>();
    let namespaces_elsewhere = factory.informer_for::<Namespace>(InformerScope {
        namespace: Some("elsewhere".into()),
        ..InformerScope::default()
    });
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
        FactoryOptions::default()
            .namespace(ns.clone())
            .transform_metadata(|meta| {
                let annotations = meta.annotations.get_or_insert_default();
                annotations.insert("seen-by".into(), "every type".into());
            })
            .managed_fields_for::<ConfigMap>(ManagedFields::Keep)
            .transform_for::<ConfigMap>(|mut cm| {
                cm.labels_mut().insert("seen-by".into(), "factory".into());
                cm
            })
            .resync_for::<ConfigMap>(Duration::from_millis(200)),
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
