//! Scenario 6: the relist after 410 Gone, on a control plane without watch cache: ours,
//! kube-runtime with its defaults and tuned as its docs say (rows of their own), and
//! client-go (JSON, protobuf) when its peer is built.

use std::process::Stdio;

use anyhow::{Context as _, bail};
use informer::testenv::TestEnv;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::process::{final_report, side_command, wait_for_sync};
use super::setup::create_objects;
use super::{
    Bench, Columns, KUBE_RUNTIME_TUNED, MIB, Samples, rotated, row_of, sides_of, thousands,
};
use crate::objects;
use crate::report::{Implementation, RelistSample, Row, WorkerReport};

/// Scenario 6's sides, in the order of each round's runs (the Go peers when built).
const RELIST_SIDES: [Implementation; 5] = [
    Implementation::Ours,
    Implementation::KubeRuntime,
    Implementation::KubeRuntimeTuned,
    Implementation::ClientGoJson,
    Implementation::ClientGoProtobuf,
];

/// The namespace of scenario 6's collection, on the control plane without watch cache.
const RELIST_NAMESPACE: &str = "bench-relist";

/// The namespace of the object scenario 6 writes to move etcd's revision on.
const NOISE_NAMESPACE: &str = "bench-noise";

/// Scenario 6: its own control plane, `--pairs` rounds of every side (the first
/// rotating).
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let options = bench.options;
    let label = format!("6. relist {} after 410 Gone", thousands(options.objects));
    eprintln!("[bench] starting a control plane without watch cache (scenario 6)");
    let uncached = TestEnv::builder().watch_cache(false).start().await?;
    let client = uncached.client()?;
    create_objects(&client, RELIST_NAMESPACE, options.objects, options.payload).await?;
    create_objects(&client, NOISE_NAMESPACE, 1, 0).await?;
    let sides = sides_of(bench, &RELIST_SIDES);
    let mut runs = Vec::new();
    for round in 0..options.pairs {
        let mut round_samples: Vec<Option<RelistSample>> = vec![None; sides.len()];
        for side in rotated(round, sides.len()) {
            let implementation = sides[side];
            let sample = relist_run(bench, &uncached, &client, implementation).await?;
            eprintln!(
                "[{label}] round {}: {:<18} RSS after sync {:.1} MiB, peak until the relist \
                 was applied {:.1} MiB, CPU {:.3} s, {} objects",
                round + 1,
                implementation.as_str(),
                sample.rss_after_sync_kib as f64 / MIB,
                sample.peak_rss_kib as f64 / MIB,
                sample.cpu_seconds,
                sample.objects
            );
            if sample.objects != options.objects {
                bail!(
                    "{} relisted {} objects",
                    implementation.as_str(),
                    sample.objects
                );
            }
            round_samples[side] = Some(sample);
        }
        runs.push(round_samples.into_iter().flatten().collect::<Vec<_>>());
    }
    let defaults = Columns::of(&sides, Implementation::Ours, Implementation::KubeRuntime);
    rows.extend(relist_rows(&label, &runs, defaults));
    let tuned = Columns::pair(
        &sides,
        Implementation::Ours,
        Implementation::KubeRuntimeTuned,
    );
    rows.extend(relist_rows(
        &format!("{label}, {KUBE_RUNTIME_TUNED}"),
        &runs,
        tuned,
    ));
    samples.relist = runs.into_iter().flatten().collect();
    Ok(())
}

/// One relist run: starts the worker on the control plane without watch cache, waits
/// for its sync, moves etcd's revision on (writes it does not watch) and compacts, so
/// that its next watch gets 410 Gone and it relists; returns its report.
async fn relist_run(
    bench: &Bench<'_>,
    env: &TestEnv,
    client: &kube::Client,
    implementation: Implementation,
) -> anyhow::Result<RelistSample> {
    let (program, args) = side_command(bench, implementation, "relist", RELIST_NAMESPACE)?;
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .env("KUBECONFIG", env.kubeconfig_path())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(child.stdout.take().context("worker stdout")?).lines();
    wait_for_sync(&mut lines, "relist").await?;
    let noise = Api::<ConfigMap>::namespaced(client.clone(), NOISE_NAMESPACE);
    for i in 0..5 {
        let body = serde_json::json!({ "data": { "rev": i.to_string() } });
        noise
            .patch(
                &objects::name(0),
                &PatchParams::default(),
                &Patch::Merge(&body),
            )
            .await?;
    }
    env.compact_etcd().await?;
    match final_report(lines, child, "relist").await? {
        WorkerReport::Relist(sample) => Ok(sample),
        _ => bail!("the relist worker reported something else"),
    }
}

fn relist_rows(label: &str, runs: &[Vec<RelistSample>], columns: Columns) -> Vec<Row> {
    let row = |metric: &str, f: &dyn Fn(&RelistSample) -> f64| {
        row_of(label, metric, runs, columns, f, None, None)
    };
    let mib = |kib: u64| kib as f64 / MIB;
    vec![
        row("RSS after the initial sync (MiB)", &|s| {
            mib(s.rss_after_sync_kib)
        }),
        row("peak RSS until the relist was applied (MiB)", &|s| {
            mib(s.peak_rss_kib)
        }),
        row("peak RSS above RSS after sync, per object (bytes)", &|s| {
            (s.peak_rss_kib.saturating_sub(s.rss_after_sync_kib) * 1024) as f64 / s.objects as f64
        }),
        row("CPU from the sync until the relist was applied (s)", &|s| {
            s.cpu_seconds
        }),
    ]
}
