//! The sync scenarios' runs and rows (1, 2 and 7): alternating worker runs of two
//! implementations, each an initial sync measured by `bench-worker sync`.

use std::path::Path;

use anyhow::{Context as _, bail};

use crate::driver::{DEFAULTS, MIB, medians, run_worker};
use crate::report::{Implementation, Row, SyncSample, Target, WorkerReport};

/// A sync scenario with both sides' default options: its rows (with the targets) go to
/// `rows`; returns the samples, ours and theirs alternately.
pub(crate) async fn default_sync(
    worker: &Path,
    kubeconfig: Option<&Path>,
    target: (&str, usize),
    pairs: usize,
    label: &str,
    rows: &mut Vec<Row>,
) -> anyhow::Result<Vec<SyncSample>> {
    let pairs = sync_pairs(worker, kubeconfig, target, DEFAULTS, pairs, label).await?;
    rows.extend(sync_rows(label, &pairs, true));
    Ok(pairs.into_iter().flat_map(|(a, b)| [a, b]).collect())
}

/// `pairs` alternating runs of `implementations` (ours first, then theirs), each of
/// which must have synced `objects` objects.
pub(crate) async fn sync_pairs(
    worker: &Path,
    kubeconfig: Option<&Path>,
    (namespace, objects): (&str, usize),
    implementations: [Implementation; 2],
    pairs: usize,
    label: &str,
) -> anyhow::Result<Vec<(SyncSample, SyncSample)>> {
    let mut out = Vec::new();
    for pair in 0..pairs {
        let mut both = Vec::new();
        for implementation in implementations {
            let report = run_worker(
                worker,
                kubeconfig,
                &["sync", implementation.as_str(), namespace],
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
            both.push(sample);
        }
        let theirs = both.pop().context("two samples")?;
        let ours = both.pop().context("two samples")?;
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
pub(crate) fn sync_rows(
    label: &str,
    pairs: &[(SyncSample, SyncSample)],
    targets: bool,
) -> Vec<Row> {
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
