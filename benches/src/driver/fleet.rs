//! Scenario 14: a fleet of clusters (ours only: kube-runtime has no fleet, so its
//! rows have no peer column), see [`crate::fleet_worker`].
//!
//! The clusters are `--fleet-clusters` namespaces of the one bench control plane,
//! `bench-fleet-0` and on, with `--fleet-objects` ConfigMaps each (scenario 2's
//! objects, created once), each reached with the same kubeconfig and confined to its
//! namespace: a client, factory, informer, queue and workers per cluster, as with
//! real clusters, but one API server serving them all. Each of `--pairs` rounds runs,
//! every run a process of its own:
//!
//! 1. `bench-worker fleet` over every cluster from start, until every object was
//!    reconciled; and, for comparison, the same worker with one cluster holding as
//!    many objects in one namespace (scenario 2's, `bench-large`), so that the
//!    difference is the cost of the clusters themselves;
//! 2. `bench-worker fleet .. join`: all clusters but one until reconciled, then the
//!    last one joins; the time until it synced and until its objects were reconciled;
//! 3. the fleet sharded by cluster over 1, 2 and 3 `bench-worker fleet-shard` replica
//!    processes started at once (a new shard group each time, its Leases in
//!    `bench-fleet`), until the replicas read each other as the members, the clusters
//!    they engaged split the fleet and the keys they reconciled add up to every object;
//!    then each replica's report (peak RSS, CPU) and a clean stop.
//!
//! The order of the single-process runs, and of the replica counts, rotates from round
//! to round.

use std::collections::BTreeSet;

use anyhow::{Context as _, bail};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::ListParams;
use tokio::time::Instant;

use super::process::run_worker;
use super::replicas::{Replicas, SETTLE_TIMEOUT, check_leases_gone, largest};
use super::setup::{create_namespace, create_objects};
use super::sharded::REPLICA_COUNTS;
use super::{Bench, LARGE_NAMESPACE, MIB, Samples, rotated, thousands};
use crate::report::{FleetSample, Row, ShardSample, WorkerReport, median};

/// The namespace of the sharded replicas' Leases (it holds no ConfigMaps).
pub(super) const LEASE_NAMESPACE: &str = "bench-fleet";

/// What the table says of scenario 14's empty peer columns.
pub(super) const NOTE: &str = "Scenario 14 is ours only (kube-runtime has no fleet): \
     its clusters are namespaces of the one bench server, each reached with the same \
     kubeconfig and its own client, factory, informer, queue and workers. Per-replica \
     rows give the largest replica.";

/// The clusters' namespaces (each cluster is named after its namespace).
fn cluster_namespaces(clusters: usize) -> Vec<String> {
    (0..clusters).map(|i| format!("bench-fleet-{i}")).collect()
}

/// Creates the Leases' namespace and `clusters` namespaces of `objects` ConfigMaps
/// with `payload` bytes each.
pub(super) async fn create(
    client: &kube::Client,
    clusters: usize,
    objects: usize,
    payload: usize,
) -> anyhow::Result<()> {
    create_namespace(client, LEASE_NAMESPACE).await?;
    for namespace in cluster_namespaces(clusters) {
        create_objects(client, &namespace, objects, payload).await?;
    }
    Ok(())
}

/// Scenario 14's runs, for the JSON file.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub(super) struct FleetRuns {
    /// Every cluster from start, one run a round.
    fleet: Vec<FleetSample>,
    /// One cluster of as many objects (the large collection), one run a round.
    one_cluster: Vec<FleetSample>,
    /// All clusters but one from start, then the last joining, one run a round.
    join: Vec<FleetSample>,
    /// The fleet sharded over 1, 2 and 3 replicas, three runs a round.
    sharded: Vec<ShardedRun>,
}

/// One run of the fleet sharded over `replicas` replicas.
#[derive(Debug, Clone, serde::Serialize)]
struct ShardedRun {
    /// The round (0-based).
    round: usize,
    /// Replicas started.
    replicas: usize,
    /// Seconds from starting the replicas until they were settled (every object
    /// reconciled, the clusters split among them).
    reconciled_seconds: f64,
    /// Each replica's report then.
    settled: Vec<ShardSample>,
    /// The clusters each replica engaged then, in the order of `settled`.
    clusters: Vec<Vec<String>>,
}

/// The number of ConfigMaps in `namespace`.
async fn count(client: &kube::Client, namespace: &str) -> anyhow::Result<usize> {
    Ok(Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .list_metadata(&ListParams::default())
        .await?
        .items
        .len())
}

/// Scenario 14: `--pairs` rounds.
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let client = bench.client.context("no control plane")?;
    let namespaces = cluster_namespaces(bench.options.fleet_clusters);
    let objects = count(client, &namespaces[0]).await?;
    for namespace in &namespaces[1..] {
        let other = count(client, namespace).await?;
        if other != objects {
            bail!(
                "{namespace} holds {other} ConfigMaps, {} {objects}",
                namespaces[0]
            );
        }
    }
    let one_cluster = count(client, LARGE_NAMESPACE).await?;
    let mut runs = FleetRuns::default();
    let fleet = |how: &'static str, namespaces: Vec<String>, objects: usize| async move {
        let mut args = vec!["fleet".to_owned(), objects.to_string(), how.to_owned()];
        args.extend(namespaces);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        match run_worker(bench.worker, bench.kubeconfig, &args).await? {
            WorkerReport::Fleet(sample) => Ok(sample),
            other => bail!("the fleet worker reported something else: {other:?}"),
        }
    };
    let tag = "[14. fleet]";
    for round in 0..bench.options.pairs {
        for i in rotated(round, 3) {
            let sample = match i {
                0 => fleet("start", namespaces.clone(), objects).await?,
                1 => fleet("start", vec![LARGE_NAMESPACE.to_owned()], one_cluster).await?,
                _ => fleet("join", namespaces.clone(), objects).await?,
            };
            eprintln!(
                "{tag} round {}: {} cluster(s), {} objects reconciled in {:.2} s, CPU {:.2} s, \
                 peak RSS {:.1} MiB, RSS {:.1} MiB (before start {:.1} MiB){}",
                round + 1,
                sample.clusters,
                sample.objects,
                sample.reconciled_seconds,
                sample.cpu_seconds,
                sample.peak_rss_kib as f64 / MIB,
                sample.rss_kib as f64 / MIB,
                sample.baseline_rss_kib as f64 / MIB,
                sample
                    .join
                    .as_ref()
                    .map_or_else(String::new, |join| format!(
                        "; then one more joined: synced after {:.2} s, reconciled after {:.2} s, \
                     CPU {:.2} s, RSS {:.1} -> {:.1} MiB",
                        join.synced_seconds,
                        join.reconciled_seconds,
                        join.cpu_seconds,
                        join.rss_before_kib as f64 / MIB,
                        join.rss_after_kib as f64 / MIB
                    ))
            );
            [&mut runs.fleet, &mut runs.one_cluster, &mut runs.join][i].push(sample);
        }
        for i in rotated(round, REPLICA_COUNTS.len()) {
            let run = sharded_run(bench, &namespaces, objects, round, REPLICA_COUNTS[i]).await?;
            eprintln!(
                "{tag} round {}: {} replica(s) reconciled every object in {:.2} s; clusters {}; \
                 peak RSS {:?} MiB; CPU {:?} s",
                round + 1,
                run.replicas,
                run.reconciled_seconds,
                split(&run),
                run.settled
                    .iter()
                    .map(|s| (s.peak_rss_kib as f64 / MIB).round())
                    .collect::<Vec<_>>(),
                run.settled
                    .iter()
                    .map(|s| (s.cpu_seconds * 100.0).round() / 100.0)
                    .collect::<Vec<_>>(),
            );
            runs.sharded.push(run);
        }
    }
    rows.extend(fleet_rows(&runs, namespaces.len(), objects, one_cluster));
    samples.fleet = runs;
    Ok(())
}

/// One run of the fleet sharded over `replicas` replica processes, until settled.
async fn sharded_run(
    bench: &Bench<'_>,
    namespaces: &[String],
    objects: usize,
    round: usize,
    replicas: usize,
) -> anyhow::Result<ShardedRun> {
    let client = bench.client.context("no control plane")?;
    let kubeconfig = bench.kubeconfig.context("no control plane")?;
    let group = format!("bench-fleet-r{round}-n{replicas}");
    let started = Instant::now();
    let mut running = Replicas::start(bench.worker, kubeconfig, replicas, |identity| {
        let args = ["fleet-shard", LEASE_NAMESPACE, &group, identity].map(str::to_owned);
        args.into_iter().chain(namespaces.iter().cloned()).collect()
    })?;
    running
        .wait_settled(
            objects * namespaces.len(),
            namespaces.len(),
            started + SETTLE_TIMEOUT,
        )
        .await
        .with_context(|| format!("{replicas} fleet replica(s) settling"))?;
    let reconciled_seconds = started.elapsed().as_secs_f64();
    let clusters = running
        .replicas
        .iter()
        .map(|r| {
            r.state
                .as_ref()
                .map(|s| s.clusters.clone())
                .unwrap_or_default()
        })
        .collect();
    let settled = running.reports().await?;
    running.stop().await?;
    check_leases_gone(client, LEASE_NAMESPACE, &group).await?;
    Ok(ShardedRun {
        round,
        replicas,
        reconciled_seconds,
        settled,
        clusters,
    })
}

/// How a run split the clusters: each replica's count, largest first (`4/3/3`).
fn split(run: &ShardedRun) -> String {
    let mut counts: Vec<usize> = run.clusters.iter().map(Vec::len).collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    counts
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join("/")
}

/// The line under the table naming how the clusters were split for each replica
/// count (the splits seen, when they differ between rounds).
pub(super) fn splits_note(samples: &Samples) -> Option<String> {
    let runs = &samples.fleet.sharded;
    if runs.is_empty() {
        return None;
    }
    let per_count: Vec<String> = REPLICA_COUNTS
        .iter()
        .map(|&n| {
            let seen: BTreeSet<String> =
                runs.iter().filter(|r| r.replicas == n).map(split).collect();
            let seen: Vec<String> = seen.into_iter().collect();
            format!("{n}: {}", seen.join(" or "))
        })
        .collect();
    Some(format!(
        "Scenario 14: clusters per replica (rendezvous hashing of the cluster names over \
         the replicas' identities), by replica count: {}.",
        per_count.join("; ")
    ))
}

fn fleet_rows(runs: &FleetRuns, clusters: usize, objects: usize, one_cluster: usize) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut push = |label: &str, metric: String, ours: f64| {
        rows.push(Row {
            scenario: label.to_owned(),
            metric,
            ours,
            theirs: None,
            ..Row::default()
        });
    };
    let mib = |kib: u64| kib as f64 / MIB;
    let of =
        |samples: &[FleetSample], f: &dyn Fn(&FleetSample) -> f64| median(samples.iter().map(f));

    let label = format!(
        "14. fleet of {clusters} clusters x {} ConfigMaps (namespaces of one server)",
        thousands(objects)
    );
    let per_cluster = clusters as f64;
    let fleet = &runs.fleet;
    push(
        &label,
        "start to every object reconciled (s)".into(),
        of(fleet, &|s| s.reconciled_seconds),
    );
    push(
        &label,
        "CPU to every object reconciled, user+sys (s)".into(),
        of(fleet, &|s| s.cpu_seconds),
    );
    push(
        &label,
        "CPU per cluster (s)".into(),
        of(fleet, &|s| s.cpu_seconds / per_cluster),
    );
    push(
        &label,
        "peak RSS (MiB)".into(),
        of(fleet, &|s| mib(s.peak_rss_kib)),
    );
    push(
        &label,
        "RSS after every object reconciled (MiB)".into(),
        of(fleet, &|s| mib(s.rss_kib)),
    );
    push(
        &label,
        "RSS before start (MiB)".into(),
        of(fleet, &|s| mib(s.baseline_rss_kib)),
    );
    push(
        &label,
        "peak RSS above start, per cluster (MiB)".into(),
        of(fleet, &|s| {
            mib(s.peak_rss_kib.saturating_sub(s.baseline_rss_kib)) / per_cluster
        }),
    );
    push(
        &label,
        "RSS after above start, per cluster (MiB)".into(),
        of(fleet, &|s| {
            mib(s.rss_kib.saturating_sub(s.baseline_rss_kib)) / per_cluster
        }),
    );
    if one_cluster == clusters * objects && clusters > 1 {
        // Within each round, against that round's one cluster of the same objects.
        let beyond = |f: &dyn Fn(&FleetSample) -> f64| {
            median(
                runs.fleet
                    .iter()
                    .zip(&runs.one_cluster)
                    .map(|(many, one)| (f(many) - f(one)) / (clusters - 1) as f64),
            )
        };
        push(
            &label,
            format!(
                "RSS after, each cluster beyond the first ({clusters} clusters minus 1 \
                 cluster of the same objects, / {}) (MiB)",
                clusters - 1
            ),
            beyond(&|s| mib(s.rss_kib)),
        );
        push(
            &label,
            format!(
                "CPU, each cluster beyond the first ({clusters} clusters minus 1 cluster of \
                 the same objects, / {}) (s)",
                clusters - 1
            ),
            beyond(&|s| s.cpu_seconds),
        );
    }

    let label = format!(
        "14. fleet, for comparison: 1 cluster x {} ConfigMaps (scenario 2's namespace)",
        thousands(one_cluster)
    );
    let one = &runs.one_cluster;
    push(
        &label,
        "start to every object reconciled (s)".into(),
        of(one, &|s| s.reconciled_seconds),
    );
    push(
        &label,
        "CPU to every object reconciled, user+sys (s)".into(),
        of(one, &|s| s.cpu_seconds),
    );
    push(
        &label,
        "peak RSS (MiB)".into(),
        of(one, &|s| mib(s.peak_rss_kib)),
    );
    push(
        &label,
        "RSS after every object reconciled (MiB)".into(),
        of(one, &|s| mib(s.rss_kib)),
    );

    let label = format!(
        "14. fleet, a cluster of {} ConfigMaps joining {} reconciled ones",
        thousands(objects),
        clusters - 1
    );
    let joins: Vec<_> = runs.join.iter().filter_map(|s| s.join.as_ref()).collect();
    let join = |f: &dyn Fn(&crate::report::JoinSample) -> f64| median(joins.iter().map(|j| f(j)));
    push(
        &label,
        "from the add until its informer synced (s)".into(),
        join(&|j| j.synced_seconds),
    );
    push(
        &label,
        "from the add until every object of it was reconciled (s)".into(),
        join(&|j| j.reconciled_seconds),
    );
    push(
        &label,
        "CPU from the add until reconciled (s)".into(),
        join(&|j| j.cpu_seconds),
    );
    push(
        &label,
        "RSS growth from the add until reconciled (MiB)".into(),
        join(&|j| mib(j.rss_after_kib.saturating_sub(j.rss_before_kib))),
    );

    let label = format!(
        "14. fleet of {clusters} clusters x {} ConfigMaps sharded by cluster across replicas",
        thousands(objects)
    );
    let with = |n: usize| runs.sharded.iter().filter(move |r| r.replicas == n);
    let replicas_text = |n: usize| match n {
        1 => "1 replica".to_owned(),
        n => format!("{n} replicas"),
    };
    let peak = |run: &ShardedRun| largest(&run.settled, &|s| mib(s.peak_rss_kib));
    for n in REPLICA_COUNTS {
        push(
            &label,
            format!("peak RSS per replica, {} (MiB)", replicas_text(n)),
            median(with(n).map(peak)),
        );
    }
    for n in REPLICA_COUNTS.into_iter().filter(|&n| n > 1) {
        // Within each round, against that round's single replica.
        let ratios = with(n).filter_map(|run| {
            let alone = with(1).find(|r| r.round == run.round)?;
            Some(peak(run) / peak(alone))
        });
        push(
            &label,
            format!(
                "peak RSS per replica, {} / 1 replica (goal: about 1/{n})",
                replicas_text(n)
            ),
            median(ratios),
        );
    }
    for n in REPLICA_COUNTS {
        push(
            &label,
            format!("most clusters on one replica, {}", replicas_text(n)),
            median(
                with(n).map(|r| r.clusters.iter().map(Vec::len).max().unwrap_or_default() as f64),
            ),
        );
    }
    for n in REPLICA_COUNTS {
        push(
            &label,
            format!("start to every object reconciled, {} (s)", replicas_text(n)),
            median(with(n).map(|r| r.reconciled_seconds)),
        );
    }
    for n in REPLICA_COUNTS {
        push(
            &label,
            format!(
                "CPU per replica, start to every object reconciled, {} (s)",
                replicas_text(n)
            ),
            median(with(n).map(|r| largest(&r.settled, &|s| s.cpu_seconds))),
        );
    }
    rows
}
