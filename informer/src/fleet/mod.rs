//! Fleets: typed informers and controllers over many clusters.
//!
//! A [`ClusterSet`] holds the clusters of a fleet, each a [`Cluster`] with its own
//! client and [`SharedInformerFactory`](crate::factory::SharedInformerFactory), as a
//! [`ClusterProvider`] names them: a fixed list of kubeconfigs ([`Kubeconfigs`]), or
//! the Secrets holding kubeconfigs in a namespace of a management cluster
//! ([`KubeconfigSecrets`], Cluster API's `<cluster>-kubeconfig` Secrets being the
//! common case). While [`ClusterSet::run`] runs, a cluster the provider names joins
//! (its factory made, the fleet-wide informers started), one it no longer names is
//! retired (its controllers stopped, its informers shut down, its keys forgotten with
//! its queue), and one whose kubeconfig changed restarts, alone. A kubeconfig that
//! cannot be used is [rejected](Rejected), named by its source, and stops no other
//! cluster.
//!
//! On top:
//!
//! - [`ClusterSet::informer`] is a [`FleetInformer`]: one type's informer in every
//!   member, read as one (lists and typed index queries across clusters, each result
//!   an [`InCluster`] naming its cluster), and the members not synced yet, with their
//!   last error (a cluster that cannot be reached is named there).
//! - [`ClusterSet::controller`] is a [`FleetController`]: a
//!   [`Controller`](crate::controller::Controller) per member, built by your closure on
//!   the member's factory and run with one reconcile for all. The context's client,
//!   listers, `api` and recorder are the member's, [`ClusterContext::cluster`] names it, and
//!   so does the reconcile's span. Each member has its own queue and workers, so one
//!   cluster's storm of changes, or its API server being down, delays no other.
//!
//! Several replicas, on Leases as everywhere in the library:
//!
//! - **Leader election**: build each member's controller with
//!   [`leader_election`](crate::controller::Controller::leader_election); the leading
//!   replica works the whole fleet, the others stand by.
//! - **Sharding by cluster**: [`ClusterSet::sharded`] spreads the clusters over the
//!   members of a [`ShardMember`](crate::shard::ShardMember)'s group by the same
//!   rendezvous hashing that shards keys, applied to cluster names. Each replica
//!   engages, and caches, only its own clusters; its fleet controller works a cluster
//!   only while the member may, every reconcile and write fenced by the member's claim
//!   on the cluster (as a sharded controller's are by its claim on each key), so a
//!   paused or cut-off replica stops before another takes its clusters over, and a
//!   killed one's clusters move to the survivors.
//!
//! ```no_run
//! use informer::fleet::{ClusterContext, ClusterSet, KubeconfigSecrets};
//! use informer::prelude::*;
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! # async fn demo(management: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! // Every cluster whose kubeconfig is a Secret of namespace `fleet`.
//! let fleet = ClusterSet::new(KubeconfigSecrets::new(management, "fleet"));
//! tokio::spawn({
//!     let fleet = fleet.clone();
//!     async move { fleet.run(shutdown_signal()).await }
//! });
//! fleet
//!     .controller(|cluster| Controller::<ConfigMap>::new(cluster.factory()))
//!     .run(
//!         |cm, ctx| async move {
//!             println!("{} in cluster {}", ctx.key(), ctx.cluster().unwrap_or_default());
//!             Ok::<_, kube::Error>(Action::Done)
//!         },
//!         backoff,
//!         shutdown_signal(),
//!     )
//!     .await;
//! # Ok(())
//! # }
//! ```

mod by_cluster;
mod cluster;
mod context;
mod controller;
mod error;
mod kubeconfigs;
mod membership;
mod secrets;
mod set;
mod view;

pub use cluster::{Cluster, InCluster};
pub use context::ClusterContext;
pub use controller::FleetController;
pub use error::{FleetError, KubeconfigError};
pub use kubeconfigs::Kubeconfigs;
pub use membership::{ClusterConfig, ClusterProvider, Membership, Rejected};
pub use secrets::{CLUSTER_NAME_LABEL, KubeconfigSecrets};
pub use set::{ClusterSet, MembershipChanges, ShardedByCluster, Unsharded};
pub use view::FleetInformer;
