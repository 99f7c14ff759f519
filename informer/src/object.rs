//! What the cache needs to know of an object: [`Object`], its resource and its
//! metadata, and [`Meta`], the metadata fields the library reads.
//!
//! The library's bounds rest on these traits, not on [`kube::Resource`], so that an
//! object the cache holds need not carry a whole `ObjectMeta`: every `kube::Resource`
//! (k8s-openapi types, `#[derive(CustomResource)]` and `#[derive(Resource)]` types,
//! `PartialObjectMeta<K>`, `DynamicObject`) is an `Object` with `ObjectMeta` as its
//! metadata, with nothing to implement, and a type of another layout implements
//! `Object` by naming the resource it is listed and watched as and a metadata type of
//! its own that implements `Meta`.
//!
//! ```
//! use informer::object::{Meta, Object};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//!
//! fn describe<K: Object>(object: &K) -> String {
//!     let meta = object.metadata();
//!     format!("{}/{}", meta.namespace().unwrap_or("-"), meta.name().unwrap_or("-"))
//! }
//!
//! let cm = ConfigMap {
//!     metadata: ObjectMeta {
//!         name: Some("web".into()),
//!         namespace: Some("default".into()),
//!         ..Default::default()
//!     },
//!     ..Default::default()
//! };
//! assert_eq!(describe(&cm), "default/web");
//! ```

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};

/// An object a cache can hold: the resource it is listed and watched as, and its
/// metadata.
///
/// Implemented for every [`kube::Resource`], whose metadata is its `ObjectMeta`.
pub trait Object {
    /// The resource whose API lists and watches this object: its group, version,
    /// kind, plural and scope, and the paths of its API. `Self` for a
    /// `kube::Resource`.
    type Resource: kube::Resource;

    /// The type of [`metadata`](Self::metadata).
    type Meta: Meta + 'static;

    /// The object's metadata.
    fn metadata(&self) -> &Self::Meta;

    /// The object's metadata, to change (a transform's).
    fn metadata_mut(&mut self) -> &mut Self::Meta;
}

impl<K: kube::Resource> Object for K {
    type Resource = K;
    type Meta = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        self.meta()
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        self.meta_mut()
    }
}

/// The metadata fields the library reads: for keys, resourceVersions, label
/// selectors, owner indexes, predicates, finalizers and preconditions. Each reads as
/// the field of `ObjectMeta` of the same name, an absent list as an empty one.
pub trait Meta {
    /// `metadata.name`.
    fn name(&self) -> Option<&str>;
    /// `metadata.generateName`.
    fn generate_name(&self) -> Option<&str>;
    /// `metadata.namespace`.
    fn namespace(&self) -> Option<&str>;
    /// `metadata.uid`.
    fn uid(&self) -> Option<&str>;
    /// `metadata.resourceVersion`.
    fn resource_version(&self) -> Option<&str>;
    /// `metadata.generation`.
    fn generation(&self) -> Option<i64>;
    /// `metadata.labels`.
    fn labels(&self) -> Option<&BTreeMap<String, String>>;
    /// `metadata.annotations`.
    fn annotations(&self) -> Option<&BTreeMap<String, String>>;
    /// `metadata.ownerReferences`.
    fn owner_references(&self) -> &[OwnerReference];
    /// `metadata.deletionTimestamp`.
    fn deletion_timestamp(&self) -> Option<&Time>;
    /// `metadata.finalizers`.
    fn finalizers(&self) -> &[String];
}

impl Meta for ObjectMeta {
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    fn generate_name(&self) -> Option<&str> {
        self.generate_name.as_deref()
    }

    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    fn generation(&self) -> Option<i64> {
        self.generation
    }

    fn labels(&self) -> Option<&BTreeMap<String, String>> {
        self.labels.as_ref()
    }

    fn annotations(&self) -> Option<&BTreeMap<String, String>> {
        self.annotations.as_ref()
    }

    fn owner_references(&self) -> &[OwnerReference] {
        self.owner_references.as_deref().unwrap_or_default()
    }

    fn deletion_timestamp(&self) -> Option<&Time> {
        self.deletion_timestamp.as_ref()
    }

    fn finalizers(&self) -> &[String] {
        self.finalizers.as_deref().unwrap_or_default()
    }
}

/// The resource `K` is listed and watched as.
pub(crate) type ResourceOf<K> = <K as Object>::Resource;

/// What names `K`'s resource at run time: `()` for a type known at compile time, an
/// `ApiResource` for a `DynamicObject`.
pub(crate) type DynamicTypeOf<K> = <ResourceOf<K> as kube::Resource>::DynamicType;
