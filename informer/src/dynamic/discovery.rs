//! [`DynamicResource`]: a resource known at run time, and finding one through the API
//! server's discovery.

use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::Scope;
use kube::{Client, Resource};

use crate::cause::kube_cause;
use crate::scope::FactoryScope;

/// A resource known at run time: its [`ApiResource`] (group, version, kind, plural) and
/// whether its objects live in namespaces. What the factory's dynamic informers are
/// made for; see the [module docs](super).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DynamicResource {
    /// Group, version, kind and plural.
    pub api_resource: ApiResource,
    /// Whether objects live in namespaces (a factory's namespace then applies).
    pub namespaced: bool,
}

/// Why [`DynamicResource::discover`] found nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// The API server does not serve this kind: no such group or version, or no such
    /// kind in it (a CRD not installed, or not yet established).
    #[error("{gvk} is not served by the API server")]
    NotServed {
        /// The kind asked for, as `group/version/Kind` (`v1/Kind` for the core group).
        gvk: String,
    },
    /// Asking failed: the server could not be reached, access was denied, or its
    /// answer did not parse.
    #[error("discovery of {gvk} failed: {}", kube_cause(source))]
    Request {
        /// The kind asked for, as `group/version/Kind`.
        gvk: String,
        /// What the client reported.
        #[source]
        source: kube::Error,
    },
}

impl DynamicResource {
    /// `api_resource`, namespaced or not.
    pub fn new(api_resource: ApiResource, namespaced: bool) -> Self {
        Self {
            api_resource,
            namespaced,
        }
    }

    /// The resource of a static type `K` (say, to inform ConfigMaps as
    /// [`DynamicObject`](kube::core::DynamicObject)s).
    pub fn of<K>() -> Self
    where
        K: Resource<DynamicType = (), Scope: FactoryScope>,
    {
        Self::new(ApiResource::erase::<K>(&()), K::Scope::is_namespaced())
    }

    /// Asks the API server's discovery for the resource of `gvk` (one request, for its
    /// group and version: kube's [`pinned_kind`](kube::discovery::pinned_kind)).
    /// A kind the server does not serve is [`DiscoveryError::NotServed`].
    pub async fn discover(client: &Client, gvk: &GroupVersionKind) -> Result<Self, DiscoveryError> {
        match kube::discovery::pinned_kind(client, gvk).await {
            Ok((api_resource, capabilities)) => Ok(Self::new(
                api_resource,
                capabilities.scope == Scope::Namespaced,
            )),
            Err(source) if is_not_served(&source) => {
                Err(DiscoveryError::NotServed { gvk: describe(gvk) })
            }
            Err(source) => Err(DiscoveryError::Request {
                gvk: describe(gvk),
                source,
            }),
        }
    }

    /// The group, version and kind.
    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::gvk(
            &self.api_resource.group,
            &self.api_resource.version,
            &self.api_resource.kind,
        )
    }
}

/// `group/version/Kind`, or `version/Kind` for the core group.
fn describe(gvk: &GroupVersionKind) -> String {
    format!("{}/{}", gvk.api_version(), gvk.kind)
}

/// A group or version the server lacks answers 404; a kind its group lacks is kube's
/// `MissingKind`.
fn is_not_served(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code == 404,
        kube::Error::Discovery(kube::error::DiscoveryError::MissingKind(_)) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

    #[test]
    fn a_static_type_gives_its_resource_and_scope() {
        let config_maps = DynamicResource::of::<ConfigMap>();
        assert_eq!(config_maps.api_resource.plural, "configmaps");
        assert!(config_maps.namespaced);
        assert_eq!(
            config_maps.gvk(),
            GroupVersionKind::gvk("", "v1", "ConfigMap")
        );
        assert!(!DynamicResource::of::<Namespace>().namespaced);
    }

    #[test]
    fn kinds_not_served_are_told_apart_from_failed_requests() {
        let missing = kube::Error::Discovery(kube::error::DiscoveryError::MissingKind("x".into()));
        assert!(is_not_served(&missing));
        let not_found = kube::core::Status::failure("not found", "NotFound").with_code(404);
        assert!(is_not_served(&kube::Error::Api(not_found.boxed())));
        let forbidden = kube::core::Status::failure("no", "Forbidden").with_code(403);
        assert!(!is_not_served(&kube::Error::Api(forbidden.boxed())));
        let gvk = GroupVersionKind::gvk("example.com", "v1", "Backup");
        let error = DiscoveryError::NotServed {
            gvk: describe(&gvk),
        };
        assert_eq!(
            error.to_string(),
            "example.com/v1/Backup is not served by the API server"
        );
        assert_eq!(describe(&GroupVersionKind::gvk("", "v1", "Pod")), "v1/Pod");
    }

    #[test]
    fn a_failed_request_says_what_the_server_answered() {
        let forbidden = kube::core::Status::failure(
            r#"forbidden: User "x" cannot get path "/apis/example.com/v1""#,
            "Forbidden",
        )
        .with_code(403);
        let error = DiscoveryError::Request {
            gvk: describe(&GroupVersionKind::gvk("example.com", "v1", "Backup")),
            source: kube::Error::Api(forbidden.boxed()),
        };
        assert_eq!(
            error.to_string(),
            r#"discovery of example.com/v1/Backup failed: 403 Forbidden: forbidden: User "x" cannot get path "/apis/example.com/v1""#
        );
    }
}
