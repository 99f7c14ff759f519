//! [`TestEnvError`]: what can go wrong starting or driving a control plane.

use std::path::PathBuf;

use crate::cause::kube_cause;

/// Errors from starting or driving a [`TestEnv`](super::TestEnv).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestEnvError {
    /// A binary is missing and could not be installed.
    #[error("control plane not installed: {0}")]
    NotInstalled(String),
    /// A program could not be started.
    #[error("could not run {program}: {source}")]
    Spawn {
        /// The program.
        program: PathBuf,
        /// Why it did not start.
        #[source]
        source: std::io::Error,
    },
    /// Reading or writing a file failed.
    #[error("I/O on {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// Generating certificates or keys failed.
    #[error("generating certificates: {0}")]
    Pki(String),
    /// A server did not become ready in time, or exited.
    #[error("{component} did not become ready: {reason}\n--- last log lines ---\n{log_tail}")]
    NotReady {
        /// `etcd`, `kube-apiserver` or `kube-controller-manager`.
        component: &'static str,
        /// What was seen.
        reason: String,
        /// The end of the server's log.
        log_tail: String,
    },
    /// The generated kubeconfig could not be loaded.
    #[error("loading the generated kubeconfig: {0}")]
    Kubeconfig(#[source] kube::config::KubeconfigError),
    /// A client could not be built or a request failed.
    #[error("talking to the API server: {}", kube_cause(.0))]
    Client(#[source] kube::Error),
    /// A request to etcd's own API failed.
    #[error("etcd {action} failed: {message}")]
    Etcd {
        /// What was asked of it.
        action: &'static str,
        /// What went wrong, or what it answered.
        message: String,
    },
}
