//! From a secondary object's event to the keys of the primaries to reconcile.
//!
//! Two ways, both without scanning the primary cache:
//! - owned objects name their controller in `metadata.ownerReferences` (kind, API
//!   group, name, uid); the owner's key is that name in the child's namespace (owners
//!   of namespaced children live in the same namespace, or are cluster-scoped);
//! - watched objects go through the user's mapper, typically a typed index query on
//!   the primary lister ([`IntoPrimaryKey`] accepts what such a query returns).
//!
//! The owner index kept on each owned type answers the reverse question, "which
//! children does this primary own", for [`Context::owned`](super::Context::owned).

use std::borrow::Cow;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;

use crate::object::{Meta, Object};

use crate::key::ObjectKey;
use crate::scope::FactoryScope;

/// Something a `watches` mapper may return for a primary to reconcile: its key, or the
/// primary itself (what a typed index query on the primary lister returns).
pub trait IntoPrimaryKey<K> {
    /// The primary's key.
    fn into_primary_key(self) -> ObjectKey;
}

impl<K> IntoPrimaryKey<K> for ObjectKey {
    fn into_primary_key(self) -> ObjectKey {
        self
    }
}

impl<K: Object> IntoPrimaryKey<K> for Arc<K> {
    fn into_primary_key(self) -> ObjectKey {
        ObjectKey::of(self.as_ref())
    }
}

impl<K: Object> IntoPrimaryKey<K> for &Arc<K> {
    fn into_primary_key(self) -> ObjectKey {
        ObjectKey::of(self.as_ref())
    }
}

/// Whether `owner` is a controller reference to an object of kind `K`.
fn is_controller_of_kind<K>(owner: &OwnerReference) -> bool
where
    K: Resource<DynamicType = ()>,
{
    owner.controller == Some(true)
        && owner.kind == K::kind(&())
        && crate::key::api_group(&owner.api_version) == K::group(&())
}

/// The controller reference of kind `K` among `meta`'s owner references.
fn controller_of<K>(meta: &impl Meta) -> Option<&OwnerReference>
where
    K: Resource<DynamicType = ()>,
{
    meta.owner_references()
        .iter()
        .find(|owner| is_controller_of_kind::<K>(owner))
}

/// The key of the `K` that controls the object with metadata `meta`, if any.
pub(crate) fn controller_key<K>(meta: &impl Meta) -> Option<ObjectKey>
where
    K: Resource<DynamicType = (), Scope: FactoryScope>,
{
    let owner = controller_of::<K>(meta)?;
    let namespace = if K::Scope::is_namespaced() {
        // A namespaced owner lives in its child's namespace; a cluster-scoped child
        // cannot have one.
        Some(meta.namespace()?.to_owned())
    } else {
        None
    };
    Some(ObjectKey::new(namespace, owner.name.clone()))
}

/// The name of the index, on an owned type, of its controllers of kind `K` by UID.
pub(crate) fn owner_index_name<K>() -> String
where
    K: Resource<DynamicType = ()>,
{
    let group: Cow<'_, str> = K::group(&());
    format!("controller:{}/{}", group, K::kind(&()))
}

/// The owner index's function: the UID of the object's controller of kind `K`.
pub(crate) fn controller_uid<K, C>(child: &C) -> Option<String>
where
    K: Resource<DynamicType = ()>,
    C: Object,
{
    controller_of::<K>(child.metadata()).map(|owner| owner.uid.clone())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn owner(api_version: &str, kind: &str, name: &str, controller: bool) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            controller: Some(controller),
            ..OwnerReference::default()
        }
    }

    fn child(owners: Vec<OwnerReference>) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("child".into()),
                namespace: Some("ns".into()),
                owner_references: Some(owners),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    #[test]
    fn the_controller_of_the_primary_kind_and_group_names_the_key() {
        let cm = child(vec![
            owner("apps/v1", "Deployment", "not-controller", false),
            owner("example.com/v1", "Deployment", "other-group", true),
            owner("apps/v1", "Deployment", "web", true),
        ]);
        assert_eq!(
            controller_key::<Deployment>(&cm.metadata),
            Some(ObjectKey::namespaced("ns", "web"))
        );
        assert_eq!(
            controller_uid::<Deployment, _>(&cm).as_deref(),
            Some("uid-web")
        );
        assert_eq!(controller_key::<ConfigMap>(&cm.metadata), None);
    }

    #[test]
    fn a_cluster_scoped_owner_has_no_namespace_and_the_core_group_is_empty() {
        let cm = child(vec![owner("v1", "Namespace", "team-a", true)]);
        assert_eq!(
            controller_key::<Namespace>(&cm.metadata),
            Some(ObjectKey::cluster_scoped("team-a"))
        );
        assert_eq!(owner_index_name::<Namespace>(), "controller:/Namespace");
        assert_eq!(
            owner_index_name::<Deployment>(),
            "controller:apps/Deployment"
        );
    }

    #[test]
    fn primaries_and_keys_both_map_to_keys() {
        let cm = Arc::new(child(Vec::new()));
        let key = <&Arc<ConfigMap> as IntoPrimaryKey<ConfigMap>>::into_primary_key(&cm);
        assert_eq!(key, ObjectKey::namespaced("ns", "child"));
        let same = <ObjectKey as IntoPrimaryKey<ConfigMap>>::into_primary_key(key.clone());
        assert_eq!(same, key);
    }
}
