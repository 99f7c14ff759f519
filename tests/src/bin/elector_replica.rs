//! One replica of a leader-elected controller, for the multi-process tests in
//! `tests/leader_election.rs`.
//!
//! It runs a [`LeaderElector`] and a [`Controller`] of the ConfigMaps in one
//! namespace with [`leader_election`](Controller::leader_election), and prints one
//! line per event to stdout: `<unix µs> <identity> <event> [detail]`, where the event
//! is `started`, `leading`, `following <leader or ->`, `stopped`,
//! `reconcile-start <key>`, `reconcile-end <key>` (also when a reconcile is
//! abandoned), with `write=1` the outcome of each reconcile's write (see
//! [`write_through`](informer_tests::replica::write_through)), and at the end `stats
//! dropped=<n> refused=<n> events-fenced=<n>` (the election's dropped reconciles and
//! refused writes, and the Events its recorder did not send because their term had
//! ended) and `exit`. SIGTERM shuts it down cleanly.
//!
//! Arguments, as `name=value`: `namespace` (of the Lease and the ConfigMaps), `lease`,
//! `identity`, `lease-ms`, `renew-ms`, `retry-ms`, `reconcile-ms` (how long each
//! reconcile takes), and optionally `server` (an API server URL replacing the
//! kubeconfig's, e.g. a fault proxy), `workers` (default 2), `write=1` (each
//! reconcile writes its ConfigMap after its wait; with `conditional=1`, if unchanged
//! since read), `events=1`, `leak=1`, `leak-ms` (see
//! [`Extras`]) and `linger-ms` (how long to stay up
//! after stopping). The kubeconfig comes from `KUBECONFIG`; the replica's Events
//! report as instance `identity`.
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use informer::controller::Action;
use informer::controller::{Context, Controller, backoff};
use informer::factory::{FactoryConfig, SharedInformerFactory};
use informer::leader::{LeaderElectionConfig, LeaderElector, Leadership};
use informer_tests::replica::{
    Args, EndLine, Extras, init_logging, linger, on_sigterm, recorder, say,
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
    let workers = args.get("workers").map_or(Ok(2), |w| w.parse())?;
    let client = args.client().await?;
    let extras = Extras::from_args(&args)?;
    let recorder = recorder(client.clone(), "replica-controller", &identity);

    let elector = LeaderElector::new(
        client.clone(),
        LeaderElectionConfig::default()
            .lease(namespace.clone(), args.get("lease")?)
            .identity(identity.to_string())
            .lease_duration(args.millis("lease-ms")?)
            .renew_deadline(args.millis("renew-ms")?)
            .retry_period(args.millis("retry-ms")?),
    )?;
    let mut changes = elector.handle();
    let report = tokio::spawn({
        let identity = Arc::clone(&identity);
        async move {
            while let Some(leadership) = changes.changed().await {
                match leadership {
                    Leadership::Leading => say(&identity, "leading"),
                    Leadership::Following { leader } => say(
                        &identity,
                        &format!("following {}", leader.as_deref().unwrap_or("-")),
                    ),
                    Leadership::Stopped => say(&identity, "stopped"),
                }
            }
        }
    });

    let shutdown = on_sigterm();

    say(&identity, "started");
    let handle = elector.handle();
    let stats = elector.handle();
    let election = tokio::spawn(elector.run(shutdown()));
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
                say(&identity, &format!("reconcile-start {key}"));
                let end = EndLine {
                    identity: Arc::clone(&identity),
                    key: key.clone(),
                };
                tokio::time::sleep(reconcile_time).await;
                extras.run(&ctx, &cm, &identity, seq);
                if write {
                    extras.write(&ctx, &identity, &cm, seq).await;
                }
                drop(end);
                Ok::<_, Infallible>(Action::RequeueAfter(Duration::from_millis(50)))
            }
        }
    };
    Controller::<ConfigMap>::new(&factory)
        .leader_election(handle)
        .workers(workers)
        .recorder(recorder.clone())
        .run(reconcile, backoff, shutdown())
        .await?;
    election.await?;
    report.await?;
    factory.shutdown().await;
    linger(&args).await;
    recorder.shutdown().await;
    say(
        &identity,
        &format!(
            "stats dropped={} refused={} events-fenced={}",
            stats.dropped_reconciles(),
            stats.refused_writes(),
            recorder.stats().fenced
        ),
    );
    say(&identity, "exit");
    Ok(())
}
