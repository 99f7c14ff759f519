//! The streaming list decoder: items, errors, chunking, the cache and the key filter.

use super::*;
use crate::reflector::source::decode::object::decode_object;
use futures::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;

#[test]
fn list_decodes_each_item_and_skips_the_bad_one() {
    let text = r#"{"kind":"ConfigMapList","metadata":{"resourceVersion":"42","continue":"abc"},
        "items":[
          {"metadata":{"name":"good","namespace":"ns","resourceVersion":"40"},"data":{"a":"b"}},
          {"metadata":{"name":"bad","namespace":"ns","resourceVersion":"41"},"data":{"a":7}}
        ]}"#;
    let page: ListPage<ConfigMap> = decode_list(
        text,
        ListDecoder::new("ConfigMap", ManagedFields::Drop, None),
    )
    .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].metadata.name.as_deref(), Some("good"));
    assert_eq!(page.resource_version, "42");
    assert_eq!(page.continue_token.as_deref(), Some("abc"));
    assert_eq!(page.undecodable.len(), 1);
    assert_eq!(page.undecodable[0].key, "ns/bad");
    assert_eq!(page.undecodable[0].resource_version.as_deref(), Some("41"));
}

/// Feeds `text` to the streaming decoder in the given chunks.
fn decode_chunks(chunks: Vec<Vec<u8>>) -> Result<ListPage<ConfigMap>, kube::Error> {
    decode_chunks_with(chunks, None)
}

/// Feeds `text` to the streaming decoder in the given chunks, with `cache`.
fn decode_chunks_with(
    chunks: Vec<Vec<u8>>,
    cache: Option<&dyn CachedObjects<ConfigMap>>,
) -> Result<ListPage<ConfigMap>, kube::Error> {
    let body =
        futures::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>)).into_async_read();
    let decoder = ListDecoder::new("ConfigMap", ManagedFields::Drop, cache);
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(decode_list_stream(body, decoder))
}

/// Cached ConfigMaps, found by key, resourceVersion and uid.
struct Cache(Vec<Arc<ConfigMap>>);

impl CachedObjects<ConfigMap> for Cache {
    fn cached(
        &self,
        key: ObjectKeyRef<'_>,
        resource_version: &str,
        uid: Option<&str>,
    ) -> Option<Arc<ConfigMap>> {
        self.0
            .iter()
            .find(|cm| {
                let meta = &cm.metadata;
                meta.namespace.as_deref() == key.namespace
                    && meta.name.as_deref() == Some(key.name)
                    && meta.resource_version.as_deref() == Some(resource_version)
                    && (uid.is_none() || meta.uid.as_deref() == uid)
            })
            .cloned()
    }
}

fn item(name: &str, rv: &str, uid: &str, data: &str) -> String {
    format!(
        r#"{{"kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"ns",
            "resourceVersion":"{rv}","uid":"{uid}","managedFields":[{{"manager":"m"}}]}},
            "data":{data}}}"#
    )
}

fn cached(name: &str, rv: &str, uid: &str) -> Arc<ConfigMap> {
    Arc::new(serde_json::from_str(&item(name, rv, uid, r#"{"k":"cached"}"#)).unwrap())
}

#[test]
fn a_relist_takes_objects_the_cache_holds_at_the_listed_version() {
    let cache = Cache(vec![
        cached("same", "40", "u-same"),
        cached("changed", "39", "u-changed"),
        cached("recreated", "41", "u-old"),
        cached("bad-but-cached", "44", "u-bad"),
    ]);
    let items = [
        item("same", "40", "u-same", r#"{"k":"listed"}"#),
        item("changed", "41", "u-changed", r#"{"k":"listed"}"#),
        item("recreated", "41", "u-new", r#"{"k":"listed"}"#),
        item("new", "42", "u-new2", r#"{"k":"listed"}"#),
        item("bad", "43", "u-x", r#"{"k":7}"#),
        // Unchanged since it was cached: not decoded again, so not reported.
        item("bad-but-cached", "44", "u-bad", r#"{"k":7}"#),
    ];
    let text = format!(
        r#"{{"metadata":{{"resourceVersion":"45"}},"items":[{}]}}"#,
        items.join(",")
    );
    let bytes = text.as_bytes();
    for size in [1, 7, 64, bytes.len()] {
        let page = decode_chunks_with(
            bytes.chunks(size).map(<[u8]>::to_vec).collect(),
            Some(&cache),
        )
        .unwrap();
        let names = |objects: &mut dyn Iterator<Item = &ConfigMap>| -> Vec<String> {
            objects.filter_map(|cm| cm.metadata.name.clone()).collect()
        };
        assert_eq!(
            names(&mut page.items.iter()),
            ["changed", "recreated", "new"],
            "chunks of {size}"
        );
        assert!(
            page.items
                .iter()
                .all(|cm| cm.data.as_ref().unwrap()["k"] == "listed")
        );
        assert!(
            page.items
                .iter()
                .all(|cm| cm.metadata.managed_fields.is_none())
        );
        assert_eq!(
            names(&mut page.unchanged.iter().map(|cm| &**cm)),
            ["same", "bad-but-cached"]
        );
        assert!(Arc::ptr_eq(&page.unchanged[0], &cache.0[0]));
        assert_eq!(
            page.undecodable
                .iter()
                .map(|e| e.key.as_str())
                .collect::<Vec<_>>(),
            ["ns/bad"]
        );
        assert_eq!(page.resource_version, "45");
    }
}

fn summary(
    page: &ListPage<ConfigMap>,
) -> (Vec<Option<String>>, Vec<String>, String, Option<String>) {
    (
        page.items
            .iter()
            .map(|cm| cm.metadata.name.clone())
            .collect(),
        page.undecodable.iter().map(|e| e.key.clone()).collect(),
        page.resource_version.clone(),
        page.continue_token.clone(),
    )
}

const CHUNKED: &str = r#"{"kind":"ConfigMapList","apiVersion":"v1","n":12345,"t":true,
    "metadata":{"resourceVersion":"42","continue":"abc","remainingItemCount":7},
    "items":[
      {"metadata":{"name":"a\u0062","namespace":"ns","resourceVersion":"40"},"data":{"k":"v \"q\" ]}"}},
      {"metadata":{"name":"bad","namespace":"ns","resourceVersion":"41"},"data":{"a":7}},
      {"metadata":{"name":"c","namespace":"ns","labels":{"x":"y"}},"data":{"big":"0123456789012345678901234567890123456789"}}
    ],"extra":[1,[2,{"x":null}]]}
"#;

#[test]
fn streamed_list_decodes_the_same_however_it_is_cut() {
    let whole = decode_list::<ConfigMap>(
        CHUNKED,
        ListDecoder::new("ConfigMap", ManagedFields::Drop, None),
    )
    .unwrap();
    let expected = summary(&whole);
    assert_eq!(
        expected,
        (
            vec![Some("ab".to_owned()), Some("c".to_owned())],
            vec!["ns/bad".to_owned()],
            "42".to_owned(),
            Some("abc".to_owned())
        )
    );
    let bytes = CHUNKED.as_bytes();
    for cut in 0..=bytes.len() {
        let page = decode_chunks(vec![bytes[..cut].to_vec(), bytes[cut..].to_vec()]).unwrap();
        assert_eq!(summary(&page), expected, "cut at {cut}");
        assert_eq!(page.items, whole.items);
    }
    for size in [1, 2, 3, 7, 64] {
        let page = decode_chunks(bytes.chunks(size).map(<[u8]>::to_vec).collect()).unwrap();
        assert_eq!(summary(&page), expected, "chunks of {size}");
    }
}

#[test]
fn streamed_list_rejects_truncated_and_trailing_data() {
    let bytes = CHUNKED.trim_end().as_bytes();
    for cut in 0..bytes.len() {
        assert!(
            decode_chunks(vec![bytes[..cut].to_vec()]).is_err(),
            "a list cut at {cut} must not decode"
        );
    }
    let trailing = format!("{CHUNKED} {{}}");
    assert!(decode_chunks(vec![trailing.into_bytes()]).is_err());
    assert!(decode_chunks(vec![b"[]".to_vec()]).is_err());
    let empty = decode_chunks(vec![b" {} ".to_vec()]).unwrap();
    assert!(empty.items.is_empty() && empty.resource_version.is_empty());
}

#[test]
fn a_large_item_in_small_chunks_is_tried_a_logarithmic_number_of_times() {
    let big = "x".repeat(1 << 20);
    let text = format!(
        r#"{{"metadata":{{"resourceVersion":"1"}},"items":[{{"metadata":{{"name":"big"}},"data":{{"k":"{big}"}}}}]}}"#
    );
    let mut decoder = ListDecoder::<ConfigMap>::new("ConfigMap", ManagedFields::Drop, None);
    let mut pending = Vec::new();
    for chunk in text.as_bytes().chunks(1024) {
        pending.extend_from_slice(chunk);
        let used = decoder.advance(&pending, false).unwrap();
        pending.drain(..used);
    }
    let used = decoder.advance(&pending, true).unwrap();
    // 1,025 chunks, but each attempt waits for twice the bytes of the last one.
    assert!(decoder.attempts <= 16, "{} attempts", decoder.attempts);
    let page = decoder.finish(&pending[used..]).unwrap();
    assert_eq!(page.items[0].data.as_ref().unwrap()["k"].len(), 1 << 20);
}

#[test]
fn size_hinted_decoding_gives_equal_values_with_tight_vectors() {
    use k8s_openapi::api::core::v1::Pod;
    let pod = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"n",
        "finalizers":["f"],"ownerReferences":[{"apiVersion":"v1","kind":"X","name":"o","uid":"u"}],
        "managedFields":[{"manager":"m","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1",
          "fieldsV1":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{}}}},"f:list":[1,[2,3],{"a":[]}]}}]},
      "spec":{"containers":[{"name":"c","image":"i","args":["a","b","c","d","e"],"env":[],
          "ports":[{"containerPort":80},{"containerPort":443,"protocol":"TCP"}],
          "resources":{"limits":{"cpu":"1","memory":"1Gi"}}}],
        "tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule","tolerationSeconds":5}],
        "nodeSelector":{"a":"b"},"priority":-3,"enableServiceLinks":true},
      "status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2024-01-01T00:00:00Z"}],
        "podIP":"10.0.0.1","startTime":"2024-01-01T00:00:00Z"}}"#;
    let plain: Pod = serde_json::from_str(pod).unwrap();
    let raw: Box<RawValue> = serde_json::from_str(pod).unwrap();
    let hinted: Pod = decode_object(&raw, "Pod", ManagedFields::Keep).unwrap();
    assert_eq!(hinted, plain);
    assert_eq!(
        hinted.metadata.managed_fields.as_ref().unwrap().capacity(),
        1
    );
    assert_eq!(hinted.metadata.finalizers.as_ref().unwrap().capacity(), 1);
    let list = format!(r#"{{"metadata":{{"resourceVersion":"1"}},"items":[{pod},{pod}]}}"#);
    let page: ListPage<Pod> =
        decode_list(&list, ListDecoder::new("Pod", ManagedFields::Keep, None)).unwrap();
    assert_eq!(page.items, vec![plain.clone(), plain]);
    assert_eq!(
        page.items[1]
            .metadata
            .owner_references
            .as_ref()
            .unwrap()
            .capacity(),
        1
    );
}

#[test]
fn list_with_null_items_is_empty() {
    let page: ListPage<ConfigMap> = decode_list(
        r#"{"metadata":{"resourceVersion":"1"},"items":null}"#,
        ListDecoder::new("ConfigMap", ManagedFields::Drop, None),
    )
    .unwrap();
    assert!(page.items.is_empty());
    assert_eq!(page.continue_token, None);
}

/// Keeps the names listed.
fn keeping(names: &'static [&'static str]) -> SharedKeyFilter {
    SharedKeyFilter::new(Arc::new(crate::reflector::FnKeyFilter::new(
        move |namespace, name| namespace == Some("ns") && names.contains(&name),
    )))
}

/// Items the key filter does not keep are skipped unread: not decoded (one that would
/// not decode is not reported), not taken from the cache, only counted; the others
/// decode as without a filter, however the response is cut.
#[test]
fn a_key_filter_skips_items_before_decoding_them() {
    let items = [
        item("kept", "40", "u1", r#"{"k":"listed"}"#),
        item("dropped", "41", "u2", r#"{"k":"listed"}"#),
        // Would not decode, but is not ours: no error.
        item("dropped-bad", "42", "u3", r#"{"k":7}"#),
        item("kept-bad", "43", "u4", r#"{"k":7}"#),
        // Cached, but no longer kept: not handed back.
        item("dropped-cached", "44", "u5", r#"{"k":"listed"}"#),
        item("kept-cached", "45", "u6", r#"{"k":"listed"}"#),
    ];
    let text = format!(
        r#"{{"metadata":{{"resourceVersion":"46"}},"items":[{}]}}"#,
        items.join(",")
    );
    let filter = keeping(&["kept", "kept-bad", "kept-cached"]);
    let cache = Cache(vec![
        cached("dropped-cached", "44", "u5"),
        cached("kept-cached", "45", "u6"),
    ]);
    let bytes = text.as_bytes();
    for cache in [None, Some(&cache as &dyn CachedObjects<ConfigMap>)] {
        for size in [1, 7, 64, bytes.len()] {
            let body = futures::stream::iter(
                bytes
                    .chunks(size)
                    .map(|chunk| Ok::<_, std::io::Error>(chunk.to_vec())),
            )
            .into_async_read();
            let decoder =
                ListDecoder::new("ConfigMap", ManagedFields::Drop, cache).key_filter(Some(&filter));
            let page = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(decode_list_stream(body, decoder))
                .unwrap();
            let mut kept: Vec<_> = page
                .items
                .iter()
                .chain(page.unchanged.iter().map(|cm| &**cm))
                .filter_map(|cm| cm.metadata.name.clone())
                .collect();
            kept.sort();
            assert_eq!(kept, ["kept", "kept-cached"], "chunks of {size}");
            assert_eq!(page.unchanged.len(), usize::from(cache.is_some()));
            assert!(
                page.items
                    .iter()
                    .all(|cm| cm.metadata.managed_fields.is_none())
            );
            let undecodable: Vec<_> = page.undecodable.iter().map(|e| e.key.as_str()).collect();
            assert_eq!(undecodable, ["ns/kept-bad"]);
            assert_eq!(page.filtered_out, 3);
            assert_eq!(page.resource_version, "46");
        }
    }
}

/// An item whose header does not read as one (a name that is not a string) is not a
/// broken list: it is found whole, kept (the filter cannot say no to it) and reported
/// as undecodable, as without a filter.
#[test]
fn with_a_key_filter_an_item_with_an_odd_header_is_reported_not_fatal() {
    let text = r#"{"metadata":{"resourceVersion":"3"},"items":[
        {"metadata":{"name":7,"namespace":"ns"},"data":{"k":"v"}},
        {"metadata":{"name":"kept","namespace":"ns"},"data":{"k":"v"}}]}"#;
    let filter = keeping(&["kept"]);
    let page: ListPage<ConfigMap> = decode_list(
        text,
        ListDecoder::new("ConfigMap", ManagedFields::Drop, None).key_filter(Some(&filter)),
    )
    .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.undecodable.len(), 1);
    assert_eq!(page.undecodable[0].key, "<unnamed>");
    assert_eq!(page.filtered_out, 0);
}

/// A filter on the controller's key reads each item's owner references from the
/// header, past the ones that are not the controller: only the children of kept
/// Deployments are decoded; an orphan, a child of another kind of owner, and an item
/// whose Deployment owner is not its controller are skipped.
#[test]
fn a_controlled_by_filter_keeps_the_children_of_kept_owners() {
    use k8s_openapi::api::apps::v1::Deployment;
    let owned = |name: &str, owners: &str| {
        format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"1",
                "ownerReferences":{owners}}},"data":{{"k":"v"}}}}"#
        )
    };
    let reference = |api_version: &str, kind: &str, name: &str, controller: bool| {
        format!(
            r#"{{"apiVersion":"{api_version}","kind":"{kind}","name":"{name}","uid":"u-{name}",
                "blockOwnerDeletion":true,"controller":{controller}}}"#
        )
    };
    let items = [
        owned(
            "child-of-web",
            &format!(
                "[{},{}]",
                reference("v1", "ConfigMap", "other", false),
                reference("apps/v1", "Deployment", "web", true)
            ),
        ),
        owned(
            "child-of-api",
            &format!("[{}]", reference("apps/v1", "Deployment", "api", true)),
        ),
        owned(
            "owned-not-controlled",
            &format!("[{}]", reference("apps/v1", "Deployment", "web", false)),
        ),
        owned(
            "child-of-a-replica-set",
            &format!("[{}]", reference("apps/v1", "ReplicaSet", "web", true)),
        ),
        owned(
            "child-of-another-group",
            &format!(
                "[{}]",
                reference("example.com/v1", "Deployment", "web", true)
            ),
        ),
        owned("orphan", "null"),
        r#"{"metadata":{"name":"no-owners","namespace":"ns"},"data":{"k":"v"}}"#.to_owned(),
    ];
    let text = format!(
        r#"{{"metadata":{{"resourceVersion":"9"}},"items":[{}]}}"#,
        items.join(",")
    );
    let filter = SharedKeyFilter::new(Arc::new(crate::reflector::ControlledBy::<Deployment>::new(
        Arc::new(crate::reflector::FnKeyFilter::new(|namespace, name| {
            namespace == Some("ns") && name == "web"
        })),
    )));
    let page: ListPage<ConfigMap> = decode_list(
        &text,
        ListDecoder::new("ConfigMap", ManagedFields::Drop, None).key_filter(Some(&filter)),
    )
    .unwrap();
    let kept: Vec<_> = page
        .items
        .iter()
        .filter_map(|cm| cm.metadata.name.as_deref())
        .collect();
    assert_eq!(kept, ["child-of-web"]);
    assert!(page.undecodable.is_empty());
    assert_eq!(page.filtered_out, 6);
}
