//! The derive's runtime: what a projection learns from the original's `Deserialize`
//! (keys, `null`, missing and repeated keys), decoding with the derive's real output
//! (`crate = crate`) against the full type, and slim metadata. The allocations of
//! decoding are counted in `informer/tests/projection.rs`, the compile errors in the
//! trybuild cases, the server's own JSON in `tests/tests/projection.rs`.

use std::fmt::Debug;

use k8s_openapi::api::core::v1::{Container, PodSpec, PodStatus};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResource;
use serde::de::{DeserializeOwned, DeserializeSeed};
use serde::{Deserialize, Serialize};

use super::__private::{FieldSpec, Layout, SlimMeta};
use super::Projection;

// --- Originals as serde's derive reads them (a CRD's Rust types). ---

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq)]
#[kube(
    group = "test.informer.dev",
    version = "v1",
    kind = "Paint",
    namespaced,
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
struct PaintSpec {
    palette: String,
    size: u32,
    tags: Vec<String>,
    node_name: Option<String>,
    #[serde(default)]
    coats: u32,
    /// `null` is a value here; a missing key is not.
    extra: serde_json::Value,
    #[serde(rename = "colour")]
    color: Option<String>,
}

#[derive(Projection, Clone, Debug, PartialEq)]
#[projection(of = Paint, crate = crate)]
struct PaintView {
    metadata: ObjectMeta,
    spec: PaintViewSpec,
}

#[derive(Projection, Clone, Debug, Default, PartialEq)]
#[projection(of = PaintSpec, crate = crate)]
struct PaintViewSpec {
    palette: String,
    size: u32,
    tags: Vec<String>,
    node_name: Option<String>,
    coats: u32,
    extra: serde_json::Value,
    #[projection(rename = "colour")]
    color: Option<String>,
}

/// The projected fields of a full `PaintSpec`.
fn projected(spec: &PaintSpec) -> PaintViewSpec {
    PaintViewSpec {
        palette: spec.palette.clone(),
        size: spec.size,
        tags: spec.tags.clone(),
        node_name: spec.node_name.clone(),
        coats: spec.coats,
        extra: spec.extra.clone(),
        color: spec.color.clone(),
    }
}

/// `json` decoded as the full type and as the projection: the same values, or the
/// same error.
fn agree<F: DeserializeOwned + Debug, P: DeserializeOwned + Debug + PartialEq>(
    json: &str,
    project: impl Fn(&F) -> P,
) -> Result<P, String> {
    let full = serde_json::from_str::<F>(json).map_err(|e| e.to_string());
    let view = serde_json::from_str::<P>(json).map_err(|e| e.to_string());
    match (&full, &view) {
        (Ok(full), Ok(view)) => assert_eq!(&project(full), view, "in {json}"),
        (Err(full), Err(view)) => assert_eq!(full, view, "in {json}"),
        _ => panic!("the full type and the projection differ on {json}: {full:?} against {view:?}"),
    }
    view
}

fn spec(json: &str) -> Result<PaintViewSpec, String> {
    agree::<PaintSpec, PaintViewSpec>(json, projected)
}

const SPEC: &str = r#""palette":"red","size":3,"tags":["a"],"extra":{"k":1}"#;

#[test]
fn a_field_reads_its_one_key_and_no_look_alike() {
    // The server keeps unknown keys of a CRD with x-kubernetes-preserve-unknown-fields
    // and sorts them: the shadow comes after the key.
    for shadow in [
        r#""palette_":"blue""#,
        r#""palette-":"blue""#,
        r#""Palette":"blue""#,
        r#""PALETTE":"blue""#,
        r#""size_":9"#,
        r#""tags_":["b"]"#,
        r#""node_name":"n2""#,
        r#""nodename":"n2""#,
        r#""color":"green""#,
    ] {
        let json = format!(r#"{{{SPEC},"nodeName":"n1",{shadow}}}"#);
        let view = spec(&json).unwrap();
        assert_eq!(
            (view.palette.as_str(), view.size, view.tags, view.node_name),
            ("red", 3, vec!["a".to_owned()], Some("n1".to_owned())),
            "{shadow}"
        );
        // Before the key, too.
        let json = format!(r#"{{{shadow},{SPEC},"nodeName":"n1"}}"#);
        assert_eq!(spec(&json).unwrap().palette, "red");
    }
    // k8s-openapi's keys, initialisms and all: `pod_ip` is `podIP` only.
    for json in [
        r#"{"podIP":"10.0.0.1","podIp":"x","pod_ip":"y","PodIP":"z","podip":"w"}"#,
        r#"{"podIp":"x","pod_ip":"y","podIP":"10.0.0.1"}"#,
    ] {
        assert_eq!(status(json).unwrap().pod_ip.as_deref(), Some("10.0.0.1"));
    }
    assert_eq!(status(r#"{"podIp":"x"}"#).unwrap().pod_ip, None);
}

#[derive(Projection, Clone, Debug, Default, PartialEq)]
#[projection(of = PodStatus, crate = crate)]
struct PodIp {
    pod_ip: Option<String>,
}

fn status(json: &str) -> Result<PodIp, String> {
    agree::<PodStatus, PodIp>(json, |s| PodIp {
        pod_ip: s.pod_ip.clone(),
    })
}

#[derive(Projection, Clone, Debug, Default, PartialEq)]
#[projection(of = Container, crate = crate)]
struct ContainerName {
    name: String,
    image: Option<String>,
}

fn container(json: &str) -> Result<ContainerName, String> {
    agree::<Container, ContainerName>(json, |c| ContainerName {
        name: c.name.clone(),
        image: c.image.clone(),
    })
}

#[derive(Projection, Clone, Debug, Default, PartialEq)]
#[projection(of = PodSpec, crate = crate)]
struct Containers {
    containers: Vec<ContainerName>,
}

fn containers(json: &str) -> Result<Containers, String> {
    agree::<PodSpec, Containers>(json, |s| Containers {
        containers: s
            .containers
            .iter()
            .map(|c| ContainerName {
                name: c.name.clone(),
                image: c.image.clone(),
            })
            .collect(),
    })
}

/// The spec of [`SPEC`] with `key` set to `value` (or removed, for `None`).
fn spec_with(key: &str, value: Option<serde_json::Value>) -> String {
    let mut spec: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&format!("{{{SPEC}}}")).unwrap();
    match value {
        Some(value) => spec.insert(key.to_owned(), value),
        None => spec.remove(key),
    };
    serde_json::Value::Object(spec).to_string()
}

#[test]
fn a_repeated_key_is_refused_where_the_original_refuses_it() {
    // serde's derive: `duplicate field`, also after a `null`.
    for repeated in [
        r#""palette":"blue""#,
        r#""palette":null"#,
        r#""nodeName":"n""#,
        r#""extra":null"#,
    ] {
        let json = format!(r#"{{{SPEC},"nodeName":null,{repeated}}}"#);
        let error = spec(&json).unwrap_err();
        assert!(error.starts_with("duplicate field"), "{error}");
    }
    // k8s-openapi: the last one wins.
    let view = container(r#"{"name":"a","image":"x","name":"b","image":null}"#).unwrap();
    assert_eq!((view.name.as_str(), view.image), ("b", None));
}

#[test]
fn null_is_what_the_original_makes_of_it() {
    // serde's derive: a value of the field's type, refused where that type refuses
    // `null` (even with `#[serde(default)]`); `None` for an `Option`, `Value::Null`
    // for a `Value`.
    for (key, refused) in [
        ("palette", true),
        ("size", true),
        ("tags", true),
        ("coats", true),
        ("nodeName", false),
        ("extra", false),
        ("colour", false),
    ] {
        let decoded = spec(&spec_with(key, Some(serde_json::Value::Null)));
        assert_eq!(decoded.is_err(), refused, "{key}: {decoded:?}");
        if let Err(error) = decoded {
            assert!(error.starts_with("invalid type: null"), "{error}");
        }
    }
    // k8s-openapi reads every field as an `Option`: a required one's `null` is its
    // default.
    assert_eq!(
        container(r#"{"name":null}"#).unwrap(),
        ContainerName::default()
    );
    assert_eq!(
        containers(r#"{"containers":null}"#).unwrap(),
        Containers::default()
    );
}

#[test]
fn a_missing_key_is_what_the_original_makes_of_it() {
    // serde's derive: `missing field`, but for an `Option` or a `#[serde(default)]`.
    for (key, refused) in [
        ("palette", true),
        ("size", true),
        ("tags", true),
        ("extra", true),
        ("coats", false),
        ("nodeName", false),
    ] {
        let decoded = spec(&spec_with(key, None));
        assert_eq!(decoded.is_err(), refused, "{key}: {decoded:?}");
        if let Err(error) = decoded {
            assert!(
                error.starts_with(&format!("missing field `{key}`")),
                "{error}"
            );
        }
    }
    // k8s-openapi: the default.
    assert_eq!(container("{}").unwrap(), ContainerName::default());
    assert_eq!(containers("{}").unwrap(), Containers::default());
}

/// The slim metadata of a full object's.
fn slim(meta: &ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        generation: meta.generation,
        labels: meta.labels.clone(),
        owner_references: meta.owner_references.clone(),
        deletion_timestamp: meta.deletion_timestamp.clone(),
        finalizers: meta.finalizers.clone(),
        ..ObjectMeta::default()
    }
}

fn paint(json: &str) -> Result<(ObjectMeta, PaintViewSpec), String> {
    agree::<Paint, PaintView>(json, |paint| PaintView {
        metadata: slim(&paint.metadata),
        spec: projected(&paint.spec),
    })
    .map(|view| (view.metadata, view.spec))
}

#[test]
fn a_resource_refuses_what_its_original_refuses_in_the_originals_words() {
    let spec = format!("{{{SPEC}}}");
    let (meta, view) = paint(&format!(
        r#"{{"metadata":{{"name":"a","annotations":{{"x":"y"}}}},"spec":{spec}}}"#
    ))
    .unwrap();
    assert_eq!((meta.name.as_deref(), view.size), (Some("a"), 3));
    // kube's `CustomResource` derive (serde's): `metadata` and `spec` are required,
    // and refuse `null`, with the words of the types that refuse it.
    for (json, error) in [
        (
            r#"{"metadata":{"name":"a"},"spec":null}"#.to_owned(),
            "invalid type: null, expected struct PaintSpec at line 1 column 36",
        ),
        (
            format!(r#"{{"metadata":null,"spec":{spec}}}"#),
            "invalid type: null, expected ObjectMeta",
        ),
        (format!(r#"{{"spec":{spec}}}"#), "missing field `metadata`"),
        (
            r#"{"metadata":{"name":"a"}}"#.to_owned(),
            "missing field `spec`",
        ),
    ] {
        let refused = paint(&json).unwrap_err();
        assert!(refused.starts_with(error), "{refused} for {json}");
    }
}

// --- Keys found among the original's, or a problem every decode reports. ---

/// The keys a projection of `O` with `fields` reads, or the problem it reports.
fn keys<O: DeserializeOwned, const N: usize>(
    fields: [(&'static str, Option<&'static str>); N],
) -> Result<[&'static str; N], String> {
    let specs = fields.map(|(rust, rename)| FieldSpec {
        rust,
        camel: Box::leak(camel(rust).into_boxed_str()),
        rename,
        optional: true,
    });
    let layout = Layout::<N>::learn::<O>(&specs, "View", "Original");
    if let Some(problem) = layout.problem() {
        return Err(problem.to_string());
    }
    Ok(std::array::from_fn(|i| layout.key(i)))
}

/// serde's camelCase (the derive's, tested there).
fn camel(rust: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in rust.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.push(c.to_ascii_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

#[test]
fn keys_are_the_originals_own() {
    // k8s-openapi writes initialisms in capitals, and `-` in a few keys.
    assert_eq!(
        keys::<PodStatus, 4>([
            ("pod_ip", None),
            ("host_ips", None),
            ("phase", None),
            ("qos_class", None)
        ]),
        Ok(["podIP", "hostIPs", "phase", "qosClass"])
    );
    assert_eq!(
        keys::<JSONSchemaProps, 2>([
            ("x_kubernetes_preserve_unknown_fields", None),
            ("type_", None)
        ]),
        Ok(["x-kubernetes-preserve-unknown-fields", "type"])
    );
    // `$ref` is no spelling of `ref_path`: a rename names it.
    let problem = keys::<JSONSchemaProps, 1>([("ref_path", None)]).unwrap_err();
    assert!(
        problem.starts_with("the projection View reads `ref_path`, and Original reads no JSON key of that name (its keys: `$ref`, `$schema`, "),
        "{problem}"
    );
    assert!(
        problem.ends_with(": name the key with #[projection(rename = \"...\")]"),
        "{problem}"
    );
    assert_eq!(
        keys::<JSONSchemaProps, 1>([("ref_path", Some("$ref"))]),
        Ok(["$ref"])
    );
    // A rename must be a key of the original's.
    assert_eq!(
        keys::<PaintSpec, 1>([("color", Some("color"))]),
        Err("the projection View reads `color` from the JSON key `color` (#[projection(rename)]), \
             which Original does not read (its keys: `palette`, `size`, `tags`, `nodeName`, `coats`, `extra`, `colour`)".to_owned())
    );
    assert_eq!(
        keys::<PaintSpec, 1>([("color", Some("colour"))]),
        Ok(["colour"])
    );
    assert_eq!(keys::<Snake, 1>([("node_name", None)]), Ok(["node_name"]));
}

#[test]
fn a_field_the_original_renamed_is_every_decodes_error_until_renamed() {
    #[derive(Projection, Debug, PartialEq)]
    #[projection(of = PaintSpec, crate = crate)]
    struct Unrenamed {
        color: Option<String>,
    }
    let error = serde_json::from_str::<Unrenamed>(r#"{"colour":"red"}"#).unwrap_err();
    assert!(
        error.to_string().starts_with(
            "the projection Unrenamed reads `color`, and PaintSpec reads no JSON key of that name"
        ),
        "{error}"
    );
}

/// An original that names its keys as its Rust fields and refuses unknown ones.
#[derive(Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
struct Snake {
    node_name: Option<String>,
    size: u32,
}

#[derive(Projection, Debug, Clone, PartialEq)]
#[projection(of = Snake, crate = crate)]
struct SnakeView {
    node_name: Option<String>,
}

fn snake(json: &str) -> Result<SnakeView, String> {
    agree::<Snake, SnakeView>(json, |s| SnakeView {
        node_name: s.node_name.clone(),
    })
}

#[test]
fn unknown_keys_are_refused_where_the_original_refuses_them() {
    assert_eq!(
        snake(r#"{"node_name":"a","size":1}"#)
            .unwrap()
            .node_name
            .as_deref(),
        Some("a")
    );
    let error = snake(r#"{"node_name":"a","size":1,"nodeName":"b"}"#).unwrap_err();
    assert!(
        error.starts_with("unknown field `nodeName`, expected `node_name` or `size`"),
        "{error}"
    );
}

#[test]
fn what_a_projection_does_not_read_it_does_not_check() {
    // A missing or refused value in a field the projection does not read.
    assert!(serde_json::from_str::<Snake>(r#"{"node_name":"a"}"#).is_err());
    assert!(serde_json::from_str::<SnakeView>(r#"{"node_name":"a"}"#).is_ok());
    let unread = r#"{"node_name":"a","size":"big"}"#;
    assert!(serde_json::from_str::<Snake>(unread).is_err());
    assert!(serde_json::from_str::<SnakeView>(unread).is_ok());
    // A serde alias: the full type reads it, the projection reads the one key.
    #[derive(Deserialize, Debug)]
    struct Aliased {
        #[serde(alias = "colour")]
        color: Option<String>,
    }
    #[derive(Projection, Debug)]
    #[projection(of = Aliased, crate = crate)]
    struct AliasedView {
        color: Option<String>,
    }
    let json = r#"{"colour":"red"}"#;
    assert_eq!(
        serde_json::from_str::<Aliased>(json)
            .unwrap()
            .color
            .as_deref(),
        Some("red")
    );
    assert_eq!(
        serde_json::from_str::<AliasedView>(json).unwrap().color,
        None
    );
    // An array for a struct: serde's derive reads one, a projection reads objects.
    let array = r#"["red",3,[],null,0,null,null]"#;
    assert!(serde_json::from_str::<PaintSpec>(array).is_ok());
    assert!(serde_json::from_str::<PaintViewSpec>(array).is_err());
}

#[test]
fn what_is_learnt_of_k8s_openapi_and_of_serdes_derive() {
    let of = |fields: [(&'static str, bool); 2]| {
        fields.map(|(rust, optional)| FieldSpec {
            rust,
            camel: Box::leak(camel(rust).into_boxed_str()),
            rename: None,
            optional,
        })
    };
    let pod = Layout::<2>::learn::<PodSpec>(
        &of([("containers", false), ("node_name", true)]),
        "V",
        "PodSpec",
    );
    assert_eq!((pod.null_is_none(0), pod.null_is_none(1)), (true, true));
    assert_eq!(
        (pod.missing_refused(0), pod.missing_refused(1)),
        (false, false)
    );
    assert!(!pod.repeats_refused());
    let paint = Layout::<2>::learn::<PaintSpec>(
        &of([("palette", false), ("node_name", true)]),
        "V",
        "PaintSpec",
    );
    assert_eq!(
        (paint.null_is_none(0), paint.null_is_none(1)),
        (false, true)
    );
    assert_eq!(
        (paint.missing_refused(0), paint.missing_refused(1)),
        (true, false)
    );
    assert!(paint.repeats_refused());
}

// --- Slim metadata. ---

fn slim_of<const ANNOTATIONS: bool>(json: &str) -> Option<ObjectMeta> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    SlimMeta::<ANNOTATIONS>::new(true)
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
    let meta = slim_of::<false>(META).unwrap();
    assert_eq!(meta, slim(&full));
    let with_annotations = slim_of::<true>(META).unwrap();
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
fn slim_metadata_reads_null_as_told_and_fails_like_the_full_type() {
    assert_eq!(slim_of::<false>("null"), None);
    let mut deserializer = serde_json::Deserializer::from_str("null");
    let refused = SlimMeta::<false>::new(false)
        .deserialize(&mut deserializer)
        .unwrap_err();
    let full = serde_json::from_str::<ObjectMeta>("null").unwrap_err();
    assert_eq!(refused.to_string(), full.to_string());
    let wrong = r#"{"name":7}"#;
    let mut deserializer = serde_json::Deserializer::from_str(wrong);
    let slim_error = SlimMeta::<false>::new(true)
        .deserialize(&mut deserializer)
        .unwrap_err()
        .to_string();
    let full_error = serde_json::from_str::<ObjectMeta>(wrong)
        .unwrap_err()
        .to_string();
    assert_eq!(slim_error, full_error);
    // A key it skips may hold anything: it is never decoded.
    let odd = r#"{"name":"a","annotations":{"x":[1,{"y":null}]},"creationTimestamp":false}"#;
    assert_eq!(slim_of::<false>(odd).unwrap().name.as_deref(), Some("a"));
}

#[test]
fn serde_attributes_a_projection_does_not_follow() {
    // `default = "function"`: the projection's default is `Default::default()`.
    fn seven() -> u32 {
        7
    }
    // `deserialize_with`: the projection reads the value with its own type.
    fn upper<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
        String::deserialize(deserializer).map(|s| s.to_uppercase())
    }
    #[derive(Deserialize, Debug)]
    struct Attributed {
        #[serde(default = "seven")]
        coats: u32,
        #[serde(deserialize_with = "upper")]
        palette: String,
    }
    #[derive(Projection, Debug)]
    #[projection(of = Attributed, crate = crate)]
    struct AttributedView {
        coats: u32,
        palette: String,
    }
    let json = r#"{"palette":"red"}"#;
    let full = serde_json::from_str::<Attributed>(json).unwrap();
    let view = serde_json::from_str::<AttributedView>(json).unwrap();
    assert_eq!((full.coats, full.palette.as_str()), (7, "RED"));
    assert_eq!((view.coats, view.palette.as_str()), (0, "red"));
    // `flatten`: the original names no keys; the projection reads the camelCase names.
    #[derive(Deserialize, Debug)]
    #[serde(rename_all = "camelCase")]
    struct Flat {
        node_name: Option<String>,
        #[serde(flatten)]
        rest: std::collections::BTreeMap<String, serde_json::Value>,
    }
    #[derive(Projection, Debug)]
    #[projection(of = Flat, crate = crate)]
    struct FlatView {
        node_name: Option<String>,
    }
    let json = r#"{"nodeName":"a","node_name":"b","other":1}"#;
    let full = serde_json::from_str::<Flat>(json).unwrap();
    assert_eq!(full.node_name.as_deref(), Some("a"));
    assert_eq!(full.rest.len(), 2);
    let view = serde_json::from_str::<FlatView>(json).unwrap();
    assert_eq!(view.node_name.as_deref(), Some("a"));
}

#[test]
fn a_field_that_is_two_keys_of_the_original_is_every_decodes_error() {
    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct Twins {
        #[serde(rename = "nodeNAME")]
        shouting: Option<String>,
        #[serde(rename = "NodeName")]
        node_name: Option<String>,
    }
    assert_eq!(
        keys::<Twins, 1>([("node_name", None)]),
        Err(
            "the projection View reads `node_name`, and Original has two JSON keys of that \
             name, `nodeNAME` and `NodeName`: name the key with #[projection(rename = \"...\")]"
                .to_owned()
        )
    );
    assert_eq!(
        keys::<Twins, 1>([("node_name", Some("NodeName"))]),
        Ok(["NodeName"])
    );
}

#[test]
fn where_no_made_up_value_gets_past_a_required_field_the_projected_type_decides() {
    /// Takes nothing but `"x"`: no made-up value (`null`, `""`, a timestamp).
    #[derive(Debug)]
    struct OnlyX;
    impl<'de> Deserialize<'de> for OnlyX {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            match String::deserialize(deserializer)?.as_str() {
                "x" => Ok(OnlyX),
                other => Err(serde::de::Error::custom(format!("not x: {other}"))),
            }
        }
    }
    #[derive(Deserialize, Debug)]
    struct Picky {
        #[allow(dead_code)]
        first: OnlyX,
        second: u32,
        third: Option<String>,
    }
    #[derive(Projection, Debug, PartialEq)]
    #[projection(of = Picky, crate = crate)]
    struct PickyView {
        second: u32,
        third: Option<String>,
    }
    let picky = |json: &str| {
        agree::<Picky, PickyView>(json, |p| PickyView {
            second: p.second,
            third: p.third.clone(),
        })
    };
    // What the original's `Deserialize` could not be asked, the projected type decides:
    // a field that is not an `Option` is `missing field`, an `Option` may be missing.
    assert_eq!(
        picky(r#"{"first":"x","third":"t"}"#).unwrap_err(),
        "missing field `second` at line 1 column 25"
    );
    assert_eq!(
        picky(r#"{"first":"x","second":2}"#).unwrap(),
        PickyView {
            second: 2,
            third: None
        }
    );
}
