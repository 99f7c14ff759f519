//! [`Controller`]: the builder, and `run`, which wires informers to the queue and runs
//! the workers.

use std::any::TypeId;
use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::join_all;
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::Notify;

use super::context::{Context, Shared, primary_name};
use super::leading::run_while_leading;
use super::mapping::{IntoPrimaryKey, controller_key, controller_uid, owner_index_name};
use super::primaries::Primaries;
use super::read_your_writes::ReadYourWrites;
use super::registry::Registry;
use super::sharding::run_sharded;
use super::tombstones::SharedTombstones;
use super::worker::{Cleanup, Worker};
use super::{ControllerError, Retry};
use crate::events::{Recorder, Reporter};
use crate::factory::SharedInformerFactory;
use crate::fifo::DeletedObject;
use crate::key::ObjectKey;
use crate::leader::LeadershipHandle;
use crate::lister::Lister;
use crate::reflector::{ControlledBy, KeyFilter};
use crate::scope::FactoryScope;
use crate::shard::ShardHandle;
use crate::shared_informer::{InformerError, ResourceEventHandlerFns, SharedIndexInformer};
use crate::store::Indexers;
use crate::workqueue::{
    Action, QueueConfig, Runner, RunnerConfig, WorkQueue, default_controller_rate_limiter,
};

/// How long `run` waits at most for its recorder to write pending events on shutdown.
const RECORDER_FLUSH: Duration = Duration::from_secs(5);

/// What `run` needs to connect an informer: the queue, and the signal that a cache
/// changed (read-your-writes waits on it).
struct Wiring {
    queue: WorkQueue<ObjectKey>,
    cache_changed: Arc<Notify>,
}

/// Registers a handler when the controller runs; the returned closure removes it.
type Wire = Box<dyn FnOnce(&Wiring) -> Result<Unwire, (&'static str, InformerError)> + Send>;
type Unwire = Box<dyn FnOnce() + Send>;

/// A controller for primary type `K`: its objects, and the objects it owns or watches,
/// all from one [`SharedInformerFactory`], mapped to keys of `K` on one rate-limited
/// queue, reconciled by workers. See the [module documentation](super).
pub struct Controller<K> {
    factory: SharedInformerFactory,
    primary: SharedIndexInformer<K>,
    queue: Option<WorkQueue<ObjectKey>>,
    registry: Registry,
    wires: Vec<Wire>,
    finalizer: Option<String>,
    cleanup: Option<Cleanup<K>>,
    name: String,
    runner: RunnerConfig,
    read_your_writes_timeout: Duration,
    recorder: Option<Recorder>,
    #[cfg(feature = "metrics")]
    metrics: Option<crate::metrics::Metrics>,
    leadership: Option<LeadershipHandle>,
    shard: Option<ShardHandle>,
}

impl<K> fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("registry", &self.registry)
            .field("finalizer", &self.finalizer)
            .field("runner", &self.runner)
            .field("read_your_writes_timeout", &self.read_your_writes_timeout)
            .finish_non_exhaustive()
    }
}

impl<K> Controller<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + fmt::Debug,
    K: Send + Sync + 'static,
    K::Scope: FactoryScope,
{
    /// A controller of `K`, on the factory's shared informer for `K` (made now if no
    /// one asked for it yet). For an [`Informable`](crate::informable::Informable) `K`,
    /// ask the factory for `informable::<K>()` first so its indexes exist from the
    /// start (they are otherwise added on the first typed query).
    pub fn new(factory: &SharedInformerFactory) -> Self {
        Self::with_primary(factory, factory.informer::<K>())
    }

    /// A controller of `K` on `primary`, one of `factory`'s informers.
    fn with_primary(factory: &SharedInformerFactory, primary: SharedIndexInformer<K>) -> Self {
        let mut registry = Registry::default();
        registry.register(&primary);
        Self {
            factory: factory.clone(),
            primary,
            queue: None,
            registry,
            wires: Vec::new(),
            finalizer: None,
            cleanup: None,
            name: format!("{}-controller", K::kind(&()).to_lowercase()),
            runner: RunnerConfig::default(),
            read_your_writes_timeout: Duration::from_secs(10),
            recorder: None,
            #[cfg(feature = "metrics")]
            metrics: factory.metrics().cloned(),
            leadership: None,
            shard: None,
        }
    }

    /// A controller of `K` that shares the keys of `K` with the other members of
    /// `shard`'s group, each replica reconciling its own shard (see
    /// [`shard`](crate::shard)); run its [`ShardMember`](crate::shard::ShardMember)
    /// beside the controller.
    ///
    /// A key is reconciled only by the member that may reconcile it now (never by two
    /// at once, across processes); when keys become this member's, every cached `K`
    /// among them is queued. The types it [`owns`](Self::owns) are cached per shard
    /// too: a replica keeps the objects controlled by its own primaries only
    /// ([`ControlledBy`]), and [`Context::lister`] and [`Context::owned`] read that
    /// cache. Watched and read types are cached whole on every replica (a mapper can
    /// point anywhere). `run` returns on its `shutdown` or when the member
    /// stops. Sharding replaces leader election: a sharded controller given
    /// [`leader_election`](Self::leader_election) fails to run.
    ///
    /// The informer of `K` is the factory's entry filtered by the shard (its own
    /// entry, named `K in ns [shard {group}/{identity}]`): it keeps only this member's
    /// shard, skipping other objects before they are decoded, and relists when the
    /// members change. So a replica's cache of `K` holds about `1/N` of the objects,
    /// and handlers on that informer see keys leaving the shard as deletions
    /// (tombstones) of objects that may still exist. Other controllers of `K` in the
    /// process are not affected.
    pub fn sharded(factory: &SharedInformerFactory, shard: &ShardHandle) -> Self {
        let filter: Arc<dyn KeyFilter> = Arc::new(shard.clone());
        let scope = factory.default_scope().filtered(
            format!("shard {}/{}", shard.group(), shard.identity()),
            Arc::clone(&filter),
        );
        let primary = factory.informer_for::<K>(scope);
        let mut controller = Self::with_primary(factory, primary.clone());
        controller.registry.register_filtered(&primary, filter);
        controller.shard = Some(shard.clone());
        controller
    }

    /// Reconciles a `K` when an object of type `C` it controls changes: `C`'s
    /// controller owner reference (kind and API group of `K`) names the key, so no
    /// cache is scanned. Also keeps an index of `C` by owner, for
    /// [`Context::owned`].
    ///
    /// A [`sharded`](Self::sharded) controller caches only the `C`s controlled by a
    /// `K` of its shard, in the factory's entry filtered by [`ControlledBy`] (named
    /// `C in ns [controlled by K of shard {group}/{identity}]`), skipping the others
    /// before they are decoded; it relists with the shard.
    #[must_use]
    pub fn owns<C>(mut self) -> Self
    where
        C: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
        C::Scope: FactoryScope,
    {
        let informer = match &self.shard {
            Some(shard) => {
                // The children of this member's primaries only (see `sharded`).
                let filter: Arc<dyn KeyFilter> =
                    Arc::new(ControlledBy::<K>::new(Arc::new(shard.clone())));
                let scope = self.factory.default_scope().filtered(
                    format!(
                        "controlled by {} of shard {}/{}",
                        K::kind(&()),
                        shard.group(),
                        shard.identity()
                    ),
                    Arc::clone(&filter),
                );
                let informer = self.factory.informer_for::<C>(scope);
                if TypeId::of::<C>() == TypeId::of::<K>() {
                    // The primary's registration (its shard's cache) stays; the
                    // children's informer is still waited for.
                    self.registry.register(&informer);
                } else {
                    self.registry.register_filtered(&informer, filter);
                }
                informer
            }
            None => {
                let informer = self.factory.informer::<C>();
                self.registry.register(&informer);
                informer
            }
        };
        let index = owner_index_name::<K>();
        let indexer = informer.indexer();
        if !indexer.index_names().contains(&index) {
            let by_owner = Indexers::new().with_fn(index.clone(), controller_uid::<K, C>);
            // Only fails if another controller of `K` added the same index meanwhile.
            let _ = indexer.add_indexers(by_owner);
        }
        self.registry.set_owned::<C>(indexer, index);
        self.wires.push(mapping_wire(
            &informer,
            |child: &C| controller_key::<K>(child.meta()),
            |_| {},
        ));
        self
    }

    /// Reconciles the `K`s that `mapper` names when an object of type `W` changes.
    ///
    /// The mapper gets the object (its last state, on deletion) and the primary
    /// lister; a typed index query makes it a lookup, not a scan:
    /// `|cm: &ConfigMap, backups: &Lister<Backup>| backups.by_target(cm.name_any())`.
    /// It may return [`ObjectKey`]s or the primaries themselves. On an update it runs
    /// for the old and the new state, so a primary that stops matching hears of it.
    #[must_use]
    pub fn watches<W, F, I>(mut self, mapper: F) -> Self
    where
        W: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
        W::Scope: FactoryScope,
        F: Fn(&W, &Lister<K>) -> I + Send + Sync + 'static,
        I: IntoIterator,
        I::Item: IntoPrimaryKey<K>,
    {
        let informer = self.factory.informer::<W>();
        self.registry.register(&informer);
        let primaries = self.primary.lister();
        self.wires.push(mapping_wire(
            &informer,
            move |watched: &W| {
                mapper(watched, &primaries)
                    .into_iter()
                    .map(IntoPrimaryKey::into_primary_key)
            },
            |_| {},
        ));
        self
    }

    /// Makes `C`'s lister available to the reconcile ([`Context::lister`]) without
    /// reconciling on its changes.
    #[must_use]
    pub fn reads<C>(mut self) -> Self
    where
        C: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
        C::Scope: FactoryScope,
    {
        let informer = self.factory.informer::<C>();
        self.registry.register(&informer);
        // Maps to no key, but wakes read-your-writes waiters on every change.
        self.wires
            .push(mapping_wire(&informer, |_: &C| None::<ObjectKey>, |_| {}));
        self
    }

    /// Runs `cleanup` for a deleted `K`; see the [module documentation](super) for
    /// when. Without a [`finalizer`](Self::finalizer) it runs when the informer
    /// reports the deletion (with the object's last state), which misses deletions
    /// made while the controller was not running. A failed cleanup is retried with
    /// backoff. It must be idempotent: it may run again after a restart, and under
    /// [`leader_election`](Self::leader_election) a new leader runs it for the
    /// deletions it saw in the two lease durations before its term (made while the
    /// lease changed hands; the old leader may have run it too).
    #[must_use]
    pub fn cleanup<F, Fut, E>(mut self, cleanup: F) -> Self
    where
        F: Fn(Arc<K>, Context<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        let cleanup = Arc::new(cleanup);
        self.cleanup = Some(Arc::new(move |object, context| {
            let cleanup = Arc::clone(&cleanup);
            async move {
                cleanup(object, context)
                    .await
                    .map_err(|error| Box::new(error) as Box<dyn fmt::Display + Send>)
            }
            .boxed()
        }));
        self
    }

    /// Guards every `K` with finalizer `name` (e.g. `"backups.example.com/cleanup"`),
    /// so the [`cleanup`](Self::cleanup) runs for every deletion, including those made
    /// while the controller was down; see the [`finalizer`](super::finalizer) module
    /// docs for the protocol.
    #[must_use]
    pub fn finalizer(mut self, name: impl Into<String>) -> Self {
        self.finalizer = Some(name.into());
        self
    }

    /// The controller's name, used for its queue and logs (default `{kind}-controller`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How many keys are reconciled at once (default 1). One key is never reconciled
    /// by two workers at once.
    #[must_use]
    pub fn workers(mut self, workers: usize) -> Self {
        self.runner = self.runner.workers(workers);
        self
    }

    /// Gives up on a key after this many failed reconciles in a row (default: never).
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.runner = self.runner.max_retries(retries);
        self
    }

    /// How long a reconcile waits at most for the cache to show the writes the
    /// previous reconcile of its key made (default 10 s); see
    /// [read-your-writes](super::read_your_writes).
    #[must_use]
    pub fn read_your_writes_timeout(mut self, timeout: Duration) -> Self {
        self.read_your_writes_timeout = timeout;
        self
    }

    /// The event recorder the reconciles publish with ([`Context::publish`]); by
    /// default one reporting as the controller's [`name`](Self::name), flushed and
    /// stopped when `run` returns. A recorder given here is left running.
    #[must_use]
    pub fn recorder(mut self, recorder: Recorder) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// The queue to use, e.g. one with a different rate limiter or metrics (default:
    /// client-go's controller rate limiter, named after the controller, reporting to
    /// the controller's [`metrics`](Self::metrics)).
    #[must_use]
    pub fn queue(mut self, queue: WorkQueue<ObjectKey>) -> Self {
        self.queue = Some(queue);
        self
    }

    /// Reports the controller's reconciles and its queue (unless one was given with
    /// [`queue`](Self::queue)) to `metrics`, labelled with the controller's
    /// [`name`](Self::name), and its leader election or shard member (see
    /// [`Metrics::observe_leader_election`](crate::metrics::Metrics::observe_leader_election)).
    /// By default a controller reports to the metrics of its factory
    /// ([`FactoryOptions::metrics`](crate::factory::FactoryOptions::metrics)).
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    #[must_use]
    pub fn metrics(mut self, metrics: &crate::metrics::Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// Reconciles only while this replica leads the election `leadership` belongs to
    /// (see [`leader`](crate::leader)); run its
    /// [`LeaderElector`](crate::leader::LeaderElector) beside the controller.
    ///
    /// The informers run and the queue fills on every replica, so a standby's caches
    /// are warm when it takes over. When a term starts, every cached `K` is queued
    /// and the workers start; when it is lost, workers take no more keys, the
    /// reconciles in hand may finish until the lease could expire for the other
    /// replicas and are dropped then, and the controller waits to lead again. `run`
    /// returns on its `shutdown` (while leading: once the reconciles in hand have
    /// finished, after which the elector releases the lease) or when the elector
    /// stops.
    #[must_use]
    pub fn leader_election(mut self, leadership: LeadershipHandle) -> Self {
        self.leadership = Some(leadership);
        self
    }

    /// Starts the factory's informers (the controller's and any others not started
    /// yet), waits until the controller's caches have synced, then reconciles until
    /// `shutdown` completes: workers finish the key in hand, the controller's
    /// handlers are removed, and no task of the controller is left running. The
    /// informers keep running for whoever else shares them; stop them with
    /// [`SharedInformerFactory::shutdown`].
    ///
    /// With [`leader_election`](Self::leader_election), the workers run only while
    /// this replica leads. A [`sharded`](Self::sharded) controller starts the
    /// informers once its member has first read the group (its shard is known), so
    /// its primary cache lists only its shard.
    ///
    /// `reconcile` gets the object from the cache and a [`Context`]. A failed
    /// reconcile goes to `error_policy`, which chooses the [`Retry`]
    /// ([`backoff`](super::backoff) is client-go's default: the queue's rate limiter).
    ///
    /// # Errors
    /// [`ControllerError::InformerStopped`] if one of the informers was already
    /// shut down.
    pub async fn run<R, Fut, E, P, S>(
        self,
        reconcile: R,
        error_policy: P,
        shutdown: S,
    ) -> Result<(), ControllerError>
    where
        R: Fn(Arc<K>, Context<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
        P: Fn(&K, &E, &Context<K>) -> Retry + Send + Sync + 'static,
        S: Future<Output = ()> + Send,
    {
        if self.shard.is_some() && self.leadership.is_some() {
            return Err(ControllerError::ShardedAndLeaderElected {
                controller: self.name,
            });
        }
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.metrics {
            if let Some(leadership) = &self.leadership {
                metrics.observe_leader_election(leadership);
            }
            if let Some(shard) = &self.shard {
                metrics.observe_shard(shard);
            }
        }
        let queue = self.queue.unwrap_or_else(|| {
            let config = QueueConfig::default().name(self.name.clone());
            #[cfg(feature = "metrics")]
            let config = match &self.metrics {
                Some(metrics) => config.metrics(metrics.workqueue(&self.name)),
                None => config,
            };
            WorkQueue::with_config(config, default_controller_rate_limiter())
        });
        let cache_changed = Arc::new(Notify::new());
        let wiring = Wiring {
            queue: queue.clone(),
            cache_changed: Arc::clone(&cache_changed),
        };
        let tombstones: SharedTombstones<K> = Arc::default();
        let mut wires = self.wires;
        // The primary's changes queue its own key; with a cleanup to run, a deletion
        // first leaves the last state where the worker taking the key finds it.
        // A sharded primary cache also drops the objects that left this member's
        // shard (the filter answers no for them by then): those were not deleted, and
        // their cleanup is not due.
        let remember_deleted = self.cleanup.is_some().then(|| Arc::clone(&tombstones));
        let shard = self.shard.clone();
        wires.push(mapping_wire(
            &self.primary,
            |object: &K| Some(ObjectKey::of(object)),
            move |gone: &Arc<K>| {
                let key = ObjectKey::of(gone.as_ref());
                let left_the_shard = shard.as_ref().is_some_and(|shard| !shard.owns(&key));
                if let Some(tombstones) = &remember_deleted
                    && !left_the_shard
                {
                    tombstones.insert(key, Arc::clone(gone));
                }
            },
        ));
        let mut unwires = Unwires(Vec::new());
        for wire in wires {
            let unwire = wire(&wiring).map_err(|(kind, _)| ControllerError::InformerStopped {
                controller: self.name.clone(),
                kind,
            })?;
            unwires.0.push(unwire);
        }

        let mut shutdown = pin!(shutdown);
        if let Some(shard) = &self.shard {
            // The primary and owned caches keep this member's shard, unknown until
            // the member's first read of the group: listing before would read the
            // whole collection to keep none of it, and load the server while
            // replicas started together are still creating their Leases.
            tracing::debug!(controller = %self.name, "waiting for the shard member's first read of the group");
            tokio::select! {
                () = shard.read_once() => {}
                () = &mut shutdown => return Ok(()),
            }
        }
        self.factory.start();
        let synced = self.registry.synced();
        tokio::select! {
            _ = join_all(synced.iter().map(|informer| informer.synced())) => {}
            () = &mut shutdown => return Ok(()),
        }
        tracing::debug!(controller = %self.name, "caches synced; starting workers");

        let own_recorder = self.recorder.is_none();
        let recorder = self.recorder.unwrap_or_else(|| {
            Recorder::new(
                self.factory.client().clone(),
                Reporter::new(self.name.clone()),
            )
        });
        let primaries = Primaries {
            cache: self.primary.indexer(),
            tombstones: Arc::clone(&tombstones),
        };
        let worker = Arc::new(Worker {
            shared: Arc::new(Shared {
                client: self.factory.client().clone(),
                registry: self.registry,
                read_your_writes: Arc::new(ReadYourWrites::new(
                    self.read_your_writes_timeout,
                    cache_changed,
                )),
                primary: primary_name::<K>(),
                recorder: recorder.clone(),
                queue: queue.clone(),
            }),
            primary: self.primary.indexer(),
            reconcile,
            error_policy,
            finalizer: self.finalizer,
            cleanup: self.cleanup,
            tombstones: Arc::clone(&tombstones),
            finalized: Mutex::default(),
            #[cfg(feature = "metrics")]
            metrics: self.metrics.as_ref().map(|metrics| {
                let metrics = metrics.controller(&self.name);
                metrics.set_max_concurrent(self.runner.workers.max(1));
                metrics
            }),
        });
        // client-go refreshes the unfinished-work gauges twice a second, so that a
        // stuck worker shows while it is stuck; the queue has no task of its own.
        #[cfg(feature = "metrics")]
        let _unfinished_work = self.metrics.is_some().then(|| {
            let queue = queue.clone();
            AbortOnDrop(tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(500));
                loop {
                    tick.tick().await;
                    queue.report_unfinished_work();
                }
            }))
        });
        let runner = Runner::with_config(queue, self.runner);
        let reconcile = move |key: ObjectKey| {
            let worker = Arc::clone(&worker);
            async move { worker.process(key).await }
        };
        match (&self.leadership, &self.shard) {
            (Some(leadership), _) => {
                run_while_leading(
                    runner, reconcile, leadership, &primaries, &self.name, shutdown,
                )
                .await;
            }
            (None, Some(shard)) => {
                run_sharded(runner, reconcile, shard, &primaries, &self.name, shutdown).await;
            }
            (None, None) => runner.run(reconcile, shutdown).await,
        }
        drop(unwires);
        if own_recorder {
            // Writes the series counts still pending; a server that stopped answering
            // must not hold the shutdown for long.
            let flushed = tokio::time::timeout(RECORDER_FLUSH, recorder.shutdown()).await;
            if flushed.is_err() {
                tracing::warn!(controller = %self.name, "pending events were not written before the shutdown deadline");
            }
        }
        Ok(())
    }
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

/// Removes the controller's handlers when dropped (`run` returned or was dropped).
struct Unwires(Vec<Unwire>);

impl Drop for Unwires {
    fn drop(&mut self) {
        for unwire in self.0.drain(..) {
            unwire();
        }
    }
}

/// A handler queueing the keys `map` gives for each state an event carries (old and
/// new on update), and telling read-your-writes waiters the cache changed. `on_gone`
/// sees a deleted object before its keys are queued.
fn mapping_wire<C, M, I>(
    informer: &SharedIndexInformer<C>,
    map: M,
    on_gone: impl Fn(&Arc<C>) + Send + 'static,
) -> Wire
where
    C: Resource + Send + Sync + 'static,
    M: Fn(&C) -> I + Send + Sync + 'static,
    I: IntoIterator<Item = ObjectKey>,
{
    let informer = informer.clone();
    Box::new(move |wiring: &Wiring| {
        let enqueue = {
            let queue = wiring.queue.clone();
            let changed = Arc::clone(&wiring.cache_changed);
            // Each key once per event: queued twice (an update whose old and new
            // state map to the same key), a key a worker took in between would be
            // reconciled twice for one change.
            move |states: &[&C]| {
                let mut keys: Vec<ObjectKey> = Vec::new();
                for key in states.iter().flat_map(|state| map(state)) {
                    if !keys.contains(&key) {
                        keys.push(key);
                    }
                }
                for key in keys {
                    queue.add(key);
                }
                changed.notify_waiters();
            }
        };
        let enqueue = Arc::new(enqueue);
        let (on_add, on_update, on_delete) = (Arc::clone(&enqueue), Arc::clone(&enqueue), enqueue);
        let registration = informer
            .add_event_handler(
                ResourceEventHandlerFns::new()
                    .on_add(move |object: &Arc<C>, _| on_add(&[object]))
                    .on_update(move |old: &Arc<C>, new: &Arc<C>| on_update(&[old, new]))
                    .on_delete(move |gone: DeletedObject<C>| {
                        on_gone(gone.object());
                        on_delete(&[gone.object()]);
                    }),
            )
            .map_err(|error| (crate::key::short_type_name::<C>(), error))?;
        Ok(Box::new(move || registration.remove()) as Unwire)
    })
}
