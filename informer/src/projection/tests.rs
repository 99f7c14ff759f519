//! The derive's runtime: key matching and slim metadata. The derive's expansion is
//! tested end to end in `informer/tests/projection.rs` (decoding, equality with the
//! full type, allocations) and in the trybuild cases (compile errors).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::DeserializeSeed;

use super::__private::{SlimMeta, key_is};

#[test]
fn keys_match_the_kubernetes_names_of_rust_fields() {
    // The canonical names are the Rust names lower-cased without `_`.
    assert!(key_is("nodeName", "nodename"));
    assert!(key_is("podIP", "podip"));
    assert!(key_is("podIPs", "podips"));
    assert!(key_is("hostIPC", "hostipc"));
    assert!(key_is("type", "type"));
    assert!(key_is(
        "x-kubernetes-int-or-string",
        "xkubernetesintorstring"
    ));
    assert!(key_is("node_name", "nodename"));
    assert!(!key_is("nodeNames", "nodename"));
    assert!(!key_is("nodeNam", "nodename"));
    assert!(!key_is("node", "nodename"));
    assert!(!key_is("nodeName_x", "nodename"));
    assert!(!key_is("", "nodename"));
}

fn slim<const ANNOTATIONS: bool>(json: &str) -> Option<ObjectMeta> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    SlimMeta::<ANNOTATIONS>
        .deserialize(&mut deserializer)
        .unwrap()
}

const META: &str = r#"{"name":"web-0","generateName":"web-","namespace":"ns","uid":"u",
    "resourceVersion":"9","generation":2,"creationTimestamp":"2026-01-01T00:00:00Z",
    "deletionTimestamp":"2026-01-02T00:00:00Z","deletionGracePeriodSeconds":30,
    "labels":{"app":"web"},"annotations":{"note":"big"},
    "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web","uid":"r","controller":true}],
    "finalizers":["f"],"managedFields":[{"manager":"kubectl"}],"selfLink":"/x"}"#;

#[test]
fn slim_metadata_keeps_what_keys_stores_and_controllers_read() {
    let full: ObjectMeta = serde_json::from_str(META).unwrap();
    let meta = slim::<false>(META).unwrap();
    assert_eq!(
        meta,
        ObjectMeta {
            name: full.name.clone(),
            namespace: full.namespace.clone(),
            uid: full.uid.clone(),
            resource_version: full.resource_version.clone(),
            generation: full.generation,
            labels: full.labels.clone(),
            owner_references: full.owner_references.clone(),
            deletion_timestamp: full.deletion_timestamp.clone(),
            finalizers: full.finalizers.clone(),
            ..ObjectMeta::default()
        }
    );
    let with_annotations = slim::<true>(META).unwrap();
    assert_eq!(with_annotations.annotations, full.annotations);
    assert_eq!(
        ObjectMeta {
            annotations: None,
            ..with_annotations
        },
        meta
    );
}

#[test]
fn slim_metadata_reads_null_as_none_and_fails_like_the_full_type() {
    assert_eq!(slim::<false>("null"), None);
    let wrong = r#"{"name":7}"#;
    let mut deserializer = serde_json::Deserializer::from_str(wrong);
    let slim_error = SlimMeta::<false>
        .deserialize(&mut deserializer)
        .unwrap_err()
        .to_string();
    let full_error = serde_json::from_str::<ObjectMeta>(wrong)
        .unwrap_err()
        .to_string();
    assert_eq!(slim_error, full_error);
    // A key it skips may hold anything: it is never decoded.
    let odd = r#"{"name":"a","annotations":{"x":[1,{"y":null}]},"creationTimestamp":false}"#;
    assert_eq!(slim::<false>(odd).unwrap().name.as_deref(), Some("a"));
}
