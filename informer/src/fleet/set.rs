//! [`ClusterSet`]: the fleet's members, engaged and retired as the provider says.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::cluster::Cluster;
use super::error::{FleetError, KubeconfigError};
use super::membership::{ClusterConfig, ClusterProvider, Membership, Rejected};
use crate::factory::{FactoryConfig, SharedInformerFactory};
use crate::key::ObjectKey;
use crate::lock::MutexExt;
use crate::shard::ShardHandle;

/// How long a retired cluster's controllers get to stop before its informers are
/// shut down anyway.
const RETIRE_GRACE: Duration = Duration::from_secs(30);

/// Something every member gets when it joins (a fleet-wide informer's type).
pub(super) type OnJoin = Arc<dyn Fn(&Cluster) + Send + Sync>;

/// The clusters of a fleet, each with its own client and informer factory, as a
/// [`ClusterProvider`] says: members join, leave, and restart when their kubeconfig
/// changes, while [`run`](Self::run) runs. See the [module docs](super).
///
/// `S` says how the set is spread over replicas: [`Unsharded`] (every replica
/// engages every cluster; the default) or [`ShardedByCluster`] (each replica its
/// share, from [`ClusterSet::sharded`]). The controllers a set runs depend on it:
/// see [`ClusterSet::controller`].
///
/// A cheap handle: clones share the set.
pub struct ClusterSet<S = Unsharded> {
    inner: Arc<Inner>,
    spread: PhantomData<fn() -> S>,
}

/// How a [`ClusterSet`] that is not sharded spreads: every replica engages every
/// cluster its provider names. Its controllers may be of any
/// [`ReplicationMode`](crate::controller::ReplicationMode).
#[derive(Debug)]
pub enum Unsharded {}

/// How a [`ClusterSet`] from [`ClusterSet::sharded`] spreads: each replica engages
/// the clusters its shard member is given, and its
/// [`FleetController`](super::FleetController) works a cluster only while the member
/// may, every reconcile and write fenced by the member's claim on it (the cluster's
/// keys go where the cluster goes).
///
/// Such a set's [`controller`](ClusterSet::controller) builds controllers that run
/// alone on their cluster; one built leader-elected (or sharded by key) does not
/// compile, as sharding by cluster already decides which replica works which key:
///
/// ```compile_fail,E0271
/// # use informer::controller::Controller;
/// # use informer::factory::FactoryConfig;
/// # use informer::fleet::{ClusterSet, Kubeconfigs};
/// # use informer::leader::LeadershipHandle;
/// # use informer::shard::ShardHandle;
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # fn demo(shard: &ShardHandle, leadership: LeadershipHandle) {
/// let fleet = ClusterSet::sharded(Kubeconfigs::new(), |_| FactoryConfig::default(), shard);
/// let controller = fleet.controller(move |cluster| {
///     Controller::<ConfigMap>::new(cluster.factory()).leader_election(leadership.clone())
/// });
/// # }
/// ```
#[derive(Debug)]
pub enum ShardedByCluster {}

/// The spread of a set as [`FleetController`](super::FleetController) sees it: the
/// same members either way.
pub(super) enum AnySpread {}

impl<S> Clone for ClusterSet<S> {
    fn clone(&self) -> Self {
        self.with_spread()
    }
}

struct Inner {
    provider: Mutex<Option<Box<dyn ClusterProvider>>>,
    /// Engage only the clusters this shard member owns.
    shard: Option<ShardHandle>,
    factory_config: Box<dyn Fn(&str) -> FactoryConfig + Send + Sync>,
    state: Mutex<State>,
    /// Bumped on every change of the members.
    generation: watch::Sender<u64>,
}

#[derive(Default)]
struct State {
    members: BTreeMap<String, (Cluster, u64)>,
    /// The provider's last membership, applied again when the shard changes.
    last: Membership,
    rejected: Vec<Rejected>,
    on_join: Vec<OnJoin>,
    /// Clusters being retired: their factories shutting down.
    retiring: JoinSet<()>,
}

impl<S> fmt::Debug for ClusterSet<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.locked();
        f.debug_struct("ClusterSet")
            .field("members", &state.members.keys().collect::<Vec<_>>())
            .field("rejected", &state.rejected.len())
            .finish_non_exhaustive()
    }
}

impl ClusterSet<Unsharded> {
    /// A set whose members `provider` names, each with a factory of default settings.
    pub fn new(provider: impl ClusterProvider) -> Self {
        Self::with_config(provider, |_| FactoryConfig::default())
    }

    /// A set whose members `provider` names, each with a factory made with the
    /// settings `factory_config` gives for the cluster's name (a namespace, metrics, ...).
    /// Metrics given there label each member's series `cluster="{name}"`
    /// ([`Metrics::for_cluster`](crate::metrics::Metrics::for_cluster)).
    pub fn with_config(
        provider: impl ClusterProvider,
        factory_config: impl Fn(&str) -> FactoryConfig + Send + Sync + 'static,
    ) -> Self {
        Self::make(provider, factory_config, None)
    }
}

impl ClusterSet<ShardedByCluster> {
    /// A set whose clusters are spread over the replicas of `shard`'s group by the
    /// shard's rendezvous hashing of their names: this replica engages (and holds
    /// caches for) only the clusters its member owns, and a
    /// [`FleetController`](super::FleetController) on it works a cluster only while
    /// the member may (every reconcile and write fenced as a sharded controller's
    /// are, by the cluster). Members come and go with the group: a cluster moves with
    /// its shard. Its controllers run alone on each cluster (see
    /// [`ClusterSet::controller`]).
    pub fn sharded(
        provider: impl ClusterProvider,
        factory_config: impl Fn(&str) -> FactoryConfig + Send + Sync + 'static,
        shard: &ShardHandle,
    ) -> Self {
        Self::make(provider, factory_config, Some(shard.clone()))
    }
}

impl<S> ClusterSet<S> {
    fn make(
        provider: impl ClusterProvider,
        factory_config: impl Fn(&str) -> FactoryConfig + Send + Sync + 'static,
        shard: Option<ShardHandle>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                shard,
                provider: Mutex::new(Some(Box::new(provider))),
                factory_config: Box::new(factory_config),
                state: Mutex::default(),
                generation: watch::Sender::new(0),
            }),
            spread: PhantomData,
        }
    }

    /// The same set, typed as spreading by `T` (for code that works on any set).
    pub(super) fn with_spread<T>(&self) -> ClusterSet<T> {
        ClusterSet {
            inner: Arc::clone(&self.inner),
            spread: PhantomData,
        }
    }

    /// Follows the provider until `shutdown` completes: engages each cluster it names
    /// (a factory, the fleet-wide informers started), retires each it drops, restarts
    /// each whose kubeconfig changed. Then retires every member and returns once
    /// their informers have stopped. A set runs once.
    pub async fn run(&self, shutdown: impl Future<Output = ()>) -> Result<(), FleetError> {
        let provider = self
            .inner
            .provider
            .locked()
            .take()
            .ok_or(FleetError::AlreadyRunning)?;
        let mut memberships = provider.memberships();
        let mut shutdown = pin!(shutdown);
        let mut following = true;
        let mut shard_changes = self.shard_changes();
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                membership = memberships.next(), if following => match membership {
                    Some(membership) => self.apply(membership),
                    // A fixed list: nothing more will come.
                    None => following = false,
                },
                Some(()) = shard_changes.next() => {
                    let last = self.inner.state.locked().last.clone();
                    self.apply(last);
                }
            }
        }
        drop(memberships);
        let retiring = {
            let mut state = self.inner.state.locked();
            let members = std::mem::take(&mut state.members);
            for (cluster, _) in members.into_values() {
                state
                    .retiring
                    .spawn(async move { cluster.retire(RETIRE_GRACE).await });
            }
            std::mem::take(&mut state.retiring)
        };
        self.inner
            .generation
            .send_modify(|generation| *generation += 1);
        retiring.join_all().await;
        Ok(())
    }

    /// Makes the members what `membership` says.
    fn apply(&self, membership: Membership) {
        let mut state = self.inner.state.locked();
        while state.retiring.try_join_next().is_some() {}
        let mut changed = false;
        state.last = membership.clone();
        let mut wanted = membership.clusters;
        if let Some(shard) = &self.inner.shard {
            // Clusters are shared out by name, whatever the member's `ShardBy`.
            wanted
                .retain(|name, _| shard.in_shard_hash(crate::shard::name_hash(&cluster_key(name))));
        }
        let leaving: Vec<String> = state
            .members
            .iter()
            .filter(|(name, (_, fingerprint))| {
                wanted
                    .get(*name)
                    .is_none_or(|config| config.fingerprint != *fingerprint)
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in leaving {
            if let Some((cluster, _)) = state.members.remove(&name) {
                let restart = wanted.contains_key(&name);
                tracing::info!(cluster = %name, restart, "cluster leaves the fleet");
                state
                    .retiring
                    .spawn(async move { cluster.retire(RETIRE_GRACE).await });
                changed = true;
            }
        }
        let mut rejected = membership.rejected;
        for (name, config) in wanted {
            if state.members.contains_key(&name) {
                continue;
            }
            match self.engage(&name, config, &state.on_join) {
                Ok((cluster, fingerprint)) => {
                    tracing::info!(cluster = %name, url = %cluster.url(), "cluster joins the fleet");
                    state.members.insert(name, (cluster, fingerprint));
                    changed = true;
                }
                Err(error) => rejected.push(Rejected {
                    source: format!("cluster {name}"),
                    error,
                }),
            }
        }
        for rejection in &rejected {
            let new = !state
                .rejected
                .iter()
                .any(|known| known.to_string() == rejection.to_string());
            if new {
                tracing::warn!(source = %rejection.source, error = %rejection.error, "a cluster of the fleet was rejected; the others go on");
            }
        }
        state.rejected = rejected;
        drop(state);
        if changed {
            self.inner
                .generation
                .send_modify(|generation| *generation += 1);
        }
    }

    /// A new member: its factory, with every fleet-wide informer, started.
    fn engage(
        &self,
        name: &str,
        config: ClusterConfig,
        on_join: &[OnJoin],
    ) -> Result<(Cluster, u64), KubeconfigError> {
        let url = config.config.cluster_url.to_string();
        let factory_config = (self.inner.factory_config)(name);
        // Each member's series labelled with its name, so that they stay apart.
        #[cfg(feature = "metrics")]
        let factory_config = match factory_config
            .metrics
            .as_ref()
            .map(|metrics| metrics.for_cluster(name))
        {
            Some(metrics) => factory_config.metrics(&metrics),
            None => factory_config,
        };
        let factory = SharedInformerFactory::from_config(config.config, factory_config)
            .map_err(|error| KubeconfigError::Client(Arc::new(error)))?;
        let cluster = Cluster::new(name, url, factory);
        for join in on_join {
            join(&cluster);
        }
        cluster.factory().start();
        Ok((cluster, config.fingerprint))
    }

    /// Gives every member, now and to come, what `join` does (it is called once per
    /// member, before its factory starts if it joins later).
    pub(super) fn on_join(&self, join: OnJoin) {
        let members = {
            let mut state = self.inner.state.locked();
            state.on_join.push(Arc::clone(&join));
            state
                .members
                .values()
                .map(|(cluster, _)| cluster.clone())
                .collect::<Vec<_>>()
        };
        for cluster in members {
            join(&cluster);
            cluster.factory().start();
        }
    }

    /// The members now, by name.
    pub fn clusters(&self) -> Vec<Cluster> {
        self.inner
            .state
            .locked()
            .members
            .values()
            .map(|(cluster, _)| cluster.clone())
            .collect()
    }

    /// The member named `name`, if it is one now.
    pub fn cluster(&self, name: &str) -> Option<Cluster> {
        self.inner
            .state
            .locked()
            .members
            .get(name)
            .map(|(cluster, _)| cluster.clone())
    }

    /// The members' names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.inner.state.locked().members.keys().cloned().collect()
    }

    /// What the provider's last membership could not turn into clusters, and why.
    pub fn rejected(&self) -> Vec<Rejected> {
        self.inner.state.locked().rejected.clone()
    }

    /// Follows the changes of the members.
    pub fn watch(&self) -> MembershipChanges {
        MembershipChanges(self.inner.generation.subscribe())
    }

    /// Waits until `ready` holds for the members' names (sorted).
    pub async fn wait_until(&self, mut ready: impl FnMut(&[String]) -> bool) {
        let mut changes = self.watch();
        loop {
            if ready(&self.names()) {
                return;
            }
            if !changes.changed().await {
                return;
            }
        }
    }
}

/// The key a shard decides a cluster by.
pub(super) fn cluster_key(name: &str) -> ObjectKey {
    ObjectKey::new(None, name)
}

impl<S> ClusterSet<S> {
    /// The shard member the set is spread by, if it is sharded.
    pub(super) fn shard(&self) -> Option<&ShardHandle> {
        self.inner.shard.as_ref()
    }

    /// Every change of the shard member's view, for as long as it runs; nothing for a
    /// set that is not sharded.
    pub(super) fn shard_changes(&self) -> BoxStream<'static, ()> {
        match self.inner.shard.clone() {
            Some(shard) => futures::stream::unfold(shard, |mut shard| async move {
                shard.changed().await.then_some(((), shard))
            })
            .fuse()
            .boxed(),
            None => futures::stream::pending().boxed(),
        }
    }
}

/// The changes of a [`ClusterSet`]'s members, from [`ClusterSet::watch`].
#[derive(Debug)]
pub struct MembershipChanges(watch::Receiver<u64>);

impl MembershipChanges {
    /// Waits for the next change of the members; `false` once the set is gone.
    pub async fn changed(&mut self) -> bool {
        self.0.changed().await.is_ok()
    }
}
