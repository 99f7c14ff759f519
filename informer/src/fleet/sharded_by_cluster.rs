//! [`ShardedByCluster`]: a fleet spread over replicas by cluster, and the mode of its
//! members' controllers.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::controller::{Decide, Replicate, Workload, gated_by_shard};
use crate::key::ObjectKey;
use crate::shard::ShardHandle;

/// How a [`ClusterSet`](super::ClusterSet) from [`ClusterSet::sharded`](super::ClusterSet::sharded)
/// spreads: each replica engages the clusters its shard member is given. It is also
/// the [`ReplicationMode`](crate::controller::ReplicationMode) of such a set's
/// controllers: each works every key of its cluster while the member may work the
/// cluster, every reconcile and write fenced by the member's claim on it (the
/// cluster's keys go where the cluster goes).
///
/// Such a set's [`controller`](super::ClusterSet::controller) builds controllers that
/// run alone on their cluster; one built leader-elected (or sharded by key) does not
/// compile, as sharding by cluster already decides which replica works which key:
///
/// ```compile_fail,E0271
/// # use informer::controller::Controller;
/// # use informer::factory::FactoryOptions;
/// # use informer::fleet::{ClusterSet, Kubeconfigs};
/// # use informer::leader::LeadershipHandle;
/// # use informer::shard::ShardHandle;
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # fn demo(shard: &ShardHandle, leadership: LeadershipHandle) {
/// let fleet = ClusterSet::sharded(Kubeconfigs::new(), |_| FactoryOptions::default(), shard);
/// let controller = fleet.controller(move |cluster| {
///     Controller::<ConfigMap>::new(cluster.factory()).leader_election(leadership.clone())
/// });
/// # }
/// ```
#[derive(Debug)]
pub struct ShardedByCluster {
    shard: ShardHandle,
    /// The cluster, as the key the shard decides by.
    cluster: ObjectKey,
}

impl ShardedByCluster {
    pub(super) fn new(shard: ShardHandle, cluster: ObjectKey) -> Self {
        Self { shard, cluster }
    }
}

impl Replicate for ShardedByCluster {
    // A fleet's clusters share one shard member: it is observed once, by its owner.

    async fn run_workers<'a, K: Send + Sync + 'static>(
        &'a self,
        workload: Workload<'a, K>,
        shutdown: BoxFuture<'a, ()>,
    ) {
        // Clusters are shared out by name, whatever the member's `ShardBy`.
        let cluster = self.cluster.clone();
        let hash = crate::shard::name_hash(&cluster);
        let decide: Decide = Arc::new(move |_key: &ObjectKey| Some((cluster.clone(), hash)));
        let gated = gated_by_shard(
            workload.work,
            self.shard.clone(),
            Arc::clone(workload.reasons),
            decide,
        );
        workload.runner.run(gated, shutdown).await;
    }
}
