//! The driver: one control plane, the objects, every scenario, one table.
//!
//! ```text
//! bench [--pairs N] [--only 1,2,3,4,5,6,7] [--objects N] [--large-objects N]
//!       [--payload BYTES] [--large-payload BYTES] [--updates N]
//!       [--pipeline-objects N] [--pipeline-events N] [--json PATH] [--serve]
//! ```
//!
//! It starts [`TestEnv`] (etcd + kube-apiserver on loopback), creates the ConfigMaps
//! once (32 creates in flight) in `bench-small` and `bench-large`, then runs each
//! scenario's workers (the `bench-worker` binary next to this one) as child processes,
//! ours and kube-runtime's alternately, `--pairs` times (default 3). The table on
//! stdout holds medians and ratios; the progress and every single run go to stderr,
//! and every sample to the `--json` file (default `target/bench-results.json`).
//!
//! `--serve` only starts the control plane and creates the objects of the chosen
//! scenarios, prints `KUBECONFIG=<path>` and waits until killed, for running and
//! profiling workers by hand (e.g. `bench-worker sync ours bench-small`).
//!
//! Run through `cargo run`, the driver first builds the worker with the same cargo
//! (a no-op when it is fresh), so the two binaries never disagree.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use anyhow::{Context as _, bail};
use futures::{StreamExt, TryStreamExt};
use informer::testenv::TestEnv;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Api;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::objects;
use crate::report::{
    Implementation, PipelineSample, QuerySample, RelistSample, Row, SyncSample, Target,
    WatchSample, WorkerReport, markdown, median,
};
use crate::sync::{default_sync, sync_pairs, sync_rows};

/// Creates in flight while filling the server.
const CREATE_CONCURRENCY: usize = 32;

/// The namespace of the first collection (scenarios 1 and 3).
const SMALL_NAMESPACE: &str = "bench-small";

/// The namespace of the large collection (scenarios 2 and 7).
const LARGE_NAMESPACE: &str = "bench-large";

/// The namespace of scenario 6's collection, on the control plane without watch cache.
const RELIST_NAMESPACE: &str = "bench-relist";

/// The namespace of the object scenario 6 writes to move etcd's revision on.
const NOISE_NAMESPACE: &str = "bench-noise";

pub(crate) const MIB: f64 = 1024.0;

/// The driver's settings.
#[derive(Debug, Clone)]
pub struct Options {
    /// Pairs of runs (ours, kube-runtime) per server scenario.
    pub pairs: usize,
    /// Which scenarios to run (1 to 7).
    pub only: Vec<u8>,
    /// Objects of scenarios 1, 3 and 4.
    pub objects: usize,
    /// Objects of scenarios 2 and 7.
    pub large_objects: usize,
    /// Payload bytes of each object of scenarios 1, 3 and 4.
    pub payload: usize,
    /// Payload bytes of each object of scenario 2.
    pub large_payload: usize,
    /// Updates of scenario 3.
    pub updates: usize,
    /// Objects listed in scenario 5.
    pub pipeline_objects: usize,
    /// Watch events of scenario 5.
    pub pipeline_events: usize,
    /// Where to write every sample as JSON.
    pub json: PathBuf,
    /// Create the objects, print the kubeconfig's path and wait (until killed)
    /// instead of measuring: for profiling workers by hand.
    pub serve: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            pairs: 3,
            only: vec![1, 2, 3, 4, 5, 6, 7],
            objects: 10_000,
            large_objects: 50_000,
            payload: 1024,
            large_payload: 1024,
            updates: 5_000,
            pipeline_objects: 10_000,
            pipeline_events: 500_000,
            json: Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-results.json"),
            serve: false,
        }
    }
}

impl Options {
    /// Parses the command line (see the [module docs](self)).
    pub fn parse(args: impl IntoIterator<Item = String>) -> anyhow::Result<Self> {
        let mut options = Self::default();
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let mut value = || args.next().with_context(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--pairs" => options.pairs = value()?.parse()?,
                "--only" => {
                    options.only = value()?
                        .split(',')
                        .map(str::parse)
                        .collect::<Result<_, _>>()?;
                }
                "--objects" => options.objects = value()?.parse()?,
                "--large-objects" => options.large_objects = value()?.parse()?,
                "--payload" => options.payload = value()?.parse()?,
                "--large-payload" => options.large_payload = value()?.parse()?,
                "--updates" => options.updates = value()?.parse()?,
                "--pipeline-objects" => options.pipeline_objects = value()?.parse()?,
                "--pipeline-events" => options.pipeline_events = value()?.parse()?,
                "--json" => options.json = value()?.into(),
                "--serve" => options.serve = true,
                "-h" | "--help" => {
                    println!("see the docs of informer_benches::driver for the flags");
                    std::process::exit(0);
                }
                other => bail!("unknown flag {other:?}"),
            }
        }
        if options.pairs == 0 {
            bail!("--pairs must be at least 1");
        }
        if options.updates == 0 || options.updates > options.objects {
            bail!("--updates must be between 1 and --objects");
        }
        Ok(options)
    }

    fn runs(&self, scenario: u8) -> bool {
        self.only.contains(&scenario)
    }
}

/// Runs the driver with the process's arguments.
pub fn main() -> anyhow::Result<()> {
    let options = Options::parse(std::env::args().skip(1))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(options))
}

/// The machine the run happens on.
#[derive(Debug, Clone, serde::Serialize)]
struct Machine {
    cores: usize,
    memory: String,
    cpu: String,
    kernel: String,
}

impl Machine {
    fn read() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_kib: f64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0.0);
        Self {
            cores: std::thread::available_parallelism().map_or(0, usize::from),
            memory: format!("{:.1} GiB", mem_kib / MIB / MIB),
            cpu: cpuinfo
                .lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
                .unwrap_or_default(),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap_or_default()
                .trim()
                .to_owned(),
        }
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `bench-worker` built with mimalloc as its global allocator (scenario 5's second rows).
const MIMALLOC_WORKER: &str = "bench-worker-mimalloc";

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
fn worker_path() -> anyhow::Result<PathBuf> {
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

/// Everything measured, for the JSON file.
#[derive(Debug, Default, serde::Serialize)]
struct Samples {
    sync_small: Vec<SyncSample>,
    sync_small_like_for_like: Vec<SyncSample>,
    sync_large: Vec<SyncSample>,
    sync_metadata: Vec<SyncSample>,
    relist: Vec<RelistSample>,
    watch: Vec<WatchSample>,
    watch_apply_seconds: Vec<f64>,
    queries: Vec<QuerySample>,
    pipeline: Vec<PipelineSample>,
}

async fn run(options: Options) -> anyhow::Result<()> {
    let worker = worker_path()?;
    let machine = Machine::read();
    let load_before = load_average();
    let started = Instant::now();
    eprintln!("[bench] {machine:?}; load average {load_before}; {options:?}");

    let needs_server = [1, 2, 3, 7].iter().any(|&s| options.runs(s));
    let env = if needs_server {
        eprintln!("[bench] starting the control plane");
        Some(TestEnv::start().await?)
    } else {
        None
    };
    let kubeconfig = env.as_ref().map(|env| env.kubeconfig_path().to_path_buf());
    let client = env.as_ref().map(TestEnv::client).transpose()?;
    if let Some(client) = &client {
        if options.runs(1) || options.runs(3) {
            create_objects(client, SMALL_NAMESPACE, options.objects, options.payload).await?;
        }
        if options.runs(2) || options.runs(7) {
            create_objects(
                client,
                LARGE_NAMESPACE,
                options.large_objects,
                options.large_payload,
            )
            .await?;
        }
    }

    if options.serve {
        if let Some(path) = &kubeconfig {
            println!("KUBECONFIG={}", path.display());
        }
        eprintln!("[bench] serving until killed");
        return std::future::pending().await;
    }

    let mut rows = Vec::new();
    let mut samples = Samples::default();
    let kubeconfig = kubeconfig.as_deref();
    if options.runs(1) {
        let label = format!("1. sync {}", thousands(options.objects));
        let target = (SMALL_NAMESPACE, options.objects);
        samples.sync_small = default_sync(
            &worker,
            kubeconfig,
            target,
            options.pairs,
            &label,
            &mut rows,
        )
        .await?;
        // Like for like: both keep managedFields, then both drop them.
        for (implementations, what) in [
            (KEEP_BOTH, "managedFields kept on both sides"),
            (STRIP_BOTH, "managedFields dropped on both sides"),
        ] {
            let label = format!("{label}, {what}");
            let pairs = sync_pairs(
                &worker,
                kubeconfig,
                target,
                implementations,
                options.pairs,
                &label,
            )
            .await?;
            rows.extend(sync_rows(&label, &pairs, false).into_iter().take(3));
            samples
                .sync_small_like_for_like
                .extend(pairs.into_iter().flat_map(|(a, b)| [a, b]));
        }
    }
    if options.runs(2) {
        let label = format!("2. sync {}", thousands(options.large_objects));
        let target = (LARGE_NAMESPACE, options.large_objects);
        samples.sync_large = default_sync(
            &worker,
            kubeconfig,
            target,
            options.pairs,
            &label,
            &mut rows,
        )
        .await?;
    }
    if options.runs(7) {
        let label = format!("7. metadata-only sync {}", thousands(options.large_objects));
        let target = (LARGE_NAMESPACE, options.large_objects);
        samples.sync_metadata = crate::metadata::scenario(
            &worker,
            kubeconfig,
            target,
            options.pairs,
            &label,
            &mut rows,
        )
        .await?;
    }
    if options.runs(3) {
        let client = client.as_ref().context("no client")?;
        let label = format!("3. watch {} updates", thousands(options.updates));
        let mut pairs = Vec::new();
        for pair in 0..options.pairs {
            let run = |implementation, round| {
                watch_run(
                    &worker,
                    kubeconfig,
                    client,
                    implementation,
                    round,
                    options.updates,
                )
            };
            let (ours, ours_apply) = run(Implementation::Ours, pair * 2).await?;
            log_watch(&label, pair, &ours, ours_apply);
            let (theirs, theirs_apply) = run(Implementation::KubeRuntime, pair * 2 + 1).await?;
            log_watch(&label, pair, &theirs, theirs_apply);
            samples
                .watch_apply_seconds
                .extend([ours_apply, theirs_apply]);
            pairs.push((ours, theirs));
        }
        rows.extend(watch_rows(&label, &pairs, options.updates));
        samples.watch = pairs.into_iter().flat_map(|(a, b)| [a, b]).collect();
    }
    if options.runs(4) {
        let label = format!("4. queries on {}", thousands(options.objects));
        for run in 0..options.pairs {
            let objects = options.objects.to_string();
            let WorkerReport::Queries(sample) =
                run_worker(&worker, None, &["queries", &objects]).await?
            else {
                bail!("the queries worker reported something else");
            };
            for q in &sample.queries {
                eprintln!(
                    "[{label}] run {}: {}: ours {:.0}/s ({} found), kube-runtime {:.0}/s ({} found)",
                    run + 1,
                    q.name,
                    q.ours_per_second,
                    q.ours_results,
                    q.theirs_per_second,
                    q.theirs_results
                );
            }
            samples.queries.push(sample);
        }
        rows.extend(query_rows(&label, &samples.queries));
    }
    if options.runs(5) {
        let label = format!(
            "5. pipeline ({} listed + {} updates)",
            thousands(options.pipeline_objects),
            thousands(options.pipeline_events)
        );
        // The system allocator (what every other scenario uses) and mimalloc, run
        // alternately: the handler thread's work is mostly freeing replaced objects.
        let mimalloc = worker.with_file_name(MIMALLOC_WORKER);
        let allocators = [(&worker, "glibc malloc"), (&mimalloc, "mimalloc")];
        // Both informer queues: the in-order one (the default) and the DeltaFIFO.
        let queues = [("in-order", "in-order queue"), ("delta-fifo", "DeltaFIFO")];
        for handlers in [1usize, 8] {
            for (queue, queue_text) in queues {
                let mut runs: [Vec<PipelineSample>; 2] = Default::default();
                for run in 0..options.pairs {
                    for ((binary, allocator), runs) in allocators.iter().zip(&mut runs) {
                        let args = [
                            "pipeline".to_owned(),
                            handlers.to_string(),
                            options.pipeline_objects.to_string(),
                            options.pipeline_events.to_string(),
                            queue.to_owned(),
                        ];
                        let args: Vec<&str> = args.iter().map(String::as_str).collect();
                        let WorkerReport::Pipeline(sample) =
                            run_worker(binary, None, &args).await?
                        else {
                            bail!("the pipeline worker reported something else");
                        };
                        eprintln!(
                            "[{label}] {handlers} handler(s), {queue_text}, {allocator:<12}, \
                             run {}: {:.0} deltas/s, {:.3} s, CPU {:.3} s",
                            run + 1,
                            sample.per_second,
                            sample.seconds,
                            sample.cpu_seconds
                        );
                        runs.push(sample);
                    }
                }
                for ((_, allocator), runs) in allocators.iter().zip(runs) {
                    let glibc = *allocator == "glibc malloc";
                    let default_queue = queue == "in-order";
                    let handlers_text = format!(
                        "{handlers} handler{}, {queue_text}, {allocator}",
                        if handlers == 1 { "" } else { "s" }
                    );
                    rows.push(Row {
                        scenario: label.clone(),
                        metric: format!("deltas/s, {handlers_text}"),
                        ours: median(runs.iter().map(|s| s.per_second)),
                        theirs: None,
                        target: (handlers == 1 && glibc && default_queue)
                            .then_some(Target::AtLeast(1_000_000.0)),
                    });
                    rows.push(Row {
                        scenario: label.clone(),
                        metric: format!("CPU per delta, {handlers_text} (µs)"),
                        ours: median(runs.iter().map(|s| s.cpu_seconds * 1e6 / s.deltas as f64)),
                        theirs: None,
                        target: None,
                    });
                    samples.pipeline.extend(runs);
                }
            }
        }
    }
    if options.runs(6) {
        let label = format!("6. relist {} after 410 Gone", thousands(options.objects));
        eprintln!("[bench] starting a control plane without watch cache (scenario 6)");
        let uncached = TestEnv::builder().watch_cache(false).start().await?;
        let client = uncached.client()?;
        create_objects(&client, RELIST_NAMESPACE, options.objects, options.payload).await?;
        create_objects(&client, NOISE_NAMESPACE, 1, 0).await?;
        let mut pairs = Vec::new();
        for pair in 0..options.pairs {
            let mut both = Vec::new();
            for implementation in DEFAULTS {
                let sample = relist_run(&worker, &uncached, &client, implementation).await?;
                eprintln!(
                    "[{label}] pair {}: {:<12} RSS after sync {:.1} MiB, peak until the relist \
                     was applied {:.1} MiB, CPU {:.3} s, {} objects",
                    pair + 1,
                    implementation.as_str(),
                    sample.rss_after_sync_kib as f64 / MIB,
                    sample.peak_rss_kib as f64 / MIB,
                    sample.cpu_seconds,
                    sample.objects
                );
                if sample.objects != options.objects {
                    bail!(
                        "{} relisted {} objects",
                        implementation.as_str(),
                        sample.objects
                    );
                }
                both.push(sample);
            }
            let theirs = both.pop().context("two samples")?;
            let ours = both.pop().context("two samples")?;
            pairs.push((ours, theirs));
        }
        rows.extend(relist_rows(&label, &pairs));
        samples.relist = pairs.into_iter().flat_map(|(a, b)| [a, b]).collect();
    }
    drop(env);

    let load_after = load_average();
    let elapsed = started.elapsed();
    println!(
        "Machine: {} cores, {} RAM, {}, Linux {}",
        machine.cores, machine.memory, machine.cpu, machine.kernel
    );
    println!(
        "Load average (1, 5, 15 min): {load_before} before, {load_after} after; \
         suite took {:.0} s; {} pair(s) per server scenario; medians.",
        elapsed.as_secs_f64(),
        options.pairs
    );
    if !samples.watch_apply_seconds.is_empty() {
        // The time until cached follows the server's pace; the lag after the last
        // patch returned is the informer's own part (the worker looks every 5 ms).
        let lag_ms = |implementation: Implementation| {
            median(
                samples
                    .watch
                    .iter()
                    .zip(&samples.watch_apply_seconds)
                    .filter(|(sample, _)| sample.implementation == implementation)
                    .map(|(sample, applied)| (sample.seconds - applied) * 1e3),
            )
        };
        println!(
            "Scenario 3: the driver applied the {} updates in {:.2} s (median), 32 in flight; \
             the last one was cached {:.1} ms (ours) and {:.1} ms (kube-runtime) after its \
             patch returned (medians; negative: before).",
            thousands(options.updates),
            median(samples.watch_apply_seconds.iter().copied()),
            lag_ms(Implementation::Ours),
            lag_ms(Implementation::KubeRuntime),
        );
    }
    println!();
    print!("{}", markdown(&rows));

    if let Some(dir) = options.json.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let json = serde_json::json!({
        "machine": machine,
        "load_before": load_before,
        "load_after": load_after,
        "seconds": elapsed.as_secs_f64(),
        "samples": samples,
    });
    std::fs::write(&options.json, serde_json::to_string_pretty(&json)?)?;
    eprintln!("[bench] samples written to {}", options.json.display());
    Ok(())
}

fn thousands(n: usize) -> String {
    crate::report::human(n as f64)
}

/// Creates `namespace` and `count` ConfigMaps in it.
async fn create_objects(
    client: &kube::Client,
    namespace: &str,
    count: usize,
    payload: usize,
) -> anyhow::Result<()> {
    let namespaces = Api::<Namespace>::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    namespaces.create(&PostParams::default(), &ns).await?;
    let api = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    let started = Instant::now();
    let mut created = 0usize;
    let mut creates = futures::stream::iter(0..count)
        .map(|i| {
            let api = api.clone();
            async move {
                let cm = objects::config_map(i, payload, None);
                api.create(&PostParams::default(), &cm).await
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY);
    while let Some(result) = creates.next().await {
        result.with_context(|| format!("creating ConfigMaps in {namespace}"))?;
        created += 1;
        if created.is_multiple_of(10_000) || created == count {
            let seconds = started.elapsed().as_secs_f64();
            eprintln!(
                "[bench] {namespace}: {created}/{count} ConfigMaps created in {seconds:.1} s ({:.0}/s)",
                created as f64 / seconds
            );
        }
    }
    Ok(())
}

/// Runs one worker to completion and returns its report.
pub(crate) async fn run_worker(
    worker: &Path,
    kubeconfig: Option<&Path>,
    args: &[&str],
) -> anyhow::Result<WorkerReport> {
    let mut command = tokio::process::Command::new(worker);
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

fn parse_report(stdout: &str) -> anyhow::Result<WorkerReport> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .context("the worker printed nothing")?;
    serde_json::from_str(line).with_context(|| format!("reading the worker's report {line:?}"))
}

/// Both sides with default options: the comparison the targets are about.
pub(crate) const DEFAULTS: [Implementation; 2] =
    [Implementation::Ours, Implementation::KubeRuntime];
/// Both sides keeping `managedFields`.
const KEEP_BOTH: [Implementation; 2] = [
    Implementation::OursKeepManagedFields,
    Implementation::KubeRuntime,
];
/// Both sides dropping `managedFields`.
const STRIP_BOTH: [Implementation; 2] = [
    Implementation::Ours,
    Implementation::KubeRuntimeStripManagedFields,
];

/// Medians of `f` over our samples and over theirs.
pub(crate) fn medians<T>(pairs: &[(T, T)], f: impl Fn(&T) -> f64) -> (f64, f64) {
    (
        median(pairs.iter().map(|(ours, _)| f(ours))),
        median(pairs.iter().map(|(_, theirs)| f(theirs))),
    )
}

/// One watch-throughput run: starts the worker, waits for its sync, applies the
/// updates and the marker, and returns its report and the seconds the updates took.
async fn watch_run(
    worker: &Path,
    kubeconfig: Option<&Path>,
    client: &kube::Client,
    implementation: Implementation,
    round: usize,
    updates: usize,
) -> anyhow::Result<(WatchSample, f64)> {
    let mut command = tokio::process::Command::new(worker);
    command
        .args(["watch", implementation.as_str(), SMALL_NAMESPACE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if let Some(kubeconfig) = kubeconfig {
        command.env("KUBECONFIG", kubeconfig);
    }
    let mut child = command.spawn()?;
    let mut stdin = child.stdin.take().context("worker stdin")?;
    let mut lines = BufReader::new(child.stdout.take().context("worker stdout")?).lines();
    wait_for_sync(&mut lines, "watch").await?;

    let api = Api::<ConfigMap>::namespaced(client.clone(), SMALL_NAMESPACE);
    let tag = format!("r{round}");
    let marker = objects::name(updates - 1);
    let final_value = format!("{tag}-final");
    stdin
        .write_all(format!("go {marker} {final_value}\n").as_bytes())
        .await?;
    stdin.flush().await?;
    let started = Instant::now();
    let patch = |i: usize, value: String| {
        let api = api.clone();
        async move {
            let body = serde_json::json!({ "data": { "rev": value } });
            api.patch(
                &objects::name(i),
                &PatchParams::default(),
                &Patch::Merge(&body),
            )
            .await
        }
    };
    futures::stream::iter(0..updates - 1)
        .map(|i| patch(i, format!("{tag}-{i}")))
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_for_each(|_| futures::future::ready(Ok(())))
        .await?;
    // The marker goes last, after every other update was acknowledged.
    patch(updates - 1, final_value).await?;
    let applied = started.elapsed().as_secs_f64();

    match final_report(lines, child, "watch").await? {
        WorkerReport::Watch(sample) => Ok((sample, applied)),
        _ => bail!("the watch worker reported something else"),
    }
}

/// The lines a worker prints.
type WorkerLines = tokio::io::Lines<BufReader<tokio::process::ChildStdout>>;

/// Reads the worker's output until its `synced` line.
async fn wait_for_sync(lines: &mut WorkerLines, mode: &str) -> anyhow::Result<()> {
    loop {
        let line = lines
            .next_line()
            .await?
            .with_context(|| format!("the {mode} worker exited before syncing"))?;
        if line.trim() == "synced" {
            return Ok(());
        }
    }
}

/// Reads the rest of the worker's output and waits for it; its report is the last line.
async fn final_report(
    mut lines: WorkerLines,
    mut child: tokio::process::Child,
    mode: &str,
) -> anyhow::Result<WorkerReport> {
    let mut last = String::new();
    while let Some(line) = lines.next_line().await? {
        if !line.trim().is_empty() {
            last = line;
        }
    }
    let status = child.wait().await?;
    if !status.success() {
        bail!("the {mode} worker failed: {status}");
    }
    parse_report(&last)
}

/// One relist run: starts the worker on the control plane without watch cache, waits
/// for its sync, moves etcd's revision on (writes it does not watch) and compacts, so
/// that its next watch gets 410 Gone and it relists; returns its report.
async fn relist_run(
    worker: &Path,
    env: &TestEnv,
    client: &kube::Client,
    implementation: Implementation,
) -> anyhow::Result<RelistSample> {
    let mut child = tokio::process::Command::new(worker)
        .args(["relist", implementation.as_str(), RELIST_NAMESPACE])
        .env("KUBECONFIG", env.kubeconfig_path())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(child.stdout.take().context("worker stdout")?).lines();
    wait_for_sync(&mut lines, "relist").await?;
    let noise = Api::<ConfigMap>::namespaced(client.clone(), NOISE_NAMESPACE);
    for i in 0..5 {
        let body = serde_json::json!({ "data": { "rev": i.to_string() } });
        noise
            .patch(
                &objects::name(0),
                &PatchParams::default(),
                &Patch::Merge(&body),
            )
            .await?;
    }
    env.compact_etcd().await?;
    match final_report(lines, child, "relist").await? {
        WorkerReport::Relist(sample) => Ok(sample),
        _ => bail!("the relist worker reported something else"),
    }
}

fn relist_rows(label: &str, pairs: &[(RelistSample, RelistSample)]) -> Vec<Row> {
    let row = |metric: &str, f: &dyn Fn(&RelistSample) -> f64| {
        let (ours, theirs) = medians(pairs, f);
        Row {
            scenario: label.to_owned(),
            metric: metric.to_owned(),
            ours,
            theirs: Some(theirs),
            target: None,
        }
    };
    let mib = |kib: u64| kib as f64 / MIB;
    vec![
        row("RSS after the initial sync (MiB)", &|s| {
            mib(s.rss_after_sync_kib)
        }),
        row("peak RSS until the relist was applied (MiB)", &|s| {
            mib(s.peak_rss_kib)
        }),
        row("peak RSS above RSS after sync, per object (bytes)", &|s| {
            (s.peak_rss_kib.saturating_sub(s.rss_after_sync_kib) * 1024) as f64 / s.objects as f64
        }),
        row("CPU from the sync until the relist was applied (s)", &|s| {
            s.cpu_seconds
        }),
    ]
}

fn log_watch(label: &str, pair: usize, sample: &WatchSample, applied: f64) {
    eprintln!(
        "[{label}] pair {}: {:<12} last update cached after {:.3} s (driver applied in {:.3} s), \
         CPU {:.3} s, peak RSS {:.1} MiB",
        pair + 1,
        sample.implementation.as_str(),
        sample.seconds,
        applied,
        sample.cpu_seconds,
        sample.peak_rss_kib as f64 / MIB
    );
}

fn watch_rows(label: &str, pairs: &[(WatchSample, WatchSample)], updates: usize) -> Vec<Row> {
    let row = |metric: &str, f: &dyn Fn(&WatchSample) -> f64| {
        let (ours, theirs) = medians(pairs, f);
        Row {
            scenario: label.to_owned(),
            metric: metric.to_owned(),
            ours,
            theirs: Some(theirs),
            target: None,
        }
    };
    vec![
        row("time until the last update is cached (s)", &|s| s.seconds),
        row("client CPU, user+sys (s)", &|s| s.cpu_seconds),
        row("CPU per update (µs)", &|s| {
            s.cpu_seconds * 1e6 / updates as f64
        }),
        row("peak RSS (MiB)", &|s| s.peak_rss_kib as f64 / MIB),
    ]
}

fn query_rows(label: &str, samples: &[QuerySample]) -> Vec<Row> {
    let Some(first) = samples.first() else {
        return Vec::new();
    };
    first
        .queries
        .iter()
        .enumerate()
        .map(|(i, query)| {
            let ours = median(samples.iter().map(|s| s.queries[i].ours_per_second));
            let theirs = median(samples.iter().map(|s| s.queries[i].theirs_per_second));
            let indexed = query.name.starts_with("list by");
            Row {
                scenario: label.to_owned(),
                metric: format!("{} (ops/s)", query.name),
                ours,
                theirs: Some(theirs),
                target: indexed.then_some(Target::RatioAtLeast(100.0)),
            }
        })
        .collect()
}
