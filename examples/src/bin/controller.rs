//! The classic controller, typed: informer handlers enqueue keys, workers reconcile
//! from the lister, failures retry with rate-limited backoff, Ctrl-C stops cleanly.
//!
//! This is client-go's `workqueue` example: a Pod informer whose add, update and
//! delete handlers put the Pod's key on a rate-limited queue; two workers take keys,
//! read the Pod from the cache (never from the API server) and "sync" it, or notice
//! that it is gone. The Pod `flaky` fails its first two syncs to show the retries.
//!
//! Run: `cargo run --bin controller` (uses your kubeconfig's cluster, or starts an
//! embedded control plane when none is configured). It creates `web` and `flaky`,
//! deletes `web`, and exits once both are dealt with, or at Ctrl-C.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use informer::key::ObjectKey;
use informer::lister::LookupError;
use informer::shared_informer::{
    ResourceEventHandlerFns, SharedIndexInformer, wait_for_cache_sync,
};
use informer::workqueue::{Action, Runner, RunnerConfig, WorkQueue};
use informer_examples::Cluster;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use tokio::sync::Notify;

/// Pods with this annotation fail that many syncs before succeeding.
const FAIL_TIMES: &str = "example.informer.dev/fail-times";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    informer_examples::init_tracing();
    let cluster = Cluster::connect().await?;
    let namespace = cluster.create_namespace("controller").await?;
    let pods = Api::<Pod>::namespaced(cluster.client.clone(), &namespace);

    let informer = SharedIndexInformer::new(pods.clone());
    let queue = WorkQueue::<ObjectKey>::new();
    // Handlers only enqueue keys: the work happens in the workers.
    informer.add_event_handler(
        ResourceEventHandlerFns::new()
            .on_add({
                let queue = queue.clone();
                move |pod: &Arc<Pod>, _| queue.add(ObjectKey::of(pod.as_ref()))
            })
            .on_update({
                let queue = queue.clone();
                move |_, pod: &Arc<Pod>| queue.add(ObjectKey::of(pod.as_ref()))
            })
            .on_delete({
                let queue = queue.clone();
                move |gone| queue.add(ObjectKey::of(gone.object().as_ref()))
            }),
    )?;

    // What the demo waits for; a real controller just runs until Ctrl-C.
    let outcomes = Arc::new(Mutex::new(HashSet::<String>::new()));
    let progress = Arc::new(Notify::new());

    let lister = informer.lister();
    let reconcile = {
        let (queue, outcomes, progress) = (queue.clone(), outcomes.clone(), progress.clone());
        move |key: ObjectKey| {
            let (lister, queue) = (lister.clone(), queue.clone());
            let (outcomes, progress) = (outcomes.clone(), progress.clone());
            async move {
                let namespace = key.namespace.as_deref().unwrap_or_default();
                let outcome = match lister.namespaced(namespace).get(&key.name) {
                    Ok(pod) => {
                        let fail_times: u32 = pod
                            .annotations()
                            .get(FAIL_TIMES)
                            .and_then(|n| n.parse().ok())
                            .unwrap_or(0);
                        let attempt = queue.num_requeues(&key) + 1;
                        if attempt <= fail_times {
                            println!(
                                "Error syncing Pod {} (attempt {attempt}); retrying",
                                key.name
                            );
                            return Err(format!("simulated failure of {}", key.name));
                        }
                        println!("Sync/Add/Update for Pod {}", key.name);
                        format!("synced {}", key.name)
                    }
                    Err(LookupError::NotFound { .. }) => {
                        println!("Pod {} does not exist anymore", key.name);
                        format!("gone {}", key.name)
                    }
                    // The cache is still filling (not here: the workers start after
                    // the sync): the Pod may exist, so try again later.
                    Err(not_synced) => return Err(not_synced.to_string()),
                };
                outcomes.lock().expect("lock").insert(outcome);
                progress.notify_one();
                Ok::<_, String>(Action::Done)
            }
        }
    };

    let (stop, stopped) = tokio::sync::watch::channel(false);
    let wait_stop = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    let informer_task = tokio::spawn({
        let informer = informer.clone();
        let stopped = wait_stop(stopped.clone());
        async move { informer.run(stopped).await }
    });
    wait_for_cache_sync(&[&informer]).await;
    let workers = tokio::spawn(
        Runner::with_config(queue.clone(), RunnerConfig::default().workers(2))
            .run(reconcile, wait_stop(stopped.clone())),
    );

    pods.create(&PostParams::default(), &pod("web", 0)?).await?;
    pods.create(&PostParams::default(), &pod("flaky", 2)?)
        .await?;
    let done = |outcomes: &HashSet<String>| {
        outcomes.contains("synced flaky") && outcomes.contains("synced web")
    };
    wait_until(&outcomes, &progress, done).await;
    pods.delete("web", &DeleteParams::default().grace_period(0))
        .await?;

    tokio::select! {
        () = wait_until(&outcomes, &progress, |o| o.contains("gone web")) => {}
        _ = tokio::signal::ctrl_c() => println!("Interrupted"),
    }
    // Clean shutdown: workers finish their current key, the informer stops, every
    // task and handler thread ends.
    stop.send_replace(true);
    workers.await?;
    informer_task.await??;
    cluster.delete_namespace(&namespace).await?;
    Ok(())
}

async fn wait_until(
    outcomes: &Mutex<HashSet<String>>,
    progress: &Notify,
    done: impl Fn(&HashSet<String>) -> bool,
) {
    loop {
        let notified = progress.notified();
        if done(&outcomes.lock().expect("lock")) {
            return;
        }
        notified.await;
    }
}

fn pod(name: &str, fail_times: u32) -> anyhow::Result<Pod> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": { "name": name, "annotations": { FAIL_TIMES: fail_times.to_string() } },
        "spec": { "containers": [{ "name": "main", "image": "registry.k8s.io/pause:3.9" }] },
    }))?)
}
