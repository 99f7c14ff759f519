//! [`Primary`]: the one bound on a type a controller can run on.

use std::fmt;

use crate::factory::Cacheable;

/// A type a [`Controller`](super::Controller) can run on: one the factory can cache
/// ([`Cacheable`]: a resource known at compile time, such as a k8s-openapi type, a
/// `#[derive(CustomResource)]` or `#[derive(Resource)]` type or a
/// [projection](crate::projection), whose scope the factory knows, decoded from the
/// API server's JSON and shared across tasks), cheap to hand out and printable in
/// logs. Every such type is one: nothing to implement.
pub trait Primary: Cacheable + Clone + fmt::Debug {}

impl<K> Primary for K where K: Cacheable + Clone + fmt::Debug {}
