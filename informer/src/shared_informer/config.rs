//! How an informer is built: [`InformerConfig`], client-go's `NewSharedIndexInformer`
//! arguments plus the reflector's settings, as a `Default` struct with builder methods.

use std::sync::Arc;
use std::time::Duration;

use crate::object::Object;

use super::queue::QueueKind;
use crate::consistency::ConsistencyConfig;
use crate::informable::Informable;
use crate::key::KeyFn;
use crate::reflector;
use crate::store::Indexers;

/// Changes an object before it is stored, e.g. to drop fields nobody reads (client-go's
/// `TransformFunc`; `managedFields` are already left out while decoding, see
/// [`ManagedFields`](crate::reflector::source::ManagedFields)). It runs once per object, on the
/// decoded value, before anything else sees it. A transform that panics is contained:
/// that object is logged and skipped (as if the server had not sent it), and the
/// informer goes on.
pub type Transform<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

/// How an informer is built: what client-go passes to `NewSharedIndexInformer`, plus
/// reflector settings; each a public field to read, set with the builder methods.
#[non_exhaustive]
#[must_use]
pub struct InformerConfig<K> {
    /// The default resync period of handlers added without one (`None` or zero: never).
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
    /// The queue between the reflector and the cache: in order (the default) or one
    /// entry per key.
    pub queue: QueueKind,
    /// Periodic consistency checks and staleness probes (`None`, the default: none;
    /// [`SharedIndexInformer::verify`](super::SharedIndexInformer::verify) works either
    /// way).
    pub consistency: Option<ConsistencyConfig>,
}

impl<K: Object + 'static> Default for InformerConfig<K> {
    fn default() -> Self {
        Self {
            resync: None,
            indexers: Indexers::new(),
            key_fn: KeyFn::meta_namespace(),
            reflector: reflector::Config::default(),
            transform: None,
            queue: QueueKind::default(),
            consistency: None,
        }
    }
}

impl<K> std::fmt::Debug for InformerConfig<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InformerConfig")
            .field("resync", &self.resync)
            .field("indexers", &self.indexers.names().collect::<Vec<_>>())
            .field("key_fn", &self.key_fn)
            .field("reflector", &self.reflector)
            .field("transform", &self.transform.is_some())
            .field("queue", &self.queue)
            .field("consistency", &self.consistency)
            .finish()
    }
}

impl<K: Informable> InformerConfig<K> {
    /// The default settings with `K`'s key function and indexes (see
    /// [`informable`](crate::informable)).
    pub fn informable() -> Self {
        Self::default().key_fn(K::key_fn()).indexers(K::indexers())
    }
}

impl<K> InformerConfig<K> {
    /// The default resync period for handlers (zero: none).
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// Indexes to maintain (more can be added later with
    /// [`Indexer::add_indexers`](crate::store::Indexer::add_indexers)).
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

    /// The queue between the reflector and the cache (see [`QueueKind`]): in order,
    /// client-go's `InOrderInformers` default, or [`QueueKind::DeltaFifo`] for one
    /// entry per key.
    pub fn queue(mut self, kind: QueueKind) -> Self {
        self.queue = kind;
        self
    }

    /// Checks the cache against the server while the informer runs, and probes its
    /// staleness (see [`consistency`](crate::consistency)).
    pub fn consistency(mut self, config: ConsistencyConfig) -> Self {
        self.consistency = Some(config);
        self
    }

    /// A transform applied to each object before it is stored.
    pub fn transform(mut self, transform: impl Fn(K) -> K + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(transform));
        self
    }
}
