//! The worker processes: finding (and building) the worker binary, running one, and
//! reading its output.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::io::{AsyncBufReadExt as _, BufReader};

use super::Bench;
use crate::report::{Implementation, WorkerReport};

/// `bench-worker` built with mimalloc as its global allocator (scenario 5's second rows).
pub(super) const MIMALLOC_WORKER: &str = "bench-worker-mimalloc";

/// Whether `name` is one of the variables `cargo run` sets for the program it runs
/// (describing its package), as opposed to the user's settings for cargo itself.
fn set_by_cargo_run(name: &str) -> bool {
    matches!(
        name,
        "CARGO_MANIFEST_DIR"
            | "CARGO_MANIFEST_PATH"
            | "CARGO_MANIFEST_LINKS"
            | "CARGO_CRATE_NAME"
            | "CARGO_BIN_NAME"
            | "CARGO_PRIMARY_PACKAGE"
    ) || name.starts_with("CARGO_PKG_")
}

/// The worker binary: `bench-worker` beside this executable (with
/// [`MIMALLOC_WORKER`] beside it), both built first when the driver runs under cargo.
pub(super) fn worker_path() -> anyhow::Result<PathBuf> {
    if let Some(cargo) = std::env::var_os("CARGO") {
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut command = std::process::Command::new(cargo);
        command.current_dir(&workspace).args([
            "build",
            "--quiet",
            "-p",
            "informer-benches",
            "--bin",
            "bench-worker",
            "--bin",
            MIMALLOC_WORKER,
        ]);
        if !cfg!(debug_assertions) {
            command.arg("--release");
        }
        // `cargo run` gave this process the variables it sets for a package's program;
        // passed on, they reach build scripts (ring's reruns when `CARGO_MANIFEST_DIR`
        // changes), so the nested build and the next plain one each rebuilt ring,
        // rustls and kube. The nested build gets the environment of a plain cargo.
        for (name, _) in std::env::vars_os() {
            if name.to_str().is_some_and(set_by_cargo_run) {
                command.env_remove(name);
            }
        }
        let status = command.status().context("building the bench workers")?;
        if !status.success() {
            bail!("building the bench workers failed");
        }
    }
    let worker = std::env::current_exe()?.with_file_name("bench-worker");
    if !worker.exists() {
        bail!(
            "{} not found: build it with `cargo build --release -p informer-benches --bins`",
            worker.display()
        );
    }
    Ok(worker)
}

/// The Go peers' folder: beside the control plane's binaries, `$INFORMER_CACHE_DIR/bin`
/// (by default `~/.cache/informer-testenv/bin`), where `scripts/install-control-plane.sh`
/// installs them (`scripts/bench.sh` runs that first).
fn peers_dir() -> Option<PathBuf> {
    let cache = match std::env::var_os("INFORMER_CACHE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/informer-testenv"),
    };
    Some(cache.join("bin"))
}

/// client-go's peer (`benches/client-go`), `client-go-bench-peer` in [`peers_dir`]
/// (`scripts/install-control-plane.sh --client-go-peer` builds it); `None` when it is
/// not there.
pub(super) fn client_go_peer() -> Option<PathBuf> {
    let peer = peers_dir()?.join("client-go-bench-peer");
    peer.exists().then_some(peer)
}

/// controller-runtime's peer (`benches/controller-runtime`),
/// `controller-runtime-bench-peer` in [`peers_dir`]
/// (`scripts/install-control-plane.sh --controller-runtime-peer` builds it); `None`
/// when it is not there.
pub(super) fn controller_runtime_peer() -> Option<PathBuf> {
    let peer = peers_dir()?.join("controller-runtime-bench-peer");
    peer.exists().then_some(peer)
}

/// What a peer binary says of itself (`--version`: the modules it links), for the
/// driver's log and the notes under the table; `None` when it cannot tell.
pub(super) fn peer_version(peer: &Path) -> Option<String> {
    let output = std::process::Command::new(peer)
        .arg("--version")
        .output()
        .ok()?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    (output.status.success() && !version.is_empty()).then_some(version)
}

/// The program that runs `implementation`: client-go's peer, controller-runtime's, or
/// the Rust worker. Each takes the worker's arguments (the Go peers an implementation
/// argument of their own: client-go's the encoding, controller-runtime's its name).
pub(super) fn program<'a>(
    bench: &Bench<'a>,
    implementation: Implementation,
) -> anyhow::Result<&'a Path> {
    Ok(match implementation {
        Implementation::ClientGoJson | Implementation::ClientGoProtobuf => {
            bench.client_go.context("the client-go peer is not built")?
        }
        Implementation::ControllerRuntime => bench
            .controller_runtime
            .context("the controller-runtime peer is not built")?,
        _ => bench.worker,
    })
}

/// The program and arguments that run `implementation` in worker mode `mode` on
/// `namespace`: the Rust worker, or a Go peer (client-go's takes the encoding where the
/// worker takes the implementation).
pub(super) fn side_command(
    bench: &Bench<'_>,
    implementation: Implementation,
    mode: &str,
    namespace: &str,
) -> anyhow::Result<(PathBuf, [String; 3])> {
    let selector = match implementation {
        Implementation::ClientGoJson => "json",
        Implementation::ClientGoProtobuf => "protobuf",
        _ => implementation.as_str(),
    };
    Ok((
        program(bench, implementation)?.to_path_buf(),
        [mode.to_owned(), selector.to_owned(), namespace.to_owned()],
    ))
}

/// A worker the driver talks to ([`crate::handshake`]): its stdin for the driver's
/// go-ahead, the lines of its stdout.
pub(super) struct TalkingWorker {
    pub(super) child: tokio::process::Child,
    pub(super) stdin: tokio::process::ChildStdin,
    pub(super) lines: WorkerLines,
}

/// Starts `implementation` in worker mode `mode` on `namespace` against the shared
/// control plane, its stdin and stdout piped; it is killed when dropped.
pub(super) fn spawn_side(
    bench: &Bench<'_>,
    implementation: Implementation,
    mode: &str,
    namespace: &str,
) -> anyhow::Result<TalkingWorker> {
    let (program, args) = side_command(bench, implementation, mode, namespace)?;
    spawn_worker(bench, &program, &args)
}

/// Starts `program` with `args` against the shared control plane, its stdin and
/// stdout piped; it is killed when dropped.
pub(super) fn spawn_worker(
    bench: &Bench<'_>,
    program: &Path,
    args: &[String],
) -> anyhow::Result<TalkingWorker> {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if let Some(kubeconfig) = bench.kubeconfig {
        command.env("KUBECONFIG", kubeconfig);
    }
    let mut child = command.spawn()?;
    let stdin = child.stdin.take().context("worker stdin")?;
    let lines = BufReader::new(child.stdout.take().context("worker stdout")?).lines();
    Ok(TalkingWorker {
        child,
        stdin,
        lines,
    })
}

/// Runs `implementation` in worker mode `mode` on `namespace` to completion, against
/// the shared control plane; returns its report.
pub(super) async fn run_side(
    bench: &Bench<'_>,
    implementation: Implementation,
    mode: &str,
    namespace: &str,
) -> anyhow::Result<WorkerReport> {
    let (program, args) = side_command(bench, implementation, mode, namespace)?;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_worker(&program, bench.kubeconfig, &args).await
}

/// Runs one worker to completion and returns its report.
pub(super) async fn run_worker(
    worker: &Path,
    kubeconfig: Option<&Path>,
    args: &[&str],
) -> anyhow::Result<WorkerReport> {
    run_worker_with(worker, kubeconfig, args, &[]).await
}

/// [`run_worker`] with more environment variables.
pub(super) async fn run_worker_with(
    worker: &Path,
    kubeconfig: Option<&Path>,
    args: &[&str],
    env: &[(&str, &str)],
) -> anyhow::Result<WorkerReport> {
    let mut command = tokio::process::Command::new(worker);
    command.envs(env.iter().copied());
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if let Some(kubeconfig) = kubeconfig {
        command.env("KUBECONFIG", kubeconfig);
    }
    let output = command.output().await?;
    if !output.status.success() {
        bail!("worker {args:?} failed: {}", output.status);
    }
    parse_report(&String::from_utf8_lossy(&output.stdout))
}

pub(super) fn parse_report(stdout: &str) -> anyhow::Result<WorkerReport> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .context("the worker printed nothing")?;
    serde_json::from_str(line).with_context(|| format!("reading the worker's report {line:?}"))
}

/// The lines a worker prints.
pub(super) type WorkerLines = tokio::io::Lines<BufReader<tokio::process::ChildStdout>>;

/// How long a worker the driver talks to may take to sync, and then to report: far
/// above any scenario's time, so that a side that never gets there fails the run with
/// its mode named instead of hanging it.
const WORKER_STEP_TIMEOUT: Duration = Duration::from_secs(600);

/// Reads the worker's output until its `synced` line.
pub(super) async fn wait_for_sync(lines: &mut WorkerLines, mode: &str) -> anyhow::Result<()> {
    let synced = async {
        loop {
            let line = lines
                .next_line()
                .await?
                .with_context(|| format!("the {mode} worker exited before syncing"))?;
            if line.trim() == "synced" {
                return Ok(());
            }
        }
    };
    tokio::time::timeout(WORKER_STEP_TIMEOUT, synced)
        .await
        .with_context(|| format!("the {mode} worker did not sync in {WORKER_STEP_TIMEOUT:?}"))?
}

/// Reads the rest of the worker's output and waits for it; its report is the last line.
pub(super) async fn final_report(
    mut lines: WorkerLines,
    mut child: tokio::process::Child,
    mode: &str,
) -> anyhow::Result<WorkerReport> {
    let finished = async {
        let mut last = String::new();
        while let Some(line) = lines.next_line().await? {
            if !line.trim().is_empty() {
                last = line;
            }
        }
        anyhow::Ok((last, child.wait().await?))
    };
    // On a timeout the child is dropped, and killed (`kill_on_drop`).
    let (last, status) = tokio::time::timeout(WORKER_STEP_TIMEOUT, finished)
        .await
        .with_context(|| {
            format!("the {mode} worker did not report in {WORKER_STEP_TIMEOUT:?}")
        })??;
    if !status.success() {
        bail!("the {mode} worker failed: {status}");
    }
    parse_report(&last)
}
