//! A controller run as several replicas that split the work: sharding on Leases.
//!
//! Each replica (here a task of one process, each with its own client, shard member
//! and informers, as a Pod would have) runs the same controller built with
//! `Controller::sharded`. Every replica stamps its name on the ConfigMaps of its
//! shard. Three replicas share 30 ConfigMaps; then one leaves (its Lease is deleted,
//! the others take its ConfigMaps at once); then a fourth joins and takes about a
//! quarter, each ConfigMap only after its old owner let go of it.
//!
//! Which replica owns which ConfigMap comes from a fixed hash of its key (namespace
//! and name; the namespace is new on every run) over the members' names: a member
//! leaving moves only its own ConfigMaps, a member joining takes only from the
//! others.
//!
//! Run: `cargo run --bin sharded_controller` (uses your kubeconfig's cluster, or
//! starts an embedded control plane when none is configured).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use informer::key::ObjectKey;
use informer::prelude::*;
use informer::shard::{ShardConfig, ShardHandle, ShardMember};
use informer_examples::Cluster;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use tokio::sync::oneshot;

/// The annotation a replica stamps its name into.
const RECONCILED_BY: &str = "example.informer.dev/reconciled-by";

/// How many ConfigMaps the replicas share.
const CONFIG_MAPS: usize = 30;

/// One replica: a shard member and a sharded controller, until `stop`.
struct Replica {
    name: &'static str,
    shard: ShardHandle,
    stop: oneshot::Sender<()>,
    done: tokio::task::JoinHandle<anyhow::Result<()>>,
}

fn start_replica(name: &'static str, client: Client, namespace: &str) -> anyhow::Result<Replica> {
    let member = ShardMember::new(
        client.clone(),
        ShardConfig::new(namespace, "stamper")
            .identity(name)
            // Short timings, so the demo moves quickly (defaults: 15 s / 10 s / 2 s).
            .lease_duration(Duration::from_secs(4))
            .renew_deadline(Duration::from_secs(3))
            .retry_period(Duration::from_millis(500)),
    )?;
    let shard = member.handle();
    let factory = SharedInformerFactory::new(client, FactoryConfig::default().namespace(namespace));
    let controller = Controller::<ConfigMap>::sharded(&factory, &shard).workers(4);
    let (stop, stopped) = oneshot::channel::<()>();
    let done = tokio::spawn(async move {
        let (stop_member, member_stopped) = oneshot::channel::<()>();
        let membership = tokio::spawn(member.run(async {
            member_stopped.await.ok();
        }));
        let reconcile = move |cm: Arc<ConfigMap>, ctx: Context<ConfigMap>| async move {
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
            Ok::<_, kube::Error>(Action::Done)
        };
        // Shutdown: the controller stops its workers, then the member deletes its
        // Lease (it waits for running reconciles anyway).
        controller
            .run(reconcile, backoff, async {
                stopped.await.ok();
            })
            .await?;
        stop_member.send(()).ok();
        membership.await?;
        factory.shutdown().await;
        anyhow::Ok(())
    });
    Ok(Replica {
        name,
        shard,
        stop,
        done,
    })
}

/// Waits until every replica in `replicas` sees exactly them as members and every
/// ConfigMap carries the stamp of the replica that owns it; returns how many each
/// stamped.
async fn settled(
    api: &Api<ConfigMap>,
    replicas: &[&Replica],
) -> anyhow::Result<BTreeMap<&'static str, usize>> {
    let names: Vec<&str> = replicas.iter().map(|r| r.name).collect();
    loop {
        let agreed = replicas.iter().all(|r| r.shard.members() == names);
        let list = api.list(&ListParams::default()).await?;
        let mut stamped = BTreeMap::new();
        let mut all_owned = agreed;
        for cm in &list.items {
            let key = ObjectKey::of(cm);
            let stamp = cm.annotations().get(RECONCILED_BY).map(String::as_str);
            let owner = replicas
                .iter()
                .find(|r| r.shard.in_shard(&key))
                .map(|r| r.name);
            all_owned &= owner.is_some() && stamp == owner;
            if let Some(owner) = owner {
                *stamped.entry(owner).or_default() += 1;
            }
        }
        if all_owned {
            return Ok(stamped);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn shares(stamped: &BTreeMap<&str, usize>) -> String {
    stamped
        .iter()
        .map(|(name, count)| format!("{name} {count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    informer_examples::init_tracing();
    let cluster = Cluster::connect().await?;
    let namespace = cluster.create_namespace("sharded").await?;
    let api = Api::<ConfigMap>::namespaced(cluster.client.clone(), &namespace);
    for i in 0..CONFIG_MAPS {
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": { "name": format!("settings-{i}") },
            "data": { "mode": "fast" },
        }))?;
        api.create(&PostParams::default(), &cm).await?;
    }

    let one = start_replica("replica-1", cluster.client.clone(), &namespace)?;
    let two = start_replica("replica-2", cluster.client.clone(), &namespace)?;
    let three = start_replica("replica-3", cluster.client.clone(), &namespace)?;
    let stamped = settled(&api, &[&one, &two, &three]).await?;
    println!(
        "3 replicas share {CONFIG_MAPS} ConfigMaps: {}",
        shares(&stamped)
    );

    three.stop.send(()).ok();
    three.done.await??;
    let stamped = settled(&api, &[&one, &two]).await?;
    println!(
        "replica-3 left, the others took its ConfigMaps: {}",
        shares(&stamped)
    );

    let four = start_replica("replica-4", cluster.client.clone(), &namespace)?;
    let stamped = settled(&api, &[&one, &two, &four]).await?;
    println!("replica-4 joined and took its share: {}", shares(&stamped));

    for replica in [one, two, four] {
        replica.stop.send(()).ok();
        replica.done.await??;
    }
    cluster.delete_namespace(&namespace).await?;
    Ok(())
}
