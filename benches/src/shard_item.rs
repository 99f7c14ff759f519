//! [`ShardItem`]: scenario 17's objects, a custom resource shaped like scenario 2's
//! ConfigMaps (labels, an `owner` entry and a 1 KiB payload in `data`), since the 1.36
//! control plane serves custom resources only.

use std::collections::BTreeMap;

use informer::informable::Informable;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::objects::{app, name, owner, payload};

/// What a [`ShardItem`] holds.
#[derive(CustomResource, Informable, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "bench.informer.example.com",
    version = "v1",
    kind = "ShardItem",
    namespaced
)]
pub struct ShardItemSpec {
    /// The `owner` entry and the payload, as a ConfigMap's `data`.
    pub data: BTreeMap<String, String>,
}

/// Item `i`, as scenario 2's ConfigMap `i` (the same name, labels and data).
pub fn item(i: usize, payload_bytes: usize) -> ShardItem {
    let mut data = BTreeMap::from([("owner".to_owned(), owner(i))]);
    if payload_bytes > 0 {
        data.insert("payload".to_owned(), payload(i, payload_bytes));
    }
    let mut item = ShardItem::new(&name(i), ShardItemSpec { data });
    item.metadata.labels = Some(BTreeMap::from([
        ("app".to_owned(), app(i)),
        ("shard".to_owned(), format!("shard-{}", i % 10)),
    ]));
    item
}
