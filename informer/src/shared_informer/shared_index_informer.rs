//! The informer's handle: construction, handler registration, reads of the cache, and
//! `run`, which wires the reflector, the queue, the process loop and the handlers.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use educe::Educe;
use kube::Resource;

use serde::de::DeserializeOwned;

use super::config::InformerConfig;
use super::error::InformerError;
use super::handler::ResourceEventHandler;
use super::inner::{ConsistencyParts, Inner, Startup};
#[cfg(feature = "metrics")]
use super::latency::{LatencySnapshot, ProcessingLatency};
use super::listener::ListenerStats;
use super::processor::{Processor, RunsOn, Stopped};
use super::queue::Queue;
use super::registration::{Registration, Subscription};
use super::sink::QueueSink;
use super::sync::SyncSignal;
use crate::consistency::Tracker;
use crate::informable::Informable;
use crate::key::short_type_name;
use crate::lister::Lister;
use crate::lock::MutexExt;
use crate::object::Object;
use crate::reflector::source::{ApiListerWatcher, ListerWatcher};
use crate::reflector::{self, Reflector, ReflectorError, SharedKeyFilter};
use crate::store::{Indexer, NAMESPACE_INDEX, Writer};
use crate::synced::HasSynced;

/// A shared, indexed informer for resource type `K`; see the [module docs](super).
/// Cloning gives another handle to the same informer.
#[derive(Educe)]
#[educe(Clone)]
pub struct SharedIndexInformer<K> {
    pub(super) inner: Arc<Inner<K>>,
}

/// Two handles are equal when they are the same informer.
impl<K> PartialEq for SharedIndexInformer<K> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl<K> Eq for SharedIndexInformer<K> {}

impl<K> std::fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedIndexInformer")
            .field("kind", &self.inner.kind)
            .field("started", &self.inner.startup().is_none())
            .finish_non_exhaustive()
    }
}

/// A handle that does not keep the informer alive (metrics observe informers this way).
#[cfg(feature = "metrics")]
pub(crate) struct WeakInformer<K>(std::sync::Weak<Inner<K>>);

#[cfg(feature = "metrics")]
impl<K> WeakInformer<K> {
    /// The informer, unless every handle to it is gone.
    pub(crate) fn upgrade(&self) -> Option<SharedIndexInformer<K>> {
        self.0.upgrade().map(|inner| SharedIndexInformer { inner })
    }
}

#[cfg(feature = "metrics")]
impl<K> SharedIndexInformer<K> {
    pub(crate) fn downgrade(&self) -> WeakInformer<K> {
        WeakInformer(Arc::downgrade(&self.inner))
    }
}

impl<K> SharedIndexInformer<K>
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default,
{
    /// An informer over what `api` addresses (`Api::all`, `Api::namespaced`...), with
    /// default settings. Its objects leave out `metadata.managedFields`; to keep them:
    ///
    /// ```no_run
    /// # fn demo(api: kube::Api<k8s_openapi::api::core::v1::ConfigMap>) {
    /// use informer::shared_informer::{InformerConfig, SharedIndexInformer};
    /// use informer::reflector::source::{ApiListerWatcher, ManagedFields};
    ///
    /// let informer = SharedIndexInformer::with_config(
    ///     ApiListerWatcher::new(api).managed_fields(ManagedFields::Keep),
    ///     InformerConfig::default(),
    /// )
    /// .expect("the default settings define no conflicting index");
    /// # let _ = informer;
    /// # }
    /// ```
    pub fn new(api: kube::Api<K>) -> Self {
        Self::with_config(ApiListerWatcher::new(api), InformerConfig::default())
            .expect("the default settings define no conflicting index")
    }
}

impl<K> SharedIndexInformer<K>
where
    K: Informable + kube::Resource + DeserializeOwned,
    K::DynamicType: Default,
{
    /// An informer over what `api` addresses, maintaining `K`'s key function and
    /// indexes ([`InformerConfig::informable`]).
    pub fn informable(api: kube::Api<K>) -> Self {
        Self::with_config(ApiListerWatcher::new(api), InformerConfig::informable())
            .expect("derived indexes have distinct names")
    }
}

impl<K> SharedIndexInformer<K>
where
    K: Object + Send + Sync + 'static,
{
    /// An informer fed by any [`ListerWatcher`]. Fails only when `config.indexers`
    /// names an index twice.
    pub fn with_config(
        lister_watcher: impl ListerWatcher<K> + 'static,
        config: InformerConfig<K>,
    ) -> Result<Self, InformerError> {
        let InformerConfig {
            resync,
            indexers,
            key_fn,
            reflector,
            transform,
            queue,
            consistency,
        } = config;
        // A zero period is none, however the field was set.
        let resync = resync.filter(|period| !period.is_zero());
        // Namespaced listing is answered from the namespace index, so it is always there.
        let indexers = if indexers.names().any(|name| name == NAMESPACE_INDEX) {
            indexers
        } else {
            indexers.with_namespace_index()
        };
        let writer = Writer::with_indexers(key_fn.clone(), indexers)?;
        let indexer = writer.indexer();
        let queue = Queue::new(queue, key_fn, &indexer);
        let kind = short_type_name::<K>();
        let sync_signal = Arc::new(SyncSignal::default());
        let tracker = Arc::new(Tracker::new(Box::new({
            let queue = queue.clone();
            move || queue.is_settled()
        })));
        let consistency = ConsistencyParts {
            config: consistency,
            counters: Arc::default(),
            key_filter: reflector.key_filter.clone().map(SharedKeyFilter::new),
        };
        let capabilities = lister_watcher.capabilities();
        Ok(Self {
            inner: Arc::new(Inner {
                kind,
                lister_watcher: Arc::new(lister_watcher),
                capabilities,
                indexer,
                queue,
                processor: Processor::new(kind, Arc::clone(&sync_signal)),
                writer: Mutex::new(writer),
                default_resync: resync,
                startup: Mutex::new(Some(Startup {
                    resync_check_period: resync,
                    reflector,
                    transform,
                })),
                running_resync_check: OnceLock::new(),
                stopped: AtomicBool::new(false),
                reflector_stats: OnceLock::new(),
                sync_signal,
                tracker,
                consistency,
                #[cfg(feature = "metrics")]
                processing_latency: ProcessingLatency::default(),
            }),
        })
    }

    /// Registers a handler with the default resync period. Added after start, it
    /// first receives an add for every cached object.
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler<K>,
    ) -> Result<Registration<K>, InformerError> {
        self.add_boxed(
            Box::new(handler),
            RunsOn::Thread,
            self.default_handler_resync(),
        )
    }

    /// Registers a cheap handler that never blocks: it runs on a task of the runtime
    /// the informer runs on rather than on a thread of its own, with the default
    /// resync period.
    ///
    /// Everything else is as for [`add_event_handler`](Self::add_event_handler): its
    /// own unbounded buffer (the informer never waits for it, and a slow handler
    /// delays nobody but itself), notifications one at a time in order, a panic
    /// caught, logged and counted, then a pause of a second. What it must not do is
    /// block (a blocking call, a long computation, `block_on`): that would hold one of
    /// the runtime's worker threads. A handler that only maps an object to keys and
    /// queues them, as a controller's do, is the case for it; the controller uses it.
    pub fn add_event_handler_on_runtime(
        &self,
        handler: impl ResourceEventHandler<K>,
    ) -> Result<Registration<K>, InformerError> {
        self.add_boxed(
            Box::new(handler),
            RunsOn::Runtime,
            self.default_handler_resync(),
        )
    }

    /// Registers a handler with its own resync period (client-go's
    /// `AddEventHandlerWithResyncPeriod`). A period under one second is raised to one
    /// second; after start, one under the informer's check period is raised to it.
    pub fn add_event_handler_with_resync(
        &self,
        handler: impl ResourceEventHandler<K>,
        resync: Duration,
    ) -> Result<Registration<K>, InformerError> {
        self.add_boxed(
            Box::new(handler),
            RunsOn::Thread,
            self.inner.adjust_resync(resync),
        )
    }

    /// The informer's default resync period, settled as a handler's would be.
    fn default_handler_resync(&self) -> Option<Duration> {
        self.inner
            .default_resync
            .and_then(|period| self.inner.adjust_resync(period))
    }

    fn add_boxed(
        &self,
        handler: Box<dyn ResourceEventHandler<K>>,
        runs_on: RunsOn,
        resync: Option<Duration>,
    ) -> Result<Registration<K>, InformerError> {
        let inner = &self.inner;
        if inner.stopped.load(Ordering::SeqCst) {
            return Err(InformerError::Stopped);
        }
        // No deltas are applied while the replay is queued: the handler sees the
        // cache as of one moment, then every change after it.
        let _writer = inner.writer.locked();
        let listener = inner
            .processor
            .add_handler(handler, runs_on, resync, |listener| inner.replay(listener))
            .ok_or(InformerError::Stopped)?;
        Ok(Registration {
            informer: Arc::clone(inner),
            listener,
        })
    }

    /// The notifications as an async `Stream` (with the default resync period): the
    /// cache's objects first, as initial-list adds, then every change.
    pub fn subscribe(&self) -> Result<Subscription<K>, InformerError> {
        let inner = &self.inner;
        if inner.stopped.load(Ordering::SeqCst) {
            return Err(InformerError::Stopped);
        }
        let _writer = inner.writer.locked();
        let (listener, receiver) = inner
            .processor
            .add_subscriber(inner.default_resync, |listener| inner.replay(listener))
            .ok_or(InformerError::Stopped)?;
        Ok(Subscription {
            registration: Registration {
                informer: Arc::clone(inner),
                listener,
            },
            receiver,
        })
    }

    /// Whether `run` has returned (or is returning): the informer takes no more
    /// handlers (client-go's `IsStopped`).
    pub fn is_stopped(&self) -> bool {
        self.inner.stopped.load(Ordering::SeqCst)
    }

    /// The cache (read-only handle).
    pub fn indexer(&self) -> Indexer<K> {
        self.inner.indexer.clone()
    }

    /// Typed reads of the cache. Until the informer has synced, a `get` that finds
    /// nothing is [`LookupError::NotSynced`](crate::lister::LookupError::NotSynced),
    /// not `NotFound`.
    pub fn lister(&self) -> Lister<K> {
        // The queue's flag, not the informer: a handler holding a lister would
        // otherwise keep the informer that holds the handler alive.
        Lister::with_synced(self.inner.indexer.clone(), self.inner.queue.clone())
            .knowing_version(Arc::clone(&self.inner.tracker))
    }

    /// Whether the initial list has been stored in the cache.
    pub fn has_synced(&self) -> bool {
        self.inner.has_synced()
    }

    /// Why the last list (or streaming list) failed, as long as none has succeeded
    /// since: the reason an informer does not sync, such as a CRD that is not
    /// installed (`backups.example.com is not served by the API server`) or an API
    /// server that cannot be reached. `None` before start and once a list succeeds.
    /// The reflector also logs each failure, at warn level, once per streak.
    pub fn last_sync_error(&self) -> Option<reflector::SyncError> {
        self.inner
            .reflector_stats
            .get()
            .and_then(|stats| stats.last_sync_error())
    }

    /// The reflector's resourceVersion: that of the last list, event or bookmark it
    /// received ("" before the first list), client-go's `LastSyncResourceVersion`. The
    /// cache may not reflect it yet: see
    /// [`store_resource_version`](Self::store_resource_version).
    pub fn last_sync_resource_version(&self) -> String {
        self.inner
            .reflector_stats
            .get()
            .map(|stats| stats.last_resource_version())
            .unwrap_or_default()
    }

    /// The resourceVersion up to which the cache reflects the server ("" before the
    /// first list is in it), client-go's `LastStoreSyncResourceVersion`: the version of
    /// the last moment the cache held exactly the server's collection (its queue empty
    /// after a list, an event or a bookmark of that version). It moves on with every
    /// such moment, and back only when a relist says so (a list from a server that is
    /// behind). Under a stream of changes that never lets the queue empty, it waits for
    /// the stream to pause: a lower bound, never ahead of the cache.
    pub fn store_resource_version(&self) -> String {
        self.inner.tracker.store_resource_version()
    }

    /// Waits until the cache reflects the server at least as of `resource_version`
    /// ([`store_resource_version`](Self::store_resource_version) has reached it,
    /// compared as integers, as Kubernetes promises they compare from 1.35, KEP-5504):
    /// for a controller or a test that wrote an object and must read its own write
    /// from the cache (the version the write returned). `false` at once when
    /// `resource_version` is not an integer. Never completes if the informer is not
    /// running: bound it with a timeout.
    pub async fn wait_for_resource_version(&self, resource_version: &str) -> bool {
        let Ok(target) = resource_version.parse::<u64>() else {
            return false;
        };
        self.inner.tracker.reached(target).await;
        true
    }

    /// What the queue holds for the process loop: changes for the in-order queue, keys
    /// for the per-key one (client-go's `informer_queued_items` counts alike).
    #[cfg(feature = "metrics")]
    pub(crate) fn queued_items(&self) -> usize {
        self.inner.queue.len()
    }

    /// How long the process loop has taken per batch.
    #[cfg(feature = "metrics")]
    pub(crate) fn processing_latency(&self) -> LatencySnapshot {
        self.inner.processing_latency.snapshot()
    }

    /// The reflector's counters (lists, watches, errors...), once started.
    pub fn reflector_stats(&self) -> Option<reflector::StatsSnapshot> {
        let mut snapshot = self.inner.reflector_stats.get()?.snapshot();
        snapshot.server_filters_shards = self.inner.lister_watcher.server_filters_shards();
        Some(snapshot)
    }

    /// How many handlers and subscriptions are registered.
    pub fn handler_count(&self) -> usize {
        self.inner.processor.listener_count()
    }

    /// The buffer counters of each registered handler and subscription (what each
    /// [`Registration::stats`] gives), in no particular order.
    pub fn handler_stats(&self) -> Vec<ListenerStats> {
        self.inner.processor.listener_stats()
    }

    /// How many notifications made a handler panic, over every handler ever
    /// registered (removed ones included, so the count never goes down).
    pub fn handler_panics(&self) -> u64 {
        self.inner.processor.panics()
    }

    /// Sets the transform applied to each object before it is stored (client-go's
    /// `SetTransform`). Only before start: [`InformerConfig::transform`] sets it at
    /// construction; this is for informers built by someone else, such as a
    /// [`SharedInformerFactory`](crate::factory::SharedInformerFactory).
    pub fn set_transform(
        &self,
        transform: impl Fn(K) -> K + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        let mut startup = self.inner.startup();
        let startup = startup
            .as_mut()
            .ok_or(InformerError::SetAfterStart("the transform"))?;
        startup.transform = Some(Arc::new(transform));
        Ok(())
    }

    /// Sets the handler told about every list and watch error (forbidden,
    /// unauthorized, expired, undecodable objects...), client-go's
    /// `SetWatchErrorHandler`. Only before start; see [`set_transform`](Self::set_transform)
    /// for why it exists beside [`reflector::Config::error_handler`].
    pub fn set_watch_error_handler(
        &self,
        handler: impl Fn(&ReflectorError) + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        let mut startup = self.inner.startup();
        let startup = startup
            .as_mut()
            .ok_or(InformerError::SetAfterStart("the watch error handler"))?;
        startup.reflector.error_handler = Some(Arc::new(handler));
        Ok(())
    }

    /// Lists, watches, fills the cache and notifies handlers until `shutdown`
    /// completes; then stops every handler thread and returns. An informer runs
    /// once: a second call is [`InformerError::AlreadyStarted`].
    pub async fn run(&self, shutdown: impl Future<Output = ()>) -> Result<(), InformerError> {
        let inner = &self.inner;
        let reflector = {
            let mut startup = inner.startup();
            let Some(Startup {
                resync_check_period,
                reflector: mut config,
                transform,
            }) = startup.take()
            else {
                return Err(InformerError::AlreadyStarted);
            };
            inner
                .running_resync_check
                .set(resync_check_period)
                .expect("set once, by the run that took the startup settings");
            let processor_inner = Arc::clone(inner);
            config.resync_period = resync_check_period;
            config.should_resync =
                Some(Arc::new(move || processor_inner.processor.should_resync()));
            let sink = QueueSink {
                queue: inner.queue.clone(),
                transform,
                indexer: inner.indexer.clone(),
                sync_signal: Arc::clone(&inner.sync_signal),
                tracker: Arc::clone(&inner.tracker),
            };
            let reflector =
                Reflector::from_parts(Arc::clone(&inner.lister_watcher), Arc::new(sink), config);
            inner
                .tracker
                .follow_filter_generation(reflector.filter_generation_of_store());
            reflector
        };
        let _ = inner.reflector_stats.set(reflector.stats_handle());
        inner.processor.start(tokio::runtime::Handle::current());
        let checks = self.periodic_checks(reflector.relist_trigger());

        // Biased: a shutdown signalled before `run` sends no list or watch.
        tokio::select! {
            biased;
            () = shutdown => {}
            _ = reflector.run(std::future::pending()) => {}
            () = inner.process() => {}
            () = checks => {}
        }

        inner.stopped.store(true, Ordering::SeqCst);
        inner.queue.close();
        let Stopped { threads, tasks } = inner.processor.stop();
        for task in tasks {
            if let Err(error) = task.await {
                tracing::error!(%error, "a handler task failed");
            }
        }
        if !threads.is_empty() {
            // Joining waits for handlers to finish their current call: off the runtime.
            let joined = tokio::task::spawn_blocking(move || {
                for thread in threads {
                    let _ = thread.join();
                }
            })
            .await;
            if let Err(error) = joined {
                tracing::error!(%error, "joining handler threads failed");
            }
        }
        Ok(())
    }
}

impl<K: Object + Send + Sync + 'static> HasSynced for SharedIndexInformer<K> {
    fn has_synced(&self) -> bool {
        self.inner.has_synced()
    }

    fn synced(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(
            self.inner
                .sync_signal
                .wait_until(|| self.inner.has_synced()),
        )
    }
}
