//! Scenario 14's worker: a fleet of clusters (ours only: kube-runtime has no fleet).
//!
//! ```text
//! bench-worker fleet       <objects> <start|join> <namespace>...
//! bench-worker fleet-shard <lease-namespace> <group> <identity> <namespace>...
//! ```
//!
//! Each `<namespace>` is one cluster of the fleet, named after it: every cluster is
//! reached with the same kubeconfig (`KUBECONFIG`, the one bench control plane) and
//! its factory's options confine it to its namespace
//! (`FactoryConfig::default().namespace(..)`), so N namespaces stand for N clusters,
//! each with its own client, factory, informer, queue and workers. A
//! [`FleetController`] of ConfigMaps runs over the
//! set, [`WORKERS`] workers per cluster, with a trivial reconcile that records the
//! key (scenario 11's).
//!
//! `fleet` runs to completion and prints a [`WorkerReport::Fleet`](crate::report::WorkerReport::Fleet):
//! - `start`: a [`ClusterSet`] over every cluster
//!   (`Kubeconfigs::new().config(namespace, config)` each); it measures from before the
//!   set starts until every cluster's `<objects>` keys were reconciled (peak RSS, RSS
//!   then, CPU);
//! - `join`: the same, but the set's provider is [`Sent`], memberships the worker
//!   sends: every cluster but the last first, and once their objects were all
//!   reconciled, all of them: the time from that send until the last cluster's
//!   informer has synced and until its `<objects>` keys were reconciled, the CPU and
//!   the RSS growth meanwhile ([`JoinSample`]).
//!
//! `fleet-shard` is one replica of the fleet sharded by cluster: a [`ShardMember`] of
//! `group` (its Lease in `lease-namespace`, default timings) and
//! [`ClusterSet::sharded`] over the clusters, speaking the shard worker's protocol
//! ([`crate::shard_worker`]; the driver's side is `driver/replicas.rs`): a line
//! `state <covered> <members> <clusters>` whenever it changes (the keys reconciled in
//! the clusters it engages now, its group's members, the clusters it engages:
//! `set.names()`), a [`WorkerReport::Shard`](crate::report::WorkerReport::Shard) on `report`, a clean stop on `stop`.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::StreamExt;
use futures::stream::BoxStream;
use informer::controller::Action;
use informer::controller::{Context, Controller, backoff};
use informer::factory::FactoryConfig;
use informer::fleet::{
    Cluster, ClusterConfig, ClusterContext, ClusterProvider, ClusterSet, FleetController,
    Kubeconfigs, Membership,
};
use informer::shard::{ShardConfig, ShardMember};
use informer::shared_informer::wait_for_cache_sync;
use k8s_openapi::api::core::v1::ConfigMap;
use tokio::sync::{mpsc, watch};

use crate::measure::{Mark, memory, reset_peak};
use crate::report::{FleetSample, JoinSample, ShardSample};
use crate::shard_worker::{Stop, obey_driver, say_states};

/// Reconciles run at once in each cluster (scenario 11's per replica).
pub const WORKERS: usize = crate::shard_worker::WORKERS;

/// How long the fleet may take to reconcile everything before the worker gives up.
const WAIT: Duration = Duration::from_secs(600);

/// A provider whose memberships the worker sends through a channel: how a cluster
/// joins a running set here (a real fleet's would follow an inventory).
pub struct Sent(mpsc::UnboundedReceiver<Membership>);

impl ClusterProvider for Sent {
    fn memberships(self: Box<Self>) -> BoxStream<'static, Membership> {
        futures::stream::unfold(self.0, |mut sent| async move {
            sent.recv().await.map(|membership| (membership, sent))
        })
        .boxed()
    }
}

/// Clusters `names`, each reached with `config` (a membership for [`Sent`]).
fn membership(config: &kube::Config, names: &[String]) -> Membership {
    Membership {
        clusters: names
            .iter()
            // The same source each time: a cluster sent again does not restart.
            .map(|name| (name.clone(), ClusterConfig::new(config.clone(), name)))
            .collect(),
        ..Membership::default()
    }
}

/// Clusters `names`, each reached with `config`: a fixed fleet.
fn kubeconfigs(config: &kube::Config, names: &[String]) -> Kubeconfigs {
    names.iter().fold(Kubeconfigs::new(), |fleet, name| {
        fleet.config(name.clone(), config.clone())
    })
}

/// Each cluster's factory watches its own namespace, the cluster's name.
fn options(cluster: &str) -> FactoryConfig {
    FactoryConfig::default().namespace(cluster)
}

/// The keys reconciled in each cluster since it joined, and when each cluster was
/// complete.
struct Coverage<S> {
    set: ClusterSet<S>,
    /// Objects in each cluster (`fleet` mode): a cluster with that many keys
    /// reconciled is complete.
    objects: Option<usize>,
    covered: Mutex<Covered>,
    reconciles: AtomicUsize,
    /// How many clusters are complete.
    complete: watch::Sender<usize>,
}

#[derive(Default)]
struct Covered {
    /// By cluster, the keys reconciled since it joined.
    keys: HashMap<String, HashSet<String>>,
    /// The clusters engaged when `keys` was last checked against the set (sorted),
    /// printed with the count they were checked under.
    clusters: Vec<String>,
    /// When each complete cluster's last key was reconciled.
    complete_at: HashMap<String, Instant>,
}

impl<S> Coverage<S> {
    fn new(set: &ClusterSet<S>, objects: Option<usize>) -> Arc<Self> {
        Arc::new(Self {
            set: set.clone(),
            objects,
            covered: Mutex::default(),
            reconciles: AtomicUsize::new(0),
            complete: watch::Sender::new(0),
        })
    }

    /// Records a reconcile of `name` in `cluster`. Checked under the lock against the
    /// set's members, so that a reconcile in a cluster that has just left does not
    /// count after [`forget_left`](Self::forget_left).
    fn reconciled(&self, cluster: &str, name: &str) {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        let mut covered = self.covered.lock().expect("not poisoned");
        if self.set.cluster(cluster).is_none() {
            return;
        }
        let keys = covered.keys.entry(cluster.to_owned()).or_default();
        if keys.insert(name.to_owned()) && Some(keys.len()) == self.objects {
            covered
                .complete_at
                .insert(cluster.to_owned(), Instant::now());
            self.complete.send_modify(|complete| *complete += 1);
        }
    }

    /// Forgets the keys of clusters no longer engaged (a cluster moved to another
    /// replica counts again only once reconciled again).
    fn forget_left(&self) {
        let mut covered = self.covered.lock().expect("not poisoned");
        let clusters = self.set.names();
        covered.keys.retain(|cluster, _| clusters.contains(cluster));
        covered.clusters = clusters;
    }

    /// The keys covered in the clusters engaged, and those clusters.
    fn state(&self) -> (usize, Vec<String>) {
        let covered = self.covered.lock().expect("not poisoned");
        let count = covered.keys.values().map(HashSet::len).sum();
        (count, covered.clusters.clone())
    }

    /// Waits until `clusters` clusters are complete.
    async fn wait_complete(&self, clusters: usize) -> anyhow::Result<()> {
        let mut complete = self.complete.subscribe();
        tokio::time::timeout(WAIT, complete.wait_for(|&n| n >= clusters))
            .await
            .with_context(|| format!("fleet: {clusters} clusters not reconciled in {WAIT:?}"))??;
        Ok(())
    }

    /// When `cluster` was complete.
    fn complete_at(&self, cluster: &str) -> Option<Instant> {
        let covered = self.covered.lock().expect("not poisoned");
        covered.complete_at.get(cluster).copied()
    }
}

/// Applies every change of the set's members to the covered keys.
async fn forget_left<S>(coverage: Arc<Coverage<S>>) {
    let mut changes = coverage.set.watch();
    loop {
        coverage.forget_left();
        if !changes.changed().await {
            return;
        }
    }
}

/// A cluster's controller of ConfigMaps: [`WORKERS`] workers.
fn cluster_controller(cluster: &Cluster) -> Controller<ConfigMap> {
    Controller::new(cluster.factory()).workers(WORKERS)
}

/// Runs `controller` (the fleet controller of ConfigMaps on a set, with
/// [`cluster_controller`]s) until `shutdown`, each reconcile recorded in `coverage`.
async fn run_controller<S: Send + Sync + 'static>(
    controller: FleetController<ConfigMap>,
    coverage: &Arc<Coverage<S>>,
    shutdown: impl Future<Output = ()> + Send,
) {
    let coverage = Arc::clone(coverage);
    let reconcile = move |cm: Arc<ConfigMap>, ctx: Context<ConfigMap>| {
        coverage.reconciled(
            ctx.cluster().unwrap_or_default(),
            cm.metadata.name.as_deref().unwrap_or_default(),
        );
        std::future::ready(Ok::<_, Infallible>(Action::Done))
    };
    controller.run(reconcile, backoff, shutdown).await;
}

/// Parses `fleet`'s arguments after the mode: objects per cluster, `start` or
/// `join`, the clusters' namespaces.
pub fn parse_args(args: &[String]) -> anyhow::Result<(usize, bool, &[String])> {
    let usage = "fleet <objects> <start|join> <namespace>...";
    let (Some(objects), Some(how), namespaces) = (args.get(1), args.get(2), args.get(3..)) else {
        bail!("usage: {usage}");
    };
    let join = match how.as_str() {
        "start" => false,
        "join" => true,
        other => bail!("fleet: {other:?} is neither start nor join; usage: {usage}"),
    };
    match namespaces {
        Some(namespaces) if !namespaces.is_empty() => Ok((objects.parse()?, join, namespaces)),
        _ => bail!("fleet: no cluster; usage: {usage}"),
    }
}

/// The worker's mode `fleet` (see the [module docs](self)).
pub async fn run(objects: usize, join: bool, namespaces: &[String]) -> anyhow::Result<FleetSample> {
    let config = kube::Config::infer().await?;
    let (first, joining) = match namespaces.split_last() {
        Some((last, first)) if join && !first.is_empty() => (first, Some(last)),
        _ if join => bail!("fleet: joining needs two clusters at least"),
        _ => (namespaces, None),
    };
    let baseline = memory();
    let mark = Mark::now();
    let (send, sent) = mpsc::unbounded_channel();
    let set = if join {
        send.send(membership(&config, first))?;
        ClusterSet::with_config(Sent(sent), options)
    } else {
        ClusterSet::with_config(kubeconfigs(&config, namespaces), options)
    };
    // Every member's informer of ConfigMaps (its factory's, which its controller
    // shares) exists from the moment it joins: the joining one's sync is waited for.
    set.informer::<ConfigMap>();
    let coverage = Coverage::new(&set, Some(objects));
    // Nothing is measured after the report: the worker exits without stopping them.
    tokio::spawn({
        let set = set.clone();
        async move { set.run(std::future::pending()).await }
    });
    tokio::spawn({
        let (set, coverage) = (set.clone(), Arc::clone(&coverage));
        async move {
            run_controller(
                set.controller(cluster_controller),
                &coverage,
                std::future::pending(),
            )
            .await
        }
    });
    coverage.wait_complete(first.len()).await?;
    let reconciled_seconds = mark.wall_seconds();
    let (user_seconds, sys_seconds) = mark.user_sys_seconds();
    let reconciled = memory();
    let mut sample = FleetSample {
        clusters: first.len(),
        objects: objects * first.len(),
        reconciled_seconds,
        cpu_seconds: user_seconds + sys_seconds,
        user_seconds,
        sys_seconds,
        reconciles: coverage.reconciles.load(Ordering::Relaxed),
        baseline_rss_kib: baseline.rss_kib,
        peak_rss_kib: reconciled.peak_kib,
        rss_kib: reconciled.rss_kib,
        join: None,
    };
    let Some(last) = joining else {
        return Ok(sample);
    };

    // The last cluster joins the reconciled others.
    reset_peak()?;
    let before = memory();
    let mark = Mark::now();
    let added = Instant::now();
    send.send(membership(&config, namespaces))?;
    let synced = tokio::time::timeout(WAIT, async {
        set.wait_until(|names| names.contains(last)).await;
        let cluster = set
            .cluster(last)
            .context("fleet: the joining cluster left")?;
        let informer = cluster.factory().informer::<ConfigMap>();
        wait_for_cache_sync(&[&informer]).await;
        anyhow::Ok(added.elapsed())
    })
    .await
    .context("fleet: the joining cluster did not sync")??;
    coverage.wait_complete(namespaces.len()).await?;
    let complete = coverage
        .complete_at(last)
        .context("fleet: the joining cluster is complete but has no time")?;
    let after = memory();
    sample.join = Some(JoinSample {
        objects,
        synced_seconds: synced.as_secs_f64(),
        reconciled_seconds: complete.duration_since(added).as_secs_f64(),
        cpu_seconds: mark.cpu_seconds(),
        rss_before_kib: before.rss_kib,
        rss_after_kib: after.rss_kib,
        peak_rss_kib: after.peak_kib,
    });
    Ok(sample)
}

/// Parses `fleet-shard`'s arguments after the mode: the Leases' namespace, group,
/// identity, the clusters' namespaces.
pub fn parse_replica_args(args: &[String]) -> anyhow::Result<(&str, &str, &str, &[String])> {
    match args {
        [_, lease_namespace, group, identity, namespaces @ ..] if !namespaces.is_empty() => {
            Ok((lease_namespace, group, identity, namespaces))
        }
        _ => bail!("usage: fleet-shard <lease-namespace> <group> <identity> <namespace>..."),
    }
}

/// The worker's mode `fleet-shard` (see the [module docs](self)): runs until told to
/// stop, then returns its final report.
pub async fn replica(
    lease_namespace: &str,
    group: &str,
    identity: &str,
    namespaces: &[String],
) -> anyhow::Result<ShardSample> {
    let client = kube::Client::try_default().await?;
    let config = kube::Config::infer().await?;
    let baseline = memory();
    let mark = Mark::now();
    let stop = Stop::on_sigterm()?;
    let member = ShardMember::new(
        client,
        ShardConfig::new(lease_namespace, group).identity(identity),
    )?;
    let shard = member.handle();
    let set = ClusterSet::sharded(kubeconfigs(&config, namespaces), options, &shard);
    let coverage = Coverage::new(&set, None);
    let sample = {
        let (coverage, shard) = (Arc::clone(&coverage), shard.clone());
        let identity = identity.to_owned();
        move || ShardSample {
            identity: identity.clone(),
            members: shard.members().len(),
            covered: coverage.state().0,
            reconciles: coverage.reconciles.load(Ordering::Relaxed),
            seconds: mark.wall_seconds(),
            cpu_seconds: mark.cpu_seconds(),
            baseline_rss_kib: baseline.rss_kib,
            peak_rss_kib: memory().peak_kib,
            rss_kib: memory().rss_kib,
            bytes_received: 0,
            // The fleet's caches are per cluster: not counted here.
            objects_decoded: 0,
            objects_filtered_out: 0,
            // Sharded by cluster: no shard selector.
            selector_bytes: 0,
        }
    };
    let forgetting = tokio::spawn(forget_left(Arc::clone(&coverage)));
    let states = tokio::spawn(say_states({
        let coverage = Arc::clone(&coverage);
        move || {
            let (covered, clusters) = coverage.state();
            format!(
                "state {covered} {} {}",
                shard.members().join(","),
                clusters.join(",")
            )
        }
    }));
    let commands = tokio::spawn(obey_driver(stop.clone(), sample.clone()));
    let membership = tokio::spawn(member.run(stop.stopped()));
    let running = tokio::spawn({
        let (set, stopped) = (set.clone(), stop.stopped());
        async move { set.run(stopped).await }
    });
    run_controller(
        set.controller(cluster_controller),
        &coverage,
        stop.stopped(),
    )
    .await;
    // Should the controller have returned first, the rest stops too.
    stop.stop();
    running.await??;
    membership.await?;
    for task in [forgetting, states, commands] {
        task.abort();
    }
    Ok(sample())
}
