//! [`Controller`]: the builder. It records what to watch and how (its
//! [`Inputs`](super::run::Inputs), each type a [`Wire`](super::wiring::Wire)) and
//! the replication mode, a type (see
//! [`ReplicationMode`](super::replication::ReplicationMode)), and makes nothing;
//! [`run`](Controller::run) hands both to the run (`run.rs`), which makes the
//! informers, indexes and handlers.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::context::Context;
use super::mapping::IntoPrimaryKey;
use super::predicate::Predicate;
use super::primary::Primary;
use super::reconciler::{ReconcileFn, erase_cleanup, erase_reconcile};
use super::replication::{LeaderElected, Replicate, ReplicationMode, Sharded, Single};
use super::run::{Inputs, run};
use super::wiring;
use super::{ControllerError, Retry};
use crate::events::Recorder;
use crate::factory::{Cacheable, SharedInformerFactory};
use crate::key::ObjectKey;
use crate::leader::LeadershipHandle;
use crate::lister::Lister;
use crate::shard::ShardHandle;
use crate::workqueue::{Action, RunnerConfig, WorkQueue};

/// A controller for primary type `K`: its objects, and the objects it owns or watches,
/// all from one [`SharedInformerFactory`], mapped to keys of `K` on one rate-limited
/// queue, reconciled by workers. See the [module documentation](super).
///
/// `R` is how it runs as several replicas: [`Single`] (the default),
/// [`LeaderElected`] or [`Sharded`], chosen by the builder.
pub struct Controller<K, R = Single> {
    inputs: Inputs<K>,
    mode: R,
}

impl<K, R> fmt::Debug for Controller<K, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inputs.fmt(f)
    }
}

impl<K: Primary> Controller<K> {
    /// A controller of `K`, on the factory's shared informer for `K`.
    ///
    /// The builder only records what to watch and how: the informers, indexes and
    /// handlers are made when the controller [`run`](Self::run)s (from the factory,
    /// shared with whoever asked for the same type), so a controller built and
    /// dropped leaves nothing in the factory. For an
    /// [`Informable`](crate::informable::Informable) `K`, ask the factory for
    /// `informable::<K>()` before the controller runs so its indexes exist from the
    /// start (they are otherwise added on the first typed query).
    pub fn new(factory: &SharedInformerFactory) -> Self {
        Self::with_mode(factory, Single::new())
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
    /// ([`ControlledBy`](crate::reflector::ControlledBy)), and [`Context::lister`] and [`Context::owned`] read that
    /// cache. Watched and read types are cached whole on every replica (a mapper can
    /// point anywhere). `run` returns on its `shutdown` or when the member
    /// stops. Sharding replaces leader election: a sharded controller has no
    /// `leader_election`.
    ///
    /// The informer of `K` is the factory's entry filtered by the shard (its own
    /// entry, named `K in ns [shard {group}/{identity}]`): it keeps only this member's
    /// shard, skipping other objects before they are decoded, and relists when the
    /// members change. So a replica's cache of `K` holds about `1/N` of the objects,
    /// and handlers on that informer see keys leaving the shard as deletions
    /// (tombstones) of objects that may still exist. Other controllers of `K` in the
    /// process are not affected.
    pub fn sharded(factory: &SharedInformerFactory, shard: &ShardHandle) -> Controller<K, Sharded> {
        Controller::with_mode(factory, Sharded::new(shard))
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
    /// A sharded controller cannot be given one (that does not compile): sharding
    /// already decides which replica reconciles which key.
    #[must_use]
    pub fn leader_election(self, leadership: LeadershipHandle) -> Controller<K, LeaderElected> {
        self.replicated(LeaderElected::new(leadership))
    }

    /// The controller in `mode` instead (nothing is made before it runs, so the mode
    /// decides every cache).
    pub(crate) fn replicated<M: Replicate>(self, mode: M) -> Controller<K, M> {
        Controller {
            inputs: self.inputs,
            mode,
        }
    }
}

impl<K: Primary, R: ReplicationMode> Controller<K, R> {
    /// A controller of `K` in `mode`: its informers are made when it runs.
    fn with_mode(factory: &SharedInformerFactory, mode: R) -> Self {
        let inputs = Inputs {
            factory: factory.clone(),
            wires: Vec::new(),
            queue: None,
            finalizer: None,
            cleanup: None,
            name: format!("{}-controller", K::kind(&()).to_lowercase()),
            runner: RunnerConfig::default(),
            read_your_writes_timeout: Duration::from_secs(10),
            reconcile_timeout: None,
            recorder: None,
            #[cfg(feature = "metrics")]
            metrics: factory.metrics().cloned(),
            primary_predicate: None,
            priority_queue: true,
            parent_span: None,
            labels: Vec::new(),
        };
        Self { inputs, mode }
    }

    /// Reconciles a `K` when an object of type `C` it controls changes: `C`'s
    /// controller owner reference (kind and API group of `K`) names the key, so no
    /// cache is scanned. Also keeps an index of `C` by owner, for
    /// [`Context::owned`].
    ///
    /// A [`sharded`](Self::sharded) controller caches only the `C`s controlled by a
    /// `K` of its shard, in the factory's entry filtered by [`ControlledBy`](crate::reflector::ControlledBy) (named
    /// `C in ns [controlled by K of shard {group}/{identity}]`), skipping the others
    /// before they are decoded; it relists with the shard.
    #[must_use]
    pub fn owns<C: Cacheable>(self) -> Self {
        self.owned(None::<Predicate<C>>)
    }

    /// [`owns`](Self::owns), reconciling only for the updates of `C` that `predicate`
    /// accepts (adds and deletions always count; see [`Predicate`]).
    #[must_use]
    pub fn owns_with<C: Cacheable>(self, predicate: Predicate<C>) -> Self {
        self.owned(Some(predicate))
    }

    fn owned<C: Cacheable>(mut self, predicate: Option<Predicate<C>>) -> Self {
        self.inputs.wires.push(wiring::owns::<K, C>(predicate));
        self
    }

    /// Reconciles the `K`s that `mapper` names when an object of type `W` changes.
    ///
    /// The mapper gets the object (its last state, on deletion) and the primary
    /// lister; a typed index query makes it a lookup, not a scan:
    /// `|cm: &ConfigMap, backups: &Lister<Backup>| backups.by_target(cm.name_any())`.
    /// It may return [`ObjectKey`]s or the primaries themselves. On an update it runs
    /// for the old and the new state, so a primary that stops matching hears of it.
    /// It runs in the controller's event handler, a task on the runtime (the
    /// controller's handlers take no thread of their own): keep it to cache reads, never
    /// block or call the API server in it.
    #[must_use]
    pub fn watches<W, F, I>(self, mapper: F) -> Self
    where
        W: Cacheable,
        F: Fn(&W, &Lister<K>) -> I + Send + Sync + 'static,
        I: IntoIterator,
        I::Item: IntoPrimaryKey<K>,
    {
        self.watched(None, mapper)
    }

    /// [`watches`](Self::watches), mapping only the updates of `W` that `predicate`
    /// accepts (adds and deletions always count; see [`Predicate`]).
    #[must_use]
    pub fn watches_with<W, F, I>(self, predicate: Predicate<W>, mapper: F) -> Self
    where
        W: Cacheable,
        F: Fn(&W, &Lister<K>) -> I + Send + Sync + 'static,
        I: IntoIterator,
        I::Item: IntoPrimaryKey<K>,
    {
        self.watched(Some(predicate), mapper)
    }

    fn watched<W, F, I>(mut self, predicate: Option<Predicate<W>>, mapper: F) -> Self
    where
        W: Cacheable,
        F: Fn(&W, &Lister<K>) -> I + Send + Sync + 'static,
        I: IntoIterator,
        I::Item: IntoPrimaryKey<K>,
    {
        self.inputs.wires.push(wiring::watches(predicate, mapper));
        self
    }

    /// Makes `C`'s lister available to the reconcile ([`Context::lister`]) without
    /// reconciling on its changes.
    #[must_use]
    pub fn reads<C: Cacheable>(mut self) -> Self {
        self.inputs.wires.push(wiring::reads::<K, C>());
        self
    }

    /// Reconciles a `K` only for the updates of it that `predicate` accepts (default:
    /// every change); its first sight, its deletion and an update that starts its
    /// deletion always count (see [`Predicate`]). A controller that writes the
    /// status of its primaries wakes itself with each write unless it filters them,
    /// typically with [`Predicate::generation_changed`].
    #[must_use]
    pub fn predicate(mut self, predicate: Predicate<K>) -> Self {
        self.inputs.primary_predicate = Some(predicate);
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
        self.inputs.cleanup = Some(erase_cleanup(cleanup));
        self
    }

    /// Guards every `K` with finalizer `name` (e.g. `"backups.example.com/cleanup"`),
    /// so the [`cleanup`](Self::cleanup) runs for every deletion, including those made
    /// while the controller was down; see [finalizers](super#finalizers) for the protocol.
    #[must_use]
    pub fn finalizer(mut self, name: impl Into<String>) -> Self {
        self.inputs.finalizer = Some(name.into());
        self
    }

    /// The controller's name, used for its queue and logs (default `{kind}-controller`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.inputs.name = name.into();
        self
    }

    /// How many keys are reconciled at once (default 1). One key is never reconciled
    /// by two workers at once.
    #[must_use]
    pub fn workers(mut self, workers: usize) -> Self {
        self.inputs.runner = self.inputs.runner.workers(workers);
        self
    }

    /// Gives up on a key after this many failed reconciles in a row (default: never).
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.inputs.runner = self.inputs.runner.max_retries(retries);
        self
    }

    /// How long a reconcile waits at most for the cache to show the writes the
    /// previous reconcile of its key made (default 10 s); see
    /// [read-your-writes](super#read-your-writes).
    #[must_use]
    pub fn read_your_writes_timeout(mut self, timeout: Duration) -> Self {
        self.inputs.read_your_writes_timeout = timeout;
        self
    }

    /// Cancels a reconcile (or a cleanup) that runs longer than `timeout` and retries
    /// its key with the queue's backoff, as controller-runtime's
    /// `ReconciliationTimeout` does (off by default, as there). Cancelled means dropped
    /// where it stands: its next step never runs, so a write it has not sent yet is
    /// never sent (one already sent may still land). Counted in
    /// `controller_runtime_reconcile_timeouts_total` (feature `metrics`) and as an
    /// error, as controller-runtime counts it.
    #[must_use]
    pub fn reconcile_timeout(mut self, timeout: Duration) -> Self {
        self.inputs.reconcile_timeout = Some(timeout);
        self
    }

    /// The event recorder the reconciles publish with ([`Context::publish`]); by
    /// default one reporting as the controller's [`name`](Self::name), flushed and
    /// stopped when `run` returns. A recorder given here is left running.
    #[must_use]
    pub fn recorder(mut self, recorder: Recorder) -> Self {
        self.inputs.recorder = Some(recorder);
        self
    }

    /// Makes every reconcile's span a child of `span` (a layer above names what the
    /// controller works, e.g. a fleet's cluster).
    pub(crate) fn within_span(mut self, span: tracing::Span) -> Self {
        self.inputs.parent_span = Some(span);
        self
    }

    /// Gives the controller's context the label `name` = `value` (a layer above
    /// names what the controller works, e.g. a fleet's `cluster`).
    pub(crate) fn labelled(mut self, name: &'static str, value: Arc<str>) -> Self {
        self.inputs.labels.push((name, value));
        self
    }

    /// Whether keys queued by a real change are reconciled before the backlog (default
    /// `true`), as controller-runtime's priority queue does.
    ///
    /// The backlog is the keys queued without a change: by the initial list of an
    /// informer, by a resync or a relist that found an object unchanged (same
    /// `resourceVersion`), and by a take-over (a leadership term starting, keys
    /// becoming this shard member's). They are queued at [`Priority::LOW`], real
    /// changes at [`Priority::NORMAL`], so after a restart with 10,000 objects an edit
    /// waits for a reconcile or two, not for 10,000. The backlog still drains under a
    /// steady stream of changes: one key in eight handed out is the one waiting longest
    /// (see the [queue's priorities](crate::workqueue#priorities)). A key keeps its
    /// priority for its retries and requeues unless the reconcile names one
    /// ([`Action::RequeueAfterWithPriority`]). `false` queues everything at
    /// [`Priority::NORMAL`]: client-go's plain FIFO.
    ///
    /// [`Priority::LOW`]: crate::workqueue::Priority::LOW
    /// [`Priority::NORMAL`]: crate::workqueue::Priority::NORMAL
    /// [`Action::RequeueAfterWithPriority`]: crate::workqueue::Action::RequeueAfterWithPriority
    #[must_use]
    pub fn priority_queue(mut self, enabled: bool) -> Self {
        self.inputs.priority_queue = enabled;
        self
    }

    /// The queue to use, e.g. one with a different rate limiter or metrics (default:
    /// client-go's controller rate limiter, named after the controller, reporting to
    /// the controller's [`metrics`](Self::metrics)).
    #[must_use]
    pub fn queue(mut self, queue: WorkQueue<ObjectKey>) -> Self {
        self.inputs.queue = Some(queue);
        self
    }

    /// Reports the controller's reconciles and its queue (unless one was given with
    /// [`queue`](Self::queue)) to `metrics`, labelled with the controller's
    /// [`name`](Self::name), and its leader election or shard member (see
    /// [`Metrics::observe_leader_election`](crate::metrics::Metrics::observe_leader_election)).
    /// By default a controller reports to the metrics of its factory
    /// ([`FactoryConfig::metrics`](crate::factory::FactoryConfig::metrics)).
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    #[must_use]
    pub fn metrics(mut self, metrics: &crate::metrics::Metrics) -> Self {
        self.inputs.metrics = Some(metrics.clone());
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
    pub async fn run<Rec, Fut, E, P, S>(
        self,
        reconcile: Rec,
        error_policy: P,
        shutdown: S,
    ) -> Result<(), ControllerError>
    where
        Rec: Fn(Arc<K>, Context<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
        P: Fn(&K, &E, &Context<K>) -> Retry + Send + Sync + 'static,
        S: Future<Output = ()> + Send,
    {
        self.run_erased(erase_reconcile(reconcile, error_policy), Box::pin(shutdown))
            .await
    }

    /// [`run`](Self::run), with the reconcile and its error policy erased (a fleet
    /// erases them once for every member's controller).
    pub(crate) async fn run_erased(
        self,
        reconcile: ReconcileFn<K>,
        shutdown: BoxFuture<'_, ()>,
    ) -> Result<(), ControllerError> {
        run(self.inputs, self.mode, reconcile, shutdown).await
    }
}
