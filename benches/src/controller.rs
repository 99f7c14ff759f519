//! Scenario 7, the controller: its objects and its worker.
//!
//! `N` `Parent`s (a CRD with a status subresource) each own one ConfigMap child
//! (`{parent}-child`, controller owner reference) whose `data.value` the parent's
//! `status.observed` must show. A reconcile reads the child from the cache and patches
//! the parent's status when it differs, as most controllers do. Ours is the
//! `Controller` builder with `owns::<ConfigMap>()`; kube-runtime's is its `Controller`
//! with `owns_stream` fed by a reflector over the children, so that the reconcile reads
//! the child from a cache there too (its stable `owns` keeps no store of children to
//! read), with its defaults or tuned as its docs say (`kube-runtime-tuned`: streaming
//! lists and `managedFields` cleared, on both watchers). Each runs [`WORKERS`]
//! reconciles at once. controller-runtime's is the same controller in Go
//! (`benches/controller-runtime`), run by the driver as a peer binary.
//!
//! ```text
//! bench-worker controller <ours|kube-runtime|kube-runtime-tuned> <namespace> <objects> <updates> <tag>
//! ```
//!
//! The worker wants `status.observed == "{tag}:{value}"`, so every run starts with
//! every parent to reconcile (the tag is new). It measures until every parent is
//! patched, prints `synced`, waits for `go` on stdin, then measures until `updates`
//! more patches (the driver changes that many children, each once, stamping the
//! change's wall-clock time in `data.stamp`): each reconcile that first sees a child's
//! new value records the time since its stamp.
//!
//! Scenarios 12 ([`crate::backlog`]) and 13 ([`crate::footprint`]) run the same two
//! controllers (`spawn_side`, which also runs ours without its priority queue) with
//! observers of their own (`Observer`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use futures::StreamExt;
use informer::controller::Action;
use informer::controller::{Context, Controller, backoff};
use informer::factory::{FactoryConfig, SharedInformerFactory};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams};
use kube::{Api, CustomResource, ResourceExt as _};
use kube_runtime::reflector::{self, ObjectRef, Store};
use kube_runtime::{WatchStreamExt as _, watcher};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::handshake::{read_driver_line, say_synced};
use crate::measure::{Mark, memory};
use crate::report::{ControllerSample, Implementation, median};

/// Reconciles run at once on each side.
pub const WORKERS: usize = 16;

/// A parent: its status shows what its child holds.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "bench.informer.dev",
    version = "v1",
    kind = "Parent",
    namespaced,
    status = "ParentStatus"
)]
pub struct ParentSpec {
    /// The child's name.
    pub child: String,
}

/// What the controller last saw of the child.
#[derive(Serialize, Deserialize, Clone, Debug, Default, JsonSchema)]
pub struct ParentStatus {
    /// `{tag}:{value}` of the child's value.
    pub observed: Option<String>,
}

/// The name of parent `i`.
pub fn parent_name(i: usize) -> String {
    format!("parent-{i}")
}

/// The name of parent `i`'s child.
pub fn child_name(i: usize) -> String {
    format!("parent-{i}-child")
}

/// Wall-clock nanoseconds since the epoch, what `data.stamp` holds.
pub fn stamp_now() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos()
}

/// What a scenario's reconciles report to: which status a parent should have, and
/// every status patch made. Scenario 7 ([`Progress`]), 12 ([`crate::backlog`]) and 13
/// ([`crate::footprint`]) run the same two controllers with their own observer.
pub(crate) trait Observer: Send + Sync + 'static {
    /// Called by every reconcile that found the parent's child: the status `parent`
    /// should be given when it needs a patch (recording whatever the scenario times),
    /// `None` when it is current.
    fn wanted(&self, tag: &str, parent: &Parent, child: &ConfigMap) -> Option<String>;

    /// A reconcile patched `parent`'s status to `observed`.
    fn patched(&self, parent: &str, observed: &str);
}

/// The status `parent` should have given `child` (`{tag}:{value}`) when it differs
/// from the one it has, with the child's stamp (see [`stamp_now`]) if it has one;
/// `None` when the status is current or the child has no value.
pub(crate) fn status_wanted(
    tag: &str,
    parent: &Parent,
    child: &ConfigMap,
) -> Option<(String, Option<u128>)> {
    let data = child.data.as_ref()?;
    let wanted = format!("{tag}:{}", data.get("value")?);
    let observed = parent.status.as_ref().and_then(|s| s.observed.as_deref());
    if observed == Some(wanted.as_str()) {
        return None;
    }
    let stamp = data.get("stamp").and_then(|s| s.parse::<u128>().ok());
    Some((wanted, stamp))
}

/// Milliseconds from `stamp` (wall-clock nanoseconds, [`stamp_now`]) to now.
pub(crate) fn millis_since(stamp: u128) -> f64 {
    stamp_now().saturating_sub(stamp) as f64 / 1e6
}

/// Progress shared by the reconciles and the measurement.
#[derive(Default)]
struct Progress {
    patches: AtomicUsize,
    reconciles: AtomicUsize,
    /// Milliseconds from a child's stamped change to the reconcile that saw it.
    latencies: Mutex<Vec<f64>>,
}

impl Observer for Progress {
    /// Records the latency of the child's change when its parent needs a patch.
    fn wanted(&self, tag: &str, parent: &Parent, child: &ConfigMap) -> Option<String> {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        let (wanted, stamp) = status_wanted(tag, parent, child)?;
        if let Some(stamp) = stamp {
            let millis = millis_since(stamp);
            self.latencies.lock().expect("not poisoned").push(millis);
        }
        Some(wanted)
    }

    fn patched(&self, _parent: &str, _observed: &str) {
        self.patches.fetch_add(1, Ordering::Relaxed);
    }
}

fn status_patch(observed: &str) -> Patch<serde_json::Value> {
    Patch::Merge(serde_json::json!({ "status": { "observed": observed } }))
}

/// Starts `implementation`'s controller of the parents of `namespace` in a task of
/// its own: ours (with priorities, the default), ours without (`ours-fifo`,
/// `.priority_queue(false)`) or kube-runtime's. Its reconciles want
/// `status.observed == "{tag}:{value}"` and report to `observer`.
pub(crate) fn spawn_side<O: Observer>(
    implementation: Implementation,
    client: kube::Client,
    namespace: &str,
    tag: &str,
    observer: Arc<O>,
) -> anyhow::Result<()> {
    let (namespace, tag) = (namespace.to_owned(), tag.to_owned());
    match implementation {
        Implementation::Ours => {
            tokio::spawn(ours(client, namespace, tag, observer, true));
        }
        Implementation::OursFifo => {
            tokio::spawn(ours(client, namespace, tag, observer, false));
        }
        Implementation::KubeRuntime => {
            tokio::spawn(kube_runtime(client, namespace, tag, observer, false));
        }
        Implementation::KubeRuntimeTuned => {
            tokio::spawn(kube_runtime(client, namespace, tag, observer, true));
        }
        other => bail!("the controller scenarios have no {other:?}"),
    }
    Ok(())
}

/// The worker's mode `controller` (see the [module docs](self)).
pub async fn run(
    implementation: Implementation,
    namespace: &str,
    objects: usize,
    updates: usize,
    tag: &str,
) -> anyhow::Result<ControllerSample> {
    let client = kube::Client::try_default().await?;
    let progress = Arc::new(Progress::default());
    let baseline = memory();
    let mark = Mark::now();
    spawn_side(implementation, client, namespace, tag, progress.clone())?;
    patched(&progress, objects).await;
    let converge_seconds = mark.wall_seconds();
    let converge_cpu_seconds = mark.cpu_seconds();
    let converge_reconciles = progress.reconciles.load(Ordering::Relaxed);
    progress.latencies.lock().expect("not poisoned").clear();
    say_synced()?;
    let line = read_driver_line().await?;
    if line.trim() != "go" {
        bail!("expected `go`, got {line:?}");
    }
    let mark = Mark::now();
    patched(&progress, objects + updates).await;
    let update_seconds = mark.wall_seconds();
    let update_cpu_seconds = mark.cpu_seconds();
    let update_reconciles = progress.reconciles.load(Ordering::Relaxed) - converge_reconciles;
    let latencies = std::mem::take(&mut *progress.latencies.lock().expect("not poisoned"));
    let after = memory();
    Ok(ControllerSample {
        implementation,
        objects,
        updates,
        workers: WORKERS,
        converge_seconds,
        converge_cpu_seconds,
        converge_reconciles,
        update_seconds,
        update_cpu_seconds,
        update_reconciles,
        latency_p50_ms: median(latencies.iter().copied()),
        latency_p99_ms: percentile(&latencies, 0.99),
        latencies: latencies.len(),
        baseline_rss_kib: baseline.rss_kib,
        peak_rss_kib: after.peak_kib,
    })
}

/// Waits until `count` status patches have been made.
async fn patched(progress: &Progress, count: usize) {
    while progress.patches.load(Ordering::Relaxed) < count {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The `q` quantile of `values` (nearest rank); NaN when empty.
pub(crate) fn percentile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Ours: the `Controller` builder on a factory scoped to the namespace, with the
/// priority queue (the default) or without it (client-go's FIFO).
async fn ours<O: Observer>(
    client: kube::Client,
    namespace: String,
    tag: String,
    observer: Arc<O>,
    priority_queue: bool,
) {
    let factory = SharedInformerFactory::new(client, FactoryConfig::default().namespace(namespace));
    let reconcile = move |parent: Arc<Parent>, ctx: Context<Parent>| {
        let (tag, observer) = (tag.clone(), observer.clone());
        async move {
            let Some(child) = ctx.owned::<ConfigMap>(&parent).into_iter().next() else {
                return Ok(Action::Done); // the child's arrival brings the parent back
            };
            let Some(wanted) = observer.wanted(&tag, &parent, &child) else {
                return Ok(Action::Done);
            };
            let name = parent.name_any();
            ctx.api::<Parent>()
                .patch_status(&name, &PatchParams::default(), &status_patch(&wanted))
                .await?;
            observer.patched(&name, &wanted);
            Ok::<_, kube::Error>(Action::Done)
        }
    };
    let run = Controller::<Parent>::new(&factory)
        .owns::<ConfigMap>()
        .workers(WORKERS)
        .priority_queue(priority_queue)
        .run(reconcile, backoff, std::future::pending())
        .await;
    if let Err(error) = run {
        eprintln!("the controller failed: {error}");
    }
}

/// What kube-runtime's reconcile gets besides the parent.
struct Shared<O> {
    parents: Api<Parent>,
    children: Store<ConfigMap>,
    tag: String,
    observer: Arc<O>,
}

/// kube-runtime's `Controller`, its children from a reflector store through
/// `owns_stream`; `tuned`, as its docs advise: every watcher with streaming lists and
/// `managedFields` cleared by `.modify()` before its store (the parents' through
/// `Controller::for_stream`, which the streams interface needs for that).
async fn kube_runtime<O: Observer>(
    client: kube::Client,
    namespace: String,
    tag: String,
    observer: Arc<O>,
    tuned: bool,
) {
    let parents = Api::<Parent>::namespaced(client.clone(), &namespace);
    let children_api = Api::<ConfigMap>::namespaced(client, &namespace);
    let (children, writer) = reflector::store::<ConfigMap>();
    let child_events = if tuned {
        let watcher = watcher::watcher(children_api, crate::worker::tuned_watcher_config())
            .modify(|child| child.managed_fields_mut().clear());
        reflector::reflector(writer, watcher)
            .touched_objects()
            .boxed()
    } else {
        let watcher = watcher::watcher(children_api, watcher::Config::default());
        reflector::reflector(writer, watcher)
            .touched_objects()
            .boxed()
    };
    let shared = Arc::new(Shared {
        parents: parents.clone(),
        children,
        tag,
        observer,
    });
    let controller = if tuned {
        let (store, writer) = reflector::store::<Parent>();
        let watcher = watcher::watcher(parents, crate::worker::tuned_watcher_config())
            .modify(|parent| parent.managed_fields_mut().clear());
        let parent_events = reflector::reflector(writer, watcher).applied_objects();
        kube_runtime::Controller::for_stream(parent_events, store)
    } else {
        kube_runtime::Controller::new(parents, watcher::Config::default())
    };
    controller
        .owns_stream(child_events)
        .with_config(kube_runtime::controller::Config::default().concurrency(WORKERS as u16))
        .run(
            reconcile_kube_runtime,
            |_, _, _| kube_runtime::controller::Action::requeue(Duration::from_millis(100)),
            shared,
        )
        .for_each(|_| futures::future::ready(()))
        .await;
}

async fn reconcile_kube_runtime<O: Observer>(
    parent: Arc<Parent>,
    shared: Arc<Shared<O>>,
) -> Result<kube_runtime::controller::Action, kube::Error> {
    let done = kube_runtime::controller::Action::await_change();
    let namespace = parent.namespace().unwrap_or_default();
    let Some(child) = shared
        .children
        .get(&ObjectRef::new(&parent.spec.child).within(&namespace))
    else {
        return Ok(done); // the child's arrival brings the parent back
    };
    let Some(wanted) = shared.observer.wanted(&shared.tag, &parent, &child) else {
        return Ok(done);
    };
    let name = parent.name_any();
    shared
        .parents
        .patch_status(&name, &PatchParams::default(), &status_patch(&wanted))
        .await?;
    shared.observer.patched(&name, &wanted);
    Ok(done)
}

/// Parses the worker's arguments after the mode.
pub fn parse_args(args: &[String]) -> anyhow::Result<(Implementation, &str, usize, usize, &str)> {
    let arg = |i: usize| -> anyhow::Result<&str> {
        args.get(i)
            .map(String::as_str)
            .with_context(|| format!("controller: missing argument {i}"))
    };
    let implementation = Implementation::parse(arg(1)?).context("unknown implementation")?;
    Ok((
        implementation,
        arg(2)?,
        arg(3)?.parse()?,
        arg(4)?.parse()?,
        arg(5)?,
    ))
}
