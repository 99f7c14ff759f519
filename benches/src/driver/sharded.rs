//! Scenario 11: a controller sharded across 1, 2 and 3 replica processes (ours only:
//! kube-runtime has no sharding, so its rows have no peer column).
//!
//! For each replica count N (the order rotating from round to round), the driver
//! starts N `bench-worker shard` processes at once ([`crate::shard_worker`]), members
//! of a group of their own (`bench-r{round}-n{N}`, so no Lease of an earlier run
//! counts) on the large collection's namespace, and waits until they are *settled*:
//! every one reads the same N members and their covered keys add up to every object.
//! It then asks each for its report (peak RSS, CPU since start).
//!
//! With 3 replicas it then SIGKILLs one (another one each round) and measures the
//! time until the two survivors read each other as the only members and cover every
//! object again, i.e. the killed one's keys were reconciled by them. A survivor
//! fences the killed member once it has not seen its Lease change for a lease
//! duration, sees a change up to a retry period after it was made and reads again
//! when that lease expires: from the kill, the takeover is bound by the lease
//! duration plus one retry period (plus requests), as `tests/tests/sharding.rs`
//! bounds it. Every run ends with a clean
//! stop (a line `stop`), in which each replica deletes its Lease.

use std::path::Path;

use anyhow::Context as _;
use informer::shard::ShardConfig;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::ListParams;
use tokio::time::Instant;

use super::replicas::{Replicas, SETTLE_TIMEOUT, check_leases_gone, largest};
use super::{Bench, LARGE_NAMESPACE, MIB, Samples, rotated, thousands};
use crate::report::{Row, ShardSample, median};

/// The replica counts compared (scenario 14's too).
pub(super) const REPLICA_COUNTS: [usize; 3] = [1, 2, 3];

/// What the table says of scenario 11's empty peer columns.
pub(super) const NOTE: &str = "Scenario 11 is ours only (kube-runtime has no sharding): \
     its kube-runtime and ratio columns stay empty, and its rows compare replica counts \
     with each other. Per-replica rows give the largest replica.";

/// One run with `replicas` replicas.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct ShardRun {
    /// The round (0-based).
    round: usize,
    /// Replicas started.
    replicas: usize,
    /// Seconds from starting the replicas until every object was covered.
    covered_seconds: f64,
    /// Each replica's report once every object was covered.
    settled: Vec<ShardSample>,
    /// The identity of the replica killed (with 3 replicas).
    killed: Option<String>,
    /// Seconds from its SIGKILL until the survivors covered every object again.
    takeover_seconds: Option<f64>,
    /// The final reports of the replicas stopped cleanly (the survivors, after a
    /// takeover).
    stopped: Vec<ShardSample>,
}

/// Scenario 11: `--pairs` rounds of 1, 2 and 3 replicas on the large collection.
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let client = bench.client.context("no control plane")?;
    let kubeconfig = bench.kubeconfig.context("no control plane")?;
    let objects = Api::<ConfigMap>::namespaced(client.clone(), LARGE_NAMESPACE)
        .list_metadata(&ListParams::default())
        .await?
        .items
        .len();
    let label = format!(
        "11. ConfigMap controller sharded across replicas, {} objects",
        thousands(objects)
    );
    let mut runs = Vec::new();
    for round in 0..bench.options.pairs {
        for i in rotated(round, REPLICA_COUNTS.len()) {
            let replicas = REPLICA_COUNTS[i];
            let run =
                sharded_run(bench.worker, kubeconfig, client, objects, round, replicas).await?;
            let largest = |f: &dyn Fn(&ShardSample) -> f64| largest(&run.settled, f);
            eprintln!(
                "[{label}] round {}: {replicas} replica(s) covered every object in {:.2} s; \
                 largest peak RSS {:.1} MiB, largest CPU {:.2} s; covered {:?}{}",
                round + 1,
                run.covered_seconds,
                largest(&|s| s.peak_rss_kib as f64 / MIB),
                largest(&|s| s.cpu_seconds),
                run.settled.iter().map(|s| s.covered).collect::<Vec<_>>(),
                run.takeover_seconds
                    .map(|s| format!("; takeover after SIGKILL {s:.2} s"))
                    .unwrap_or_default()
            );
            runs.push(run);
        }
    }
    rows.extend(shard_rows(&label, &runs));
    samples.shard = runs;
    Ok(())
}

/// One run: `replicas` replicas until settled, their reports, the takeover after a
/// SIGKILL when there are 3, and a clean stop.
async fn sharded_run(
    worker: &Path,
    kubeconfig: &Path,
    client: &kube::Client,
    objects: usize,
    round: usize,
    replicas: usize,
) -> anyhow::Result<ShardRun> {
    let group = format!("bench-r{round}-n{replicas}");
    let started = Instant::now();
    let mut running = Replicas::start(worker, kubeconfig, replicas, |identity| {
        ["shard", LARGE_NAMESPACE, &group, identity]
            .map(str::to_owned)
            .to_vec()
    })?;
    let what = format!("{replicas} replica(s)");
    let covered_seconds = running.settle(objects, started, &what).await?;
    let settled = running.reports().await?;
    let (mut killed, mut takeover_seconds) = (None, None);
    if replicas == 3 {
        let victim = round % replicas;
        killed = Some(running.replicas[victim].identity.clone());
        let at = running.kill(victim).await?;
        running
            .wait_settled(objects, 0, at + SETTLE_TIMEOUT)
            .await
            .context("the survivors taking over")?;
        takeover_seconds = Some(at.elapsed().as_secs_f64());
    }
    let stopped = running.stop().await?;
    // The clean stops deleted their Leases, the survivors fenced the killed one's.
    check_leases_gone(client, LARGE_NAMESPACE, &group).await?;
    Ok(ShardRun {
        round,
        replicas,
        covered_seconds,
        settled,
        killed,
        takeover_seconds,
        stopped,
    })
}

fn shard_rows(label: &str, runs: &[ShardRun]) -> Vec<Row> {
    let row = |metric: String, ours: f64| Row {
        scenario: label.to_owned(),
        metric,
        ours,
        theirs: None,
        ..Row::default()
    };
    let with = |replicas: usize| runs.iter().filter(move |r| r.replicas == replicas);
    let replicas_text = |n: usize| match n {
        1 => "1 replica".to_owned(),
        n => format!("{n} replicas"),
    };
    let peak = |run: &ShardRun| largest(&run.settled, &|s| s.peak_rss_kib as f64 / MIB);
    let mut rows = Vec::new();
    for n in REPLICA_COUNTS {
        rows.push(row(
            format!("peak RSS per replica, {} (MiB)", replicas_text(n)),
            median(with(n).map(peak)),
        ));
    }
    for n in REPLICA_COUNTS.into_iter().filter(|&n| n > 1) {
        // Within each round, against that round's single replica.
        let ratios = runs.iter().filter(|r| r.replicas == n).filter_map(|run| {
            let alone = runs
                .iter()
                .find(|r| r.round == run.round && r.replicas == 1)?;
            Some(peak(run) / peak(alone))
        });
        rows.push(row(
            format!(
                "peak RSS per replica, {} / 1 replica (goal: about 1/{n})",
                replicas_text(n)
            ),
            median(ratios),
        ));
    }
    for n in REPLICA_COUNTS {
        rows.push(row(
            format!("start to every object reconciled, {} (s)", replicas_text(n)),
            median(with(n).map(|r| r.covered_seconds)),
        ));
    }
    for n in REPLICA_COUNTS {
        rows.push(row(
            format!(
                "CPU per replica, start to every object reconciled, {} (s)",
                replicas_text(n)
            ),
            median(with(n).map(|r| largest(&r.settled, &|s| s.cpu_seconds))),
        ));
    }
    let config = ShardConfig::new(LARGE_NAMESPACE, "bench");
    let (lease, retry) = (config.timings.lease_duration, config.timings.retry_period);
    rows.push(row(
        format!(
            "takeover after SIGKILL, 3 replicas to 2 (s; bound {} s: lease {} s + a retry \
             period of {} s, plus requests)",
            (lease + retry).as_secs_f64(),
            lease.as_secs_f64(),
            retry.as_secs_f64()
        ),
        median(with(3).filter_map(|r| r.takeover_seconds)),
    ));
    rows.push(row(
        "peak RSS per survivor after the takeover (MiB)".to_owned(),
        median(with(3).map(|r| largest(&r.stopped, &|s| s.peak_rss_kib as f64 / MIB))),
    ));
    rows
}
