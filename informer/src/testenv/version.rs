//! Which Kubernetes a control plane runs.
//!
//! Two releases, both whole control planes (kube-apiserver with every built-in API,
//! kube-controller-manager on request, etcd of the version the release is tested
//! with), built as Go module builds of `k8s.io/kubernetes` by
//! `scripts/install-control-plane.sh` from the pinned modules in
//! `scripts/control-plane/<minor>/`: the newest release the Go module proxy serves,
//! the default, and the oldest one our `k8s-openapi` supports, for compatibility.

/// The Kubernetes release a [`TestEnv`](super::TestEnv) runs
/// ([`TestEnvBuilder::kubernetes`](super::TestEnvBuilder::kubernetes)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Kubernetes {
    /// Kubernetes 1.37.2 on etcd 3.7.0, the default: streaming lists (WatchList),
    /// consistent lists from the watch cache, list snapshots, and, with the alpha gate
    /// `ShardedListAndWatch` that the test control plane turns on
    /// ([`TestEnvBuilder::sharded_list_and_watch`](super::TestEnvBuilder::sharded_list_and_watch)),
    /// server-side sharded lists and watches of every resource.
    #[default]
    V1_37,
    /// Kubernetes 1.33.13 on etcd 3.5.24, the oldest release `k8s-openapi` 0.29
    /// supports: what the compatibility tests run on. Its server does not serve
    /// streaming lists by default (the `WatchList` gate is off in 1.33), so a reflector
    /// falls back to a list and a watch there, and it has no sharded lists.
    V1_33,
}

impl Kubernetes {
    /// Every release, newest first.
    #[cfg(test)]
    pub(super) const ALL: [Self; 2] = [Self::V1_37, Self::V1_33];

    /// The release, as `kube-apiserver --version` prints it after `Kubernetes v`.
    pub fn release(self) -> &'static str {
        match self {
            Self::V1_37 => "1.37.2",
            Self::V1_33 => "1.33.13",
        }
    }

    /// The release's minor version: what `scripts/control-plane/` and the install
    /// script's `--kubernetes` name it by.
    pub(super) fn minor(self) -> &'static str {
        match self {
            Self::V1_37 => "1.37",
            Self::V1_33 => "1.33",
        }
    }

    /// The etcd it runs on (its `etcd --version`).
    #[cfg(test)]
    fn etcd_release(self) -> &'static str {
        match self {
            Self::V1_37 => "3.7.0",
            Self::V1_33 => "3.5.24",
        }
    }
}

impl std::fmt::Display for Kubernetes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kubernetes {}", self.release())
    }
}

/// The minor version of a `kube-apiserver --version` line (`Kubernetes v1.37.2` gives
/// 37), so that flags that only some releases know are given only to those.
pub(super) fn minor_of(version_line: &str) -> Option<u32> {
    let version = version_line.split_whitespace().last()?;
    let mut parts = version.trim_start_matches('v').split('.');
    (parts.next()? == "1").then_some(())?;
    parts.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_line_gives_its_minor() {
        assert_eq!(minor_of("Kubernetes v1.37.2"), Some(37));
        assert_eq!(minor_of("Kubernetes v1.33.13\n"), Some(33));
        assert_eq!(minor_of("Kubernetes v1.31.0-rc.1"), Some(31));
        assert_eq!(minor_of("Kubernetes v0.0.0-master+$Format:%H$"), None);
        assert_eq!(minor_of(""), None);
    }

    /// The releases named here are the ones the install script builds: each go.mod
    /// under `scripts/control-plane/<minor>/` requires exactly that release and etcd.
    #[test]
    fn each_release_is_the_one_its_pinned_modules_build() {
        let scripts = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts");
        for release in Kubernetes::ALL {
            let modules = scripts.join("control-plane").join(release.minor());
            let kubernetes = std::fs::read_to_string(modules.join("kubernetes/go.mod")).unwrap();
            assert!(
                kubernetes.contains(&format!("k8s.io/kubernetes v{} ", release.release())),
                "{release}: {}",
                modules.display()
            );
            let etcd = std::fs::read_to_string(modules.join("etcd/go.mod")).unwrap();
            assert!(
                etcd.contains(&format!(
                    "go.etcd.io/etcd/server/v3 v{} ",
                    release.etcd_release()
                )),
                "{release}: {}",
                modules.display()
            );
        }
    }
}
