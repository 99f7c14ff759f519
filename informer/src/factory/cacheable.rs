//! [`Cacheable`]: the one bound on a type the factory makes a typed informer for.

use kube::Resource;
use serde::de::DeserializeOwned;

use crate::object::Object;
use crate::scope::FactoryScope;

/// A type [`SharedInformerFactory::informer`](super::SharedInformerFactory::informer)
/// can cache: a resource known at compile time (a k8s-openapi type, a
/// `#[derive(CustomResource)]` or `#[derive(Resource)]` type, a
/// [projection](crate::projection)) whose scope the factory knows, decoded from the API
/// server's JSON, and shared across tasks. Every such type is one: nothing to
/// implement. It is also the bound on what a controller
/// [owns](crate::controller::Controller::owns) or
/// [watches](crate::controller::Controller::watches), and on what a fleet caches in
/// every cluster; a controller's primary is a
/// [`Primary`](crate::controller::Primary), which asks for `Clone` and `Debug` too.
pub trait Cacheable:
    Object<Resource: Resource<DynamicType = (), Scope: FactoryScope>>
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl<K> Cacheable for K where
    K: Object<Resource: Resource<DynamicType = (), Scope: FactoryScope>>
        + DeserializeOwned
        + Send
        + Sync
        + 'static
{
}
