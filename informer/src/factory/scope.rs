//! Where the factory's informers look: a namespace and selectors ([`InformerScope`]),
//! the resource scopes it can address generically ([`FactoryScope`]), and what one
//! informer lists ([`Target`]).

use kube::core::{ClusterResourceScope, DynamicResourceScope, NamespaceResourceScope};
use kube::{Client, Resource};

/// Where an informer looks: a namespace (or all) and selectors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct InformerScope {
    /// Only this namespace (ignored for cluster-scoped types); `None`: all.
    pub namespace: Option<String>,
    /// Only objects matching this label selector.
    pub label_selector: Option<String>,
    /// Only objects matching this field selector.
    pub field_selector: Option<String>,
}

impl InformerScope {
    /// The informer's name in logs, errors and metrics: `ConfigMap in default
    /// (app=web)`; `ConfigMap` for every namespace and no selector.
    pub(crate) fn name_for(&self, kind: &str) -> String {
        let mut name = kind.to_owned();
        if let Some(namespace) = &self.namespace {
            name.push_str(" in ");
            name.push_str(namespace);
        }
        let selectors: Vec<&str> = [&self.label_selector, &self.field_selector]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        if !selectors.is_empty() {
            name.push_str(&format!(" ({})", selectors.join(", ")));
        }
        name
    }
}

/// Scopes the factory knows how to address.
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

/// What an informer lists: the resource `K`'s dynamic type names, and whether it lives
/// in namespaces (for a cluster-scoped one the namespace of a scope is dropped, so
/// every ask shares one informer).
pub(super) struct Target<'a, K: Resource> {
    pub(super) dynamic_type: &'a K::DynamicType,
    pub(super) namespaced: bool,
    /// Known at run time (named so in errors, beside a typed informer of the same kind).
    pub(super) dynamic: bool,
}

impl<K> Target<'static, K>
where
    K: Resource<DynamicType = ()>,
    K::Scope: FactoryScope,
{
    /// A static type, scoped as its `Resource::Scope` says.
    pub(super) fn of() -> Self {
        Target {
            dynamic_type: &(),
            namespaced: K::Scope::is_namespaced(),
            dynamic: false,
        }
    }
}
