//! [`Kubeconfigs`]: a fixed list of clusters, from kubeconfig files or ready configs.

use std::path::PathBuf;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::error::KubeconfigError;
use super::membership::{ClusterConfig, ClusterProvider, Membership, Rejected};

/// A fixed fleet: each cluster from a kubeconfig file (its current context, or a
/// named one) or from a [`kube::Config`] already made. Read once, when the set
/// starts; a file that cannot be read is [rejected](Rejected) and the others join.
///
/// ```no_run
/// # async fn demo(config: kube::Config) {
/// use informer::fleet::{ClusterSet, Kubeconfigs};
///
/// let fleet = ClusterSet::new(
///     Kubeconfigs::new()
///         .file("eu-1", "/etc/fleet/eu-1.yaml")
///         .context("us-1", "/etc/fleet/all.yaml", "us-1-admin")
///         .config("local", config),
/// );
/// # }
/// ```
#[derive(Debug, Default)]
pub struct Kubeconfigs {
    entries: Vec<(String, Entry)>,
}

#[derive(Debug)]
enum Entry {
    File {
        path: PathBuf,
        context: Option<String>,
    },
    Config(Box<ClusterConfig>),
}

impl Kubeconfigs {
    /// No clusters yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cluster `name` from the current context of the kubeconfig at `path`.
    #[must_use]
    pub fn file(mut self, name: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        self.entries.push((
            name.into(),
            Entry::File {
                path,
                context: None,
            },
        ));
        self
    }

    /// Cluster `name` from context `context` of the kubeconfig at `path`.
    #[must_use]
    pub fn context(
        mut self,
        name: impl Into<String>,
        path: impl Into<PathBuf>,
        context: impl Into<String>,
    ) -> Self {
        self.entries.push((
            name.into(),
            Entry::File {
                path: path.into(),
                context: Some(context.into()),
            },
        ));
        self
    }

    /// Cluster `name` reached with `config`.
    #[must_use]
    pub fn config(mut self, name: impl Into<String>, config: kube::Config) -> Self {
        let name = name.into();
        let source = (name.clone(), config.cluster_url.to_string());
        self.entries.push((
            name,
            Entry::Config(Box::new(ClusterConfig::new(config, source))),
        ));
        self
    }

    async fn read(self) -> Membership {
        let mut membership = Membership::default();
        for (name, entry) in self.entries {
            match entry {
                Entry::Config(config) => {
                    membership.clusters.insert(name, *config);
                }
                Entry::File { path, context } => match read_file(&path, context).await {
                    Ok(config) => {
                        membership.clusters.insert(name, config);
                    }
                    Err(error) => membership.rejected.push(Rejected {
                        source: path.display().to_string(),
                        error,
                    }),
                },
            }
        }
        membership
    }
}

impl ClusterProvider for Kubeconfigs {
    fn memberships(self: Box<Self>) -> BoxStream<'static, Membership> {
        futures::stream::once(self.read()).boxed()
    }
}

/// The cluster of `context` (or the current one) in the kubeconfig at `path`.
async fn read_file(
    path: &std::path::Path,
    context: Option<String>,
) -> Result<ClusterConfig, KubeconfigError> {
    let text = std::fs::read_to_string(path).map_err(|error| KubeconfigError::Unreadable {
        path: path.display().to_string(),
        message: error.to_string(),
    })?;
    // `read_from` resolves the file's relative certificate paths against its folder.
    let kubeconfig =
        Kubeconfig::read_from(path).map_err(|error| KubeconfigError::Invalid(Arc::new(error)))?;
    config_from(kubeconfig, context, &text).await
}

/// The cluster of `context` (or the current one) in `kubeconfig`, read from `source`.
pub(super) async fn config_from(
    kubeconfig: Kubeconfig,
    context: Option<String>,
    source: &str,
) -> Result<ClusterConfig, KubeconfigError> {
    let options = KubeConfigOptions {
        context,
        ..KubeConfigOptions::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|error| KubeconfigError::Invalid(Arc::new(error)))?;
    Ok(ClusterConfig::new(config, source))
}
