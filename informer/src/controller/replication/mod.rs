//! How a controller runs as several replicas, chosen by the builder and fixed by the
//! controller's type ([`ReplicationMode`]), and how the run room drives the workers
//! in each mode (the `leading` and `sharding` submodules).

mod fence;
mod leading;
mod sharding;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

pub use fence::Fenced;
pub(crate) use fence::{Fence, fenced_client};

use crate::controller::primaries::Primaries;
use crate::controller::reasons::Reasons;
use crate::key::ObjectKey;
use crate::leader::LeadershipHandle;
use crate::shard::ShardHandle;
use crate::workqueue::{Action, Runner};

/// The mode of a controller that runs alone: every replica reconciles every key (run
/// one replica). The default of [`Controller`](super::Controller).
#[derive(Debug)]
pub enum Single {}

/// The mode of a controller that reconciles only while its replica leads an election
/// (see [`Controller::leader_election`](super::Controller::leader_election)).
#[derive(Debug)]
pub enum LeaderElected {}

/// The mode of a controller whose replicas share the keys, each reconciling its own
/// shard (see [`Controller::sharded`](super::Controller::sharded)).
#[derive(Debug)]
pub enum Sharded {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Single {}
    impl Sealed for super::LeaderElected {}
    impl Sealed for super::Sharded {}
}

/// A controller's replication mode, the `R` of [`Controller<K, R>`](super::Controller):
/// alone ([`Single`]), one replica at a time ([`LeaderElected`]), or each replica on
/// its own shard of the keys ([`Sharded`]). Sealed: the three are all there is.
///
/// The builder chooses it: [`Controller::new`](super::Controller::new) is [`Single`],
/// [`leader_election`](super::Controller::leader_election) turns it into
/// [`LeaderElected`], and [`Controller::sharded`](super::Controller::sharded) builds a
/// [`Sharded`] one. A sharded controller has no `leader_election` method, so the
/// combination (meaningless: sharding already decides which replica works which key)
/// does not compile:
///
/// ```compile_fail,E0599
/// # use informer::controller::Controller;
/// # use informer::factory::SharedInformerFactory;
/// # use informer::leader::LeadershipHandle;
/// # use informer::shard::ShardHandle;
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # fn demo(factory: &SharedInformerFactory, shard: &ShardHandle, leadership: LeadershipHandle) {
/// let controller = Controller::<ConfigMap>::sharded(factory, shard).leader_election(leadership);
/// # }
/// ```
pub trait ReplicationMode: sealed::Sealed + Send + 'static {}
impl ReplicationMode for Single {}
impl ReplicationMode for LeaderElected {}
impl ReplicationMode for Sharded {}

/// The mode with what it runs on, as the run room needs it.
#[derive(Clone)]
pub(crate) enum Replication {
    /// Alone.
    Single,
    /// While leading the election this handle belongs to.
    LeaderElected(LeadershipHandle),
    /// On the shard this member is given.
    Sharded(ShardHandle),
    /// Every key of one fleet cluster, while the shard gives this member the cluster
    /// (`cluster` is the key the shard decides by).
    ClusterOfShard {
        /// The member's handle.
        shard: ShardHandle,
        /// The cluster, as a key of the shard.
        cluster: ObjectKey,
    },
}

impl Replication {
    /// The shard, for a sharded controller.
    pub(crate) fn shard(&self) -> Option<&ShardHandle> {
        match self {
            Replication::Sharded(shard) => Some(shard),
            _ => None,
        }
    }

    /// Runs `runner`'s workers on `reconcile` (given each key with its [`Fence`]) as
    /// the mode says, until `shutdown`
    /// completes (or the elector or shard member stops); then shuts the queue down.
    ///
    /// A key taken and not reconciled here (not this replica's) has its queueing
    /// reason forgotten; one taken over is queued as such.
    pub(crate) async fn run_workers<K, F, Fut, E, S>(
        &self,
        runner: Runner<ObjectKey>,
        reconcile: F,
        primaries: &Primaries<K>,
        reasons: &Arc<Reasons>,
        controller: &str,
        shutdown: S,
    ) where
        K: Send + Sync + 'static,
        F: Fn(ObjectKey, Fence) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
        S: Future<Output = ()> + Send,
    {
        match self {
            Replication::Single => {
                runner
                    .run(move |key| reconcile(key, Fence::Open), shutdown)
                    .await;
            }
            Replication::LeaderElected(leadership) => {
                leading::run_while_leading(
                    runner, reconcile, leadership, primaries, reasons, controller, shutdown,
                )
                .await;
            }
            Replication::Sharded(shard) => {
                sharding::run_sharded(
                    runner, reconcile, shard, primaries, reasons, controller, shutdown,
                )
                .await;
            }
            Replication::ClusterOfShard { shard, cluster } => {
                let gated = sharding::gated(
                    reconcile,
                    shard.clone(),
                    Arc::clone(reasons),
                    Some(cluster.clone()),
                );
                runner.run(gated, shutdown).await;
            }
        }
    }
}
