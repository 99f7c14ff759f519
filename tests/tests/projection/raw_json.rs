//! A projection reads what the full type reads, from the API server's own JSON: a CRD
//! that keeps unknown fields (`x-kubernetes-preserve-unknown-fields`) holds objects
//! with look-alike keys (`palette` and `palette_`, `palette-`, `Palette`, `size_`,
//! `tags_`, `node_name`), `null`s, missing keys, values of another type (drift),
//! unknown keys, and huge and deeply nested fields the projection does not read.
//! Each object's JSON, as the server lists it, decodes to the same values both ways
//! or to the same error; and through a streaming list, a paged list, watch events, a
//! relist after 410 Gone and a restart, the caches of full and projected informers
//! hold exactly the objects that decode, with the same values, and both report the
//! same error for each object they skip.
//!
//! The one difference, by design: a value the projection does not read is never
//! looked at, so an object the full type refuses for it (a value of another type, one
//! nested deeper than serde_json's limit of 128) is read by the projection.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use informer::projection::Projection;
use informer::reflector::source::ApiListerWatcher;
use informer::reflector::{Config, ReflectorError};
use informer::shared_informer::{InformerConfig, SharedIndexInformer, wait_for_cache_sync};
use informer::testenv::TestEnv;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;
use kube::{CustomResource, ResourceExt};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::common::{Running, eventually, spawn_run};
use super::{WAIT, uncached_env};

const GROUP: &str = "shadow.informer.example.com";

/// The full type, as serde's derive reads it (a CRD's Rust type).
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq)]
#[kube(
    group = "shadow.informer.example.com",
    version = "v1",
    kind = "Swatch",
    namespaced,
    status = "SwatchStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
struct SwatchSpec {
    palette: String,
    size: u32,
    tags: Vec<String>,
    node_name: Option<String>,
    #[serde(default)]
    coats: u32,
    /// Not projected: large.
    #[serde(default)]
    history: Vec<Stroke>,
    /// Not projected: deeply nested.
    notes: Option<Value>,
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Stroke {
    brush: String,
    points: Vec<Vec<i64>>,
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
struct SwatchStatus {
    phase: Option<String>,
    observed_size: Option<u32>,
}

#[derive(Projection, Clone, Debug, PartialEq)]
#[projection(of = Swatch)]
struct SwatchView {
    metadata: ObjectMeta,
    spec: SwatchViewSpec,
    status: Option<SwatchViewStatus>,
}

#[derive(Projection, Clone, Debug, PartialEq, Default)]
#[projection(of = SwatchSpec)]
struct SwatchViewSpec {
    palette: String,
    size: u32,
    tags: Vec<String>,
    node_name: Option<String>,
    coats: u32,
}

#[derive(Projection, Clone, Debug, PartialEq, Default)]
#[projection(of = SwatchStatus)]
struct SwatchViewStatus {
    phase: Option<String>,
}

/// What the projection holds of a full `Swatch`.
fn projected(full: &Swatch) -> SwatchView {
    SwatchView {
        metadata: super::projected_meta(&full.metadata),
        spec: SwatchViewSpec {
            palette: full.spec.palette.clone(),
            size: full.spec.size,
            tags: full.spec.tags.clone(),
            node_name: full.spec.node_name.clone(),
            coats: full.spec.coats,
        },
        status: full.status.as_ref().map(|status| SwatchViewStatus {
            phase: status.phase.clone(),
        }),
    }
}

/// A CRD whose spec and status keep whatever they are given, `null` included.
fn crd() -> CustomResourceDefinition {
    let free =
        json!({"type": "object", "nullable": true, "x-kubernetes-preserve-unknown-fields": true});
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("swatches.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "swatches", "singular": "swatch", "kind": "Swatch", "listKind": "SwatchList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": free, "status": free}}},
            }],
        },
    }))
    .unwrap()
}

/// What decoding an object both ways must give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// The same values.
    Same,
    /// The same error.
    BothRefuse,
    /// The full type refuses a value the projection does not read (the key named):
    /// the projection reads the rest as the full type reads the object without it.
    UnreadRefused(&'static str),
}

fn plain() -> Value {
    json!({"palette": "red", "size": 3, "tags": ["a", "b"], "nodeName": "n1", "coats": 2})
}

/// `plain()` with `changes` (`None`: the key removed).
fn spec(changes: &[(&str, Option<Value>)]) -> Value {
    let mut spec = plain();
    for (key, value) in changes {
        match value {
            Some(value) => spec[*key] = value.clone(),
            None => {
                spec.as_object_mut().unwrap().remove(*key);
            }
        }
    }
    spec
}

/// A value nested `depth` levels deep.
fn nested(depth: usize) -> Value {
    (0..depth).fold(json!("bottom"), |inner, i| {
        if i % 2 == 0 {
            json!([inner])
        } else {
            json!({ "level": inner })
        }
    })
}

/// The objects: name, spec (or the whole body's other keys), status, expectation.
fn cases() -> Vec<(&'static str, Value, Expect)> {
    let null = || Some(Value::Null);
    let strokes: Vec<Value> = (0..2000)
        .map(|i| json!({"brush": format!("brush-{i}"), "points": [[i, i + 1], [i + 2, i + 3, i + 4]]}))
        .collect();
    let body = |spec: Value| json!({ "spec": spec });
    vec![
        ("plain", body(plain()), Expect::Same),
        (
            "shadow-underscore",
            body(spec(&[("palette_", Some(json!("blue")))])),
            Expect::Same,
        ),
        (
            "shadow-dash",
            body(spec(&[("palette-", Some(json!("blue")))])),
            Expect::Same,
        ),
        (
            "shadow-capital",
            body(spec(&[("Palette", Some(json!("blue")))])),
            Expect::Same,
        ),
        (
            "shadow-size",
            body(spec(&[("size_", Some(json!(9)))])),
            Expect::Same,
        ),
        (
            "shadow-tags",
            body(spec(&[("tags_", Some(json!(["x"])))])),
            Expect::Same,
        ),
        (
            "shadow-snake",
            body(spec(&[("node_name", Some(json!("n2")))])),
            Expect::Same,
        ),
        (
            "shadow-all",
            body(spec(&[
                ("palette_", Some(json!("blue"))),
                ("palette-", Some(json!("green"))),
                ("PALETTE", Some(json!("pink"))),
                ("pal_ette", Some(json!("grey"))),
                ("Size", Some(json!(7))),
                ("tags-", Some(json!(["y"]))),
                ("nodename", Some(json!("n3"))),
                ("coats_", Some(json!(5))),
                ("", Some(json!("empty"))),
            ])),
            Expect::Same,
        ),
        (
            "null-palette",
            body(spec(&[("palette", null())])),
            Expect::BothRefuse,
        ),
        (
            "null-size",
            body(spec(&[("size", null())])),
            Expect::BothRefuse,
        ),
        (
            "null-tags",
            body(spec(&[("tags", null())])),
            Expect::BothRefuse,
        ),
        (
            "null-coats",
            body(spec(&[("coats", null())])),
            Expect::BothRefuse,
        ),
        (
            "null-node",
            body(spec(&[("nodeName", null())])),
            Expect::Same,
        ),
        (
            "null-palette-shadowed",
            body(spec(&[
                ("palette", null()),
                ("palette_", Some(json!("blue"))),
            ])),
            Expect::BothRefuse,
        ),
        (
            "missing-palette",
            body(spec(&[("palette", None)])),
            Expect::BothRefuse,
        ),
        (
            "missing-palette-shadowed",
            body(spec(&[
                ("palette", None),
                ("palette_", Some(json!("blue"))),
            ])),
            Expect::BothRefuse,
        ),
        (
            "missing-size",
            body(spec(&[("size", None)])),
            Expect::BothRefuse,
        ),
        (
            "missing-coats",
            body(spec(&[("coats", None)])),
            Expect::Same,
        ),
        (
            "missing-node",
            body(spec(&[("nodeName", None)])),
            Expect::Same,
        ),
        (
            "drift-palette",
            body(spec(&[("palette", Some(json!(7)))])),
            Expect::BothRefuse,
        ),
        (
            "drift-tags",
            body(spec(&[("tags", Some(json!("a")))])),
            Expect::BothRefuse,
        ),
        (
            "drift-size",
            body(spec(&[("size", Some(json!(-1)))])),
            Expect::BothRefuse,
        ),
        (
            "drift-size-float",
            body(spec(&[("size", Some(json!(1.5)))])),
            Expect::BothRefuse,
        ),
        (
            "drift-shadow",
            body(spec(&[("palette_", Some(json!({"not": "a string"})))])),
            Expect::Same,
        ),
        (
            "unknown",
            body(spec(&[
                (
                    "future",
                    Some(json!({"deep": [1, {"x": null}], "more": true})),
                ),
                ("x-extra", Some(json!("y"))),
            ])),
            Expect::Same,
        ),
        (
            "huge-unread",
            body(spec(&[
                ("history", Some(Value::Array(strokes))),
                ("notes", Some(nested(100))),
            ])),
            Expect::Same,
        ),
        (
            "deep-unread",
            body(spec(&[("notes", Some(nested(200)))])),
            Expect::UnreadRefused("notes"),
        ),
        (
            "drift-unread",
            body(spec(&[("history", Some(json!("not a list")))])),
            Expect::UnreadRefused("history"),
        ),
        ("spec-null", json!({"spec": null}), Expect::BothRefuse),
        ("spec-missing", json!({}), Expect::BothRefuse),
        (
            "status-null",
            json!({"spec": plain(), "status": null}),
            Expect::Same,
        ),
        (
            "status-shadow",
            json!({"spec": plain(), "status": {"phase": "Ready", "phase_": "Failed", "Phase": "Lost", "observedSize": 3}}),
            Expect::Same,
        ),
        (
            "status-drift",
            json!({"spec": plain(), "status": {"phase": 7}}),
            Expect::BothRefuse,
        ),
        (
            "status-drift-unread",
            json!({"spec": plain(), "status": {"phase": "Ready", "observedSize": "big"}}),
            Expect::UnreadRefused("status.observedSize"),
        ),
    ]
}

/// The API server's path of the swatches in `ns`.
fn path(ns: &str) -> String {
    format!("/apis/{GROUP}/v1/namespaces/{ns}/swatches")
}

async fn send(client: &kube::Client, request: http::Request<Vec<u8>>) -> String {
    let what = format!("{} {}", request.method(), request.uri());
    client
        .request_text(request)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}

async fn create(client: &kube::Client, ns: &str, name: &str, body: &Value) {
    let mut object = body.clone();
    object["apiVersion"] = json!(format!("{GROUP}/v1"));
    object["kind"] = json!("Swatch");
    object["metadata"] = json!({"name": name, "labels": {"case": name}});
    let request = http::Request::post(path(ns))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&object).unwrap())
        .unwrap();
    send(client, request).await;
}

/// A JSON patch (`op`s on paths): what sets a key to `null` (a merge patch removes it).
async fn patch(client: &kube::Client, ns: &str, name: &str, ops: Value) {
    let request = http::Request::patch(format!("{}/{name}", path(ns)))
        .header("content-type", "application/json-patch+json")
        .body(serde_json::to_vec(&ops).unwrap())
        .unwrap();
    send(client, request).await;
}

async fn delete(client: &kube::Client, ns: &str, name: &str) {
    let request = http::Request::delete(format!("{}/{name}", path(ns)))
        .body(Vec::new())
        .unwrap();
    send(client, request).await;
}

/// Each object's JSON as the server lists it, by name.
async fn raw_objects(client: &kube::Client, ns: &str) -> BTreeMap<String, String> {
    #[derive(Deserialize)]
    struct List {
        items: Vec<Box<RawValue>>,
    }
    let request = http::Request::get(path(ns)).body(Vec::new()).unwrap();
    let list: List = serde_json::from_str(&send(client, request).await).unwrap();
    list.items
        .into_iter()
        .map(|raw| {
            // Only the name is read: some objects nest deeper than a `Value` may.
            #[derive(Deserialize)]
            struct Head {
                metadata: Name,
            }
            #[derive(Deserialize)]
            struct Name {
                name: String,
            }
            let head: Head = serde_json::from_str(raw.get()).unwrap();
            (head.metadata.name, raw.get().to_owned())
        })
        .collect()
}

/// What the server's JSON of an object decodes to.
#[derive(Debug, Clone)]
struct Decoded {
    /// The projection's value (the projection of the full type's), if it reads one.
    view: Option<SwatchView>,
    /// Whether the full type reads the object.
    full: bool,
}

/// What the server's JSON of each object decodes to, checked both ways against the
/// expectation: the same values, or the same error, or (for a value the projection
/// does not read) the full type's value without it.
fn decode_both_ways(
    objects: &BTreeMap<String, String>,
    expect: &BTreeMap<String, Expect>,
) -> BTreeMap<String, Decoded> {
    objects
        .iter()
        .map(|(name, json)| {
            let expected = expect[name];
            let full = serde_json::from_str::<Swatch>(json);
            let view = serde_json::from_str::<SwatchView>(json);
            let decoded = match (expected, full, view) {
                (Expect::Same, Ok(full), Ok(view)) => {
                    assert_eq!(projected(&full), view, "{name}");
                    Decoded { view: Some(view), full: true }
                }
                (Expect::BothRefuse, Err(full), Err(view)) => {
                    assert_eq!(full.to_string(), view.to_string(), "{name}: the same error");
                    Decoded { view: None, full: false }
                }
                (Expect::UnreadRefused(key), Err(refused), Ok(view)) => {
                    // Without the unread value, the full type reads what the projection read.
                    let (at, key) = key.split_once('.').unwrap_or(("spec", key));
                    let full: Swatch = serde_json::from_str(&without(json, at, key)).unwrap_or_else(|e| {
                        panic!("{name}: refused ({refused}), and without {at}.{key}: {e}")
                    });
                    assert_eq!(projected(&full), view, "{name}");
                    Decoded { view: Some(view), full: false }
                }
                (expected, full, view) => panic!(
                    "{name}: expected {expected:?}, the full type read {:?}, the projection {:?}\n{json}",
                    full.map(|f| projected(&f)),
                    view
                ),
            };
            (name.clone(), decoded)
        })
        .collect()
}

/// `json` without the key `key` of its object `at` (the rest as it is, unparsed: it may
/// nest deeper than serde_json parses).
fn without(json: &str, at: &str, key: &str) -> String {
    type Object = BTreeMap<String, Box<RawValue>>;
    let mut object: Object = serde_json::from_str(json).unwrap();
    let mut inner: Object = serde_json::from_str(object[at].get()).unwrap();
    assert!(inner.remove(key).is_some(), "no {at}.{key} in {json}");
    object.insert(
        at.to_owned(),
        RawValue::from_string(serde_json::to_string(&inner).unwrap()).unwrap(),
    );
    serde_json::to_string(&object).unwrap()
}

/// The errors an informer reported for the objects it skipped: the last one by name.
type Reported = Arc<Mutex<BTreeMap<String, String>>>;

/// A full and a projected informer of the swatches in `ns`, through `client`,
/// listing by a streaming list or by pages of 5, and what each reports.
struct Pair {
    full: SharedIndexInformer<Swatch>,
    view: SharedIndexInformer<SwatchView>,
    reported: (Reported, Reported),
    what: &'static str,
}

impl Pair {
    fn new(client: &kube::Client, ns: &str, streaming: bool) -> Pair {
        fn reporting(reported: &Reported) -> Config {
            let reported = reported.clone();
            Config::default().error_handler(move |error| {
                if let ReflectorError::Decode(error) = error {
                    let name = error.key.rsplit('/').next().unwrap().to_owned();
                    reported.lock().unwrap().insert(name, error.to_string());
                }
            })
        }
        let reported = (Reported::default(), Reported::default());
        let config = |reported| {
            reporting(reported)
                .streaming_list(streaming)
                .page_size(Some(5))
        };
        let full = SharedIndexInformer::with_config(
            ApiListerWatcher::new(Api::<Swatch>::namespaced(client.clone(), ns)),
            InformerConfig::default().reflector(config(&reported.0)),
        )
        .unwrap();
        let view = SharedIndexInformer::with_config(
            ApiListerWatcher::new(Api::<SwatchView>::namespaced(client.clone(), ns)),
            InformerConfig::default().reflector(config(&reported.1)),
        )
        .unwrap();
        Pair {
            full,
            view,
            reported,
            what: if streaming { "streaming" } else { "paged" },
        }
    }

    fn run(&self) -> (Running, Running) {
        (spawn_run(&self.full), spawn_run(&self.view))
    }

    /// Whether both caches hold what `decoded` says, and both informers reported the
    /// same error for each object they skip.
    fn holds(&self, decoded: &BTreeMap<String, Decoded>) -> Result<(), String> {
        let full: BTreeMap<String, SwatchView> = self
            .full
            .indexer()
            .list()
            .iter()
            .map(|o| (o.name_any(), projected(o)))
            .collect();
        let view: BTreeMap<String, SwatchView> = self
            .view
            .indexer()
            .list()
            .iter()
            .map(|o| (o.name_any(), SwatchView::clone(o)))
            .collect();
        let read = |full_only: bool| -> BTreeMap<String, SwatchView> {
            decoded
                .iter()
                .filter(|(_, d)| d.full || !full_only)
                .filter_map(|(name, d)| Some((name.clone(), d.view.clone()?)))
                .collect()
        };
        let what = self.what;
        if view != read(false) {
            return Err(format!(
                "{what}: the projection's cache differs on {:?}",
                diff(&view, &read(false))
            ));
        }
        if full != read(true) {
            return Err(format!(
                "{what}: the full type's cache differs on {:?}",
                diff(&full, &read(true))
            ));
        }
        let full_reported = self.reported.0.lock().unwrap();
        let view_reported = self.reported.1.lock().unwrap();
        for (name, d) in decoded {
            let reported = (full_reported.get(name), view_reported.get(name));
            match (d.full, d.view.is_some(), reported) {
                (true, true, _) => {}
                (false, false, (Some(full), Some(view))) if full == view => {}
                (false, true, (Some(_), _)) => {}
                _ => return Err(format!("{what}: {name} reported {reported:?}")),
            }
        }
        Ok(())
    }
}

fn diff(a: &BTreeMap<String, SwatchView>, b: &BTreeMap<String, SwatchView>) -> Vec<String> {
    let names: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .filter(|n| a.get(*n) != b.get(*n))
        .map(|n| n.to_string())
        .collect()
}

async fn agree_with_the_server(
    env: &TestEnv,
    ns: &str,
    pairs: &[&Pair],
    expect: &BTreeMap<String, Expect>,
) {
    let decoded = decode_both_ways(&raw_objects(&env.client().unwrap(), ns).await, expect);
    let mut last = Ok(());
    eventually("the caches hold what the server's JSON reads", WAIT, || {
        last = pairs.iter().try_for_each(|pair| pair.holds(&decoded));
        last.is_ok()
    })
    .await;
    last.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_json_decodes_to_the_same_values_or_the_same_error_both_ways() {
    let env = uncached_env().await;
    env.install_crd(&crd()).await.unwrap();
    let proxy = env.fault_proxy().await.unwrap();
    let ns = env.create_namespace("projection-raw").await.unwrap();
    let client = env.client().unwrap();
    let cases = cases();
    let mut expect: BTreeMap<String, Expect> = cases
        .iter()
        .map(|(name, _, e)| (name.to_string(), *e))
        .collect();
    for (name, body, _) in &cases {
        create(&client, &ns, name, body).await;
    }
    // The server kept the look-alike keys, sorted (the shadow after the key), and the
    // `null`s.
    let raw = raw_objects(&client, &ns).await;
    assert_eq!(raw.len(), cases.len());
    let spec_of = |name: &str| {
        let json = &raw[name];
        json[json.find(r#""spec":"#).unwrap()..].to_owned()
    };
    for (name, key) in [
        ("shadow-underscore", r#""palette_":"blue""#),
        ("shadow-dash", r#""palette-":"blue""#),
        ("shadow-size", r#""size_":9"#),
        ("shadow-tags", r#""tags_":["x"]"#),
        ("shadow-snake", r#""node_name":"n2""#),
    ] {
        let spec = spec_of(name);
        let (shadow, original) = (
            spec.find(key),
            spec.find(&key[..key.find('_').or(key.find('-')).unwrap()]),
        );
        assert!(shadow.is_some() && original < shadow, "{name}: {spec}");
    }
    assert!(spec_of("shadow-capital").contains(r#""Palette":"blue""#));
    assert!(spec_of("null-palette").contains(r#""palette":null"#));
    assert!(raw["spec-null"].contains(r#""spec":null"#));

    // A streaming list and a paged list, through a proxy that can cut them off.
    let pairs = [
        Pair::new(&proxy.client().unwrap(), &ns, true),
        Pair::new(&proxy.client().unwrap(), &ns, false),
    ];
    let running: Vec<_> = pairs.iter().map(Pair::run).collect();
    for pair in &pairs {
        wait_for_cache_sync(&[&pair.full, &pair.view]).await;
    }
    let both: Vec<&Pair> = pairs.iter().collect();
    agree_with_the_server(env, &ns, &both, &expect).await;
    assert!(
        pairs[0]
            .view
            .reflector_stats()
            .unwrap()
            .streaming_list_requests
            >= 1
    );

    // Watch events: new objects, look-alikes and nulls added to read ones, a refused
    // object made readable, a deletion.
    for (name, body, e) in cases
        .iter()
        .filter(|(n, ..)| n.starts_with("shadow-") || n.starts_with("null-"))
    {
        create(&client, &ns, &format!("{name}-w"), body).await;
        expect.insert(format!("{name}-w"), *e);
    }
    patch(
        &client,
        &ns,
        "plain",
        json!([{"op": "add", "path": "/spec/palette_", "value": "blue"}]),
    )
    .await;
    patch(
        &client,
        &ns,
        "shadow-dash",
        json!([{"op": "replace", "path": "/spec/palette", "value": null}]),
    )
    .await;
    patch(
        &client,
        &ns,
        "null-size",
        json!([{"op": "replace", "path": "/spec/size", "value": 4}]),
    )
    .await;
    patch(
        &client,
        &ns,
        "missing-coats",
        json!([{"op": "add", "path": "/spec/Coats", "value": 8}]),
    )
    .await;
    delete(&client, &ns, "unknown").await;
    expect.remove("unknown");
    expect.insert("shadow-dash".into(), Expect::BothRefuse);
    expect.insert("null-size".into(), Expect::Same);
    agree_with_the_server(env, &ns, &both, &expect).await;

    // Cut off while things change, etcd compacted: each informer relists after 410.
    proxy.disconnect().await;
    patch(
        &client,
        &ns,
        "shadow-dash",
        json!([{"op": "replace", "path": "/spec/palette", "value": "teal"}]),
    )
    .await;
    patch(
        &client,
        &ns,
        "null-tags",
        json!([{"op": "add", "path": "/spec/tags_", "value": ["z"]}]),
    )
    .await;
    patch(
        &client,
        &ns,
        "plain",
        json!([{"op": "replace", "path": "/spec/palette", "value": null}]),
    )
    .await;
    for (name, body, e) in cases
        .iter()
        .filter(|(n, ..)| n.starts_with("drift-") || n.starts_with("missing-"))
    {
        create(&client, &ns, &format!("{name}-late"), body).await;
        expect.insert(format!("{name}-late"), *e);
    }
    delete(&client, &ns, "shadow-snake").await;
    expect.remove("shadow-snake");
    expect.insert("shadow-dash".into(), Expect::Same);
    expect.insert("plain".into(), Expect::BothRefuse);
    env.compact_etcd().await.unwrap();
    proxy.reconnect().await.unwrap();
    eventually("the relists after 410", WAIT, || {
        pairs.iter().all(|pair| {
            pair.full.reflector_stats().is_some_and(|s| s.expired >= 1)
                && pair.view.reflector_stats().is_some_and(|s| s.expired >= 1)
        })
    })
    .await;
    agree_with_the_server(env, &ns, &both, &expect).await;
    for running in running {
        running.0.stop().await;
        running.1.stop().await;
    }

    // A restart: new informers list afresh.
    let restarted = [
        Pair::new(&client, &ns, true),
        Pair::new(&client, &ns, false),
    ];
    let running: Vec<_> = restarted.iter().map(Pair::run).collect();
    for pair in &restarted {
        wait_for_cache_sync(&[&pair.full, &pair.view]).await;
    }
    let both: Vec<&Pair> = restarted.iter().collect();
    agree_with_the_server(env, &ns, &both, &expect).await;
    let view = &restarted[0].view;
    assert_eq!(
        view.lister()
            .namespaced(&ns)
            .get("shadow-all")
            .unwrap()
            .spec
            .palette,
        "red"
    );
    assert!(view.lister().namespaced(&ns).get("null-palette").is_err());
    for running in running {
        running.0.stop().await;
        running.1.stop().await;
    }
}
