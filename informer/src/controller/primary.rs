//! [`Primary`]: the one bound on a type a controller can run on.

use std::fmt;

use kube::Resource;
use serde::de::DeserializeOwned;

use crate::scope::FactoryScope;

/// A type a [`Controller`](super::Controller) can run on: a resource known at compile
/// time (a k8s-openapi type, a `#[derive(CustomResource)]` or `#[derive(Resource)]`
/// type) whose scope the factory knows, decoded from the API server's JSON, cheap to
/// hand out, printable in logs, and shared across tasks. Every such type is one:
/// nothing to implement.
pub trait Primary:
    Resource<DynamicType = (), Scope: FactoryScope>
    + Clone
    + DeserializeOwned
    + fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Primary for K where
    K: Resource<DynamicType = (), Scope: FactoryScope>
        + Clone
        + DeserializeOwned
        + fmt::Debug
        + Send
        + Sync
        + 'static
{
}
