//! The fleet's errors.

use std::sync::Arc;

/// Why a kubeconfig could not be turned into a cluster.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum KubeconfigError {
    /// The Secret has no entry of that key.
    #[error("no `{key}` entry holding a kubeconfig")]
    MissingKey {
        /// The key looked for.
        key: String,
    },
    /// The entry is not UTF-8 text.
    #[error("the kubeconfig is not UTF-8 text")]
    NotText,
    /// Another source already names this cluster; the first one wins.
    #[error("cluster {cluster} is already named by {first}")]
    Duplicate {
        /// The cluster's name.
        cluster: String,
        /// The source that named it first.
        first: String,
    },
    /// The kubeconfig could not be read or parsed, or names no usable context.
    #[error("invalid kubeconfig: {0}")]
    Invalid(Arc<kube::config::KubeconfigError>),
    /// The file could not be read.
    #[error("cannot read {path}: {message}")]
    Unreadable {
        /// The file.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// A client could not be made from it.
    #[error("cannot make a client: {0}")]
    Client(Arc<kube::Error>),
}

/// Why a fleet could not do what it was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FleetError {
    /// [`ClusterSet::run`](super::ClusterSet::run) was called twice.
    #[error("the cluster set already runs (or ran): a set runs once")]
    AlreadyRunning,
}
