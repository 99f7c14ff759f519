//! Scenarios 1 and 2: the initial sync of 10,000 and of 50,000 ConfigMaps, with both
//! sides' defaults, and (scenario 1) like for like on `managedFields`.

use std::path::Path;

use anyhow::bail;

use super::process::run_worker;
use super::{
    Bench, LARGE_NAMESPACE, MIB, POD_NAMESPACE, SCALE_NAMESPACE, SMALL_NAMESPACE, Samples,
    first_then_second, medians, thousands,
};
use crate::report::{Implementation, Row, SyncSample, Target, WorkerReport};

/// Scenario 1: the initial sync of the small collection, with defaults, then like for
/// like.
pub(super) async fn small(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let options = bench.options;
    let label = format!("1. sync {}", thousands(options.objects));
    let target = ("sync", SMALL_NAMESPACE, options.objects);
    samples.sync_small = default_sync(
        bench.worker,
        bench.kubeconfig,
        target,
        options.pairs,
        &label,
        rows,
    )
    .await?;
    // Like for like: both keep managedFields, then both drop them; then both list
    // from the watch cache in one request (kube-runtime's default pages consistent
    // reads from etcd: 20 requests of 500 for 10,000 objects), which shows how much of
    // the time gap is the server's.
    for (implementations, what) in [
        (KEEP_BOTH, "managedFields kept on both sides"),
        (STRIP_BOTH, "managedFields dropped on both sides"),
        (
            WATCH_CACHE_BOTH,
            "both listing from the watch cache, unpaged",
        ),
    ] {
        let label = format!("{label}, {what}");
        let pairs = sync_pairs(
            bench.worker,
            bench.kubeconfig,
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
    let target = ("sync", SCALE_NAMESPACE, options.scale_objects);
    samples.sync_scale = default_sync(
        bench.worker,
        bench.kubeconfig,
        target,
        options.pairs,
        &label,
        rows,
    )
    .await?;
    Ok(())
}

/// Scenario 9: the initial sync of Pods as a cluster holds them (several KiB each,
/// deeper than the ConfigMaps), with defaults.
pub(super) async fn pods(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let options = bench.options;
    let label = format!("9. sync {} Pods", thousands(options.pods));
    let target = ("sync-pods", POD_NAMESPACE, options.pods);
    samples.sync_pods = default_sync(
        bench.worker,
        bench.kubeconfig,
        target,
        options.pairs,
        &label,
        rows,
    )
    .await?;
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
    let target = ("sync", LARGE_NAMESPACE, options.large_objects);
    samples.sync_large = default_sync(
        bench.worker,
        bench.kubeconfig,
        target,
        options.pairs,
        &label,
        rows,
    )
    .await?;
    Ok(())
}

/// Both sides with default options: the comparison the targets are about.
pub(super) const DEFAULTS: [Implementation; 2] =
    [Implementation::Ours, Implementation::KubeRuntime];
/// Both sides keeping `managedFields`.
const KEEP_BOTH: [Implementation; 2] = [
    Implementation::OursKeepManagedFields,
    Implementation::KubeRuntime,
];
/// Both sides listing from the watch cache in one request (ours does by default).
const WATCH_CACHE_BOTH: [Implementation; 2] =
    [Implementation::Ours, Implementation::KubeRuntimeWatchCache];
/// Both sides dropping `managedFields`.
const STRIP_BOTH: [Implementation; 2] = [
    Implementation::Ours,
    Implementation::KubeRuntimeStripManagedFields,
];

/// A sync scenario with both sides' default options: its rows (with the targets) go to
/// `rows`; returns the samples, ours and theirs alternately.
async fn default_sync(
    worker: &Path,
    kubeconfig: Option<&Path>,
    target: (&str, &str, usize),
    pairs: usize,
    label: &str,
    rows: &mut Vec<Row>,
) -> anyhow::Result<Vec<SyncSample>> {
    let pairs = sync_pairs(worker, kubeconfig, target, DEFAULTS, pairs, label).await?;
    rows.extend(sync_rows(label, &pairs, true));
    Ok(pairs.into_iter().flat_map(|(a, b)| [a, b]).collect())
}

/// `pairs` pairs of runs of `implementations` (ours, theirs), each of which must have
/// synced `objects` objects. The side that runs first alternates from pair to pair
/// ([`first_then_second`]).
async fn sync_pairs(
    worker: &Path,
    kubeconfig: Option<&Path>,
    (mode, namespace, objects): (&str, &str, usize),
    implementations: [Implementation; 2],
    pairs: usize,
    label: &str,
) -> anyhow::Result<Vec<(SyncSample, SyncSample)>> {
    let mut out = Vec::new();
    for pair in 0..pairs {
        let mut both: [Option<SyncSample>; 2] = [None, None];
        for side in first_then_second(pair) {
            let implementation = implementations[side];
            let report = run_worker(
                worker,
                kubeconfig,
                &[mode, implementation.as_str(), namespace],
            )
            .await?;
            let WorkerReport::Sync(sample) = report else {
                bail!("the sync worker reported something else");
            };
            eprintln!(
                "[{label}] pair {}: {:<21} synced {:.3} s, CPU {:.3} s (user {:.2}, sys {:.2}), \
                 RSS {:.1} -> peak {:.1}, after {:.1} MiB, {} objects",
                pair + 1,
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
            both[side] = Some(sample);
        }
        let [Some(ours), Some(theirs)] = both else {
            bail!("a pair lacks a side");
        };
        out.push((ours, theirs));
    }
    check_count(&out, objects)?;
    Ok(out)
}

fn check_count(pairs: &[(SyncSample, SyncSample)], expected: usize) -> anyhow::Result<()> {
    for sample in pairs.iter().flat_map(|(a, b)| [a, b]) {
        if sample.objects != expected {
            bail!(
                "{} synced {} objects, expected {expected}",
                sample.implementation.as_str(),
                sample.objects
            );
        }
    }
    Ok(())
}

/// The rows of a sync scenario, time, CPU and peak RSS first; with the targets
/// when `targets` (the default-options comparison).
fn sync_rows(label: &str, pairs: &[(SyncSample, SyncSample)], targets: bool) -> Vec<Row> {
    let row = |metric: &str, f: &dyn Fn(&SyncSample) -> f64, target: Option<Target>| {
        let (ours, theirs) = medians(pairs, f);
        Row {
            scenario: label.to_owned(),
            metric: metric.to_owned(),
            ours,
            theirs: Some(theirs),
            target: target.filter(|_| targets),
        }
    };
    let mib = |kib: u64| kib as f64 / MIB;
    vec![
        row(
            "time to synced (s)",
            &|s| s.synced_seconds,
            Some(Target::RatioAtMost(1.0)),
        ),
        row(
            "CPU to sync, user+sys (s)",
            &|s| s.cpu_seconds,
            Some(Target::RatioAtMost(0.8)),
        ),
        row(
            "peak RSS (MiB)",
            &|s| mib(s.peak_rss_kib),
            Some(Target::RatioAtMost(0.6)),
        ),
        row("RSS after sync (MiB)", &|s| mib(s.rss_after_sync_kib), None),
        row("RSS before start (MiB)", &|s| mib(s.baseline_rss_kib), None),
        row(
            "CPU per object (µs)",
            &|s| s.cpu_seconds * 1e6 / s.objects as f64,
            None,
        ),
        row(
            "peak RSS above start, per object (bytes)",
            &|s| {
                (s.peak_rss_kib.saturating_sub(s.baseline_rss_kib) * 1024) as f64 / s.objects as f64
            },
            None,
        ),
        row(
            "RSS after sync above start, per object (bytes)",
            &|s| {
                (s.rss_after_sync_kib.saturating_sub(s.baseline_rss_kib) * 1024) as f64
                    / s.objects as f64
            },
            None,
        ),
    ]
}
