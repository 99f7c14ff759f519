//! Scenario 17: scenario 11's sharded controller on Kubernetes 1.37, deciding by uid,
//! with the API server's sharded list and watch on (feature gate
//! `ShardedListAndWatch`) and off (issue 39; ours only: kube-runtime has no sharding).
//!
//! For each gate, the driver starts a control plane of its own (the default release,
//! the gate set as asked), installs [`ShardItem`](crate::shard_item::ShardItem) and
//! creates `--large-objects` of them in [`NAMESPACE`], each shaped like scenario 2's
//! ConfigMap. Then, for 1, 2 and 3 replicas (the order rotating from round to round),
//! it starts that many `bench-worker shard … uid item` processes in a group of their
//! own, waits until they are settled (they read the same members and their covered
//! keys add up to every object: see scenario 11), asks each for its report and stops
//! them. Each replica talks to the API server through a [`FaultProxy`] of its own,
//! which counts the bytes the server sent it (TLS included; its Lease traffic is a
//! few KiB). Per replica: those bytes, the objects its primary cache's reflector
//! decoded and dropped before decoding, CPU and peak RSS from start to settled; per
//! run, the control plane's CPU (API server and etcd, from `/proc/<pid>/stat`) over
//! the same span.

use std::path::Path;

use anyhow::Context as _;
use futures::StreamExt;
use informer::testenv::{FaultProxy, TestEnv};
use kube::Api;
use kube::api::PostParams;
use kube::core::CustomResourceExt;
use tokio::time::Instant;

use super::replicas::{Replicas, largest};
use super::sharded::REPLICA_COUNTS;
use super::{Bench, MIB, Samples, rotated, thousands};
use crate::measure::processes_cpu;
use crate::report::{Row, ShardSample, Target, median};
use crate::shard_item::{ShardItem, item};

/// Bytes in a MiB ([`MIB`] is KiB in a MiB, for the workers' `/proc` figures).
const BYTES_PER_MIB: f64 = 1024.0 * MIB;

/// The namespace of the items and of the member Leases.
pub(super) const NAMESPACE: &str = "bench-server-shards";

/// One run: `replicas` replicas on the server with the gate `gate`.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct ServerShardRun {
    /// Whether the server filtered by shard (the gate on).
    gate: bool,
    /// The round (0-based).
    round: usize,
    /// Replicas started.
    replicas: usize,
    /// Seconds from starting the replicas until every object was covered.
    covered_seconds: f64,
    /// Each replica's report once every object was covered.
    settled: Vec<ShardSample>,
    /// The control plane's CPU seconds over the same span.
    server_cpu_seconds: f64,
}

/// Scenario 17: for the gate on, then off, `--pairs` rounds of 1, 2 and 3 replicas.
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let objects = bench.options.large_objects;
    let label = format!(
        "17. sharded by uid on 1.37, the server filtering or not, {} objects",
        thousands(objects)
    );
    let mut runs = Vec::new();
    for gate in [true, false] {
        eprintln!("[{label}] starting a control plane, ShardedListAndWatch {gate}");
        let env = TestEnv::builder()
            .sharded_list_and_watch(gate)
            .start()
            .await?;
        env.install_crd(&ShardItem::crd()).await?;
        create_items(&env, objects, bench.options.large_payload).await?;
        for round in 0..bench.options.pairs {
            for i in rotated(round, REPLICA_COUNTS.len()) {
                let replicas = REPLICA_COUNTS[i];
                let run = one_run(bench.worker, &env, objects, gate, round, replicas).await?;
                eprintln!(
                    "[{label}] gate {gate}, round {}: {replicas} replica(s) settled in {:.2} s; \
                     largest: {:.1} MiB read, {} decoded, {} dropped, CPU {:.2} s, peak RSS \
                     {:.1} MiB; control plane CPU {:.2} s",
                    round + 1,
                    run.covered_seconds,
                    largest(&run.settled, &|s| s.bytes_received as f64 / BYTES_PER_MIB),
                    largest(&run.settled, &|s| s.objects_decoded as f64),
                    largest(&run.settled, &|s| s.objects_filtered_out as f64),
                    largest(&run.settled, &|s| s.cpu_seconds),
                    largest(&run.settled, &|s| s.peak_rss_kib as f64 / MIB),
                    run.server_cpu_seconds,
                );
                runs.push(run);
            }
        }
    }
    rows.extend(server_shard_rows(&label, &runs));
    samples.server_shards = runs;
    Ok(())
}

/// Creates `count` items in [`NAMESPACE`], a few requests at a time.
async fn create_items(env: &TestEnv, count: usize, payload: usize) -> anyhow::Result<()> {
    // A whole control plane serves namespaces: this one must exist first (the 1.36
    // server of custom resources only took any name).
    let client = env.client()?;
    super::setup::create_namespace(&client, NAMESPACE).await?;
    let api = Api::<ShardItem>::namespaced(client, NAMESPACE);
    let started = Instant::now();
    let results: Vec<Result<ShardItem, kube::Error>> = futures::stream::iter(0..count)
        .map(|i| {
            let api = api.clone();
            async move { api.create(&PostParams::default(), &item(i, payload)).await }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    for result in results {
        result.context("creating an item")?;
    }
    eprintln!(
        "[bench] {NAMESPACE}: {count} ShardItems created in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// One run: `replicas` replicas until settled, their reports, and a clean stop.
async fn one_run(
    worker: &Path,
    env: &TestEnv,
    objects: usize,
    gate: bool,
    round: usize,
    replicas: usize,
) -> anyhow::Result<ServerShardRun> {
    let group = format!("bench17-r{round}-n{replicas}");
    let mut proxies = Vec::with_capacity(replicas);
    let mut kubeconfigs = Vec::with_capacity(replicas);
    for i in 0..replicas {
        let proxy = env.fault_proxy().await?;
        kubeconfigs.push(kubeconfig_through(env, &proxy, &format!("{group}-{i}"))?);
        proxies.push(proxy);
    }
    let marker = env.dir().display().to_string();
    let server_before = processes_cpu(&marker);
    let started = Instant::now();
    let mut running = Replicas::start_each(worker, &kubeconfigs, |identity| {
        ["shard", NAMESPACE, &group, identity, "uid", "item"]
            .map(str::to_owned)
            .to_vec()
    })?;
    let what = format!("{replicas} replica(s), gate {gate}");
    let covered_seconds = running.settle(objects, started, &what).await?;
    let server_cpu_seconds = (processes_cpu(&marker) - server_before).as_secs_f64();
    let mut settled = running.reports().await?;
    for (sample, proxy) in settled.iter_mut().zip(&proxies) {
        // Reports come in the replicas' order, replica-{i} behind proxy i.
        sample.bytes_received = proxy.bytes_to_clients();
    }
    running.stop().await?;
    Ok(ServerShardRun {
        gate,
        round,
        replicas,
        covered_seconds,
        settled,
        server_cpu_seconds,
    })
}

/// A kubeconfig like `env`'s whose server is `proxy`, written beside `env`'s.
fn kubeconfig_through(
    env: &TestEnv,
    proxy: &FaultProxy,
    name: &str,
) -> anyhow::Result<std::path::PathBuf> {
    let direct = env.config().cluster_url.to_string();
    let through = proxy.config().cluster_url.to_string();
    let text = std::fs::read_to_string(env.kubeconfig_path())?;
    let direct = direct.trim_end_matches('/');
    anyhow::ensure!(
        text.contains(direct),
        "the kubeconfig names its server as {direct}"
    );
    let path = env.dir().join(format!("kubeconfig-{name}"));
    std::fs::write(&path, text.replace(direct, through.trim_end_matches('/')))?;
    Ok(path)
}

fn server_shard_rows(label: &str, runs: &[ServerShardRun]) -> Vec<Row> {
    let row = |metric: String, ours: f64, target: Option<Target>| Row {
        scenario: label.to_owned(),
        metric,
        ours,
        theirs: None,
        target,
        ..Row::default()
    };
    let gate_text = |gate: bool| if gate { "gate on" } else { "gate off" };
    let replicas_text = |n: usize| match n {
        1 => "1 replica".to_owned(),
        n => format!("{n} replicas"),
    };
    type Measure = fn(&ShardSample) -> f64;
    let measures: [(&str, Measure); 6] = [
        ("bytes received per replica (MiB)", |s| {
            s.bytes_received as f64 / BYTES_PER_MIB
        }),
        (
            "shard selector sent, longest (bytes, before URL encoding)",
            |s| s.selector_bytes as f64,
        ),
        ("objects decoded per replica", |s| s.objects_decoded as f64),
        ("objects dropped before decoding per replica", |s| {
            s.objects_filtered_out as f64
        }),
        ("CPU per replica, start to settled (s)", |s| s.cpu_seconds),
        ("peak RSS per replica (MiB)", |s| {
            s.peak_rss_kib as f64 / MIB
        }),
    ];
    let mut rows = Vec::new();
    for gate in [true, false] {
        let with = |n: usize| {
            runs.iter()
                .filter(move |r| r.gate == gate && r.replicas == n)
        };
        for (what, measure) in measures {
            for n in REPLICA_COUNTS {
                rows.push(row(
                    format!("{}, {what}, {}", gate_text(gate), replicas_text(n)),
                    median(with(n).map(|r| largest(&r.settled, &|s| measure(s)))),
                    None,
                ));
            }
        }
        // The largest replica of N against the single replica of the same round and
        // gate: the targets (bytes and CPU within 1.1/N with the gate on).
        for (what, measure) in [measures[0], measures[3]] {
            for n in REPLICA_COUNTS.into_iter().filter(|&n| n > 1) {
                let ratios = with(n).filter_map(|run| {
                    let alone = with(1).find(|r| r.round == run.round)?;
                    let one = largest(&alone.settled, &|s| measure(s));
                    Some(largest(&run.settled, &|s| measure(s)) / one)
                });
                let bound = 1.1 / n as f64;
                rows.push(row(
                    format!(
                        "{}, {what}: largest of {n} / 1 replica (target <= 1.1/{n} = {bound:.3} with the gate on)",
                        gate_text(gate)
                    ),
                    median(ratios),
                    gate.then_some(Target::AtMost(bound)),
                ));
            }
        }
        for n in REPLICA_COUNTS {
            rows.push(row(
                format!(
                    "{}, API server + etcd CPU, start to settled, {} (s)",
                    gate_text(gate),
                    replicas_text(n)
                ),
                median(with(n).map(|r| r.server_cpu_seconds)),
                None,
            ));
            rows.push(row(
                format!(
                    "{}, start to every object reconciled, {} (s)",
                    gate_text(gate),
                    replicas_text(n)
                ),
                median(with(n).map(|r| r.covered_seconds)),
                None,
            ));
        }
    }
    rows
}
