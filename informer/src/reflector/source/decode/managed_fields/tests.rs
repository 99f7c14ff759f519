use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use serde::de::DeserializeOwned;

use super::{ManagedFields, from_str};

const MANAGED: &str = r#"[{"manager":"kubectl","operation":"Update","apiVersion":"v1",
    "time":"2024-01-01T00:00:00Z","fieldsType":"FieldsV1",
    "fieldsV1":{"f:data":{".":{},"f:k":{}},"f:metadata":{"f:labels":{".":{},"f:app":{}}}}}]"#;

fn config_map(managed_fields_key: &str) -> String {
    format!(
        r#"{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"name":"cm","namespace":"ns",
            "uid":"u-1","resourceVersion":"7","labels":{{"app":"web"}},
            "{managed_fields_key}":{MANAGED},"annotations":{{"a":"b"}}}},"data":{{"k":"v"}}}}"#
    )
}

/// What plain serde_json decodes, with `managedFields` cleared by hand.
fn plain_without_managed_fields<K: DeserializeOwned>(text: &str, clear: impl FnOnce(&mut K)) -> K {
    let mut object: K = serde_json::from_str(text).unwrap();
    clear(&mut object);
    object
}

#[test]
fn drop_skips_managed_fields_and_keeps_everything_else() {
    let text = config_map("managedFields");
    let dropped: ConfigMap = from_str(&text, ManagedFields::Drop).unwrap();
    assert_eq!(dropped.metadata.managed_fields, None);
    assert_eq!(
        dropped,
        plain_without_managed_fields(&text, |cm: &mut ConfigMap| cm.metadata.managed_fields =
            None)
    );
    // The fields after the skipped entry were read too.
    assert_eq!(dropped.metadata.annotations.unwrap()["a"], "b");
}

#[test]
fn keep_decodes_like_plain_serde_json() {
    let text = config_map("managedFields");
    let kept: ConfigMap = from_str(&text, ManagedFields::Keep).unwrap();
    let plain: ConfigMap = serde_json::from_str(&text).unwrap();
    assert_eq!(kept, plain);
    assert_eq!(
        kept.metadata.managed_fields.unwrap()[0].manager.as_deref(),
        Some("kubectl")
    );
}

#[test]
fn the_default_is_drop() {
    assert_eq!(ManagedFields::default(), ManagedFields::Drop);
}

#[test]
fn escaped_keys_are_recognised_and_still_decoded() {
    // `\u0046` is `F`: the key is `managedFields`, written with an escape, so serde_json
    // hands it over as an owned string rather than borrowed from the input.
    let text = config_map(r"managed\u0046ields").replace(r#""name":"cm""#, r#""n\u0061me":"cm""#);
    let dropped: ConfigMap = from_str(&text, ManagedFields::Drop).unwrap();
    assert_eq!(dropped.metadata.managed_fields, None);
    assert_eq!(dropped.metadata.name.as_deref(), Some("cm"));
    let kept: ConfigMap = from_str(&text, ManagedFields::Keep).unwrap();
    assert_eq!(kept.metadata.managed_fields.map(|m| m.len()), Some(1));
}

#[test]
fn nested_object_meta_is_stripped_too() {
    let text = format!(
        r#"{{"apiVersion":"apps/v1","kind":"Deployment",
            "metadata":{{"name":"d","namespace":"ns","managedFields":{MANAGED}}},
            "spec":{{"selector":{{"matchLabels":{{"app":"web"}}}},
              "template":{{"metadata":{{"labels":{{"app":"web"}},"managedFields":{MANAGED}}},
                "spec":{{"containers":[{{"name":"c","image":"i"}}]}}}}}}}}"#
    );
    let dropped: Deployment = from_str(&text, ManagedFields::Drop).unwrap();
    let expected = plain_without_managed_fields(&text, |d: &mut Deployment| {
        d.metadata.managed_fields = None;
        let template = &mut d.spec.template;
        template.metadata.as_mut().unwrap().managed_fields = None;
    });
    assert_eq!(dropped, expected);
}

#[test]
fn malformed_managed_fields_do_not_fail_an_object_that_drops_them() {
    // A value that does not fit `Vec<ManagedFieldsEntry>` is only scanned when dropped.
    let text = config_map("managedFields").replace(MANAGED, r#"{"not":["a","list"]}"#);
    let dropped: ConfigMap = from_str(&text, ManagedFields::Drop).unwrap();
    assert_eq!(dropped.metadata.name.as_deref(), Some("cm"));
    assert!(from_str::<ConfigMap>(&text, ManagedFields::Keep).is_err());
    // Broken JSON is still an error.
    let broken = config_map("managedFields").replace(MANAGED, r#"[{"a":}]"#);
    assert!(from_str::<ConfigMap>(&broken, ManagedFields::Drop).is_err());
}

#[test]
fn other_errors_read_the_same_in_both_modes() {
    let text = config_map("managedFields").replace(r#"{"k":"v"}"#, r#"{"k":7}"#);
    let dropped = from_str::<ConfigMap>(&text, ManagedFields::Drop).unwrap_err();
    let kept = from_str::<ConfigMap>(&text, ManagedFields::Keep).unwrap_err();
    let plain = serde_json::from_str::<ConfigMap>(&text).unwrap_err();
    assert_eq!(dropped.to_string(), plain.to_string());
    assert_eq!(kept.to_string(), plain.to_string());
    let wrong_meta = r#"{"metadata":"nope"}"#;
    assert_eq!(
        from_str::<ConfigMap>(wrong_meta, ManagedFields::Drop)
            .unwrap_err()
            .to_string(),
        serde_json::from_str::<ConfigMap>(wrong_meta)
            .unwrap_err()
            .to_string()
    );
}
