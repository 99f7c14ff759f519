//! The driver: one control plane, the objects, every scenario, one table.
//!
//! ```text
//! bench [--pairs N] [--only 1,2,...,18] [--objects N] [--large-objects N]
//!       [--payload BYTES] [--large-payload BYTES] [--updates N]
//!       [--pipeline-objects N] [--pipeline-events N] [--controller-objects N]
//!       [--controller-updates N] [--backlog-edits N] [--footprint-objects N]
//!       [--fleet-clusters N] [--fleet-objects N]
//!       [--consistency-minutes N] [--consistency-interval SECONDS]
//!       [--consistency-drifts N] [--consistency-delay-ms MS]
//!       [--scale-objects N] [--pods N] [--projection-pods N[,N...]]
//!       [--churn-pods N] [--plot PATH] [--json PATH] [--serve]
//! ```
//!
//! It starts [`TestEnv`] (etcd + kube-apiserver on loopback), creates the ConfigMaps
//! once (32 creates in flight) in `bench-small` and `bench-large`, then runs each
//! scenario's workers (the `bench-worker` binary next to this one) as child processes,
//! every side of a scenario in turn, the first rotating, `--pairs` rounds (default 3).
//! The table on stdout holds medians and ratios; the progress and every single run go
//! to stderr, and every sample to the `--json` file (default
//! `target/bench-results.json`).
//!
//! ## Sides
//!
//! Every server scenario runs ours and kube-runtime with their defaults; some run more
//! sides, each a column of the table or rows of their own, with ratios ours / each:
//!
//! | side | what | scenarios | shown as |
//! |---|---|---|---|
//! | kube-runtime tuned ([`Implementation::KubeRuntimeTuned`]) | `watcher::Config::default().streaming_lists()`, `managedFields` cleared by `.modify()` (on every watcher; the parents' through `Controller::for_stream`) | 1, 2, 6, 7 | rows labelled `kube-runtime tuned (streaming_lists(), managedFields cleared by .modify())`, in the kube-runtime column |
//! | client-go JSON, client-go protobuf | the Go peer `benches/client-go`: client-go 0.37's `SharedInformerFactory` with its defaults (streaming lists, the RealFIFO) | 1, 2, 3, 6, 8, 15 (JSON only, `SetTransform`) | two columns (15: a variant) |
//! | controller-runtime | the Go peer `benches/controller-runtime`: controller-runtime 0.25's cache and controller with its defaults (the priority queue, streaming lists) and `cache.TransformStripManagedFields()` | 1, 2, 7, 12, 13 | a column |
//!
//! The Go peers run when built (the driver looks for `client-go-bench-peer` and
//! `controller-runtime-bench-peer` in `$INFORMER_CACHE_DIR/bin`, where
//! `scripts/install-control-plane.sh --client-go-peer --controller-runtime-peer`, which
//! `scripts/bench.sh` runs, installs them); without one, its columns are left out. A
//! note above the table names each peer's configuration and the versions it links (its
//! `--version`).
//!
//! `--only` picks scenarios by number (default all, 1 to 18; see the crate docs), e.g.
//! `--only 12,13` for the controller's startup backlog and the small operator's
//! footprint. `--large-objects` sizes the collection of scenarios 2 and 10 (which
//! share it); `--controller-objects` the parents of scenarios 7 and 12 (which share
//! them), `--backlog-edits` the children scenario 12 changes while the backlog drains,
//! `--footprint-objects` the parents of scenario 13 (a namespace of their own),
//! `--fleet-clusters` and `--fleet-objects` scenario 14's clusters (namespaces
//! `bench-fleet-0` and on) and the ConfigMaps in each. Scenario 15 syncs scenario 9's
//! `--pods` and larger collections of `--projection-pods` Pods (a comma list, default
//! `30000`, e.g. `30000,150000`; the first count in `bench-pods-large`, the others in
//! `bench-pods-large-<count>`) every way there is to cache them (above 50,000 Pods,
//! [`ALL_VARIANTS_UP_TO`], only our projection and our metadata-only informer: the
//! other variants' full Pods would take GiB each, and the table says so); then it
//! churns `--churn-pods` Pods (default the first `--projection-pods` count, 0 for none;
//! in `bench-pods-churn`, put back before each round): half deleted, the rest
//! relabelled, RSS above start after the churn against a fresh sync of the survivors,
//! for our projection and our metadata-only informer. It draws its figure into
//! `--plot` (an SVG, default `target/bench-projections.svg`). `--consistency-minutes`,
//! `--consistency-interval`, `--consistency-drifts` and `--consistency-delay-ms` set
//! scenario 16's long run (its length, its checks' interval, the lost updates it
//! makes) and the delay its staleness run puts on watch events.
//!
//! Scenario 11 has no peer (kube-runtime has no sharding): it runs our sharded
//! controller in 1, 2 and 3 replica processes on `bench-large` (`--large-objects`),
//! `--pairs` rounds, and a takeover after a SIGKILL; see `sharded.rs`. Scenario 14 has
//! none either (kube-runtime has no fleet): our fleet of clusters, each a namespace of
//! the one server, in one process, with a cluster joining, and sharded by cluster over
//! 1, 2 and 3 replica processes; see `fleet.rs`. Scenario 15 has none either (neither
//! kube-runtime nor client-go checks its cache against the server): the cost of our
//! consistency checks on `bench-large`, a long run of them under churn, compaction and
//! a restart, and the staleness gauge against a known lag; see `consistency.rs`.
//!
//! `--serve` only starts the control plane and creates the objects of the chosen
//! scenarios, prints `KUBECONFIG=<path>` and waits until killed, for running and
//! profiling workers by hand (e.g. `bench-worker sync ours bench-small`).
//!
//! Run through `cargo run`, the driver first builds the worker with the same cargo
//! (a no-op when it is fresh), so the two binaries never disagree.
//!
//! Fairness: in each pair the side that runs first alternates (ours first in odd
//! pairs, the peer first in even ones), so that neither always meets a server or a
//! page cache warmed by the other. Each scenario is a module of its own.

use std::path::Path;
use std::time::Instant;

use informer::testenv::TestEnv;

use crate::report::{
    BacklogSample, ClientGo, ControllerSample, FootprintSample, Implementation, PipelineSample,
    QuerySample, RelistSample, Row, SyncSample, Target, WatchSample, markdown, median,
};
use machine::{Machine, load_average};
pub use options::{ALL_VARIANTS_UP_TO, Options, SCENARIOS};
use setup::create_objects;

mod backlog;
mod consistency;
mod controller;
mod fleet;
mod footprint;
mod machine;
mod managed_fields;
mod metadata;
mod options;
mod pipeline;
mod process;
mod projections;
mod queries;
mod relist;
mod replicas;
mod server_shards;
mod setup;
mod sharded;
mod sync;
mod watch;

/// The namespace of the first collection (scenarios 1 and 3).
const SMALL_NAMESPACE: &str = "bench-small";

/// The namespace of the large collection (scenarios 2, 10, 11, 14 and 15).
const LARGE_NAMESPACE: &str = "bench-large";

/// The namespace of the Pods (scenario 9).
const POD_NAMESPACE: &str = "bench-pods";

/// The namespace of the scale collection (scenario 8).
const SCALE_NAMESPACE: &str = "bench-scale";

const MIB: f64 = 1024.0;

/// Runs the driver with the process's arguments.
pub fn main() -> anyhow::Result<()> {
    let options = Options::parse(std::env::args().skip(1))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run(options))
}

/// What every scenario is given.
struct Bench<'a> {
    options: &'a Options,
    /// The shared control plane, when a scenario needs it.
    env: Option<&'a TestEnv>,
    /// The `bench-worker` binary.
    worker: &'a Path,
    /// The shared control plane's, when a scenario needs it.
    kubeconfig: Option<&'a Path>,
    /// client-go's peer (`benches/client-go`), when built (see
    /// [`process::client_go_peer`]).
    client_go: Option<&'a Path>,
    /// controller-runtime's peer (`benches/controller-runtime`), when built (see
    /// [`process::controller_runtime_peer`]).
    controller_runtime: Option<&'a Path>,
    client: Option<&'a kube::Client>,
}

/// Everything measured, for the JSON file.
#[derive(Debug, Default, serde::Serialize)]
struct Samples {
    sync_small: Vec<SyncSample>,
    sync_small_like_for_like: Vec<SyncSample>,
    sync_large: Vec<SyncSample>,
    sync_scale: Vec<SyncSample>,
    sync_pods: Vec<SyncSample>,
    /// Scenario 10's metadata-only syncs.
    sync_metadata_only: Vec<SyncSample>,
    /// Scenario 10's full syncs of the same objects, in the same rounds.
    sync_metadata_full: Vec<SyncSample>,
    relist: Vec<RelistSample>,
    watch: Vec<WatchSample>,
    watch_apply_seconds: Vec<f64>,
    queries: Vec<QuerySample>,
    pipeline: Vec<PipelineSample>,
    controller: Vec<ControllerSample>,
    shard: Vec<sharded::ShardRun>,
    /// Scenario 12's runs, a round in the order of its sides (ours, ours FIFO,
    /// kube-runtime, controller-runtime when built).
    backlog: Vec<BacklogSample>,
    /// Scenario 13's runs.
    footprint: Vec<FootprintSample>,
    /// Scenario 14's runs.
    fleet: fleet::FleetRuns,
    /// Scenario 15's runs, every variant at every count it ran at.
    projections: Vec<projections::ProjectionSample>,
    /// Scenario 15's churn runs, a variant's round at a time.
    projection_churn: Vec<projections::ChurnRun>,
    /// Scenario 16's runs.
    consistency: consistency::ConsistencySamples,
    /// Scenario 17's runs, gate on then off.
    server_shards: Vec<server_shards::ServerShardRun>,
}

/// The sides of scenarios 3 and 8 (and the base of the others'): ours, kube-runtime and
/// client-go (JSON, protobuf), each with its defaults; the Go peers only when built.
const DEFAULT_SIDES: [Implementation; 4] = [
    Implementation::Ours,
    Implementation::KubeRuntime,
    Implementation::ClientGoJson,
    Implementation::ClientGoProtobuf,
];

/// How the rows name kube-runtime tuned as its docs say
/// ([`Implementation::KubeRuntimeTuned`]), in their scenario label.
const KUBE_RUNTIME_TUNED: &str =
    "kube-runtime tuned (streaming_lists(), managedFields cleared by .modify())";

/// Whether `implementation` can run here: a Go peer only when it is built.
fn available(bench: &Bench<'_>, implementation: Implementation) -> bool {
    match implementation {
        Implementation::ClientGoJson | Implementation::ClientGoProtobuf => {
            bench.client_go.is_some()
        }
        Implementation::ControllerRuntime => bench.controller_runtime.is_some(),
        _ => true,
    }
}

/// The sides of `wanted` that can run here ([`available`]), in that order: the order
/// of each round's runs.
fn sides_of(bench: &Bench<'_>, wanted: &[Implementation]) -> Vec<Implementation> {
    wanted
        .iter()
        .copied()
        .filter(|&side| available(bench, side))
        .collect()
}

/// [`DEFAULT_SIDES`] that can run here.
fn default_sides(bench: &Bench<'_>) -> Vec<Implementation> {
    sides_of(bench, &DEFAULT_SIDES)
}

/// Where each column of a row is found in a round of runs (the index of its run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Columns {
    /// Ours.
    ours: usize,
    /// The kube-runtime column: its defaults, or the configuration the row's label
    /// names.
    theirs: usize,
    /// client-go JSON and protobuf, when they ran.
    client_go: Option<[usize; 2]>,
    /// controller-runtime, when it ran.
    controller_runtime: Option<usize>,
}

impl Columns {
    /// Ours (the first run of a round) against the second, nothing else.
    const PAIR: Columns = Columns {
        ours: 0,
        theirs: 1,
        client_go: None,
        controller_runtime: None,
    };

    /// `ours` against `theirs` in the kube-runtime column, with client-go's and
    /// controller-runtime's columns when `sides` (a round's runs, in order) has them.
    fn of(sides: &[Implementation], ours: Implementation, theirs: Implementation) -> Self {
        let at = |side: Implementation| sides.iter().position(|&s| s == side);
        Columns {
            ours: at(ours).unwrap_or(0),
            theirs: at(theirs).unwrap_or(1),
            client_go: at(Implementation::ClientGoJson)
                .zip(at(Implementation::ClientGoProtobuf))
                .map(|(json, protobuf)| [json, protobuf]),
            controller_runtime: at(Implementation::ControllerRuntime),
        }
    }

    /// `ours` against `theirs` alone (the rows of a configuration the label names).
    fn pair(sides: &[Implementation], ours: Implementation, theirs: Implementation) -> Self {
        Columns {
            client_go: None,
            controller_runtime: None,
            ..Self::of(sides, ours, theirs)
        }
    }
}

/// A row over rounds of runs laid out as `columns` says: the median of `f` in each
/// column.
fn row_of<T>(
    label: &str,
    metric: &str,
    runs: &[Vec<T>],
    columns: Columns,
    f: &dyn Fn(&T) -> f64,
    target: Option<Target>,
    client_go_target: Option<Target>,
) -> Row {
    let column = |i: usize| median(runs.iter().filter_map(|round| round.get(i)).map(f));
    Row {
        scenario: label.to_owned(),
        metric: metric.to_owned(),
        ours: column(columns.ours),
        theirs: Some(column(columns.theirs)),
        target,
        client_go: columns.client_go.map(|[json, protobuf]| ClientGo {
            json: column(json),
            protobuf: column(protobuf),
            target: client_go_target,
        }),
        controller_runtime: columns.controller_runtime.map(column),
    }
}

/// The order of round `round`'s runs of `sides` sides (0 is ours): each round starts
/// one side later than the one before (0 1, then 1 0; or 0 1 2 3, then 1 2 3 0...),
/// so that no side always runs first or always follows the same one.
fn rotated(round: usize, sides: usize) -> impl Iterator<Item = usize> {
    (0..sides).map(move |i| (round + i) % sides)
}

async fn run(options: Options) -> anyhow::Result<()> {
    let worker = process::worker_path()?;
    let machine = Machine::read();
    let load_before = load_average();
    let started = Instant::now();
    eprintln!("[bench] {machine:?}; load average {load_before}; {options:?}");

    let needs_server = [1, 2, 3, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18]
        .iter()
        .any(|&scenario| options.runs(scenario));
    let env = if needs_server {
        eprintln!("[bench] starting the control plane");
        Some(TestEnv::start().await?)
    } else {
        None
    };
    let kubeconfig = env.as_ref().map(|env| env.kubeconfig_path().to_path_buf());
    let client = env.as_ref().map(TestEnv::client).transpose()?;
    if let Some(client) = &client {
        if options.runs(1) || options.runs(3) || options.runs(18) {
            create_objects(client, SMALL_NAMESPACE, options.objects, options.payload).await?;
        }
        // Scenario 14 compares its fleet with one cluster of these.
        if [2, 10, 11, 14, 16]
            .iter()
            .any(|&scenario| options.runs(scenario))
        {
            create_objects(
                client,
                LARGE_NAMESPACE,
                options.large_objects,
                options.large_payload,
            )
            .await?;
        }
        if options.runs(9) || options.runs(15) {
            setup::create_pods(client, POD_NAMESPACE, options.pods).await?;
        }
        if options.runs(15) {
            for (i, &pods) in options.projection_pods.iter().enumerate() {
                let namespace = projections::large_pod_namespace(i, pods);
                setup::create_pods(client, &namespace, pods).await?;
            }
            if options.churn_pods > 0 {
                projections::create_churn_pods(client, options.churn_pods).await?;
            }
        }
        if options.runs(14) {
            fleet::create(
                client,
                options.fleet_clusters,
                options.fleet_objects,
                options.large_payload,
            )
            .await?;
        }
        if options.runs(8) {
            create_objects(
                client,
                SCALE_NAMESPACE,
                options.scale_objects,
                options.payload,
            )
            .await?;
        }
    }
    if let Some(env) = &env {
        if options.runs(7) || options.runs(12) {
            controller::create_family(
                env,
                controller::CONTROLLER_NAMESPACE,
                options.controller_objects,
            )
            .await?;
        }
        if options.runs(13) {
            controller::create_family(
                env,
                footprint::FOOTPRINT_NAMESPACE,
                options.footprint_objects,
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

    let client_go = process::client_go_peer();
    let client_go_version = client_go.as_deref().and_then(process::peer_version);
    match &client_go {
        Some(path) => eprintln!(
            "[bench] client-go peer: {} ({})",
            path.display(),
            client_go_version.as_deref().unwrap_or("no version")
        ),
        None => eprintln!(
            "[bench] no client-go peer at $INFORMER_CACHE_DIR/bin/client-go-bench-peer: its \
             columns are left out (`scripts/install-control-plane.sh --client-go-peer` builds \
             it from the Go module benches/client-go; scripts/bench.sh does that first)"
        ),
    }
    let controller_runtime = process::controller_runtime_peer();
    let controller_runtime_version = controller_runtime
        .as_deref()
        .and_then(process::peer_version);
    match &controller_runtime {
        Some(path) => eprintln!(
            "[bench] controller-runtime peer: {} ({})",
            path.display(),
            controller_runtime_version
                .as_deref()
                .unwrap_or("no version")
        ),
        None => eprintln!(
            "[bench] no controller-runtime peer at \
             $INFORMER_CACHE_DIR/bin/controller-runtime-bench-peer: its column is left out \
             (`scripts/install-control-plane.sh --controller-runtime-peer` builds it from the \
             Go module benches/controller-runtime; scripts/bench.sh does that first)"
        ),
    }
    let bench = Bench {
        client_go: client_go.as_deref(),
        controller_runtime: controller_runtime.as_deref(),
        options: &options,
        env: env.as_ref(),
        worker: &worker,
        kubeconfig: kubeconfig.as_deref(),
        client: client.as_ref(),
    };
    let mut rows = Vec::new();
    let mut samples = Samples::default();
    if options.runs(1) {
        sync::small(&bench, &mut rows, &mut samples).await?;
    }
    if options.runs(2) {
        sync::large(&bench, &mut rows, &mut samples).await?;
    }
    if options.runs(3) {
        watch::run(&bench, &mut rows, &mut samples).await?;
    }
    if options.runs(4) {
        queries::run(&bench, &mut rows, &mut samples).await?;
    }
    if options.runs(5) {
        pipeline::run(&bench, &mut rows, &mut samples).await?;
    }
    if options.runs(6) {
        relist::run(&bench, &mut rows, &mut samples).await?;
    }
    if options.runs(7) {
        controller::run(&bench, &mut rows, &mut samples).await?;
    }
    if options.runs(8) {
        sync::scale(&bench, &mut rows, &mut samples).await?;
    }
    if options.runs(9) {
        sync::pods(&bench, &mut rows, &mut samples).await?;
    }
    if options.runs(10) {
        metadata::run(&bench, &mut rows, &mut samples).await?;
    }
    if options.runs(11) {
        sharded::run(&bench, &mut rows, &mut samples).await?;
    }
    if options.runs(12) {
        backlog::run(&bench, &mut rows, &mut samples).await?;
    }
    if options.runs(13) {
        footprint::run(&bench, &mut rows, &mut samples).await?;
    }
    if options.runs(14) {
        fleet::run(&bench, &mut rows, &mut samples).await?;
    }
    if options.runs(15) {
        projections::run(&bench, &mut rows, &mut samples).await?;
    }
    if options.runs(18) {
        managed_fields::run(&bench, &mut rows, &mut samples).await?;
    }
    // Last: it changes objects of the large collection, and restarts the API server.
    if options.runs(16) {
        consistency::run(&bench, &mut rows, &mut samples).await?;
    }
    // On control planes of its own (1.36, the gate on and off), one at a time.
    if options.runs(17) {
        server_shards::run(&bench, &mut rows, &mut samples).await?;
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
         suite took {:.0} s; {} pair(s) per server scenario, the first side alternating; medians.",
        elapsed.as_secs_f64(),
        options.pairs
    );
    if [1, 2, 8, 9, 10]
        .iter()
        .any(|&scenario| options.runs(scenario))
    {
        println!(
            "Defaults differ in what they ask of the server: ours (like client-go 0.37 and \
             controller-runtime) syncs with a streaming list, one watch whose initial events \
             are the objects, answered from the API server's watch cache; kube-runtime's \
             default pages consistent reads from etcd, 500 objects a request. The row \"both \
             listing from the watch cache, unpaged\" sets both to list from the watch cache in \
             one request (ours with `streaming_list(false)`, kube-runtime with \
             `any_semantic()` and no page size), the \"kube-runtime tuned\" \
             rows to stream as ours does (`streaming_lists()`). Both sides' \"synced\" is a \
             notification (ours: `wait_for_cache_sync`; kube-runtime: \
             `Store::wait_until_ready`); the Go peers' is their informer's HasSynced, polled \
             every millisecond."
        );
    }
    if let Some(note) = peers_note(
        &rows,
        client_go_version.as_deref(),
        controller_runtime_version.as_deref(),
    ) {
        println!("{note}");
    }
    if let Some(note) = watch::note(&samples, options.updates) {
        println!("{note}");
    }
    if options.runs(11) || options.runs(17) {
        println!("{}", sharded::NOTE);
    }
    if options.runs(14) {
        println!("{}", fleet::NOTE);
        if let Some(note) = fleet::splits_note(&samples) {
            println!("{note}");
        }
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

/// The note above the table that says how each peer column is configured, for the
/// columns and rows the table has; `None` when it has none of them.
fn peers_note(
    rows: &[Row],
    client_go_version: Option<&str>,
    controller_runtime_version: Option<&str>,
) -> Option<String> {
    let version = |v: Option<&str>| v.map(|v| format!(" ({v})")).unwrap_or_default();
    let mut parts = Vec::new();
    if rows.iter().any(|row| row.client_go.is_some()) {
        parts.push(format!(
            "client-go columns: client-go 0.37's SharedInformerFactory{}, its defaults \
             (WatchListClient: streaming lists; the RealFIFO), JSON and protobuf (its default \
             for built-in types) each set explicitly",
            version(client_go_version)
        ));
    }
    if rows.iter().any(|row| row.controller_runtime.is_some()) {
        parts.push(format!(
            "controller-runtime column: its cache and controller{}, its defaults (the \
             priority queue, streaming lists, ConfigMaps in protobuf) with \
             cache.TransformStripManagedFields() as the cache's DefaultTransform, as its docs \
             suggest (the manager's metrics server off)",
            version(controller_runtime_version)
        ));
    }
    if rows
        .iter()
        .any(|row| row.scenario.contains(KUBE_RUNTIME_TUNED))
    {
        parts.push(format!(
            "rows labelled \"{KUBE_RUNTIME_TUNED}\": the kube-runtime column holds kube-runtime \
             with watcher::Config::default().streaming_lists() and managedFields cleared by \
             .modify() before its store, on each of its watchers (no list is made, so the page \
             size does not apply)"
        ));
    }
    (!parts.is_empty()).then(|| format!("Peers: {}.", parts.join("; ")))
}

/// A count for a label: `20`, `200`, `10,000`.
fn thousands(n: usize) -> String {
    if n < 1000 {
        n.to_string()
    } else {
        crate::report::human(n as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> anyhow::Result<Options> {
        Options::parse(args.iter().map(|&a| a.to_owned()))
    }

    #[test]
    fn only_takes_the_scenarios_by_number_and_rejects_others() {
        assert_eq!(
            parse(&[]).unwrap().only,
            (1..=SCENARIOS).collect::<Vec<_>>()
        );
        let options = parse(&["--only", "2,10"]).unwrap();
        assert!(options.runs(10) && options.runs(2) && !options.runs(1));
        let options = parse(&["--only", "12,13"]).unwrap();
        assert!(options.runs(12) && options.runs(13) && !options.runs(7));
        assert!(parse(&["--only", "14"]).unwrap().runs(14));
        assert!(parse(&["--only", "15"]).unwrap().runs(15));
        assert!(parse(&["--only", "16"]).unwrap().runs(16));
        assert!(parse(&["--only", "17"]).unwrap().runs(17));
        assert!(parse(&["--only", "18"]).unwrap().runs(18));
        let error = parse(&["--only", "1,19"]).unwrap_err().to_string();
        assert!(error.contains("no scenario 19"), "{error}");
        assert!(parse(&["--only", "0"]).is_err());
    }

    #[test]
    fn sizes_are_checked_where_their_scenario_runs() {
        let small = ["--controller-objects", "100"];
        assert!(parse(&small).is_err(), "7 and 12 run by default");
        assert!(parse(&[&small[..], &["--only", "13"]].concat()).is_ok());
        let error = parse(&[&small[..], &["--only", "12"]].concat())
            .unwrap_err()
            .to_string();
        assert!(error.contains("--backlog-edits"), "{error}");
        let fits = ["--backlog-edits", "50", "--only", "12"];
        assert!(parse(&[&small[..], &fits[..]].concat()).is_ok());
    }

    #[test]
    fn projection_pods_take_a_list_of_distinct_counts() {
        let options = parse(&[]).unwrap();
        assert_eq!(
            (options.projection_pods, options.churn_pods),
            (vec![30_000], 30_000)
        );
        let options = parse(&["--projection-pods", "2000,150000"]).unwrap();
        assert_eq!(
            (options.projection_pods, options.churn_pods),
            (vec![2_000, 150_000], 2_000)
        );
        let options = parse(&["--projection-pods", "2000", "--churn-pods", "500"]).unwrap();
        assert_eq!(options.churn_pods, 500);
        for bad in [
            ["--projection-pods", "2000,2000"],
            ["--projection-pods", "0"],
            ["--churn-pods", "1"],
        ] {
            assert!(
                parse(&[&bad[..], &["--only", "15"]].concat()).is_err(),
                "{bad:?}"
            );
        }
        assert!(parse(&["--churn-pods", "0", "--only", "15"]).is_ok());
    }

    #[test]
    fn rounds_rotate_which_side_runs_first() {
        let orders: Vec<Vec<usize>> = (0..4).map(|round| rotated(round, 4).collect()).collect();
        assert_eq!(orders[0], [0, 1, 2, 3]);
        assert_eq!(orders[1], [1, 2, 3, 0]);
        let firsts: Vec<usize> = orders.iter().map(|order| order[0]).collect();
        assert_eq!(firsts, [0, 1, 2, 3]);
    }
}
