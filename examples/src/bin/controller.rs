//! The classic controller, on the `Controller` builder: Pod changes queue the Pod's
//! key, workers reconcile from the cache, failures retry with rate-limited backoff,
//! a deleted Pod reaches the cleanup with its last state, shutdown is clean.
//!
//! This is client-go's `workqueue` example: two workers take keys, read the Pod from
//! the shared cache (never from the API server) and "sync" it. The Pod `flaky` fails
//! its first two syncs to show the retries (`ctx.retries()` is client-go's
//! `NumRequeues`).
//!
//! The controller's Prometheus metrics (feature `metrics`: the workqueue's with
//! client-go's names, the reconciles' with controller-runtime's, the informers') are
//! served over HTTP at `/metrics`; at the end the demo scrapes its own endpoint and
//! prints what it shows about the queue and the reconciles.
//!
//! Run: `cargo run --bin controller` (uses your kubeconfig's cluster, or starts an
//! embedded control plane when none is configured). It creates `web` and `flaky`,
//! deletes `web`, and exits once both are dealt with, or at Ctrl-C.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use informer::metrics::Metrics;
use informer::metrics::prometheus_client::{encoding::text::encode, registry::Registry};
use informer::prelude::*;
use informer_examples::Cluster;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, PostParams};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Pods with this annotation fail that many syncs before succeeding.
const FAIL_TIMES: &str = "example.informer.dev/fail-times";

/// What the demo waits for; a real controller just runs until Ctrl-C.
type Outcomes = Arc<Mutex<HashSet<String>>>;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    informer_examples::init_tracing();
    let cluster = Cluster::connect().await?;
    let namespace = cluster.create_namespace("controller").await?;
    // Every informer of the factory, and every controller built on it, reports here.
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let factory = SharedInformerFactory::new(
        cluster.client.clone(),
        FactoryConfig::default()
            .namespace(namespace.clone())
            .metrics(&metrics),
    );
    let endpoint = TcpListener::bind("127.0.0.1:0").await?;
    let metrics_address = endpoint.local_addr()?;
    tokio::spawn(serve_metrics(endpoint, Arc::new(registry)));
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
            // What Prometheus would scrape (the queue's `done` follows a reconcile
            // by a moment: wait for the depth to settle at 0).
            let mut scraped = String::new();
            while !scraped.contains("workqueue_depth{name=\"pod-controller\"} 0") {
                tokio::time::sleep(Duration::from_millis(20)).await;
                scraped = scrape(metrics_address).await?;
            }
            for line in scraped.lines().filter(|l| {
                l.starts_with("workqueue_retries_total")
                    || l.starts_with("workqueue_depth")
                    || l.starts_with("controller_runtime_reconcile_total")
            }) {
                println!("{line}");
            }
            anyhow::Ok(())
        };
        tokio::select! {
            result = run => if let Err(error) = result { eprintln!("demo failed: {error}") },
            () = informer::shutdown_signal() => println!("Interrupted"),
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

/// Serves the registry in Prometheus' text format to every request. A real operator
/// mounts this as `/metrics` on the HTTP server it already runs (axum, hyper...);
/// this one avoids a web framework for the demo.
async fn serve_metrics(listener: TcpListener, registry: Arc<Registry>) {
    while let Ok((mut connection, _)) = listener.accept().await {
        let registry = Arc::clone(&registry);
        tokio::spawn(async move {
            let mut request = [0; 1024];
            let _ = connection.read(&mut request).await; // any path: the one endpoint
            let mut body = String::new();
            encode(&mut body, &registry).expect("text encoding into a String");
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/openmetrics-text; version=1.0.0; \
                 charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = connection.write_all(head.as_bytes()).await;
            let _ = connection.write_all(body.as_bytes()).await;
        });
    }
}

/// `GET /metrics` from `address`, as Prometheus would; the response body.
async fn scrape(address: std::net::SocketAddr) -> anyhow::Result<String> {
    let mut connection = TcpStream::connect(address).await?;
    connection
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await?;
    let mut response = String::new();
    connection.read_to_string(&mut response).await?;
    let (_head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow::anyhow!("not an HTTP response: {response}"))?;
    Ok(body.to_owned())
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
