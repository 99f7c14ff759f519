//! Scenario 12: edits made while a controller's startup backlog drains (see
//! [`crate::backlog`]).
//!
//! Each round runs three sides in turn, the first rotating: ours with its priority
//! queue (the default), ours with `.priority_queue(false)` (client-go's FIFO) and
//! kube-runtime's `Controller`, and a fourth when its peer is built: controller-runtime's
//! controller with its priority queue (its default), on scenario 7's parents ([`CONTROLLER_NAMESPACE`],
//! `--controller-objects`). Each worker starts with a new tag (`b{n}`), so every
//! parent needs a reconcile. Once the worker says it has made its first status patches
//! (the backlog is being worked), the driver changes `--backlog-edits` children, spread
//! evenly over the collection (edit `k` changes child `k * objects / edits`) and over
//! [`EDIT_SPREAD`] (edit `k` is sent `k * EDIT_SPREAD / edits` after the go-ahead),
//! each stamped with the time it was sent and given the value `{tag}-{k}`, then waits
//! for the worker's report: it comes once every parent has converged.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use informer::testenv::TestEnv;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use tokio::io::{AsyncBufReadExt, BufReader};

use super::controller::{CONTROLLER_NAMESPACE, edit_child};
use super::process::{final_report, program, wait_for_sync};
use super::{Bench, Columns, MIB, Samples, rotated, row_of, sides_of, thousands};
use crate::report::{BacklogSample, Implementation, Row, Target, WorkerReport, median};

/// How long the driver's edits are spread over, from the worker's go-ahead.
pub(super) const EDIT_SPREAD: Duration = Duration::from_secs(4);

/// The sides of each round, in the order of its runs: ours with priorities, ours
/// without, kube-runtime, controller-runtime (when its peer is built).
const SIDES: [Implementation; 4] = [
    Implementation::Ours,
    Implementation::OursFifo,
    Implementation::KubeRuntime,
    Implementation::ControllerRuntime,
];

/// Scenario 12: `--pairs` rounds of the three sides.
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let options = bench.options;
    let (objects, edits) = (options.controller_objects, options.backlog_edits);
    let env = bench.env.context("no control plane")?;
    let client = bench.client.context("no control plane")?;
    let label = format!(
        "12. controller startup backlog, {} parents, {} child edits while it drains",
        thousands(objects),
        thousands(edits)
    );
    let sides = sides_of(bench, &SIDES);
    let mut rounds = Vec::new();
    for round in 0..options.pairs {
        let mut runs: Vec<Option<BacklogSample>> = vec![None; sides.len()];
        for side in rotated(round, sides.len()) {
            let implementation = sides[side];
            let tag = format!("b{}", round * sides.len() + side);
            let sample =
                backlog_run(bench, env, client, implementation, objects, edits, &tag).await?;
            eprintln!(
                "[{label}] round {}: {:<18} first patches after {:.2} s; edits made {:.2}-{:.2} s \
                 after start with {}-{} parents still to reconcile; edit to reconcile p50 {:.1} ms, \
                 p99 {:.1} ms, max {:.1} ms ({} timed); every parent converged after {:.2} s \
                 ({} reconciles, CPU {:.2} s); peak RSS {:.1} MiB",
                round + 1,
                implementation.as_str(),
                sample.first_patches_seconds,
                sample.first_edit_seconds,
                sample.last_edit_seconds,
                sample.backlog_at_first_edit,
                sample.backlog_at_last_edit,
                sample.latency_p50_ms,
                sample.latency_p99_ms,
                sample.latency_max_ms,
                sample.latencies,
                sample.converge_seconds,
                sample.reconciles,
                sample.converge_cpu_seconds,
                sample.peak_rss_kib as f64 / MIB
            );
            runs[side] = Some(sample);
        }
        rounds.push(
            runs.into_iter()
                .collect::<Option<Vec<_>>>()
                .context("a round lacks a side")?,
        );
    }
    rows.extend(backlog_rows(&label, &sides, &rounds));
    samples.backlog = rounds.into_iter().flatten().collect();
    Ok(())
}

/// One run: the worker starts with a new tag; after its first patches the driver makes
/// its edits, spread over [`EDIT_SPREAD`]; the worker reports once every parent has
/// converged.
async fn backlog_run(
    bench: &Bench<'_>,
    env: &TestEnv,
    client: &kube::Client,
    implementation: Implementation,
    objects: usize,
    edits: usize,
    tag: &str,
) -> anyhow::Result<BacklogSample> {
    let mut child = tokio::process::Command::new(program(bench, implementation)?)
        .args([
            "backlog",
            implementation.as_str(),
            CONTROLLER_NAMESPACE,
            &objects.to_string(),
            &edits.to_string(),
            tag,
        ])
        .env("KUBECONFIG", env.kubeconfig_path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(child.stdout.take().context("worker stdout")?).lines();
    wait_for_sync(&mut lines, "backlog").await?;
    let go = tokio::time::Instant::now();
    let children = Api::<ConfigMap>::namespaced(client.clone(), CONTROLLER_NAMESPACE);
    futures::future::try_join_all((0..edits).map(|k| {
        let children = children.clone();
        let at = go + EDIT_SPREAD.mul_f64(k as f64 / edits as f64);
        async move {
            tokio::time::sleep_until(at).await;
            edit_child(&children, k * objects / edits, &format!("{tag}-{k}")).await
        }
    }))
    .await?;
    match final_report(lines, child, "backlog").await? {
        WorkerReport::Backlog(sample) => Ok(sample),
        _ => bail!("the backlog worker reported something else"),
    }
}

/// The rows: each of our two sides against kube-runtime (and controller-runtime, when
/// it ran), medians over the rounds; `rounds` holds runs in the order of `sides`.
fn backlog_rows(label: &str, sides: &[Implementation], rounds: &[Vec<BacklogSample>]) -> Vec<Row> {
    let row = |metric: &str,
               ours: Implementation,
               f: &dyn Fn(&BacklogSample) -> f64,
               target: Option<Target>| {
        let which = match ours {
            Implementation::Ours => "ours with priorities (default)",
            _ => "ours FIFO (`.priority_queue(false)`)",
        };
        let columns = Columns::of(sides, ours, Implementation::KubeRuntime);
        row_of(
            label,
            &format!("{metric}, {which}"),
            rounds,
            columns,
            f,
            target,
            None,
        )
    };
    let (priorities, fifo) = (Implementation::Ours, Implementation::OursFifo);
    let p50 = |s: &BacklogSample| s.latency_p50_ms;
    let p99 = |s: &BacklogSample| s.latency_p99_ms;
    let converged = |s: &BacklogSample| s.converge_seconds;
    let backlog = |s: &BacklogSample| s.backlog_at_last_edit as f64;
    let at = |side: Implementation| sides.iter().position(|&s| s == side).unwrap_or(0);
    let (ours_at, fifo_at) = (at(priorities), at(fifo));
    vec![
        row(
            "edit to owner's reconcile, p50 (ms)",
            priorities,
            &p50,
            Some(Target::RatioAtMost(0.2)),
        ),
        row("edit to owner's reconcile, p50 (ms)", fifo, &p50, None),
        row(
            "edit to owner's reconcile, p99 (ms)",
            priorities,
            &p99,
            None,
        ),
        row("edit to owner's reconcile, p99 (ms)", fifo, &p99, None),
        row(
            "start to every parent converged (s)",
            priorities,
            &converged,
            None,
        ),
        row(
            "start to every parent converged (s)",
            fifo,
            &converged,
            None,
        ),
        row(
            "parents still to reconcile at the last edit",
            priorities,
            &backlog,
            None,
        ),
        row(
            "parents still to reconcile at the last edit",
            fifo,
            &backlog,
            None,
        ),
        Row {
            scenario: label.to_owned(),
            metric: "start to every parent converged, ours with priorities / ours FIFO \
                     (share, per round)"
                .to_owned(),
            ours: median(
                rounds
                    .iter()
                    .map(|round| round[ours_at].converge_seconds / round[fifo_at].converge_seconds),
            ),
            ..Row::default()
        },
    ]
}
