//! One watch event: a line `{"type": .., "object": {..}}` of a watch stream.
//!
//! The object is decoded on its own, so one that does not fit `K` (or is of another
//! kind) becomes a [`WatchEvent::Undecodable`] and the stream goes on; an `ERROR` event
//! is the API server's `Status`, returned as the error it describes. With a key filter,
//! an event about an object the filter does not keep is a [`WatchEvent::FilteredOut`]
//! carrying only its resourceVersion: the object is not decoded.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::managed_fields::ManagedFields;
use super::object::{RawHeader, decode_object};
use crate::reflector::error::ReflectorError;
use crate::reflector::key_filter::SharedKeyFilter;
use crate::reflector::source::requests::WatchEvent;

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    object: &'a RawValue,
}

/// An event's type and its object's header, read in one pass that skips every other
/// field unread: enough to pass over an object the key filter does not keep.
#[derive(Deserialize)]
struct RawEventHeader<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    object: RawHeader<'a>,
}

/// What a bookmark's object says: its resourceVersion and whether it ends a streaming
/// list's initial events
/// (`k8s.io/initial-events-end`, `metav1.InitialEventsAnnotationKey`).
/// Other annotations are skipped without being copied.
#[derive(Deserialize, Default)]
struct RawBookmark<'a> {
    #[serde(borrow, default)]
    metadata: RawBookmarkMeta<'a>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawBookmarkMeta<'a> {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(borrow, default)]
    annotations: Option<RawBookmarkAnnotations<'a>>,
}

#[derive(Deserialize, Default)]
struct RawBookmarkAnnotations<'a> {
    #[serde(rename = "k8s.io/initial-events-end", borrow, default)]
    initial_events_end: Option<std::borrow::Cow<'a, str>>,
}

impl<'a> RawBookmark<'a> {
    fn read(raw: &'a RawValue) -> Self {
        serde_json::from_str(raw.get()).unwrap_or_default()
    }
}

/// Decodes one line of a watch stream; an object `key_filter` does not keep is not
/// decoded.
pub(in crate::reflector) fn decode_event<K: DeserializeOwned>(
    line: &[u8],
    kind: &str,
    managed_fields: ManagedFields,
    key_filter: Option<&SharedKeyFilter>,
) -> Result<WatchEvent<K>, kube::Error> {
    if let Some(filter) = key_filter
        && let Ok(head) = serde_json::from_slice::<RawEventHeader<'_>>(line)
        && matches!(head.kind, "ADDED" | "MODIFIED" | "DELETED")
        && !head.object.kept_by(filter)
    {
        return Ok(WatchEvent::FilteredOut {
            resource_version: head
                .object
                .resource_version()
                .unwrap_or_default()
                .to_owned(),
            key: head.object.name().map(|name| {
                crate::key::ObjectKey::new(head.object.namespace().map(str::to_owned), name)
            }),
        });
    }
    let event: RawEvent<'_> = serde_json::from_slice(line).map_err(kube::Error::SerdeError)?;
    let wrap: fn(K) -> WatchEvent<K> = match event.kind {
        "ADDED" => WatchEvent::Added,
        "MODIFIED" => WatchEvent::Modified,
        "DELETED" => WatchEvent::Deleted,
        "BOOKMARK" => {
            let bookmark = RawBookmark::read(event.object);
            return Ok(WatchEvent::Bookmark {
                resource_version: bookmark.metadata.resource_version.unwrap_or_default(),
                initial_events_end: bookmark
                    .metadata
                    .annotations
                    .and_then(|annotations| annotations.initial_events_end)
                    .as_deref()
                    == Some("true"),
            });
        }
        "ERROR" => {
            let status: kube::core::Status =
                serde_json::from_str(event.object.get()).map_err(kube::Error::SerdeError)?;
            return Err(kube::Error::Api(Box::new(status)));
        }
        other => {
            return Ok(WatchEvent::Undecodable(ReflectorError::Malformed(format!(
                "unknown watch event type {other:?}"
            ))));
        }
    };
    // Events carry the object's kind: an object of another kind is skipped, not
    // forced into the wrong type.
    let header_kind = if starts_with_kind(event.object, kind) {
        None
    } else {
        kind_of(event.object)
    };
    if let Some(found) = header_kind
        && found != kind
    {
        let header = RawHeader::read(event.object);
        return Ok(WatchEvent::Undecodable(ReflectorError::UnexpectedKind {
            expected: kind.to_owned(),
            found,
            key: header.key(),
        }));
    }
    Ok(match decode_object(event.object, kind, managed_fields) {
        Ok(object) => wrap(object),
        Err(e) => WatchEvent::Undecodable(e.into()),
    })
}

/// Whether the object's JSON starts with `{"kind":"<kind>"`, as the API server writes
/// it: then its kind is known without reading the rest of it.
fn starts_with_kind(raw: &RawValue, kind: &str) -> bool {
    raw.get()
        .as_bytes()
        .strip_prefix(br#"{"kind":""#)
        .and_then(|rest| rest.strip_prefix(kind.as_bytes()))
        .is_some_and(|rest| rest.first() == Some(&b'"'))
}

/// The object's `kind`, read without decoding the rest of it.
fn kind_of(raw: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    struct KindOnly<'a> {
        #[serde(borrow, default)]
        kind: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_str::<KindOnly<'_>>(raw.get())
        .ok()
        .and_then(|k| k.kind)
        .map(|k| k.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn the_kind_is_read_from_the_front_only_when_it_is_exactly_there() {
        let raw = |s: &str| serde_json::from_str::<Box<RawValue>>(s).unwrap();
        assert!(starts_with_kind(
            &raw(r#"{"kind":"ConfigMap","a":1}"#),
            "ConfigMap"
        ));
        assert!(!starts_with_kind(
            &raw(r#"{"kind":"ConfigMapList"}"#),
            "ConfigMap"
        ));
        assert!(!starts_with_kind(
            &raw(r#"{"apiVersion":"v1","kind":"ConfigMap"}"#),
            "ConfigMap"
        ));
        let listed: WatchEvent<ConfigMap> = decode_event(
            br#"{"type":"ADDED","object":{"kind":"ConfigMapList","metadata":{"name":"s"}}}"#,
            "ConfigMap",
            ManagedFields::Drop,
            None,
        )
        .unwrap();
        assert!(matches!(
            listed,
            WatchEvent::Undecodable(ReflectorError::UnexpectedKind { .. })
        ));
    }

    #[test]
    fn watch_events_decode_by_type() {
        let added: WatchEvent<ConfigMap> = decode_event(
            br#"{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"5"}}}"#,
            "ConfigMap",
            ManagedFields::Drop,
            None,
        )
        .unwrap();
        assert!(matches!(added, WatchEvent::Added(cm) if cm.metadata.name.as_deref() == Some("a")));

        let bookmark: WatchEvent<ConfigMap> = decode_event(
            br#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"9"}}}"#,
            "ConfigMap",
            ManagedFields::Drop,
            None,
        )
        .unwrap();
        assert!(matches!(
            bookmark,
            WatchEvent::Bookmark { resource_version, initial_events_end: false }
                if resource_version == "9"
        ));
    }

    /// A streaming list's initial events end at a bookmark annotated
    /// `k8s.io/initial-events-end: "true"`; any other value, or none, is a plain
    /// bookmark.
    #[test]
    fn a_bookmark_ends_the_initial_events_only_when_annotated_true() {
        let bookmark = |annotations: &str| -> WatchEvent<ConfigMap> {
            let line = format!(
                r#"{{"type":"BOOKMARK","object":{{"kind":"ConfigMap","metadata":{{"resourceVersion":"12","annotations":{annotations}}}}}}}"#
            );
            decode_event(line.as_bytes(), "ConfigMap", ManagedFields::Drop, None).unwrap()
        };
        let ends = |event: WatchEvent<ConfigMap>| match event {
            WatchEvent::Bookmark {
                resource_version,
                initial_events_end,
            } => {
                assert_eq!(resource_version, "12");
                initial_events_end
            }
            other => panic!("not a bookmark: {other:?}"),
        };
        assert!(ends(bookmark(
            r#"{"a":"b","k8s.io/initial-events-end":"true"}"#
        )));
        assert!(!ends(bookmark(r#"{"k8s.io/initial-events-end":"false"}"#)));
        assert!(!ends(bookmark(r#"{"other":"true"}"#)));
        assert!(!ends(bookmark("{}")));
        assert!(!ends(bookmark("null")));
    }

    #[test]
    fn watch_error_event_is_an_api_error_with_its_code() {
        let err = decode_event::<ConfigMap>(
            br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}"#,
            "ConfigMap",
            ManagedFields::Drop,
            None,
        )
        .unwrap_err();
        assert!(crate::reflector::error::is_expired(&err), "{err:?}");
    }

    #[test]
    fn undecodable_and_foreign_objects_are_reported_not_fatal() {
        let bad: WatchEvent<ConfigMap> = decode_event(
            br#"{"type":"MODIFIED","object":{"kind":"ConfigMap","metadata":{"name":"x","namespace":"n"},"data":[]}}"#,
            "ConfigMap",
            ManagedFields::Drop,
            None,
        )
        .unwrap();
        assert!(
            matches!(&bad, WatchEvent::Undecodable(ReflectorError::Decode(e)) if e.key == "n/x"),
            "{bad:?}"
        );

        let foreign: WatchEvent<ConfigMap> = decode_event(
            br#"{"type":"ADDED","object":{"kind":"Secret","metadata":{"name":"s","namespace":"n"}}}"#,
            "ConfigMap",
            ManagedFields::Drop,
            None,
        )
        .unwrap();
        assert!(
            matches!(&foreign, WatchEvent::Undecodable(ReflectorError::UnexpectedKind { found, .. }) if found == "Secret"),
            "{foreign:?}"
        );
    }

    /// A metadata-only watch event (what the server sends for
    /// `Accept: ...;as=PartialObjectMetadata`) decodes into a `PartialObjectMeta`, its
    /// managedFields dropped on the way like any object's.
    #[test]
    fn a_partial_object_metadata_event_decodes_without_managed_fields() {
        use kube::core::PartialObjectMeta;
        let event: WatchEvent<PartialObjectMeta<ConfigMap>> = decode_event(
            br#"{"type":"MODIFIED","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"n","labels":{"app":"web"},"managedFields":[{"manager":"m"}]}}}"#,
            "PartialObjectMetadata",
            ManagedFields::Drop,
            None,
        )
        .unwrap();
        let WatchEvent::Modified(partial) = event else {
            panic!("not a modification: {event:?}");
        };
        assert_eq!(partial.metadata.labels.unwrap()["app"], "web");
        assert!(partial.metadata.managed_fields.is_none());
        assert_eq!(partial.types.unwrap().kind, "PartialObjectMetadata");
    }

    /// A `DynamicObject` keeps the fields beyond metadata as JSON, and loses only
    /// managedFields.
    #[test]
    fn a_dynamic_object_event_keeps_its_fields_as_json() {
        use kube::core::DynamicObject;
        let event: WatchEvent<DynamicObject> = decode_event(
            br#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","managedFields":[{"manager":"m"}]},"data":{"k":"v"}}}"#,
            "ConfigMap",
            ManagedFields::Drop,
            None,
        )
        .unwrap();
        let WatchEvent::Added(object) = event else {
            panic!("not an add: {event:?}");
        };
        assert_eq!(object.data["data"]["k"], "v");
        assert!(object.metadata.managed_fields.is_none());
    }

    /// A watch event's line decoded as a ConfigMap through `filter`.
    fn decode_filtered(line: &str, filter: &SharedKeyFilter) -> WatchEvent<ConfigMap> {
        decode_event(
            line.as_bytes(),
            "ConfigMap",
            ManagedFields::Drop,
            Some(filter),
        )
        .unwrap()
    }

    /// An event about an object the key filter does not keep is not decoded (one that
    /// would not decode is no error): only its resourceVersion comes out. A kept one,
    /// and every bookmark, decodes as without a filter.
    #[test]
    fn an_event_not_kept_is_filtered_out_with_its_resource_version() {
        use crate::reflector::FnKeyFilter;
        use std::sync::Arc;
        let filter = SharedKeyFilter::new(Arc::new(FnKeyFilter::new(|namespace, name| {
            namespace == Some("n") && name == "kept"
        })));
        let decode = |line: &str| decode_filtered(line, &filter);
        for kind in ["ADDED", "MODIFIED", "DELETED"] {
            let line = format!(
                r#"{{"type":"{kind}","object":{{"kind":"ConfigMap","metadata":{{"name":"other","namespace":"n","resourceVersion":"7"}},"data":[]}}}}"#
            );
            assert!(
                matches!(decode(&line), WatchEvent::FilteredOut { resource_version, .. } if resource_version == "7"),
                "{kind}"
            );
        }
        let elsewhere = decode(
            r#"{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"kept","namespace":"m","resourceVersion":"8"}}}"#,
        );
        assert!(matches!(elsewhere, WatchEvent::FilteredOut { .. }));
        let kept = decode(
            r#"{"type":"MODIFIED","object":{"kind":"ConfigMap","metadata":{"name":"kept","namespace":"n","resourceVersion":"9"},"data":{"a":"b"}}}"#,
        );
        assert!(matches!(kept, WatchEvent::Modified(cm) if cm.data.as_ref().unwrap()["a"] == "b"));
        let kept_bad = decode(
            r#"{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"kept","namespace":"n"},"data":[]}}"#,
        );
        assert!(matches!(
            kept_bad,
            WatchEvent::Undecodable(ReflectorError::Decode(_))
        ));
        let bookmark = decode(
            r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"10"}}}"#,
        );
        assert!(matches!(bookmark, WatchEvent::Bookmark { .. }));
    }

    /// A filter on the controller's key reads the controller reference of each
    /// event's object, deletions included, before decoding it.
    #[test]
    fn a_controlled_by_filter_reads_the_controller_of_each_event() {
        use k8s_openapi::api::apps::v1::Deployment;
        let filter = SharedKeyFilter::new(std::sync::Arc::new(crate::reflector::ControlledBy::<
            Deployment,
        >::new(std::sync::Arc::new(
            crate::reflector::FnKeyFilter::new(|_, name| name == "web"),
        ))));
        let event = |kind: &str, owner: &str| {
            let line = format!(
                r#"{{"type":"{kind}","object":{{"kind":"ConfigMap","metadata":{{"name":"child",
                "namespace":"n","resourceVersion":"3","ownerReferences":[{{"apiVersion":"apps/v1",
                "kind":"Deployment","name":"{owner}","uid":"u","controller":true}}]}}}}}}"#
            )
            .replace('\n', "");
            decode_filtered(&line, &filter)
        };
        for kind in ["ADDED", "MODIFIED", "DELETED"] {
            assert!(
                matches!(event(kind, "api"), WatchEvent::FilteredOut { resource_version, .. } if resource_version == "3"),
                "{kind}"
            );
        }
        assert!(matches!(event("ADDED", "web"), WatchEvent::Added(_)));
        assert!(matches!(event("DELETED", "web"), WatchEvent::Deleted(_)));
    }
}
