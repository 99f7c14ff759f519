//! How a controller runs as several replicas.
//!
//! Terms, as this module and its files use them:
//!
//! - **mode**: how the replicas of one controller share the work: [`Single`] (every
//!   replica works every key: run one), [`LeaderElected`] (one replica at a time),
//!   [`Sharded`] (each replica its own share of the keys), or, for the controllers of a
//!   fleet [sharded by cluster](crate::fleet::ShardedByCluster), a crate-private
//!   mode of the fleet's (every key of the clusters this replica was given). The mode is the `R` of
//!   [`Controller<K, R>`](super::Controller), chosen by the builder, so a combination
//!   that makes no sense does not compile. Each mode is a type in a file of its own
//!   implementing [`Replicate`]: which caches it cuts down, what it waits for before
//!   the informers start, and how it drives the workers.
//! - **claim**: what entitles this replica to act for a key now (a leader's term, a
//!   shard member's claim on a key or on a cluster); see [`crate::claim`].
//! - **fence**: the check of a claim, by the clock, before every step of a reconcile
//!   and every write sent through its context ([`Fence`]). A mode hands each
//!   reconcile the fence of its claim; the fence knows no mode.

mod leading;
mod sharding;

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

pub use crate::claim::Fenced;
pub use leading::LeaderElected;
pub use sharding::Sharded;
pub(crate) use sharding::{Decide, gated_by_shard};

use super::primary_cache::PrimaryCache;
use super::reasons::Reasons;
use super::reconciler::KeyWork;
use crate::factory::NamedKeyFilter;
use crate::key::ObjectKey;
use crate::workqueue::Runner;

/// The mode of a controller that runs alone: every replica reconciles every key (run
/// one replica). The default of [`Controller`](super::Controller).
#[derive(Debug)]
pub struct Single(());

impl Single {
    pub(crate) fn new() -> Self {
        Self(())
    }
}

/// A controller's replication mode, the `R` of [`Controller<K, R>`](super::Controller):
/// alone ([`Single`]), one replica at a time ([`LeaderElected`]), each replica on
/// its own shard of the keys ([`Sharded`]), or, made by a fleet
/// [sharded by cluster](crate::fleet::ShardedByCluster) for its members' controllers
/// and never named by users, working every key of a cluster the shard gives this
/// replica. Sealed: these are all there is.
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
// The bound is the crate's own trait on purpose: it seals the modes.
#[allow(private_bounds)]
pub trait ReplicationMode: Replicate {}

impl<R: Replicate> ReplicationMode for R {}

/// What a mode does; see the [module docs](self). A new mode is a type implementing
/// this, in a file of its own.
pub(crate) trait Replicate: Send + Sync + 'static {
    /// The filter that cuts this replica's primary cache down to its share (the owned
    /// caches keep the children of the primaries it keeps), named for the filtered
    /// informer by what the share is (`shard {group}/{identity}`); `None` for a mode
    /// whose caches are whole.
    fn cache_filter(&self) -> Option<NamedKeyFilter> {
        None
    }

    /// Resolves once the controller may start its informers (for a sharded one: once
    /// its share is known, so that its first list is of its share).
    fn ready(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }

    /// Reports the mode's coordination (an election, a shard member) to `metrics`.
    #[cfg(feature = "metrics")]
    fn observe(&self, _metrics: &crate::metrics::Metrics) {}

    /// Runs the workers of `workload` as the mode says until `shutdown` completes (or
    /// what grants the claims stops); then shuts the queue down.
    fn run_workers<'a, K: Send + Sync + 'static>(
        &'a self,
        workload: Workload<'a, K>,
        shutdown: BoxFuture<'a, ()>,
    ) -> impl Future<Output = ()> + Send + 'a;
}

/// What a mode's workers work on: the runner (its queue and workers), the reconcile of
/// one key under a fence, and what a mode needs to queue keys as they become this
/// replica's.
pub(crate) struct Workload<'a, K> {
    pub(crate) runner: Runner<ObjectKey>,
    pub(crate) work: KeyWork,
    pub(crate) primaries: &'a PrimaryCache<K>,
    pub(crate) reasons: &'a Arc<Reasons>,
    /// The controller's name, for logs.
    pub(crate) controller: &'a str,
    /// Writes the controller's own recorder's pending events; a mode awaits it before
    /// it lets its grantor release the claim on shutdown (a term's Lease, a shard
    /// member's), so that no event goes out after. `None` when the recorder is the
    /// user's (it is left running).
    pub(crate) flush_events: Option<BoxFuture<'a, ()>>,
}

impl Replicate for Single {
    async fn run_workers<'a, K: Send + Sync + 'static>(
        &'a self,
        workload: Workload<'a, K>,
        shutdown: BoxFuture<'a, ()>,
    ) {
        let work = workload.work;
        workload
            .runner
            .run(move |key| work(key, crate::claim::Fence::open()), shutdown)
            .await;
    }
}
