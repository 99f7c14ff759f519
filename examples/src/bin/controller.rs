//! The classic controller, on the `Controller` builder: Pod changes queue the Pod's
//! key, workers reconcile from the cache, failures retry with rate-limited backoff,
//! a deleted Pod reaches the cleanup with its last state, shutdown is clean.
//!
//! This is client-go's `workqueue` example: two workers take keys, read the Pod from
//! the shared cache (never from the API server) and "sync" it. The Pod `flaky` fails
//! its first two syncs to show the retries (`ctx.retries()` is client-go's
//! `NumRequeues`).
//!
//! Run: `cargo run --bin controller` (uses your kubeconfig's cluster, or starts an
//! embedded control plane when none is configured). It creates `web` and `flaky`,
//! deletes `web`, and exits once both are dealt with, or at Ctrl-C.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use informer::prelude::*;
use informer_examples::Cluster;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};

/// Pods with this annotation fail that many syncs before succeeding.
const FAIL_TIMES: &str = "example.informer.dev/fail-times";

/// What the demo waits for; a real controller just runs until Ctrl-C.
type Outcomes = Arc<Mutex<HashSet<String>>>;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    informer_examples::init_tracing();
    let cluster = Cluster::connect().await?;
    let namespace = cluster.create_namespace("controller").await?;
    let factory = SharedInformerFactory::new(
        cluster.client.clone(),
        FactoryOptions::default().namespace(namespace.clone()),
    );
    let outcomes = Outcomes::default();

    let reconcile = {
        let outcomes = outcomes.clone();
        move |pod: Arc<Pod>, ctx: Context<Pod>| {
            let outcomes = outcomes.clone();
            async move {
                let fail_times: u32 = pod
                    .annotations()
                    .get(FAIL_TIMES)
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                let attempt = ctx.retries() + 1;
                if attempt <= fail_times {
                    println!(
                        "Error syncing Pod {} (attempt {attempt}); retrying",
                        pod.name_any()
                    );
                    return Err(format!("simulated failure of {}", pod.name_any()));
                }
                println!("Sync/Add/Update for Pod {}", pod.name_any());
                outcomes
                    .lock()
                    .expect("lock")
                    .insert(format!("synced {}", pod.name_any()));
                Ok(Action::Done)
            }
        }
    };
    let cleanup = {
        let outcomes = outcomes.clone();
        move |pod: Arc<Pod>, _ctx: Context<Pod>| {
            let outcomes = outcomes.clone();
            async move {
                println!("Pod {} does not exist anymore", pod.name_any());
                outcomes
                    .lock()
                    .expect("lock")
                    .insert(format!("gone {}", pod.name_any()));
                Ok::<_, String>(())
            }
        }
    };

    let pods = Api::<Pod>::namespaced(cluster.client.clone(), &namespace);
    let demo = async {
        let run = async {
            pods.create(&PostParams::default(), &pod("web", 0)?).await?;
            pods.create(&PostParams::default(), &pod("flaky", 2)?)
                .await?;
            wait_until(&outcomes, |o| {
                o.contains("synced flaky") && o.contains("synced web")
            })
            .await;
            pods.delete("web", &DeleteParams::default().grace_period(0))
                .await?;
            wait_until(&outcomes, |o| o.contains("gone web")).await;
            anyhow::Ok(())
        };
        tokio::select! {
            result = run => if let Err(error) = result { eprintln!("demo failed: {error}") },
            _ = tokio::signal::ctrl_c() => println!("Interrupted"),
        }
    };

    // Clean shutdown when `demo` completes: workers finish their current key, the
    // controller's handlers are removed; then the factory stops every informer.
    Controller::<Pod>::new(&factory)
        .workers(2)
        .cleanup(cleanup)
        .run(reconcile, backoff, demo)
        .await?;
    factory.shutdown().await;
    cluster.delete_namespace(&namespace).await?;
    Ok(())
}

async fn wait_until(outcomes: &Outcomes, done: impl Fn(&HashSet<String>) -> bool) {
    while !done(&outcomes.lock().expect("lock")) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn pod(name: &str, fail_times: u32) -> anyhow::Result<Pod> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": { "name": name, "annotations": { FAIL_TIMES: fail_times.to_string() } },
        "spec": { "containers": [{ "name": "main", "image": "registry.k8s.io/pause:3.9" }] },
    }))?)
}
