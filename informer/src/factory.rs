//! SharedInformerFactory: one informer per type (and scope), shared by all who ask.
//!
//! client-go's `SharedInformerFactory`, generic instead of generated:
//! `factory.informer::<Deployment>()` returns the same informer every time it is
//! asked, so every controller in a process shares one watch and one cache per type.
//! Informers are keyed by (type, namespace, label selector, field selector, key
//! filter): [`SharedInformerFactory::informer_for`] asks for a differently scoped one,
//! such as one that keeps only a shard's objects ([`InformerScope::filtered`]).
//! [`informable`](SharedInformerFactory::informable) and
//! [`informable_for`](SharedInformerFactory::informable_for) share the same informers
//! and make them maintain an [`Informable`] type's key function and indexes.
//!
//! Beside full typed informers it makes metadata-only ones
//! ([`metadata_informer::<Pod>()`](SharedInformerFactory::metadata_informer): the server
//! sends, and the cache holds, only each object's `metadata`) and dynamic ones
//! ([`dynamic_informer(&resource)`](SharedInformerFactory::dynamic_informer), for a
//! resource known only at run time; see [`crate::dynamic`]), each shared the same way
//! and each its own entry: a full, a metadata-only and a dynamic informer of ConfigMaps
//! are three informers. Per-type options address them by their object type
//! (`resync_for::<PartialObjectMeta<Pod>>`, `resync_for::<DynamicObject>`).
//!
//! [`start`](SharedInformerFactory::start) runs every informer not yet running (call
//! it again after asking for more), [`wait_for_cache_sync`](SharedInformerFactory::wait_for_cache_sync)
//! waits for them, and [`shutdown`](SharedInformerFactory::shutdown) stops them all and
//! waits until every task and handler thread has ended.
//!
//! Nothing fails silently: waiting for an informer that was never started is an error
//! that names it ([`CacheSyncError::NotStarted`]), and
//! [`wait_for_cache_sync_within`](SharedInformerFactory::wait_for_cache_sync_within)
//! gives up after a while with, for each informer not synced, why its last list
//! failed ([`CacheSyncError::TimedOut`]): a CRD that is not installed
//! (`backups.example.com is not served by the API server`), a server that cannot be
//! reached (named by its address: make the factory with
//! [`from_config`](SharedInformerFactory::from_config) for the configured one), access
//! denied. The informers also log each such failure, at warn level, once per streak.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use informer::factory::{FactoryOptions, SharedInformerFactory};
//! use k8s_openapi::api::apps::v1::Deployment;
//! use std::time::Duration;
//!
//! let factory = SharedInformerFactory::new(
//!     client,
//!     FactoryOptions::default()
//!         .namespace("default")
//!         .default_resync(Duration::from_secs(600))
//!         // Every type: drop kubectl's copy of the last applied object before
//!         // caching (managedFields are already left out by default).
//!         .transform_metadata(|meta| {
//!             if let Some(annotations) = &mut meta.annotations {
//!                 annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
//!             }
//!         }),
//! );
//! let deployments = factory.informer::<Deployment>();
//! factory.start();
//! // An error names each informer not synced after a minute, and why.
//! factory.wait_for_cache_sync_within(Duration::from_secs(60)).await?;
//! println!("{} deployments", deployments.lister().namespaced("default").list_all().len());
//! factory.shutdown().await;
//! # Ok(())
//! # }
//! ```

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::{BoxFuture, join_all};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::informable::Informable;
use crate::lock::MutexExt;
use crate::reflector::{self, ApiListerWatcher, ListOptions, ManagedFields};
use crate::scope::FactoryScope;
use crate::shared_informer::{HasSynced, InformerOptions, QueueKind, SharedIndexInformer};
use crate::store::Indexers;

mod dynamic;
mod managed;
mod metadata;
mod scope;
mod sync_error;

#[cfg(feature = "metrics")]
use managed::FactoryInformers;
use managed::ManagedInformer;
use scope::Target;
pub use scope::{InformerScope, NamedKeyFilter};
pub use sync_error::{CacheSyncError, Unsynced};

type Tweak = Arc<dyn Fn(&mut ListOptions) + Send + Sync>;
type MetadataTransform = Arc<dyn Fn(&mut ObjectMeta) + Send + Sync>;

/// Factory settings: a `Default` struct with `#[must_use]` builder methods, after
/// client-go's `SharedInformerOption`s.
#[derive(Clone, Default)]
#[must_use]
pub struct FactoryOptions {
    namespace: Option<String>,
    tweak: Option<Tweak>,
    default_resync: Option<Duration>,
    resync_per_type: HashMap<TypeId, Duration>,
    transform_metadata: Option<MetadataTransform>,
    transform_per_type: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
    managed_fields: ManagedFields,
    managed_fields_per_type: HashMap<TypeId, ManagedFields>,
    reflector: reflector::Config,
    queue: QueueKind,
    queue_per_type: HashMap<TypeId, QueueKind>,
    #[cfg(feature = "metrics")]
    metrics: Option<crate::metrics::Metrics>,
}

impl std::fmt::Debug for FactoryOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FactoryOptions")
            .field("namespace", &self.namespace)
            .field("tweak", &self.tweak.is_some())
            .field("default_resync", &self.default_resync)
            .field("resync_per_type", &self.resync_per_type.len())
            .field("transform_metadata", &self.transform_metadata.is_some())
            .field("transform_per_type", &self.transform_per_type.len())
            .field("managed_fields", &self.managed_fields)
            .field(
                "managed_fields_per_type",
                &self.managed_fields_per_type.len(),
            )
            .field("queue", &self.queue)
            .field("queue_per_type", &self.queue_per_type)
            .finish()
    }
}

impl FactoryOptions {
    /// Watch only this namespace (client-go's `WithNamespace`); cluster-scoped types
    /// are watched cluster-wide regardless.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Changes every informer's list options (client-go's `WithTweakListOptions`),
    /// e.g. to add a label selector.
    pub fn tweak_list_options(
        mut self,
        tweak: impl Fn(&mut ListOptions) + Send + Sync + 'static,
    ) -> Self {
        self.tweak = Some(Arc::new(tweak));
        self
    }

    /// The resync period of every informer (`defaultResync`).
    pub fn default_resync(mut self, period: Duration) -> Self {
        self.default_resync = Some(period).filter(|p| !p.is_zero());
        self
    }

    /// The resync period of `K`'s informers (client-go's `WithCustomResyncConfig`).
    pub fn resync_for<K: 'static>(mut self, period: Duration) -> Self {
        self.resync_per_type.insert(TypeId::of::<K>(), period);
        self
    }

    /// Changes every object's metadata before it is cached, whatever its type
    /// (e.g. drop annotations nobody reads).
    pub fn transform_metadata(
        mut self,
        transform: impl Fn(&mut ObjectMeta) + Send + Sync + 'static,
    ) -> Self {
        self.transform_metadata = Some(Arc::new(transform));
        self
    }

    /// Changes `K`'s objects before they are cached (after
    /// [`transform_metadata`](Self::transform_metadata)).
    pub fn transform_for<K: 'static>(
        mut self,
        transform: impl Fn(K) -> K + Send + Sync + 'static,
    ) -> Self {
        let transform: Arc<dyn Fn(K) -> K + Send + Sync> = Arc::new(transform);
        self.transform_per_type
            .insert(TypeId::of::<K>(), Arc::new(transform));
        self
    }

    /// Whether every informer's objects keep `metadata.managedFields`; by default they
    /// are dropped while decoding (see [`ManagedFields`]).
    pub fn managed_fields(mut self, managed_fields: ManagedFields) -> Self {
        self.managed_fields = managed_fields;
        self
    }

    /// Whether `K`'s objects keep `metadata.managedFields` (over
    /// [`managed_fields`](Self::managed_fields)).
    pub fn managed_fields_for<K: 'static>(mut self, managed_fields: ManagedFields) -> Self {
        self.managed_fields_per_type
            .insert(TypeId::of::<K>(), managed_fields);
        self
    }

    /// Reflector settings for every informer.
    pub fn reflector(mut self, config: reflector::Config) -> Self {
        self.reflector = config;
        self
    }

    /// The queue of every informer (see [`QueueKind`]; in order by default).
    pub fn queue(mut self, kind: QueueKind) -> Self {
        self.queue = kind;
        self
    }

    /// The queue of `K`'s informers (over [`queue`](Self::queue)).
    pub fn queue_for<K: 'static>(mut self, kind: QueueKind) -> Self {
        self.queue_per_type.insert(TypeId::of::<K>(), kind);
        self
    }

    /// Reports every informer of the factory to `metrics`, and every
    /// [`Controller`](crate::controller::Controller) built on the factory its queue
    /// and reconciles (see [`crate::metrics`]).
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn metrics(mut self, metrics: &crate::metrics::Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct InformerKey {
    type_id: TypeId,
    /// The resource (`group`, `version`, `plural`): fixed by the type for a static one,
    /// what tells two informers of [`DynamicObject`] apart.
    resource: [String; 3],
    scope: InformerScope,
}

struct Entry {
    name: String,
    informer: Arc<dyn ManagedInformer>,
    started: bool,
}

struct State {
    informers: HashMap<InformerKey, Entry>,
    tasks: Vec<JoinHandle<()>>,
    /// `start` was called at least once.
    started: bool,
    shut_down: bool,
}

/// Shares informers by type and scope; see the [module docs](self). Cloning gives
/// another handle to the same factory.
#[derive(Clone)]
pub struct SharedInformerFactory {
    client: Client,
    /// The API server's URL, when the factory made the client (errors name it).
    server_url: Option<String>,
    options: Arc<FactoryOptions>,
    state: Arc<Mutex<State>>,
    shutdown: watch::Sender<bool>,
}

impl std::fmt::Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.locked();
        f.debug_struct("SharedInformerFactory")
            .field("options", &self.options)
            .field(
                "informers",
                &state
                    .informers
                    .values()
                    .map(|e| &e.name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl SharedInformerFactory {
    /// A factory making informers with `client`. A [`kube::Client`] does not tell
    /// its server's address, so errors about a server that cannot be reached name
    /// only the socket address the connection failed at, when known;
    /// [`from_config`](Self::from_config) names the configured URL.
    pub fn new(client: Client, options: FactoryOptions) -> Self {
        let state = Arc::new(Mutex::new(State {
            informers: HashMap::new(),
            tasks: Vec::new(),
            started: false,
            shut_down: false,
        }));
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &options.metrics {
            metrics.observe(Box::new(FactoryInformers(Arc::downgrade(&state))));
        }
        Self {
            client,
            server_url: None,
            options: Arc::new(options),
            state,
            shutdown: watch::Sender::new(false),
        }
    }

    /// The metrics given in [`FactoryOptions::metrics`], which the controllers built on
    /// the factory report to.
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn metrics(&self) -> Option<&crate::metrics::Metrics> {
        self.options.metrics.as_ref()
    }

    /// The client the factory's informers use.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// A factory making informers with a client made from `config` (for example
    /// `kube::Config::infer().await?`). Errors about a server that cannot be reached
    /// name `config.cluster_url`.
    pub fn from_config(config: kube::Config, options: FactoryOptions) -> Result<Self, kube::Error> {
        let server_url = config.cluster_url.to_string();
        let mut factory = Self::new(Client::try_from(config)?, options);
        factory.server_url = Some(server_url);
        Ok(factory)
    }

    /// The informer for `K` in the factory's namespace, made on first request and
    /// the same one ever after.
    pub fn informer<K>(&self) -> SharedIndexInformer<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
        K::Scope: FactoryScope,
    {
        self.informer_for(self.default_scope())
    }

    /// The scope [`informer`](Self::informer) uses: the factory's namespace.
    pub(crate) fn default_scope(&self) -> InformerScope {
        InformerScope {
            namespace: self.options.namespace.clone(),
            ..InformerScope::default()
        }
    }

    /// The informer for `K` in `scope` (namespace and selectors), shared like
    /// [`informer`](Self::informer). The factory's tweak applies on top of `scope`.
    pub fn informer_for<K>(&self, scope: InformerScope) -> SharedIndexInformer<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
        K::Scope: FactoryScope,
    {
        self.informer_with(Target::<K>::of(), scope, InformerOptions::default)
            .0
    }

    /// The shared informer for `K` in the factory's namespace, maintaining `K`'s key
    /// function and indexes. Same sharing as [`informer`](Self::informer): both return
    /// the same informer for a type.
    ///
    /// If `informer::<K>()` made it first, the derived indexes are added to it now;
    /// its key function stays the default one.
    pub fn informable<K>(&self) -> SharedIndexInformer<K>
    where
        K: Informable<DynamicType = ()> + DeserializeOwned,
        K::Scope: FactoryScope,
    {
        self.informable_for(self.default_scope())
    }

    /// [`informable`](Self::informable) in `scope`, shared like
    /// [`informer_for`](Self::informer_for).
    pub fn informable_for<K>(&self, scope: InformerScope) -> SharedIndexInformer<K>
    where
        K: Informable<DynamicType = ()> + DeserializeOwned,
        K::Scope: FactoryScope,
    {
        let (informer, made) =
            self.informer_with(Target::<K>::of(), scope, InformerOptions::informable);
        if !made {
            add_missing(&informer, K::indexers());
        }
        informer
    }

    /// The informer for `K` of `target` in `scope`, made from `base()` when new (the
    /// factory's resync, transform and reflector settings go on top); also says whether
    /// this call made it.
    fn informer_with<K>(
        &self,
        target: Target<'_, K>,
        scope: InformerScope,
        base: impl FnOnce() -> InformerOptions<K>,
    ) -> (SharedIndexInformer<K>, bool)
    where
        K: Resource + DeserializeOwned + Send + Sync + 'static,
    {
        let dynamic_type = target.dynamic_type;
        let mut scope = scope;
        if !target.namespaced {
            scope.namespace = None;
        }
        let key = InformerKey {
            type_id: TypeId::of::<K>(),
            resource: [
                K::group(dynamic_type).into_owned(),
                K::version(dynamic_type).into_owned(),
                K::plural(dynamic_type).into_owned(),
            ],
            scope,
        };
        let mut state = self.state.locked();
        if let Some(entry) = state.informers.get(&key) {
            let informer = entry
                .informer
                .as_any()
                .downcast_ref::<SharedIndexInformer<K>>()
                .expect("entries are keyed by their type")
                .clone();
            return (informer, false);
        }
        let informer = self.make::<K>(dynamic_type, &key.scope, base());
        let mut kind = K::kind(dynamic_type).into_owned();
        if target.dynamic {
            kind.push_str(" (dynamic)");
        }
        if K::metadata_api() {
            kind.push_str(" metadata");
        }
        let name = key.scope.name_for(&kind);
        state.informers.insert(
            key,
            Entry {
                name,
                informer: Arc::new(informer.clone()),
                started: false,
            },
        );
        (informer, true)
    }

    fn make<K>(
        &self,
        dynamic_type: &K::DynamicType,
        scope: &InformerScope,
        base: InformerOptions<K>,
    ) -> SharedIndexInformer<K>
    where
        K: Resource + DeserializeOwned + Send + Sync + 'static,
    {
        let options = &self.options;
        let mut lister_watcher = ApiListerWatcher::<K>::in_namespace_with(
            self.client.clone(),
            dynamic_type,
            scope.namespace.as_deref(),
        )
        .tweak(|list| {
            list.label_selector = scope.label_selector.clone();
            list.field_selector = scope.field_selector.clone();
            if let Some(tweak) = &options.tweak {
                tweak(list);
            }
        })
        .managed_fields(
            options
                .managed_fields_per_type
                .get(&TypeId::of::<K>())
                .copied()
                .unwrap_or(options.managed_fields),
        );
        if let Some(url) = &self.server_url {
            lister_watcher = lister_watcher.server_url(url.clone());
        }
        let queue = options
            .queue_per_type
            .get(&TypeId::of::<K>())
            .copied()
            .unwrap_or(options.queue);
        let mut informer_options = base
            .reflector(scope.reflector_config(&options.reflector))
            .queue(queue);
        let resync = options
            .resync_per_type
            .get(&TypeId::of::<K>())
            .copied()
            .or(options.default_resync);
        if let Some(resync) = resync {
            informer_options = informer_options.resync(resync);
        }
        let metadata = options.transform_metadata.clone();
        let typed = options
            .transform_per_type
            .get(&TypeId::of::<K>())
            .and_then(|t| t.downcast_ref::<Arc<dyn Fn(K) -> K + Send + Sync>>())
            .cloned();
        if metadata.is_some() || typed.is_some() {
            informer_options = informer_options.transform(move |mut object: K| {
                if let Some(metadata) = &metadata {
                    metadata(object.meta_mut());
                }
                match &typed {
                    Some(typed) => typed(object),
                    None => object,
                }
            });
        }
        SharedIndexInformer::with_options(lister_watcher, informer_options)
            .expect("the factory defines no indexes that could conflict")
    }

    /// Starts every informer not started yet, each on its own task. Idempotent; call
    /// it again after asking for more informers. Must be called inside a tokio
    /// runtime. After [`shutdown`](Self::shutdown) it starts nothing.
    pub fn start(&self) {
        let mut state = self.state.locked();
        if state.shut_down {
            return;
        }
        state.started = true;
        let mut started = Vec::new();
        for entry in state.informers.values_mut().filter(|e| !e.started) {
            entry.started = true;
            started.push(tokio::spawn(entry.informer.run(self.shutdown.subscribe())));
        }
        state.tasks.extend(started);
    }

    /// Waits until every informer has synced (client-go's `WaitForCacheSync`), for as
    /// long as it takes: a list that keeps failing is retried, and logged, without end.
    /// [`wait_for_cache_sync_within`](Self::wait_for_cache_sync_within) gives up after
    /// a while and says why.
    ///
    /// Fails at once, naming them, if informers were asked for but not
    /// [`start`](Self::start)ed (or if `start` was never called): waiting for them
    /// would never end, and skipping them would leave their caches silently empty.
    /// Fails when the factory shuts down first.
    pub async fn wait_for_cache_sync(&self) -> Result<(), CacheSyncError> {
        self.wait(None).await
    }

    /// [`wait_for_cache_sync`](Self::wait_for_cache_sync), giving up after `timeout`
    /// with [`CacheSyncError::TimedOut`]: every informer not synced by then, with why
    /// its last list failed (a resource the server does not serve, a server that
    /// cannot be reached, access denied...). The informers go on trying.
    pub async fn wait_for_cache_sync_within(
        &self,
        timeout: Duration,
    ) -> Result<(), CacheSyncError> {
        self.wait(Some(timeout)).await
    }

    async fn wait(&self, timeout: Option<Duration>) -> Result<(), CacheSyncError> {
        let mut informers: Vec<(String, Arc<dyn ManagedInformer>)> = {
            let state = self.state.locked();
            if !state.shut_down {
                let mut not_started: Vec<String> = state
                    .informers
                    .values()
                    .filter(|e| !e.started)
                    .map(|e| e.name.clone())
                    .collect();
                if !state.started || !not_started.is_empty() {
                    not_started.sort();
                    return Err(CacheSyncError::NotStarted {
                        informers: not_started,
                    });
                }
            }
            state
                .informers
                .values()
                .map(|e| (e.name.clone(), Arc::clone(&e.informer)))
                .collect()
        };
        informers.sort_by(|a, b| a.0.cmp(&b.0));
        let mut shutdown = self.shutdown.subscribe();
        let all_synced = join_all(informers.iter().map(|(_, informer)| informer.synced()));
        let deadline = async {
            match timeout {
                Some(timeout) => tokio::time::sleep(timeout).await,
                None => std::future::pending().await,
            }
        };
        let timed_out = tokio::select! {
            biased;
            _ = all_synced => return Ok(()),
            _ = shutdown.wait_for(|stop| *stop) => false,
            () = deadline => true,
        };
        let unsynced: Vec<Unsynced> = informers
            .iter()
            .filter(|(_, informer)| !informer.has_synced())
            .map(|(name, informer)| Unsynced {
                informer: name.clone(),
                last_error: informer.last_sync_error(),
            })
            .collect();
        match (unsynced.is_empty(), timeout) {
            (true, _) => Ok(()),
            (false, Some(after)) if timed_out => Err(CacheSyncError::TimedOut { after, unsynced }),
            (false, _) => Err(CacheSyncError::ShutDown { unsynced }),
        }
    }

    /// Stops every informer and waits until all their tasks and handler threads
    /// have ended. The factory starts nothing afterwards.
    pub async fn shutdown(&self) {
        let tasks = {
            let mut state = self.state.locked();
            state.shut_down = true;
            std::mem::take(&mut state.tasks)
        };
        self.shutdown.send_replace(true);
        for task in tasks {
            if let Err(error) = task.await {
                tracing::error!(%error, "an informer task failed");
            }
        }
    }

    /// How many informers the factory has made.
    pub fn len(&self) -> usize {
        self.state.locked().informers.len()
    }

    /// Whether the factory has made no informer yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Adds to `informer` the indexes of `indexers` it does not have (by name): for an
/// informable informer that someone made first without them.
fn add_missing<K: Resource + Send + Sync + 'static>(
    informer: &SharedIndexInformer<K>,
    mut indexers: Indexers<K>,
) {
    let indexer = informer.indexer();
    let defined = indexer.index_names();
    indexers
        .entries
        .retain(|(name, _)| !defined.iter().any(|d| d == name));
    if !indexers.is_empty() {
        // All or nothing, and only names absent a moment ago: a conflict means someone
        // else added them meanwhile.
        let _ = indexer.add_indexers(indexers);
    }
}

/// Synced when every informer the factory has made has synced: one asked for but not
/// started is not. [`synced`](HasSynced::synced) waits for the informers made so far,
/// for as long as it takes; [`SharedInformerFactory::wait_for_cache_sync_within`]
/// reports what is wrong instead.
impl HasSynced for SharedInformerFactory {
    fn has_synced(&self) -> bool {
        let state = self.state.locked();
        state
            .informers
            .values()
            .all(|e| e.started && e.informer.has_synced())
    }

    fn synced(&self) -> BoxFuture<'_, ()> {
        let informers: Vec<Arc<dyn ManagedInformer>> = {
            let state = self.state.locked();
            state
                .informers
                .values()
                .map(|e| Arc::clone(&e.informer))
                .collect()
        };
        Box::pin(async move {
            join_all(informers.iter().map(|informer| informer.synced())).await;
        })
    }
}

#[cfg(test)]
mod tests;
