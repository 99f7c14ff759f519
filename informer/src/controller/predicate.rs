//! [`Predicate`]: which updates of an object are worth a reconcile.

use std::fmt;
use std::sync::Arc;

use crate::object::{Meta, Object};

/// Which *updates* of an object are worth a reconcile, for the primary type
/// ([`Controller::predicate`](super::Controller::predicate)) and for owned and watched
/// types ([`owns_with`](super::Controller::owns_with),
/// [`watches_with`](super::Controller::watches_with)). controller-runtime's
/// predicates, kube-runtime's `predicate_filter`.
///
/// A predicate sees only the old and new state of an update, so it cannot drop
/// anything else: an object's first sight (its add, also from a list or a relist), its
/// deletion, a tombstone of an object deleted while the watch was down, and an update
/// that sets its deletion timestamp always queue its key. (kube-runtime's generation
/// predicate swallows deletions; controller-runtime's passes them through the same way
/// as here.) Read-your-writes still sees every change: a dropped update wakes a
/// reconcile waiting for its own write.
///
/// The primary's default is every change. A controller that writes its primary's
/// status wakes itself with every such write; with
/// [`generation_changed`](Self::generation_changed) it reconciles only when the spec
/// changes (for types whose API server bumps `metadata.generation`: custom resources
/// with a status subresource, Deployments, ...; objects without one, ConfigMaps say,
/// never pass it):
///
/// ```no_run
/// # use informer::controller::{Controller, Predicate};
/// # use k8s_openapi::api::apps::v1::Deployment;
/// # fn demo(factory: &informer::factory::SharedInformerFactory) {
/// let controller = Controller::<Deployment>::new(factory)
///     .predicate(Predicate::generation_changed().or(Predicate::labels_changed()));
/// # }
/// ```
pub struct Predicate<K> {
    accepts: Arc<Accepts<K>>,
}

/// A predicate's test of an update: `(old, new)`.
type Accepts<K> = dyn Fn(&K, &K) -> bool + Send + Sync;

impl<K> Clone for Predicate<K> {
    fn clone(&self) -> Self {
        Self {
            accepts: Arc::clone(&self.accepts),
        }
    }
}

impl<K> fmt::Debug for Predicate<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Predicate").finish_non_exhaustive()
    }
}

impl<K: Object + 'static> Predicate<K> {
    /// Updates for which `accepts(old, new)` holds.
    pub fn custom(accepts: impl Fn(&K, &K) -> bool + Send + Sync + 'static) -> Self {
        Self {
            accepts: Arc::new(accepts),
        }
    }

    /// Updates that change `metadata.generation` (the spec, for types with a status
    /// subresource): controller-runtime's `GenerationChangedPredicate`.
    pub fn generation_changed() -> Self {
        Self::custom(|old, new| old.metadata().generation() != new.metadata().generation())
    }

    /// Updates that change the labels: `LabelChangedPredicate`.
    pub fn labels_changed() -> Self {
        Self::custom(|old, new| old.metadata().labels() != new.metadata().labels())
    }

    /// Updates that change the annotations: `AnnotationChangedPredicate`.
    pub fn annotations_changed() -> Self {
        Self::custom(|old, new| old.metadata().annotations() != new.metadata().annotations())
    }

    /// Updates that change `metadata.resourceVersion`, that is every update but a
    /// resync's: `ResourceVersionChangedPredicate`.
    pub fn resource_version_changed() -> Self {
        Self::custom(|old, new| {
            old.metadata().resource_version() != new.metadata().resource_version()
        })
    }

    /// Updates that this or `other` accepts.
    #[must_use]
    pub fn or(self, other: Self) -> Self {
        Self::custom(move |old, new| (self.accepts)(old, new) || (other.accepts)(old, new))
    }

    /// Updates that this and `other` accept.
    #[must_use]
    pub fn and(self, other: Self) -> Self {
        Self::custom(move |old, new| (self.accepts)(old, new) && (other.accepts)(old, new))
    }

    /// Whether the update from `old` to `new` queues the key: the predicate's
    /// answer, or yes when the update starts the object's deletion.
    pub(crate) fn accepts(&self, old: &K, new: &K) -> bool {
        let deleting = old.metadata().deletion_timestamp().is_none()
            && new.metadata().deletion_timestamp().is_some();
        deleting || (self.accepts)(old, new)
    }
}
