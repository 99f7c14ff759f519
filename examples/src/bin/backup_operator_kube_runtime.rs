//! The Backup operator on kube-runtime's `Controller`, for comparison with
//! `backup_operator` (ours): the same behaviour, written the way kube-runtime's own
//! examples write it.
//!
//! A change to a target maps to Backups by scanning the controller's Backup store
//! (kube-runtime has no secondary indexes); the target is read from the API server on
//! every reconcile (kube-runtime's `owns`/`watches` keep no readable cache); deletion
//! goes through kube-runtime's `finalizer` helper.
//!
//! Both are driven by the same script (`informer_examples::backup_demo`).
//! Run: `cargo run --bin backup_operator_kube_runtime`.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use informer_examples::{Cluster, backup_demo::Demo};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::{Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
use kube_runtime::controller::{Action, Controller};
use kube_runtime::finalizer::{Error as FinalizerError, Event, finalizer};
use kube_runtime::reflector::ObjectRef;
use kube_runtime::watcher;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A backup of the ConfigMap `target`, kept as `{name}-copy`.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "ops.example.com", version = "v1", kind = "Backup", namespaced)]
pub struct BackupSpec {
    /// The ConfigMap to copy.
    pub target: String,
}

type Error = FinalizerError<kube::Error>;

async fn reconcile(backup: Arc<Backup>, client: Arc<Client>) -> Result<Action, Error> {
    let namespace = backup.namespace().unwrap_or_default();
    let backups = Api::<Backup>::namespaced((*client).clone(), &namespace);
    let config_maps = Api::<ConfigMap>::namespaced((*client).clone(), &namespace);
    finalizer(&backups, "ops.example.com/copy", backup, |event| async {
        match event {
            Event::Apply(backup) => {
                let Some(target) = config_maps.get_opt(&backup.spec.target).await? else {
                    return Ok(Action::await_change());
                };
                let copy = serde_json::json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": { "name": copy_name(&backup), "ownerReferences": [backup.controller_owner_ref(&())] },
                    "data": target.data,
                });
                let apply = PatchParams::apply("backup-operator").force();
                config_maps.patch(&copy_name(&backup), &apply, &Patch::Apply(&copy)).await?;
                Ok(Action::await_change())
            }
            Event::Cleanup(backup) => {
                match config_maps.delete(&copy_name(&backup), &DeleteParams::default()).await {
                    Err(kube::Error::Api(status)) if status.code != 404 => Err(kube::Error::Api(status)),
                    _ => Ok(Action::await_change()),
                }
            }
        }
    })
    .await
}

fn error_policy(_backup: Arc<Backup>, _error: &Error, _client: Arc<Client>) -> Action {
    Action::requeue(Duration::from_secs(5))
}

fn copy_name(backup: &Backup) -> String {
    format!("{}-copy", backup.name_any())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    informer_examples::init_tracing();
    let cluster = Cluster::connect().await?;
    let (demo, namespace) = Demo::prepare(&cluster, Backup::crd()).await?;
    let client = cluster.client.clone();
    let backups = Api::<Backup>::namespaced(client.clone(), &namespace);
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), &namespace);
    let controller = Controller::new(backups, watcher::Config::default());
    let store = controller.store();
    controller
        .owns(config_maps.clone(), watcher::Config::default())
        .watches(config_maps, watcher::Config::default(), move |target| {
            let (name, namespace) = (target.name_any(), target.namespace());
            store
                .state()
                .into_iter()
                .filter(move |backup| backup.spec.target == name && backup.namespace() == namespace)
                .map(|backup| ObjectRef::from_obj(&*backup))
        })
        .graceful_shutdown_on(
            demo.clone()
                .run(client.clone(), namespace.clone(), new_backup),
        )
        .run(reconcile, error_policy, Arc::new(client))
        .for_each(|_| async {})
        .await;
    cluster.delete_namespace(&namespace).await?;
    demo.result()
}

fn new_backup(name: &str, target: &str) -> Backup {
    Backup::new(
        name,
        BackupSpec {
            target: target.into(),
        },
    )
}
