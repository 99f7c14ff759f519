//! What workers report (one JSON line each), and the table the driver prints
//! ([`Row`], [`markdown`]).

use serde::{Deserialize, Serialize};

mod table;

pub use table::{ClientGo, Row, Target, human, markdown, median};

/// The implementation a run measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Implementation {
    /// This project's `SharedIndexInformer`, default options (`managedFields` dropped
    /// while decoding).
    Ours,
    /// kube-runtime's `reflector` + `watcher`, default options.
    KubeRuntime,
    /// Ours keeping `managedFields` (`ManagedFields::Keep`), like kube-runtime's default.
    OursKeepManagedFields,
    /// Ours with streaming lists off (`reflector::Config::streaming_list(false)`): it
    /// lists at resourceVersion 0, from the API server's watch cache in one request, as
    /// it did by default before servers streamed lists (and still does on a server
    /// without them).
    OursList,
    /// kube-runtime clearing `managedFields` before its store (`.modify(..)`, as its
    /// optimisation guide advises), like our default.
    KubeRuntimeStripManagedFields,
    /// kube-runtime listing from the API server's watch cache in one request, as ours
    /// does by default (`any_semantic()`, no page size) instead of its default paged
    /// consistent reads from etcd.
    KubeRuntimeWatchCache,
    /// kube-runtime tuned as its docs advise: `watcher::Config::default()
    /// .streaming_lists()` (a sync is one watch whose initial events are the list; the
    /// default page size of 500 stays, but no list is made) and `managedFields`
    /// cleared by `.modify(..)` before the store, on every watcher it runs (in the
    /// controller scenarios, the parents' through `Controller::for_stream`).
    KubeRuntimeTuned,
    /// client-go 0.37's `SharedInformerFactory` informer (the peer in
    /// `benches/client-go`, its defaults: streaming lists, the RealFIFO), speaking JSON.
    ClientGoJson,
    /// The same, speaking protobuf (`application/vnd.kubernetes.protobuf`, client-go
    /// 0.37's default for built-in types).
    ClientGoProtobuf,
    /// controller-runtime 0.25's cache and controller (the peer in
    /// `benches/controller-runtime`): its defaults (the priority queue, streaming
    /// lists) and `cache.TransformStripManagedFields()` as the cache's transform.
    ControllerRuntime,
    /// Our `Controller` without its priority queue (`.priority_queue(false)`:
    /// client-go's FIFO), for scenario 12.
    OursFifo,
}

impl Implementation {
    /// The name used on worker command lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Implementation::Ours => "ours",
            Implementation::KubeRuntime => "kube-runtime",
            Implementation::OursKeepManagedFields => "ours-keep-mf",
            Implementation::OursList => "ours-list",
            Implementation::KubeRuntimeStripManagedFields => "kube-runtime-strip-mf",
            Implementation::KubeRuntimeWatchCache => "kube-runtime-watch-cache",
            Implementation::KubeRuntimeTuned => "kube-runtime-tuned",
            Implementation::ClientGoJson => "client-go-json",
            Implementation::ClientGoProtobuf => "client-go-protobuf",
            Implementation::ControllerRuntime => "controller-runtime",
            Implementation::OursFifo => "ours-fifo",
        }
    }

    /// Whether this is client-go (the Go peer binary), not the Rust worker.
    pub fn is_client_go(self) -> bool {
        matches!(
            self,
            Implementation::ClientGoJson | Implementation::ClientGoProtobuf
        )
    }

    /// Whether this runs as a Go peer binary (client-go's or controller-runtime's), not
    /// as the Rust worker.
    pub fn is_go_peer(self) -> bool {
        self.is_client_go() || self == Implementation::ControllerRuntime
    }

    /// Parses [`Implementation::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ours" => Some(Implementation::Ours),
            "kube-runtime" => Some(Implementation::KubeRuntime),
            "ours-keep-mf" => Some(Implementation::OursKeepManagedFields),
            "ours-list" => Some(Implementation::OursList),
            "kube-runtime-strip-mf" => Some(Implementation::KubeRuntimeStripManagedFields),
            "kube-runtime-watch-cache" => Some(Implementation::KubeRuntimeWatchCache),
            "kube-runtime-tuned" => Some(Implementation::KubeRuntimeTuned),
            "client-go-json" => Some(Implementation::ClientGoJson),
            "client-go-protobuf" => Some(Implementation::ClientGoProtobuf),
            "controller-runtime" => Some(Implementation::ControllerRuntime),
            "ours-fifo" => Some(Implementation::OursFifo),
            _ => None,
        }
    }
}

/// One initial sync (scenarios 1 and 2).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SyncSample {
    /// Which implementation ran.
    pub implementation: Implementation,
    /// Objects in the cache once synced.
    pub objects: usize,
    /// Seconds from start to synced.
    pub synced_seconds: f64,
    /// CPU seconds (user + system) from start to synced.
    pub cpu_seconds: f64,
    /// User CPU seconds.
    pub user_seconds: f64,
    /// System CPU seconds.
    pub sys_seconds: f64,
    /// RSS before starting (runtime and client built), KiB.
    pub baseline_rss_kib: u64,
    /// Peak RSS (`VmHWM`) once synced, KiB.
    pub peak_rss_kib: u64,
    /// RSS (`VmRSS`) once synced, KiB.
    pub rss_after_sync_kib: u64,
    /// Our informer's estimate of its cache's bytes once synced
    /// (`SharedIndexInformer::cache_size`); `None` for the other sides.
    #[serde(default)]
    pub estimated_cache_bytes: Option<u64>,
}

/// One watch-throughput run (scenario 3).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WatchSample {
    /// Which implementation ran.
    pub implementation: Implementation,
    /// Seconds from "go" until the cache held the last update.
    pub seconds: f64,
    /// CPU seconds (user + system) in that time.
    pub cpu_seconds: f64,
    /// Peak RSS (`VmHWM`) at the end, KiB.
    pub peak_rss_kib: u64,
    /// RSS (`VmRSS`) at the end, KiB.
    pub rss_kib: u64,
}

/// One relist after 410 Gone (scenario 6).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RelistSample {
    /// Which implementation ran.
    pub implementation: Implementation,
    /// Objects in the cache after the relist.
    pub objects: usize,
    /// RSS (`VmRSS`) right after the initial sync, KiB.
    pub rss_after_sync_kib: u64,
    /// Peak RSS (`VmHWM`, reset after the sync) from then until the relist was
    /// applied, KiB.
    pub peak_rss_kib: u64,
    /// CPU seconds (user + system) from the sync until the relist was applied (the
    /// idle wait for the 410 costs next to nothing).
    pub cpu_seconds: f64,
}

/// One query measured on both caches (scenario 4).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QueryResult {
    /// What the query does.
    pub name: String,
    /// Our operations per second (median of the rounds).
    pub ours_per_second: f64,
    /// kube-runtime's operations per second (median of the rounds).
    pub theirs_per_second: f64,
    /// Objects one of our queries returns.
    pub ours_results: usize,
    /// Objects one of kube-runtime's queries returns.
    pub theirs_results: usize,
}

/// One queries run (scenario 4).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QuerySample {
    /// Objects in each cache.
    pub objects: usize,
    /// Each query.
    pub queries: Vec<QueryResult>,
}

/// One pipeline run (scenario 5).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PipelineSample {
    /// The informer's queue (`InOrder` or `DeltaFifo`).
    #[serde(default)]
    pub queue: String,
    /// Handlers registered.
    pub handlers: usize,
    /// Deltas pushed through (list + watch events); each reaches every handler.
    pub deltas: usize,
    /// Seconds from the list request until every handler had every notification.
    pub seconds: f64,
    /// Deltas per second.
    pub per_second: f64,
    /// CPU seconds in that time.
    pub cpu_seconds: f64,
    /// Peak RSS, KiB (includes the prebuilt events).
    pub peak_rss_kib: u64,
}

/// One controller run (scenario 7).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ControllerSample {
    /// Which implementation ran.
    pub implementation: Implementation,
    /// Parents (each owning one child).
    pub objects: usize,
    /// Children the driver changed after the first convergence.
    pub updates: usize,
    /// Reconciles run at once.
    pub workers: usize,
    /// Seconds from start until every parent's status was patched.
    pub converge_seconds: f64,
    /// CPU seconds (user + system) in that time.
    pub converge_cpu_seconds: f64,
    /// Reconciles run in that time (no-op ones included).
    pub converge_reconciles: usize,
    /// Seconds from "go" until every changed child's parent was patched.
    pub update_seconds: f64,
    /// CPU seconds in that time.
    pub update_cpu_seconds: f64,
    /// Reconciles run in that time.
    pub update_reconciles: usize,
    /// Median milliseconds from a child's change (its stamp) to the reconcile of its
    /// parent that saw it.
    pub latency_p50_ms: f64,
    /// 99th percentile of the same.
    pub latency_p99_ms: f64,
    /// How many changes were timed.
    pub latencies: usize,
    /// RSS before starting, KiB.
    pub baseline_rss_kib: u64,
    /// Peak RSS (`VmHWM`) at the end, KiB.
    pub peak_rss_kib: u64,
}

/// One run of scenario 12: a controller's startup backlog, and edits made while it
/// drains.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BacklogSample {
    /// Which implementation ran (ours, ours without priorities, kube-runtime).
    pub implementation: Implementation,
    /// Parents (each owning one child), every one needing a reconcile at start.
    pub objects: usize,
    /// Children the driver changed while the backlog drained.
    pub edits: usize,
    /// Reconciles run at once.
    pub workers: usize,
    /// Seconds from start until the first status patches (when the driver was told
    /// to start its edits).
    pub first_patches_seconds: f64,
    /// Seconds from the start until the first edit was made (its stamp).
    pub first_edit_seconds: f64,
    /// Seconds from the start until the last edit was made.
    pub last_edit_seconds: f64,
    /// Parents not yet patched when the first edit was made.
    pub backlog_at_first_edit: usize,
    /// Parents not yet patched when the last edit was made.
    pub backlog_at_last_edit: usize,
    /// Seconds from start until every parent was patched and every edit's value was
    /// in its owner's status.
    pub converge_seconds: f64,
    /// CPU seconds (user + system) in that time.
    pub converge_cpu_seconds: f64,
    /// Reconciles run in that time (no-op ones included).
    pub reconciles: usize,
    /// Median milliseconds from an edit (its stamp) to the first reconcile of its
    /// owner that saw it.
    pub latency_p50_ms: f64,
    /// 99th percentile of the same.
    pub latency_p99_ms: f64,
    /// The longest of the same.
    pub latency_max_ms: f64,
    /// How many edits were timed (all of them).
    pub latencies: usize,
    /// Peak RSS (`VmHWM`) at the end, KiB.
    pub peak_rss_kib: u64,
}

/// One run of scenario 13: a small two-informer operator's footprint once converged.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FootprintSample {
    /// Which implementation ran.
    pub implementation: Implementation,
    /// Parents (each owning one child).
    pub objects: usize,
    /// RSS before starting (runtime and client built), KiB.
    pub baseline_rss_kib: u64,
    /// Threads before starting (`Threads:` in `/proc/self/status`).
    pub baseline_threads: u64,
    /// Seconds from start until every parent was patched.
    pub converge_seconds: f64,
    /// Seconds the worker then stayed idle before measuring.
    pub idle_seconds: f64,
    /// RSS (`VmRSS`) after converging and idling, KiB.
    pub idle_rss_kib: u64,
    /// Of that, anonymous memory (`RssAnon`: heap, stacks), KiB.
    pub idle_rss_anon_kib: u64,
    /// Of that, mapped files (`RssFile`: the binary's code and data, shared
    /// libraries), KiB.
    pub idle_rss_file_kib: u64,
    /// Peak RSS (`VmHWM`) then, KiB.
    pub peak_rss_kib: u64,
    /// Threads then (`Threads:` in `/proc/self/status`).
    pub threads: u64,
    /// The threads' names then (`/proc/self/task/*/comm`), sorted.
    pub thread_names: Vec<String>,
    /// CPU seconds (user + system) from start until measured.
    pub cpu_seconds: f64,
}

/// One replica of a sharded controller (scenario 11), reported when the driver asks
/// (once every replica's keys are covered) and when it stops.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardSample {
    /// The replica's identity in its shard group.
    pub identity: String,
    /// Members of the group it last read.
    pub members: usize,
    /// Keys it reconciled since each last became its own.
    pub covered: usize,
    /// Reconciles run since start.
    pub reconciles: usize,
    /// Seconds since start.
    pub seconds: f64,
    /// CPU seconds (user + system) since start.
    pub cpu_seconds: f64,
    /// RSS before starting (runtime and client built), KiB.
    pub baseline_rss_kib: u64,
    /// Peak RSS (`VmHWM`) so far, KiB.
    pub peak_rss_kib: u64,
    /// RSS (`VmRSS`) now, KiB.
    pub rss_kib: u64,
    /// Bytes the API server sent this replica, counted by the driver at a proxy in
    /// front of it (scenario 17); 0 where not counted.
    #[serde(default)]
    pub bytes_received: u64,
    /// Objects its primary cache's reflector decoded (list items and watch events).
    #[serde(default)]
    pub objects_decoded: u64,
    /// Objects its primary cache's reflector received and dropped before decoding
    /// (not its shard's).
    #[serde(default)]
    pub objects_filtered_out: u64,
    /// The length in bytes of the shard selector it sends (by uid or namespace; 0 by
    /// key), as written, before URL encoding.
    #[serde(default)]
    pub selector_bytes: u64,
}

/// One run of scenario 14's fleet worker in one process: a fleet of clusters until
/// every object was reconciled, and (`join`) one more cluster joining it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FleetSample {
    /// Clusters at start.
    pub clusters: usize,
    /// Objects in them, every one reconciled.
    pub objects: usize,
    /// Seconds from before the set started until every object was reconciled.
    pub reconciled_seconds: f64,
    /// CPU seconds (user + system) in that time.
    pub cpu_seconds: f64,
    /// User CPU seconds.
    pub user_seconds: f64,
    /// System CPU seconds.
    pub sys_seconds: f64,
    /// Reconciles run in that time.
    pub reconciles: usize,
    /// RSS before starting (client configuration read, runtime built), KiB.
    pub baseline_rss_kib: u64,
    /// Peak RSS (`VmHWM`) once every object was reconciled, KiB.
    pub peak_rss_kib: u64,
    /// RSS (`VmRSS`) then, KiB.
    pub rss_kib: u64,
    /// The cluster that joined afterwards, in `join` runs.
    pub join: Option<JoinSample>,
}

/// A cluster joining a running fleet whose other clusters were all reconciled
/// (scenario 14).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JoinSample {
    /// Objects in the joining cluster.
    pub objects: usize,
    /// Seconds from the membership naming it until its informer had synced.
    pub synced_seconds: f64,
    /// Seconds from the membership naming it until every one of its objects was
    /// reconciled.
    pub reconciled_seconds: f64,
    /// CPU seconds (user + system) in that time.
    pub cpu_seconds: f64,
    /// RSS (`VmRSS`) just before it joined, KiB.
    pub rss_before_kib: u64,
    /// RSS once its objects were reconciled, KiB.
    pub rss_after_kib: u64,
    /// Peak RSS (`VmHWM`, reset just before it joined) from then, KiB.
    pub peak_rss_kib: u64,
}

/// One consistency check's cost (scenario 16).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckCost {
    /// Wall-clock seconds of the check.
    pub wall_seconds: f64,
    /// CPU seconds (user + system) of the worker meanwhile.
    pub cpu_seconds: f64,
    /// CPU seconds of the control plane (API server and etcd) meanwhile.
    pub server_cpu_seconds: f64,
    /// Version list requests (pages).
    pub lists: u64,
    /// Consistent reads of the server's version (the probe's).
    pub reads: u64,
    /// Watches of versions (the probe's).
    pub watches: u64,
    /// Peak RSS (`VmHWM`, reset before) above the RSS before the check, KiB.
    pub peak_above_kib: u64,
    /// What the check found.
    pub consistent: bool,
    /// How many differences it named.
    pub differences: usize,
}

/// Scenario 15's cost run: checks on a settled cache of the large collection.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConsistencyCostSample {
    /// Objects in the cache.
    pub objects: usize,
    /// Seconds to sync.
    pub sync_seconds: f64,
    /// RSS after the sync, KiB.
    pub rss_after_sync_kib: u64,
    /// Checks of the settled cache, each consistent.
    pub consistent_checks: Vec<CheckCost>,
    /// The check after one lost update: inconsistent, naming it.
    pub inconsistent_check: CheckCost,
}

/// Scenario 15's long run: periodic checks under churn, drifts made and found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConsistencyRunSample {
    /// Objects in the cache.
    pub objects: usize,
    /// Seconds run.
    pub seconds: f64,
    /// The checks' interval.
    pub interval_seconds: f64,
    /// Checks by result.
    pub checks: Vec<(String, u64)>,
    /// Drifts made (each one lost watch event).
    pub drifts: usize,
    /// For each drift found: seconds from its update's write to the check that named it.
    pub detection_seconds: Vec<f64>,
    /// Drifts a relist healed before a check found them (the cache holding the server's
    /// version again, by the server's own object).
    pub healed_before_found: usize,
    /// Inconsistent checks that named something other than a drift made (their keys).
    pub false_alarms: Vec<String>,
    /// Relists made to heal.
    pub heals: u64,
    /// Changes the churn made.
    pub changes: u64,
}

/// Scenario 15's staleness run: probes against a cache whose watch lags by a known
/// delay.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StalenessSample {
    /// The delay put on every watch event, seconds.
    pub delay_seconds: f64,
    /// The newest probe's lag, read once a second, seconds.
    pub lags: Vec<f64>,
    /// The gauge's largest reading, seconds.
    pub gauge_max_seconds: f64,
    /// Changes the churn made.
    pub changes: u64,
}

/// One churn run of scenario 15: a sync, then the driver deletes half the Pods and
/// relabels the rest, and the worker reports once its cache holds exactly the live
/// Pods, each with the new label.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChurnSample {
    /// The sync before the churn (its baseline is the churn's too).
    pub synced: SyncSample,
    /// Objects in the cache after the churn.
    pub objects: usize,
    /// Seconds from the driver's go-ahead until the cache showed the churn.
    pub seconds: f64,
    /// CPU seconds (user + system) over the same time.
    pub cpu_seconds: f64,
    /// RSS (`VmRSS`) once the cache showed the churn, KiB.
    pub rss_after_churn_kib: u64,
    /// Our informer's estimate of its cache's bytes then; `None` for other sides.
    #[serde(default)]
    pub estimated_cache_bytes: Option<u64>,
}

/// What a worker prints as its last stdout line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum WorkerReport {
    /// See [`SyncSample`].
    Sync(SyncSample),
    /// See [`WatchSample`].
    Watch(WatchSample),
    /// See [`QuerySample`].
    Queries(QuerySample),
    /// See [`PipelineSample`].
    Pipeline(PipelineSample),
    /// See [`RelistSample`].
    Relist(RelistSample),
    /// See [`ControllerSample`].
    Controller(ControllerSample),
    /// See [`ShardSample`].
    Shard(ShardSample),
    /// See [`BacklogSample`].
    Backlog(BacklogSample),
    /// See [`FootprintSample`].
    Footprint(FootprintSample),
    /// See [`FleetSample`].
    Fleet(FleetSample),
    /// See [`ConsistencyCostSample`].
    ConsistencyCost(ConsistencyCostSample),
    /// See [`ConsistencyRunSample`].
    ConsistencyRun(ConsistencyRunSample),
    /// See [`StalenessSample`].
    Staleness(StalenessSample),
    /// See [`FifoPushSample`].
    FifoPush(FifoPushSample),
    /// See [`ChurnSample`].
    Churn(ChurnSample),
}

/// One `fifo-push` run: how long a producer's adds to a `RealFifo` took while a
/// consumer on another thread processed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FifoPushSample {
    /// Changes added.
    pub count: usize,
    /// Microseconds the consumer spent per change beyond applying it.
    pub process_micros: u64,
    /// Median add, nanoseconds.
    pub push_p50_ns: u64,
    /// 99th percentile add, nanoseconds.
    pub push_p99_ns: u64,
    /// 99.9th percentile add, nanoseconds.
    pub push_p999_ns: u64,
    /// Slowest add, nanoseconds.
    pub push_max_ns: u64,
    /// Seconds until the consumer had processed every change.
    pub seconds: f64,
}
