//! Projections decoded from a Pod as the API server writes it (managedFields and
//! all): the projected values equal the full type's, unknown and missing fields, type
//! mismatches, the allocations that skipping never makes, and the size estimate
//! against the allocator's own count. Its own test binary: it installs a counting
//! global allocator (allocation-counter, counting per thread).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use informer::informable::Informable;
use informer::lister::Lister;
use informer::projection::{Projection, Shared, shared_size};
use informer::reflector::source::decode_measured;
use informer::store::Writer;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;
use kube::core::PartialObjectMeta;

/// The fields a controller of Pods reads: name, namespace, labels, owners (slim
/// metadata), node, phase and container images.
#[derive(Projection, Informable, Clone, Debug, PartialEq)]
#[projection(of = Pod)]
#[informable(
    index(name = "by_node", path = "spec.nodeName"),
    index(
        name = "by_owner",
        owner(kind = "ReplicaSet", group = "apps", controller, name)
    )
)]
struct PodView {
    metadata: ObjectMeta,
    spec: Option<PodViewSpec>,
    status: Option<PodViewStatus>,
}

#[derive(Projection, Clone, Debug, Default, PartialEq)]
#[projection(of = PodSpec)]
struct PodViewSpec {
    node_name: Option<String>,
    containers: Vec<ContainerImage>,
}

#[derive(Projection, Clone, Debug, Default, PartialEq)]
#[projection(of = Container)]
struct ContainerImage {
    name: String,
    image: Option<String>,
}

#[derive(Projection, Clone, Debug, Default, PartialEq)]
#[projection(of = PodStatus)]
struct PodViewStatus {
    phase: Option<String>,
    pod_ip: Option<String>,
}

/// The same, with the full metadata (all but managedFields).
#[derive(Projection, Clone, Debug, PartialEq)]
#[projection(of = Pod, metadata = "full")]
struct PodWithFullMetadata {
    metadata: ObjectMeta,
}

/// The same fields, those that repeat across Pods shared: the node, the container
/// list (one per template) and the phase.
#[derive(Projection, Informable, Clone, Debug)]
#[projection(of = Pod)]
#[informable(
    index(name = "on_node", path = "spec.nodeName"),
    index(name = "by_image", path = "spec.containers.image")
)]
struct SharedPodView {
    metadata: ObjectMeta,
    spec: Option<SharedSpec>,
    status: Option<SharedStatus>,
}

#[derive(Projection, Clone, Debug, Default)]
#[projection(of = PodSpec)]
struct SharedSpec {
    node_name: Option<Shared<String>>,
    containers: Shared<Vec<SharedContainer>>,
}

#[derive(Projection, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[projection(of = Container)]
struct SharedContainer {
    name: String,
    image: Option<String>,
}

#[derive(Projection, Clone, Debug, Default)]
#[projection(of = PodStatus)]
struct SharedStatus {
    phase: Option<Shared<String>>,
}

/// Held by the tests that decode shared values: [`shared_size`] counts the process's.
static SHARING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A Pod of a Deployment as a 1.20 server holds it: two containers with env, probes,
/// mounts, four volumes, a status, and managedFields for three managers.
fn pod_json(i: usize) -> String {
    let fields = serde_json::json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
        "f:ownerReferences": {".": {}, "k:{\"uid\":\"rs-uid\"}": {".": {}, "f:apiVersion": {}, "f:kind": {}}}},
        "f:spec": {"f:containers": {"k:{\"name\":\"server\"}": {".": {}, "f:image": {}, "f:env": {".": {}}}},
        "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:volumes": {".": {}}}});
    let managed: Vec<serde_json::Value> = ["kube-controller-manager", "kube-scheduler", "kubelet"]
        .iter()
        .map(|manager| {
            serde_json::json!({"manager": manager, "operation": "Update", "apiVersion": "v1",
            "time": "2026-11-01T10:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields})
        })
        .collect();
    let env: Vec<serde_json::Value> = (0..15)
        .map(|e| serde_json::json!({"name": format!("SETTING_{e}"), "value": format!("value-{e}-{i}-abcdefghijklmnopqrstuvwx")}))
        .collect();
    let container = |name: &str, port: u16| {
        serde_json::json!({
            "name": name, "image": format!("registry.example.com/team/{name}:1.{}", i % 7),
            "command": ["/bin/server"], "args": ["--port", port.to_string(), "--log-level=info"],
            "env": env, "ports": [{"name": "http", "containerPort": port, "protocol": "TCP"}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}},
            "volumeMounts": [{"name": "config", "mountPath": "/etc/app"}, {"name": "cache", "mountPath": "/var/cache"}],
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": port}, "periodSeconds": 10},
            "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
            "securityContext": {"runAsNonRoot": true, "allowPrivilegeEscalation": false},
        })
    };
    serde_json::json!({
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {
            "name": format!("web-{i}"), "generateName": "web-5d4f8c7b9-", "namespace": "default",
            "uid": format!("uid-{i}"), "resourceVersion": format!("{}", 1000 + i),
            "creationTimestamp": "2026-11-01T10:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "5d4f8c7b9"},
            "annotations": {"prometheus.io/scrape": "true", "kubectl.kubernetes.io/restartedAt": "2026-11-01T10:00:00Z"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d4f8c7b9",
                "uid": "rs-uid", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": managed,
        },
        "spec": {
            "containers": [container("server", 8080), container("sidecar", 9090)],
            "volumes": [{"name": "config", "configMap": {"name": "web-config"}}, {"name": "cache", "emptyDir": {}},
                {"name": "token", "projected": {"sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}}],
            "nodeName": format!("node-{}", i % 50), "serviceAccountName": "web", "restartPolicy": "Always",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {
            "phase": "Running", "podIP": format!("10.1.0.{}", i % 250), "hostIP": "10.0.0.1",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-01T10:00:00Z"}],
            "containerStatuses": [{"name": "server", "ready": true, "restartCount": 0, "image": "i", "imageID": "sha",
                "state": {"running": {"startedAt": "2026-11-01T10:00:00Z"}}}],
        },
    })
    .to_string()
}

#[test]
fn projected_values_equal_the_full_types() {
    for i in 0..20 {
        let json = pod_json(i);
        let full: Pod = serde_json::from_str(&json).unwrap();
        let (view, _) = decode_measured::<PodView>(&json).unwrap();
        let meta = &full.metadata;
        assert_eq!(
            view.metadata,
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
        );
        let spec = full.spec.as_ref().unwrap();
        let view_spec = view.spec.as_ref().unwrap();
        assert_eq!(view_spec.node_name, spec.node_name);
        let images = |containers: &[Container]| -> Vec<(String, Option<String>)> {
            containers
                .iter()
                .map(|c| (c.name.clone(), c.image.clone()))
                .collect()
        };
        assert_eq!(
            view_spec
                .containers
                .iter()
                .map(|c| (c.name.clone(), c.image.clone()))
                .collect::<Vec<_>>(),
            images(&spec.containers)
        );
        let status = full.status.as_ref().unwrap();
        let view_status = view.status.as_ref().unwrap();
        assert_eq!(view_status.phase, status.phase);
        assert_eq!(view_status.pod_ip, status.pod_ip);
        // Full metadata: everything but managedFields, as the full type through the
        // reflector.
        let (whole, _) = decode_measured::<PodWithFullMetadata>(&json).unwrap();
        let (full_decoded, _) = decode_measured::<Pod>(&json).unwrap();
        assert_eq!(whole.metadata, full_decoded.metadata);
        assert_eq!(whole.metadata.managed_fields, None);
        assert!(whole.metadata.annotations.is_some());
    }
}

#[test]
fn the_projection_is_a_resource_of_the_originals_kind() {
    assert_eq!(PodView::kind(&()), "Pod");
    assert_eq!(PodView::api_version(&()), "v1");
    assert_eq!(PodView::plural(&()), "pods");
    assert_eq!(
        PodView::url_path(&(), Some("default")),
        Pod::url_path(&(), Some("default"))
    );
    let json = pod_json(3);
    let (view, _) = decode_measured::<PodView>(&json).unwrap();
    let full: Pod = serde_json::from_str(&json).unwrap();
    assert_eq!(view.owner_ref(&()), full.owner_ref(&()));
}

#[test]
fn unknown_fields_are_skipped_and_missing_ones_are_none_or_default() {
    let view: PodView = serde_json::from_str(
        r#"{"metadata":{"name":"a","futureField":{"x":[1,2]}},"futureTop":true,
            "spec":{"nodeName":null,"somethingNew":"x"}}"#,
    )
    .unwrap();
    assert_eq!(view.metadata.name.as_deref(), Some("a"));
    let spec = view.spec.unwrap();
    assert_eq!(spec.node_name, None);
    // `containers` is required in PodSpec: missing, it is empty, as k8s-openapi has it.
    assert_eq!(spec.containers, Vec::new());
    let full: Pod = serde_json::from_str(r#"{"spec":{}}"#).unwrap();
    assert_eq!(full.spec.unwrap().containers, Vec::new());
    assert_eq!(view.status, None);
    // No metadata at all: the default, as k8s-openapi has it.
    let bare: PodView = serde_json::from_str("{}").unwrap();
    assert_eq!(bare.metadata, ObjectMeta::default());
    // A required field's `null` is its default too.
    let nulls: ContainerImage = serde_json::from_str(r#"{"name":null}"#).unwrap();
    assert_eq!(nulls.name, "");
}

#[test]
fn a_value_of_another_type_is_the_same_decode_error_as_the_full_types() {
    for (find, replace) in [
        (r#""nodeName":"node-3""#, r#""nodeName":7"#),
        (r#""phase":"Running""#, r#""phase":["Running"]"#),
        (r#""name":"web-3""#, r#""name":{"a":1}"#),
        (
            r#""image":"registry.example.com/team/server:1.3""#,
            r#""image":false"#,
        ),
    ] {
        let json = pod_json(3).replacen(find, replace, 1);
        assert_ne!(json, pod_json(3), "{find} not found");
        let projected = serde_json::from_str::<PodView>(&json).unwrap_err();
        let full = serde_json::from_str::<Pod>(&json).unwrap_err();
        assert_eq!(projected.to_string(), full.to_string(), "for {replace}");
    }
    // A mismatch in a field the projection does not read is no error at all.
    let json = pod_json(3).replacen(r#""restartPolicy":"Always""#, r#""restartPolicy":7"#, 1);
    assert!(serde_json::from_str::<Pod>(&json).is_err());
    assert!(serde_json::from_str::<PodView>(&json).is_ok());
}

/// What `decode` allocates on this thread, the decoded value kept until counted.
fn allocations<T>(decode: impl FnOnce() -> T) -> allocation_counter::AllocationInfo {
    let mut kept = None;
    let info = allocation_counter::measure(|| kept = Some(decode()));
    drop(kept);
    info
}

/// `pod_json(i)` with `managers` entries of managedFields and `env` variables in each
/// container: more of what a projection skips.
fn bigger_pod_json(i: usize, copies: usize) -> String {
    let mut pod: serde_json::Value = serde_json::from_str(&pod_json(i)).unwrap();
    let managed = pod["metadata"]["managedFields"].as_array().unwrap().clone();
    let all: Vec<serde_json::Value> = (0..copies).flat_map(|_| managed.clone()).collect();
    pod["metadata"]["managedFields"] = serde_json::Value::Array(all);
    for container in pod["spec"]["containers"].as_array_mut().unwrap() {
        let env = container["env"].as_array().unwrap().clone();
        container["env"] = (0..copies).flat_map(|_| env.clone()).collect();
    }
    pod.to_string()
}

#[test]
fn skipped_fields_are_never_allocated() {
    let json = pod_json(3);
    // The same object with only what the projection reads.
    let (view, _) = decode_measured::<PodView>(&json).unwrap();
    let spec = view.spec.as_ref().unwrap();
    let trimmed = serde_json::json!({
        "metadata": {"name": view.metadata.name, "namespace": view.metadata.namespace,
            "uid": view.metadata.uid, "resourceVersion": view.metadata.resource_version,
            "labels": view.metadata.labels, "ownerReferences": view.metadata.owner_references},
        "spec": {"nodeName": spec.node_name, "containers": spec.containers.iter()
            .map(|c| serde_json::json!({"name": c.name, "image": c.image})).collect::<Vec<_>>()},
        "status": {"phase": view.status.as_ref().unwrap().phase, "podIP": view.status.as_ref().unwrap().pod_ip},
    })
    .to_string();
    let ten_times = bigger_pod_json(3, 10);
    assert!(json.len() > 5 * trimmed.len() && ten_times.len() > 5 * json.len());
    for decode in [
        |json: &str| decode_measured::<PodView>(json).unwrap().0,
        |json: &str| serde_json::from_str::<PodView>(json).unwrap(),
    ] {
        let only_projected = allocations(|| decode(&trimmed));
        let whole = allocations(|| decode(&json));
        let bigger = allocations(|| decode(&ten_times));
        // What stays allocated is the projected values, whatever was skipped.
        assert_eq!(whole.count_current, only_projected.count_current);
        assert_eq!(whole.bytes_current, only_projected.bytes_current);
        assert_eq!(bigger.bytes_current, only_projected.bytes_current);
        // Skipping allocates nothing per field: ten times the skipped fields make not
        // one allocation more. The only transient one is serde_json's stack of the
        // nesting depth while it skips a nested value (a few bytes, freed at once).
        assert_eq!(bigger.count_total, whole.count_total);
        assert_eq!(bigger.bytes_total, whole.bytes_total);
        assert!(
            whole.count_total - only_projected.count_total <= 2,
            "{whole:?} against {only_projected:?}"
        );
        assert!(whole.bytes_total - only_projected.bytes_total <= 32);
    }
}

#[test]
fn matching_keys_allocates_nothing() {
    // Flat unknown keys (a nested one would make serde_json's nesting stack).
    let info = allocations(|| {
        serde_json::from_str::<ContainerImage>(
            r#"{"imagePullPolicy":"Always","tty":false,"workingDir":"/","stdin":true,"terminationMessagePath":"/dev/x"}"#,
        )
        .unwrap()
    });
    assert_eq!(info.count_total, 0, "{info:?}");
}

#[test]
fn the_size_estimate_is_what_the_allocator_was_asked_for_plus_its_rounding() {
    for (what, json) in [
        ("projection", pod_json(5)),
        ("bigger", bigger_pod_json(5, 3)),
    ] {
        let mut estimates = (0, 0);
        let info = allocations(|| {
            let (view, view_bytes) = decode_measured::<PodView>(&json).unwrap();
            let (pod, pod_bytes) = decode_measured::<Pod>(&json).unwrap();
            estimates = (view_bytes, pod_bytes);
            (Arc::new(view), Arc::new(pod))
        });
        // The allocator's figure: bytes asked for, plus glibc's header and rounding
        // (8 to 23 bytes an allocation, 16 on average).
        let held = info.bytes_current as f64 + 16.0 * info.count_current as f64;
        let estimated = (estimates.0 + estimates.1) as f64;
        let ratio = estimated / held;
        println!(
            "{what}: estimated {estimated} bytes, allocator {held} ({} allocations): {ratio:.3}",
            info.count_current
        );
        assert!((0.9..1.1).contains(&ratio), "{what}: {ratio}");
        assert!(estimates.0 * 10 < estimates.1, "{estimates:?}");
    }
}

#[test]
fn the_estimate_of_a_metadata_only_object_counts_no_struct_as_a_map() {
    // What a metadata-only list sends: kube's `PartialObjectMeta` decodes it as a map
    // (a flattened field), which is no `BTreeMap` in memory.
    let pod: serde_json::Value = serde_json::from_str(&pod_json(5)).unwrap();
    let json = serde_json::json!({
        "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
        "metadata": pod["metadata"],
    })
    .to_string();
    let mut estimate = 0;
    let info = allocations(|| {
        let (meta, bytes) = decode_measured::<PartialObjectMeta<Pod>>(&json).unwrap();
        estimate = bytes;
        Arc::new(meta)
    });
    let held = info.bytes_current as f64 + 16.0 * info.count_current as f64;
    let ratio = estimate as f64 / held;
    println!("metadata-only: estimated {estimate} bytes, allocator {held}: {ratio:.3}");
    assert!((0.9..1.1).contains(&ratio), "{ratio}");
}

#[test]
fn derived_indexes_work_on_a_projection() {
    let mut cache = Writer::with_indexers(PodView::key_fn(), PodView::indexers()).unwrap();
    for i in 0..10 {
        let (view, _) = decode_measured::<PodView>(&pod_json(i)).unwrap();
        cache.upsert(view);
    }
    let lister = Lister::new(cache.indexer());
    assert_eq!(lister.by_node("node-3").len(), 1);
    assert_eq!(lister.by_owner("web-5d4f8c7b9").len(), 10);
    let labels: BTreeMap<String, String> = lister
        .namespaced("default")
        .get("web-1")
        .unwrap()
        .metadata
        .labels
        .clone()
        .unwrap();
    assert_eq!(labels["app"], "web");
    // The owner reference is the Pod's.
    let on_node = lister.by_node("node-3");
    let owner: &OwnerReference = &on_node[0].metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(owner.kind, "ReplicaSet");
}

#[test]
fn shared_fields_hold_the_plain_values_each_stored_once() {
    let _one = SHARING.lock().unwrap_or_else(|e| e.into_inner());
    let before = shared_size();
    let pods: Vec<(PodView, SharedPodView)> = (0..350)
        .map(|i| {
            let json = pod_json(i);
            (
                decode_measured::<PodView>(&json).unwrap().0,
                decode_measured::<SharedPodView>(&json).unwrap().0,
            )
        })
        .collect();
    let mut lists: HashSet<*const Vec<SharedContainer>> = HashSet::new();
    let mut nodes: HashSet<*const String> = HashSet::new();
    for (plain, shared) in &pods {
        let (spec, shared_spec) = (plain.spec.as_ref().unwrap(), shared.spec.as_ref().unwrap());
        assert_eq!(
            spec.node_name.as_deref(),
            shared_spec.node_name.as_deref().map(String::as_str)
        );
        let containers: Vec<(String, Option<String>)> = shared_spec
            .containers
            .iter()
            .map(|c| (c.name.clone(), c.image.clone()))
            .collect();
        let expected: Vec<(String, Option<String>)> = spec
            .containers
            .iter()
            .map(|c| (c.name.clone(), c.image.clone()))
            .collect();
        assert_eq!(containers, expected);
        assert_eq!(
            shared.status.as_ref().unwrap().phase.as_ref().unwrap(),
            "Running"
        );
        assert_eq!(plain.metadata, shared.metadata);
        lists.insert(&*shared_spec.containers);
        nodes.insert(&**shared_spec.node_name.as_ref().unwrap());
    }
    // One list per image version (7), one node name per node (50).
    assert_eq!(lists.len(), 7);
    assert_eq!(nodes.len(), 50);
    // 50 nodes, a phase, 7 lists: one entry each.
    assert_eq!(shared_size().values - before.values, 58);
    drop(pods);
    assert_eq!(
        shared_size(),
        before,
        "the last Pod took its values with it"
    );
}

#[test]
fn shared_values_are_counted_once_against_the_allocator() {
    let _one = SHARING.lock().unwrap_or_else(|e| e.into_inner());
    let jsons: Vec<String> = (0..350).map(pod_json).collect();
    let before = shared_size();
    let mut objects = 0;
    let mut kept = Vec::with_capacity(jsons.len());
    let info = allocation_counter::measure(|| {
        for json in &jsons {
            let (view, bytes) = decode_measured::<SharedPodView>(json).unwrap();
            objects += bytes;
            kept.push(Arc::new(view));
        }
    });
    let shared = shared_size().bytes - before.bytes;
    // The allocator's figure, as above.
    let held = info.bytes_current as f64 + 16.0 * info.count_current as f64;
    let estimated = (objects + shared as usize) as f64;
    let ratio = estimated / held;
    println!("shared: objects {objects} + values {shared} bytes, allocator {held}: {ratio:.3}");
    assert!((0.9..1.1).contains(&ratio), "{ratio}");
    // Against the same objects unshared.
    let plain: usize = jsons
        .iter()
        .map(|json| decode_measured::<PodView>(json).unwrap().1)
        .sum();
    println!("unshared: {plain}");
    assert!(
        objects + (shared as usize) < plain,
        "{objects} + {shared} against {plain}"
    );
    drop(kept);
}

#[test]
fn derived_indexes_read_through_shared_values() {
    let _one = SHARING.lock().unwrap_or_else(|e| e.into_inner());
    let mut cache =
        Writer::with_indexers(SharedPodView::key_fn(), SharedPodView::indexers()).unwrap();
    for i in 0..100 {
        let (view, _) = decode_measured::<SharedPodView>(&pod_json(i)).unwrap();
        cache.upsert(view);
    }
    let lister = Lister::new(cache.indexer());
    assert_eq!(lister.on_node("node-3").len(), 2);
    let node = lister.on_node("node-3")[0]
        .spec
        .as_ref()
        .unwrap()
        .node_name
        .clone()
        .unwrap();
    assert_eq!(
        lister.on_node(&node).len(),
        2,
        "a shared string is a key too"
    );
    // 100 Pods over 7 image versions: 15 of version 1.0 (0, 7, ..., 98).
    assert_eq!(
        lister
            .by_image("registry.example.com/team/server:1.0")
            .len(),
        15
    );
    assert_eq!(
        lister
            .by_image("registry.example.com/team/sidecar:1.0")
            .len(),
        15
    );
}
