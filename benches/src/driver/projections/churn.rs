//! Scenario 15's churn (issue 48): does a cache give back what it no longer holds?
//!
//! Each round, our projection's and our metadata-only informer's workers sync the
//! `--churn-pods` Pods of `bench-pods-churn` (one after the other) and wait; the driver
//! deletes every other Pod and relabels the rest (a new `pod-template-hash`, as a
//! rollout writes); each worker reports once its cache holds exactly the live Pods,
//! all relabelled ([`crate::churn`]). Then a fresh worker of each syncs the survivors.
//! The rows: RSS above start after the churn against the fresh sync's (**target:
//! at most 1.3x**), and our cache-size estimate after the churn against the fresh one
//! and against the RSS. Before each round the namespace is put back ([`restore`]).
//!
//! The workers allocate with glibc's malloc, which may keep freed chunks resident:
//! that is part of what a user's process would hold, so it is measured as it is; and
//! the two projections again with mimalloc as the worker's global allocator
//! (`bench-worker-mimalloc`), which returns freed pages to the system, to show what a
//! user gets back by choosing it.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Instant;

use anyhow::{Context as _, bail};
use futures::future::BoxFuture;
use futures::{FutureExt as _, StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use tokio::io::AsyncWriteExt as _;

use super::{METADATA_ONLY, PROJECTION, SHARED_PROJECTION, VARIANTS};
use crate::driver::process::{
    MIMALLOC_WORKER, TalkingWorker, final_report, run_worker, spawn_worker, wait_for_sync,
};
use crate::driver::setup::{CREATE_CONCURRENCY, create_namespace, create_pod};
use crate::driver::{Bench, MIB, Samples, rotated, thousands};
use crate::objects;
use crate::report::{ChurnSample, Implementation, Row, SyncSample, Target, WorkerReport, median};

/// The churn's namespace: its own, since the churn changes it.
const CHURN_NAMESPACE: &str = "bench-pods-churn";

/// The label the churn changes on every Pod it keeps.
const LABEL: &str = "pod-template-hash";

/// Its value after the churn (before: [`objects::pod`]'s).
const CHURNED: &str = "6b9c7d8f5";

/// One variant of the churn: its name, its index in [`VARIANTS`] (the sync mode of
/// its fresh worker), the worker mode that syncs and then follows the churn, and
/// whether its workers allocate with mimalloc.
#[derive(Debug, Clone, Copy)]
struct ChurnVariant {
    name: &'static str,
    variant: usize,
    churn_mode: &'static str,
    mimalloc: bool,
}

const CHURN_VARIANTS: [ChurnVariant; 5] = [
    ChurnVariant {
        name: VARIANTS[PROJECTION].name,
        variant: PROJECTION,
        churn_mode: "churn-pod-views",
        mimalloc: false,
    },
    ChurnVariant {
        name: VARIANTS[SHARED_PROJECTION].name,
        variant: SHARED_PROJECTION,
        churn_mode: "churn-pod-views-shared",
        mimalloc: false,
    },
    ChurnVariant {
        name: VARIANTS[METADATA_ONLY].name,
        variant: METADATA_ONLY,
        churn_mode: "churn-pods-metadata",
        mimalloc: false,
    },
    ChurnVariant {
        name: "ours, projection (PodView), mimalloc",
        variant: PROJECTION,
        churn_mode: "churn-pod-views",
        mimalloc: true,
    },
    ChurnVariant {
        name: "ours, projection, repeating values shared (SharedPodView), mimalloc",
        variant: SHARED_PROJECTION,
        churn_mode: "churn-pod-views-shared",
        mimalloc: true,
    },
];

impl ChurnVariant {
    /// The worker binary this variant runs: `bench-worker`, or its mimalloc build.
    fn program(&self, bench: &Bench<'_>) -> std::path::PathBuf {
        if self.mimalloc {
            bench.worker.with_file_name(MIMALLOC_WORKER)
        } else {
            bench.worker.to_path_buf()
        }
    }

    /// The worker's arguments for `mode` (ours, on the churn's namespace).
    fn args(mode: &str) -> [String; 3] {
        [
            mode.to_owned(),
            Implementation::Ours.as_str().to_owned(),
            CHURN_NAMESPACE.to_owned(),
        ]
    }
}

/// One variant's run of one round, for the JSON file.
#[derive(Debug, Clone, serde::Serialize)]
pub(in crate::driver) struct ChurnRun {
    variant: &'static str,
    pods: usize,
    /// The worker that synced all the Pods and followed the churn.
    churned: ChurnSample,
    /// The fresh worker that synced the survivors.
    fresh: SyncSample,
}

/// The Pods that survive the churn: the even ones.
fn survives(i: usize) -> bool {
    i.is_multiple_of(2)
}

/// `--pairs` rounds of the churn, each after [`restore`]: its rows go to `rows`, its
/// runs to `samples`; returns its table.
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<String> {
    let client = bench.client.context("no client")?;
    let pods = bench.options.churn_pods;
    let live = (0..pods).filter(|&i| survives(i)).count();
    let label = format!("15. churn {} Pods", thousands(pods));
    let mut runs: Vec<Vec<ChurnRun>> = Vec::new();
    for round in 0..bench.options.pairs {
        restore(client, pods).await?;
        let order: Vec<usize> = rotated(round, CHURN_VARIANTS.len()).collect();
        // One after the other: a sync's peak does not meet the other's.
        let mut workers: Vec<(usize, TalkingWorker)> = Vec::new();
        for &i in &order {
            let variant = CHURN_VARIANTS[i];
            let mode = variant.churn_mode;
            let program = variant.program(bench);
            let mut worker = spawn_worker(bench, &program, &ChurnVariant::args(mode))?;
            wait_for_sync(&mut worker.lines, mode).await?;
            workers.push((i, worker));
        }
        for (_, worker) in &mut workers {
            let go = format!("go {live} {LABEL} {CHURNED}\n");
            worker.stdin.write_all(go.as_bytes()).await?;
            worker.stdin.flush().await?;
        }
        let seconds = churn(client, pods).await?;
        eprintln!(
            "[{label}] round {}: {} Pods deleted, {live} relabelled in {seconds:.1} s",
            round + 1,
            pods - live
        );
        let mut churned: Vec<Option<ChurnSample>> = vec![None; CHURN_VARIANTS.len()];
        for (i, worker) in workers {
            let mode = CHURN_VARIANTS[i].churn_mode;
            let WorkerReport::Churn(sample) =
                final_report(worker.lines, worker.child, mode).await?
            else {
                bail!("the {mode} worker reported something else");
            };
            if sample.synced.objects != pods || sample.objects != live {
                bail!(
                    "{mode}: synced {} and kept {} Pods, expected {pods} and {live}",
                    sample.synced.objects,
                    sample.objects
                );
            }
            churned[i] = Some(sample);
        }
        let mut round_runs: Vec<Option<ChurnRun>> = vec![None; CHURN_VARIANTS.len()];
        for &i in &order {
            let variant = CHURN_VARIANTS[i];
            let mode = VARIANTS[variant.variant].side.mode;
            let args = ChurnVariant::args(mode);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let report = run_worker(&variant.program(bench), bench.kubeconfig, &args).await?;
            let WorkerReport::Sync(fresh) = report else {
                bail!("the {mode} worker reported something else");
            };
            if fresh.objects != live {
                bail!("{mode} synced {} Pods, expected {live}", fresh.objects);
            }
            let churned = churned[i].take().context("a churn worker did not report")?;
            log_run(&label, round, variant.name, &churned, &fresh);
            round_runs[i] = Some(ChurnRun {
                variant: variant.name,
                pods,
                churned,
                fresh,
            });
        }
        runs.push(round_runs.into_iter().flatten().collect());
    }
    let figures: Vec<ChurnFigures> = (0..CHURN_VARIANTS.len())
        .map(|i| churn_figures(runs.iter().filter_map(|round| round.get(i))))
        .collect();
    rows.extend(churn_rows(&label, &figures));
    samples.projection_churn.extend(runs.into_iter().flatten());
    Ok(churn_table(&label, live, &figures))
}

/// Puts `bench-pods-churn` back as a round starts from: the namespace, and exactly
/// Pods `0..pods` as [`objects::pod`] makes them (the missing ones created, the
/// relabelled ones labelled back, any other deleted). On a fresh server that creates
/// everything; on one a round has churned, it undoes the churn; when nothing changed
/// it is one list. Safe to repeat, and after a run that stopped halfway.
pub(in crate::driver) async fn restore(client: &kube::Client, pods: usize) -> anyhow::Result<()> {
    let started = Instant::now();
    if Api::<Namespace>::all(client.clone())
        .get_opt(CHURN_NAMESPACE)
        .await?
        .is_none()
    {
        create_namespace(client, CHURN_NAMESPACE).await?;
    }
    let api = Api::<Pod>::namespaced(client.clone(), CHURN_NAMESPACE);
    let mut present = present_labels(&api).await?;
    let mut missing = Vec::new();
    let mut relabel = Vec::new();
    for i in 0..pods {
        match present.remove(&objects::pod_name(i)) {
            None => missing.push(i),
            Some(labels) => {
                let want = objects::pod(i).metadata.labels.unwrap_or_default();
                if labels != want {
                    relabel.push((i, want));
                }
            }
        }
    }
    let (created, relabelled, deleted) = (missing.len(), relabel.len(), present.len());
    let api = &api;
    let mut changes: Vec<BoxFuture<'_, kube::Result<()>>> = Vec::new();
    changes.extend(
        missing
            .into_iter()
            .map(|i| async move { create_pod(api, i).await.map(drop) }.boxed()),
    );
    changes.extend(relabel.into_iter().map(|(i, labels)| {
        async move {
            let body = serde_json::json!({ "metadata": { "labels": labels } });
            let name = objects::pod_name(i);
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&body))
                .await
                .map(drop)
        }
        .boxed()
    }));
    changes.extend(
        present
            .into_keys()
            .map(|name| async move { delete_now(api, &name).await }.boxed()),
    );
    futures::stream::iter(changes)
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_for_each(|()| futures::future::ready(Ok(())))
        .await
        .with_context(|| format!("restoring {CHURN_NAMESPACE}"))?;
    eprintln!(
        "[bench] {CHURN_NAMESPACE}: {pods} Pods ({created} created, {relabelled} labelled \
         back, {deleted} others deleted) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The labels of every Pod `api` holds, by name, listed in pages of metadata only.
async fn present_labels(
    api: &Api<Pod>,
) -> anyhow::Result<HashMap<String, std::collections::BTreeMap<String, String>>> {
    let mut labels = HashMap::new();
    let mut params = ListParams::default().limit(5_000);
    loop {
        let page = api.list_metadata(&params).await?;
        for pod in page.items {
            let name = pod.metadata.name.unwrap_or_default();
            labels.insert(name, pod.metadata.labels.unwrap_or_default());
        }
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(labels),
        }
    }
}

/// Deletes Pod `name` at once: a Pod on a node waits for its kubelet by default, and
/// this server has none.
async fn delete_now(api: &Api<Pod>, name: &str) -> kube::Result<()> {
    api.delete(name, &DeleteParams::default().grace_period(0))
        .await
        .map(drop)
}

/// The churn: deletes every Pod that does not [`survive`](survives) (every other one,
/// spread over the cache as deletes in a cluster are: the hard case for an allocator,
/// whose freed chunks sit between live ones), then relabels the survivors. Returns
/// its seconds.
async fn churn(client: &kube::Client, pods: usize) -> anyhow::Result<f64> {
    let api = Api::<Pod>::namespaced(client.clone(), CHURN_NAMESPACE);
    let started = Instant::now();
    futures::stream::iter((0..pods).filter(|&i| !survives(i)))
        .map(|i| {
            let api = &api;
            async move { delete_now(api, &objects::pod_name(i)).await }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_for_each(|()| futures::future::ready(Ok(())))
        .await
        .context("deleting half the Pods")?;
    let body = serde_json::json!({ "metadata": { "labels": { LABEL: CHURNED } } });
    futures::stream::iter((0..pods).filter(|&i| survives(i)))
        .map(|i| {
            let (api, body) = (&api, &body);
            async move {
                let name = objects::pod_name(i);
                api.patch(&name, &PatchParams::default(), &Patch::Merge(body))
                    .await
                    .map(drop)
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_for_each(|()| futures::future::ready(Ok(())))
        .await
        .context("relabelling the other half")?;
    Ok(started.elapsed().as_secs_f64())
}

fn log_run(label: &str, round: usize, name: &str, churned: &ChurnSample, fresh: &SyncSample) {
    let above = |kib: u64, base: u64| kib.saturating_sub(base) as f64 / MIB;
    let synced = &churned.synced;
    eprintln!(
        "[{label}] round {}: {name}: RSS above start {:.1} MiB after syncing {}, {:.1} after \
         the churn (seen in {:.2} s, CPU {:.2} s); a fresh sync of the {}: {:.1} MiB",
        round + 1,
        above(synced.rss_after_sync_kib, synced.baseline_rss_kib),
        synced.objects,
        above(churned.rss_after_churn_kib, synced.baseline_rss_kib),
        churned.seconds,
        churned.cpu_seconds,
        fresh.objects,
        above(fresh.rss_after_sync_kib, fresh.baseline_rss_kib),
    );
}

/// Medians of one variant's churn runs, MiB.
#[derive(Debug, Clone, Copy)]
struct ChurnFigures {
    name: &'static str,
    /// RSS above start after syncing every Pod.
    synced: f64,
    /// RSS above start after the churn.
    churned: f64,
    /// A fresh sync of the survivors: RSS above its start.
    fresh: f64,
    /// Our estimates: after syncing every Pod, after the churn, fresh.
    estimates: Option<[f64; 3]>,
    /// Seconds from the go-ahead until the worker's cache showed the churn.
    seconds: f64,
}

fn churn_figures<'a>(runs: impl Iterator<Item = &'a ChurnRun> + Clone) -> ChurnFigures {
    let m = |f: &dyn Fn(&ChurnRun) -> f64| median(runs.clone().map(f));
    let above = |kib: u64, base: u64| kib.saturating_sub(base) as f64 / MIB;
    let mib = |bytes: Option<u64>| bytes.map(|b| b as f64 / (MIB * 1024.0));
    let estimates = runs.clone().all(|r| {
        [
            r.churned.synced.estimated_cache_bytes,
            r.churned.estimated_cache_bytes,
            r.fresh.estimated_cache_bytes,
        ]
        .iter()
        .all(Option::is_some)
    });
    ChurnFigures {
        name: runs.clone().next().map_or("", |r| r.variant),
        synced: m(&|r| {
            above(
                r.churned.synced.rss_after_sync_kib,
                r.churned.synced.baseline_rss_kib,
            )
        }),
        churned: m(&|r| {
            above(
                r.churned.rss_after_churn_kib,
                r.churned.synced.baseline_rss_kib,
            )
        }),
        fresh: m(&|r| above(r.fresh.rss_after_sync_kib, r.fresh.baseline_rss_kib)),
        estimates: estimates.then(|| {
            [
                m(&|r| mib(r.churned.synced.estimated_cache_bytes).unwrap_or(0.0)),
                m(&|r| mib(r.churned.estimated_cache_bytes).unwrap_or(0.0)),
                m(&|r| mib(r.fresh.estimated_cache_bytes).unwrap_or(0.0)),
            ]
        }),
        seconds: m(&|r| r.churned.seconds),
    }
}

/// Per variant: RSS above start after the churn / a fresh sync's (the target), the
/// estimates likewise, and the estimate after the churn / the RSS then.
fn churn_rows(label: &str, figures: &[ChurnFigures]) -> Vec<Row> {
    let row = |scenario: String, metric: &str, ours: f64, theirs: f64, target| Row {
        scenario,
        metric: metric.to_owned(),
        ours,
        theirs: Some(theirs),
        target,
        client_go: None,
        controller_runtime: None,
    };
    let mut rows = Vec::new();
    for f in figures {
        let scenario = format!(
            "{label}: {}, after the churn / a fresh sync of the survivors",
            f.name
        );
        rows.push(row(
            scenario.clone(),
            "RSS above start (MiB)",
            f.churned,
            f.fresh,
            Some(Target::RatioAtMost(1.3)),
        ));
        if let Some([_, churned, fresh]) = f.estimates {
            rows.push(row(
                scenario,
                "cache_size() estimate (MiB)",
                churned,
                fresh,
                None,
            ));
            rows.push(row(
                format!(
                    "{label}: {}, after the churn, cache_size() estimate / measured",
                    f.name
                ),
                "MiB (estimate; RSS above start)",
                churned,
                f.churned,
                Some(Target::RatioBetween(0.75, 1.25)),
            ));
        }
    }
    rows
}

/// The churn's medians, as a markdown table.
fn churn_table(label: &str, live: usize, figures: &[ChurnFigures]) -> String {
    let mut out = format!(
        "\n{label}: half deleted, {} relabelled (medians; RSS above start, MiB; glibc's \
         malloc, which may keep freed chunks resident, unless the variant says mimalloc)\n\n| variant | after syncing all | \
         after the churn | fresh sync of the survivors | churned / fresh | estimate: all, \
         churned, fresh | churn seen in (s) |\n|---|---:|---:|---:|---:|---:|---:|\n",
        thousands(live)
    );
    for f in figures {
        let estimates = f.estimates.map_or_else(
            || "-".to_owned(),
            |[all, churned, fresh]| format!("{all:.1}, {churned:.1}, {fresh:.1}"),
        );
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {:.1} | {:.2}x | {estimates} | {:.2} |",
            f.name,
            f.synced,
            f.churned,
            f.fresh,
            f.churned / f.fresh.max(f64::MIN_POSITIVE),
            f.seconds,
        );
    }
    out
}
