//! The ConfigMaps every scenario uses, generated the same way on the server and in
//! memory.
//!
//! Object `i` is named `cm-{i}` and has two labels, `app: app-{i % 1000}` (so a
//! selector on one app matches one object in a thousand, like the pods of one
//! Deployment) and `shard: shard-{i % 10}`, and two data entries: `owner:
//! owner-{i % 500}` (what the secondary index of scenario 4 indexes) and a `payload` of
//! the requested size.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// How many distinct values the `app` label takes.
pub const APPS: usize = 1000;

/// How many distinct values the `owner` data entry takes.
pub const OWNERS: usize = 500;

/// The name of object `i`.
pub fn name(i: usize) -> String {
    format!("cm-{i}")
}

/// The value of the `app` label of object `i`.
pub fn app(i: usize) -> String {
    format!("app-{}", i % APPS)
}

/// The value of the `owner` data entry of object `i`.
pub fn owner(i: usize) -> String {
    format!("owner-{}", i % OWNERS)
}

/// A deterministic payload of `bytes` ASCII characters, different for each `i`.
pub fn payload(i: usize, bytes: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut state = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..bytes)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ALPHABET[(state % ALPHABET.len() as u64) as usize] as char
        })
        .collect()
}

/// Object `i` with a payload of `payload_bytes`, in `namespace` when given (the API
/// server fills in the namespace of a create from the URL).
pub fn config_map(i: usize, payload_bytes: usize, namespace: Option<&str>) -> ConfigMap {
    let labels = BTreeMap::from([
        ("app".to_owned(), app(i)),
        ("shard".to_owned(), format!("shard-{}", i % 10)),
    ]);
    let mut data = BTreeMap::from([("owner".to_owned(), owner(i))]);
    if payload_bytes > 0 {
        data.insert("payload".to_owned(), payload(i, payload_bytes));
    }
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name(i)),
            namespace: namespace.map(str::to_owned),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        data: Some(data),
        ..ConfigMap::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_deterministic_and_sized() {
        let a = config_map(7, 1024, Some("ns"));
        assert_eq!(a, config_map(7, 1024, Some("ns")));
        assert_eq!(a.data.as_ref().unwrap()["payload"].len(), 1024);
        assert_ne!(payload(1, 64), payload(2, 64));
        assert_eq!(a.metadata.labels.as_ref().unwrap()["app"], "app-7");
    }
}
