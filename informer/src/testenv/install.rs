//! Finding the control plane's binaries, and installing them when they are missing.
//!
//! Lookup order for each binary: its environment variable (`INFORMER_KUBE_APISERVER`,
//! `INFORMER_KUBE_CONTROLLER_MANAGER`, `INFORMER_ETCD`, `INFORMER_ETCDCTL`) when set;
//! else the install cache (`$INFORMER_CACHE_DIR`, default `~/.cache/informer-testenv`)
//! for kube-apiserver and kube-controller-manager, and `PATH` for etcd and etcdctl.
//! kube-controller-manager is only looked for when a control plane asks for it, so a
//! plain one never waits for it to be built. When something needed is still missing,
//! the project's install script (`scripts/install-control-plane.sh`, embedded here)
//! builds and caches it, unless `INFORMER_TESTENV_NO_INSTALL` is set.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::TestEnvError;

/// The project's install script, embedded so that the library can install what it
/// needs from any working directory.
const INSTALL_SCRIPT: &str = include_str!("../../../scripts/install-control-plane.sh");

/// Paths of the programs a control plane runs.
#[derive(Debug, Clone)]
pub(crate) struct Binaries {
    pub(crate) kube_apiserver: PathBuf,
    pub(crate) etcd: PathBuf,
    pub(crate) etcdctl: PathBuf,
    /// Found only when asked for ([`ensure_installed`] with `controller_manager`).
    pub(crate) kube_controller_manager: Option<PathBuf>,
}

/// Finds the binaries, running the install script first if any is missing;
/// kube-controller-manager only counts when `controller_manager` is set.
pub(crate) async fn ensure_installed(controller_manager: bool) -> Result<Binaries, TestEnvError> {
    if let Some(found) = find(controller_manager)? {
        return Ok(found);
    }
    if std::env::var_os("INFORMER_TESTENV_NO_INSTALL").is_some() {
        return Err(TestEnvError::NotInstalled(
            "a binary is missing and INFORMER_TESTENV_NO_INSTALL is set".into(),
        ));
    }
    run_install_script().await?;
    find(controller_manager)?.ok_or_else(|| {
        TestEnvError::NotInstalled("the install script ran but a binary is still missing".into())
    })
}

/// The install cache, as the install script computes it.
fn cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("INFORMER_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache/informer-testenv"))
}

fn find(controller_manager: bool) -> Result<Option<Binaries>, TestEnvError> {
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
        .or_else(|| {
            // Prefer the etcdctl that sits beside a user-provided etcd.
            etcd.as_ref()
                .and_then(|e| e.parent())
                .map(|dir| dir.join("etcdctl"))
                .filter(|p| is_executable(p))
        })
        .or_else(|| on_path("etcdctl"));
    Ok(match (kube_apiserver, etcd, etcdctl) {
        (Some(kube_apiserver), Some(etcd), Some(etcdctl)) => Some(Binaries {
            kube_apiserver,
            etcd,
            etcdctl,
            kube_controller_manager,
        }),
        _ => None,
    })
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

async fn run_install_script() -> Result<(), TestEnvError> {
    eprintln!(
        "informer-testenv: a control-plane binary (etcd, kube-apiserver or \
         kube-controller-manager) is missing; installing it (the first install takes \
         about 10-15 minutes on 2 cores, later runs reuse the cache)"
    );
    let script = tempfile::Builder::new()
        .prefix("install-control-plane")
        .suffix(".sh")
        .tempfile()
        .map_err(|source| TestEnvError::Io {
            path: std::env::temp_dir(),
            source,
        })?;
    std::fs::write(script.path(), INSTALL_SCRIPT).map_err(|source| TestEnvError::Io {
        path: script.path().to_path_buf(),
        source,
    })?;
    let status = tokio::process::Command::new("bash")
        .arg(script.path())
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
        Ok(())
    } else {
        Err(TestEnvError::NotInstalled(format!(
            "scripts/install-control-plane.sh failed ({status}; its output is above). It \
             needs Debian's apt; to use binaries you already have, set \
             INFORMER_KUBE_APISERVER, INFORMER_ETCD and INFORMER_ETCDCTL (or put etcd and \
             etcdctl on PATH), INFORMER_KUBE_CONTROLLER_MANAGER if the control plane runs \
             one, and INFORMER_TESTENV_NO_INSTALL=1"
        )))
    }
}
