//! Scenario 15: caching only what a controller reads. The same Pods (scenario 9's,
//! and a larger collection) synced by every way there is to cache Pods: our full
//! `Pod`, our projection (`PodView`), our metadata-only informer; kube-runtime's full
//! `Pod` with its defaults and with managedFields stripped by `.modify()` (its guide's
//! advice), kube-runtime with a hand-written `inherit = Pod` partial type of the same
//! fields, with whole metadata and with a hand-written metadata decoder that skips
//! managedFields (the best a kube-rs user can write); and client-go 0.37 cutting each
//! decoded Pod down to the same fields before caching it (a transform set with
//! `SetTransform`), when its peer is built. All in one run, each side `--pairs` times, the first of a round rotating.
//!
//! The rows set our projection against each of them (the scenario label names the
//! peer configuration), with the targets: at most 2,500 bytes per Pod above
//! start; at most 0.5x the CPU of our full Pod; at most 0.7x kube-runtime's best
//! partial type in memory and CPU; a peak during the list at most 1.3x the steady
//! state; and our cache-size estimate within 25% of the measured RSS above start. It
//! also prints a table of every variant's figures and draws them ([`crate::plot`]).

use std::fmt::Write as _;

use super::sync::{Side, side_runs};
use super::{Bench, POD_NAMESPACE, Samples, thousands};
use crate::plot::{PlotPoint, PlotSeries, projections};
use crate::report::{Implementation, Row, SyncSample, Target, median};

/// The namespace of the larger collection of Pods.
pub(super) const LARGE_POD_NAMESPACE: &str = "bench-pods-large";

/// One way to cache the Pods: who runs it, in which worker mode, and its name.
#[derive(Debug, Clone, Copy)]
struct Variant {
    side: Side<'static>,
    name: &'static str,
}

const fn variant(
    implementation: Implementation,
    mode: &'static str,
    name: &'static str,
) -> Variant {
    Variant {
        side: Side {
            implementation,
            mode,
        },
        name,
    }
}

/// Our projection: what every row is about.
const PROJECTION: usize = 0;
/// Our full Pod.
const OURS_FULL: usize = 1;
/// kube-runtime's partial type with managedFields skipped by hand: the peer.
const BEST_PARTIAL: usize = 6;

const VARIANTS: [Variant; 7] = [
    variant(
        Implementation::Ours,
        "sync-pod-views",
        "ours, projection (PodView)",
    ),
    variant(Implementation::Ours, "sync-pods", "ours, full Pod"),
    variant(
        Implementation::Ours,
        "sync-pods-metadata",
        "ours, metadata-only",
    ),
    variant(
        Implementation::KubeRuntime,
        "sync-pods",
        "kube-runtime, full Pod, defaults",
    ),
    variant(
        Implementation::KubeRuntimeStripManagedFields,
        "sync-pods",
        "kube-runtime, full Pod, managedFields stripped by .modify()",
    ),
    variant(
        Implementation::KubeRuntime,
        "sync-pod-partial",
        "kube-runtime, partial type (inherit = Pod)",
    ),
    variant(
        Implementation::KubeRuntime,
        "sync-pod-partial-slim",
        "kube-runtime, partial type, managedFields skipped in its metadata decoder",
    ),
];

const CLIENT_GO: Variant = variant(
    Implementation::ClientGoJson,
    "sync-pods-transform",
    "client-go 0.37, full Pod cut to the same fields (SetTransform)",
);

/// One variant's samples at one count, for the JSON file.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct ProjectionSample {
    variant: &'static str,
    pods: usize,
    sample: SyncSample,
}

/// Medians of one variant at one count.
#[derive(Debug, Clone, Copy)]
struct Figures {
    synced: f64,
    cpu: f64,
    peak_mib: f64,
    steady_mib: f64,
    /// Peak RSS above start, bytes per Pod.
    peak_per_pod: f64,
    /// RSS after sync above start, bytes per Pod.
    steady_per_pod: f64,
    /// Our estimate of the cache, bytes per Pod.
    estimate_per_pod: Option<f64>,
}

fn figures(samples: &[&SyncSample]) -> Figures {
    let m = |f: &dyn Fn(&SyncSample) -> f64| median(samples.iter().map(|s| f(s)));
    let per_pod = |kib: u64, base: u64, objects: usize| {
        (kib.saturating_sub(base) * 1024) as f64 / objects.max(1) as f64
    };
    let estimates: Vec<f64> = samples
        .iter()
        .filter_map(|s| Some(s.estimated_cache_bytes? as f64 / s.objects.max(1) as f64))
        .collect();
    Figures {
        synced: m(&|s| s.synced_seconds),
        cpu: m(&|s| s.cpu_seconds),
        peak_mib: m(&|s| s.peak_rss_kib as f64 / 1024.0),
        steady_mib: m(&|s| s.rss_after_sync_kib as f64 / 1024.0),
        peak_per_pod: m(&|s| per_pod(s.peak_rss_kib, s.baseline_rss_kib, s.objects)),
        steady_per_pod: m(&|s| per_pod(s.rss_after_sync_kib, s.baseline_rss_kib, s.objects)),
        estimate_per_pod: (!estimates.is_empty()).then(|| median(estimates)),
    }
}

/// Scenario 15 on scenario 9's Pods and on the larger collection.
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let options = bench.options;
    let mut variants = VARIANTS.to_vec();
    if bench.client_go.is_some() {
        variants.push(CLIENT_GO);
    }
    let sides: Vec<Side<'static>> = variants.iter().map(|v| v.side).collect();
    let mut series: Vec<PlotSeries> = variants
        .iter()
        .map(|v| PlotSeries {
            name: v.name.to_owned(),
            points: Vec::new(),
        })
        .collect();
    let mut tables = String::new();
    for (pods, namespace) in [
        (options.pods, POD_NAMESPACE),
        (options.projection_pods, LARGE_POD_NAMESPACE),
    ] {
        let label = format!("15. {} Pods", thousands(pods));
        let runs = side_runs(bench, namespace, pods, &sides, &label).await?;
        let figures: Vec<Figures> = (0..variants.len())
            .map(|i| {
                let column: Vec<&SyncSample> =
                    runs.iter().filter_map(|round| round.get(i)).collect();
                figures(&column)
            })
            .collect();
        for round in &runs {
            for (variant, sample) in variants.iter().zip(round) {
                samples.projections.push(ProjectionSample {
                    variant: variant.name,
                    pods,
                    sample: sample.clone(),
                });
            }
        }
        for (line, f) in series.iter_mut().zip(&figures) {
            line.points.push(PlotPoint {
                pods,
                bytes_per_pod: f.steady_per_pod,
            });
        }
        rows.extend(projection_rows(&label, &variants, &figures));
        tables.push_str(&variant_table(&label, &variants, &figures));
    }
    println!("{tables}");
    let path = &options.plot;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    projections(&series, path)?;
    eprintln!("[bench] scenario 15's figure: {}", path.display());
    Ok(())
}

/// The rows of one count: the targets, then our projection against every variant.
fn projection_rows(label: &str, variants: &[Variant], figures: &[Figures]) -> Vec<Row> {
    let projection = figures[PROJECTION];
    let row = |scenario: String, metric: &str, ours: f64, theirs: Option<f64>, target| Row {
        scenario,
        metric: metric.to_owned(),
        ours,
        theirs,
        target,
        client_go: None,
        controller_runtime: None,
    };
    let mut rows = vec![
        row(
            format!("{label}: projection"),
            "RSS after sync above start, per Pod (bytes)",
            projection.steady_per_pod,
            None,
            Some(Target::AtMost(2_500.0)),
        ),
        row(
            format!("{label}: projection, peak during the list / after sync"),
            "RSS above start, per Pod (bytes)",
            projection.peak_per_pod,
            Some(projection.steady_per_pod),
            Some(Target::RatioAtMost(1.3)),
        ),
        row(
            format!("{label}: projection / {}", variants[OURS_FULL].name),
            "CPU to sync, user+sys (s)",
            projection.cpu,
            Some(figures[OURS_FULL].cpu),
            Some(Target::RatioAtMost(0.5)),
        ),
        row(
            format!("{label}: projection / {}", variants[BEST_PARTIAL].name),
            "RSS after sync above start, per Pod (bytes)",
            projection.steady_per_pod,
            Some(figures[BEST_PARTIAL].steady_per_pod),
            Some(Target::RatioAtMost(0.7)),
        ),
        row(
            format!("{label}: projection / {}", variants[BEST_PARTIAL].name),
            "CPU to sync, user+sys (s)",
            projection.cpu,
            Some(figures[BEST_PARTIAL].cpu),
            Some(Target::RatioAtMost(0.7)),
        ),
    ];
    for (i, f) in figures.iter().enumerate().take(3) {
        if let Some(estimate) = f.estimate_per_pod {
            rows.push(row(
                format!(
                    "{label}: {}, cache_size() estimate / measured",
                    variants[i].name
                ),
                "bytes per Pod (estimate; RSS after sync above start)",
                estimate,
                Some(f.steady_per_pod),
                Some(Target::RatioBetween(0.75, 1.25)),
            ));
        }
    }
    for (i, (variant, f)) in variants.iter().zip(figures).enumerate() {
        if i == PROJECTION {
            continue;
        }
        let scenario = format!("{label}: projection / {}", variant.name);
        rows.push(row(
            scenario.clone(),
            "RSS after sync above start, per Pod (bytes)",
            projection.steady_per_pod,
            Some(f.steady_per_pod),
            None,
        ));
        rows.push(row(
            scenario.clone(),
            "CPU to sync, user+sys (s)",
            projection.cpu,
            Some(f.cpu),
            None,
        ));
        rows.push(row(
            scenario,
            "time to synced (s)",
            projection.synced,
            Some(f.synced),
            None,
        ));
    }
    rows
}

/// Every variant's medians at one count, as a markdown table.
fn variant_table(label: &str, variants: &[Variant], figures: &[Figures]) -> String {
    let mut out = format!(
        "\n{label}: every variant (medians)\n\n| variant | time to synced (s) | CPU (s) | peak RSS \
         (MiB) | RSS after sync (MiB) | peak above start, per Pod (bytes) | after sync above \
         start, per Pod (bytes) | estimate, per Pod (bytes) |\n|---|---:|---:|---:|---:|---:|---:|---:|\n"
    );
    for (variant, f) in variants.iter().zip(figures) {
        let _ = writeln!(
            out,
            "| {} | {:.2} | {:.2} | {:.0} | {:.0} | {:.0} | {:.0} | {} |",
            variant.name,
            f.synced,
            f.cpu,
            f.peak_mib,
            f.steady_mib,
            f.peak_per_pod,
            f.steady_per_pod,
            f.estimate_per_pod
                .map(|e| format!("{e:.0}"))
                .unwrap_or_else(|| "-".to_owned())
        );
    }
    out
}
