//! Scenarios 4 and 5, the worker modes that need no API server: the same queries on
//! our cache and kube-runtime's, filled from one list; and the notification pipeline,
//! from a synthetic lister-watcher through the informer's queue to its handlers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::StreamExt;
use informer::shared_informer::{
    InformerConfig, QueueKind, ResourceEventHandler, SharedIndexInformer, wait_for_cache_sync,
};
use informer::store::{Indexers, Selector};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_runtime::reflector::{self, ObjectRef};
use kube_runtime::watcher;

use crate::measure::{Mark, memory};
use crate::objects;
use crate::report::{PipelineSample, QueryResult, QuerySample, median};
use crate::synthetic::SyntheticListerWatcher;

/// Namespaces the query scenario spreads its objects over.
const QUERY_NAMESPACES: usize = 10;

/// Calls `op` with 0, 1, 2... for about `budget`; returns calls per second and what
/// the last call returned.
fn rate(budget: Duration, mut op: impl FnMut(usize) -> usize) -> (f64, usize) {
    let started = Instant::now();
    let mut calls = 0usize;
    let mut batch = 1usize;
    let mut last = 0;
    loop {
        for _ in 0..batch {
            last = std::hint::black_box(op(calls));
            calls += 1;
        }
        let elapsed = started.elapsed();
        if elapsed >= budget {
            return (calls as f64 / elapsed.as_secs_f64(), last);
        }
        batch = (batch * 2).min(1 << 16);
    }
}

/// Scenario 4: the same queries on both caches, in alternating rounds.
pub(crate) async fn queries(count: usize) -> anyhow::Result<QuerySample> {
    const ROUNDS: usize = 5;
    const BUDGET: Duration = Duration::from_millis(150);
    let namespaces: Vec<String> = (0..QUERY_NAMESPACES).map(|n| format!("ns-{n}")).collect();
    let build = |i: usize| {
        let mut cm = objects::config_map(i, 1024, Some(&namespaces[i % QUERY_NAMESPACES]));
        cm.metadata.resource_version = Some("1".to_owned());
        cm
    };
    let list: Vec<ConfigMap> = (0..count).map(build).collect();

    // Ours: an informer with the namespace index, a label index on `app` and a custom
    // index on `owner`.
    let options = InformerConfig::default().indexers(
        Indexers::new()
            .with_namespace_index()
            .with_label_index("app")
            .with_fn("owner", |cm: &ConfigMap| {
                cm.data.as_ref().and_then(|d| d.get("owner")).cloned()
            }),
    );
    let informer = SharedIndexInformer::with_config(
        SyntheticListerWatcher::new(list.clone(), Vec::new(), 1),
        options,
    )?;
    tokio::spawn({
        let informer = informer.clone();
        async move { informer.run(std::future::pending()).await }
    });
    // Ours again without the label index, to show what a scan of ours costs.
    let unindexed = SharedIndexInformer::with_config(
        SyntheticListerWatcher::new(list.clone(), Vec::new(), 1),
        InformerConfig::default(),
    )?;
    tokio::spawn({
        let informer = unindexed.clone();
        async move { informer.run(std::future::pending()).await }
    });
    wait_for_cache_sync(&[&informer, &unindexed]).await;

    // kube-runtime: its reflector fed the same objects as one initial list.
    let (store, writer) = reflector::store::<ConfigMap>();
    let events = std::iter::once(watcher::Event::Init)
        .chain(list.into_iter().map(watcher::Event::InitApply))
        .chain(std::iter::once(watcher::Event::InitDone))
        .map(Ok::<_, watcher::Error>);
    reflector::reflector(writer, futures::stream::iter(events))
        .for_each(|_| futures::future::ready(()))
        .await;
    store.wait_until_ready().await?;
    if informer.indexer().len() != count || store.len() != count {
        bail!(
            "caches hold {} and {} objects, expected {count}",
            informer.indexer().len(),
            store.len()
        );
    }

    let names: Vec<String> = (0..count).map(objects::name).collect();
    let lister = informer.lister();
    let scanning_lister = unindexed.lister();
    let indexer = informer.indexer();
    let ns_listers: Vec<_> = namespaces.iter().map(|ns| lister.namespaced(ns)).collect();
    let apps: Vec<String> = (0..objects::APPS).map(objects::app).collect();
    let our_selectors: Vec<Selector> = apps
        .iter()
        .map(|app| format!("app={app}").parse())
        .collect::<Result<_, _>>()?;
    let their_selectors: Vec<kube::core::Selector> = apps
        .iter()
        .map(|app| kube::core::Expression::Equal("app".into(), app.clone()).into())
        .collect();
    let owners: Vec<String> = (0..objects::OWNERS).map(objects::owner).collect();
    // Walk the keys in a scattered order, not slot order.
    let pick = |call: usize, n: usize| call.wrapping_mul(7919) % n;

    // kube-runtime's side of both label rows (it has no label index to leave out).
    let theirs_by_label = |call: usize| {
        store
            .state_filter_selector(&their_selectors[pick(call, objects::APPS)])
            .len()
    };

    type Op<'a> = Box<dyn FnMut(usize) -> usize + 'a>;
    let mut cases: Vec<(String, Op<'_>, Op<'_>)> = vec![
        (
            "get by key".to_owned(),
            Box::new(|call| {
                let i = pick(call, count);
                ns_listers[i % QUERY_NAMESPACES]
                    .get(&names[i])
                    .map_or(0, |_| 1)
            }),
            Box::new(|call| {
                let i = pick(call, count);
                let key = ObjectRef::new(&names[i]).within(&namespaces[i % QUERY_NAMESPACES]);
                store.get(&key).map_or(0, |_| 1)
            }),
        ),
        (
            format!("list a namespace ({} objects)", count / QUERY_NAMESPACES),
            Box::new(|call| ns_listers[call % QUERY_NAMESPACES].list_all().len()),
            Box::new(|call| {
                let ns = namespaces[call % QUERY_NAMESPACES].as_str();
                store
                    .state_filter(|cm| cm.metadata.namespace.as_deref() == Some(ns))
                    .len()
            }),
        ),
        (
            format!(
                "list by label selector app=.. ({} objects)",
                count / objects::APPS
            ),
            Box::new(|call| lister.list(&our_selectors[pick(call, objects::APPS)]).len()),
            Box::new(theirs_by_label),
        ),
        (
            format!(
                "scan by label selector app=.. ({} objects), ours without a label index",
                count / objects::APPS
            ),
            Box::new(|call| {
                scanning_lister
                    .list(&our_selectors[pick(call, objects::APPS)])
                    .len()
            }),
            Box::new(theirs_by_label),
        ),
        (
            format!(
                "list by secondary index owner (data field, {} objects)",
                count / objects::OWNERS
            ),
            Box::new(|call| {
                indexer
                    .by_index("owner", &owners[pick(call, objects::OWNERS)])
                    .map_or(0, |found| found.len())
            }),
            Box::new(|call| {
                let owner = owners[pick(call, objects::OWNERS)].as_str();
                store
                    .state_filter(|cm| {
                        cm.data
                            .as_ref()
                            .and_then(|d| d.get("owner"))
                            .is_some_and(|o| o == owner)
                    })
                    .len()
            }),
        ),
    ];

    let mut queries = Vec::new();
    for (name, ours, theirs) in &mut cases {
        let (mut our_rates, mut their_rates) = (Vec::new(), Vec::new());
        let (mut our_results, mut their_results) = (0, 0);
        for _ in 0..ROUNDS {
            let (r, n) = rate(BUDGET, &mut *ours);
            our_rates.push(r);
            our_results = n;
            let (r, n) = rate(BUDGET, &mut *theirs);
            their_rates.push(r);
            their_results = n;
        }
        queries.push(QueryResult {
            name: name.clone(),
            ours_per_second: median(our_rates),
            theirs_per_second: median(their_rates),
            ours_results: our_results,
            theirs_results: their_results,
        });
    }
    drop(cases);
    Ok(QuerySample {
        objects: count,
        queries,
    })
}

/// Counts notifications and reports the moment it has seen `target` of them.
struct Counter {
    seen: usize,
    target: usize,
    done: tokio::sync::mpsc::UnboundedSender<Instant>,
}

impl Counter {
    fn count(&mut self) {
        self.seen += 1;
        if self.seen == self.target {
            let _ = self.done.send(Instant::now());
        }
    }
}

impl ResourceEventHandler<ConfigMap> for Counter {
    fn on_add(&mut self, _object: &Arc<ConfigMap>, _is_initial_list: bool) {
        self.count();
    }

    fn on_update(&mut self, _old: &Arc<ConfigMap>, _new: &Arc<ConfigMap>) {
        self.count();
    }
}

/// The informer queue a pipeline run uses, by its name on the command line.
pub(crate) fn queue_kind(name: &str) -> anyhow::Result<QueueKind> {
    match name {
        "in-order" => Ok(QueueKind::InOrder),
        "delta-fifo" => Ok(QueueKind::DeltaFifo),
        other => bail!("unknown queue {other:?} (in-order or delta-fifo)"),
    }
}

/// Scenario 5: `objects` listed, then `events` updates, through the informer (with
/// `queue`) to `handlers` handlers.
pub(crate) async fn pipeline(
    handlers: usize,
    count: usize,
    events: usize,
    queue: QueueKind,
) -> anyhow::Result<PipelineSample> {
    /// Events handed out before the synthetic watch returns `Pending` once (a busy
    /// watch connection delivers many events per read).
    const YIELD_EVERY: usize = 512;
    let object = |i: usize, version: usize| {
        let mut cm = objects::config_map(i, 0, Some("bench"));
        cm.metadata.resource_version = Some(version.to_string());
        cm
    };
    let list: Vec<ConfigMap> = (0..count).map(|i| object(i, 1)).collect();
    let updates: Vec<ConfigMap> = (0..events).map(|e| object(e % count, e + 2)).collect();
    let synthetic = SyntheticListerWatcher::new(list, updates, YIELD_EVERY);
    let listed_at = synthetic.listed_at();
    let informer =
        SharedIndexInformer::with_config(synthetic, InformerConfig::default().queue(queue))?;
    let (done, mut finished) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..handlers {
        informer.add_event_handler(Counter {
            seen: 0,
            target: count + events,
            done: done.clone(),
        })?;
    }
    drop(done);
    let mark = Mark::now();
    tokio::spawn({
        let informer = informer.clone();
        async move { informer.run(std::future::pending()).await }
    });
    let mut last = None;
    for _ in 0..handlers {
        let at = finished.recv().await.context("a handler stopped early")?;
        last = last.max(Some(at));
    }
    let cpu_seconds = mark.cpu_seconds();
    let started = *listed_at.get().context("the informer never listed")?;
    let seconds = last
        .context("no handler")?
        .duration_since(started)
        .as_secs_f64();
    let deltas = count + events;
    Ok(PipelineSample {
        queue: format!("{queue:?}"),
        handlers,
        deltas,
        seconds,
        per_second: deltas as f64 / seconds,
        cpu_seconds,
        peak_rss_kib: memory().peak_kib,
    })
}
