use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::allocator::measured;

const FULL: &str = r#"{
    "name": "web-5d4f8c7b9-x7k2p", "generateName": "web-5d4f8c7b9-", "namespace": "default",
    "uid": "0d5c1a52-8f0a-4b7e-9b6e-2f1d3c4b5a69", "resourceVersion": "123456789",
    "generation": 3, "creationTimestamp": "2026-01-01T00:00:00Z",
    "deletionTimestamp": "2026-01-02T00:00:00Z", "deletionGracePeriodSeconds": 30,
    "labels": {"app": "web", "pod-template-hash": "5d4f8c7b9"},
    "annotations": {"a": "b"},
    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d4f8c7b9",
        "uid": "11111111-2222-3333-4444-555555555555", "controller": true, "blockOwnerDeletion": true}],
    "finalizers": ["example.com/cleanup"],
    "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:metadata": {"f:labels": {}}}}]
}"#;

/// Every field `Meta` reads, as a comparable tuple.
fn read(meta: &impl Meta) -> String {
    format!(
        "{:?}",
        (
            (
                meta.name(),
                meta.generate_name(),
                meta.namespace(),
                meta.uid()
            ),
            (
                meta.resource_version(),
                meta.generation(),
                meta.labels().cloned()
            ),
            (
                meta.owner_references().to_vec(),
                meta.deletion_timestamp().cloned(),
                meta.finalizers().to_vec(),
            ),
        )
    )
}

#[test]
fn every_field_the_library_reads_is_what_object_meta_reads() {
    let compact: CompactMeta = serde_json::from_str(FULL).unwrap();
    let full: ObjectMeta = serde_json::from_str(FULL).unwrap();
    assert_eq!(read(&compact), read(&full));
    assert_eq!(compact.annotations(), None, "annotations are not held");
    assert_eq!(
        compact,
        CompactMeta::from(full),
        "from an ObjectMeta, the same"
    );
}

#[test]
fn nulls_missing_keys_repeats_and_unknown_keys_read_as_object_meta_reads_them() {
    for json in [
        r#"{}"#,
        r#"{"name": null, "uid": null, "labels": null, "ownerReferences": null, "generation": null}"#,
        r#"{"name": "a", "name": "b", "labels": {"x": "1"}, "labels": {}}"#,
        r#"{"name": "a", "other": {"deep": [1, {"x": null}]}, "spec": "x", "finalizers": []}"#,
    ] {
        let compact: CompactMeta = serde_json::from_str(json).unwrap();
        let full: ObjectMeta = serde_json::from_str(json).unwrap();
        assert_eq!(read(&compact), read(&full), "{json}");
    }
    let repeated: CompactMeta = serde_json::from_str(r#"{"name": "a", "name": "b"}"#).unwrap();
    assert_eq!(repeated.name(), Some("b"), "the last one wins");
    let empty: CompactMeta = serde_json::from_str(r#"{"labels": {}}"#).unwrap();
    assert_eq!(
        empty.labels(),
        Some(&BTreeMap::new()),
        "an empty map is kept"
    );
}

#[test]
fn a_value_of_the_wrong_type_is_the_error_object_meta_gives() {
    for json in [
        r#"{"name": 7}"#,
        r#"{"generation": "x"}"#,
        r#"{"labels": []}"#,
        r#"[]"#,
    ] {
        assert!(serde_json::from_str::<ObjectMeta>(json).is_err(), "{json}");
        assert!(serde_json::from_str::<CompactMeta>(json).is_err(), "{json}");
    }
}

#[test]
fn labels_owners_and_namespaces_that_repeat_are_stored_once() {
    let a: CompactMeta = serde_json::from_str(FULL).unwrap();
    let b: CompactMeta = serde_json::from_str(&FULL.replace("x7k2p", "q9w8e")).unwrap();
    assert_ne!(a.name(), b.name());
    assert!(std::ptr::eq(a.labels().unwrap(), b.labels().unwrap()));
    assert!(std::ptr::eq(a.owner_references(), b.owner_references()));
    assert!(std::ptr::eq(a.namespace().unwrap(), b.namespace().unwrap()));
    let other: CompactMeta =
        serde_json::from_str(&FULL.replace(r#""app": "web""#, r#""app": "api""#)).unwrap();
    assert!(!std::ptr::eq(a.labels().unwrap(), other.labels().unwrap()));
    assert_eq!(other.labels().unwrap()["app"], "api");
}

#[test]
fn short_texts_are_inline_and_long_ones_boxed_and_counted() {
    // Inline: the name, uid and resourceVersion allocate nothing.
    let json = r#"{"name": "pod-1", "uid": "0d5c1a52-8f0a-4b7e-9b6e-2f1d3c4b5a69", "resourceVersion": "7"}"#;
    let (meta, bytes) = measured(|| serde_json::from_str::<CompactMeta>(json).unwrap());
    assert_eq!(bytes, 0);
    assert_eq!(meta.name(), Some("pod-1"));
    // A name past 22 bytes and a uid of another length are boxed, each counted.
    let long = "a-name-that-is-longer-than-inline";
    let json = format!(r#"{{"name": "{long}", "uid": "uid-1"}}"#);
    let (meta, bytes) = measured(|| serde_json::from_str::<CompactMeta>(&json).unwrap());
    assert_eq!(bytes, crate::allocator::allocation(long.len()));
    assert_eq!((meta.name(), meta.uid()), (Some(long), Some("uid-1")));
    assert!(matches!(meta.name, Some(Text::Heap(_))));
    assert!(matches!(meta.uid, Some(Text::Inline { .. })));
    // Exactly at the bound: inline; one past: boxed.
    assert!(matches!(
        Text::<22>::new(&"x".repeat(22)),
        Text::Inline { .. }
    ));
    assert!(matches!(Text::<22>::new(&"x".repeat(23)), Text::Heap(_)));
    assert_eq!(Text::<22>::new("héllo").as_str(), "héllo");
}

#[test]
fn the_layout_stays_small() {
    // What an object pays for its metadata, inline; the shared values are apart.
    assert_eq!(size_of::<Option<Text<22>>>(), 24);
    assert_eq!(size_of::<Option<Text<36>>>(), 40);
    assert!(
        size_of::<CompactMeta>() <= 152,
        "{}",
        size_of::<CompactMeta>()
    );
    // 152 against 360 bytes.
    assert!(size_of::<CompactMeta>() * 2 < size_of::<ObjectMeta>());
}

#[test]
fn debug_names_the_fields_present() {
    let meta: CompactMeta = serde_json::from_str(r#"{"name": "a", "generation": 2}"#).unwrap();
    assert_eq!(
        format!("{meta:?}"),
        r#"CompactMeta { name: "a", generation: 2 }"#
    );
}
