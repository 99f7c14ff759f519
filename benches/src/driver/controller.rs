//! Scenario 7: controller throughput, ours against kube-runtime's `Controller` with
//! owned children (see [`crate::controller`]). Its objects (the `Parent` CRD, the
//! parents and their children, created before the scenarios run: see
//! [`create_family`]) serve scenarios 12 and 13 too.

use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use anyhow::{Context as _, bail};
use futures::{StreamExt, TryStreamExt};
use informer::testenv::TestEnv;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, CustomResourceExt, Resource};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::process::{final_report, wait_for_sync};
use super::setup::CREATE_CONCURRENCY;
use super::{Bench, MIB, Samples, medians, rotated, thousands};
use crate::controller::{Parent, ParentSpec, child_name, parent_name, stamp_now};
use crate::report::{ControllerSample, Implementation, Row, Target, WorkerReport};

/// The namespace of the parents and their children (scenarios 7 and 12).
pub(super) const CONTROLLER_NAMESPACE: &str = "bench-controller";

/// Scenario 7: `--pairs` pairs (the first side alternating) on the parents and
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
    let mut pairs = Vec::new();
    for pair in 0..options.pairs {
        let mut both: [Option<ControllerSample>; 2] = [None, None];
        for side in rotated(pair, 2) {
            let implementation = [Implementation::Ours, Implementation::KubeRuntime][side];
            let tag = format!("r{}", pair * 2 + side);
            let sample = controller_run(
                bench.worker,
                env,
                &client,
                implementation,
                objects,
                updates,
                &tag,
            )
            .await?;
            eprintln!(
                "[{label}] pair {}: {:<12} converged in {:.2} s ({:.0} reconciles/s, {} reconciles, \
                 CPU {:.2} s); {} updates in {:.2} s (CPU {:.2} s); change to reconcile p50 {:.1} ms, \
                 p99 {:.1} ms ({} timed); peak RSS {:.1} MiB",
                pair + 1,
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
            both[side] = Some(sample);
        }
        let [Some(ours), Some(theirs)] = both else {
            bail!("a pair lacks a side");
        };
        pairs.push((ours, theirs));
    }
    rows.extend(controller_rows(&label, &pairs));
    samples.controller = pairs.into_iter().flat_map(|(a, b)| [a, b]).collect();
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
    worker: &Path,
    env: &TestEnv,
    client: &kube::Client,
    implementation: Implementation,
    objects: usize,
    updates: usize,
    tag: &str,
) -> anyhow::Result<ControllerSample> {
    let mut child = tokio::process::Command::new(worker)
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

fn controller_rows(label: &str, pairs: &[(ControllerSample, ControllerSample)]) -> Vec<Row> {
    let row = |metric: &str, f: &dyn Fn(&ControllerSample) -> f64, target: Option<Target>| {
        let (ours, theirs) = medians(pairs, f);
        Row {
            scenario: label.to_owned(),
            metric: metric.to_owned(),
            ours,
            theirs: Some(theirs),
            target,
            ..Row::default()
        }
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
