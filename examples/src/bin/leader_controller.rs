//! A controller run as two replicas, of which one works: leader election on a Lease.
//!
//! Both replicas (here two tasks of one process, each with its own client, elector
//! and informers, as two Pods would have) run the same controller with
//! `Controller::leader_election`. The leader reconciles the ConfigMap `settings` by
//! stamping its own name on it; the standby keeps its cache warm and waits. When the
//! leader shuts down it releases the Lease, and the standby takes over at once and
//! stamps it again.
//!
//! Run: `cargo run --bin leader_controller` (uses your kubeconfig's cluster, or
//! starts an embedded control plane when none is configured).

use std::sync::Arc;
use std::time::Duration;

use informer::leader::{LeaderElectionConfig, LeaderElector, Leadership, LeadershipHandle};
use informer::prelude::*;
use informer_examples::Cluster;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use tokio::sync::{mpsc, oneshot};

/// The annotation the leader stamps its name into.
const RECONCILED_BY: &str = "example.informer.dev/reconciled-by";

/// One replica: an elector and a leader-elected controller, until `stop`.
struct Replica {
    leadership: LeadershipHandle,
    stop: oneshot::Sender<()>,
    done: tokio::task::JoinHandle<anyhow::Result<()>>,
}

fn start_replica(
    name: &'static str,
    client: Client,
    namespace: &str,
    stamped: mpsc::UnboundedSender<String>,
) -> anyhow::Result<Replica> {
    let elector = LeaderElector::new(
        client.clone(),
        LeaderElectionConfig::default()
            .lease(namespace, "settings-controller")
            .identity(name)
            // Kubernetes' defaults (15 s / 10 s / 2 s) but a shorter retry period,
            // so the demo's standby looks more often.
            .retry_period(Duration::from_millis(500)),
    )?;
    let leadership = elector.handle();
    let factory = SharedInformerFactory::new(client, FactoryConfig::default().namespace(namespace));
    let controller = Controller::<ConfigMap>::new(&factory).leader_election(elector.handle());
    let (stop, stopped) = oneshot::channel::<()>();
    let done = tokio::spawn(async move {
        let (stop_elector, elector_stopped) = oneshot::channel::<()>();
        let election = tokio::spawn(elector.run(async {
            elector_stopped.await.ok();
        }));
        let reconcile = move |cm: Arc<ConfigMap>, ctx: Context<ConfigMap>| {
            let stamped = stamped.clone();
            async move {
                if cm.annotations().get(RECONCILED_BY).map(String::as_str) == Some(name) {
                    return Ok(Action::Done);
                }
                let patch = serde_json::json!({
                    "metadata": { "annotations": { RECONCILED_BY: name } }
                });
                ctx.api::<ConfigMap>()
                    .patch(
                        &cm.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await?;
                let _ = stamped.send(format!("{name} stamped {}", cm.name_any()));
                Ok::<_, kube::Error>(Action::Done)
            }
        };
        // Shutdown: the controller stops its workers first, then the elector
        // releases the Lease (it waits for the controller's term to end anyway).
        controller
            .run(reconcile, backoff, async {
                stopped.await.ok();
            })
            .await?;
        stop_elector.send(()).ok();
        election.await?;
        factory.shutdown().await;
        anyhow::Ok(())
    });
    Ok(Replica {
        leadership,
        stop,
        done,
    })
}

/// Waits until `replica` reports `wanted`.
async fn until(replica: &mut LeadershipHandle, wanted: Leadership) -> anyhow::Result<()> {
    while replica.leadership() != wanted {
        replica
            .changed()
            .await
            .ok_or_else(|| anyhow::anyhow!("the elector stopped"))?;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    informer_examples::init_tracing();
    let cluster = Cluster::connect().await?;
    let namespace = cluster.create_namespace("leader").await?;
    let settings: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "settings" },
        "data": { "mode": "fast" },
    }))?;
    Api::<ConfigMap>::namespaced(cluster.client.clone(), &namespace)
        .create(&PostParams::default(), &settings)
        .await?;
    let (stamped_tx, mut stamped) = mpsc::unbounded_channel();
    let mut next_stamp = async || {
        stamped
            .recv()
            .await
            .ok_or_else(|| anyhow::anyhow!("no replica left"))
    };

    let mut first = start_replica(
        "replica-1",
        cluster.client.clone(),
        &namespace,
        stamped_tx.clone(),
    )?;
    until(&mut first.leadership, Leadership::Leading).await?;
    println!("replica-1 leads");
    println!("{}", next_stamp().await?);

    let mut second = start_replica("replica-2", cluster.client.clone(), &namespace, stamped_tx)?;
    let leader = Leadership::Following {
        leader: Some("replica-1".into()),
    };
    until(&mut second.leadership, leader).await?;
    println!("replica-2 follows replica-1");

    first.stop.send(()).ok();
    first.done.await??;
    println!("replica-1 stopped and released the lease");
    until(&mut second.leadership, Leadership::Leading).await?;
    println!("replica-2 leads");
    println!("{}", next_stamp().await?);

    second.stop.send(()).ok();
    second.done.await??;
    cluster.delete_namespace(&namespace).await?;
    Ok(())
}
