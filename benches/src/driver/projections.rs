//! Scenario 15: caching only what a controller reads. The same Pods (scenario 9's,
//! and a larger collection) synced by every way there is to cache Pods: our full
//! `Pod`, our projection (`PodView`, and `SharedPodView`: the same with its repeating
//! values shared), our metadata-only informer; kube-runtime's full
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
//!
//! `--projection-pods` takes several counts (`30000,150000`), a namespace each. Above
//! [`ALL_VARIANTS_UP_TO`] (50,000) Pods only our projections and our metadata-only
//! informer run, and the table says so: the others' full Pods would take GiB each.
//! Then the churn ([`churn`]): does the cache give back what it no longer holds?

use std::fmt::Write as _;

use super::sync::{Side, side_runs};
use super::{ALL_VARIANTS_UP_TO, Bench, POD_NAMESPACE, Samples, thousands};
use crate::plot::{PlotPoint, PlotSeries, projections};
use crate::report::{Implementation, Row, SyncSample, Target, median};

pub(super) use churn::{ChurnRun, restore as create_churn_pods};

mod churn;

/// The namespace of the first larger collection of Pods.
const LARGE_POD_NAMESPACE: &str = "bench-pods-large";

/// The namespace of the `index`th count of `--projection-pods`: the first
/// `bench-pods-large` (as when there was one), the others named by their count.
pub(super) fn large_pod_namespace(index: usize, pods: usize) -> String {
    if index == 0 {
        LARGE_POD_NAMESPACE.to_owned()
    } else {
        format!("{LARGE_POD_NAMESPACE}-{pods}")
    }
}

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
/// Our metadata-only informer.
const METADATA_ONLY: usize = 2;
/// kube-runtime's partial type with managedFields skipped by hand: the peer.
const BEST_PARTIAL: usize = 6;
/// Our projection with its repeating values shared (issue 48).
const SHARED_PROJECTION: usize = 7;
/// The same with our compact metadata (issue 48).
const COMPACT_PROJECTION: usize = 8;

const VARIANTS: [Variant; 9] = [
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
    variant(
        Implementation::Ours,
        "sync-pod-views-shared",
        "ours, projection, repeating values shared (SharedPodView)",
    ),
    variant(
        Implementation::Ours,
        "sync-pod-views-compact",
        "ours, projection, compact metadata and values shared (CompactPodView)",
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

/// Whether the variant at `index` runs at `pods` Pods: every one up to
/// [`ALL_VARIANTS_UP_TO`], only our slim ones (projection, metadata-only) above.
fn runs_at(index: usize, pods: usize) -> bool {
    pods <= ALL_VARIANTS_UP_TO
        || [
            PROJECTION,
            METADATA_ONLY,
            SHARED_PROJECTION,
            COMPACT_PROJECTION,
        ]
        .contains(&index)
}

/// Scenario 15 on scenario 9's Pods, on each larger collection, then the churn.
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
    let larger = options
        .projection_pods
        .iter()
        .enumerate()
        .map(|(i, &pods)| (pods, large_pod_namespace(i, pods)));
    for (pods, namespace) in std::iter::once((options.pods, POD_NAMESPACE.to_owned())).chain(larger)
    {
        let label = format!("15. {} Pods", thousands(pods));
        // The variants that run at this count, and the sides that run them, in order.
        let ran: Vec<usize> = (0..variants.len()).filter(|&i| runs_at(i, pods)).collect();
        let ran_sides: Vec<Side<'static>> = ran.iter().map(|&i| sides[i]).collect();
        let runs = side_runs(bench, &namespace, pods, &ran_sides, &label).await?;
        let figures: Vec<Option<Figures>> = (0..variants.len())
            .map(|i| {
                let at = ran.iter().position(|&r| r == i)?;
                let column: Vec<&SyncSample> =
                    runs.iter().filter_map(|round| round.get(at)).collect();
                Some(figures(&column))
            })
            .collect();
        for round in &runs {
            for (&i, sample) in ran.iter().zip(round) {
                samples.projections.push(ProjectionSample {
                    variant: variants[i].name,
                    pods,
                    sample: sample.clone(),
                });
            }
        }
        for (line, f) in series.iter_mut().zip(&figures) {
            if let Some(f) = f {
                line.points.push(PlotPoint {
                    pods,
                    bytes_per_pod: f.steady_per_pod,
                });
            }
        }
        rows.extend(projection_rows(&label, &variants, &figures));
        tables.push_str(&variant_table(&label, &variants, &figures));
    }
    if options.churn_pods > 0 {
        tables.push_str(&churn::run(bench, rows, samples).await?);
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

/// The rows of one count: the targets, then our projection against every variant
/// that ran (`None`: not at this count).
fn projection_rows(label: &str, variants: &[Variant], figures: &[Option<Figures>]) -> Vec<Row> {
    let Some(projection) = figures[PROJECTION] else {
        return Vec::new();
    };
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
    ];
    if let Some(full) = figures[OURS_FULL] {
        rows.push(row(
            format!("{label}: projection / {}", variants[OURS_FULL].name),
            "CPU to sync, user+sys (s)",
            projection.cpu,
            Some(full.cpu),
            Some(Target::RatioAtMost(0.5)),
        ));
    }
    if let Some(best) = figures[BEST_PARTIAL] {
        rows.push(row(
            format!("{label}: projection / {}", variants[BEST_PARTIAL].name),
            "RSS after sync above start, per Pod (bytes)",
            projection.steady_per_pod,
            Some(best.steady_per_pod),
            Some(Target::RatioAtMost(0.7)),
        ));
        rows.push(row(
            format!("{label}: projection / {}", variants[BEST_PARTIAL].name),
            "CPU to sync, user+sys (s)",
            projection.cpu,
            Some(best.cpu),
            Some(Target::RatioAtMost(0.7)),
        ));
    }
    // Issue 48's targets, for the compact projection.
    if let Some(compact) = figures[COMPACT_PROJECTION] {
        let name = variants[COMPACT_PROJECTION].name;
        rows.push(row(
            format!("{label}: {name}"),
            "RSS after sync above start, per Pod (bytes)",
            compact.steady_per_pod,
            None,
            Some(Target::AtMost(1_000.0)),
        ));
        if let Some(best) = figures[BEST_PARTIAL] {
            rows.push(row(
                format!("{label}: {name} / {}", variants[BEST_PARTIAL].name),
                "RSS after sync above start, per Pod (bytes)",
                compact.steady_per_pod,
                Some(best.steady_per_pod),
                Some(Target::RatioAtMost(0.3)),
            ));
        }
        rows.push(row(
            format!("{label}: {name} / {}", variants[PROJECTION].name),
            "CPU to sync, user+sys (s)",
            compact.cpu,
            Some(projection.cpu),
            Some(Target::RatioAtMost(1.0)),
        ));
    }
    let estimated = |i: &usize| *i < 3 || *i == COMPACT_PROJECTION;
    for (i, f) in figures.iter().enumerate().filter(|(i, _)| estimated(i)) {
        if let Some(f) = f
            && let Some(estimate) = f.estimate_per_pod
        {
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
        let Some(f) = f.filter(|_| i != PROJECTION) else {
            continue;
        };
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

/// Every variant's medians at one count, as a markdown table; the variants that did
/// not run at this count ([`runs_at`]) are named, and why.
fn variant_table(label: &str, variants: &[Variant], figures: &[Option<Figures>]) -> String {
    let mut out = format!(
        "\n{label}: every variant (medians)\n\n| variant | time to synced (s) | CPU (s) | peak RSS \
         (MiB) | RSS after sync (MiB) | peak above start, per Pod (bytes) | after sync above \
         start, per Pod (bytes) | estimate, per Pod (bytes) |\n|---|---:|---:|---:|---:|---:|---:|---:|\n"
    );
    for (variant, f) in variants.iter().zip(figures) {
        let Some(f) = f else {
            let _ = writeln!(
                out,
                "| {} | not run: above {} Pods only ours, projection and metadata-only, run \
                 (the full Pods would take GiB) | | | | | | |",
                variant.name,
                thousands(ALL_VARIANTS_UP_TO)
            );
            continue;
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn above_the_limit_only_our_slim_variants_run_each_count_in_a_namespace_of_its_own() {
        assert!((0..VARIANTS.len()).all(|i| runs_at(i, ALL_VARIANTS_UP_TO)));
        let above: Vec<usize> = (0..VARIANTS.len())
            .filter(|&i| runs_at(i, ALL_VARIANTS_UP_TO + 1))
            .collect();
        assert_eq!(
            above,
            [
                PROJECTION,
                METADATA_ONLY,
                SHARED_PROJECTION,
                COMPACT_PROJECTION
            ]
        );
        assert_eq!(large_pod_namespace(0, 30_000), LARGE_POD_NAMESPACE);
        assert_eq!(large_pod_namespace(1, 150_000), "bench-pods-large-150000");
    }
}
