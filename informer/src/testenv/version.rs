//! Which Kubernetes a control plane runs, and what each one's API server is started
//! with.
//!
//! Two servers, because no single one covers what the informer must be tested
//! against: kube-apiserver 1.20 serves the built-in types (ConfigMaps, Namespaces,
//! RBAC, ...) but refuses streaming lists, which the reflector asks for by default;
//! the 1.36 crd-apiserver (Kubernetes 1.36's apiextensions-apiserver) serves streaming
//! lists as every cluster since 1.34 does, but only CustomResourceDefinitions and
//! custom resources.

/// The Kubernetes version a [`TestEnv`](super::TestEnv) runs
/// ([`TestEnvBuilder::kubernetes`](super::TestEnvBuilder::kubernetes)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Kubernetes {
    /// kube-apiserver 1.20.2 (built from Debian bookworm's Kubernetes source) on etcd
    /// 3.4: the whole API (core types, Namespaces, RBAC, CRDs), token authentication,
    /// and optionally kube-controller-manager. It refuses streaming lists (a watch
    /// with `resourceVersionMatch` is 422 there), so a reflector lists and watches.
    #[default]
    V1_20,
    /// crd-apiserver, Kubernetes 1.36.4's apiextensions-apiserver (built from Debian
    /// sid's Go source packages, `scripts/crd-apiserver/main.go`) on etcd 3.5.30: only
    /// `apiextensions.k8s.io` and custom resources. Streaming lists, bookmarks, paging
    /// and metadata-only requests work as on a 1.36 cluster.
    ///
    /// No core group (`/api` is 404: no Namespaces, ConfigMaps, Secrets), no RBAC
    /// (only `system:masters` is authorised; [`RESTRICTED_USER`](super::RESTRICTED_USER)
    /// is forbidden everything), no admission plugins, no controller manager. So that
    /// leader election, sharding and Events run unchanged, the control plane installs
    /// CRDs standing in for the built-in `leases.coordination.k8s.io` and
    /// `events.events.k8s.io` at start (see [`TestEnv`](super::TestEnv)'s module docs).
    V1_36,
}

impl Kubernetes {
    /// The name of its API server's program, also its log file's (`<name>.log`).
    pub(super) fn apiserver_name(self) -> &'static str {
        match self {
            Self::V1_20 => "kube-apiserver",
            Self::V1_36 => "crd-apiserver",
        }
    }

    /// Whether the server has the core API (Namespaces, RBAC, ...).
    pub(super) fn has_core_api(self) -> bool {
        match self {
            Self::V1_20 => true,
            Self::V1_36 => false,
        }
    }
}

impl std::fmt::Display for Kubernetes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::V1_20 => "Kubernetes 1.20",
            Self::V1_36 => "Kubernetes 1.36",
        })
    }
}
