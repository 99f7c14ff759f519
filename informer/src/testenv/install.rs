//! Finding the control plane's binaries, and installing them when they are missing.
//!
//! Lookup, for a control plane of the default release (no
//! [`TestEnvBuilder::kubernetes`](super::TestEnvBuilder::kubernetes) call):
//!
//! 1. `KUBEBUILDER_ASSETS`, the ecosystem's convention (controller-runtime's envtest,
//!    laid out by its `setup-envtest`): a folder holding `kube-apiserver` and `etcd`,
//!    used whatever their release, so binaries a kube-rs or controller-runtime user
//!    already has just work. `kube-controller-manager` is taken from there too when the
//!    folder has one (envtest's do not).
//! 2. The install cache, `$INFORMER_CACHE_DIR` (default `~/.cache/informer-testenv`),
//!    `k8s/<release>-linux-amd64/`: the same layout, so that folder can be
//!    `KUBEBUILDER_ASSETS` for envtest in turn.
//!
//! A control plane that names its release takes `KUBEBUILDER_ASSETS` only when its
//! `kube-apiserver --version` is that release's minor version, and the cache otherwise.
//! `INFORMER_KUBE_CONTROLLER_MANAGER` names a kube-controller-manager for the default
//! release, before both.
//!
//! When something needed is still missing, the project's install script builds and
//! caches it, unless `INFORMER_TESTENV_NO_INSTALL` is set. The script
//! (`scripts/install-control-plane.sh`) reads the pinned Go modules of each release
//! from `scripts/control-plane/` beside it; script and modules are embedded here and
//! laid out in a temporary directory as in the repository, so the library installs
//! what it needs from any working directory, also outside the repository. A control
//! plane only waits for what it runs: its release, and kube-controller-manager only
//! when it asks for one.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::version::minor_of;
use super::{Kubernetes, TestEnvError};

/// The install script and the files it reads, embedded with their paths relative to
/// the repository's root, so that the library can lay them out as the script expects
/// them and run it from any working directory.
const INSTALL_FILES: [(&str, &str); 9] = [
    (
        INSTALL_SCRIPT,
        include_str!("../../../scripts/install-control-plane.sh"),
    ),
    (
        "scripts/control-plane/1.37/kubernetes/go.mod",
        include_str!("../../../scripts/control-plane/1.37/kubernetes/go.mod"),
    ),
    (
        "scripts/control-plane/1.37/kubernetes/go.sum",
        include_str!("../../../scripts/control-plane/1.37/kubernetes/go.sum"),
    ),
    (
        "scripts/control-plane/1.37/etcd/go.mod",
        include_str!("../../../scripts/control-plane/1.37/etcd/go.mod"),
    ),
    (
        "scripts/control-plane/1.37/etcd/go.sum",
        include_str!("../../../scripts/control-plane/1.37/etcd/go.sum"),
    ),
    (
        "scripts/control-plane/1.33/kubernetes/go.mod",
        include_str!("../../../scripts/control-plane/1.33/kubernetes/go.mod"),
    ),
    (
        "scripts/control-plane/1.33/kubernetes/go.sum",
        include_str!("../../../scripts/control-plane/1.33/kubernetes/go.sum"),
    ),
    (
        "scripts/control-plane/1.33/etcd/go.mod",
        include_str!("../../../scripts/control-plane/1.33/etcd/go.mod"),
    ),
    (
        "scripts/control-plane/1.33/etcd/go.sum",
        include_str!("../../../scripts/control-plane/1.33/etcd/go.sum"),
    ),
];

/// Where the install script sits among [`INSTALL_FILES`].
const INSTALL_SCRIPT: &str = "scripts/install-control-plane.sh";

/// Paths of the programs a control plane runs, and the release they are.
#[derive(Debug, Clone)]
pub(crate) struct Binaries {
    pub(crate) apiserver: PathBuf,
    pub(crate) etcd: PathBuf,
    /// Found only when asked for ([`ensure_installed`] with `controller_manager`).
    pub(crate) kube_controller_manager: Option<PathBuf>,
    /// The API server's minor version, from its `--version` (`None` when that names
    /// no release, as a build from an untagged tree does).
    pub(crate) minor: Option<u32>,
}

/// Finds the binaries of `release` (`None`: the default release, or whatever
/// `KUBEBUILDER_ASSETS` holds), running the install script first if any is missing;
/// kube-controller-manager only counts when `controller_manager` is set.
pub(crate) async fn ensure_installed(
    release: Option<Kubernetes>,
    controller_manager: bool,
) -> Result<Binaries, TestEnvError> {
    if let Some(found) = find(release, controller_manager)? {
        return Ok(found);
    }
    let kubernetes = release.unwrap_or_default();
    if std::env::var_os("INFORMER_TESTENV_NO_INSTALL").is_some() {
        return Err(TestEnvError::NotInstalled(format!(
            "a binary of the {kubernetes} control plane is missing and \
             INFORMER_TESTENV_NO_INSTALL is set"
        )));
    }
    run_install_script(kubernetes, controller_manager).await?;
    find(release, controller_manager)?.ok_or_else(|| {
        TestEnvError::NotInstalled(format!(
            "the install script ran but a binary of the {kubernetes} control plane is still missing"
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

/// The install cache's folder for `release`, in setup-envtest's layout.
fn release_dir(release: Kubernetes) -> Option<PathBuf> {
    cache_dir().map(|dir| {
        dir.join("k8s")
            .join(format!("{}-linux-amd64", release.release()))
    })
}

fn find(
    release: Option<Kubernetes>,
    controller_manager: bool,
) -> Result<Option<Binaries>, TestEnvError> {
    let kubernetes = release.unwrap_or_default();
    let assets = kubebuilder_assets()
        .map(|dir| Ok::<_, TestEnvError>((version_minor(&dir.join("kube-apiserver"))?, dir)))
        .transpose()?
        .filter(|(minor, _)| match release {
            None => true,
            Some(release) => minor.is_some_and(|m| release.minor() == format!("1.{m}")),
        });
    let (minor, dir) = match assets {
        Some((minor, dir)) => (minor, dir),
        None => {
            let Some(dir) = release_dir(kubernetes) else {
                return Ok(None);
            };
            let apiserver = dir.join("kube-apiserver");
            if !is_executable(&apiserver) || !is_executable(&dir.join("etcd")) {
                return Ok(None);
            }
            (version_minor(&apiserver)?, dir)
        }
    };
    let kube_controller_manager = if controller_manager {
        let named = match release {
            None => from_env("INFORMER_KUBE_CONTROLLER_MANAGER")?,
            Some(_) => None,
        };
        let found = named
            .or_else(|| Some(dir.join("kube-controller-manager")).filter(|p| is_executable(p)))
            .or_else(|| {
                release_dir(kubernetes)
                    .map(|d| d.join("kube-controller-manager"))
                    .filter(|p| is_executable(p))
            });
        if found.is_none() {
            return Ok(None);
        }
        found
    } else {
        None
    };
    Ok(Some(Binaries {
        apiserver: dir.join("kube-apiserver"),
        etcd: dir.join("etcd"),
        kube_controller_manager,
        minor,
    }))
}

/// The folder `KUBEBUILDER_ASSETS` names, when it holds kube-apiserver and etcd.
fn kubebuilder_assets() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("KUBEBUILDER_ASSETS")?);
    (is_executable(&dir.join("kube-apiserver")) && is_executable(&dir.join("etcd"))).then_some(dir)
}

/// The minor version `apiserver --version` names.
fn version_minor(apiserver: &Path) -> Result<Option<u32>, TestEnvError> {
    let output = std::process::Command::new(apiserver)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|source| TestEnvError::Spawn {
            program: apiserver.to_path_buf(),
            source,
        })?;
    Ok(minor_of(&String::from_utf8_lossy(&output.stdout)))
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

async fn run_install_script(
    kubernetes: Kubernetes,
    controller_manager: bool,
) -> Result<(), TestEnvError> {
    let what = if controller_manager {
        "kube-apiserver, kube-controller-manager or etcd"
    } else {
        "kube-apiserver or etcd"
    };
    eprintln!(
        "informer-testenv: a binary of the {kubernetes} control plane ({what}) is missing; \
         building it from Go modules (the first build takes about 8-12 minutes on 2 cores, \
         later runs reuse the cache; KUBEBUILDER_ASSETS names binaries you already have)"
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
    command
        .arg(&script)
        .args(["--kubernetes", kubernetes.minor()]);
    if !controller_manager {
        command.arg("--no-controller-manager");
    }
    let status = command
        .stdin(Stdio::null())
        // The script prints the release's folder on stdout; progress goes to stderr.
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
    Err(TestEnvError::NotInstalled(format!(
        "scripts/install-control-plane.sh failed ({status}; its output is above). It needs Go \
         (1.26 or later for Kubernetes 1.37) and the Go module proxy; to use binaries you \
         already have, set KUBEBUILDER_ASSETS to a folder with kube-apiserver and etcd (and \
         INFORMER_KUBE_CONTROLLER_MANAGER if the control plane runs one), and \
         INFORMER_TESTENV_NO_INSTALL=1"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded files, laid out in a directory of their own, are the repository's
    /// byte for byte, and the script finds every release's modules there.
    #[test]
    fn the_embedded_install_script_finds_its_files_outside_the_repository() {
        let root = tempfile::tempdir().unwrap();
        let script = lay_out_install_files(root.path()).unwrap();
        let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for (relative, contents) in INSTALL_FILES {
            assert_eq!(
                std::fs::read_to_string(repository.join(relative)).unwrap(),
                contents,
                "{relative}"
            );
        }
        // Every release folder of the repository is embedded.
        let releases = std::fs::read_dir(repository.join("scripts/control-plane"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect::<Vec<_>>();
        for release in &releases {
            for module in ["kubernetes", "etcd"] {
                for file in ["go.mod", "go.sum"] {
                    let relative = format!("scripts/control-plane/{release}/{module}/{file}");
                    assert!(
                        INSTALL_FILES.iter().any(|(path, _)| *path == relative),
                        "{relative} is not embedded"
                    );
                }
            }
        }

        // The script starts, reads its arguments and lists the releases it found.
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
        let usage = String::from_utf8_lossy(&help.stderr);
        for release in Kubernetes::ALL {
            assert!(usage.contains(release.minor()), "{usage}");
        }
        assert_eq!(releases.len(), Kubernetes::ALL.len(), "{releases:?}");
    }
}
