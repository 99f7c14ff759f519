//! [`ControlledBy`]: a key filter on the owner's key, for the caches of owned objects.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use kube::Resource;
use tokio::sync::watch;

use super::{KeyFilter, ObjectHead};
use crate::scope::FactoryScope;

/// A [`KeyFilter`] keeping the objects whose controller (the owner reference with
/// `controller: true`) is a `K` that `owners` keeps, by the owner's key: the owner's
/// name, in the object's namespace when `K` is namespaced.
///
/// A sharded controller's caches of the objects it [`owns`] use it, with the
/// [shard](crate::shard::ShardHandle) as `owners`: each replica keeps the children of
/// its own primaries only, so those caches shrink with the shard as the primary's
/// does. An object with no controller of kind `K` (kind and API group) is not kept.
/// The generation is `owners`' generation: the reflector relists when the shard
/// changes.
///
/// An object known only by its key (one that did not decode, from a lister-watcher
/// that does not filter) is kept, to be reported: its controller cannot be read.
///
/// [`owns`]: crate::controller::Controller::owns
///
/// ```
/// use std::sync::Arc;
/// use informer::reflector::{ControlledBy, FnKeyFilter, KeyFilter, ObjectHead, OwnerHead};
/// use k8s_openapi::api::apps::v1::Deployment;
///
/// let deployments = Arc::new(FnKeyFilter::new(|_namespace, name| name == "web"));
/// let filter = ControlledBy::<Deployment>::new(deployments);
/// let replica_set = |owner: &'static str| ObjectHead {
///     namespace: Some("default"),
///     name: "web-5d4f",
///     controller: Some(OwnerHead { api_version: "apps/v1", kind: "Deployment", name: owner }),
/// };
/// assert!(filter.keeps_object(&replica_set("web")));
/// assert!(!filter.keeps_object(&replica_set("api")));
/// let orphan = ObjectHead { controller: None, ..replica_set("web") };
/// assert!(!filter.keeps_object(&orphan));
/// ```
pub struct ControlledBy<K> {
    owners: Arc<dyn KeyFilter>,
    kind: PhantomData<fn() -> K>,
}

impl<K> ControlledBy<K> {
    /// Keeps the objects controlled by a `K` that `owners` keeps.
    pub fn new(owners: Arc<dyn KeyFilter>) -> Self {
        Self {
            owners,
            kind: PhantomData,
        }
    }
}

impl<K> fmt::Debug for ControlledBy<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControlledBy")
            .field("kind", &crate::key::short_type_name::<K>())
            .finish_non_exhaustive()
    }
}

impl<K> KeyFilter for ControlledBy<K>
where
    K: Resource<DynamicType = ()> + 'static,
    K::Scope: FactoryScope,
{
    /// An object known only by its key is kept: its controller is unknown.
    fn keeps(&self, _namespace: Option<&str>, _name: &str) -> bool {
        true
    }

    fn generation(&self) -> watch::Receiver<u64> {
        self.owners.generation()
    }

    fn keeps_object(&self, head: &ObjectHead<'_>) -> bool {
        let Some(owner) = head.controller else {
            return false;
        };
        if owner.kind != K::kind(&()) || owner.group() != K::group(&()) {
            return false;
        }
        if K::Scope::is_namespaced() {
            // A namespaced owner lives in its child's namespace; a cluster-scoped
            // child cannot have one.
            head.namespace
                .is_some_and(|namespace| self.owners.keeps(Some(namespace), owner.name))
        } else {
            self.owners.keeps(None, owner.name)
        }
    }
}
