//! Scenario 10: the metadata-only sync of the large collection (50,000 ConfigMaps by
//! default, scenario 2's objects), against the full sync of the same objects.
//!
//! A controller that reads only names, labels, owners and finalizers (a garbage
//! collector, a cleanup or quota controller) can cache `PartialObjectMeta<K>`: the
//! server then sends `PartialObjectMetadata` and the client decodes only `metadata`.
//! What that saves is a property of each side, so each side is measured both ways:
//! ours (`SharedIndexInformer<PartialObjectMeta<ConfigMap>>`, what
//! `factory.metadata_informer::<ConfigMap>()` makes) and kube-runtime's metadata
//! watcher (`reflector` over `watcher(Api::<PartialObjectMeta<ConfigMap>>, ..)`, which
//! kube 5's deprecated `metadata_watcher` calls), each beside its own full sync with
//! defaults. The four runs of a round rotate which goes first ([`rotated`]), so a
//! load change on the machine hits them alike.
//!
//! Rows: metadata-only ours against kube-runtime; the full syncs of the same rounds;
//! and each side's metadata-only figure as a share of its full one (the ratio within
//! each round, then the median over rounds, so that both runs of a ratio met the same
//! machine).
//!
//! [`rotated`]: super::rotated

use super::sync::{Side, side_runs, sync_rows};
use super::{Bench, Columns, LARGE_NAMESPACE, MIB, Samples, row_of, thousands};
use crate::report::{Implementation, Row, SyncSample};

/// The worker mode that syncs `PartialObjectMeta<ConfigMap>`.
const METADATA_MODE: &str = "sync-metadata";

/// The worker mode that syncs whole ConfigMaps.
const FULL_MODE: &str = "sync";

/// The four sides of a round: metadata-only ours and kube-runtime, then full ours and
/// kube-runtime (the order of each round's samples).
const SIDES: [Side<'static>; 4] = [
    Side {
        implementation: Implementation::Ours,
        mode: METADATA_MODE,
    },
    Side {
        implementation: Implementation::KubeRuntime,
        mode: METADATA_MODE,
    },
    Side {
        implementation: Implementation::Ours,
        mode: FULL_MODE,
    },
    Side {
        implementation: Implementation::KubeRuntime,
        mode: FULL_MODE,
    },
];

/// What the share rows compare: a metric and how to read it from a sample.
type Metric = (&'static str, fn(&SyncSample) -> f64);

/// The metrics whose metadata-only share of full is reported.
const SHARED_METRICS: [Metric; 4] = [
    ("time to synced", |s| s.synced_seconds),
    ("CPU to sync, user+sys", |s| s.cpu_seconds),
    ("peak RSS", |s| s.peak_rss_kib as f64 / MIB),
    ("RSS after sync above start", |s| {
        s.rss_after_sync_kib.saturating_sub(s.baseline_rss_kib) as f64
    }),
];

/// Scenario 10: `--pairs` rounds of the four sides on the large collection; its rows go
/// to `rows`, its samples to `samples`.
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let objects = bench.options.large_objects;
    let label = format!("10. sync {}", thousands(objects));
    let runs = side_runs(bench, LARGE_NAMESPACE, objects, &SIDES, &label).await?;
    // Columns 0 and 1 of each: ours, kube-runtime.
    let metadata: Vec<Vec<SyncSample>> = runs.iter().map(|round| round[..2].to_vec()).collect();
    let full: Vec<Vec<SyncSample>> = runs.iter().map(|round| round[2..].to_vec()).collect();
    rows.extend(sync_rows(
        &format!("{label}, metadata-only"),
        &metadata,
        Columns::PAIR,
        false,
    ));
    rows.extend(
        sync_rows(
            &format!("{label}, full (same rounds)"),
            &full,
            Columns::PAIR,
            false,
        )
        .into_iter()
        .take(3),
    );
    rows.extend(share_rows(&format!("{label}, metadata-only / full"), &runs));
    samples.sync_metadata_only = metadata.into_iter().flatten().collect();
    samples.sync_metadata_full = full.into_iter().flatten().collect();
    Ok(())
}

/// For each side, its metadata-only figure over its full one in the same round (the
/// median over rounds); `runs` holds rounds of samples in the order of [`SIDES`].
fn share_rows(label: &str, runs: &[Vec<SyncSample>]) -> Vec<Row> {
    // Per round, one (metadata-only, full) pair per side: ours, then kube-runtime.
    let pairs: Vec<Vec<(&SyncSample, &SyncSample)>> = runs
        .iter()
        .map(|round| vec![(&round[0], &round[2]), (&round[1], &round[3])])
        .collect();
    SHARED_METRICS
        .iter()
        .map(|&(metric, f)| {
            row_of(
                label,
                &format!("{metric} (share)"),
                &pairs,
                Columns::PAIR,
                &|(metadata, full)| f(metadata) / f(full),
                None,
                None,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(implementation: Implementation, seconds: f64, peak_mib: u64) -> SyncSample {
        SyncSample {
            implementation,
            objects: 10,
            synced_seconds: seconds,
            cpu_seconds: seconds / 2.0,
            user_seconds: seconds / 4.0,
            sys_seconds: seconds / 4.0,
            baseline_rss_kib: 1024,
            peak_rss_kib: peak_mib * 1024,
            rss_after_sync_kib: peak_mib * 1024,
            estimated_cache_bytes: None,
        }
    }

    /// A round in the order of [`SIDES`]: metadata-only ours and kube-runtime, then
    /// full ours and kube-runtime.
    fn round(times: [f64; 4], peaks: [u64; 4]) -> Vec<SyncSample> {
        SIDES
            .iter()
            .zip(times.into_iter().zip(peaks))
            .map(|(side, (time, peak))| sample(side.implementation, time, peak))
            .collect()
    }

    #[test]
    fn shares_pair_each_side_with_its_own_full_sync_of_the_same_round() {
        // A slow second round doubles every time: the shares, taken within each
        // round, do not move, while medians of the raw times would mix rounds.
        let runs = vec![
            round([1.0, 3.0, 2.0, 4.0], [50, 200, 100, 400]),
            round([2.0, 6.0, 4.0, 8.0], [50, 200, 100, 400]),
            round([1.0, 3.0, 2.0, 4.0], [25, 300, 100, 400]),
        ];
        let rows = share_rows("10. sync 10", &runs);
        assert_eq!(rows.len(), SHARED_METRICS.len());
        let time = &rows[0];
        assert_eq!(time.metric, "time to synced (share)");
        assert_eq!(time.ours, 0.5);
        assert_eq!(time.theirs, Some(0.75));
        assert!(time.client_go.is_none(), "two columns, no client-go");
        let peak = &rows[2];
        assert_eq!(peak.metric, "peak RSS (share)");
        // Ours: 0.5, 0.5, 0.25; kube-runtime: 0.5, 0.5, 0.75.
        assert_eq!(peak.ours, 0.5);
        assert_eq!(peak.theirs, Some(0.5));
    }
}
