//! Scenario 7: controller throughput, ours against kube-runtime's `Controller` with
//! owned children (see [`crate::controller`]), with its defaults and tuned as its docs
//! say (rows of their own), and against controller-runtime's (a column) when its peer is
//! built. Its objects (the `Parent` CRD, the parents and their children, created
//! before the scenarios run: see [`create_family`]) serve scenarios 12 and 13 too.

use std::process::Stdio;
use std::time::Instant;

use anyhow::{Context as _, bail};
use futures::{StreamExt, TryStreamExt};
use informer::testenv::TestEnv;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, CustomResourceExt, Resource};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::process::{final_report, program, wait_for_sync};
use super::setup::CREATE_CONCURRENCY;
use super::{
    Bench, Columns, KUBE_RUNTIME_TUNED, MIB, Samples, rotated, row_of, sides_of, thousands,
};
use crate::controller::{Parent, ParentSpec, child_name, parent_name, stamp_now};
use crate::report::{ControllerSample, Implementation, Row, Target, WorkerReport};

/// The namespace of the parents and their children (scenarios 7 and 12).
pub(super) const CONTROLLER_NAMESPACE: &str = "bench-controller";

/// Scenario 7's sides, in the order of each round's runs (controller-runtime when its
/// peer is built).
const SIDES: [Implementation; 4] = [
    Implementation::Ours,
    Implementation::KubeRuntime,
    Implementation::KubeRuntimeTuned,
    Implementation::ControllerRuntime,
];

/// Scenario 7: `--pairs` rounds of every side (the first rotating) on the parents and
/// children of [`CONTROLLER_NAMESPACE`], created beforehand.
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let options = bench.options;
    let (objects, updates) = (options.controller_objects, options.controller_updates);
    let env = bench.env.context("no control plane")?;
    let client = env.client()?;
    let label = format!(
        "7. controller, {} parents owning a child each, {} child updates",
        thousands(objects),
        thousands(updates)
    );
    let sides = sides_of(bench, &SIDES);
    let mut rounds = Vec::new();
    for round in 0..options.pairs {
        let mut runs: Vec<Option<ControllerSample>> = vec![None; sides.len()];
        for side in rotated(round, sides.len()) {
            let implementation = sides[side];
            let tag = format!("r{}", round * sides.len() + side);
            let sample =
                controller_run(bench, env, &client, implementation, objects, updates, &tag).await?;
            eprintln!(
                "[{label}] round {}: {:<18} converged in {:.2} s ({:.0} reconciles/s, {} reconciles, \
                 CPU {:.2} s); {} updates in {:.2} s (CPU {:.2} s); change to reconcile p50 {:.1} ms, \
                 p99 {:.1} ms ({} timed); peak RSS {:.1} MiB",
                round + 1,
                implementation.as_str(),
                sample.converge_seconds,
                objects as f64 / sample.converge_seconds,
                sample.converge_reconciles,
                sample.converge_cpu_seconds,
                updates,
                sample.update_seconds,
                sample.update_cpu_seconds,
                sample.latency_p50_ms,
                sample.latency_p99_ms,
                sample.latencies,
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
    let defaults = Columns::of(&sides, Implementation::Ours, Implementation::KubeRuntime);
    rows.extend(controller_rows(&label, &rounds, defaults, true));
    let tuned = Columns::pair(
        &sides,
        Implementation::Ours,
        Implementation::KubeRuntimeTuned,
    );
    rows.extend(controller_rows(
        &format!("{label}, {KUBE_RUNTIME_TUNED}"),
        &rounds,
        tuned,
        false,
    ));
    samples.controller = rounds.into_iter().flatten().collect();
    Ok(())
}

/// Installs the `Parent` CRD (if it is not yet) and creates `namespace`, `count`
/// parents in it, and each parent's child (owned through a controller owner
/// reference).
pub(super) async fn create_family(
    env: &TestEnv,
    namespace: &str,
    count: usize,
) -> anyhow::Result<()> {
    env.install_crd(&Parent::crd()).await?;
    let client = &env.client()?;
    let created = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &created)
        .await?;
    let parents = Api::<Parent>::namespaced(client.clone(), namespace);
    let children = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    let started = Instant::now();
    futures::stream::iter(0..count)
        .map(|i| {
            let (parents, children) = (parents.clone(), children.clone());
            async move {
                let parent = Parent::new(
                    &parent_name(i),
                    ParentSpec {
                        child: child_name(i),
                    },
                );
                let parent = parents.create(&PostParams::default(), &parent).await?;
                let owner = parent
                    .controller_owner_ref(&())
                    .context("a created parent has a uid")?;
                let child: ConfigMap = serde_json::from_value(serde_json::json!({
                    "metadata": { "name": child_name(i), "ownerReferences": [owner] },
                    "data": { "value": "initial" },
                }))?;
                children.create(&PostParams::default(), &child).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect::<Vec<()>>()
        .await?;
    eprintln!(
        "[bench] {namespace}: {count} parents and {count} children created in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// One run: the worker converges, then the driver changes `updates` children (each
/// stamped with the time of its change) and the worker converges again.
async fn controller_run(
    bench: &Bench<'_>,
    env: &TestEnv,
    client: &kube::Client,
    implementation: Implementation,
    objects: usize,
    updates: usize,
    tag: &str,
) -> anyhow::Result<ControllerSample> {
    let mut child = tokio::process::Command::new(program(bench, implementation)?)
        .args([
            "controller",
            implementation.as_str(),
            CONTROLLER_NAMESPACE,
            &objects.to_string(),
            &updates.to_string(),
            tag,
        ])
        .env("KUBECONFIG", env.kubeconfig_path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = child.stdin.take().context("worker stdin")?;
    let mut lines = BufReader::new(child.stdout.take().context("worker stdout")?).lines();
    wait_for_sync(&mut lines, "controller").await?;
    stdin.write_all(b"go\n").await?;
    stdin.flush().await?;
    let children = Api::<ConfigMap>::namespaced(client.clone(), CONTROLLER_NAMESPACE);
    futures::stream::iter(0..updates)
        .map(|i| {
            let children = children.clone();
            async move { edit_child(&children, i, &format!("{tag}-{i}")).await }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_for_each(|_| futures::future::ready(Ok(())))
        .await?;
    match final_report(lines, child, "controller").await? {
        WorkerReport::Controller(sample) => Ok(sample),
        _ => bail!("the controller worker reported something else"),
    }
}

/// Changes child `i`'s value to `value`, stamping the change with the wall-clock
/// time ([`stamp_now`]) it was sent at.
pub(super) async fn edit_child(
    children: &Api<ConfigMap>,
    i: usize,
    value: &str,
) -> kube::Result<ConfigMap> {
    let body = serde_json::json!({
        "data": { "value": value, "stamp": stamp_now().to_string() }
    });
    children
        .patch(
            &child_name(i),
            &PatchParams::default(),
            &Patch::Merge(&body),
        )
        .await
}

/// The rows of scenario 7 over `rounds` laid out as `columns` says; with the issue's
/// targets when `targets` (the comparison with kube-runtime's defaults).
fn controller_rows(
    label: &str,
    rounds: &[Vec<ControllerSample>],
    columns: Columns,
    targets: bool,
) -> Vec<Row> {
    let row = |metric: &str, f: &dyn Fn(&ControllerSample) -> f64, target: Option<Target>| {
        row_of(
            label,
            metric,
            rounds,
            columns,
            f,
            target.filter(|_| targets),
            None,
        )
    };
    vec![
        row(
            "reconciles/s to converge after start",
            &|s| s.objects as f64 / s.converge_seconds,
            Some(Target::RatioAtLeast(2.0)),
        ),
        row(
            "CPU to converge after start (s)",
            &|s| s.converge_cpu_seconds,
            None,
        ),
        row(
            "reconciles run to converge after start",
            &|s| s.converge_reconciles as f64,
            None,
        ),
        row(
            "reconciles/s to converge after the updates",
            &|s| s.updates as f64 / s.update_seconds,
            Some(Target::RatioAtLeast(2.0)),
        ),
        row(
            "CPU to converge after the updates (s)",
            &|s| s.update_cpu_seconds,
            None,
        ),
        row(
            "child change to owner's reconcile, p50 (ms)",
            &|s| s.latency_p50_ms,
            None,
        ),
        row(
            "child change to owner's reconcile, p99 (ms)",
            &|s| s.latency_p99_ms,
            Some(Target::RatioAtMost(0.5)),
        ),
        row(
            "peak RSS (MiB)",
            &|s| s.peak_rss_kib as f64 / MIB,
            Some(Target::RatioAtMost(0.6)),
        ),
    ]
}
