//! One object: decoded into `K` through the [adapter](super::managed_fields), or, when
//! it does not fit `K`, named in a [`DecodeError`] by what can be read of its metadata.

use std::sync::Arc;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::managed_fields::{self, ManagedFields};
use crate::key::ObjectKey;
use crate::reflector::error::DecodeError;

/// Just enough of an object to name it in an error.
#[derive(Deserialize, Default)]
pub(super) struct RawHeader {
    #[serde(default)]
    pub(super) metadata: RawObjectMeta,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawObjectMeta {
    #[serde(default)]
    pub(super) namespace: Option<String>,
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) resource_version: Option<String>,
    #[serde(default)]
    pub(super) uid: Option<String>,
}

impl RawHeader {
    pub(super) fn read(raw: &RawValue) -> Self {
        serde_json::from_str(raw.get()).unwrap_or_default()
    }

    pub(super) fn key(&self) -> String {
        let name = self.metadata.name.as_deref().unwrap_or("<unnamed>");
        match &self.metadata.namespace {
            Some(ns) => format!("{ns}/{name}"),
            None => name.to_owned(),
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

/// Why the object `raw` of `kind` did not decode, naming it as far as it can be read.
pub(super) fn decode_error(raw: &RawValue, kind: &str, source: serde_json::Error) -> DecodeError {
    let header = RawHeader::read(raw);
    let object_key = header.metadata.name.clone().map(|name| {
        Arc::new(ObjectKey {
            namespace: header.metadata.namespace.clone(),
            name,
        })
    });
    DecodeError {
        kind: kind.to_owned(),
        key: header.key(),
        object_key,
        resource_version: header.metadata.resource_version,
        source,
    }
}
