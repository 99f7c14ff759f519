//! One object: decoded into `K` through the [adapter](super::managed_fields), or, when
//! it does not fit `K`, named in a [`DecodeError`] by what can be read of its metadata.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::managed_fields::{self, ManagedFields};
use crate::key::ObjectKey;
use crate::reflector::error::DecodeError;
use crate::reflector::key_filter::{ObjectHead, OwnerHead, SharedKeyFilter};
use crate::reflector::source::versions::ObjectVersion;

/// Just enough of an object to name it (in an error, or to a key filter) and to find
/// its cached copy: its metadata's namespace, name, resourceVersion, uid and
/// controller reference, borrowed from the JSON where they hold no escapes. Every
/// other field is skipped without being copied.
#[derive(Deserialize, Default)]
pub(in crate::reflector::source) struct RawHeader<'a> {
    #[serde(borrow, default)]
    metadata: RawObjectMeta<'a>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawObjectMeta<'a> {
    #[serde(borrow, default)]
    namespace: Option<JsonStr<'a>>,
    #[serde(borrow, default)]
    name: Option<JsonStr<'a>>,
    #[serde(borrow, default)]
    resource_version: Option<JsonStr<'a>>,
    #[serde(borrow, default)]
    uid: Option<JsonStr<'a>>,
    #[serde(borrow, default, rename = "ownerReferences")]
    controller: Option<RawController<'a>>,
}

/// The owner reference with `controller: true` among `ownerReferences`, if any (the
/// API server allows one); the others are read past without being kept.
#[derive(Default)]
struct RawController<'a>(Option<RawOwnerReference<'a>>);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawOwnerReference<'a> {
    #[serde(borrow, default)]
    api_version: Option<JsonStr<'a>>,
    #[serde(borrow, default)]
    kind: Option<JsonStr<'a>>,
    #[serde(borrow, default)]
    name: Option<JsonStr<'a>>,
    #[serde(borrow, default)]
    uid: Option<JsonStr<'a>>,
    #[serde(default)]
    controller: Option<bool>,
}

impl<'de: 'a, 'a> Deserialize<'de> for RawController<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = RawController<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of owner references")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut owners: A,
            ) -> Result<Self::Value, A::Error> {
                let mut controller = None;
                while let Some(owner) = owners.next_element::<RawOwnerReference<'a>>()? {
                    if controller.is_none() && owner.controller == Some(true) {
                        controller = Some(owner);
                    }
                }
                Ok(RawController(controller))
            }
        }
        deserializer.deserialize_seq(Visit(std::marker::PhantomData))
    }
}

/// A JSON string, borrowed from the input unless it holds escapes (serde's own `Cow`
/// always copies).
struct JsonStr<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for JsonStr<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Cow<'de, str>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Cow::Borrowed(text))
            }
            fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Cow::Owned(text.to_owned()))
            }
        }
        deserializer.deserialize_str(Visit).map(JsonStr)
    }
}

fn text<'s>(field: &'s Option<JsonStr<'_>>) -> Option<&'s str> {
    field.as_ref().map(|text| text.0.as_ref())
}

impl<'a> RawHeader<'a> {
    pub(super) fn read(raw: &'a RawValue) -> Self {
        serde_json::from_str(raw.get()).unwrap_or_default()
    }

    pub(super) fn namespace(&self) -> Option<&str> {
        text(&self.metadata.namespace)
    }

    pub(super) fn name(&self) -> Option<&str> {
        text(&self.metadata.name)
    }

    pub(super) fn resource_version(&self) -> Option<&str> {
        text(&self.metadata.resource_version)
    }

    pub(super) fn uid(&self) -> Option<&str> {
        text(&self.metadata.uid)
    }

    pub(super) fn key(&self) -> String {
        let name = self.name().unwrap_or("<unnamed>");
        match self.namespace() {
            Some(ns) => format!("{ns}/{name}"),
            None => name.to_owned(),
        }
    }

    /// Why the object of `kind` this header heads did not decode.
    pub(super) fn decode_error(&self, kind: &str, source: serde_json::Error) -> DecodeError {
        let object_key = self.name().map(|name| {
            Arc::new(ObjectKey {
                namespace: self.namespace().map(str::to_owned),
                name: name.to_owned(),
            })
        });
        DecodeError {
            kind: kind.to_owned(),
            key: self.key(),
            object_key,
            resource_version: self.resource_version().map(str::to_owned),
            source,
        }
    }

    /// The object as a key filter sees it; `None` without a name.
    fn head(&self) -> Option<ObjectHead<'_>> {
        let controller = self
            .metadata
            .controller
            .as_ref()
            .and_then(|controller| controller.0.as_ref())
            .and_then(|owner| {
                Some(OwnerHead {
                    api_version: text(&owner.api_version)?,
                    kind: text(&owner.kind)?,
                    name: text(&owner.name)?,
                    uid: text(&owner.uid),
                })
            });
        Some(ObjectHead {
            namespace: self.namespace(),
            name: self.name()?,
            uid: self.uid(),
            controller,
        })
    }

    /// Whether `filter` keeps the object; one without a name is kept (and decoded,
    /// to be named by what it is). The one place a source applies a key filter to
    /// what the server sent: the informer's lists and watches, and the consistency
    /// checks' lists of versions.
    pub(in crate::reflector::source) fn kept_by(&self, filter: &SharedKeyFilter) -> bool {
        self.head().is_none_or(|head| filter.keeps_object(&head))
    }

    /// The object's name, uid and resourceVersion, as a consistency check compares
    /// them (a bookmark's object has no name: its key's name is empty).
    pub(in crate::reflector::source) fn version(&self) -> ObjectVersion {
        ObjectVersion {
            key: ObjectKey::new(
                self.namespace().map(str::to_owned),
                self.name().unwrap_or_default(),
            ),
            uid: self.uid().map(str::to_owned),
            resource_version: self.resource_version().map(str::to_owned),
        }
    }
}

pub(super) fn decode_object<K: DeserializeOwned>(
    raw: &RawValue,
    kind: &str,
    managed_fields: ManagedFields,
) -> Result<K, DecodeError> {
    managed_fields::from_str::<K>(raw.get(), managed_fields).map_err(|e| decode_error(raw, kind, e))
}

/// Decodes one object from its JSON as an informer does (`metadata.managedFields`
/// skipped), with what it would hold in memory in a cache: the estimate behind
/// [`SharedIndexInformer::cache_size`](crate::shared_informer::SharedIndexInformer::cache_size)
/// (the strings, vectors and maps decoding builds, each rounded as glibc's allocator
/// rounds it, and the `Arc` the cache holds the object in; the store's own cost per
/// object is not in it). For capacity planning: what 30,000 of these cost.
///
/// ```
/// use informer::reflector::source::decode_measured;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let json = r#"{"metadata":{"name":"a","namespace":"default"},"data":{"k":"v"}}"#;
/// let (config_map, bytes) = decode_measured::<ConfigMap>(json).unwrap();
/// assert_eq!(config_map.data.unwrap()["k"], "v");
/// assert!(bytes > std::mem::size_of::<ConfigMap>());
/// ```
pub fn decode_measured<K: DeserializeOwned>(json: &str) -> Result<(K, usize), serde_json::Error> {
    let object = managed_fields::from_str::<K>(json, ManagedFields::Drop)?;
    Ok((object, super::size::last()))
}

/// Why the object `raw` of `kind` did not decode, naming it as far as it can be read.
pub(super) fn decode_error(raw: &RawValue, kind: &str, source: serde_json::Error) -> DecodeError {
    RawHeader::read(raw).decode_error(kind, source)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header borrows its strings from the JSON, copying only one with escapes,
    /// and reads nothing else into memory.
    #[test]
    fn the_header_borrows_what_it_can_and_skips_the_rest() {
        let raw: Box<RawValue> = serde_json::from_str(
            r#"{"kind":"ConfigMap","metadata":{"name":"a\u0062","namespace":"ns",
                "resourceVersion":"5","uid":"u","labels":{"x":"y"}},"data":{"k":"v"}}"#,
        )
        .unwrap();
        let header = RawHeader::read(&raw);
        assert!(matches!(
            &header.metadata.namespace,
            Some(JsonStr(Cow::Borrowed("ns")))
        ));
        assert!(matches!(&header.metadata.name, Some(JsonStr(Cow::Owned(name))) if name == "ab"));
        assert_eq!(
            (header.resource_version(), header.uid()),
            (Some("5"), Some("u"))
        );
        assert_eq!(header.key(), "ns/ab");
        let unnamed: Box<RawValue> = serde_json::from_str(r#"{"metadata":{"name":7}}"#).unwrap();
        assert_eq!(RawHeader::read(&unnamed).key(), "<unnamed>");
    }

    /// The header keeps the controller reference only, whichever place it has among
    /// the owner references; without one (or with no owner references) there is none.
    #[test]
    fn the_header_finds_the_controller_among_the_owners() {
        let head = |owners: &str| {
            let raw: Box<RawValue> = serde_json::from_str(&format!(
                r#"{{"metadata":{{"name":"c","namespace":"ns","ownerReferences":{owners}}}}}"#
            ))
            .unwrap();
            let header = RawHeader::read(&raw);
            header.head().map(|head| {
                head.controller.map(|owner| {
                    (
                        owner.api_version.to_owned(),
                        owner.kind.to_owned(),
                        owner.name.to_owned(),
                    )
                })
            })
        };
        let controller = Some(Some((
            "apps/v1".to_owned(),
            "Deployment".to_owned(),
            "web".to_owned(),
        )));
        assert_eq!(
            head(
                r#"[{"apiVersion":"v1","kind":"Pod","name":"p","controller":false},
                     {"apiVersion":"apps/v1","kind":"Deployment","name":"web","controller":true}]"#
            ),
            controller
        );
        assert_eq!(
            head(
                r#"[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","controller":true,"uid":"u"},
                     {"apiVersion":"v1","kind":"Pod","name":"p"}]"#
            ),
            controller
        );
        assert_eq!(
            head(r#"[{"apiVersion":"apps/v1","kind":"Deployment","name":"web"}]"#),
            Some(None)
        );
        assert_eq!(head("[]"), Some(None));
        assert_eq!(head("null"), Some(None));
    }
}
