//! Quickstart: watch ConfigMaps in a namespace and print each change as it arrives.
//!
//! Creates `demo` and `demo2`, deletes `demo2` then `demo`, and prints
//! `Added: demo`, `Added: demo2`, `Deleted: demo2`, `Deleted: demo`.
//!
//! Run: `cargo run --bin quickstart` (uses your kubeconfig's cluster, or starts an
//! embedded control plane when none is configured).

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use informer_examples::Cluster;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};

const LABEL: &str = "app.kubernetes.io/name=informer-quickstart";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cluster = Cluster::connect().await?;
    let namespace = cluster.create_namespace("quickstart").await?;
    let api = Api::<ConfigMap>::namespaced(cluster.client.clone(), &namespace);

    // List, then watch from the list's resourceVersion: nothing is missed in between.
    let listed = api.list(&ListParams::default().labels(LABEL)).await?;
    let version = listed.metadata.resource_version.unwrap_or_default();
    let events = api
        .watch(&WatchParams::default().labels(LABEL).timeout(60), &version)
        .await?;
    let printer = tokio::spawn(async move {
        let mut events = events.boxed();
        let mut deleted = 0;
        while deleted < 2 {
            match events.try_next().await? {
                Some(WatchEvent::Added(cm)) => println!("Added: {}", cm.name_any()),
                Some(WatchEvent::Modified(cm)) => println!("Updated: {}", cm.name_any()),
                Some(WatchEvent::Deleted(cm)) => {
                    println!("Deleted: {}", cm.name_any());
                    deleted += 1;
                }
                Some(WatchEvent::Bookmark(_)) => {}
                Some(WatchEvent::Error(status)) => anyhow::bail!("watch error: {status:?}"),
                None => anyhow::bail!("the watch ended early"),
            }
        }
        anyhow::Ok(())
    });

    for name in ["demo", "demo2"] {
        api.create(&PostParams::default(), &labelled_config_map(name)?)
            .await?;
    }
    for name in ["demo2", "demo"] {
        api.delete(name, &DeleteParams::default()).await?;
    }

    tokio::time::timeout(Duration::from_secs(30), printer).await???;
    cluster.delete_namespace(&namespace).await?;
    Ok(())
}

fn labelled_config_map(name: &str) -> anyhow::Result<ConfigMap> {
    let (key, value) = LABEL.split_once('=').expect("LABEL is key=value");
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": { "name": name, "labels": { key: value } },
        "data": { "greeting": "hello" },
    }))?)
}
