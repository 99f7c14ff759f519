//! Dynamic and metadata-only informers through the factory against a real API server:
//! a CRD installed at run time, found by discovery and informed as `DynamicObject`s;
//! ConfigMaps informed typed, metadata-only and dynamically, agreeing under churn.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::{config_map, eventually};
use futures::StreamExt;
use informer::dynamic::{DiscoveryError, DynamicResource, JsonPathIndex};
use informer::factory::{FactoryConfig, SharedInformerFactory};
use informer::shared_informer::SharedIndexInformer;
use informer::store::Indexers;
use informer::testenv::TestEnv;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::{Resource, ResourceExt};

const WAIT: Duration = Duration::from_secs(20);

/// A CRD no Rust type describes: its objects exist only as JSON here.
fn backup_crd() -> CustomResourceDefinition {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": "backups.dynamic.informer.example.com" },
        "spec": {
            "group": "dynamic.informer.example.com",
            "scope": "Namespaced",
            "names": { "plural": "backups", "singular": "backup", "kind": "Backup" },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "properties": { "spec": {
                        "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    } },
                } },
            }],
        },
    }))
    .expect("a valid CRD")
}

fn backup(resource: &DynamicResource, name: &str, schedule: &str) -> DynamicObject {
    DynamicObject::new(name, &resource.api_resource).data(serde_json::json!({
        "spec": { "schedule": schedule, "targets": ["db", name] },
    }))
}

fn names<K: Resource>(objects: &[Arc<K>]) -> Vec<String> {
    let mut names: Vec<String> = objects.iter().map(|o| o.name_any()).collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_crd_installed_at_run_time_is_discovered_and_informed_dynamically() {
    let env = TestEnv::shared().await.unwrap();
    let client = env.client().unwrap();
    let gvk = GroupVersionKind::gvk("dynamic.informer.example.com", "v1", "Backup");
    // Before the CRD: not served, a typed error that says so (this binary's control
    // plane is its own, and only this test installs the CRD).
    let error = DynamicResource::discover(&client, &gvk).await.unwrap_err();
    assert!(
        matches!(error, DiscoveryError::NotServed { .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "dynamic.informer.example.com/v1/Backup is not served by the API server"
    );
    env.install_crd(&backup_crd()).await.unwrap();
    let resource = DynamicResource::discover(&client, &gvk).await.unwrap();
    assert!(resource.namespaced);
    assert_eq!(resource.api_resource.plural, "backups");
    let missing = GroupVersionKind::gvk("dynamic.informer.example.com", "v1", "Restore");
    assert!(matches!(
        DynamicResource::discover(&client, &missing).await,
        Err(DiscoveryError::NotServed { .. })
    ));

    let ns = env.create_namespace("dynamic-crd").await.unwrap();
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &resource.api_resource);
    for (name, schedule) in [("a", "nightly"), ("b", "hourly")] {
        api.create(&PostParams::default(), &backup(&resource, name, schedule))
            .await
            .unwrap();
    }
    common::wait_for_watch_cache(&api, 2).await;

    let factory =
        SharedInformerFactory::new(client.clone(), FactoryConfig::default().namespace(&ns));
    let informer = factory.dynamic_informer(&resource);
    assert_eq!(informer, factory.dynamic_informer(&resource));
    informer
        .indexer()
        .add_indexers(
            Indexers::new()
                .with("by_schedule", JsonPathIndex::new("spec.schedule").unwrap())
                .with("by_target", JsonPathIndex::new("{.spec.targets}").unwrap())
                .with_label_index("tier"),
        )
        .unwrap();
    factory.start();
    factory.wait_for_cache_sync_within(WAIT).await.unwrap();
    let indexer = informer.indexer();
    let lister = informer.lister();
    assert_eq!(names(&lister.namespaced(&ns).list_all()), ["a", "b"]);
    assert_eq!(
        names(&indexer.by_index("by_schedule", "nightly").unwrap()),
        ["a"]
    );
    assert_eq!(
        names(&indexer.by_index("by_target", "db").unwrap()),
        ["a", "b"]
    );

    // An update from the cache: the cached object goes back as it is (its kind and
    // apiVersion came with it from the list), and the index follows the change.
    let mut a = (*lister.namespaced(&ns).get("a").unwrap()).clone();
    a.data["spec"]["schedule"] = "hourly".into();
    a.labels_mut().insert("tier".into(), "gold".into());
    api.replace("a", &PostParams::default(), &a).await.unwrap();
    api.create(&PostParams::default(), &backup(&resource, "c", "weekly"))
        .await
        .unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    eventually("the update, add and delete", WAIT, || {
        names(&lister.namespaced(&ns).list_all()) == ["a", "c"]
            && indexer.by_index("by_schedule", "hourly").unwrap().len() == 1
    })
    .await;
    assert_eq!(
        names(&indexer.by_index("by_schedule", "hourly").unwrap()),
        ["a"]
    );
    assert!(
        indexer
            .by_index("by_schedule", "nightly")
            .unwrap()
            .is_empty()
    );
    assert_eq!(names(&lister.list(&"tier=gold".parse().unwrap())), ["a"]);
    let c = lister.namespaced(&ns).get("c").unwrap();
    assert_eq!(c.data["spec"]["schedule"], "weekly");
    assert_eq!(c.types.as_ref().unwrap().kind, "Backup");

    tokio::time::timeout(WAIT, factory.shutdown())
        .await
        .unwrap();
}

/// What an informer holds, comparable across flavours: name -> resourceVersion, and
/// name -> data value (for flavours that carry data).
fn versions<K: Resource + Send + Sync + 'static>(
    informer: &SharedIndexInformer<K>,
) -> BTreeMap<String, String> {
    informer
        .lister()
        .list_all()
        .iter()
        .map(|o| (o.name_any(), o.resource_version().unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn typed_metadata_and_dynamic_informers_of_config_maps_agree_under_churn() {
    let env = TestEnv::shared().await.unwrap();
    let client = env.client().unwrap();
    let ns = env.create_namespace("dynamic-churn").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    common::create_config_maps(&api, "seed", 20, &[]).await;

    let factory = SharedInformerFactory::new(client, FactoryConfig::default().namespace(&ns));
    let typed = factory.informer::<ConfigMap>();
    let metadata = factory.metadata_informer::<ConfigMap>();
    let dynamic = factory.dynamic_informer(&DynamicResource::of::<ConfigMap>());
    assert_eq!(factory.len(), 3, "three entries for one type");
    factory.start();
    factory.wait_for_cache_sync_within(WAIT).await.unwrap();

    // Churn while the informers run: creates, updates and deletes, interleaved.
    for round in 0..3 {
        futures::stream::iter(0..30)
            .map(|i| {
                let api = api.clone();
                async move {
                    let name = format!("cm-{round}-{i}");
                    api.create(&PostParams::default(), &config_map(&name, "0", &[]))
                        .await
                        .unwrap();
                    if i % 2 == 0 {
                        let patch = serde_json::json!({ "data": { "key": format!("{round}") } });
                        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                            .await
                            .unwrap();
                    }
                    if i % 3 == 0 {
                        api.delete(&name, &DeleteParams::default()).await.unwrap();
                    }
                    let seed = format!("seed-{}", (round * 7 + i) % 20);
                    let patch = serde_json::json!({ "data": { "key": name } });
                    api.patch(&seed, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .unwrap();
                }
            })
            .buffer_unordered(8)
            .collect::<Vec<()>>()
            .await;
    }
    let server: BTreeMap<String, String> = api
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|cm| (cm.name_any(), cm.resource_version().unwrap()))
        .collect();
    assert_eq!(server.len(), 20 + 3 * 20);
    eventually("all three caches hold what the server holds", WAIT, || {
        versions(&typed) == server && versions(&metadata) == server && versions(&dynamic) == server
    })
    .await;
    for cm in typed.lister().list_all() {
        let dynamic = dynamic
            .lister()
            .namespaced(&ns)
            .get(&cm.name_any())
            .unwrap();
        assert_eq!(
            serde_json::to_value(&cm.data).unwrap(),
            dynamic.data["data"],
            "{}",
            cm.name_any()
        );
        let partial = metadata
            .lister()
            .namespaced(&ns)
            .get(&cm.name_any())
            .unwrap();
        assert_eq!(partial.metadata, cm.metadata);
    }

    tokio::time::timeout(WAIT, factory.shutdown())
        .await
        .unwrap();
}
