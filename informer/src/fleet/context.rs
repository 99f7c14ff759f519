//! [`ClusterContext`]: which cluster a fleet's reconcile works in.

use kube::Resource;

use crate::controller::Context;

/// The label a fleet gives each member's controller: the cluster's name.
pub(super) const CLUSTER_LABEL: &str = "cluster";

/// Which cluster of a fleet a reconcile works in, for a controller run by a
/// [`FleetController`](super::FleetController).
pub trait ClusterContext {
    /// The name of the fleet cluster this reconcile works in; `None` for a controller
    /// of one cluster. The context's client, listers, `api` and recorder are that
    /// cluster's.
    fn cluster(&self) -> Option<&str>;
}

impl<K: Resource<DynamicType = ()> + 'static> ClusterContext for Context<K> {
    fn cluster(&self) -> Option<&str> {
        self.label(CLUSTER_LABEL)
    }
}
