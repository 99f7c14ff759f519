//! One replica of a leader-elected controller, for the multi-process tests in
//! `tests/leader_election.rs`.
//!
//! It runs a [`LeaderElector`] and a [`Controller`] of the ConfigMaps in one
//! namespace with [`leader_election`](Controller::leader_election), and prints one
//! line per event to stdout: `<unix µs> <identity> <event> [detail]`, where the event
//! is `started`, `leading`, `following <leader or ->`, `stopped`,
//! `reconcile-start <key>`, `reconcile-end <key>` (also when a reconcile is
//! abandoned) or `exit`. SIGTERM shuts it down cleanly.
//!
//! Arguments, as `name=value`: `namespace` (of the Lease and the ConfigMaps), `lease`,
//! `identity`, `lease-ms`, `renew-ms`, `retry-ms`, `reconcile-ms` (how long each
//! reconcile takes), and optionally `server` (an API server URL replacing the
//! kubeconfig's, e.g. a fault proxy). The kubeconfig comes from `KUBECONFIG`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use informer::controller::{Context, Controller, backoff};
use informer::factory::{FactoryOptions, SharedInformerFactory};
use informer::leader::{LeaderElectionConfig, LeaderElector, Leadership};
use informer::workqueue::Action;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use tokio::sync::watch;

/// Prints one event line.
fn say(identity: &str, event: &str) {
    let micros = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    println!("{micros} {identity} {event}");
}

/// Prints `reconcile-end` when dropped: when the reconcile finished, or when the
/// controller abandoned it.
struct EndLine {
    identity: Arc<str>,
    key: String,
}

impl Drop for EndLine {
    fn drop(&mut self) {
        say(&self.identity, &format!("reconcile-end {}", self.key));
    }
}

fn millis(args: &HashMap<String, String>, name: &str) -> anyhow::Result<Duration> {
    let value = args
        .get(name)
        .with_context(|| format!("missing {name}=..."))?;
    Ok(Duration::from_millis(
        value.parse().with_context(|| format!("{name}={value}"))?,
    ))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(std::env::var("RUST_LOG").unwrap_or_else(|_| "informer=info".to_owned()))
        .init();
    let args: HashMap<String, String> = std::env::args()
        .skip(1)
        .filter_map(|arg| {
            arg.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
        })
        .collect();
    let arg = |name: &str| {
        args.get(name)
            .cloned()
            .with_context(|| format!("missing {name}=..."))
    };
    let namespace = arg("namespace")?;
    let identity: Arc<str> = Arc::from(arg("identity")?);
    let reconcile_time = millis(&args, "reconcile-ms")?;

    let mut config = kube::Config::infer().await?;
    if let Some(server) = args.get("server") {
        config.cluster_url = server.parse()?;
    }
    let client = kube::Client::try_from(config)?;

    let elector = LeaderElector::new(
        client.clone(),
        LeaderElectionConfig::default()
            .lease(namespace.clone(), arg("lease")?)
            .identity(identity.to_string())
            .lease_duration(millis(&args, "lease-ms")?)
            .renew_deadline(millis(&args, "renew-ms")?)
            .retry_period(millis(&args, "retry-ms")?),
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

    let (terminate, terminated) = watch::channel(false);
    tokio::spawn(async move {
        let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        sigterm.recv().await;
        terminate.send_replace(true);
    });
    let shutdown = move || {
        let mut terminated = terminated.clone();
        async move {
            let _ = terminated.wait_for(|t| *t).await;
        }
    };

    say(&identity, "started");
    let handle = elector.handle();
    let election = tokio::spawn(elector.run(shutdown()));
    let factory =
        SharedInformerFactory::new(client, FactoryOptions::default().namespace(namespace));
    let reconcile = {
        let identity = Arc::clone(&identity);
        move |cm: Arc<ConfigMap>, _ctx: Context<ConfigMap>| {
            let identity = Arc::clone(&identity);
            async move {
                let key = cm.name_any();
                say(&identity, &format!("reconcile-start {key}"));
                let _end = EndLine { identity, key };
                tokio::time::sleep(reconcile_time).await;
                Ok::<_, Infallible>(Action::RequeueAfter(Duration::from_millis(50)))
            }
        }
    };
    Controller::<ConfigMap>::new(&factory)
        .leader_election(handle)
        .workers(2)
        .run(reconcile, backoff, shutdown())
        .await?;
    election.await?;
    report.await?;
    factory.shutdown().await;
    say(&identity, "exit");
    Ok(())
}
