//! Nothing fails silently, against a real API server: waiting on a factory before
//! start, a CRD that is not installed, a server that cannot be reached, access denied,
//! and a lister read before its informer synced each say what is wrong.

mod common;

use std::time::Duration;

use common::config_map;
use informer::factory::{CacheSyncError, FactoryConfig, SharedInformerFactory};
use informer::lister::LookupError;
use informer::reflector::SyncError;
use informer::shared_informer::{SharedIndexInformer, wait_for_cache_sync};
use informer::testenv::TestEnv;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, PostParams};
use kube::{Client, CustomResource};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const WAIT: Duration = Duration::from_secs(20);
/// Long enough for a first list to fail: it is sent at once.
const DEADLINE: Duration = Duration::from_secs(3);

/// A custom resource whose CRD is never installed.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "ops.example.com", version = "v1", kind = "Backup", namespaced)]
struct BackupSpec {
    schedule: String,
}

#[tokio::test]
async fn waiting_before_start_is_an_error_naming_the_informers() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("sync-errors-start").await.unwrap();
    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryConfig::default().namespace(ns.clone()),
    );
    let error = factory.wait_for_cache_sync().await.unwrap_err();
    assert!(
        matches!(&error, CacheSyncError::NotStarted { informers } if informers.is_empty()),
        "{error:?}"
    );
    assert!(
        error.to_string().starts_with("nothing was started"),
        "{error}"
    );

    factory.informer::<ConfigMap>();
    factory.informer::<Namespace>();
    let error = factory.wait_for_cache_sync().await.unwrap_err();
    let CacheSyncError::NotStarted { informers } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(
        *informers,
        [format!("ConfigMap in {ns}"), "Namespace".into()]
    );
    assert!(
        error
            .to_string()
            .starts_with(&format!("ConfigMap in {ns}, Namespace were never started")),
        "{error}"
    );

    factory.start();
    factory.wait_for_cache_sync_within(WAIT).await.unwrap();

    // Asked for after start, and not started: named, at once, not at the deadline.
    let secrets = factory.informer::<Secret>();
    let error = factory
        .wait_for_cache_sync_within(Duration::from_secs(3600))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "Secret in {ns} was never started: call start() after asking for informers and \
             before waiting for them"
        )
    );
    factory.start();
    factory.wait_for_cache_sync_within(WAIT).await.unwrap();
    assert!(secrets.has_synced());
    factory.shutdown().await;
}

#[tokio::test]
async fn a_crd_that_is_not_installed_is_named_not_served_by_the_api_server() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("sync-errors-crd").await.unwrap();
    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryConfig::default().namespace(ns.clone()),
    );
    let backups = factory.informer::<Backup>();
    let config_maps = factory.informer::<ConfigMap>();
    factory.start();

    let error = factory
        .wait_for_cache_sync_within(DEADLINE)
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("backups.ops.example.com is not served by the API server"),
        "{message}"
    );
    let CacheSyncError::TimedOut { after, unsynced } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(*after, DEADLINE);
    // Only the informer that did not sync, with its last error.
    assert_eq!(unsynced.len(), 1, "{message}");
    assert_eq!(unsynced[0].informer, format!("Backup in {ns}"));
    assert!(
        matches!(&unsynced[0].last_error, Some(SyncError::NotServed { resource, .. }) if resource == "backups.ops.example.com"),
        "{unsynced:?}"
    );
    assert_eq!(
        message,
        format!(
            "not synced after 3s: Backup in {ns} (backups.ops.example.com is not served by \
             the API server)"
        )
    );

    // The informer says so too, and its lister does not pass the miss off as NotFound.
    let last = backups.last_sync_error().expect("the list failed");
    assert_eq!(
        last.to_string(),
        "backups.ops.example.com is not served by the API server"
    );
    assert_eq!(last.status_code(), Some(404));
    assert!(backups.reflector_stats().unwrap().sync_failures >= 1);
    let read = backups.lister().namespaced(&ns).get("nightly").unwrap_err();
    assert!(read.is_not_synced(), "{read:?}");
    assert!(config_maps.has_synced());
    assert!(config_maps.last_sync_error().is_none());
    factory.shutdown().await;
}

/// A port nothing listens on: bound, then freed.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn an_unreachable_server_is_named_by_its_address() {
    let port = closed_port();
    let config = kube::Config::new(format!("http://127.0.0.1:{port}").parse().unwrap());

    // From a client alone: the address the connection was refused at.
    let factory = SharedInformerFactory::new(
        Client::try_from(config.clone()).unwrap(),
        FactoryConfig::default().namespace("default"),
    );
    let config_maps = factory.informer::<ConfigMap>();
    factory.start();
    let error = factory
        .wait_for_cache_sync_within(DEADLINE)
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains(&format!(
            "cannot reach the API server at 127.0.0.1:{port} to list configmaps"
        )),
        "{message}"
    );
    assert!(
        matches!(
            config_maps.last_sync_error(),
            Some(SyncError::Unreachable {
                address: Some(_),
                ..
            })
        ),
        "{:?}",
        config_maps.last_sync_error()
    );
    factory.shutdown().await;

    // Made from the configuration: the configured URL.
    let factory =
        SharedInformerFactory::from_config(config, FactoryConfig::default().namespace("default"))
            .unwrap();
    factory.informer::<ConfigMap>();
    factory.start();
    let error = factory
        .wait_for_cache_sync_within(DEADLINE)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains(&format!(
            "cannot reach the API server at http://127.0.0.1:{port}/ to list configmaps"
        )),
        "{error}"
    );
    factory.shutdown().await;
}

#[tokio::test]
async fn access_denied_says_what_the_server_answered() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("sync-errors-denied").await.unwrap();
    let factory = SharedInformerFactory::new(
        env.restricted_client().unwrap(),
        FactoryConfig::default().namespace(ns.clone()),
    );
    let config_maps = factory.informer::<ConfigMap>();
    factory.start();
    let error = factory
        .wait_for_cache_sync_within(DEADLINE)
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains(&format!(
            "ConfigMap in {ns} (listing configmaps failed: 403 Forbidden: "
        )),
        "{error}"
    );
    let last = config_maps.last_sync_error().expect("the list was denied");
    assert!(last.reflector_error().is_access_denied(), "{last:?}");
    factory.shutdown().await;
}

#[tokio::test]
async fn a_lister_read_before_sync_says_not_synced_and_after_it_not_found() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("sync-errors-lister").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    api.create(&PostParams::default(), &config_map("present", "1", &[]))
        .await
        .unwrap();
    common::wait_for_watch_cache(&api, 1).await;

    let informer = SharedIndexInformer::new(api);
    let lister = informer.lister().namespaced(&ns);
    match lister.get("present") {
        Err(LookupError::NotSynced { kind, key }) => {
            assert_eq!(kind, "ConfigMap");
            assert_eq!(key.to_string(), format!("{ns}/present"));
        }
        other => panic!("expected NotSynced before the informer runs, got {other:?}"),
    }
    assert!(!lister.has_synced());

    let running = common::spawn_run(&informer);
    tokio::time::timeout(WAIT, wait_for_cache_sync(&[&informer]))
        .await
        .expect("synced");
    assert!(lister.has_synced());
    assert!(lister.get("present").is_ok());
    let missing = lister.get("absent").unwrap_err();
    assert!(missing.is_not_found(), "{missing:?}");
    assert_eq!(
        missing.to_string(),
        format!("ConfigMap {ns}/absent not found in the cache")
    );
    running.stop().await;
}
