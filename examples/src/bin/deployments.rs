//! Deployments: a factory, an informer with handlers, and a lister.
//!
//! Creates two Deployments, starts a `SharedInformerFactory` with a Deployment
//! informer whose handler prints adds, spec changes and deletes, lists the namespace's
//! Deployments from the cache once it has synced (and heard of both), then scales one
//! and deletes the other and prints what the handler sees. The two initial adds come
//! in the order of the server's list, which the API does not fix.
//!
//! Run: `cargo run --bin deployments` (uses your kubeconfig's cluster, or starts an
//! embedded control plane when none is configured).

use std::sync::Arc;
use std::time::Duration;

use informer::factory::{FactoryConfig, SharedInformerFactory};
use informer::shared_informer::{ResourceEventHandlerFns, wait_for_cache_sync};
use informer_examples::Cluster;
use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use tokio::sync::Semaphore;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    informer_examples::init_tracing();
    let cluster = Cluster::connect().await?;
    let namespace = cluster.create_namespace("deployments").await?;
    let api = Api::<Deployment>::namespaced(cluster.client.clone(), &namespace);
    for name in ["api", "web"] {
        api.create(&PostParams::default(), &deployment(name)?)
            .await?;
    }

    let factory = SharedInformerFactory::new(
        cluster.client.clone(),
        FactoryConfig::default()
            .namespace(namespace.clone())
            // Cache less: nobody here reads annotations (managedFields are left out
            // by default).
            .transform_metadata(|meta| meta.annotations = None),
    );
    let deployments = factory.informer::<Deployment>();
    let (additions, deletions) = (Arc::new(Semaphore::new(0)), Arc::new(Semaphore::new(0)));
    let (added, deleted) = (additions.clone(), deletions.clone());
    let registration = deployments.add_event_handler(
        ResourceEventHandlerFns::new()
            .on_add(move |d: &Arc<Deployment>, _| {
                println!("Added: {}", d.name_any());
                added.add_permits(1);
            })
            .on_update(|old: &Arc<Deployment>, new: &Arc<Deployment>| {
                // Status updates do not change the generation: print spec changes only.
                if old.metadata.generation != new.metadata.generation {
                    println!(
                        "Updated: {} (replicas {} -> {})",
                        new.name_any(),
                        replicas(old),
                        replicas(new)
                    );
                }
            })
            .on_delete(move |gone| {
                println!("Deleted: {}", gone.object().name_any());
                deleted.add_permits(1);
            }),
    )?;

    factory.start();
    // Says which informer did not sync in time, and why (its last list error).
    factory
        .wait_for_cache_sync_within(Duration::from_secs(60))
        .await?;
    wait_for_cache_sync(&[&registration]).await;
    // Synced means the first list is in, and that list (at resourceVersion "0", as
    // client-go asks) comes from the API server's watch cache, which may not hold yet
    // a Deployment created a moment ago: that one then arrives by the watch, as an
    // add. Wait for both, as a demo that knows what to expect can.
    let _added = tokio::time::timeout(Duration::from_secs(30), additions.acquire_many(2)).await??;

    // Reads come from the cache: no request to the API server.
    let mut cached = deployments.lister().namespaced(&namespace).list_all();
    cached.sort_by_key(|d| d.name_any());
    let names: Vec<String> = cached.iter().map(|d| d.name_any()).collect();
    println!("Listed {} deployments: {}", cached.len(), names.join(", "));

    let scale = serde_json::json!({ "spec": { "replicas": 3 } });
    api.patch("web", &PatchParams::default(), &Patch::Merge(&scale))
        .await?;
    api.delete("api", &DeleteParams::default()).await?;

    let _deleted = tokio::time::timeout(Duration::from_secs(30), deletions.acquire()).await??;
    factory.shutdown().await;
    cluster.delete_namespace(&namespace).await?;
    Ok(())
}

fn replicas(deployment: &Deployment) -> i32 {
    deployment.spec.replicas.unwrap_or(1)
}

fn deployment(name: &str) -> anyhow::Result<Deployment> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": { "name": name },
        "spec": {
            "replicas": 1,
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": { "containers": [{ "name": "main", "image": "registry.k8s.io/pause:3.9" }] },
            },
        },
    }))?)
}
