//! [`Primary`]: the one bound on a type a controller can run on.

use std::fmt;

use kube::Resource;

use crate::factory::Cacheable;
use crate::scope::FactoryScope;

/// A type a [`Controller`](super::Controller) can run on: one the factory can cache
/// ([`Cacheable`]: a resource known at compile time, such as a k8s-openapi type, a
/// `#[derive(CustomResource)]` or `#[derive(Resource)]` type or a
/// [projection](crate::projection), whose scope the factory knows, decoded from the
/// API server's JSON and shared across tasks), cheap to hand out and printable in
/// logs. Every such type is one: nothing to implement.
///
/// Unlike what a controller owns, watches or reads, a primary is a
/// [`kube::Resource`] itself (not only an [`Object`](crate::object::Object) listed as
/// one): the controller writes it (finalizers) through an `Api` of its own type.
pub trait Primary:
    Cacheable + Resource<DynamicType = (), Scope: FactoryScope> + Clone + fmt::Debug
{
}

impl<K> Primary for K where
    K: Cacheable + Resource<DynamicType = (), Scope: FactoryScope> + Clone + fmt::Debug
{
}
