//! A control plane with kube-controller-manager (`TestEnvBuilder::controller_manager`)
//! behaves as a cluster does on deletion: owner references cascade in the background,
//! a foreground deletion waits for the dependents that block it, and a deleted
//! namespace is emptied and goes away. (That a plain control plane does none of this
//! is checked in `testenv.rs`, on its shared plain one.)

mod common;

use std::time::Duration;

use common::{config_map, eventually_async};
use informer::testenv::{TestEnv, TestEnvError};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use tokio::sync::OnceCell;

/// Generous: the garbage collector's first sync lists every resource, and the
/// namespace controller deletes resource by resource; both take a second or two.
const WAIT: Duration = Duration::from_secs(60);

/// A finalizer of the test's own, which keeps a deleted object until it is removed.
const HOLD: &str = "informer.test/hold";

/// The control plane with a controller manager, shared by this binary's tests.
async fn env() -> &'static TestEnv {
    static ENV: OnceCell<TestEnv> = OnceCell::const_new();
    ENV.get_or_init(|| async {
        TestEnv::builder()
            .controller_manager(true)
            .start()
            .await
            .unwrap()
    })
    .await
}

/// A ConfigMap `name` whose controller is `owner`, with `finalizers`. The reference
/// blocks the owner's deletion: a foreground deletion of the owner waits for it.
fn owned_config_map(name: &str, owner: &ConfigMap, finalizers: &[&str]) -> ConfigMap {
    let mut owned = config_map(name, "owned", &[]);
    let reference = OwnerReference {
        block_owner_deletion: Some(true),
        ..owner.controller_owner_ref(&()).unwrap()
    };
    owned.metadata.owner_references = Some(vec![reference]);
    owned.metadata.finalizers = Some(finalizers.iter().map(|f| (*f).to_owned()).collect());
    owned
}

async fn exists<K>(api: &Api<K>, name: &str) -> bool
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name).await.unwrap().is_some()
}

#[tokio::test]
async fn deleting_an_owner_deletes_its_dependents_in_the_background() {
    let env = env().await;
    let ns = env.create_namespace("cm-background").await.unwrap();
    let client = env.client().unwrap();
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    let secrets = Api::<Secret>::namespaced(client, &ns);
    let post = PostParams::default();

    let owner = config_maps
        .create(&post, &config_map("owner", "1", &[]))
        .await
        .unwrap();
    config_maps
        .create(&post, &owned_config_map("owned-config", &owner, &[]))
        .await
        .unwrap();
    let mut secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "owned-secret" },
        "stringData": { "key": "value" },
    }))
    .unwrap();
    secret.metadata.owner_references = Some(vec![owner.controller_owner_ref(&()).unwrap()]);
    secrets.create(&post, &secret).await.unwrap();
    config_maps
        .create(&post, &config_map("bystander", "1", &[]))
        .await
        .unwrap();

    // Background propagation is the default: the owner goes at once, its dependents
    // after it.
    config_maps
        .delete("owner", &DeleteParams::default())
        .await
        .unwrap();
    assert!(!exists(&config_maps, "owner").await);
    eventually_async("the owner's dependents to be deleted", WAIT, || async {
        !exists(&config_maps, "owned-config").await && !exists(&secrets, "owned-secret").await
    })
    .await;
    assert!(
        exists(&config_maps, "bystander").await,
        "an object without the owner reference is left alone"
    );
}

#[tokio::test]
async fn foreground_deletion_keeps_the_owner_until_its_blocking_dependent_is_gone() {
    let env = env().await;
    let ns = env.create_namespace("cm-foreground").await.unwrap();
    let config_maps = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    let post = PostParams::default();

    let owner = config_maps
        .create(&post, &config_map("owner", "1", &[]))
        .await
        .unwrap();
    // The test's finalizer keeps the dependent after the collector deletes it, so
    // that the owner can be seen waiting for it.
    config_maps
        .create(&post, &owned_config_map("dependent", &owner, &[HOLD]))
        .await
        .unwrap();

    let deleting = config_maps
        .delete("owner", &DeleteParams::foreground())
        .await
        .unwrap()
        .left()
        .expect("a foreground deletion answers with the object, not yet deleted");
    assert!(
        deleting
            .finalizers()
            .iter()
            .any(|f| f == "foregroundDeletion")
    );

    eventually_async("the collector to delete the dependent", WAIT, || async {
        config_maps
            .get("dependent")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    })
    .await;
    // The dependent still exists (held by the test's finalizer), so the owner waits.
    let waiting = config_maps.get("owner").await.unwrap();
    assert!(waiting.metadata.deletion_timestamp.is_some());
    assert!(
        waiting
            .finalizers()
            .iter()
            .any(|f| f == "foregroundDeletion"),
        "{:?}",
        waiting.finalizers()
    );

    let release = serde_json::json!({ "metadata": { "finalizers": null } });
    config_maps
        .patch(
            "dependent",
            &PatchParams::default(),
            &Patch::Merge(&release),
        )
        .await
        .unwrap();
    eventually_async(
        "the owner to go once its dependent is gone",
        WAIT,
        || async {
            !exists(&config_maps, "dependent").await && !exists(&config_maps, "owner").await
        },
    )
    .await;
}

#[tokio::test]
async fn deleting_a_namespace_empties_it_and_removes_it() {
    let env = env().await;
    let ns = env.create_namespace("cm-namespace").await.unwrap();
    let client = env.client().unwrap();
    let namespaces = Api::<Namespace>::all(client.clone());
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    let secrets = Api::<Secret>::namespaced(client, &ns);
    let post = PostParams::default();
    config_maps
        .create(&post, &config_map("inside", "1", &[]))
        .await
        .unwrap();
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "inside" },
        "stringData": { "key": "value" },
    }))
    .unwrap();
    secrets.create(&post, &secret).await.unwrap();

    env.delete_namespace(&ns).await.unwrap();
    eventually_async("the namespace to disappear", WAIT, || async {
        !exists(&namespaces, &ns).await
    })
    .await;
    // The namespace controller removes the namespace only once it is empty.
    assert!(!exists(&config_maps, "inside").await);
    assert!(!exists(&secrets, "inside").await);

    // Its name is free again, and the new namespace starts empty.
    let again: Namespace =
        serde_json::from_value(serde_json::json!({ "metadata": { "name": ns } })).unwrap();
    namespaces.create(&post, &again).await.unwrap();
    assert!(!exists(&config_maps, "inside").await);
}

/// A flag from `controller_manager_arg` wins over the default one (here with a
/// controller that does not exist), and a controller manager that exits fails the
/// start with the end of its log, which says why.
#[tokio::test]
async fn a_controller_manager_that_exits_fails_the_start_with_its_log() {
    let error = TestEnv::builder()
        .controller_manager(true)
        .controller_manager_arg("--controllers=no-such-controller")
        .start()
        .await
        .unwrap_err();
    match error {
        TestEnvError::NotReady {
            component,
            log_tail,
            ..
        } => {
            assert_eq!(component, "kube-controller-manager");
            assert!(log_tail.contains("no-such-controller"), "{log_tail}");
        }
        other => panic!("expected NotReady, got {other}"),
    }
}
