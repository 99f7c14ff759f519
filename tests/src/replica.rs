//! What the replica binaries (`elector_replica`, `shard_replica`) share: arguments as
//! `name=value`, one event line per thing that happens, a client that may go through
//! a fault proxy, and a shutdown on SIGTERM.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use informer::controller::{Context, Fenced};
use informer::events::{EventSpec, Recorder, RecorderConfig, Reporter};
use informer::shard::{ShardBy, ShardConfig, ShardHandle, ShardMember};
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
    // `shard-by=uid` or `shard-by=namespace`; by key without one.
    let shard_by = match args.get("shard-by").ok().as_deref() {
        None | Some("key") => ShardBy::Key,
        Some("uid") => ShardBy::Uid,
        Some("namespace") => ShardBy::Namespace,
        Some(other) => anyhow::bail!("shard-by={other}: key, uid or namespace"),
    };
    Ok(ShardMember::new(
        client,
        ShardConfig::new(args.get("namespace")?, args.get("group")?)
            .identity(args.get("identity")?)
            .lease_duration(args.millis("lease-ms")?)
            .renew_deadline(args.millis("renew-ms")?)
            .retry_period(args.millis("retry-ms")?)
            .handoff_timeout(args.millis("handoff-ms")?)
            .shard_by(shard_by),
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
    say_written(identity, key, written);
}

/// [`write_through`], conditional on `seen` being unchanged since this reconcile read
/// it ([`TrackedApi::if_unchanged`](informer::controller::TrackedApi::if_unchanged)):
/// the server refuses it with 409 Conflict (printed `conflict <key>`) once anyone
/// wrote the ConfigMap since.
pub async fn write_if_unchanged(
    ctx: &Context<ConfigMap>,
    identity: &str,
    seen: &ConfigMap,
    seq: u64,
) {
    let key = seen.metadata.name.as_deref().unwrap_or_default();
    let patch = serde_json::json!({ "data": { "writer": identity, "seq": seq.to_string() } });
    let written = ctx
        .api::<ConfigMap>()
        .if_unchanged(seen)
        .patch(&PatchParams::default(), &Patch::Merge(&patch))
        .await;
    match written {
        Err(kube::Error::Api(status)) if status.code == 409 => {
            say(identity, &format!("conflict {key}"))
        }
        written => say_written(identity, key, written),
    }
}

/// Prints the outcome of a write of `key` (see [`write_through`]).
fn say_written(identity: &str, key: &str, written: kube::Result<ConfigMap>) {
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

/// What a reconcile of a replica does beside its write, as its arguments say:
/// `events=1` publishes an Event about the object through the context (the same one
/// each time, so they fold into a series whose count the recorder patches every
/// flush), and `leak=1` spawns a task that keeps the context after the reconcile
/// returned and writes through it every 500 ms for `leak-ms` (default 5000), once
/// per key: a context kept by a task the user spawned. `conditional=1` makes the
/// reconcile's own write conditional (see [`write`](Self::write)).
#[derive(Debug, Clone)]
pub struct Extras {
    events: bool,
    leak: Option<Duration>,
    /// The keys a task was spawned for already: one per key, however often it is
    /// reconciled.
    leaked: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    /// `conditional=1`: [`write`](Self::write) is [`write_if_unchanged`].
    conditional: bool,
}

impl Extras {
    /// The extras `args` ask for.
    pub fn from_args(args: &Args) -> anyhow::Result<Self> {
        let leak = if args.flag("leak") {
            Some(args.millis("leak-ms").unwrap_or(Duration::from_secs(5)))
        } else {
            None
        };
        Ok(Self {
            events: args.flag("events"),
            leak,
            leaked: Arc::default(),
            conditional: args.flag("conditional"),
        })
    }

    /// The reconcile's write of `cm` (`write=1`): [`write_through`], or with
    /// `conditional=1` [`write_if_unchanged`].
    pub async fn write(&self, ctx: &Context<ConfigMap>, identity: &str, cm: &ConfigMap, seq: u64) {
        if self.conditional {
            write_if_unchanged(ctx, identity, cm, seq).await;
        } else {
            let key = cm.metadata.name.as_deref().unwrap_or_default();
            write_through(ctx, identity, key, seq).await;
        }
    }

    /// Does them for `cm`, reconciled by `identity` with `ctx`.
    pub fn run(&self, ctx: &Context<ConfigMap>, cm: &ConfigMap, identity: &Arc<str>, seq: u64) {
        if self.events {
            ctx.publish(cm, EventSpec::normal("Reconciled", "Reconcile"));
        }
        let key = cm.metadata.name.clone().unwrap_or_default();
        if let Some(leak) = self.leak
            && self.leaked.lock().unwrap().insert(key.clone())
        {
            let ctx = ctx.clone();
            let identity = Arc::clone(identity);
            tokio::spawn(async move {
                let until = tokio::time::Instant::now() + leak;
                while tokio::time::Instant::now() < until {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    write_through(&ctx, &identity, &key, seq).await;
                }
            });
        }
    }
}

/// The replica's event recorder: reporting as `controller`, instance `identity` (the
/// tests tell the replicas' Events apart by it), flushing series counts every 500 ms.
pub fn recorder(client: kube::Client, controller: &str, identity: &str) -> Recorder {
    Recorder::with_config(
        client,
        Reporter::with_instance(controller, identity),
        RecorderConfig::default().flush_interval(Duration::from_millis(500)),
    )
}

/// With `linger-ms`, waits that long before the replica exits: its spawned tasks
/// (leaked contexts) go on meanwhile, after the controller and member stopped.
pub async fn linger(args: &Args) {
    if let Ok(linger) = args.millis("linger-ms") {
        tokio::time::sleep(linger).await;
    }
}
