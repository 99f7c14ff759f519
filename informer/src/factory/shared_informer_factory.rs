//! [`SharedInformerFactory`]: makes one informer per type and selection, shares it with
//! all who ask, starts them, waits for them and shuts them down; see the
//! [module docs](super). Metadata-only and dynamic informers are made in
//! `metadata.rs` and `dynamic.rs`.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::{BoxFuture, join_all};
use kube::{Client, Resource};

use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::cacheable::Cacheable;
use super::config::FactoryConfig;
use super::managed::ManagedInformer;
#[cfg(feature = "metrics")]
use super::metrics_view::FactoryInformers;
use super::selection::{Selection, Target};
use super::state::{Entry, InformerKey, State};
use super::sync_error::{CacheSyncError, Unsynced};
use crate::informable::Informable;
use crate::key::short_type_name;
use crate::lock::MutexExt;
use crate::object::{DynamicTypeOf, Object, ResourceOf};
use crate::reflector::source::ApiListerWatcher;
use crate::shared_informer::{HasSynced, InformerConfig, SharedIndexInformer};
use crate::store::Indexers;

/// Shares informers by type and selection; see the [module docs](super). Cloning gives
/// another handle to the same factory.
#[derive(Clone)]
pub struct SharedInformerFactory {
    client: Client,
    /// The API server's URL, when the factory made the client (errors name it).
    server_url: Option<String>,
    config: Arc<FactoryConfig>,
    /// Shared with the metrics' view of the informers (and read by the unit tests).
    pub(super) state: Arc<Mutex<State>>,
    shutdown: watch::Sender<bool>,
}

impl std::fmt::Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state.locked();
        f.debug_struct("SharedInformerFactory")
            .field("config", &self.config)
            .field(
                "informers",
                &state
                    .informers
                    .values()
                    .map(|e| match e.projection {
                        Some(projection) => format!("{} (projected as {projection})", e.name),
                        None => e.name.clone(),
                    })
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
    pub fn new(client: Client, config: FactoryConfig) -> Self {
        let state = Arc::new(Mutex::new(State {
            informers: HashMap::new(),
            tasks: Vec::new(),
            started: false,
            shut_down: false,
        }));
        #[cfg(feature = "metrics")]
        if let Some(metrics) = config.metrics.as_ref() {
            metrics.observe(Box::new(FactoryInformers(Arc::downgrade(&state))));
        }
        Self {
            client,
            server_url: None,
            config: Arc::new(config),
            state,
            shutdown: watch::Sender::new(false),
        }
    }

    /// The metrics given in [`FactoryConfig::metrics`], which the controllers built on
    /// the factory report to.
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub fn metrics(&self) -> Option<&crate::metrics::Metrics> {
        self.config.metrics.as_ref()
    }

    /// The client the factory's informers use.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// A factory making informers with a client made from `kube_config` (for example
    /// `kube::Config::infer().await?`). Errors about a server that cannot be reached
    /// name `kube_config.cluster_url`.
    pub fn from_config(
        kube_config: kube::Config,
        config: FactoryConfig,
    ) -> Result<Self, kube::Error> {
        let server_url = kube_config.cluster_url.to_string();
        let mut factory = Self::new(Client::try_from(kube_config)?, config);
        factory.server_url = Some(server_url);
        Ok(factory)
    }

    /// The informer for `K` in the factory's namespace, made on first request and
    /// the same one ever after.
    pub fn informer<K: Cacheable>(&self) -> SharedIndexInformer<K> {
        self.informer_for(self.default_selection())
    }

    /// The selection [`informer`](Self::informer) uses: the factory's namespace.
    pub(crate) fn default_selection(&self) -> Selection {
        Selection {
            namespace: self.config.namespace.clone(),
            ..Selection::default()
        }
    }

    /// The informer for `K` in `selection` (namespace and selectors), shared like
    /// [`informer`](Self::informer). The factory's tweak applies on top of `selection`.
    pub fn informer_for<K: Cacheable>(&self, selection: Selection) -> SharedIndexInformer<K> {
        self.informer_with(Target::<K>::of(), selection, InformerConfig::default)
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
        K: Informable + Cacheable,
    {
        self.informable_for(self.default_selection())
    }

    /// [`informable`](Self::informable) in `selection`, shared like
    /// [`informer_for`](Self::informer_for).
    pub fn informable_for<K>(&self, selection: Selection) -> SharedIndexInformer<K>
    where
        K: Informable + Cacheable,
    {
        let (informer, made) =
            self.informer_with(Target::<K>::of(), selection, InformerConfig::informable);
        if !made {
            add_missing(&informer, K::indexers());
        }
        informer
    }

    /// The informer for `K` of `target` in `selection`, made from `base()` when new (the
    /// factory's resync, transform and reflector settings go on top); also says whether
    /// this call made it.
    pub(super) fn informer_with<K>(
        &self,
        target: Target<'_, K>,
        selection: Selection,
        base: impl FnOnce() -> InformerConfig<K>,
    ) -> (SharedIndexInformer<K>, bool)
    where
        K: Object + DeserializeOwned + Send + Sync + 'static,
    {
        let dynamic_type = target.dynamic_type;
        let mut selection = selection;
        if !target.namespaced {
            selection.namespace = None;
        }
        let key = InformerKey {
            type_id: TypeId::of::<K>(),
            resource: [
                ResourceOf::<K>::group(dynamic_type).into_owned(),
                ResourceOf::<K>::version(dynamic_type).into_owned(),
                ResourceOf::<K>::plural(dynamic_type).into_owned(),
            ],
            selection,
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
        let informer = self.make::<K>(dynamic_type, &key.selection, base());
        let mut kind = ResourceOf::<K>::kind(dynamic_type).into_owned();
        if target.dynamic {
            kind.push_str(" (dynamic)");
        }
        if ResourceOf::<K>::metadata_api() {
            kind.push_str(" metadata");
        }
        let name = key.selection.name_for(&kind);
        let projection = projection_of::<K>(&target, &kind);
        if let Some(budget) = self.config.cache_budget {
            let named = match projection {
                Some(projection) => format!("{name} (projected as {projection})"),
                None => name.clone(),
            };
            informer.set_cache_budget(named, Some(budget));
        }
        state.informers.insert(
            key,
            Entry {
                name,
                projection,
                informer: Arc::new(informer.clone()),
                started: false,
            },
        );
        (informer, true)
    }

    fn make<K>(
        &self,
        dynamic_type: &DynamicTypeOf<K>,
        selection: &Selection,
        base: InformerConfig<K>,
    ) -> SharedIndexInformer<K>
    where
        K: Object + DeserializeOwned + Send + Sync + 'static,
    {
        let config = &self.config;
        let mut lister_watcher = ApiListerWatcher::<K>::in_namespace_with(
            self.client.clone(),
            dynamic_type,
            selection.namespace.as_deref(),
        )
        .tweak(|list| {
            list.label_selector = selection.label_selector.clone();
            list.field_selector = selection.field_selector.clone();
            if let Some(tweak) = config.tweak.as_ref() {
                tweak(list);
            }
        })
        .managed_fields(config.managed_fields_of::<K>());
        if let Some(url) = &self.server_url {
            lister_watcher = lister_watcher.server_url(url.clone());
        }
        let queue = config.queue_of::<K>();
        let mut informer_config = base
            .reflector(selection.reflector_config(&config.reflector))
            .queue(queue);
        if let Some(resync) = config.resync_of::<K>() {
            informer_config = informer_config.resync(resync);
        }
        if let Some(consistency) = config.consistency.as_ref() {
            informer_config = informer_config.consistency(consistency.clone());
        }
        let metadata = config.transform_metadata.clone();
        let typed = config.transform_of::<K>();
        if metadata.is_some() || typed.is_some() {
            informer_config = informer_config.transform(move |mut object: K| {
                // The transform is of an `ObjectMeta`: types of a metadata of their
                // own hold none of what it could change.
                let meta: &mut dyn Any = object.metadata_mut();
                if let (Some(metadata), Some(meta)) = (&metadata, meta.downcast_mut()) {
                    metadata(meta);
                }
                match &typed {
                    Some(typed) => typed(object),
                    None => object,
                }
            });
        }
        SharedIndexInformer::with_config(lister_watcher, informer_config)
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
/// The Rust type an informer of `K` caches a projection as, when its name is not the
/// resource's kind (a `#[derive(Projection)]` struct, a hand-written partial type):
/// two informers of one resource then stay apart in the metrics.
fn projection_of<K: Object>(target: &Target<'_, K>, kind: &str) -> Option<&'static str> {
    let rust = short_type_name::<K>();
    (!target.dynamic && !ResourceOf::<K>::metadata_api() && rust != kind).then_some(rust)
}

pub(super) fn add_missing<K: Object + Send + Sync + 'static>(
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
