//! A real Kubernetes control plane on loopback, for tests and demos.
//!
//! In the spirit of controller-runtime's envtest: [`TestEnv::start`] runs etcd and an
//! API server on free loopback ports, with TLS that clients verify and token
//! authentication. It hands back verified [`kube::Client`]s for an admin and for a
//! restricted user, a kubeconfig file, and levers for the faults an informer must
//! survive: restarting the API server while etcd keeps its data, running without the
//! watch cache, compacting etcd so that old resourceVersions answer 410 Gone, and a
//! [`FaultProxy`] that cuts one client off while others go on writing; and
//! [`FaultyWatches`], a lister-watcher that loses or reorders one watch event, drift
//! for consistency checks to find. The binaries
//! are built by `scripts/install-control-plane.sh`, which runs by itself on first use.
//!
//! # Which Kubernetes
//!
//! A whole control plane of a real release, built as a Go module build of
//! `k8s.io/kubernetes` (see [`Kubernetes`]): kube-apiserver with every built-in API
//! (Namespaces, ConfigMaps, Pods, Leases, Events, RBAC, CustomResourceDefinitions), and
//! on request ([`TestEnvBuilder::controller_manager`]) kube-controller-manager's
//! garbage collector and namespace controller, so that owner references cascade and
//! deleted namespaces go away, as on a cluster.
//!
//! - **1.37** (the default, [`Kubernetes::V1_37`]): kube-apiserver 1.37.2 on etcd
//!   3.7.0. Streaming lists are served (ADDED events, then a BOOKMARK annotated
//!   `k8s.io/initial-events-end: "true"`), consistent lists come from the watch cache,
//!   and the alpha gate `ShardedListAndWatch` is on
//!   ([`TestEnvBuilder::sharded_list_and_watch`]).
//! - **1.33** ([`Kubernetes::V1_33`]): kube-apiserver 1.33.13 on etcd 3.5.24, the
//!   oldest release `k8s-openapi` 0.29 supports, for compatibility tests. It does not
//!   serve streaming lists (its `WatchList` gate is off by default: a watch asking for
//!   initial events is 422), and has no sharded lists.
//!
//! [`TestEnvBuilder::kubernetes`] picks one; [`TestEnv::shared`] is one control plane of
//! the default release per process. With `KUBEBUILDER_ASSETS` set (a folder with
//! `kube-apiserver` and `etcd`, as controller-runtime's `setup-envtest` lays it out),
//! those binaries run instead of the ones built here, whatever their release, unless
//! the control plane names its release (then only a folder of that release is used);
//! see `install.rs` for the exact lookup. Any feature a test relies on must be in the
//! release it runs: [`TestEnv::kubernetes`] says which release was asked for.
//!
//! On both, a watch or list from a compacted resourceVersion is 410 Gone at once only
//! without the watch cache ([`TestEnvBuilder::watch_cache`]); with it, the server
//! answers from its cache until it restarts (see [`TestEnv::compact_etcd`]).
//!
//! Dropping the [`TestEnv`] stops the servers and deletes their files. Servers run
//! under a supervisor tied to this process, so nothing is left running even when the
//! process exits without dropping it (as with [`TestEnv::shared`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use informer::testenv::{Kubernetes, TestEnv};
//!
//! // One control plane for the whole test binary; each test takes its own namespace.
//! let env = TestEnv::shared().await?;
//! let client = env.client()?;
//! let namespace = env.create_namespace("my-test").await?;
//!
//! // The oldest supported release, for a compatibility test of its own.
//! let oldest = TestEnv::builder().kubernetes(Kubernetes::V1_33).start().await?;
//! let namespace_133 = oldest.create_namespace("my-test").await?;
//! # let _ = (client, namespace, namespace_133);
//! # Ok(())
//! # }
//! ```
//!
//! Environment variables: `KUBEBUILDER_ASSETS` (above) and
//! `INFORMER_KUBE_CONTROLLER_MANAGER` point at binaries you already have;
//! `INFORMER_CACHE_DIR` moves the install cache (default `~/.cache/informer-testenv`);
//! `INFORMER_TESTENV_NO_INSTALL` forbids installing; `INFORMER_TESTENV_KEEP` keeps the
//! servers' directory (logs, data, certificates) after they stop, for debugging.

mod controller_manager;
mod credentials;
mod error;
mod etcd;
mod faulty_watches;
mod flags;
mod install;
mod levers;
mod pki;
mod process;
mod proxy;
mod readiness;
mod resources;
mod version;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use kube::{Client, Config};
use tokio::sync::OnceCell;

use process::Supervised;

pub use error::TestEnvError;
pub use faulty_watches::FaultyWatches;
pub use proxy::FaultProxy;
pub use version::Kubernetes;

/// How long a server may take to become ready.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// The user name of the restricted user: authenticated, but RBAC grants it nothing
/// until a test binds a role to it ([`TestEnv::allow_restricted`]).
pub(crate) const RESTRICTED_USER: &str = "restricted";

/// The admin's user name (member of `system:masters`).
pub(crate) const ADMIN_USER: &str = "admin";

/// Options for a [`TestEnv`]; start one with [`TestEnvBuilder::start`].
#[derive(Debug, Clone)]
#[must_use]
pub struct TestEnvBuilder {
    /// `None`: the default release, or what `KUBEBUILDER_ASSETS` holds.
    kubernetes: Option<Kubernetes>,
    watch_cache: bool,
    sharded_list_and_watch: bool,
    extra_apiserver_args: Vec<String>,
    controller_manager: bool,
    extra_controller_manager_args: Vec<String>,
}

impl Default for TestEnvBuilder {
    fn default() -> Self {
        Self {
            kubernetes: None,
            watch_cache: true,
            sharded_list_and_watch: true,
            extra_apiserver_args: Vec::new(),
            controller_manager: false,
            extra_controller_manager_args: Vec::new(),
        }
    }
}

impl TestEnvBuilder {
    /// Which Kubernetes to run: [`Kubernetes::V1_37`] (the default) or
    /// [`Kubernetes::V1_33`]. See [`Kubernetes`] for what each serves. Naming the
    /// release also means that `KUBEBUILDER_ASSETS` is used only when it holds that
    /// release (see the [module docs](self)).
    pub fn kubernetes(mut self, release: Kubernetes) -> Self {
        self.kubernetes = Some(release);
        self
    }

    /// Runs the API server with (`true`, the default) or without its watch cache.
    ///
    /// Without it, every list and watch is served by etcd, so a watch from a
    /// compacted resourceVersion answers 410 Gone at once (see
    /// [`TestEnv::compact_etcd`]).
    pub fn watch_cache(mut self, enabled: bool) -> Self {
        self.watch_cache = enabled;
        self
    }

    /// Runs the API server with its sharded list and watch (`true`, the default: the
    /// alpha feature gate `ShardedListAndWatch` on) or without (`false`: the gate off,
    /// as on a cluster that never turned it on). With it, a list or watch with a
    /// `shardSelector` gets only the objects whose field hashes into the selector's
    /// ranges, and a list says so in `metadata.shardInfo`; without it the parameter is
    /// ignored. Releases before 1.36 have no such feature: this changes nothing there.
    pub fn sharded_list_and_watch(mut self, enabled: bool) -> Self {
        self.sharded_list_and_watch = enabled;
        self
    }

    /// Adds a command-line flag for kube-apiserver, e.g. `--v=4`, or
    /// `--feature-gates=WatchList=false` for a server that refuses streaming lists
    /// (several `--feature-gates` flags add up).
    pub fn apiserver_arg(mut self, arg: impl Into<String>) -> Self {
        self.extra_apiserver_args.push(arg.into());
        self
    }

    /// Also runs kube-controller-manager (`true`) or not (`false`, the default), with
    /// its garbage collector and namespace controller only.
    ///
    /// What it gives: deleting an owner deletes its dependents (background
    /// propagation, the default, within a fraction of a second), a foreground deletion
    /// finishes once the dependents that block it are gone, an orphaning one strips
    /// the owner references, and a deleted namespace is emptied and disappears instead
    /// of staying `Terminating` (about 5 s later: the namespace controller waits that
    /// long before acting, as on a cluster). The collector finds a
    /// CustomResourceDefinition's resource up to 30 s after it is installed, as on a
    /// cluster. Nothing else a cluster's controllers do runs: no Deployment makes
    /// ReplicaSets, no ServiceAccount gets a token. Its log is
    /// `kube-controller-manager.log` in [`TestEnv::dir`].
    ///
    /// What it costs: each start waits a moment more, for it to serve its health
    /// endpoint. The first use builds it, when kube-apiserver was built alone before
    /// (then it is cached too, see `scripts/install-control-plane.sh`), unless
    /// `INFORMER_KUBE_CONTROLLER_MANAGER` points at one you have. Off by default, so
    /// that a plain control plane starts as fast as it can and never waits for that
    /// build.
    pub fn controller_manager(mut self, enabled: bool) -> Self {
        self.controller_manager = enabled;
        self
    }

    /// Adds a command-line flag for kube-controller-manager, e.g. `--v=4`, or
    /// `--controllers=garbagecollector,namespace,replicaset` for more controllers
    /// (a flag given here wins over the same one set by default). Only used with
    /// [`controller_manager(true)`](Self::controller_manager).
    pub fn controller_manager_arg(mut self, arg: impl Into<String>) -> Self {
        self.extra_controller_manager_args.push(arg.into());
        self
    }

    /// Installs the binaries if needed, starts etcd and the API server (and
    /// kube-controller-manager when asked), and waits until they are ready.
    pub async fn start(self) -> Result<TestEnv, TestEnvError> {
        TestEnv::start_with(self).await
    }
}

/// A running etcd + API server pair on loopback. See the [module docs](self).
#[derive(Debug)]
pub struct TestEnv {
    kubernetes: Kubernetes,
    dir: PathBuf,
    binaries: install::Binaries,
    etcd_url: String,
    apiserver_port: u16,
    apiserver_args: Vec<String>,
    kubeconfig: PathBuf,
    admin: Config,
    restricted: Config,
    etcd: Mutex<Option<Supervised>>,
    apiserver: Mutex<Option<Supervised>>,
    controller_manager: Option<Supervised>,
    namespaces: AtomicU64,
}

impl TestEnv {
    /// Starts a control plane with default options: a fresh etcd and a Kubernetes
    /// 1.37 API server with its watch cache on.
    pub async fn start() -> Result<Self, TestEnvError> {
        Self::builder().start().await
    }

    /// Options for a control plane.
    pub fn builder() -> TestEnvBuilder {
        TestEnvBuilder::default()
    }

    /// The control plane shared by everything in this process, started on first use.
    ///
    /// Tests in one binary share it and isolate themselves by namespace
    /// ([`TestEnv::create_namespace`]). Tests that pull fault levers (restart,
    /// compaction) should start their own with [`TestEnv::start`] instead, since the
    /// faults would reach every other test. The servers stop when the process exits.
    pub async fn shared() -> Result<&'static Self, TestEnvError> {
        static SHARED: OnceCell<TestEnv> = OnceCell::const_new();
        SHARED.get_or_try_init(Self::start).await
    }

    async fn start_with(options: TestEnvBuilder) -> Result<Self, TestEnvError> {
        let kubernetes = options.kubernetes.unwrap_or_default();
        let binaries =
            install::ensure_installed(options.kubernetes, options.controller_manager).await?;
        let dir = tempfile::Builder::new()
            .prefix("informer-testenv-")
            .tempdir()
            .map_err(|source| TestEnvError::Io {
                path: std::env::temp_dir(),
                source,
            })?
            .keep();
        let pki = pki::write(&dir)?;

        let admin_token = credentials::random_token();
        let restricted_token = credentials::random_token();
        let tokens = dir.join("tokens.csv");
        credentials::write_token_file(&tokens, &admin_token, &restricted_token)?;

        let etcd_port = free_port(&dir)?;
        let etcd_peer_port = free_port(&dir)?;
        let apiserver_port = free_port(&dir)?;
        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let etcd_peer_url = format!("http://127.0.0.1:{etcd_peer_port}");

        let kubeconfig = dir.join("kubeconfig");
        credentials::write_kubeconfig(
            &kubeconfig,
            apiserver_port,
            &pki.ca_cert,
            &admin_token,
            &restricted_token,
        )?;
        let admin = credentials::load_config(&kubeconfig, ADMIN_USER).await?;
        let restricted = credentials::load_config(&kubeconfig, RESTRICTED_USER).await?;

        let keep = std::env::var_os("INFORMER_TESTENV_KEEP").is_some();
        let etcd_args = vec![
            "--name=default".to_owned(),
            format!("--data-dir={}", dir.join("etcd").display()),
            format!("--listen-client-urls={etcd_url}"),
            format!("--advertise-client-urls={etcd_url}"),
            format!("--listen-peer-urls={etcd_peer_url}"),
            format!("--initial-advertise-peer-urls={etcd_peer_url}"),
            format!("--initial-cluster=default={etcd_peer_url}"),
            "--log-level=warn".to_owned(),
            "--logger=zap".to_owned(),
        ];
        // etcd stops last, so its supervisor removes the whole directory.
        let etcd = Supervised::spawn(
            "etcd",
            &binaries.etcd,
            &etcd_args,
            &dir.join("etcd.log"),
            (!keep).then_some(dir.as_path()),
        )?;
        readiness::wait_for_etcd(&etcd, &etcd_url).await?;

        let mut apiserver_args = flags::apiserver_args(
            binaries.minor,
            &etcd_url,
            apiserver_port,
            &dir,
            &pki,
            &tokens,
            options.watch_cache,
            options.sharded_list_and_watch,
        );
        apiserver_args.extend(options.extra_apiserver_args);

        let mut env = Self {
            kubernetes,
            dir,
            binaries,
            etcd_url,
            apiserver_port,
            apiserver_args,
            kubeconfig,
            admin,
            restricted,
            etcd: Mutex::new(Some(etcd)),
            apiserver: Mutex::new(None),
            controller_manager: None,
            namespaces: AtomicU64::new(0),
        };
        env.start_apiserver().await?;
        if options.controller_manager {
            let program = env
                .binaries
                .kube_controller_manager
                .clone()
                .ok_or_else(|| {
                    TestEnvError::NotInstalled("kube-controller-manager was not found".into())
                })?;
            let manager = env
                .start_controller_manager(&program, &pki, options.extra_controller_manager_args)
                .await?;
            env.controller_manager = Some(manager);
        }
        Ok(env)
    }

    /// A client for the admin user (in `system:masters`), verifying the server's
    /// certificate against the control plane's CA. Must be called inside a tokio
    /// runtime; each call builds a new client bound to the calling runtime.
    pub fn client(&self) -> Result<Client, TestEnvError> {
        Client::try_from(self.admin.clone()).map_err(TestEnvError::Client)
    }

    /// A client for the restricted user (`restricted`), whom RBAC denies everything until a test
    /// grants it a role ([`TestEnv::allow_restricted`]).
    pub fn restricted_client(&self) -> Result<Client, TestEnvError> {
        Client::try_from(self.restricted.clone()).map_err(TestEnvError::Client)
    }

    /// The admin's client configuration.
    pub fn config(&self) -> &Config {
        &self.admin
    }

    /// The restricted user's client configuration.
    pub fn restricted_config(&self) -> &Config {
        &self.restricted
    }

    /// A kubeconfig file with two contexts, `admin` (current) and `restricted`, for
    /// `kubectl --kubeconfig` or `KUBECONFIG`.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The Kubernetes release this control plane was asked for (the default when none
    /// was named; with `KUBEBUILDER_ASSETS`, its binaries may be another release: the
    /// server's `/version` tells).
    pub fn kubernetes(&self) -> Kubernetes {
        self.kubernetes
    }

    /// The API server's URL, e.g. `https://127.0.0.1:34567`.
    pub fn apiserver_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.apiserver_port)
    }

    /// etcd's client URL, e.g. `http://127.0.0.1:34568`.
    pub fn etcd_url(&self) -> &str {
        &self.etcd_url
    }

    /// The directory holding certificates, logs (`etcd.log`, `kube-apiserver.log`,
    /// `kube-controller-manager.log` when it runs) and etcd's data.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        // The controller manager first, while the API server can still answer it.
        if let Some(mut manager) = self.controller_manager.take() {
            manager.stop();
        }
        // The API server next: etcd's supervisor removes the directory after etcd.
        if let Some(mut server) = self
            .apiserver
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            server.stop();
        }
        if let Some(mut server) = self
            .etcd
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            server.stop();
        }
    }
}

/// A port that was free a moment ago, chosen below the kernel's ephemeral range: a
/// port from the range (what binding port 0 hands out) may be taken, before the
/// server binds it, as the local port of any outgoing connection on the machine, and
/// the tests make thousands of those. A port handed out before in this process is
/// never handed out again, so control planes started at once in one process do not
/// collide either. Falls back to the ephemeral range if no port below is free.
fn free_port(dir: &Path) -> Result<u16, TestEnvError> {
    use rand::Rng;

    use crate::lock::MutexExt;
    static HANDED_OUT: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let below = ephemeral_range_start().clamp(10_001, 32_768);
    let mut handed_out = HANDED_OUT.locked();
    for _ in 0..200 {
        let port = rand::rng().random_range(10_000..below);
        if !handed_out.contains(&port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            handed_out.push(port);
            return Ok(port);
        }
    }
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|source| TestEnvError::Io {
            path: dir.to_path_buf(),
            source,
        })
}

/// The first port of the kernel's ephemeral range (Linux's
/// `net.ipv4.ip_local_port_range`; 32768, its default, elsewhere).
fn ephemeral_range_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::TestEnvError;

    #[test]
    fn errors_with_a_cause_say_it() {
        let missing = || std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let spawn = TestEnvError::Spawn {
            program: PathBuf::from("/cache/bin/etcd"),
            source: missing(),
        };
        assert_eq!(
            spawn.to_string(),
            "could not run /cache/bin/etcd: No such file"
        );
        let io = TestEnvError::Io {
            path: PathBuf::from("/tmp/env/kubeconfig"),
            source: missing(),
        };
        assert_eq!(io.to_string(), "I/O on /tmp/env/kubeconfig: No such file");
        let kubeconfig = TestEnvError::Kubeconfig(kube::config::KubeconfigError::LoadContext(
            "no context named admin".to_owned(),
        ));
        assert_eq!(
            kubeconfig.to_string(),
            "loading the generated kubeconfig: failed to load current context: no context named admin"
        );
        let unauthorized =
            kube::core::Status::failure("Unauthorized", "Unauthorized").with_code(401);
        let client = TestEnvError::Client(kube::Error::Api(unauthorized.boxed()));
        assert_eq!(
            client.to_string(),
            "talking to the API server: 401 Unauthorized"
        );
    }
}
