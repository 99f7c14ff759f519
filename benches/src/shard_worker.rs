//! Scenario 11's worker: one replica of a controller sharded across processes (ours
//! only: kube-runtime has no sharding).
//!
//! ```text
//! bench-worker shard <namespace> <group> <identity> [<rule> <kind>]
//! ```
//!
//! It runs a [`ShardMember`] of `group` (its Lease in `namespace`, the default
//! timings: 15 s lease, 10 s renew deadline, 2 s retry period) deciding by `rule`
//! (`key`, the default, `uid` or `namespace`: [`ShardBy`]) and a sharded controller
//! on the objects of `namespace` (`kind`: `configmap`, the default, or `item`, scenario
//! 17's [`ShardItem`](crate::shard_item::ShardItem)) with [`WORKERS`] workers and a
//! trivial reconcile that records the key.
//!
//! **Covered keys.** A key is *covered* when this replica reconciled it since it last
//! became this replica's: whenever the shard's assignment changes, keys it may no
//! longer reconcile are forgotten, so that a key handed back later counts again only
//! once reconciled again (the controller queues such keys itself). Once every replica
//! reads the same members, their shards are disjoint, so the driver knows every
//! object is covered when the replicas' counts add up to the collection.
//!
//! What it prints on stdout, besides JSON reports:
//! - `state <covered> <members>` (members comma-separated, as this replica last read
//!   them) whenever either changes, looked at every [`STATE_EVERY`];
//! - on a line `report` on stdin, a [`WorkerReport::Shard`] JSON line: peak RSS
//!   (`VmHWM`), CPU and wall time since start, keys covered, and the objects its
//!   primary cache's reflector received (decoded, and dropped by the shard's filter
//!   before decoding);
//! - on a line `stop` on stdin, at the end of stdin or on SIGTERM it shuts down
//!   cleanly (the member lets its reconciles end and deletes its Lease, so the next
//!   group starts fresh) and prints its final report as the last line.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use informer::controller::Action;
use informer::controller::{Context, Controller, Primary, backoff};
use informer::factory::{FactoryConfig, Selection, SharedInformerFactory};
use informer::key::ObjectKey;
use informer::shard::{ShardBy, ShardConfig, ShardHandle, ShardMember};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio::sync::watch;

use crate::handshake::read_driver_line;
use crate::measure::{Mark, memory};
use crate::report::{ShardSample, WorkerReport};

/// Reconciles run at once in each replica.
pub const WORKERS: usize = 8;

/// How often the worker looks whether its `state` line changed.
pub const STATE_EVERY: Duration = Duration::from_millis(50);

/// The keys this replica reconciled since each became its own (see the
/// [module docs](self)), with the members they were last checked against.
struct Coverage {
    shard: ShardHandle,
    covered: Mutex<Covered>,
    reconciles: AtomicUsize,
}

/// The covered keys and the members of the assignment they were last checked
/// against, printed together: a `state` line must not pair a count with members it
/// was not checked under. (Between a change and its [`Coverage::forget_lost`], a
/// reconcile may add a key the newer assignment gave this replica; that happens only
/// when a member left, and the line still names it, so the driver waits on.)
#[derive(Default)]
struct Covered {
    /// Each key with the metadata it was reconciled with (its uid decides it, by uid).
    keys: HashMap<ObjectKey, ObjectMeta>,
    members: Vec<String>,
}

impl Coverage {
    /// Records a reconcile of `key`. Checked under the lock against the current
    /// assignment, so that a reconcile that started before a change
    /// [`forget_lost`](Self::forget_lost) applied does not undo it.
    fn reconciled(&self, key: ObjectKey, meta: &ObjectMeta) {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        let mut covered = self.covered.lock().expect("not poisoned");
        if self.shard.may_reconcile_object(meta) {
            covered.keys.insert(key, meta.clone());
        }
    }

    /// Forgets the keys this replica may not reconcile any more. The members are
    /// read first: should the assignment change meanwhile, the keys are checked
    /// against a newer one (and the next pass follows at once).
    fn forget_lost(&self) {
        let mut covered = self.covered.lock().expect("not poisoned");
        covered.members = self.shard.members();
        covered
            .keys
            .retain(|_, meta| self.shard.may_reconcile_object(meta));
    }

    /// The number of covered keys and the members they were checked against.
    fn state(&self) -> (usize, Vec<String>) {
        let covered = self.covered.lock().expect("not poisoned");
        (covered.keys.len(), covered.members.clone())
    }
}

/// What a shard worker runs: its group, identity and rule, on which objects.
#[derive(Debug, Clone)]
pub struct ShardArgs {
    /// The namespace of the objects and the Leases.
    pub namespace: String,
    /// The shard group.
    pub group: String,
    /// This replica's identity.
    pub identity: String,
    /// What decides a key's member.
    pub by: ShardBy,
    /// Scenario 17's custom resource (`item`) rather than ConfigMaps.
    pub items: bool,
}

/// Parses the worker's arguments after the mode: namespace, group, identity, and
/// optionally the rule and the kind.
pub fn parse_args(args: &[String]) -> anyhow::Result<ShardArgs> {
    let arg = |i: usize| -> anyhow::Result<&str> {
        args.get(i)
            .map(String::as_str)
            .with_context(|| format!("shard: missing argument {i}; usage in the module docs"))
    };
    let by = match args.get(4).map(String::as_str) {
        None | Some("key") => ShardBy::Key,
        Some("uid") => ShardBy::Uid,
        Some("namespace") => ShardBy::Namespace,
        Some(other) => anyhow::bail!("shard: no rule {other:?} (key, uid or namespace)"),
    };
    let items = match args.get(5).map(String::as_str) {
        None | Some("configmap") => false,
        Some("item") => true,
        Some(other) => anyhow::bail!("shard: no kind {other:?} (configmap or item)"),
    };
    Ok(ShardArgs {
        namespace: arg(1)?.to_owned(),
        group: arg(2)?.to_owned(),
        identity: arg(3)?.to_owned(),
        by,
        items,
    })
}

/// The worker's mode `shard` (see the [module docs](self)): runs until told to stop,
/// then returns its final report.
pub async fn run(args: &ShardArgs) -> anyhow::Result<ShardSample> {
    if args.items {
        run_on::<crate::shard_item::ShardItem>(args).await
    } else {
        run_on::<ConfigMap>(args).await
    }
}

/// [`run`], on the objects of kind `K`.
async fn run_on<K: Primary>(args: &ShardArgs) -> anyhow::Result<ShardSample> {
    let ShardArgs {
        namespace,
        group,
        identity,
        by,
        ..
    } = args;
    let (namespace, group, identity) = (namespace.as_str(), group.as_str(), identity.as_str());
    let client = kube::Client::try_default().await?;
    let baseline = memory();
    let mark = Mark::now();
    let stop = Stop::on_sigterm()?;

    let member = ShardMember::new(
        client.clone(),
        ShardConfig::new(namespace, group)
            .identity(identity)
            .shard_by(*by),
    )?;
    let shard = member.handle();
    let coverage = Arc::new(Coverage {
        shard: shard.clone(),
        covered: Mutex::default(),
        reconciles: AtomicUsize::new(0),
    });
    let factory = SharedInformerFactory::new(client, FactoryConfig::default().namespace(namespace));
    // The controller's primary informer, as the controller names its scope.
    // The controller's primary informer: the factory's namespace, filtered by the
    // shard under the name the controller gives the filter.
    let primary = factory.informer_for::<K>(
        Selection::default()
            .namespace(namespace)
            .filtered(format!("shard {group}/{identity}"), Arc::new(shard.clone())),
    );
    let sample = {
        let coverage = Arc::clone(&coverage);
        let identity = identity.to_owned();
        let selector_shard = shard.clone();
        move || {
            let stats = primary.reflector_stats().unwrap_or_default();
            let (covered, members) = coverage.state();
            ShardSample {
                identity: identity.clone(),
                members: members.len(),
                covered,
                reconciles: coverage.reconciles.load(Ordering::Relaxed),
                seconds: mark.wall_seconds(),
                cpu_seconds: mark.cpu_seconds(),
                baseline_rss_kib: baseline.rss_kib,
                peak_rss_kib: memory().peak_kib,
                rss_kib: memory().rss_kib,
                // Counted by the driver, at the replica's proxy.
                bytes_received: 0,
                objects_decoded: stats.list_items + stats.watch_events,
                objects_filtered_out: stats.filtered_out,
                selector_bytes: selector_shard.stats().server_selector_bytes.unwrap_or(0) as u64,
            }
        }
    };
    let forgetting = tokio::spawn(forget_lost_keys(Arc::clone(&coverage)));
    let states = tokio::spawn(say_states({
        let coverage = Arc::clone(&coverage);
        move || {
            let (covered, members) = coverage.state();
            format!("state {covered} {}", members.join(","))
        }
    }));
    let commands = tokio::spawn(obey_driver(stop.clone(), sample.clone()));

    let membership = tokio::spawn(member.run(stop.stopped()));
    let reconcile = {
        let coverage = Arc::clone(&coverage);
        move |object: Arc<K>, _ctx: Context<K>| {
            coverage.reconciled(ObjectKey::of(&*object), object.meta());
            std::future::ready(Ok::<_, Infallible>(Action::Done))
        }
    };
    let controller = Controller::<K>::sharded(&factory, &shard)
        .workers(WORKERS)
        .run(reconcile, backoff, stop.stopped())
        .await;
    // Should the controller have failed, the member leaves too.
    stop.stop();
    membership.await?;
    factory.shutdown().await;
    for task in [forgetting, states, commands] {
        task.abort();
    }
    controller?;
    Ok(sample())
}

/// Applies every change of the shard's assignment to the covered keys, until the
/// member is gone.
async fn forget_lost_keys(coverage: Arc<Coverage>) {
    let mut shard = coverage.shard.clone();
    while shard.changed().await {
        coverage.forget_lost();
    }
}

/// Prints `state()` (a `state` line) whenever it changes, looked at every
/// [`STATE_EVERY`].
pub(crate) async fn say_states(state: impl Fn() -> String) {
    let mut said = None;
    let mut tick = tokio::time::interval(STATE_EVERY);
    loop {
        tick.tick().await;
        let line = state();
        if said.as_ref() != Some(&line) {
            say(&line);
            said = Some(line);
        }
    }
}

/// A replica's stop: asked for by the driver (`stop`, or the end of stdin), by
/// SIGTERM, or by the replica itself. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Stop(watch::Sender<bool>);

impl Stop {
    /// A stop that SIGTERM also asks for.
    pub(crate) fn on_sigterm() -> anyhow::Result<Self> {
        let stop = Self(watch::Sender::new(false));
        let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        tokio::spawn({
            let stop = stop.clone();
            async move {
                sigterm.recv().await;
                stop.stop();
            }
        });
        Ok(stop)
    }

    /// Asks for the stop.
    pub(crate) fn stop(&self) {
        self.0.send_replace(true);
    }

    /// Completes once the stop was asked for: the shutdown future of whatever runs.
    pub(crate) fn stopped(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut stopped = self.0.subscribe();
        async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        }
    }
}

/// Answers the driver's lines on stdin: `report` prints a [`WorkerReport::Shard`] of
/// `sample()`, `stop` (or the end of stdin) stops the worker.
pub(crate) async fn obey_driver(stop: Stop, sample: impl Fn() -> ShardSample) {
    loop {
        // Empty only at the end of stdin (a line keeps its newline).
        let line = read_driver_line().await.unwrap_or_default();
        if line.is_empty() {
            stop.stop();
            return;
        }
        match line.trim() {
            "report" => match serde_json::to_string(&WorkerReport::Shard(sample())) {
                Ok(json) => say(&json),
                Err(error) => eprintln!("shard worker: cannot encode its report: {error}"),
            },
            "stop" => {
                stop.stop();
                return;
            }
            "" => {}
            other => eprintln!("shard worker: unknown command {other:?}"),
        }
    }
}

/// One line on stdout, flushed (the driver reads it at once).
pub(crate) fn say(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}
