//! [`ByCluster`]: the mode of the controllers of a set sharded by cluster.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::controller::{Decide, Replicate, Workload, gated_by_shard};
use crate::key::ObjectKey;
use crate::shard::ShardHandle;

/// How a member's controller runs on a [`ClusterSet<ShardedByCluster>`](super::ClusterSet):
/// it works every key of its cluster while the shard member may work the cluster,
/// every reconcile and write fenced by the member's claim on it (the cluster's keys go
/// where the cluster goes). Made per cluster by the set's
/// [`controller`](super::ClusterSet::controller); its caches are whole.
#[derive(Debug)]
pub(super) struct ByCluster {
    shard: ShardHandle,
    /// The cluster, as the key the shard decides by.
    cluster: ObjectKey,
}

impl ByCluster {
    pub(super) fn new(shard: ShardHandle, cluster: ObjectKey) -> Self {
        Self { shard, cluster }
    }
}

impl Replicate for ByCluster {
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
