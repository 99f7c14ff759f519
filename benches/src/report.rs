//! What workers report (one JSON line each) and the table the driver prints.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

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
    /// kube-runtime clearing `managedFields` before its store (`.modify(..)`, as its
    /// optimisation guide advises), like our default.
    KubeRuntimeStripManagedFields,
    /// kube-runtime listing from the API server's watch cache in one request, as ours
    /// does by default (`any_semantic()`, no page size) instead of its default paged
    /// consistent reads from etcd.
    KubeRuntimeWatchCache,
    /// client-go 1.20's `SharedInformerFactory` informer (the peer in
    /// `benches/client-go`), speaking JSON.
    ClientGoJson,
    /// The same, speaking protobuf (`application/vnd.kubernetes.protobuf`).
    ClientGoProtobuf,
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
            Implementation::KubeRuntimeStripManagedFields => "kube-runtime-strip-mf",
            Implementation::KubeRuntimeWatchCache => "kube-runtime-watch-cache",
            Implementation::ClientGoJson => "client-go-json",
            Implementation::ClientGoProtobuf => "client-go-protobuf",
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

    /// Parses [`Implementation::as_str`].
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ours" => Some(Implementation::Ours),
            "kube-runtime" => Some(Implementation::KubeRuntime),
            "ours-keep-mf" => Some(Implementation::OursKeepManagedFields),
            "kube-runtime-strip-mf" => Some(Implementation::KubeRuntimeStripManagedFields),
            "kube-runtime-watch-cache" => Some(Implementation::KubeRuntimeWatchCache),
            "client-go-json" => Some(Implementation::ClientGoJson),
            "client-go-protobuf" => Some(Implementation::ClientGoProtobuf),
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
}

/// The median (the mean of the two middle values for an even count); NaN when empty.
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.into_iter().collect();
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

/// A target on a row: the ratio ours/theirs (or our value alone, without a
/// kube-runtime column) must be at most or at least this.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// The ratio must be at most this.
    RatioAtMost(f64),
    /// The ratio must be at least this.
    RatioAtLeast(f64),
    /// Our value must be at least this.
    AtLeast(f64),
}

impl Target {
    fn describe(self) -> String {
        match self {
            Target::RatioAtMost(x) => format!("<= {x}x"),
            Target::RatioAtLeast(x) => format!(">= {x}x"),
            Target::AtLeast(x) => format!(">= {}", human(x)),
        }
    }

    fn met(self, ours: f64, ratio: Option<f64>) -> bool {
        match self {
            Target::RatioAtMost(x) => ratio.is_some_and(|r| r <= x),
            Target::RatioAtLeast(x) => ratio.is_some_and(|r| r >= x),
            Target::AtLeast(x) => ours >= x,
        }
    }
}

/// client-go's medians on a row (JSON and protobuf), and the target against them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientGo {
    /// client-go speaking JSON.
    pub json: f64,
    /// client-go speaking protobuf.
    pub protobuf: f64,
    /// The target on ours/client-go, met when both ratios meet it.
    pub target: Option<Target>,
}

/// One row of the result table.
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// The scenario, e.g. `1. sync 10k`.
    pub scenario: String,
    /// What is measured, with its unit.
    pub metric: String,
    /// Our median.
    pub ours: f64,
    /// kube-runtime's median, when compared.
    pub theirs: Option<f64>,
    /// The target on ours/kube-runtime (or on ours alone), if the issue sets one.
    pub target: Option<Target>,
    /// client-go's medians, when it ran.
    pub client_go: Option<ClientGo>,
}

impl Row {
    /// ours / theirs.
    pub fn ratio(&self) -> Option<f64> {
        self.theirs.map(|t| self.ours / t)
    }

    /// ours / client-go, JSON then protobuf.
    pub fn client_go_ratios(&self) -> Option<(f64, f64)> {
        self.client_go
            .map(|c| (self.ours / c.json, self.ours / c.protobuf))
    }

    /// Whether every target is met (`None` without a target).
    pub fn met(&self) -> Option<bool> {
        let peer = self.target.map(|t| t.met(self.ours, self.ratio()));
        let client_go = self.client_go.and_then(|c| {
            let (json, protobuf) = self.client_go_ratios()?;
            let target = c.target?;
            Some(target.met(self.ours, Some(json)) && target.met(self.ours, Some(protobuf)))
        });
        match (peer, client_go) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(true) && b.unwrap_or(true)),
        }
    }
}

/// Formats a figure with three significant digits (and thousands separators above).
pub fn human(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".to_owned();
    }
    let abs = x.abs();
    if abs >= 1000.0 {
        let rounded = x.round() as i64;
        let digits = rounded.unsigned_abs().to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        if rounded < 0 {
            out.insert(0, '-');
        }
        out
    } else if abs >= 100.0 {
        format!("{x:.0}")
    } else if abs >= 10.0 {
        format!("{x:.1}")
    } else if abs >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

fn ratio_text(ratio: f64) -> String {
    if !ratio.is_finite() {
        "n/a".to_owned()
    } else if ratio >= 100.0 {
        format!("{}x", human(ratio))
    } else if ratio > 0.0 && ratio < 0.01 {
        // Two significant digits, not `0.00x`.
        let decimals = (-ratio.log10()).ceil() as usize + 1;
        format!("{ratio:.decimals$}x")
    } else {
        format!("{ratio:.2}x")
    }
}

/// The rows as a Markdown table; client-go's columns appear when any row has them.
pub fn markdown(rows: &[Row]) -> String {
    let with_client_go = rows.iter().any(|r| r.client_go.is_some());
    let mut out = String::new();
    if with_client_go {
        out.push_str(
            "| scenario | metric | ours | kube-runtime | client-go JSON | client-go protobuf \
             | ours/kube-runtime | ours/client-go JSON | ours/client-go protobuf | target | met |\n",
        );
        out.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
    } else {
        out.push_str(
            "| scenario | metric | ours | kube-runtime | ours/kube-runtime | target | met |\n",
        );
        out.push_str("|---|---|---:|---:|---:|---|---|\n");
    }
    let dash = || "-".to_owned();
    for row in rows {
        let _ = write!(
            out,
            "| {} | {} | {} | {} |",
            row.scenario,
            row.metric,
            human(row.ours),
            row.theirs.map(human).unwrap_or_else(dash),
        );
        if with_client_go {
            let _ = write!(
                out,
                " {} | {} |",
                row.client_go.map(|c| human(c.json)).unwrap_or_else(dash),
                row.client_go
                    .map(|c| human(c.protobuf))
                    .unwrap_or_else(dash),
            );
        }
        let _ = write!(
            out,
            " {} |",
            row.ratio().map(ratio_text).unwrap_or_else(dash)
        );
        if with_client_go {
            let ratios = row.client_go_ratios();
            let _ = write!(
                out,
                " {} | {} |",
                ratios.map(|r| ratio_text(r.0)).unwrap_or_else(dash),
                ratios.map(|r| ratio_text(r.1)).unwrap_or_else(dash),
            );
        }
        let targets: Vec<String> = [
            row.target.map(|t| format!("{} kube-runtime", t.describe())),
            row.client_go
                .and_then(|c| c.target)
                .map(|t| format!("{} client-go", t.describe())),
        ]
        .into_iter()
        .flatten()
        .collect();
        let targets = if row.client_go.is_none() && row.theirs.is_none() {
            row.target.map(Target::describe).unwrap_or_default()
        } else {
            targets.join(", ")
        };
        let _ = writeln!(
            out,
            " {targets} | {} |",
            match row.met() {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "",
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_formatting() {
        assert_eq!(median([3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median([4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median([]).is_nan());
        assert_eq!(human(1_234_567.0), "1,234,567");
        assert_eq!(human(0.1234), "0.123");
        let row = Row {
            scenario: "x".into(),
            metric: "m".into(),
            ours: 1.0,
            theirs: Some(2.0),
            target: Some(Target::RatioAtMost(0.6)),
            ..Row::default()
        };
        assert_eq!(row.met(), Some(true));
        assert_eq!(ratio_text(0.004567), "0.0046x");
        assert_eq!(ratio_text(0.0123), "0.01x");
        assert_eq!(ratio_text(f64::NAN), "n/a");
        assert!(markdown(std::slice::from_ref(&row)).contains("| 0.50x |"));
        let with_client_go = Row {
            client_go: Some(ClientGo {
                json: 4.0,
                protobuf: 2.5,
                target: Some(Target::RatioAtMost(0.3)),
            }),
            ..row
        };
        // 1/4 meets <= 0.3x, 1/2.5 does not.
        assert_eq!(with_client_go.met(), Some(false));
        let table = markdown(&[with_client_go]);
        assert!(table.contains("| 0.25x | 0.40x |"), "{table}");
    }
}
