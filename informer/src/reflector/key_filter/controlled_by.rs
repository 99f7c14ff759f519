//! [`ControlledBy`]: a key filter on the owner's key, for the caches of owned objects.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use kube::Resource;

use tokio::sync::watch;

use super::{KeyFilter, ObjectHead, ShardField, ShardSelector};
use crate::object::{Object, ResourceOf};
use crate::scope::FactoryScope;

/// A [`KeyFilter`] keeping the objects whose controller (the owner reference with
/// `controller: true`) is a `K` that `owners` keeps: `owners` is asked about the owner
/// as an [`ObjectHead`] of its name (in the object's namespace when `K` is namespaced)
/// and its uid.
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
/// The owners' [shard selector](KeyFilter::server_selector) is passed on when it
/// decides by namespace alone and `K` is namespaced (an owner lives in its children's
/// namespace, so the server may filter the children as it filters the owners); a
/// selector on anything else cannot apply to the children.
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
///     uid: Some("8d3c6c1e-1f2a-4b7e-9d61-0c9e0f1a2b3c"),
///     controller: Some(OwnerHead {
///         api_version: "apps/v1",
///         kind: "Deployment",
///         name: owner,
///         uid: Some("5f0e4b8a-2c1d-4e6f-8a9b-7c6d5e4f3a2b"),
///     }),
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
    K: Object<Resource: Resource<DynamicType = (), Scope: FactoryScope>> + 'static,
{
    /// An object known only by its key is kept: its controller is unknown.
    fn keeps(&self, _namespace: Option<&str>, _name: &str) -> bool {
        true
    }

    fn generation(&self) -> watch::Receiver<u64> {
        self.owners.generation()
    }

    fn server_selector(&self) -> Option<ShardSelector> {
        let selector = self.owners.server_selector()?;
        let by_namespace = selector.field() == ShardField::Namespace;
        (<ResourceOf<K> as Resource>::Scope::is_namespaced() && by_namespace).then_some(selector)
    }

    fn keeps_object(&self, head: &ObjectHead<'_>) -> bool {
        let Some(owner) = head.controller else {
            return false;
        };
        if owner.kind != ResourceOf::<K>::kind(&()) || owner.group() != ResourceOf::<K>::group(&())
        {
            return false;
        }
        // A namespaced owner lives in its child's namespace; a cluster-scoped child
        // cannot have one.
        let namespace = if <ResourceOf<K> as Resource>::Scope::is_namespaced() {
            match head.namespace {
                Some(namespace) => Some(namespace),
                None => return false,
            }
        } else {
            None
        };
        // The owner as the owners' filter would see it, its uid included (a shard
        // deciding by uid decides the children by their owner's).
        self.owners.keeps_object(&ObjectHead {
            namespace,
            name: owner.name,
            uid: owner.uid,
            controller: None,
        })
    }
}
