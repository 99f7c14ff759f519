//! The Backup operator on our `Controller`: a `Backup` keeps an owned copy of its
//! target ConfigMap, follows the target's changes, and deletes the copy when it goes.
//!
//! - `owns::<ConfigMap>()`: a change to a copy reconciles the Backup that controls it.
//! - `watches(..)`: a change to a target reconciles the Backups whose `by_target` index
//!   names it; a typed index query, no scan.
//! - Reads come from the shared caches (listers), never the API server; the copy is
//!   written through the context, so a quick requeue never sees a stale cache.
//! - `finalizer(..)` + `cleanup(..)`: the copy is deleted even when the Backup was
//!   deleted while the operator was down.
//!
//! Its twin on kube-runtime is `backup_operator_kube_runtime`; both are driven by the
//! same script (`informer_examples::backup_demo`). Run: `cargo run --bin backup_operator`.

use std::sync::Arc;

use informer::prelude::*;
use informer_examples::{Cluster, backup_demo::Demo};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A backup of the ConfigMap `target`, kept as `{name}-copy`.
#[derive(CustomResource, Informable, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "ops.example.com", version = "v1", kind = "Backup", namespaced)]
#[informable(index(name = "by_target", path = "spec.target"))]
pub struct BackupSpec {
    /// The ConfigMap to copy.
    pub target: String,
}

async fn reconcile(backup: Arc<Backup>, ctx: Context<Backup>) -> Result<Action, kube::Error> {
    let namespace = backup.namespace().unwrap_or_default();
    let targets = ctx.lister::<ConfigMap>().namespaced(&namespace);
    let Ok(target) = targets.get(&backup.spec.target) else {
        return Ok(Action::Done); // its creation will bring us back
    };
    let copy = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": copy_name(&backup), "ownerReferences": [ctx.controller_reference(&backup)] },
        "data": target.data,
    });
    let apply = PatchParams::apply("backup-operator").force();
    ctx.api::<ConfigMap>()
        .patch(&copy_name(&backup), &apply, &Patch::Apply(&copy))
        .await?;
    Ok(Action::Done)
}

async fn cleanup(backup: Arc<Backup>, ctx: Context<Backup>) -> Result<(), kube::Error> {
    match ctx
        .api::<ConfigMap>()
        .delete(&copy_name(&backup), &DeleteParams::default())
        .await
    {
        Err(kube::Error::Api(status)) if status.code != 404 => Err(kube::Error::Api(status)),
        _ => Ok(()),
    }
}

fn copy_name(backup: &Backup) -> String {
    format!("{}-copy", backup.name_any())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    informer_examples::init_tracing();
    let cluster = Cluster::connect().await?;
    let (demo, namespace) = Demo::prepare(&cluster, Backup::crd()).await?;
    let factory = SharedInformerFactory::new(
        cluster.client.clone(),
        FactoryConfig::default().namespace(namespace.clone()),
    );
    factory.informable::<Backup>();
    Controller::<Backup>::new(&factory)
        .owns::<ConfigMap>()
        .watches(|target: &ConfigMap, backups: &Lister<Backup>| {
            backups
                .namespaced(&target.namespace().unwrap_or_default())
                .by_target(target.name_any())
        })
        .finalizer("ops.example.com/copy")
        .cleanup(cleanup)
        .run(
            reconcile,
            backoff,
            demo.clone()
                .run(cluster.client.clone(), namespace.clone(), new_backup),
        )
        .await?;
    factory.shutdown().await;
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
