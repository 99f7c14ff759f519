//! Scenario 3: watch throughput, 5,000 updates after the initial sync.

use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use anyhow::{Context as _, bail};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::process::{final_report, wait_for_sync};
use super::setup::CREATE_CONCURRENCY;
use super::{Bench, MIB, SMALL_NAMESPACE, Samples, medians, rotated, thousands};
use crate::objects;
use crate::report::{Implementation, Row, WatchSample, WorkerReport, median};

/// Scenario 3: each pair runs both sides (the first alternating) through the same
/// updates.
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let options = bench.options;
    let client = bench.client.context("no client")?;
    let label = format!("3. watch {} updates", thousands(options.updates));
    let mut pairs = Vec::new();
    for pair in 0..options.pairs {
        let mut both: [Option<WatchSample>; 2] = [None, None];
        for side in rotated(pair, 2) {
            let implementation = [Implementation::Ours, Implementation::KubeRuntime][side];
            let (sample, applied) = watch_run(
                bench.worker,
                bench.kubeconfig,
                client,
                implementation,
                pair * 2 + side,
                options.updates,
            )
            .await?;
            log_watch(&label, pair, &sample, applied);
            samples.watch_apply_seconds.push(applied);
            samples.watch.push(sample.clone());
            both[side] = Some(sample);
        }
        let [Some(ours), Some(theirs)] = both else {
            bail!("a pair lacks a side");
        };
        pairs.push((ours, theirs));
    }
    rows.extend(watch_rows(&label, &pairs, options.updates));
    Ok(())
}

/// The note under the table: how fast the driver applied the updates, and how long
/// after the last one each side had it cached.
pub(super) fn note(samples: &Samples, updates: usize) -> Option<String> {
    if samples.watch_apply_seconds.is_empty() {
        return None;
    }
    // The time until cached follows the server's pace; the lag after the last
    // patch returned is the informer's own part (the worker looks every 5 ms).
    let lag_ms = |implementation: Implementation| {
        median(
            samples
                .watch
                .iter()
                .zip(&samples.watch_apply_seconds)
                .filter(|(sample, _)| sample.implementation == implementation)
                .map(|(sample, applied)| (sample.seconds - applied) * 1e3),
        )
    };
    Some(format!(
        "Scenario 3: the driver applied the {} updates in {:.2} s (median), 32 in flight; \
         the last one was cached {:.1} ms (ours) and {:.1} ms (kube-runtime) after its \
         patch returned (medians; negative: before).",
        thousands(updates),
        median(samples.watch_apply_seconds.iter().copied()),
        lag_ms(Implementation::Ours),
        lag_ms(Implementation::KubeRuntime),
    ))
}

/// One watch-throughput run: starts the worker, waits for its sync, applies the
/// updates and the marker, and returns its report and the seconds the updates took.
async fn watch_run(
    worker: &Path,
    kubeconfig: Option<&Path>,
    client: &kube::Client,
    implementation: Implementation,
    round: usize,
    updates: usize,
) -> anyhow::Result<(WatchSample, f64)> {
    let mut command = tokio::process::Command::new(worker);
    command
        .args(["watch", implementation.as_str(), SMALL_NAMESPACE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if let Some(kubeconfig) = kubeconfig {
        command.env("KUBECONFIG", kubeconfig);
    }
    let mut child = command.spawn()?;
    let mut stdin = child.stdin.take().context("worker stdin")?;
    let mut lines = BufReader::new(child.stdout.take().context("worker stdout")?).lines();
    wait_for_sync(&mut lines, "watch").await?;

    let api = Api::<ConfigMap>::namespaced(client.clone(), SMALL_NAMESPACE);
    let tag = format!("r{round}");
    let marker = objects::name(updates - 1);
    let final_value = format!("{tag}-final");
    stdin
        .write_all(format!("go {marker} {final_value}\n").as_bytes())
        .await?;
    stdin.flush().await?;
    let started = Instant::now();
    let patch = |i: usize, value: String| {
        let api = api.clone();
        async move {
            let body = serde_json::json!({ "data": { "rev": value } });
            api.patch(
                &objects::name(i),
                &PatchParams::default(),
                &Patch::Merge(&body),
            )
            .await
        }
    };
    futures::stream::iter(0..updates - 1)
        .map(|i| patch(i, format!("{tag}-{i}")))
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_for_each(|_| futures::future::ready(Ok(())))
        .await?;
    // The marker goes last, after every other update was acknowledged.
    patch(updates - 1, final_value).await?;
    let applied = started.elapsed().as_secs_f64();

    match final_report(lines, child, "watch").await? {
        WorkerReport::Watch(sample) => Ok((sample, applied)),
        _ => bail!("the watch worker reported something else"),
    }
}

fn log_watch(label: &str, pair: usize, sample: &WatchSample, applied: f64) {
    eprintln!(
        "[{label}] pair {}: {:<12} last update cached after {:.3} s (driver applied in {:.3} s), \
         CPU {:.3} s, peak RSS {:.1} MiB",
        pair + 1,
        sample.implementation.as_str(),
        sample.seconds,
        applied,
        sample.cpu_seconds,
        sample.peak_rss_kib as f64 / MIB
    );
}

fn watch_rows(label: &str, pairs: &[(WatchSample, WatchSample)], updates: usize) -> Vec<Row> {
    let row = |metric: &str, f: &dyn Fn(&WatchSample) -> f64| {
        let (ours, theirs) = medians(pairs, f);
        Row {
            scenario: label.to_owned(),
            metric: metric.to_owned(),
            ours,
            theirs: Some(theirs),
            target: None,
            ..Row::default()
        }
    };
    vec![
        row("time until the last update is cached (s)", &|s| s.seconds),
        row("client CPU, user+sys (s)", &|s| s.cpu_seconds),
        row("CPU per update (µs)", &|s| {
            s.cpu_seconds * 1e6 / updates as f64
        }),
        row("peak RSS (MiB)", &|s| s.peak_rss_kib as f64 / MIB),
    ]
}
