//! [`FleetController`]: one controller per cluster of a fleet, started as clusters
//! join and stopped as they leave.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;

use futures::StreamExt;
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::cluster::Cluster;
use super::set::{ClusterSet, cluster_key};
use crate::controller::{Context, Controller, ReplicationMode, Retry, Single};
use crate::scope::FactoryScope;
use crate::shard::ShardHandle;
use crate::workqueue::Action;

/// Builds a cluster's controller.
type Build<K, R> = Arc<dyn Fn(&Cluster) -> Controller<K, R> + Send + Sync>;

/// A controller of `K` over every cluster of a [`ClusterSet`], from
/// [`ClusterSet::controller`]: each member gets its own controller, built on its
/// factory by the closure you give, so owns, watches, finalizers, events and
/// read-your-writes work per cluster as in one. The reconcile is the one a
/// single-cluster controller takes; [`Context::cluster`] names the cluster, and the
/// context's client, listers and recorder are that cluster's.
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
/// on it. A sharded set's controllers must run alone (not leader-elected, not
/// sharded by key): a cluster whose built controller is not is left unworked, with an
/// error in the log.
pub struct FleetController<K, R = Single> {
    set: ClusterSet,
    build: Build<K, R>,
}

impl<K, R> fmt::Debug for FleetController<K, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetController")
            .field("type", &std::any::type_name::<K>())
            .field("set", &self.set)
            .finish_non_exhaustive()
    }
}

impl ClusterSet {
    /// A controller of `K` on every member: `build` makes a member's controller on
    /// its factory, e.g. `|cluster| Controller::new(cluster.factory()).owns::<ConfigMap>()`.
    pub fn controller<K, R>(
        &self,
        build: impl Fn(&Cluster) -> Controller<K, R> + Send + Sync + 'static,
    ) -> FleetController<K, R> {
        FleetController {
            set: self.clone(),
            build: Arc::new(build),
        }
    }
}

/// A cluster's controller, running.
struct Running {
    cluster: Cluster,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl<K, R> FleetController<K, R>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + fmt::Debug,
    K: Send + Sync + 'static,
    K::Scope: FactoryScope,
    R: ReplicationMode,
{
    /// Runs a controller on each member until `shutdown` completes: starting one as a
    /// cluster joins, stopping it as the cluster leaves (and starting a new one on a
    /// restarted cluster). A cluster's controller that fails (its factory was shut
    /// down) is logged with the cluster's name; the others go on. Returns once every
    /// cluster's controller has stopped.
    pub async fn run<Rec, Fut, E, P, S>(self, reconcile: Rec, error_policy: P, shutdown: S)
    where
        Rec: Fn(Arc<K>, Context<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
        P: Fn(&K, &E, &Context<K>) -> Retry + Send + Sync + 'static,
        S: Future<Output = ()> + Send,
    {
        let reconcile = Arc::new(reconcile);
        let error_policy = Arc::new(error_policy);
        let mut changes = self.set.watch();
        let mut running: BTreeMap<String, Running> = BTreeMap::new();
        // Controllers told to stop, ended before `run` returns.
        let mut stopping: Vec<(String, JoinHandle<()>)> = Vec::new();
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
                lapsed = before
                    .as_ref()
                    .is_some_and(|before| now >= before.renew_deadline || !before.active);
                before = Some(shard.assignment());
                members.retain(|cluster| shard.may_reconcile(&cluster_key(cluster.name())));
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
                    stopping.push((name, run.task));
                }
            }
            stopping.retain(|(_, task)| !task.is_finished());
            for cluster in members {
                if !running.contains_key(cluster.name())
                    && let Some(run) = self.start(&cluster, &reconcile, &error_policy)
                {
                    running.insert(cluster.name().to_owned(), run);
                }
            }
            tokio::select! {
                () = &mut shutdown => break,
                more = changes.changed() => if !more { break },
                Some(()) = shard_changes.next() => {}
            }
        }
        for (name, run) in running {
            let _ = run.stop.send(());
            stopping.push((name, run.task));
        }
        for (name, task) in stopping {
            if let Err(error) = task.await {
                tracing::error!(cluster = %name, %error, "a cluster's controller task failed");
            }
        }
    }

    /// Starts `cluster`'s controller; it stops when told or when the cluster retires.
    /// `None` for a controller a sharded set cannot run (not alone).
    fn start<Rec, Fut, E, P>(
        &self,
        cluster: &Cluster,
        reconcile: &Arc<Rec>,
        error_policy: &Arc<P>,
    ) -> Option<Running>
    where
        Rec: Fn(Arc<K>, Context<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
        P: Fn(&K, &E, &Context<K>) -> Retry + Send + Sync + 'static,
    {
        let mut controller = (self.build)(cluster).in_cluster(cluster.shared_name());
        if let Some(shard) = self.set.shard() {
            if !controller.runs_alone() {
                tracing::error!(cluster = %cluster.name(), "a sharded fleet's controllers must run alone (not leader-elected, not sharded by key); the cluster is left unworked");
                return None;
            }
            controller = controller.fenced_by_cluster(shard.clone(), cluster_key(cluster.name()));
        }
        let (stop, stopped) = oneshot::channel::<()>();
        let reconcile = Arc::clone(reconcile);
        let error_policy = Arc::clone(error_policy);
        let member = cluster.clone();
        let hold = cluster.hold();
        let task = tokio::spawn(async move {
            let _hold = hold;
            let name = member.name().to_owned();
            let until = async move {
                tokio::select! {
                    _ = stopped => {}
                    () = member.retired() => {}
                }
            };
            let ran = controller
                .run(
                    move |object, ctx| reconcile(object, ctx),
                    move |object, error, ctx| error_policy(object, error, ctx),
                    until,
                )
                .await;
            if let Err(error) = ran {
                tracing::error!(cluster = %name, %error, "the cluster's controller stopped");
            }
        });
        Some(Running {
            cluster: cluster.clone(),
            stop,
            task,
        })
    }
}
