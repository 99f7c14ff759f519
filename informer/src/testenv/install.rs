//! Finding the control plane's binaries, and installing them when they are missing.
//!
//! Lookup order for each binary: its environment variable when set; else the install
//! cache (`$INFORMER_CACHE_DIR`, default `~/.cache/informer-testenv`).
//!
//! - Kubernetes 1.20: `INFORMER_KUBE_APISERVER` or the cache's `kube-apiserver`;
//!   `INFORMER_KUBE_CONTROLLER_MANAGER` or the cache's `kube-controller-manager`, only
//!   looked for when a control plane asks for it, so a plain one never waits for it to
//!   be built; `INFORMER_ETCD` and `INFORMER_ETCDCTL`, or `etcd` and `etcdctl` on `PATH`
//!   (Debian's etcd 3.4; an etcdctl beside a given etcd is preferred).
//! - Kubernetes 1.36: `INFORMER_CRD_APISERVER` or the cache's `crd-apiserver`;
//!   `INFORMER_ETCD_3_5` or the cache's `etcd-3.5`; `INFORMER_ETCDCTL_3_5`, an
//!   `etcdctl-3.5` or `etcdctl` beside a given etcd, or the cache's `etcdctl-3.5`.
//!   Streaming lists need etcd 3.5.13 or later.
//!
//! When something needed is still missing, the project's install script builds and
//! caches it, unless `INFORMER_TESTENV_NO_INSTALL` is set. The script
//! (`scripts/install-control-plane.sh`) sources `scripts/sid-go-build.sh` beside it and
//! reads `scripts/crd-apiserver/main.go` (and, for `--client-go-peer`,
//! `benches/client-go/main.go`) relative to itself; all four are embedded here and laid
//! out in a temporary directory as in the repository, so the library installs what it
//! needs from any working directory, also outside the repository. A 1.20 control plane
//! runs it with `--no-crd-apiserver`, so that it never waits for the 1.36 build.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::{Kubernetes, TestEnvError};

/// The install script and the files it reads, embedded with their paths relative to
/// the repository's root, so that the library can lay them out as the script expects
/// them and run it from any working directory.
const INSTALL_FILES: [(&str, &str); 4] = [
    (
        INSTALL_SCRIPT,
        include_str!("../../../scripts/install-control-plane.sh"),
    ),
    (
        "scripts/sid-go-build.sh",
        include_str!("../../../scripts/sid-go-build.sh"),
    ),
    (
        "scripts/crd-apiserver/main.go",
        include_str!("../../../scripts/crd-apiserver/main.go"),
    ),
    (
        "benches/client-go/main.go",
        include_str!("../../../benches/client-go/main.go"),
    ),
];

/// Where the install script sits among [`INSTALL_FILES`].
const INSTALL_SCRIPT: &str = "scripts/install-control-plane.sh";

/// Paths of the programs a control plane runs.
#[derive(Debug, Clone)]
pub(crate) struct Binaries {
    /// kube-apiserver (1.20) or crd-apiserver (1.36).
    pub(crate) apiserver: PathBuf,
    pub(crate) etcd: PathBuf,
    pub(crate) etcdctl: PathBuf,
    /// Found only when asked for ([`ensure_installed`] with `controller_manager`).
    pub(crate) kube_controller_manager: Option<PathBuf>,
}

/// Finds the binaries of `version`, running the install script first if any is
/// missing; kube-controller-manager only counts when `controller_manager` is set.
pub(crate) async fn ensure_installed(
    version: Kubernetes,
    controller_manager: bool,
) -> Result<Binaries, TestEnvError> {
    if let Some(found) = find(version, controller_manager)? {
        return Ok(found);
    }
    if std::env::var_os("INFORMER_TESTENV_NO_INSTALL").is_some() {
        return Err(TestEnvError::NotInstalled(format!(
            "a binary of the {version} control plane is missing and \
             INFORMER_TESTENV_NO_INSTALL is set"
        )));
    }
    run_install_script(version).await?;
    find(version, controller_manager)?.ok_or_else(|| {
        TestEnvError::NotInstalled(format!(
            "the install script ran but a binary of the {version} control plane is still missing"
        ))
    })
}

/// The install cache, as the install script computes it.
fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("INFORMER_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache/informer-testenv"))
}

fn find(version: Kubernetes, controller_manager: bool) -> Result<Option<Binaries>, TestEnvError> {
    match version {
        Kubernetes::V1_20 => find_1_20(controller_manager),
        Kubernetes::V1_36 => find_1_36(),
    }
}

fn find_1_20(controller_manager: bool) -> Result<Option<Binaries>, TestEnvError> {
    let kube_apiserver =
        from_env("INFORMER_KUBE_APISERVER")?.or_else(|| in_cache("kube-apiserver"));
    let kube_controller_manager = if controller_manager {
        let found = from_env("INFORMER_KUBE_CONTROLLER_MANAGER")?
            .or_else(|| in_cache("kube-controller-manager"));
        if found.is_none() {
            return Ok(None);
        }
        found
    } else {
        None
    };
    let etcd = from_env("INFORMER_ETCD")?.or_else(|| on_path("etcd"));
    let etcdctl = from_env("INFORMER_ETCDCTL")?
        .or_else(|| beside(etcd.as_deref(), &["etcdctl"]))
        .or_else(|| on_path("etcdctl"));
    Ok(match (kube_apiserver, etcd, etcdctl) {
        (Some(apiserver), Some(etcd), Some(etcdctl)) => Some(Binaries {
            apiserver,
            etcd,
            etcdctl,
            kube_controller_manager,
        }),
        _ => None,
    })
}

fn find_1_36() -> Result<Option<Binaries>, TestEnvError> {
    let crd_apiserver = from_env("INFORMER_CRD_APISERVER")?.or_else(|| in_cache("crd-apiserver"));
    let etcd = from_env("INFORMER_ETCD_3_5")?.or_else(|| in_cache("etcd-3.5"));
    let etcdctl = from_env("INFORMER_ETCDCTL_3_5")?
        .or_else(|| beside(etcd.as_deref(), &["etcdctl-3.5", "etcdctl"]))
        .or_else(|| in_cache("etcdctl-3.5"));
    Ok(match (crd_apiserver, etcd, etcdctl) {
        (Some(apiserver), Some(etcd), Some(etcdctl)) => Some(Binaries {
            apiserver,
            etcd,
            etcdctl,
            kube_controller_manager: None,
        }),
        _ => None,
    })
}

/// The first of `names` that is an executable beside `etcd`: the etcdctl that came
/// with a user-provided etcd is preferred over one found elsewhere.
fn beside(etcd: Option<&Path>, names: &[&str]) -> Option<PathBuf> {
    let dir = etcd?.parent()?;
    names
        .iter()
        .map(|name| dir.join(name))
        .find(|p| is_executable(p))
}

/// The program `name` in the install cache's `bin/`, if it is there.
fn in_cache(name: &str) -> Option<PathBuf> {
    cache_dir()
        .map(|dir| dir.join("bin").join(name))
        .filter(|p| is_executable(p))
}

/// A binary named by an environment variable; it is an error for the variable to name
/// something that is not there, since the user asked for exactly that file.
fn from_env(var: &'static str) -> Result<Option<PathBuf>, TestEnvError> {
    match std::env::var_os(var) {
        None => Ok(None),
        Some(path) => {
            let path = PathBuf::from(path);
            if is_executable(&path) {
                Ok(Some(path))
            } else {
                Err(TestEnvError::NotInstalled(format!(
                    "{var}={} is not an executable file",
                    path.display()
                )))
            }
        }
    }
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Writes [`INSTALL_FILES`] under `root` as they lie in the repository; returns the
/// install script's path.
fn lay_out_install_files(root: &Path) -> Result<PathBuf, TestEnvError> {
    for (relative, contents) in INSTALL_FILES {
        let path = root.join(relative);
        let io = |source| TestEnvError::Io {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&path, contents).map_err(io)?;
    }
    Ok(root.join(INSTALL_SCRIPT))
}

async fn run_install_script(version: Kubernetes) -> Result<(), TestEnvError> {
    let (what, minutes) = match version {
        Kubernetes::V1_20 => (
            "etcd, kube-apiserver or kube-controller-manager",
            "about 10-15 minutes",
        ),
        Kubernetes::V1_36 => (
            "crd-apiserver, etcd-3.5 or etcdctl-3.5 (or the 1.20 control plane, built too)",
            "about 6-7 minutes for the 1.36 control plane, 15 with the 1.20 one",
        ),
    };
    eprintln!(
        "informer-testenv: a control-plane binary ({what}) is missing; installing it (the \
         first install takes {minutes} on 2 cores, later runs reuse the cache)"
    );
    let root = tempfile::Builder::new()
        .prefix("informer-install-")
        .tempdir()
        .map_err(|source| TestEnvError::Io {
            path: std::env::temp_dir(),
            source,
        })?;
    let script = lay_out_install_files(root.path())?;
    let mut command = tokio::process::Command::new("bash");
    command.arg(&script);
    if version == Kubernetes::V1_20 {
        command.arg("--no-crd-apiserver");
    }
    let status = command
        .stdin(Stdio::null())
        // The script prints the bin directory on stdout; progress goes to stderr.
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .await
        .map_err(|source| TestEnvError::Spawn {
            program: "bash".into(),
            source,
        })?;
    if status.success() {
        return Ok(());
    }
    let variables = match version {
        Kubernetes::V1_20 => {
            "INFORMER_KUBE_APISERVER, INFORMER_ETCD and INFORMER_ETCDCTL (or put etcd and \
             etcdctl on PATH), INFORMER_KUBE_CONTROLLER_MANAGER if the control plane runs one"
        }
        Kubernetes::V1_36 => {
            "INFORMER_CRD_APISERVER (a server built from scripts/crd-apiserver/main.go), \
             INFORMER_ETCD_3_5 and INFORMER_ETCDCTL_3_5 (etcd >= 3.5.13)"
        }
    };
    Err(TestEnvError::NotInstalled(format!(
        "scripts/install-control-plane.sh failed ({status}; its output is above). It needs \
         Debian's apt; to use binaries you already have, set {variables}, and \
         INFORMER_TESTENV_NO_INSTALL=1"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded files, laid out in a directory of their own, are what the script
    /// finds: it sources its helper and names the files the sources of its builds,
    /// byte for byte the repository's (so crd-apiserver's recorded SHA-256 matches
    /// and a cached server is not rebuilt).
    #[test]
    fn the_embedded_install_script_finds_its_files_outside_the_repository() {
        let root = tempfile::tempdir().unwrap();
        let script = lay_out_install_files(root.path()).unwrap();
        let probe = format!(
            r#"set -euo pipefail
            . "$(dirname "{script}")/sid-go-build.sh"
            peer_source="$(cd "$(dirname "{script}")/.." && pwd)/benches/client-go/main.go"
            sha256sum "$crd_apiserver_source" "$peer_source" | cut -d' ' -f1"#,
            script = script.display()
        );
        let embedded = std::process::Command::new("bash")
            .args(["-c", &probe])
            .output()
            .unwrap();
        assert!(
            embedded.status.success(),
            "{}",
            String::from_utf8_lossy(&embedded.stderr)
        );
        let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let original = std::process::Command::new("sha256sum")
            .arg(repository.join("scripts/crd-apiserver/main.go"))
            .arg(repository.join("benches/client-go/main.go"))
            .output()
            .unwrap();
        let hashes = |out: &[u8]| {
            String::from_utf8_lossy(out)
                .lines()
                .map(|l| l.split(' ').next().unwrap_or_default().to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(hashes(&embedded.stdout), hashes(&original.stdout));
        assert_eq!(hashes(&embedded.stdout).len(), 2);

        // The script itself starts, sources its helper and reads its arguments.
        let help = std::process::Command::new("bash")
            .arg(&script)
            .arg("--help")
            .output()
            .unwrap();
        assert!(
            help.status.success(),
            "{}",
            String::from_utf8_lossy(&help.stderr)
        );
        assert!(String::from_utf8_lossy(&help.stderr).contains("--no-crd-apiserver"));
    }
}
