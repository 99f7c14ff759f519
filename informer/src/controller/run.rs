//! The run: what [`Controller::run`](super::Controller::run) does with what the builder
//! gathered (a [`Plan`]): connect the handlers, wait for the shard and the caches,
//! assemble the recorder and the workers, and hand them to the replication mode.

use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::Notify;

use super::context::{Context, Shared, primary_name};
use super::predicate::Predicate;
use super::primaries::Primaries;
use super::read_your_writes::ReadYourWrites;
use super::reasons::Reasons;
use super::registry::Registry;
use super::replication::{Fence, Replication};
use super::tombstones::SharedTombstones;
use super::wiring::{Relation, Unwires, Wire, Wiring, mapping_wire};
use super::worker::{Cleanup, Worker};
use super::{ControllerError, Retry};
use crate::events::{Recorder, Reporter};
use crate::factory::SharedInformerFactory;
use crate::key::ObjectKey;
use crate::scope::FactoryScope;
use crate::shared_informer::SharedIndexInformer;
use crate::workqueue::{
    Action, QueueConfig, Runner, RunnerConfig, WorkQueue, default_controller_rate_limiter,
};

/// How long `run` waits at most for its recorder to write pending events on shutdown.
const RECORDER_FLUSH: Duration = Duration::from_secs(5);

/// Everything the builder gathered: the run's input.
pub(crate) struct Plan<K> {
    pub(crate) factory: SharedInformerFactory,
    pub(crate) primary: SharedIndexInformer<K>,
    pub(crate) queue: Option<WorkQueue<ObjectKey>>,
    pub(crate) registry: Registry,
    pub(crate) wires: Vec<Wire>,
    pub(crate) finalizer: Option<String>,
    pub(crate) cleanup: Option<Cleanup<K>>,
    pub(crate) name: String,
    pub(crate) runner: RunnerConfig,
    pub(crate) read_your_writes_timeout: Duration,
    pub(crate) recorder: Option<Recorder>,
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<crate::metrics::Metrics>,
    pub(crate) replication: Replication,
    /// Which updates of the primary queue its key (`None`: every one).
    pub(crate) primary_predicate: Option<Predicate<K>>,
    /// Queue backlog (lists, resyncs, take-overs) behind real changes.
    pub(crate) priority_queue: bool,
    /// The fleet cluster the controller works, if it is one of a fleet's.
    pub(crate) cluster: Option<Arc<str>>,
}

impl<K> fmt::Debug for Plan<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("registry", &self.registry)
            .field("finalizer", &self.finalizer)
            .field("runner", &self.runner)
            .field("read_your_writes_timeout", &self.read_your_writes_timeout)
            .field("priority_queue", &self.priority_queue)
            .finish_non_exhaustive()
    }
}

/// Runs the controller `plan` describes; see [`Controller::run`](super::Controller::run).
pub(crate) async fn run<K, R, Fut, E, P, S>(
    plan: Plan<K>,
    reconcile: R,
    error_policy: P,
    shutdown: S,
) -> Result<(), ControllerError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + fmt::Debug,
    K: Send + Sync + 'static,
    K::Scope: FactoryScope,
    R: Fn(Arc<K>, Context<K>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: fmt::Display + Send + 'static,
    P: Fn(&K, &E, &Context<K>) -> Retry + Send + Sync + 'static,
    S: Future<Output = ()> + Send,
{
    #[cfg(feature = "metrics")]
    if let Some(metrics) = &plan.metrics {
        match &plan.replication {
            Replication::LeaderElected(leadership) => metrics.observe_leader_election(leadership),
            Replication::Sharded(shard) => metrics.observe_shard(shard),
            // A fleet's clusters share one member: observed once, by its owner.
            Replication::ClusterOfShard { .. } | Replication::Single => {}
        }
    }
    let queue = plan.queue.unwrap_or_else(|| {
        let config = QueueConfig::default().name(plan.name.clone());
        #[cfg(feature = "metrics")]
        let config = match &plan.metrics {
            Some(metrics) => config.metrics(metrics.workqueue(&plan.name)),
            None => config,
        };
        WorkQueue::with_config(config, default_controller_rate_limiter())
    });
    let cache_changed = Arc::new(Notify::new());
    let reasons = Arc::new(Reasons::new(plan.priority_queue));
    let wiring = Wiring {
        queue: queue.clone(),
        cache_changed: Arc::clone(&cache_changed),
        reasons: Arc::clone(&reasons),
    };
    let tombstones: SharedTombstones<K> = Arc::default();
    let mut wires = plan.wires;
    wires.push(primary_wire(
        &plan.primary,
        plan.primary_predicate,
        plan.cleanup.is_some().then(|| Arc::clone(&tombstones)),
        &plan.replication,
    ));
    let mut unwires = Unwires::default();
    for wire in wires {
        unwires
            .connect(wire, &wiring)
            .map_err(|(kind, _)| ControllerError::InformerStopped {
                controller: plan.name.clone(),
                kind,
            })?;
    }

    let mut shutdown = pin!(shutdown);
    if let Some(shard) = plan.replication.shard() {
        // The primary and owned caches keep this member's shard, unknown until
        // the member's first read of the group: listing before would read the
        // whole collection to keep none of it, and load the server while
        // replicas started together are still creating their Leases.
        tracing::debug!(controller = %plan.name, "waiting for the shard member's first read of the group");
        tokio::select! {
            () = shard.read_once() => {}
            () = &mut shutdown => return Ok(()),
        }
    }
    plan.factory.start();
    let synced = plan.registry.synced();
    tokio::select! {
        _ = join_all(synced.iter().map(|informer| informer.synced())) => {}
        () = &mut shutdown => return Ok(()),
    }
    tracing::debug!(controller = %plan.name, "caches synced; starting workers");

    let own_recorder = plan.recorder.is_none();
    let recorder = plan.recorder.unwrap_or_else(|| {
        Recorder::new(
            plan.factory.client().clone(),
            Reporter::new(plan.name.clone()),
        )
    });
    let primaries = Primaries {
        cache: plan.primary.indexer(),
        tombstones: Arc::clone(&tombstones),
    };
    let worker = Arc::new(Worker {
        shared: Arc::new(Shared {
            client: plan.factory.client().clone(),
            registry: plan.registry,
            read_your_writes: Arc::new(ReadYourWrites::new(
                plan.read_your_writes_timeout,
                cache_changed,
            )),
            primary: primary_name::<K>(),
            recorder: recorder.clone(),
            queue: queue.clone(),
            reasons: Arc::clone(&reasons),
            name: plan.name.clone(),
            cluster: plan.cluster.clone(),
        }),
        primary: plan.primary.indexer(),
        reconcile,
        error_policy,
        finalizer: plan.finalizer,
        cleanup: plan.cleanup,
        tombstones: Arc::clone(&tombstones),
        finalized: Mutex::default(),
        #[cfg(feature = "metrics")]
        metrics: plan.metrics.as_ref().map(|metrics| {
            let metrics = metrics.controller(&plan.name);
            metrics.set_max_concurrent(plan.runner.workers.max(1));
            metrics
        }),
    });
    // client-go refreshes the unfinished-work gauges twice a second, so that a
    // stuck worker shows while it is stuck; the queue has no task of its own.
    #[cfg(feature = "metrics")]
    let _unfinished_work = plan.metrics.is_some().then(|| {
        let queue = queue.clone();
        AbortOnDrop(tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(500));
            loop {
                tick.tick().await;
                queue.report_unfinished_work();
            }
        }))
    });
    let runner = Runner::with_config(queue, plan.runner);
    let reconcile = move |key: ObjectKey, fence: Fence| {
        let worker = Arc::clone(&worker);
        async move { worker.process(key, fence).await }
    };
    plan.replication
        .run_workers(
            runner, reconcile, &primaries, &reasons, &plan.name, shutdown,
        )
        .await;
    drop(unwires);
    if own_recorder {
        // Writes the series counts still pending; a server that stopped answering
        // must not hold the shutdown for long.
        let flushed = tokio::time::timeout(RECORDER_FLUSH, recorder.shutdown()).await;
        if flushed.is_err() {
            tracing::warn!(controller = %plan.name, "pending events were not written before the shutdown deadline");
        }
    }
    Ok(())
}

/// The primary's wire: its changes queue its own key; with a cleanup to run
/// (`tombstones` given), a deletion first leaves the last state where the worker
/// taking the key finds it. A sharded primary cache also drops the objects that left
/// this member's shard (the filter answers no for them by then): those were not
/// deleted, and their cleanup is not due.
fn primary_wire<K>(
    primary: &SharedIndexInformer<K>,
    predicate: Option<Predicate<K>>,
    tombstones: Option<SharedTombstones<K>>,
    replication: &Replication,
) -> Wire
where
    K: Resource + Send + Sync + 'static,
{
    let shard = replication.shard().cloned();
    mapping_wire(
        primary,
        Relation::Primary,
        predicate,
        |object: &K| Some(ObjectKey::of(object)),
        move |gone: &Arc<K>| {
            let key = ObjectKey::of(gone.as_ref());
            let left_the_shard = shard.as_ref().is_some_and(|shard| !shard.owns(&key));
            if let Some(tombstones) = &tombstones
                && !left_the_shard
            {
                tombstones.insert(key, Arc::clone(gone));
            }
        },
    )
}

/// Stops a task when dropped (`run` returned or was dropped).
#[cfg(feature = "metrics")]
struct AbortOnDrop(tokio::task::JoinHandle<()>);

#[cfg(feature = "metrics")]
impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
