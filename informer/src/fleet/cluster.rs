//! [`Cluster`]: one member of a fleet, and [`InCluster`], a value tagged with its
//! cluster.

use std::fmt;
use std::sync::Arc;

use kube::Client;
use tokio::sync::watch;

use crate::factory::{Cacheable, SharedInformerFactory};
use crate::hold::{Hold, Holds};
use crate::shared_informer::SharedIndexInformer;

/// One cluster of a [`ClusterSet`](super::ClusterSet): its name, its client and its
/// own informer factory (informers per cluster, shared as in one cluster).
///
/// A cheap handle. A cluster that leaves the set, or restarts because its kubeconfig
/// changed, is *retired*: [`retired`](Self::retired) completes, its controllers stop,
/// and its factory is shut down; a restarted cluster is a new `Cluster`.
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

struct Inner {
    name: Arc<str>,
    url: String,
    factory: SharedInformerFactory,
    retired: watch::Sender<bool>,
    /// Held by the controllers working the cluster; the set shuts the factory down
    /// once none is left.
    users: Holds,
}

impl Cluster {
    pub(super) fn new(name: &str, url: String, factory: SharedInformerFactory) -> Self {
        Self {
            inner: Arc::new(Inner {
                name: Arc::from(name),
                url,
                factory,
                retired: watch::Sender::new(false),
                users: Holds::default(),
            }),
        }
    }

    /// The cluster's name in the fleet.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    pub(super) fn shared_name(&self) -> Arc<str> {
        Arc::clone(&self.inner.name)
    }

    /// Its API server's address.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// Its client.
    pub fn client(&self) -> &Client {
        self.inner.factory.client()
    }

    /// Its informer factory: build a [`Controller`](crate::controller::Controller) on
    /// it, or ask it for informers.
    pub fn factory(&self) -> &SharedInformerFactory {
        &self.inner.factory
    }

    /// The cluster's informer for `K` (the factory's, shared), started.
    pub fn informer<K: Cacheable>(&self) -> SharedIndexInformer<K> {
        let informer = self.inner.factory.informer::<K>();
        self.inner.factory.start();
        informer
    }

    /// Completes once the cluster has left the set (or restarted as a new member).
    pub async fn retired(&self) {
        let mut retired = self.inner.retired.subscribe();
        let _ = retired.wait_for(|retired| *retired).await;
    }

    /// Whether the cluster has left the set.
    pub fn is_retired(&self) -> bool {
        *self.inner.retired.borrow()
    }

    /// Whether `other` is this same member (not a restart of it).
    pub fn same_member(&self, other: &Cluster) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Marks the cluster in use (its factory kept up) until the guard is dropped.
    pub(super) fn in_use(&self) -> Hold {
        self.inner.users.hold()
    }

    /// Retires the cluster, waits (at most `grace`) until no controller holds it, and
    /// shuts its factory down: every informer task and handler ended.
    pub(super) async fn retire(&self, grace: std::time::Duration) {
        self.inner.retired.send_replace(true);
        if tokio::time::timeout(grace, self.inner.users.released())
            .await
            .is_err()
        {
            tracing::warn!(cluster = %self.name(), ?grace, "a controller still runs on a retired cluster; shutting its informers down anyway");
        }
        self.inner.factory.shutdown().await;
    }
}

impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cluster")
            .field("name", &self.inner.name)
            .field("url", &self.inner.url)
            .field("retired", &self.is_retired())
            .finish_non_exhaustive()
    }
}

/// A value from one cluster of a fleet, with the cluster's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InCluster<T> {
    /// The cluster's name.
    pub cluster: Arc<str>,
    /// The value.
    pub value: T,
}
