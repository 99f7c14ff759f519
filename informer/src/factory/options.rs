//! [`FactoryOptions`]: the factory's settings for every informer, and [`ByObject`]:
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
use crate::shared_informer::QueueKind;

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
    transform_metadata: Option<MetadataTransform>,
    managed_fields: ManagedFields,
    reflector: reflector::Config,
    queue: QueueKind,
    /// Bytes past which an informer's cache warns ([`FactoryOptions::cache_budget`]).
    cache_budget: Option<u64>,
    /// The [`ByObject<K>`] each [`by_object`](Self::by_object) gave, by `K`'s type:
    /// one type's settings over every type's.
    per_type: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
    consistency: Option<ConsistencyConfig>,
    #[cfg(feature = "metrics")]
    metrics: Option<crate::metrics::Metrics>,
}

/// One type's informer settings, over the factory's for every type; each one left
/// unset is the factory's. Given to [`FactoryOptions::by_object`].
#[must_use]
pub struct ByObject<K> {
    resync: Option<Duration>,
    transform: Option<Arc<dyn Fn(K) -> K + Send + Sync>>,
    managed_fields: Option<ManagedFields>,
    queue: Option<QueueKind>,
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
    /// [`default_resync`](FactoryOptions::default_resync)).
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// Changes `K`'s objects before they are cached (after
    /// [`transform_metadata`](FactoryOptions::transform_metadata)).
    pub fn transform(mut self, transform: impl Fn(K) -> K + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(transform));
        self
    }

    /// Whether `K`'s objects keep `metadata.managedFields` (over
    /// [`managed_fields`](FactoryOptions::managed_fields)).
    pub fn managed_fields(mut self, managed_fields: ManagedFields) -> Self {
        self.managed_fields = Some(managed_fields);
        self
    }

    /// The queue of `K`'s informers (over [`queue`](FactoryOptions::queue)).
    pub fn queue(mut self, kind: QueueKind) -> Self {
        self.queue = Some(kind);
        self
    }
}

impl fmt::Debug for FactoryOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FactoryOptions")
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
    /// use informer::factory::{ByObject, FactoryOptions};
    /// use informer::reflector::source::ManagedFields;
    /// use k8s_openapi::api::core::v1::Secret;
    ///
    /// let options = FactoryOptions::default()
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
    /// # let _ = options;
    /// ```
    pub fn by_object<K: 'static>(mut self, settings: ByObject<K>) -> Self {
        self.per_type.insert(TypeId::of::<K>(), Arc::new(settings));
        self
    }

    fn overrides<K: 'static>(&self) -> Option<&ByObject<K>> {
        self.per_type.get(&TypeId::of::<K>())?.downcast_ref()
    }

    /// The namespace every informer watches, if one.
    pub(super) fn namespace_of(&self) -> Option<&String> {
        self.namespace.as_ref()
    }

    /// The tweak of every informer's list options, if one.
    pub(super) fn tweak_of(&self) -> Option<&Tweak> {
        self.tweak.as_ref()
    }

    /// The reflector settings of every informer.
    pub(super) fn reflector_of(&self) -> &reflector::Config {
        &self.reflector
    }

    /// `K`'s resync period: its own, else every type's.
    pub(super) fn resync_of<K: 'static>(&self) -> Option<Duration> {
        self.overrides::<K>()
            .and_then(|o| o.resync)
            .or(self.default_resync)
    }

    /// The budget of each informer's cache.
    pub(super) fn cache_budget_of(&self) -> Option<u64> {
        self.cache_budget
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

    /// Every type's metadata transform, if one.
    pub(super) fn metadata_transform(&self) -> Option<MetadataTransform> {
        self.transform_metadata.clone()
    }

    /// `K`'s own transform, if one.
    pub(super) fn transform_of<K: 'static>(&self) -> Option<Arc<dyn Fn(K) -> K + Send + Sync>> {
        self.overrides::<K>()?.transform.clone()
    }

    /// Every informer's consistency checks, if asked for.
    pub(super) fn consistency_of(&self) -> Option<&ConsistencyConfig> {
        self.consistency.as_ref()
    }

    /// The metrics every informer reports to, if any.
    #[cfg(feature = "metrics")]
    pub(crate) fn metrics_of(&self) -> Option<&crate::metrics::Metrics> {
        self.metrics.as_ref()
    }
}
