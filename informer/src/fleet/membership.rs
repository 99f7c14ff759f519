//! What a provider says the fleet is: [`Membership`], and the [`ClusterProvider`]
//! trait the providers implement.

use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};

use futures::stream::BoxStream;

use super::error::KubeconfigError;

/// How to reach one cluster: a [`kube::Config`], and a fingerprint of where it came
/// from (a changed fingerprint restarts the member). Made by [`new`](Self::new); the
/// connection settings are the `kube::Config`'s.
#[derive(Clone)]
#[non_exhaustive]
pub struct ClusterConfig {
    /// The cluster's connection settings.
    pub config: kube::Config,
    /// A hash of what the config was read from (private: only its changes matter).
    pub(super) fingerprint: u64,
}

impl ClusterConfig {
    /// A cluster reached with `config`; `source` is what it was read from (the
    /// kubeconfig's text, say): a member whose source changes is restarted.
    pub fn new(config: kube::Config, source: impl Hash) -> Self {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        source.hash(&mut hasher);
        Self {
            config,
            fingerprint: hasher.finish(),
        }
    }
}

impl fmt::Debug for ClusterConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterConfig")
            .field("url", &self.config.cluster_url)
            .finish_non_exhaustive()
    }
}

/// A source a provider could not turn into a cluster, and why. The other clusters
/// are not affected.
#[derive(Debug, Clone)]
pub struct Rejected {
    /// What was rejected: `Secret fleet/prod-kubeconfig`, a file's path.
    pub source: String,
    /// Why.
    pub error: KubeconfigError,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.source, self.error)
    }
}

/// The fleet as a provider sees it at one moment: each cluster by name, and the
/// sources it had to reject.
#[derive(Debug, Clone, Default)]
pub struct Membership {
    /// The clusters, by name.
    pub clusters: BTreeMap<String, ClusterConfig>,
    /// What could not be read.
    pub rejected: Vec<Rejected>,
}

/// Where a fleet's members come from: a stream of the whole [`Membership`], sent
/// again whenever it changes (level-based, as Kubernetes is: a new message replaces
/// the last one). [`Kubeconfigs`](super::Kubeconfigs) is a fixed list;
/// [`KubeconfigSecrets`](super::KubeconfigSecrets) follows Secrets in a management
/// cluster. Implement it for another source (a cloud API, a Cluster API inventory).
pub trait ClusterProvider: Send + 'static {
    /// The memberships, each replacing the last; the stream may end (a fixed list)
    /// or run for ever.
    fn memberships(self: Box<Self>) -> BoxStream<'static, Membership>;
}
