//! Resource scopes as the type system sees them: [`FactoryScope`] for code generic over
//! a resource's scope (is it namespaced? an `Api` for it), and the marker traits
//! [`ClusterScoped`] and [`NamespaceScoped`] that decide which reads a
//! [`Lister`](crate::lister::Lister) offers. Types whose scope is known only at run time
//! ([`DynamicResourceScope`]) are both.
//!
//! They sit on the ground floor because the reflector's key filters, the listers, the
//! factory, discovery and the controller all ask for them.

use kube::core::{ClusterResourceScope, DynamicResourceScope, NamespaceResourceScope};
use kube::{Client, Resource};

/// Scopes code generic over them can address: whether their objects live in
/// namespaces, and an [`Api`](kube::Api) for them (the factory, the controller and
/// discovery build their informers and writes on it).
pub trait FactoryScope {
    /// Whether objects of this scope live in namespaces.
    fn is_namespaced() -> bool;

    /// An [`Api`](kube::Api) for `K` in `namespace` (ignored for cluster-scoped types;
    /// `None`: every namespace), for code generic over the scope, such as a
    /// controller writing the objects it reconciles.
    fn api<K>(client: Client, namespace: Option<&str>) -> kube::Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>;
}
impl FactoryScope for NamespaceResourceScope {
    fn is_namespaced() -> bool {
        true
    }

    fn api<K>(client: Client, namespace: Option<&str>) -> kube::Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>,
    {
        match namespace {
            Some(namespace) => kube::Api::namespaced(client, namespace),
            None => kube::Api::all(client),
        }
    }
}
impl FactoryScope for ClusterResourceScope {
    fn is_namespaced() -> bool {
        false
    }

    fn api<K>(client: Client, _namespace: Option<&str>) -> kube::Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>,
    {
        kube::Api::all(client)
    }
}
impl FactoryScope for DynamicResourceScope {
    fn is_namespaced() -> bool {
        true
    }

    fn api<K>(client: Client, namespace: Option<&str>) -> kube::Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>,
    {
        match namespace {
            Some(namespace) => kube::Api::namespaced_with(client, namespace, &()),
            None => kube::Api::all(client),
        }
    }
}

/// Scopes whose objects can be fetched by name alone.
pub trait ClusterScoped {}
impl ClusterScoped for ClusterResourceScope {}
impl ClusterScoped for DynamicResourceScope {}

/// Scopes whose objects live in namespaces.
pub trait NamespaceScoped {}
impl NamespaceScoped for NamespaceResourceScope {}
impl NamespaceScoped for DynamicResourceScope {}
