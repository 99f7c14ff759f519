//! The derive's hidden runtime, reached as `informer::informable::__private`: what
//! the code `#[derive(Informable)]` generates calls. Not public API: it may change in
//! any release, together with the derive.
//!
//! Generated index functions walk from an object to its keys one path step at a time:
//! [`Step`] in mode [`Keys`] looks into containers and stops at a key (the walk both
//! derives share, `crate::walk`); [`map_get`] reads `['key']`; [`emit`] and [`serde_key`] turn
//! keys into their string form; [`owned_by`] and [`owner_is`] pick an owner index's
//! references by API group and kind. Living here rather than in the expansion keeps the
//! generated code small and lets `#[diagnostic::on_unimplemented]` explain mistakes.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;

use crate::store::AsIndexKey;

/// The metadata-only object, whose indexes on `metadata` the derive also implements.
pub use kube::core::PartialObjectMeta;

/// The object's metadata.
pub fn meta<K: Resource>(object: &K) -> &ObjectMeta {
    object.meta()
}

/// A resource type whose API group and kind are known without a value: what
/// `owner(type = ...)` names. Every `kube::Resource` with `DynamicType = ()` is one (the
/// k8s-openapi types, the types of `#[derive(CustomResource)]`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot name an owner: it is not a resource type with a static API group and kind",
    label = "`owner(type = ...)` takes the owner's group and kind from this type's `kube::Resource` impl",
    note = "name a k8s-openapi type or a CRD's generated type, or write the group and kind: \
            `owner(kind = \"...\", group = \"...\")`"
)]
pub trait OwnerType {
    /// Whether `reference` points to an object of this type, in any version.
    fn is_owner(reference: &OwnerReference) -> bool;
}

impl<O: Resource<DynamicType = ()>> OwnerType for O {
    fn is_owner(reference: &OwnerReference) -> bool {
        owner_is(reference, &O::group(&()), &O::kind(&()))
    }
}

/// Whether `reference` points to an owner of type `O` (`owner(type = O)`).
pub fn owned_by<O: ?Sized + OwnerType>(reference: &OwnerReference) -> bool {
    O::is_owner(reference)
}

/// Whether `reference` points to an owner of `kind` in API group `group` (`""`: the
/// core group), whatever its version: an owner reference keeps the version it was
/// written with, and the owner is served under others.
pub fn owner_is(reference: &OwnerReference, group: &str, kind: &str) -> bool {
    reference.kind == kind && crate::key::api_group(&reference.api_version) == group
}

/// The walk from an object to its keys (mode `Keys`), and the projection check's
/// along the original type (mode `Check`): one walk, `crate::walk`, named here for
/// both derives.
pub use crate::walk::{Check, Keys, Step, StepInto, StepStay};

/// A map with string keys, for `['key']` in a path.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a map with string keys",
    label = "`['...']` looks a key up in a map",
    note = "`['key']` in an index path reads a `BTreeMap<String, _>` or `HashMap<String, _>`"
)]
pub trait MapGet {
    /// The map's value type.
    type Value;
    /// The value under `key`.
    fn map_get(&self, key: &str) -> Option<&Self::Value>;
}

impl<V> MapGet for BTreeMap<String, V> {
    type Value = V;
    fn map_get(&self, key: &str) -> Option<&V> {
        self.get(key)
    }
}

impl<V, S: std::hash::BuildHasher> MapGet for HashMap<String, V, S> {
    type Value = V;
    fn map_get(&self, key: &str) -> Option<&V> {
        self.get(key)
    }
}

/// `map[key]`, if present.
pub fn map_get<'a, M: ?Sized + MapGet>(map: &'a M, key: &str) -> Option<&'a M::Value> {
    map.map_get(key)
}

/// Emits the string form of one key.
pub fn emit<V, Q: ?Sized + AsIndexKey<V>>(
    key: &Q,
    encode: fn(&V) -> Cow<'_, str>,
    emit: &mut dyn FnMut(&str),
) {
    emit(&key.as_index_key(encode));
}

/// The serde (JSON) form of a key: a string as itself, anything else as JSON.
pub fn serde_key<T: ?Sized + serde::Serialize>(value: &T) -> Cow<'static, str> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => Cow::Owned(s),
        Ok(other) => Cow::Owned(other.to_string()),
        Err(_) => Cow::Borrowed(""),
    }
}
