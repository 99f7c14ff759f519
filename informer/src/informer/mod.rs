//! The SharedIndexInformer: one list-and-watch, one cache, many handlers.
//!
//! client-go's `SharedIndexInformer`, typed. [`SharedIndexInformer::run`] starts a
//! [`Reflector`] that feeds a [`DeltaFifo`]; the process loop pops each object's
//! deltas, writes them to the [`Indexer`] first, then tells every handler:
//!
//! - `Added`, `Updated`, `Sync` and `Replaced` become an add when the key was not in
//!   the cache and an update (old, new) when it was. Resync notifications (a `Sync`,
//!   or a `Replaced` that did not change the object) reach only the handlers whose
//!   resync period is due.
//! - `Deleted` becomes a delete with a [`DeletedObject`](crate::fifo::DeletedObject): the final state, or a
//!   tombstone carrying the last known state when the deletion was missed.
//!
//! Handlers ([`ResourceEventHandler`], or closures via [`ResourceEventHandlerFns`])
//! each get their own buffer and thread (see [`listener`](self#buffer-policy)), so a
//! slow or panicking handler stalls nobody else. A handler added after start first
//! receives an add for every cached object, flagged as initial list. Each handler may
//! ask for its own resync period; the informer checks at the smallest period asked
//! before start (client-go's rule: later, smaller periods are raised to it).
//! [`SharedIndexInformer::subscribe`] gives the same notifications as a `Stream`.
//!
//! # Buffer policy
//! Unbounded per handler: the process loop never waits for a handler, so the cache
//! stays current whatever handlers do; a handler that lags buffers notifications
//! (each an `Arc` or two, never a copy of the object). [`Registration::stats`] shows
//! how many are pending and the peak.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use informer::informer::{ResourceEventHandlerFns, SharedIndexInformer};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::{Api, ResourceExt};
//!
//! let informer = SharedIndexInformer::new(Api::<ConfigMap>::default_namespaced(client));
//! informer.add_event_handler(
//!     ResourceEventHandlerFns::new()
//!         .on_add(|cm: &std::sync::Arc<ConfigMap>, _| println!("Added: {}", cm.name_any()))
//!         .on_delete(|gone| println!("Deleted: {}", gone.object().name_any())),
//! )?;
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! let running = tokio::spawn({
//!     let informer = informer.clone();
//!     async move { informer.run(async { stopped.await.ok(); }).await }
//! });
//! informer::informer::wait_for_cache_sync(&[&informer]).await;
//! println!("{} config maps", informer.lister().list_all().len());
//! stop.send(()).ok();
//! running.await??;
//! # Ok(())
//! # }
//! ```

mod handler;
pub(crate) mod listener;
mod processor;
mod registration;
mod sync;

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::Resource;
use serde::de::DeserializeOwned;

pub use handler::{Notification, ResourceEventHandler, ResourceEventHandlerFns};
pub use listener::ListenerStats;
pub use registration::{Registration, Subscription};
pub use sync::{HasSynced, wait_for_cache_sync};

use crate::fifo::{Delta, DeltaFifo, DeltaFifoOptions, Deltas, PopBatch, ProcessError};
use crate::key::{KeyFn, ObjectKey};
use crate::lister::Lister;
use crate::reflector::{
    self, ApiListerWatcher, CachedObjects, ListerWatcher, Reflector, ReflectorError,
    ReflectorStats, ReflectorStore,
};
use crate::store::{Indexer, Indexers, NAMESPACE_INDEX, StoreError, WriteBatch, Writer};
use processor::Processor;

/// Keys processed at most between two wake-ups of the handlers while the DeltaFIFO
/// stays busy.
const WAKE_EVERY: usize = 256;

/// Keys popped and applied under one acquisition of the DeltaFIFO's, the cache's and the
/// handler list's locks. Readers of the cache wait for at most this many updates.
const POP_BATCH: usize = 32;

/// Changes an object before it is stored, e.g. to drop fields nobody reads (client-go's
/// `TransformFunc`; `managedFields` are already left out while decoding, see
/// [`ManagedFields`](crate::reflector::ManagedFields)). It runs once per object, on the
/// decoded value, before anything else sees it. A transform that panics is contained:
/// that object is logged and skipped (as if the server had not sent it), and the
/// informer goes on.
pub type Transform<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

/// Errors of informer operations.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InformerError {
    /// `run` was called a second time.
    #[error("the informer was already started")]
    AlreadyStarted,
    /// The informer has stopped; it takes no more handlers.
    #[error("the informer has stopped")]
    Stopped,
    /// A setting that can only change before start was changed after.
    #[error("{0} can only be set before the informer starts")]
    SetAfterStart(&'static str),
    /// Adding indexes failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How an informer is built: the options client-go passes to
/// `NewSharedIndexInformer`, plus reflector settings.
#[must_use]
pub struct InformerOptions<K> {
    /// The default resync period of handlers added without one (`None`: never).
    pub resync: Option<Duration>,
    /// Indexes besides the built-in namespace index.
    pub indexers: Indexers<K>,
    /// The key function (default `namespace/name`).
    pub key_fn: KeyFn<K>,
    /// Reflector settings (page size, watch timeouts, backoff...). Its resync period
    /// and should-resync hook are set by the informer.
    pub reflector: reflector::Config,
    /// Applied to every object before it is stored.
    pub transform: Option<Transform<K>>,
}

impl<K: Resource + 'static> Default for InformerOptions<K> {
    fn default() -> Self {
        Self {
            resync: None,
            indexers: Indexers::new(),
            key_fn: KeyFn::meta_namespace(),
            reflector: reflector::Config::default(),
            transform: None,
        }
    }
}

impl<K> std::fmt::Debug for InformerOptions<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InformerOptions")
            .field("resync", &self.resync)
            .field("indexers", &self.indexers.names().collect::<Vec<_>>())
            .field("key_fn", &self.key_fn)
            .field("reflector", &self.reflector)
            .field("transform", &self.transform.is_some())
            .finish()
    }
}

impl<K> InformerOptions<K> {
    /// The default resync period for handlers.
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period).filter(|p| !p.is_zero());
        self
    }

    /// Indexes to maintain (more can be added later with
    /// [`Indexer::add_indexers`]).
    pub fn indexers(mut self, indexers: Indexers<K>) -> Self {
        self.indexers = indexers;
        self
    }

    /// The key function.
    pub fn key_fn(mut self, key_fn: KeyFn<K>) -> Self {
        self.key_fn = key_fn;
        self
    }

    /// Reflector settings.
    pub fn reflector(mut self, config: reflector::Config) -> Self {
        self.reflector = config;
        self
    }

    /// A transform applied to each object before it is stored.
    pub fn transform(mut self, transform: impl Fn(K) -> K + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(transform));
        self
    }
}

/// A shared, indexed informer for resource type `K`; see the [module docs](self).
/// Cloning gives another handle to the same informer.
pub struct SharedIndexInformer<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for SharedIndexInformer<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
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
            .field("started", &self.inner.started.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

pub(crate) struct Inner<K> {
    kind: &'static str,
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    indexer: Indexer<K>,
    fifo: DeltaFifo<K>,
    processor: Processor<K>,
    /// The cache's only writer. Held while one object's deltas are applied, and while
    /// a late handler receives its replay, so the two never interleave.
    writer: Mutex<Writer<K>>,
    settings: Mutex<Settings<K>>,
    started: AtomicBool,
    stopped: AtomicBool,
    reflector_stats: Mutex<Option<Arc<ReflectorStats>>>,
}

struct Settings<K> {
    default_resync: Option<Duration>,
    /// The reflector's resync tick: the smallest period asked for before start.
    resync_check_period: Option<Duration>,
    reflector: reflector::Config,
    transform: Option<Transform<K>>,
}

impl<K> SharedIndexInformer<K>
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default,
{
    /// An informer over what `api` addresses (`Api::all`, `Api::namespaced`...), with
    /// default options. Its objects leave out `metadata.managedFields`; to keep them:
    ///
    /// ```no_run
    /// # fn demo(api: kube::Api<k8s_openapi::api::core::v1::ConfigMap>) {
    /// use informer::informer::{InformerOptions, SharedIndexInformer};
    /// use informer::reflector::{ApiListerWatcher, ManagedFields};
    ///
    /// let informer = SharedIndexInformer::with_options(
    ///     ApiListerWatcher::new(api).managed_fields(ManagedFields::Keep),
    ///     InformerOptions::default(),
    /// )
    /// .expect("default options define no conflicting index");
    /// # let _ = informer;
    /// # }
    /// ```
    pub fn new(api: kube::Api<K>) -> Self {
        Self::with_options(ApiListerWatcher::new(api), InformerOptions::default())
            .expect("default options define no conflicting index")
    }
}

impl<K> SharedIndexInformer<K>
where
    K: Resource + Send + Sync + 'static,
{
    /// An informer fed by any [`ListerWatcher`]. Fails only when `options.indexers`
    /// names an index twice.
    pub fn with_options(
        lister_watcher: impl ListerWatcher<K> + 'static,
        options: InformerOptions<K>,
    ) -> Result<Self, InformerError> {
        let InformerOptions {
            resync,
            indexers,
            key_fn,
            reflector,
            transform,
        } = options;
        // Namespaced listing is answered from the namespace index, so it is always there.
        let indexers = if indexers.names().any(|name| name == NAMESPACE_INDEX) {
            indexers
        } else {
            indexers.with_namespace_index()
        };
        let writer = Writer::with_indexers(key_fn.clone(), indexers)?;
        let indexer = writer.indexer();
        let fifo = DeltaFifo::new(DeltaFifoOptions::new(key_fn).known_objects(indexer.clone()));
        let kind = short_type_name::<K>();
        Ok(Self {
            inner: Arc::new(Inner {
                kind,
                lister_watcher: Arc::new(lister_watcher),
                indexer,
                fifo,
                processor: Processor::new(kind),
                writer: Mutex::new(writer),
                settings: Mutex::new(Settings {
                    default_resync: resync,
                    resync_check_period: resync,
                    reflector,
                    transform,
                }),
                started: AtomicBool::new(false),
                stopped: AtomicBool::new(false),
                reflector_stats: Mutex::new(None),
            }),
        })
    }

    /// Registers a handler with the default resync period. Added after start, it
    /// first receives an add for every cached object.
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler<K>,
    ) -> Result<Registration<K>, InformerError> {
        let resync = self.inner.settings.lock().expect("lock").default_resync;
        self.add_boxed(Box::new(handler), resync)
    }

    /// Registers a handler with its own resync period (client-go's
    /// `AddEventHandlerWithResyncPeriod`).
    pub fn add_event_handler_with_resync(
        &self,
        handler: impl ResourceEventHandler<K>,
        resync: Duration,
    ) -> Result<Registration<K>, InformerError> {
        self.add_boxed(Box::new(handler), self.inner.adjust_resync(resync))
    }

    fn add_boxed(
        &self,
        handler: Box<dyn ResourceEventHandler<K>>,
        resync: Option<Duration>,
    ) -> Result<Registration<K>, InformerError> {
        let inner = &self.inner;
        if inner.stopped.load(Ordering::SeqCst) {
            return Err(InformerError::Stopped);
        }
        // No deltas are applied while the replay is queued: the handler sees the
        // cache as of one moment, then every change after it.
        let _writer = inner.writer.lock().expect("lock");
        let listener = inner
            .processor
            .add_handler(handler, resync, |listener| inner.replay(listener))
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
        let resync = inner.settings.lock().expect("lock").default_resync;
        let _writer = inner.writer.lock().expect("lock");
        let (listener, receiver) = inner
            .processor
            .add_subscriber(resync, |listener| inner.replay(listener))
            .ok_or(InformerError::Stopped)?;
        Ok(Subscription {
            registration: Registration {
                informer: Arc::clone(inner),
                listener,
            },
            receiver,
        })
    }

    /// The cache (read-only handle).
    pub fn indexer(&self) -> Indexer<K> {
        self.inner.indexer.clone()
    }

    /// Typed reads of the cache.
    pub fn lister(&self) -> Lister<K> {
        Lister::new(self.inner.indexer.clone())
    }

    /// Whether the initial list has been stored in the cache.
    pub fn has_synced(&self) -> bool {
        self.inner.has_synced()
    }

    /// The resourceVersion the cache is at ("" before the first list).
    pub fn last_sync_resource_version(&self) -> String {
        self.inner
            .reflector_stats
            .lock()
            .expect("lock")
            .as_ref()
            .map(|stats| stats.last_resource_version())
            .unwrap_or_default()
    }

    /// The reflector's counters (lists, watches, errors...), once started.
    pub fn reflector_stats(&self) -> Option<reflector::StatsSnapshot> {
        self.inner
            .reflector_stats
            .lock()
            .expect("lock")
            .as_ref()
            .map(|stats| stats.snapshot())
    }

    /// How many handlers and subscriptions are registered.
    pub fn handler_count(&self) -> usize {
        self.inner.processor.listener_count()
    }

    /// Sets the transform applied to each object before it is stored. Only before
    /// start.
    pub fn set_transform(
        &self,
        transform: impl Fn(K) -> K + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        self.before_start("the transform", |settings| {
            settings.transform = Some(Arc::new(transform));
        })
    }

    /// Sets the handler told about every list and watch error (forbidden,
    /// unauthorized, expired, undecodable objects...). Only before start.
    pub fn set_watch_error_handler(
        &self,
        handler: impl Fn(&ReflectorError) + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        self.before_start("the watch error handler", |settings| {
            settings.reflector.error_handler = Some(Arc::new(handler));
        })
    }

    fn before_start(
        &self,
        what: &'static str,
        change: impl FnOnce(&mut Settings<K>),
    ) -> Result<(), InformerError> {
        let mut settings = self.inner.settings.lock().expect("lock");
        if self.inner.started.load(Ordering::SeqCst) {
            return Err(InformerError::SetAfterStart(what));
        }
        change(&mut settings);
        Ok(())
    }

    /// Lists, watches, fills the cache and notifies handlers until `shutdown`
    /// completes; then stops every handler thread and returns. An informer runs
    /// once: a second call is [`InformerError::AlreadyStarted`].
    pub async fn run(&self, shutdown: impl Future<Output = ()>) -> Result<(), InformerError> {
        let inner = &self.inner;
        let reflector = {
            let settings = inner.settings.lock().expect("lock");
            if inner.started.swap(true, Ordering::SeqCst) {
                return Err(InformerError::AlreadyStarted);
            }
            let processor_inner = Arc::clone(inner);
            let mut config = settings.reflector.clone();
            config.resync_period = settings.resync_check_period;
            config.should_resync =
                Some(Arc::new(move || processor_inner.processor.should_resync()));
            let sink = FifoSink {
                fifo: inner.fifo.clone(),
                transform: settings.transform.clone(),
                indexer: inner.indexer.clone(),
            };
            Reflector::from_parts(Arc::clone(&inner.lister_watcher), Arc::new(sink), config)
        };
        *inner.reflector_stats.lock().expect("lock") = Some(reflector.stats_handle());
        inner.processor.start();

        let process = async {
            let mut since_wake = 0usize;
            loop {
                let popped = inner
                    .fifo
                    .pop_batch(POP_BATCH, |batch| inner.handle_batch(batch))
                    .await;
                let Some((processed, drained)) = popped else {
                    break;
                };
                // Handlers are woken when the queue runs dry (and at least every
                // `WAKE_EVERY` keys while it does not), not for every notification.
                since_wake += processed;
                if since_wake >= WAKE_EVERY || drained {
                    since_wake = 0;
                    inner.processor.wake();
                }
            }
        };
        tokio::select! {
            () = shutdown => {}
            _ = reflector.run(std::future::pending()) => {}
            () = process => {}
        }

        inner.stopped.store(true, Ordering::SeqCst);
        inner.fifo.close();
        let threads = inner.processor.stop();
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
        Ok(())
    }
}

impl<K: Resource + Send + Sync + 'static> HasSynced for SharedIndexInformer<K> {
    fn has_synced(&self) -> bool {
        self.inner.has_synced()
    }
}

impl<K: 'static> Inner<K> {
    fn has_synced(&self) -> bool {
        self.fifo.has_synced()
    }
}

impl<K: Resource + Send + Sync + 'static> Inner<K> {
    /// client-go's rule: before start a smaller period lowers the resync check
    /// period; after start it cannot, so the handler's period is raised to it.
    fn adjust_resync(&self, requested: Duration) -> Option<Duration> {
        if requested.is_zero() {
            return None;
        }
        let mut settings = self.settings.lock().expect("lock");
        let check = settings.resync_check_period;
        if self.started.load(Ordering::SeqCst) {
            match check {
                None => {
                    tracing::warn!(
                        kind = self.kind,
                        ?requested,
                        "informer started without resync: the handler's resync period is ignored"
                    );
                    None
                }
                Some(check) if requested < check => {
                    tracing::warn!(
                        kind = self.kind,
                        ?requested,
                        ?check,
                        "resync period smaller than the running informer's check period; raised"
                    );
                    Some(check)
                }
                Some(_) => Some(requested),
            }
        } else {
            if check.is_none_or(|check| requested < check) {
                settings.resync_check_period = Some(requested);
            }
            Some(requested)
        }
    }

    /// Queues an initial-list add of every cached object for a new listener.
    fn replay(&self, listener: &listener::Listener<K>) {
        self.indexer.for_each(|_, object| {
            listener.push(Notification::Add {
                object: Arc::clone(object),
                is_initial_list: true,
            });
        });
    }

    /// Applies the deltas of the keys of one batch, each as
    /// [`handle_deltas`](Self::handle_deltas), with the writer, the cache and the
    /// handler list locked once for the batch; returns how many keys it applied.
    fn handle_batch(&self, batch: &mut PopBatch<'_, K>) -> usize {
        let mut writer = self.writer.lock().expect("lock");
        let mut store = writer.batch();
        let listeners = self.processor.listeners();
        let mut processed = 0;
        while let Some(result) =
            batch.next(|deltas| self.handle_deltas(&mut store, &listeners, deltas))
        {
            processed += 1;
            if let Err(error) = result {
                tracing::error!(%error, "processing deltas failed");
            }
        }
        processed
    }

    /// Applies one key's deltas: the cache first, then the handlers (client-go's
    /// `HandleDeltas`).
    fn handle_deltas(
        &self,
        writer: &mut WriteBatch<'_, K>,
        listeners: &[Arc<listener::Listener<K>>],
        deltas: &Deltas<K>,
    ) -> Result<(), ProcessError<std::convert::Infallible>> {
        let distribute = |notification, is_resync| {
            Processor::distribute_to(listeners, notification, is_resync);
        };
        let is_initial_list = deltas.is_initial_list();
        let key = deltas.key();
        for delta in deltas.iter() {
            match delta {
                Delta::Added(object)
                | Delta::Updated(object)
                | Delta::Sync(object)
                | Delta::Replaced(object) => match writer.upsert_keyed(key, Arc::clone(object)) {
                    Some(old) => {
                        let is_resync = matches!(delta, Delta::Sync(_))
                            || (matches!(delta, Delta::Replaced(_))
                                && same_version(old.as_ref(), object.as_ref()));
                        distribute(
                            Notification::Update {
                                old,
                                new: Arc::clone(object),
                            },
                            is_resync,
                        );
                    }
                    None => distribute(
                        Notification::Add {
                            object: Arc::clone(object),
                            is_initial_list,
                        },
                        false,
                    ),
                },
                Delta::Deleted(deleted) => {
                    writer.delete_key(key);
                    distribute(Notification::Delete(deleted.clone()), false);
                }
            }
        }
        Ok(())
    }
}

fn same_version<K: Resource>(old: &K, new: &K) -> bool {
    let (old, new) = (&old.meta().resource_version, &new.meta().resource_version);
    old.is_some() && old == new
}

/// The reflector's store: applies the transform, then queues deltas.
struct FifoSink<K> {
    fifo: DeltaFifo<K>,
    transform: Option<Transform<K>>,
    /// The cache, offered to relists: objects listed unchanged are taken from it.
    indexer: Indexer<K>,
}

impl<K: Resource + Send + Sync + 'static> FifoSink<K> {
    /// The object as it will be stored: transformed, in an `Arc`. A transform that
    /// panics is contained: the object is reported and skipped, the informer goes on.
    fn prepare(&self, object: K) -> Option<Arc<K>> {
        let Some(transform) = &self.transform else {
            return Some(Arc::new(object));
        };
        // Named before the object moves into the transform, for the report.
        let key = ObjectKey::of(&object);
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| transform(object))) {
            Ok(object) => Some(Arc::new(object)),
            Err(panic) => {
                tracing::error!(
                    %key,
                    panic = listener::panic_message(&panic),
                    "transform panicked; the object is skipped"
                );
                None
            }
        }
    }
}

impl<K: Resource + Send + Sync + 'static> ReflectorStore<K> for FifoSink<K> {
    fn add(&self, object: K) {
        if let Some(object) = self.prepare(object) {
            self.fifo.add(object);
        }
    }
    fn update(&self, object: K) {
        if let Some(object) = self.prepare(object) {
            self.fifo.update(object);
        }
    }
    fn delete(&self, object: K) {
        if let Some(object) = self.prepare(object) {
            self.fifo.delete(object);
        }
    }
    fn replace(&self, mut objects: Vec<K>, unchanged: Vec<Arc<K>>, resource_version: &str) {
        // Each object moves into its `Arc` in list order (popped from the end of the
        // reversed list), and the list hands its memory back as it empties, so a large
        // list is never held both as the decoded `Vec<K>` and as the `Arc`s. Unchanged
        // objects are the cache's own, already transformed.
        objects.reverse();
        let mut prepared = Vec::with_capacity(objects.len() + unchanged.len());
        while let Some(object) = objects.pop() {
            prepared.extend(self.prepare(object));
            if objects.capacity() > 1024 && objects.len() < objects.capacity() / 2 {
                objects.shrink_to_fit();
            }
        }
        prepared.extend(unchanged);
        self.fifo.replace(prepared, resource_version);
    }
    fn resync(&self) {
        self.fifo.resync();
    }
    fn cached_objects(&self) -> Option<Arc<dyn CachedObjects<K>>> {
        // Nothing to reuse on the first list: decode it directly.
        (!self.indexer.is_empty()).then(|| Arc::new(self.indexer.clone()) as _)
    }
}

/// `Deployment` for `k8s_openapi::api::apps::v1::Deployment`.
pub(crate) fn short_type_name<K>() -> &'static str {
    let name = std::any::type_name::<K>();
    let name = name.split('<').next().unwrap_or(name);
    name.rsplit("::").next().unwrap_or(name)
}
