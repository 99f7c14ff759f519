//! Scenario 3: watch throughput, 5,000 updates after the initial sync.

use std::time::Instant;

use anyhow::{Context as _, bail};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams};
use tokio::io::AsyncWriteExt;

use super::process::{TalkingWorker, final_report, spawn_side, wait_for_sync};
use super::setup::CREATE_CONCURRENCY;
use super::{
    Bench, Columns, MIB, SMALL_NAMESPACE, Samples, default_sides, rotated, row_of, thousands,
};
use crate::objects;
use crate::report::{Implementation, Row, WatchSample, WorkerReport, median};

/// Scenario 3: each round runs every side (the first rotating) through the same
/// updates.
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let options = bench.options;
    let client = bench.client.context("no client")?;
    let label = format!("3. watch {} updates", thousands(options.updates));
    let sides = default_sides(bench);
    let mut runs = Vec::new();
    for round in 0..options.pairs {
        let mut round_samples: Vec<Option<WatchSample>> = vec![None; sides.len()];
        for side in rotated(round, sides.len()) {
            let (sample, applied) = watch_run(
                bench,
                client,
                sides[side],
                round * sides.len() + side,
                options.updates,
            )
            .await?;
            log_watch(&label, round, &sample, applied);
            samples.watch_apply_seconds.push(applied);
            samples.watch.push(sample.clone());
            round_samples[side] = Some(sample);
        }
        runs.push(round_samples.into_iter().flatten().collect());
    }
    let columns = Columns::of(&sides, Implementation::Ours, Implementation::KubeRuntime);
    rows.extend(watch_rows(&label, &runs, columns, options.updates));
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
    let mut seen: Vec<Implementation> = Vec::new();
    for sample in &samples.watch {
        if !seen.contains(&sample.implementation) {
            seen.push(sample.implementation);
        }
    }
    let lags: Vec<String> = seen
        .into_iter()
        .map(|side| format!("{:.1} ms ({})", lag_ms(side), side.as_str()))
        .collect();
    Some(format!(
        "Scenario 3: the driver applied the {} updates in {:.2} s (median), 32 in flight; \
         the last one was cached {} after its patch returned (medians; negative: before).",
        thousands(updates),
        median(samples.watch_apply_seconds.iter().copied()),
        lags.join(", "),
    ))
}

/// One watch-throughput run: starts the worker, waits for its sync, applies the
/// updates and the marker, and returns its report and the seconds the updates took.
async fn watch_run(
    bench: &Bench<'_>,
    client: &kube::Client,
    implementation: Implementation,
    round: usize,
    updates: usize,
) -> anyhow::Result<(WatchSample, f64)> {
    let TalkingWorker {
        child,
        mut stdin,
        mut lines,
    } = spawn_side(bench, implementation, "watch", SMALL_NAMESPACE)?;
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

fn log_watch(label: &str, round: usize, sample: &WatchSample, applied: f64) {
    eprintln!(
        "[{label}] round {}: {:<18} last update cached after {:.3} s (driver applied in {:.3} s), \
         CPU {:.3} s, peak RSS {:.1} MiB",
        round + 1,
        sample.implementation.as_str(),
        sample.seconds,
        applied,
        sample.cpu_seconds,
        sample.peak_rss_kib as f64 / MIB
    );
}

fn watch_rows(
    label: &str,
    runs: &[Vec<WatchSample>],
    columns: Columns,
    updates: usize,
) -> Vec<Row> {
    let row = |metric: &str, f: &dyn Fn(&WatchSample) -> f64| {
        row_of(label, metric, runs, columns, f, None, None)
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
