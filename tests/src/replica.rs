//! What the replica binaries (`elector_replica`, `shard_replica`) share: arguments as
//! `name=value`, one event line per thing that happens, a client that may go through
//! a fault proxy, and a shutdown on SIGTERM.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
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
