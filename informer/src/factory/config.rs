//! [`FactoryConfig`]: the factory's settings for every informer, and [`ByObject`]:
//! one type's, over them.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::consistency::ConsistencyConfig;
use crate::reflector::source::{ListOptions, ManagedFields};
use crate::reflector::{self};
use crate::shared_informer::{QueueKind, Transform};

/// A change to every informer's list options.
type Tweak = Arc<dyn Fn(&mut ListOptions) + Send + Sync>;
/// A change to every object's metadata.
type MetadataTransform = Arc<dyn Fn(&mut ObjectMeta) + Send + Sync>;

/// Factory settings, after client-go's `SharedInformerOption`s: each setting a public
/// field to read, set with the `#[must_use]` builder methods on `Default`.
#[derive(Clone, Default)]
#[non_exhaustive]
#[must_use]
pub struct FactoryConfig {
    /// The namespace every informer watches ([`namespace`](Self::namespace)).
    pub namespace: Option<String>,
    /// The change to every informer's list options
    /// ([`tweak_list_options`](Self::tweak_list_options)).
    pub tweak: Option<Tweak>,
    /// The resync period of every informer ([`default_resync`](Self::default_resync));
    /// zero is none.
    pub default_resync: Option<Duration>,
    /// The change to every object's metadata
    /// ([`transform_metadata`](Self::transform_metadata)).
    pub transform_metadata: Option<MetadataTransform>,
    /// Whether objects keep `metadata.managedFields`
    /// ([`managed_fields`](Self::managed_fields)).
    pub managed_fields: ManagedFields,
    /// Every informer's reflector settings ([`reflector`](Self::reflector)).
    pub reflector: reflector::Config,
    /// Every informer's queue ([`queue`](Self::queue)).
    pub queue: QueueKind,
    /// Bytes past which an informer's cache warns ([`cache_budget`](Self::cache_budget)).
    pub cache_budget: Option<u64>,
    /// Every informer's consistency checks ([`consistency`](Self::consistency)).
    pub consistency: Option<ConsistencyConfig>,
    /// The metrics every informer reports to ([`metrics`](Self::metrics)).
    #[cfg(feature = "metrics")]
    #[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
    pub metrics: Option<crate::metrics::Metrics>,
    /// The [`ByObject<K>`] each [`by_object`](Self::by_object) gave, by `K`'s type
    /// (private: a type's settings are kept erased, read back by the factory for `K`).
    per_type: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

/// One type's informer settings, over the factory's for every type; each one left
/// unset (`None`) is the factory's. Given to [`FactoryConfig::by_object`].
#[non_exhaustive]
#[must_use]
pub struct ByObject<K> {
    /// `K`'s resync period ([`resync`](Self::resync)).
    pub resync: Option<Duration>,
    /// The change to `K`'s objects before they are cached ([`transform`](Self::transform)).
    pub transform: Option<Transform<K>>,
    /// Whether `K`'s objects keep `metadata.managedFields`
    /// ([`managed_fields`](Self::managed_fields)).
    pub managed_fields: Option<ManagedFields>,
    /// `K`'s queue ([`queue`](Self::queue)).
    pub queue: Option<QueueKind>,
}

impl<K> Default for ByObject<K> {
    fn default() -> Self {
        Self {
            resync: None,
            transform: None,
            managed_fields: None,
            queue: None,
        }
    }
}

impl<K> Clone for ByObject<K> {
    fn clone(&self) -> Self {
        Self {
            resync: self.resync,
            transform: self.transform.clone(),
            managed_fields: self.managed_fields,
            queue: self.queue,
        }
    }
}

impl<K> fmt::Debug for ByObject<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ByObject")
            .field("resync", &self.resync)
            .field("transform", &self.transform.is_some())
            .field("managed_fields", &self.managed_fields)
            .field("queue", &self.queue)
            .finish()
    }
}

impl<K> ByObject<K> {
    /// The resync period of `K`'s informers (over
    /// [`default_resync`](FactoryConfig::default_resync)).
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// Changes `K`'s objects before they are cached (after
    /// [`transform_metadata`](FactoryConfig::transform_metadata)).
    pub fn transform(mut self, transform: impl Fn(K) -> K + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(transform));
        self
    }

    /// Whether `K`'s objects keep `metadata.managedFields` (over
    /// [`managed_fields`](FactoryConfig::managed_fields)).
    pub fn managed_fields(mut self, managed_fields: ManagedFields) -> Self {
        self.managed_fields = Some(managed_fields);
        self
    }

    /// The queue of `K`'s informers (over [`queue`](FactoryConfig::queue)).
    pub fn queue(mut self, kind: QueueKind) -> Self {
        self.queue = Some(kind);
        self
    }
}

impl fmt::Debug for FactoryConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FactoryConfig")
            .field("namespace", &self.namespace)
            .field("tweak", &self.tweak.is_some())
            .field("default_resync", &self.default_resync)
            .field("transform_metadata", &self.transform_metadata.is_some())
            .field("managed_fields", &self.managed_fields)
            .field("queue", &self.queue)
            .field("cache_budget", &self.cache_budget)
            .field("by_object", &self.per_type.len())
            .field("consistency", &self.consistency)
            .finish()
    }
}

impl FactoryConfig {
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
        self.default_resync = Some(period);
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

    /// Whether every informer's objects keep `metadata.managedFields`; by default they
    /// are dropped while decoding (see [`ManagedFields`]).
    pub fn managed_fields(mut self, managed_fields: ManagedFields) -> Self {
        self.managed_fields = managed_fields;
        self
    }

    /// Warns when an informer's cache is estimated past `bytes` (each informer of the
    /// factory on its own), naming the informer and suggesting a projection or a
    /// metadata-only informer; nothing is dropped. See
    /// [`SharedIndexInformer::set_cache_budget`](crate::shared_informer::SharedIndexInformer::set_cache_budget).
    pub fn cache_budget(mut self, bytes: u64) -> Self {
        self.cache_budget = Some(bytes);
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

    /// Checks every informer's cache against the server while it runs, and probes its
    /// staleness (see [`consistency`](crate::consistency)).
    pub fn consistency(mut self, config: ConsistencyConfig) -> Self {
        self.consistency = Some(config);
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

    /// `K`'s own settings, over the ones above for every type (client-go's
    /// `WithCustomResyncConfig`, controller-runtime's `cache.Options.ByObject`): what
    /// `settings` leaves unset stays as every type has it. A second call for the same
    /// `K` replaces the first.
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer::factory::{ByObject, FactoryConfig};
    /// use informer::reflector::source::ManagedFields;
    /// use k8s_openapi::api::core::v1::Secret;
    ///
    /// let config = FactoryConfig::default()
    ///     .default_resync(Duration::from_secs(600))
    ///     .by_object(
    ///         ByObject::<Secret>::default()
    ///             .resync(Duration::from_secs(60))
    ///             .managed_fields(ManagedFields::Keep)
    ///             .transform(|mut secret: Secret| {
    ///                 secret.data = None;
    ///                 secret
    ///             }),
    ///     );
    /// # let _ = config;
    /// ```
    pub fn by_object<K: 'static>(mut self, settings: ByObject<K>) -> Self {
        self.per_type.insert(TypeId::of::<K>(), Arc::new(settings));
        self
    }

    fn overrides<K: 'static>(&self) -> Option<&ByObject<K>> {
        self.per_type.get(&TypeId::of::<K>())?.downcast_ref()
    }

    /// `K`'s resync period: its own, else every type's.
    pub(super) fn resync_of<K: 'static>(&self) -> Option<Duration> {
        self.overrides::<K>()
            .and_then(|o| o.resync)
            .or(self.default_resync)
    }

    /// Whether `K`'s objects keep `metadata.managedFields`.
    pub(super) fn managed_fields_of<K: 'static>(&self) -> ManagedFields {
        self.overrides::<K>()
            .and_then(|o| o.managed_fields)
            .unwrap_or(self.managed_fields)
    }

    /// `K`'s queue.
    pub(super) fn queue_of<K: 'static>(&self) -> QueueKind {
        self.overrides::<K>()
            .and_then(|o| o.queue)
            .unwrap_or(self.queue)
    }

    /// `K`'s own transform, if one.
    pub(super) fn transform_of<K: 'static>(&self) -> Option<Transform<K>> {
        self.overrides::<K>()?.transform.clone()
    }
}
