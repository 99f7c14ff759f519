//! [`FleetController`]: one controller per cluster of a fleet, started as clusters
//! join and stopped as they leave.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::by_cluster::ByCluster;
use super::cluster::Cluster;
use super::context::CLUSTER_LABEL;
use super::set::{AnySpread, ClusterSet, ShardedByCluster, Unsharded, cluster_key};
use crate::controller::{
    Context, Controller, ControllerError, Primary, ReconcileFn, ReplicationMode, Retry,
    erase_reconcile,
};
use crate::shard::ShardHandle;
use crate::workqueue::Action;

/// A cluster's controller, built: runs with the reconcile until the future resolves.
/// Its mode is erased, so one fleet controller runs controllers of any mode.
type Built<K> = Box<
    dyn FnOnce(
            ReconcileFn<K>,
            BoxFuture<'static, ()>,
        ) -> BoxFuture<'static, Result<(), ControllerError>>
        + Send,
>;

/// Builds a cluster's controller.
type Build<K> = Arc<dyn Fn(&Cluster) -> Built<K> + Send + Sync>;

/// `controller`, `cluster`'s, named by it (its spans and its context's label), ready
/// to run.
fn built<K: Primary, R: ReplicationMode>(
    controller: Controller<K, R>,
    cluster: &Cluster,
) -> Built<K> {
    let controller = controller
        .within_span(tracing::info_span!("fleet", cluster = %cluster.name()))
        .labelled(CLUSTER_LABEL, cluster.shared_name());
    Box::new(move |reconcile, until| Box::pin(controller.run_erased(reconcile, until)))
}

/// A controller of `K` over every cluster of a [`ClusterSet`], from
/// [`ClusterSet::controller`]: each member gets its own controller, built on its
/// factory by the closure you give, so owns, watches, finalizers, events and
/// read-your-writes work per cluster as in one. The reconcile is the one a
/// single-cluster controller takes; [`ClusterContext::cluster`](super::ClusterContext::cluster)
/// names the cluster (and so does a `fleet` span around each reconcile's span), and
/// the context's client, listers and recorder are that cluster's.
///
/// Each cluster has its own queue and workers: a cluster with a storm of changes
/// delays no other cluster's keys, and one that cannot be reached stalls nobody (its
/// informers retry on their own; [`FleetInformer::troubled`](super::FleetInformer::troubled)
/// names it).
///
/// Several replicas: build each cluster's controller with
/// [`leader_election`](Controller::leader_election) and one replica works the whole
/// fleet; or make the set [`sharded`](ClusterSet::sharded) and each replica works
/// (and caches) only its clusters, a cluster's reconciles fenced by the member's claim
/// on it ([`ShardedByCluster`]). A sharded set's controllers are built to run alone:
/// a leader-elected or key-sharded one does not compile.
pub struct FleetController<K> {
    set: ClusterSet<AnySpread>,
    build: Build<K>,
}

impl<K> fmt::Debug for FleetController<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetController")
            .field("type", &std::any::type_name::<K>())
            .field("set", &self.set)
            .finish_non_exhaustive()
    }
}

impl ClusterSet<Unsharded> {
    /// A controller of `K` on every member: `build` makes a member's controller on
    /// its factory, e.g. `|cluster| Controller::new(cluster.factory()).owns::<ConfigMap>()`,
    /// in any [`ReplicationMode`].
    pub fn controller<K: Primary, R: ReplicationMode>(
        &self,
        build: impl Fn(&Cluster) -> Controller<K, R> + Send + Sync + 'static,
    ) -> FleetController<K> {
        FleetController {
            set: self.with_spread(),
            build: Arc::new(move |cluster| built(build(cluster), cluster)),
        }
    }
}

impl ClusterSet<ShardedByCluster> {
    /// A controller of `K` on every cluster this replica is given: `build` makes a
    /// member's controller on its factory, e.g.
    /// `|cluster| Controller::new(cluster.factory()).owns::<ConfigMap>()`. It runs
    /// alone on its cluster (sharding by cluster already decides which replica works
    /// it), fenced by this replica's claim on the cluster.
    pub fn controller<K: Primary>(
        &self,
        build: impl Fn(&Cluster) -> Controller<K> + Send + Sync + 'static,
    ) -> FleetController<K> {
        let shard: ShardHandle = self
            .shard()
            .cloned()
            .expect("a set sharded by cluster has its shard member");
        FleetController {
            set: self.with_spread(),
            build: Arc::new(move |cluster| {
                let mode = ByCluster::new(shard.clone(), cluster_key(cluster.name()));
                built(build(cluster).replicated(mode), cluster)
            }),
        }
    }
}

/// A cluster's controller told to stop: resolves with the cluster's name once it has.
type Stopping = BoxFuture<'static, String>;

/// The end of `cluster`'s controller `task`, its failure logged.
fn ended(cluster: String, task: JoinHandle<()>) -> Stopping {
    Box::pin(async move {
        if let Err(error) = task.await {
            tracing::error!(%cluster, %error, "a cluster's controller task failed");
        }
        cluster
    })
}

/// A cluster's controller, running.
struct Running {
    cluster: Cluster,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl<K: Primary> FleetController<K> {
    /// Runs a controller on each member until `shutdown` completes: starting one as a
    /// cluster joins, stopping it as the cluster leaves (and starting a new one on a
    /// restarted cluster, or after a sharded set's claim on it lapsed, once the old
    /// one has stopped: its reconciles ended or were dropped, so no key is ever
    /// reconciled by both at once). A cluster's controller that fails (its factory
    /// was shut down) is logged with the cluster's name; the others go on. Returns
    /// once every cluster's controller has stopped.
    pub async fn run<Rec, Fut, E, P, S>(self, reconcile: Rec, error_policy: P, shutdown: S)
    where
        Rec: Fn(Arc<K>, Context<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
        P: Fn(&K, &E, &Context<K>) -> Retry + Send + Sync + 'static,
        S: Future<Output = ()> + Send,
    {
        let reconcile = erase_reconcile(reconcile, error_policy);
        let mut changes = self.set.watch();
        let mut running: BTreeMap<String, Running> = BTreeMap::new();
        // Controllers told to stop, by cluster: a cluster's next controller starts
        // once its last one ended; all have ended before `run` returns.
        let mut stopping: FuturesUnordered<Stopping> = FuturesUnordered::new();
        let mut still_stopping: BTreeMap<String, usize> = BTreeMap::new();
        let mut shutdown = pin!(shutdown);
        let shard = self.set.shard().cloned();
        let mut shard_changes = self.set.shard_changes();
        let mut before = shard.as_ref().map(ShardHandle::assignment);
        loop {
            let mut members = self.set.clusters();
            let mut lapsed = false;
            if let Some(shard) = &shard {
                // Only the clusters this member may work now. A lapse since the last
                // look (no renewal within the renew deadline) made them all
                // unworkable for a while: their controllers restart, so that the keys
                // dropped meanwhile are queued again.
                let now = Instant::now();
                lapsed = before.as_ref().is_some_and(|before| before.lapsed_by(now));
                before = Some(shard.assignment());
                // Clusters are shared out by name, whatever the member's `ShardBy`.
                members.retain(|cluster| {
                    shard.may_reconcile_hash(crate::shard::name_hash(&cluster_key(cluster.name())))
                });
            }
            let gone: Vec<String> = running
                .iter()
                .filter(|(name, run)| {
                    lapsed
                        || !members.iter().any(|cluster| {
                            cluster.name() == name.as_str() && cluster.same_member(&run.cluster)
                        })
                })
                .map(|(name, _)| name.clone())
                .collect();
            for name in gone {
                if let Some(run) = running.remove(&name) {
                    let _ = run.stop.send(());
                    *still_stopping.entry(name.clone()).or_default() += 1;
                    stopping.push(ended(name, run.task));
                }
            }
            for cluster in members {
                if !running.contains_key(cluster.name())
                    && !still_stopping.contains_key(cluster.name())
                {
                    let run = self.start(&cluster, &reconcile);
                    running.insert(cluster.name().to_owned(), run);
                }
            }
            tokio::select! {
                () = &mut shutdown => break,
                more = changes.changed() => if !more { break },
                Some(()) = shard_changes.next() => {}
                Some(name) = stopping.next() => {
                    if let Some(count) = still_stopping.get_mut(&name) {
                        *count -= 1;
                        if *count == 0 {
                            still_stopping.remove(&name);
                        }
                    }
                }
            }
        }
        for (name, run) in running {
            let _ = run.stop.send(());
            stopping.push(ended(name, run.task));
        }
        while stopping.next().await.is_some() {}
    }

    /// Starts `cluster`'s controller; it stops when told or when the cluster retires.
    fn start(&self, cluster: &Cluster, reconcile: &ReconcileFn<K>) -> Running {
        let controller = (self.build)(cluster);
        let (stop, stopped) = oneshot::channel::<()>();
        let reconcile = Arc::clone(reconcile);
        let member = cluster.clone();
        let in_use = cluster.in_use();
        let task = tokio::spawn(async move {
            let _in_use = in_use;
            let name = member.name().to_owned();
            let until = async move {
                tokio::select! {
                    _ = stopped => {}
                    () = member.retired() => {}
                }
            };
            let ran = controller(reconcile, Box::pin(until)).await;
            if let Err(error) = ran {
                tracing::error!(cluster = %name, %error, "the cluster's controller stopped");
            }
        });
        Running {
            cluster: cluster.clone(),
            stop,
            task,
        }
    }
}
