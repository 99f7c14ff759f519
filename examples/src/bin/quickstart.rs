//! Quickstart: an informer on ConfigMaps, with a handler printing what happens.
//!
//! Creates `demo` and `demo2`, deletes `demo2` then `demo`, and prints
//! `Added: demo`, `Added: demo2`, `Deleted: demo2`, `Deleted: demo` as the informer
//! delivers the events.
//!
//! Run: `cargo run --bin quickstart` (uses your kubeconfig's cluster, or starts an
//! embedded control plane when none is configured).

use std::sync::Arc;
use std::time::Duration;

use informer::shared_informer::{
    ResourceEventHandlerFns, SharedIndexInformer, wait_for_cache_sync,
};
use informer_examples::Cluster;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use tokio::sync::Semaphore;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    informer_examples::init_tracing();
    let cluster = Cluster::connect().await?;
    let namespace = cluster.create_namespace("quickstart").await?;
    let api = Api::<ConfigMap>::namespaced(cluster.client.clone(), &namespace);

    // One informer: it lists the namespace's ConfigMaps, then watches for changes.
    let informer = SharedIndexInformer::new(api.clone());
    let deletions = Arc::new(Semaphore::new(0));
    let deleted = deletions.clone();
    informer.add_event_handler(
        ResourceEventHandlerFns::new()
            .on_add(|cm: &Arc<ConfigMap>, _initial_list| println!("Added: {}", cm.name_any()))
            .on_update(|_old, cm: &Arc<ConfigMap>| println!("Updated: {}", cm.name_any()))
            .on_delete(move |gone| {
                println!("Deleted: {}", gone.object().name_any());
                deleted.add_permits(1);
            }),
    )?;

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn({
        let informer = informer.clone();
        async move {
            informer
                .run(async {
                    let _ = stopped.await;
                })
                .await
        }
    });
    wait_for_cache_sync(&[&informer]).await;

    for name in ["demo", "demo2"] {
        api.create(&PostParams::default(), &config_map(name)?)
            .await?;
    }
    for name in ["demo2", "demo"] {
        api.delete(name, &DeleteParams::default()).await?;
    }

    // Wait for the handler to see both deletions, then stop the informer.
    let _both = tokio::time::timeout(Duration::from_secs(30), deletions.acquire_many(2)).await??;
    let _ = stop.send(());
    running.await??;
    cluster.delete_namespace(&namespace).await?;
    Ok(())
}

fn config_map(name: &str) -> anyhow::Result<ConfigMap> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": { "name": name },
        "data": { "greeting": "hello" },
    }))?)
}
