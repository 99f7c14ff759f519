//! The initial-sync scenarios: 1 (10,000 ConfigMaps, with like-for-like rows), 2
//! (50,000), 8 (100,000) and 9 (10,000 Pods). With its defaults, each runs ours,
//! kube-runtime and (but 9) client-go speaking JSON and protobuf when its peer is built;
//! 1 and 2 also run kube-runtime tuned as its docs say
//! ([`Implementation::KubeRuntimeTuned`], rows of their own) and controller-runtime's
//! cache when its peer is built (a column). Their rounds of runs and their rows serve
//! scenario 10 ([`metadata`](super::metadata)) too.

use anyhow::bail;

use super::process::run_side;
use super::{
    Bench, Columns, DEFAULT_SIDES, KUBE_RUNTIME_TUNED, LARGE_NAMESPACE, MIB, POD_NAMESPACE,
    SCALE_NAMESPACE, SMALL_NAMESPACE, Samples, rotated, row_of, sides_of, thousands,
};
use crate::report::{Implementation, Row, SyncSample, Target, WorkerReport};

/// One collection to sync: the worker mode, its namespace and how many objects.
#[derive(Debug, Clone, Copy)]
struct Collection<'a> {
    mode: &'a str,
    namespace: &'a str,
    objects: usize,
}

/// Scenario 1: the initial sync of the small collection, with defaults, then like for
/// like.
pub(super) async fn small(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let options = bench.options;
    let label = format!("1. sync {}", thousands(options.objects));
    let collection = Collection {
        mode: "sync",
        namespace: SMALL_NAMESPACE,
        objects: options.objects,
    };
    samples.sync_small = default_sync(bench, collection, &label, rows, &SYNC_SIDES).await?;
    // Like for like: both keep managedFields, then both drop them; then both list
    // from the watch cache in one request, neither streaming (kube-runtime's default
    // pages consistent reads: 20 requests of 500 for 10,000 objects; ours streams),
    // which shows what the way of listing costs each side.
    for (implementations, what) in [
        (KEEP_BOTH, "managedFields kept on both sides"),
        (STRIP_BOTH, "managedFields dropped on both sides"),
        (
            WATCH_CACHE_BOTH,
            "both listing from the watch cache, unpaged",
        ),
    ] {
        let label = format!("{label}, {what}");
        let runs = sync_runs(bench, collection, &implementations, &label).await?;
        rows.extend(
            sync_rows(&label, &runs, Columns::PAIR, false)
                .into_iter()
                .take(3),
        );
        samples
            .sync_small_like_for_like
            .extend(runs.into_iter().flatten());
    }
    Ok(())
}

/// Scenario 2: the initial sync of the large collection, with defaults.
pub(super) async fn large(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let options = bench.options;
    let label = format!("2. sync {}", thousands(options.large_objects));
    let collection = Collection {
        mode: "sync",
        namespace: LARGE_NAMESPACE,
        objects: options.large_objects,
    };
    samples.sync_large = default_sync(bench, collection, &label, rows, &SYNC_SIDES).await?;
    Ok(())
}

/// Scenario 8: the initial sync of the scale collection (100,000 by default), with
/// defaults: with scenarios 1 and 2, whether the cost per object stays flat.
pub(super) async fn scale(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let options = bench.options;
    let label = format!("8. sync {}", thousands(options.scale_objects));
    let collection = Collection {
        mode: "sync",
        namespace: SCALE_NAMESPACE,
        objects: options.scale_objects,
    };
    samples.sync_scale = default_sync(bench, collection, &label, rows, &DEFAULT_SIDES).await?;
    Ok(())
}

/// Scenario 9: the initial sync of Pods as a cluster holds them (several KiB each,
/// deeper than the ConfigMaps), with defaults. (client-go's peer informs ConfigMaps
/// only.)
pub(super) async fn pods(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let options = bench.options;
    let label = format!("9. sync {} Pods", thousands(options.pods));
    let collection = Collection {
        mode: "sync-pods",
        namespace: POD_NAMESPACE,
        objects: options.pods,
    };
    samples.sync_pods = default_sync(bench, collection, &label, rows, &DEFAULTS).await?;
    Ok(())
}

/// The sides of scenarios 1 and 2: ours, kube-runtime with its defaults and tuned as its
/// docs say, client-go (JSON, protobuf) and controller-runtime (the Go peers when built).
const SYNC_SIDES: [Implementation; 6] = [
    Implementation::Ours,
    Implementation::KubeRuntime,
    Implementation::KubeRuntimeTuned,
    Implementation::ClientGoJson,
    Implementation::ClientGoProtobuf,
    Implementation::ControllerRuntime,
];

/// Both sides with default options: the comparison the targets are about.
pub(super) const DEFAULTS: [Implementation; 2] =
    [Implementation::Ours, Implementation::KubeRuntime];
/// Both sides keeping `managedFields`.
const KEEP_BOTH: [Implementation; 2] = [
    Implementation::OursKeepManagedFields,
    Implementation::KubeRuntime,
];
/// Both sides listing from the watch cache in one request (ours with streaming lists
/// off: by default both stream where the server can).
const WATCH_CACHE_BOTH: [Implementation; 2] = [
    Implementation::OursList,
    Implementation::KubeRuntimeWatchCache,
];
/// Both sides dropping `managedFields`.
const STRIP_BOTH: [Implementation; 2] = [
    Implementation::Ours,
    Implementation::KubeRuntimeStripManagedFields,
];

/// A sync scenario with the sides of `wanted` that can run here ([`sides_of`]): the
/// rows of ours against kube-runtime's defaults (with the targets, and client-go's and
/// controller-runtime's columns when they ran) go to `rows`, then, when kube-runtime
/// tuned ran, the first rows of ours against it under a label naming it; returns the
/// samples.
async fn default_sync(
    bench: &Bench<'_>,
    collection: Collection<'_>,
    label: &str,
    rows: &mut Vec<Row>,
    wanted: &[Implementation],
) -> anyhow::Result<Vec<SyncSample>> {
    let sides = sides_of(bench, wanted);
    let runs = sync_runs(bench, collection, &sides, label).await?;
    let defaults = Columns::of(&sides, Implementation::Ours, Implementation::KubeRuntime);
    rows.extend(sync_rows(label, &runs, defaults, true));
    if sides.contains(&Implementation::KubeRuntimeTuned) {
        let tuned = Columns::pair(
            &sides,
            Implementation::Ours,
            Implementation::KubeRuntimeTuned,
        );
        let label = format!("{label}, {KUBE_RUNTIME_TUNED}");
        rows.extend(sync_rows(&label, &runs, tuned, false).into_iter().take(4));
    }
    Ok(runs.into_iter().flatten().collect())
}

/// `--pairs` rounds of one run of each of `implementations` on `collection`, the
/// first of a round rotating ([`rotated`]); each run must have synced every object.
/// Each round's samples are in the order of `implementations`.
async fn sync_runs(
    bench: &Bench<'_>,
    collection: Collection<'_>,
    implementations: &[Implementation],
    label: &str,
) -> anyhow::Result<Vec<Vec<SyncSample>>> {
    let sides: Vec<Side<'_>> = implementations
        .iter()
        .map(|&implementation| Side {
            implementation,
            mode: collection.mode,
        })
        .collect();
    side_runs(
        bench,
        collection.namespace,
        collection.objects,
        &sides,
        label,
    )
    .await
}

/// One side of a sync comparison: an implementation run in a worker mode (`sync`,
/// `sync-metadata`...).
#[derive(Debug, Clone, Copy)]
pub(super) struct Side<'a> {
    /// Who syncs.
    pub(super) implementation: Implementation,
    /// The worker mode, which says what is synced and how.
    pub(super) mode: &'a str,
}

/// `--pairs` rounds of one run of each of `sides` on the `objects` objects of
/// `namespace`, the first of a round rotating ([`rotated`]); each run must have synced
/// every object. Each round's samples are in the order of `sides`.
pub(super) async fn side_runs(
    bench: &Bench<'_>,
    namespace: &str,
    objects: usize,
    sides: &[Side<'_>],
    label: &str,
) -> anyhow::Result<Vec<Vec<SyncSample>>> {
    let mut rounds = Vec::new();
    for round in 0..bench.options.pairs {
        let mut samples: Vec<Option<SyncSample>> = vec![None; sides.len()];
        for index in rotated(round, sides.len()) {
            let Side {
                implementation,
                mode,
            } = sides[index];
            let report = run_side(bench, implementation, mode, namespace).await?;
            let WorkerReport::Sync(sample) = report else {
                bail!("the {mode} worker reported something else");
            };
            eprintln!(
                "[{label}] round {}: {:<13} {:<24} synced {:.3} s, CPU {:.3} s (user {:.2}, \
                 sys {:.2}), RSS {:.1} -> peak {:.1}, after {:.1} MiB, {} objects",
                round + 1,
                mode,
                implementation.as_str(),
                sample.synced_seconds,
                sample.cpu_seconds,
                sample.user_seconds,
                sample.sys_seconds,
                sample.baseline_rss_kib as f64 / MIB,
                sample.peak_rss_kib as f64 / MIB,
                sample.rss_after_sync_kib as f64 / MIB,
                sample.objects
            );
            if sample.objects != objects {
                bail!(
                    "{} ({mode}) synced {} objects, expected {objects}",
                    implementation.as_str(),
                    sample.objects,
                );
            }
            samples[index] = Some(sample);
        }
        rounds.push(samples.into_iter().flatten().collect());
    }
    Ok(rounds)
}

/// The rows of a sync scenario, time, CPU and peak RSS first, over `runs` laid out as
/// `columns` says; with the targets when `targets` (the default-options
/// comparison).
pub(super) fn sync_rows(
    label: &str,
    runs: &[Vec<SyncSample>],
    columns: Columns,
    targets: bool,
) -> Vec<Row> {
    let row = |metric: &str,
               f: &dyn Fn(&SyncSample) -> f64,
               target: Option<Target>,
               client_go_target: Option<Target>| {
        row_of(
            label,
            metric,
            runs,
            columns,
            f,
            target.filter(|_| targets),
            client_go_target.filter(|_| targets),
        )
    };
    let mib = |kib: u64| kib as f64 / MIB;
    vec![
        row(
            "time to synced (s)",
            &|s| s.synced_seconds,
            Some(Target::RatioAtMost(1.0)),
            None,
        ),
        row(
            "CPU to sync, user+sys (s)",
            &|s| s.cpu_seconds,
            Some(Target::RatioAtMost(0.6)),
            Some(Target::RatioAtMost(0.3)),
        ),
        row(
            "peak RSS (MiB)",
            &|s| mib(s.peak_rss_kib),
            Some(Target::RatioAtMost(0.6)),
            Some(Target::RatioAtMost(0.6)),
        ),
        row(
            "RSS after sync (MiB)",
            &|s| mib(s.rss_after_sync_kib),
            None,
            None,
        ),
        row(
            "RSS before start (MiB)",
            &|s| mib(s.baseline_rss_kib),
            None,
            None,
        ),
        row(
            "CPU per object (µs)",
            &|s| s.cpu_seconds * 1e6 / s.objects as f64,
            None,
            None,
        ),
        row(
            "peak RSS above start, per object (bytes)",
            &|s| {
                (s.peak_rss_kib.saturating_sub(s.baseline_rss_kib) * 1024) as f64 / s.objects as f64
            },
            None,
            None,
        ),
        row(
            "RSS after sync above start, per object (bytes)",
            &|s| {
                (s.rss_after_sync_kib.saturating_sub(s.baseline_rss_kib) * 1024) as f64
                    / s.objects as f64
            },
            None,
            None,
        ),
    ]
}
