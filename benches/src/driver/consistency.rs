//! Scenario 16: consistency checks and staleness probes on the large collection (ours
//! only; see [`crate::consistency`] for what each worker mode does).
//!
//! 1. **Cost**, `--pairs` runs of `consistency-cost` on the 50,000 ConfigMaps: per
//!    check of a settled cache, its wall time, CPU, requests and peak memory; and the
//!    same for a check that finds one lost update and names it.
//! 2. **A long run**, one `consistency-run` of `--consistency-minutes` (default 10)
//!    with checks every `--consistency-interval` seconds (default 15) and
//!    `--consistency-drifts` lost updates (default 5), while the driver compacts etcd
//!    every minute and restarts the API server once, halfway: detection times, and
//!    false alarms (inconsistent checks naming anything but a drift made).
//! 3. **Staleness**, `consistency-staleness` on a small collection of its own, watch
//!    events delayed by 0 and by `--consistency-delay-ms` (default 2,000): the probes'
//!    lags against the delay.

use std::time::Duration;

use anyhow::bail;

use super::process::{run_worker, run_worker_with};
use super::setup::create_objects;
use super::{Bench, LARGE_NAMESPACE, MIB, Samples, thousands};
use crate::consistency::SERVER_DIR;
use crate::report::{
    CheckCost, ConsistencyCostSample, ConsistencyRunSample, Row, StalenessSample, WorkerReport,
    median,
};

/// The staleness runs' collection.
const STALENESS_NAMESPACE: &str = "bench-consistency";

/// Objects in it.
const STALENESS_OBJECTS: usize = 200;

/// Seconds each staleness run measures.
const STALENESS_SECONDS: u64 = 60;

/// Checks per cost run.
const CHECKS_PER_RUN: usize = 5;

/// Scenario 16's samples, for the JSON file.
#[derive(Debug, Default, serde::Serialize)]
pub(super) struct ConsistencySamples {
    cost: Vec<ConsistencyCostSample>,
    run: Option<ConsistencyRunSample>,
    staleness: Vec<StalenessSample>,
}

/// Scenario 16.
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let options = bench.options;
    let objects = options.large_objects;
    let label = format!("16. consistency checks, {} ConfigMaps", thousands(objects));
    let mut costs = Vec::new();
    let env = bench.env.expect("scenario 16 has a server");
    // The cost worker measures the control plane's CPU too: by its directory, which the
    // command lines of etcd and the API server hold.
    let server_dir = env.dir().display().to_string();
    for round in 0..options.pairs {
        let report = run_worker_with(
            bench.worker,
            bench.kubeconfig,
            &[
                "consistency-cost",
                LARGE_NAMESPACE,
                &CHECKS_PER_RUN.to_string(),
            ],
            &[(SERVER_DIR, server_dir.as_str())],
        )
        .await?;
        let WorkerReport::ConsistencyCost(sample) = report else {
            bail!("the consistency-cost worker reported something else");
        };
        let check = median_of(&sample.consistent_checks);
        eprintln!(
            "[{label}] run {}: {} objects; a check: {:.2} s, CPU {:.3} s (server {:.2} s), {} list \
             pages, {} reads, {} watches, peak +{:.1} MiB; after a lost update: {:.2} s, CPU {:.3} s, \
             {} list pages, peak +{:.1} MiB",
            round + 1,
            sample.objects,
            check.wall_seconds,
            check.cpu_seconds,
            check.server_cpu_seconds,
            check.lists,
            check.reads,
            check.watches,
            check.peak_above_kib as f64 / MIB,
            sample.inconsistent_check.wall_seconds,
            sample.inconsistent_check.cpu_seconds,
            sample.inconsistent_check.lists,
            sample.inconsistent_check.peak_above_kib as f64 / MIB,
        );
        costs.push(sample);
    }
    rows.extend(cost_rows(&label, &costs));

    let long = long_run(bench, &label).await?;
    rows.extend(run_rows(&label, &long));

    create_objects(
        bench.client.expect("scenario 16 has a server"),
        STALENESS_NAMESPACE,
        STALENESS_OBJECTS,
        64,
    )
    .await?;
    let mut staleness = Vec::new();
    for delay in [0, options.consistency_delay_ms] {
        let report = run_worker(
            bench.worker,
            bench.kubeconfig,
            &[
                "consistency-staleness",
                STALENESS_NAMESPACE,
                &delay.to_string(),
                &STALENESS_SECONDS.to_string(),
            ],
        )
        .await?;
        let WorkerReport::Staleness(sample) = report else {
            bail!("the consistency-staleness worker reported something else");
        };
        eprintln!(
            "[{label}] staleness, watch delayed {} ms: {} lags read, median {:.3} s, max {:.3} s; \
             gauge at most {:.3} s; {} changes",
            delay,
            sample.lags.len(),
            median(sample.lags.iter().copied()),
            sample.lags.iter().copied().fold(0.0, f64::max),
            sample.gauge_max_seconds,
            sample.changes,
        );
        staleness.push(sample);
    }
    rows.extend(staleness_rows(&label, &staleness));
    samples.consistency = ConsistencySamples {
        cost: costs,
        run: Some(long),
        staleness,
    };
    Ok(())
}

/// The long run, with the driver's compactions and restart around it.
async fn long_run(bench: &Bench<'_>, label: &str) -> anyhow::Result<ConsistencyRunSample> {
    let options = bench.options;
    let env = bench.env.expect("scenario 16 has a server");
    let seconds = options.consistency_minutes * 60;
    let (seconds_arg, interval, drifts) = (
        seconds.to_string(),
        options.consistency_interval.to_string(),
        options.consistency_drifts.to_string(),
    );
    let args = [
        "consistency-run",
        LARGE_NAMESPACE,
        &seconds_arg,
        &interval,
        &drifts,
    ];
    let worker = run_worker(bench.worker, bench.kubeconfig, &args);
    let faults = async {
        let started = tokio::time::Instant::now();
        let mut restarted = false;
        loop {
            tokio::time::sleep(Duration::from_secs(60)).await;
            // The API server compacts too: a compaction that lost the race is skipped.
            if let Err(error) = env.compact_etcd().await {
                eprintln!("[{label}] compaction skipped: {error}");
            }
            if !restarted && started.elapsed() >= Duration::from_secs(seconds / 2) {
                restarted = true;
                eprintln!("[{label}] restarting the API server");
                env.restart_apiserver().await?;
            }
        }
        #[allow(unreachable_code)]
        anyhow::Ok(())
    };
    let report = tokio::select! {
        report = worker => report?,
        failed = faults => { failed?; bail!("the faults ended first") }
    };
    let WorkerReport::ConsistencyRun(sample) = report else {
        bail!("the consistency-run worker reported something else");
    };
    eprintln!(
        "[{label}] long run: {:.0} s, checks every {} s: {:?}; {} drifts made, {} found in {:?} s, \
         {} healed by a relist first; false alarms: {:?}; {} heals; {} changes",
        sample.seconds,
        sample.interval_seconds,
        sample.checks,
        sample.drifts,
        sample.detection_seconds.len(),
        sample.detection_seconds,
        sample.healed_before_found,
        sample.false_alarms,
        sample.heals,
        sample.changes
    );
    Ok(sample)
}

/// The median check of `checks`, field by field.
fn median_of(checks: &[CheckCost]) -> CheckCost {
    let m = |f: fn(&CheckCost) -> f64| median(checks.iter().map(f));
    CheckCost {
        wall_seconds: m(|c| c.wall_seconds),
        cpu_seconds: m(|c| c.cpu_seconds),
        server_cpu_seconds: m(|c| c.server_cpu_seconds),
        lists: m(|c| c.lists as f64) as u64,
        reads: m(|c| c.reads as f64) as u64,
        watches: m(|c| c.watches as f64) as u64,
        peak_above_kib: m(|c| c.peak_above_kib as f64) as u64,
        consistent: checks.iter().all(|c| c.consistent),
        differences: checks.iter().map(|c| c.differences).sum(),
    }
}

fn ours(label: &str, metric: &str, value: f64) -> Row {
    Row {
        scenario: label.to_owned(),
        metric: metric.to_owned(),
        ours: value,
        ..Row::default()
    }
}

fn cost_rows(label: &str, costs: &[ConsistencyCostSample]) -> Vec<Row> {
    let all: Vec<CheckCost> = costs
        .iter()
        .flat_map(|c| c.consistent_checks.iter().cloned())
        .collect();
    let after_drift: Vec<CheckCost> = costs.iter().map(|c| c.inconsistent_check.clone()).collect();
    let mut rows = Vec::new();
    for (what, checks) in [
        ("a check", &all),
        ("a check naming one lost update", &after_drift),
    ] {
        let check = median_of(checks);
        rows.extend([
            ours(label, &format!("{what}: wall time (s)"), check.wall_seconds),
            ours(
                label,
                &format!("{what}: CPU, user+sys (s)"),
                check.cpu_seconds,
            ),
            ours(
                label,
                &format!("{what}: API server + etcd CPU (s)"),
                check.server_cpu_seconds,
            ),
            ours(
                label,
                &format!("{what}: requests (list pages + probe)"),
                (check.lists + check.reads + check.watches) as f64,
            ),
            ours(
                label,
                &format!("{what}: peak RSS above before (MiB)"),
                check.peak_above_kib as f64 / MIB,
            ),
        ]);
    }
    rows.push(ours(
        label,
        "RSS after sync (MiB)",
        median(costs.iter().map(|c| c.rss_after_sync_kib as f64 / MIB)),
    ));
    rows
}

fn run_rows(label: &str, run: &ConsistencyRunSample) -> Vec<Row> {
    let count = |result: &str| {
        run.checks
            .iter()
            .find(|(r, _)| r == result)
            .map_or(0, |(_, n)| *n) as f64
    };
    let minutes = run.seconds / 60.0;
    vec![
        ours(
            label,
            &format!(
                "long run ({minutes:.0} min, checks every {} s): checks",
                run.interval_seconds
            ),
            run.checks.iter().map(|(_, n)| *n as f64).sum(),
        ),
        ours(label, "long run: consistent checks", count("consistent")),
        ours(
            label,
            "long run: skipped or failed checks (restart)",
            count("skipped") + count("error"),
        ),
        ours(
            label,
            "long run: false alarms",
            run.false_alarms.len() as f64,
        ),
        ours(
            label,
            &format!("long run: drifts found (of {})", run.drifts),
            run.detection_seconds.len() as f64,
        ),
        ours(
            label,
            "long run: drifts a relist healed before a check",
            run.healed_before_found as f64,
        ),
        ours(
            label,
            "long run: detection time, median (s)",
            median(run.detection_seconds.iter().copied()),
        ),
        ours(
            label,
            "long run: detection time, max (s)",
            run.detection_seconds.iter().copied().fold(0.0, f64::max),
        ),
    ]
}

fn staleness_rows(label: &str, runs: &[StalenessSample]) -> Vec<Row> {
    let mut rows = Vec::new();
    for run in runs {
        let delay = run.delay_seconds;
        let errors: Vec<f64> = run.lags.iter().map(|lag| (lag - delay).abs()).collect();
        rows.extend([
            ours(
                label,
                &format!("staleness, watch delayed {delay:.1} s: lag, median (s)"),
                median(run.lags.iter().copied()),
            ),
            ours(
                label,
                &format!(
                    "staleness, watch delayed {delay:.1} s: lag's distance from the delay, max (s)"
                ),
                errors.iter().copied().fold(0.0, f64::max),
            ),
        ]);
    }
    rows
}
