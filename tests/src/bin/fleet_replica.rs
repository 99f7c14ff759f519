//! One replica of a fleet controller sharded by cluster, for the multi-process test
//! in `tests/fleet.rs`.
//!
//! It runs a [`ShardMember`](informer::shard::ShardMember), a [`ClusterSet::sharded`] over the clusters named by
//! `clusters` (each reached with the kubeconfig of `KUBECONFIG`; cluster `<c>`'s
//! ConfigMaps are those of namespace `<namespace>-<c>`), and a fleet controller of
//! those ConfigMaps. It prints one line per event to stdout: `<unix µs> <identity>
//! <event> [detail]`: `started`, `members <a,b,...>`, `clusters <c1,c2,...>` (the
//! clusters it engaged, whenever they change), `reconcile-start <cluster>/<name>
//! <data.key>`, `reconcile-end <cluster>/<name>`, and at the end `exit`. SIGTERM shuts
//! it down cleanly.
//!
//! Arguments, as `name=value`: `namespace` (of the Leases), `group`, `identity`,
//! `lease-ms`, `renew-ms`, `retry-ms`, `handoff-ms`, `reconcile-ms` (each
//! reconcile's length; a ConfigMap with `data.requeue` is requeued 50 ms after each
//! reconcile, so it is nearly always being reconciled), `workers` (per cluster) and
//! `clusters` (comma-separated names).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use informer::controller::Action;
use informer::controller::{Context, Controller, backoff};
use informer::factory::FactoryConfig;
use informer::fleet::{ClusterContext, ClusterSet, Kubeconfigs};
use informer_tests::replica::{
    Args, EndLine, init_logging, on_sigterm, say, say_members, shard_member,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    init_logging();
    let args = Args::from_env();
    let namespace = args.get("namespace")?;
    let identity: Arc<str> = Arc::from(args.get("identity")?);
    let reconcile_time = args.millis("reconcile-ms")?;
    let workers: usize = args.get("workers")?.parse()?;
    let clusters = args.get("clusters")?;
    let client = args.client().await?;
    let config = kube::Config::infer().await?;

    let member = shard_member(&args, client)?;
    let shard = member.handle();
    let members_said = tokio::spawn(say_members(Arc::clone(&identity), member.handle()));

    let provider = clusters
        .split(',')
        .fold(Kubeconfigs::new(), |provider, name| {
            provider.config(name, config.clone())
        });
    let cluster_namespace = {
        let namespace = namespace.clone();
        move |cluster: &str| format!("{namespace}-{cluster}")
    };
    let set = ClusterSet::sharded(
        provider,
        move |cluster| FactoryConfig::default().namespace(cluster_namespace(cluster)),
        &shard,
    );
    let shutdown = on_sigterm();
    say(&identity, "started");
    let membership = tokio::spawn(member.run(shutdown()));
    let engaged_said = tokio::spawn({
        let (identity, set) = (Arc::clone(&identity), set.clone());
        async move {
            let mut changes = set.watch();
            let mut said = None;
            loop {
                let names = set.names();
                if said.as_ref() != Some(&names) {
                    say(&identity, &format!("clusters {}", names.join(",")));
                    said = Some(names);
                }
                if !changes.changed().await {
                    break;
                }
            }
        }
    });
    let running_set = tokio::spawn({
        let set = set.clone();
        let shutdown = shutdown();
        async move { set.run(shutdown).await }
    });

    let reconcile = {
        let identity = Arc::clone(&identity);
        move |cm: Arc<ConfigMap>, ctx: Context<ConfigMap>| {
            let identity = Arc::clone(&identity);
            async move {
                let key = format!("{}/{}", ctx.cluster().unwrap_or("?"), cm.name_any());
                let data = cm.data.clone().unwrap_or_default();
                let value = data.get("key").cloned().unwrap_or_default();
                say(&identity, &format!("reconcile-start {key} {value}"));
                let end = EndLine {
                    identity: Arc::clone(&identity),
                    key,
                };
                tokio::time::sleep(reconcile_time).await;
                drop(end);
                Ok::<_, Infallible>(if data.contains_key("requeue") {
                    Action::RequeueAfter(Duration::from_millis(50))
                } else {
                    Action::Done
                })
            }
        }
    };
    set.controller(move |cluster| Controller::<ConfigMap>::new(cluster.factory()).workers(workers))
        .run(reconcile, backoff, shutdown())
        .await;
    running_set.await??;
    membership.await?;
    members_said.await?;
    engaged_said.abort();
    say(&identity, "exit");
    Ok(())
}
