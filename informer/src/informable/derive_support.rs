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

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::Resource;

use crate::compact_meta::CompactMeta;
use crate::object::{Meta, Object};
use crate::store::AsIndexKey;

/// The metadata-only object, whose indexes on `metadata` the derive also implements.
pub use kube::core::PartialObjectMeta;

/// Where an index path into `metadata` starts: the object's `ObjectMeta`, whose fields
/// the path names, or a view of a metadata type of its own with the same field names
/// ([`MetaRoot`]).
pub fn meta<K: Object>(object: &K) -> <K::Meta as MetaRoot>::Root<'_>
where
    K::Meta: MetaRoot,
{
    object.metadata().root()
}

/// A metadata type that index paths into `metadata` can walk: by `ObjectMeta`'s field
/// names (`metadata.labels['app']`, `metadata.name`).
#[diagnostic::on_unimplemented(
    message = "an index path into `metadata` cannot walk `{Self}`",
    label = "its fields are not `ObjectMeta`'s",
    note = "index paths into `metadata` read an `ObjectMeta` or a `CompactMeta`; an owner index \
            (`owner(...)`) reads any metadata"
)]
pub trait MetaRoot {
    /// What the path walks.
    type Root<'a>
    where
        Self: 'a;

    /// The start of the walk.
    fn root(&self) -> Self::Root<'_>;
}

impl MetaRoot for ObjectMeta {
    type Root<'a> = &'a ObjectMeta;

    fn root(&self) -> &ObjectMeta {
        self
    }
}

impl MetaRoot for CompactMeta {
    type Root<'a> = CompactFields<'a>;

    fn root(&self) -> CompactFields<'_> {
        CompactFields {
            name: self.name(),
            generate_name: self.generate_name(),
            namespace: self.namespace(),
            uid: self.uid(),
            resource_version: self.resource_version(),
            generation: self.generation(),
            labels: self.labels(),
            finalizers: self.finalizers(),
            deletion_timestamp: self.deletion_timestamp(),
        }
    }
}

/// The fields of a [`CompactMeta`] under `ObjectMeta`'s names, borrowed, for index
/// paths into `metadata` (owner references are read by `owner(...)` indexes).
pub struct CompactFields<'a> {
    /// `metadata.name`.
    pub name: Option<&'a str>,
    /// `metadata.generateName`.
    pub generate_name: Option<&'a str>,
    /// `metadata.namespace`.
    pub namespace: Option<&'a str>,
    /// `metadata.uid`.
    pub uid: Option<&'a str>,
    /// `metadata.resourceVersion`.
    pub resource_version: Option<&'a str>,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `metadata.labels`.
    pub labels: Option<&'a BTreeMap<String, String>>,
    /// `metadata.finalizers`.
    pub finalizers: &'a [String],
    /// `metadata.deletionTimestamp`.
    pub deletion_timestamp: Option<&'a Time>,
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

/// A borrowed map (a [`CompactMeta`]'s labels) is looked up as the map.
impl<M: MapGet + ?Sized> MapGet for &M {
    type Value = M::Value;
    fn map_get(&self, key: &str) -> Option<&M::Value> {
        (**self).map_get(key)
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
