//! The run: what [`Controller::run`](super::Controller::run) does with what the builder
//! recorded (its [`Inputs`]) and its mode: make the informers and register the
//! handlers, wait until the mode is ready and the caches synced, assemble the recorder and the
//! [`Reconciler`], and hand the workers to the mode.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::join_all;
use kube::Resource;
use tokio::sync::Notify;

use super::ControllerError;
use super::context::{ControllerState, primary_name};
use super::handlers::{
    HandlerOutputs, HandlerRegistrations, PendingHandler, Relation, mapping_handler,
};
use super::predicate::Predicate;
use super::primary::Primary;
use super::primary_cache::PrimaryCache;
use super::read_your_writes::ReadYourWrites;
use super::reasons::Reasons;
use super::reconciler::{CleanupFn, KeyWork, ReconcileFn, Reconciler};
use super::replication::{Replicate, Workload};
use super::tombstones::SharedTombstones;
use super::wiring::{Wire, Wired, wire};
use crate::claim::Fence;
use crate::events::{Recorder, Reporter};
use crate::factory::SharedInformerFactory;
use crate::key::ObjectKey;
use crate::reflector::KeyFilter;
use crate::shared_informer::SharedIndexInformer;
use crate::workqueue::{
    QueueConfig, Runner, RunnerConfig, WorkQueue, default_controller_rate_limiter,
};

/// How long `run` waits at most for its recorder to write pending events on shutdown.
const RECORDER_FLUSH: Duration = Duration::from_secs(5);

/// Everything the builder recorded: what to watch and how to reconcile, the run's
/// input beside the mode. Nothing in it is made yet.
pub(crate) struct Inputs<K> {
    pub(crate) factory: SharedInformerFactory,
    /// The types owned, watched and read, in the order the builder was told.
    pub(crate) wires: Vec<Wire<K>>,
    pub(crate) queue: Option<WorkQueue<ObjectKey>>,
    pub(crate) finalizer: Option<String>,
    pub(crate) cleanup: Option<CleanupFn<K>>,
    pub(crate) name: String,
    pub(crate) runner: RunnerConfig,
    pub(crate) read_your_writes_timeout: Duration,
    /// How long a reconcile may run before it is cancelled and retried (`None`: no
    /// limit).
    pub(crate) reconcile_timeout: Option<Duration>,
    pub(crate) recorder: Option<Recorder>,
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<crate::metrics::Metrics>,
    /// Which updates of the primary queue its key (`None`: every one).
    pub(crate) primary_predicate: Option<Predicate<K>>,
    /// Queue backlog (lists, resyncs, take-overs) behind real changes.
    pub(crate) priority_queue: bool,
    /// The span every reconcile's span is a child of, if a layer above gave one.
    pub(crate) parent_span: Option<tracing::Span>,
    /// Named values a layer above gave the controller, for its context.
    pub(crate) labels: Vec<(&'static str, Arc<str>)>,
}

impl<K> fmt::Debug for Inputs<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("wires", &self.wires)
            .field("finalizer", &self.finalizer)
            .field("runner", &self.runner)
            .field("read_your_writes_timeout", &self.read_your_writes_timeout)
            .field("reconcile_timeout", &self.reconcile_timeout)
            .field("priority_queue", &self.priority_queue)
            .finish_non_exhaustive()
    }
}

/// Runs the controller `inputs` describe in `mode`, reconciling with `reconcile`; see
/// [`Controller::run`](super::Controller::run).
pub(crate) async fn run<K: Primary, R: Replicate>(
    inputs: Inputs<K>,
    mode: R,
    reconcile: ReconcileFn<K>,
    shutdown: futures::future::BoxFuture<'_, ()>,
) -> Result<(), ControllerError> {
    #[cfg(feature = "metrics")]
    if let Some(metrics) = &inputs.metrics {
        mode.observe(metrics);
    }
    let queue = inputs.queue.unwrap_or_else(|| {
        let config = QueueConfig::default().name(inputs.name.clone());
        #[cfg(feature = "metrics")]
        let config = match &inputs.metrics {
            Some(metrics) => config.metrics(metrics.workqueue(&inputs.name)),
            None => config,
        };
        WorkQueue::with_config(config, default_controller_rate_limiter())
    });
    let cache_changed = Arc::new(Notify::new());
    let reasons = Arc::new(Reasons::new(inputs.priority_queue));
    let outputs = HandlerOutputs {
        queue: queue.clone(),
        cache_changed: Arc::clone(&cache_changed),
        reasons: Arc::clone(&reasons),
    };
    let tombstones: SharedTombstones<K> = Arc::default();
    let Wired {
        primary,
        primary_filter,
        registry,
        mut handlers,
    } = wire(&inputs.factory, mode.cache_filter(), inputs.wires);
    handlers.push(primary_handler(
        &primary,
        inputs.primary_predicate,
        inputs.cleanup.is_some().then(|| Arc::clone(&tombstones)),
        primary_filter,
    ));
    let mut registrations = HandlerRegistrations::default();
    for handler in handlers {
        registrations
            .register(handler, &outputs)
            .map_err(|(kind, _)| ControllerError::InformerStopped {
                controller: inputs.name.clone(),
                kind,
            })?;
    }

    let mut shutdown = shutdown;
    tracing::debug!(controller = %inputs.name, "waiting until the replication mode is ready");
    tokio::select! {
        () = mode.ready() => {}
        () = &mut shutdown => return Ok(()),
    }
    inputs.factory.start();
    let synced = registry.synced();
    tokio::select! {
        _ = join_all(synced.iter().map(|informer| informer.synced())) => {}
        () = &mut shutdown => return Ok(()),
    }
    tracing::debug!(controller = %inputs.name, "caches synced; starting workers");

    let own_recorder = inputs.recorder.is_none();
    let recorder = inputs.recorder.unwrap_or_else(|| {
        Recorder::new(
            inputs.factory.client().clone(),
            Reporter::new(inputs.name.clone()),
        )
    });
    let primaries = PrimaryCache::new(primary.indexer(), Arc::clone(&tombstones));
    let reconciler = Arc::new(Reconciler {
        state: Arc::new(ControllerState {
            client: inputs.factory.client().clone(),
            registry,
            read_your_writes: Arc::new(ReadYourWrites::new(
                inputs.read_your_writes_timeout,
                cache_changed,
            )),
            primary: primary_name::<K>(),
            recorder: recorder.clone(),
            queue: queue.clone(),
            reasons: Arc::clone(&reasons),
            name: inputs.name.clone(),
            parent_span: inputs.parent_span,
            labels: inputs.labels,
        }),
        primary: primary.indexer(),
        reconcile,
        finalizer: inputs.finalizer,
        cleanup: inputs.cleanup,
        timeout: inputs.reconcile_timeout,
        tombstones: Arc::clone(&tombstones),
        finalized: Mutex::default(),
        #[cfg(feature = "metrics")]
        metrics: inputs.metrics.as_ref().map(|metrics| {
            let metrics = metrics.controller(&inputs.name);
            metrics.set_max_concurrent(inputs.runner.workers.max(1));
            metrics
        }),
    });
    // client-go refreshes the unfinished-work gauges twice a second, so that a
    // stuck worker shows while it is stuck; the queue has no task of its own.
    #[cfg(feature = "metrics")]
    let _unfinished_work = inputs.metrics.is_some().then(|| {
        let queue = queue.clone();
        AbortOnDrop(tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(500));
            loop {
                tick.tick().await;
                queue.report_unfinished_work();
            }
        }))
    });
    let work: KeyWork = Arc::new(move |key: ObjectKey, fence: Fence| {
        let reconciler = Arc::clone(&reconciler);
        async move { reconciler.process(key, fence).await }.boxed()
    });
    let workload = Workload {
        runner: Runner::with_config(queue, inputs.runner),
        work,
        primaries: &primaries,
        reasons: &reasons,
        controller: &inputs.name,
        flush_events: own_recorder.then(|| flush(&recorder, &inputs.name).boxed()),
    };
    mode.run_workers(workload, shutdown).await;
    drop(registrations);
    if own_recorder {
        // Once more, for a mode that did not (nothing to write if it did).
        flush(&recorder, &inputs.name).await;
    }
    Ok(())
}

/// Writes `recorder`'s pending events and stops it; a server that stopped answering
/// must not hold the shutdown for long.
async fn flush(recorder: &Recorder, controller: &str) {
    let flushed = tokio::time::timeout(RECORDER_FLUSH, recorder.shutdown()).await;
    if flushed.is_err() {
        tracing::warn!(
            controller,
            "pending events were not written before the shutdown deadline"
        );
    }
}

/// The primary's handler: its changes queue its own key; with a cleanup to run
/// (`tombstones` given), a deletion first leaves the last state where the worker
/// taking the key finds it. A primary cache cut down to a share (`filter`) also drops
/// the objects that left the share (the filter answers no for them by then): those
/// were not deleted, and their cleanup is not due.
fn primary_handler<K>(
    primary: &SharedIndexInformer<K>,
    predicate: Option<Predicate<K>>,
    tombstones: Option<SharedTombstones<K>>,
    filter: Option<Arc<dyn KeyFilter>>,
) -> PendingHandler
where
    K: Resource + Send + Sync + 'static,
{
    mapping_handler(
        primary,
        Relation::Primary,
        predicate,
        |object: &K| Some(ObjectKey::of(object)),
        move |gone: &Arc<K>| {
            let key = ObjectKey::of(gone.as_ref());
            let left_the_share = filter
                .as_ref()
                .is_some_and(|filter| !filter.keeps(key.namespace.as_deref(), &key.name));
            if let Some(tombstones) = &tombstones
                && !left_the_share
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
