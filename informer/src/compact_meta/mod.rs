//! [`CompactMeta`]: the metadata a cache reads, in the smallest layout that serves it
//! (public as `informer::projection::CompactMeta`; here, on the ground floor, beside
//! [`Shared`], which it is built of).

use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};

use crate::object::Meta;
use crate::shared::Shared;

#[cfg(test)]
mod tests;
mod text;

use text::Text;

/// The metadata of a cached object, compact: a projection's `metadata` field of this
/// type holds what the library and a controller read of an object in about 150
/// bytes, its values that repeat across objects stored once.
///
/// | Field | Held as |
/// |-------|---------|
/// | `name`, `resourceVersion` | inline up to 22 bytes (longer ones boxed) |
/// | `uid` | inline, its 36 characters (another length boxed) |
/// | `namespace`, `generateName` | [`Shared`]: one copy for every object |
/// | `labels` | [`Shared`]: one map for every object with the same labels (the Pods of one template) |
/// | `ownerReferences` | [`Shared`]: one list for every object with the same owners |
/// | `finalizers` | [`Shared`] |
/// | `generation` | inline |
/// | `deletionTimestamp` | boxed (most objects have none: 8 bytes) |
///
/// Every other key (`annotations`, `creationTimestamp`, `managedFields`, ...) is
/// skipped unread; read them through an `ObjectMeta` (`metadata: ObjectMeta`, slim or
/// full) instead. The values read are those `ObjectMeta` reads: a `null` is `None`, a
/// key repeated is the last one, an empty label map is `Some` empty.
///
/// Read it through [`Meta`] (`pod.metadata.name()`, `.labels()`,
/// `.owner_references()`), as the library does; make one for a test from an
/// `ObjectMeta` (`ObjectMeta { .. }.into()`, which keeps the fields above).
///
/// ```
/// use informer::object::Meta;
/// use informer::projection::{CompactMeta, Projection};
/// use k8s_openapi::api::core::v1::Pod;
///
/// #[derive(Projection, Clone, Debug)]
/// #[projection(of = Pod)]
/// pub struct PodName {
///     pub metadata: CompactMeta,
/// }
///
/// let pod = |name: &str| -> PodName {
///     serde_json::from_str(&format!(r#"{{"metadata":{{"name":"{name}","namespace":"default",
///         "uid":"0d5c1a52-8f0a-4b7e-9b6e-2f1d3c4b5a69","resourceVersion":"42",
///         "labels":{{"app":"web"}},"annotations":{{"a":"b"}}}}}}"#))
///     .unwrap()
/// };
/// let (a, b) = (pod("web-0"), pod("web-1"));
/// assert_eq!(a.metadata.name(), Some("web-0"));
/// assert_eq!(a.metadata.uid(), Some("0d5c1a52-8f0a-4b7e-9b6e-2f1d3c4b5a69"));
/// assert_eq!(a.metadata.labels().unwrap()["app"], "web");
/// assert_eq!(a.metadata.annotations(), None); // not held
/// // One label map for both.
/// assert!(std::ptr::eq(a.metadata.labels().unwrap(), b.metadata.labels().unwrap()));
/// ```
///
/// # What takes it
/// A projection whose `metadata` is a `CompactMeta` is an
/// [`Object`](crate::object::Object) listed and watched as its original, not a
/// `kube::Resource` (kube's trait asks for an `ObjectMeta`): informers, the factory,
/// listers, label selectors, `#[derive(Informable)]` indexes (paths into `metadata` by
/// `ObjectMeta`'s field names, owner indexes), owner mappings and preconditions take
/// it; a controller's primary type and `Api<T>` do not (write through the original's
/// `Api`, as for every projection).
///
/// # Memory accounting
/// As for every [`Shared`] value: the shared namespace, labels, owners and finalizers
/// are counted once for the process ([`shared_size`](crate::projection::shared_size)),
/// and the object counts its handles and its inline fields.
#[derive(Clone, Default, PartialEq)]
pub struct CompactMeta {
    name: Option<Text<22>>,
    generate_name: Option<Shared<String>>,
    namespace: Option<Shared<String>>,
    uid: Option<Text<36>>,
    resource_version: Option<Text<22>>,
    generation: Option<i64>,
    labels: Option<Shared<BTreeMap<String, String>>>,
    owner_references: Option<Shared<Owners>>,
    finalizers: Option<Shared<Vec<String>>>,
    deletion_timestamp: Option<Box<Time>>,
}

impl Meta for CompactMeta {
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    fn generate_name(&self) -> Option<&str> {
        self.generate_name.as_deref().map(String::as_str)
    }

    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref().map(String::as_str)
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
        self.labels.as_deref()
    }

    /// Not held: `None`.
    fn annotations(&self) -> Option<&BTreeMap<String, String>> {
        None
    }

    fn owner_references(&self) -> &[OwnerReference] {
        self.owner_references
            .as_deref()
            .map_or(&[], |owners| owners.0.as_slice())
    }

    fn deletion_timestamp(&self) -> Option<&Time> {
        self.deletion_timestamp.as_deref()
    }

    fn finalizers(&self) -> &[String] {
        self.finalizers.as_deref().map_or(&[], Vec::as_slice)
    }
}

/// The fields `CompactMeta` holds, the others dropped.
impl From<ObjectMeta> for CompactMeta {
    fn from(meta: ObjectMeta) -> Self {
        CompactMeta {
            name: meta.name.as_deref().map(Text::new),
            generate_name: meta.generate_name.map(Shared::new),
            namespace: meta.namespace.map(Shared::new),
            uid: meta.uid.as_deref().map(Text::new),
            resource_version: meta.resource_version.as_deref().map(Text::new),
            generation: meta.generation,
            labels: meta.labels.map(Shared::new),
            owner_references: meta.owner_references.map(|o| Shared::new(Owners(o))),
            finalizers: meta.finalizers.map(Shared::new),
            deletion_timestamp: meta.deletion_timestamp.map(Box::new),
        }
    }
}

impl fmt::Debug for CompactMeta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The fields present, as `ObjectMeta`'s derived `Debug` names them.
        let mut out = f.debug_struct("CompactMeta");
        if let Some(name) = self.name() {
            out.field("name", &name);
        }
        if let Some(generate_name) = self.generate_name() {
            out.field("generate_name", &generate_name);
        }
        if let Some(namespace) = self.namespace() {
            out.field("namespace", &namespace);
        }
        if let Some(uid) = self.uid() {
            out.field("uid", &uid);
        }
        if let Some(resource_version) = self.resource_version() {
            out.field("resource_version", &resource_version);
        }
        if let Some(generation) = self.generation {
            out.field("generation", &generation);
        }
        if let Some(labels) = self.labels() {
            out.field("labels", labels);
        }
        if let Some(owners) = &self.owner_references {
            out.field("owner_references", &owners.0);
        }
        if let Some(finalizers) = &self.finalizers {
            out.field("finalizers", &**finalizers);
        }
        if let Some(deletion_timestamp) = self.deletion_timestamp() {
            out.field("deletion_timestamp", deletion_timestamp);
        }
        out.finish()
    }
}

/// A list of owner references, shareable: `OwnerReference` is `PartialEq` only, and
/// every field of it is compared and hashed here.
#[derive(PartialEq)]
struct Owners(Vec<OwnerReference>);

impl<'de> Deserialize<'de> for Owners {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::deserialize(deserializer).map(Owners)
    }
}

impl Eq for Owners {}

impl Hash for Owners {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.0.len());
        for owner in &self.0 {
            // Destructured, so that a field added to `OwnerReference` (which `==`
            // compares) is a compile error here rather than a hash that ignores it.
            let OwnerReference {
                api_version,
                block_owner_deletion,
                controller,
                kind,
                name,
                uid,
            } = owner;
            (
                api_version,
                block_owner_deletion,
                controller,
                kind,
                name,
                uid,
            )
                .hash(state);
        }
    }
}

/// The keys `CompactMeta` reads.
#[derive(Clone, Copy)]
enum Key {
    Name,
    GenerateName,
    Namespace,
    Uid,
    ResourceVersion,
    Generation,
    Labels,
    OwnerReferences,
    Finalizers,
    DeletionTimestamp,
    Other,
}

impl Key {
    /// The keys read, in the order of [`FIELDS`].
    const ALL: [Key; 10] = [
        Key::Name,
        Key::GenerateName,
        Key::Namespace,
        Key::Uid,
        Key::ResourceVersion,
        Key::Generation,
        Key::Labels,
        Key::OwnerReferences,
        Key::Finalizers,
        Key::DeletionTimestamp,
    ];

    fn of(key: &str) -> Key {
        FIELDS
            .iter()
            .position(|field| *field == key)
            .map_or(Key::Other, |i| Key::ALL[i])
    }
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;

        impl Visitor<'_> for KeyVisitor {
            type Value = Key;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a field name")
            }

            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(Key::of(key))
            }

            fn visit_bytes<E: de::Error>(self, key: &[u8]) -> Result<Key, E> {
                Ok(std::str::from_utf8(key).map_or(Key::Other, Key::of))
            }
        }

        deserializer.deserialize_identifier(KeyVisitor)
    }
}

/// The keys it holds read as `ObjectMeta` reads them (each an `Option`: `null` is
/// `None`; the last of a repeated key wins), every other value skipped unbuilt.
impl<'de> Deserialize<'de> for CompactMeta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MetaVisitor;

        impl<'de> Visitor<'de> for MetaVisitor {
            type Value = CompactMeta;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("struct ObjectMeta")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CompactMeta, A::Error> {
                let mut meta = CompactMeta::default();
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::Name => meta.name = map.next_value()?,
                        Key::GenerateName => meta.generate_name = map.next_value()?,
                        Key::Namespace => meta.namespace = map.next_value()?,
                        Key::Uid => meta.uid = map.next_value()?,
                        Key::ResourceVersion => meta.resource_version = map.next_value()?,
                        Key::Generation => meta.generation = map.next_value()?,
                        Key::Labels => meta.labels = map.next_value()?,
                        Key::OwnerReferences => meta.owner_references = map.next_value()?,
                        Key::Finalizers => meta.finalizers = map.next_value()?,
                        Key::DeletionTimestamp => meta.deletion_timestamp = map.next_value()?,
                        Key::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(meta)
            }
        }

        deserializer.deserialize_struct("ObjectMeta", &FIELDS, MetaVisitor)
    }
}

/// The JSON keys read, for [`Key::of`] and a deserializer that asks.
const FIELDS: [&str; 10] = [
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "labels",
    "ownerReferences",
    "finalizers",
    "deletionTimestamp",
];
