//! What the replica binaries (`elector_replica`, `shard_replica`) share: arguments as
//! `name=value`, one event line per thing that happens, a client that may go through
//! a fault proxy, and a shutdown on SIGTERM.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use informer::controller::{Context, Fenced};
use informer::shard::{ShardConfig, ShardHandle, ShardMember};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams};
use tokio::sync::watch;

/// Prints one event line to stdout: `<unix µs> <identity> <event>`.
pub fn say(identity: &str, event: &str) {
    let micros = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    println!("{micros} {identity} {event}");
}

/// Prints `reconcile-end <key>` when dropped: when the reconcile finished, or when
/// the controller dropped it.
pub struct EndLine {
    /// The replica's identity.
    pub identity: Arc<str>,
    /// The reconciled key.
    pub key: String,
}

impl Drop for EndLine {
    fn drop(&mut self) {
        say(&self.identity, &format!("reconcile-end {}", self.key));
    }
}

/// A replica's `name=value` arguments.
pub struct Args(HashMap<String, String>);

impl Args {
    /// The process's arguments.
    pub fn from_env() -> Self {
        Self(
            std::env::args()
                .skip(1)
                .filter_map(|arg| {
                    arg.split_once('=')
                        .map(|(k, v)| (k.to_owned(), v.to_owned()))
                })
                .collect(),
        )
    }

    /// A required argument.
    pub fn get(&self, name: &str) -> anyhow::Result<String> {
        self.0
            .get(name)
            .cloned()
            .with_context(|| format!("missing {name}=..."))
    }

    /// A required argument in milliseconds.
    pub fn millis(&self, name: &str) -> anyhow::Result<Duration> {
        let value = self.get(name)?;
        Ok(Duration::from_millis(
            value.parse().with_context(|| format!("{name}={value}"))?,
        ))
    }

    /// Whether a `name=1` flag was given.
    pub fn flag(&self, name: &str) -> bool {
        self.0.get(name).is_some_and(|value| value == "1")
    }

    /// A client from `KUBECONFIG`, talking to `server=` instead if given (a fault
    /// proxy).
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        let mut config = kube::Config::infer().await?;
        if let Some(server) = self.0.get("server") {
            config.cluster_url = server.parse()?;
        }
        Ok(kube::Client::try_from(config)?)
    }
}

/// The shard member the arguments describe: its Lease in `namespace`, of group
/// `group`, as `identity`, with the timings `lease-ms`, `renew-ms`, `retry-ms` and
/// `handoff-ms`.
pub fn shard_member(args: &Args, client: kube::Client) -> anyhow::Result<ShardMember> {
    Ok(ShardMember::new(
        client,
        ShardConfig::new(args.get("namespace")?, args.get("group")?)
            .identity(args.get("identity")?)
            .lease_duration(args.millis("lease-ms")?)
            .renew_deadline(args.millis("renew-ms")?)
            .retry_period(args.millis("retry-ms")?)
            .handoff_timeout(args.millis("handoff-ms")?),
    )?)
}

/// Prints `members <a,b,...>` whenever the members `shard` reads change, until the
/// member is gone.
pub async fn say_members(identity: Arc<str>, mut shard: ShardHandle) {
    let mut said = Vec::new();
    while shard.changed().await {
        let members = shard.members();
        if members != said {
            say(&identity, &format!("members {}", members.join(",")));
            said = members;
        }
    }
}

/// Logs to stderr (`RUST_LOG`, default `informer=info`).
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(std::env::var("RUST_LOG").unwrap_or_else(|_| "informer=info".to_owned()))
        .init();
}

/// A source of shutdown futures that complete on SIGTERM.
pub fn on_sigterm() -> impl Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
{
    let (terminate, terminated) = watch::channel(false);
    tokio::spawn(async move {
        let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        sigterm.recv().await;
        terminate.send_replace(true);
    });
    move || {
        let mut terminated = terminated.clone();
        Box::pin(async move {
            let _ = terminated.wait_for(|t| *t).await;
        })
    }
}

/// What a reconcile of a replica run with `write=1` does after its wait: a merge
/// patch of `data.writer` (the replica's identity) and `data.seq` (a number of its
/// own, rising) through the context, fenced like every write through it, printed as
/// `wrote <key> <resourceVersion>`, `refused <key>` ([`Fenced`]) or `write-failed
/// <key> <error>`. The tests read who wrote what, and when, from the server.
pub async fn write_through(ctx: &Context<ConfigMap>, identity: &str, key: &str, seq: u64) {
    let patch = serde_json::json!({ "data": { "writer": identity, "seq": seq.to_string() } });
    let written = ctx
        .api::<ConfigMap>()
        .patch(key, &PatchParams::default(), &Patch::Merge(&patch))
        .await;
    match written {
        Ok(cm) => say(
            identity,
            &format!(
                "wrote {key} {}",
                cm.metadata.resource_version.unwrap_or_default()
            ),
        ),
        Err(error) if Fenced::find(&error).is_some() => say(identity, &format!("refused {key}")),
        Err(error) => say(identity, &format!("write-failed {key} {error}")),
    }
}
