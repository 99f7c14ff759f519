//! One replica of a sharded controller, for the multi-process tests in
//! `tests/sharding.rs`.
//!
//! It runs a [`ShardMember`](informer::shard::ShardMember) and a [`Controller::sharded`] of the ConfigMaps in one
//! namespace, and prints one line per event to stdout: `<unix µs> <identity> <event>
//! [detail]`, where the event is `started`, `members <a,b,...>` (whenever the members
//! it reads change), `reconcile-start <key> <data.key>`, `reconcile-end <key>` (also
//! when a reconcile is dropped), with `write=1` the outcome of each reconcile's write
//! (see [`write_through`](informer_tests::replica::write_through)), and at the end
//! `stats dropped=<n> refused=<n> events-fenced=<n>` (the member's dropped reconciles
//! and refused writes, and the Events its recorder did not send) and `exit`. SIGTERM
//! shuts it down cleanly.
//!
//! Arguments, as `name=value`: `namespace` (of the Leases and the ConfigMaps),
//! `group`, `identity`, `lease-ms`, `renew-ms`, `retry-ms`, `handoff-ms`,
//! `reconcile-ms` (how long each reconcile takes, unless the ConfigMap's
//! `data.sleep-ms` says otherwise; one with `data.requeue` is requeued 50 ms after
//! each reconcile, so it is nearly always being reconciled), `workers`, and optionally
//! `server` (an API server URL replacing the kubeconfig's, e.g. a fault proxy),
//! `write=1` (each reconcile writes its ConfigMap after its wait; with
//! `conditional=1`, if unchanged since read), `events=1`, `leak=1`, `leak-ms` (see
//! [`Extras`]) and `linger-ms` (how long to stay up
//! after stopping). The kubeconfig comes from `KUBECONFIG`.
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use informer::controller::Action;
use informer::controller::{Context, Controller, backoff};
use informer::factory::{FactoryConfig, SharedInformerFactory};
use informer_tests::replica::{
    Args, EndLine, Extras, init_logging, linger, on_sigterm, recorder, say, say_members,
    shard_member,
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
    let write = args.flag("write");
    let workers: usize = args.get("workers")?.parse()?;
    let client = args.client().await?;
    let extras = Extras::from_args(&args)?;
    let recorder = recorder(client.clone(), "replica-controller", &identity);

    let member = shard_member(&args, client.clone())?;
    let shard = member.handle();
    let report = tokio::spawn(say_members(Arc::clone(&identity), member.handle()));

    let shutdown = on_sigterm();
    say(&identity, "started");
    let membership = tokio::spawn(member.run(shutdown()));
    let factory = SharedInformerFactory::new(client, FactoryConfig::default().namespace(namespace));
    let writes = Arc::new(AtomicU64::new(0));
    let reconcile = {
        let identity = Arc::clone(&identity);
        move |cm: Arc<ConfigMap>, ctx: Context<ConfigMap>| {
            let identity = Arc::clone(&identity);
            let extras = extras.clone();
            let seq = writes.fetch_add(1, Ordering::Relaxed);
            async move {
                let key = cm.name_any();
                let data = cm.data.clone().unwrap_or_default();
                let value = data.get("key").cloned().unwrap_or_default();
                let sleep = data
                    .get("sleep-ms")
                    .and_then(|ms| ms.parse().ok())
                    .map_or(reconcile_time, Duration::from_millis);
                say(&identity, &format!("reconcile-start {key} {value}"));
                let end = EndLine {
                    identity: Arc::clone(&identity),
                    key: key.clone(),
                };
                tokio::time::sleep(sleep).await;
                extras.run(&ctx, &cm, &identity, seq);
                if write {
                    extras.write(&ctx, &identity, &cm, seq).await;
                }
                drop(end);
                Ok::<_, Infallible>(if data.contains_key("requeue") {
                    Action::RequeueAfter(Duration::from_millis(50))
                } else {
                    Action::Done
                })
            }
        }
    };
    Controller::<ConfigMap>::sharded(&factory, &shard)
        .workers(workers)
        .recorder(recorder.clone())
        .run(reconcile, backoff, shutdown())
        .await?;
    membership.await?;
    report.await?;
    factory.shutdown().await;
    linger(&args).await;
    recorder.shutdown().await;
    let stats = shard.stats();
    say(
        &identity,
        &format!(
            "stats dropped={} refused={} events-fenced={}",
            stats.dropped_reconciles,
            stats.refused_writes,
            recorder.stats().fenced
        ),
    );
    say(&identity, "exit");
    Ok(())
}
