//! Unit tests of typed keys and indexes, with the derive's real output (inside this
//! crate it is told where the crate is: `crate = crate`).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::{__private, IndexSet, Informable};
use crate::key::{KeyFn, ObjectKey};
use crate::lister::Lister;
use crate::shared_informer::InformerConfig;
use crate::store::{Index, IndexFunc, IndexQuery, IndexedField, Indexers, TypedIndex, Writer};
use crate::test_support::{config_map, names};

mod owners;

/// The keys `I` gives `object`, sorted.
fn keys<K, I: Index<K>>(object: &K) -> Vec<String> {
    let mut keys = Vec::new();
    I::index_values(object, &mut |key| keys.push(key.to_owned()));
    keys.sort();
    keys
}

// --- A CRD: the derive sits on the spec and implements the traits for `Widget`. ---

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "PascalCase")]
enum Phase {
    Pending,
    Ready,
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Phase::Pending => "pending",
            Phase::Ready => "ready",
        })
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default)]
struct Placement {
    zone: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default)]
struct WidgetStatus {
    phase: Option<Phase>,
}

#[derive(CustomResource, Informable, Serialize, Deserialize, Clone, Debug)]
#[kube(
    group = "test.informer.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
#[informable(
    crate = crate,
    index(name = "by_color", path = "spec.color"),
    index(name = "by_replicas", path = "spec.replicaCount"),
    index(name = "by_tag", path = "spec.tags"),
    index(name = "by_phase", path = "spec.phase", format = "serde"),
    index(name = "by_phase_text", path = "spec.phase", format = "display"),
    index(name = "by_zone", path = "spec.placement.zone"),
    index(name = "by_status", path = "status.phase", value = Phase, format = "serde"),
    index(name = "by_label", path = "spec.labels['tier']"),
    index(name = "by_app", path = "metadata.labels['app']"),
    index(name = "by_generation", path = "metadata.generation"),
    index(name = "by_owner", owner),
    index(name = "by_parent", owner(type = Widget, controller, name), marker = ByParentName),
    index(name = "by_initial", fn = initial_of, value = char),
    index(name = "by_color_words", fn = color_words),
)]
struct WidgetSpec {
    color: String,
    replica_count: i32,
    tags: Option<Vec<String>>,
    phase: Phase,
    placement: Option<Placement>,
    labels: BTreeMap<String, String>,
}

fn initial_of(widget: &Widget) -> Option<char> {
    widget.spec.color.chars().next()
}

fn color_words(widget: &Widget) -> Vec<&str> {
    widget.spec.color.split('-').collect()
}

fn widget(namespace: &str, name: &str, color: &str, replicas: i32) -> Widget {
    let mut widget = Widget::new(
        name,
        WidgetSpec {
            color: color.into(),
            replica_count: replicas,
            tags: Some(vec!["a".into(), "b".into()]),
            phase: Phase::Ready,
            placement: Some(Placement {
                zone: Some("z1".into()),
            }),
            labels: [("tier".to_owned(), "web".to_owned())].into(),
        },
    );
    widget.metadata.namespace = Some(namespace.into());
    widget
}

fn owner(kind: &str, name: &str, uid: &str, controller: bool) -> OwnerReference {
    OwnerReference {
        api_version: "test.informer.dev/v1".into(),
        kind: kind.into(),
        name: name.into(),
        uid: uid.into(),
        controller: Some(controller),
        ..OwnerReference::default()
    }
}

#[test]
fn derived_path_indexes_look_into_options_vecs_maps_and_metadata() {
    let mut w = widget("ns", "w", "dark-red", 3);
    w.metadata.labels = Some([("app".to_owned(), "shop".to_owned())].into());
    w.metadata.generation = Some(7);
    w.status = Some(WidgetStatus {
        phase: Some(Phase::Pending),
    });
    assert_eq!(keys::<Widget, ByColor>(&w), ["dark-red"]);
    assert_eq!(keys::<Widget, ByReplicas>(&w), ["3"]);
    assert_eq!(keys::<Widget, ByTag>(&w), ["a", "b"]);
    assert_eq!(keys::<Widget, ByPhase>(&w), ["Ready"]);
    assert_eq!(keys::<Widget, ByPhaseText>(&w), ["ready"]);
    assert_eq!(keys::<Widget, ByZone>(&w), ["z1"]);
    assert_eq!(keys::<Widget, ByStatus>(&w), ["Pending"]);
    assert_eq!(keys::<Widget, ByLabel>(&w), ["web"]);
    assert_eq!(keys::<Widget, ByApp>(&w), ["shop"]);
    assert_eq!(keys::<Widget, ByGeneration>(&w), ["7"]);
    assert_eq!(keys::<Widget, ByInitial>(&w), ["d"]);
    assert_eq!(keys::<Widget, ByColorWords>(&w), ["dark", "red"]);

    // Absent optional values give no key at all.
    w.spec.tags = None;
    w.spec.placement = Some(Placement { zone: None });
    w.status = None;
    w.metadata.labels = None;
    for empty in [
        keys::<Widget, ByTag>(&w),
        keys::<Widget, ByZone>(&w),
        keys::<Widget, ByStatus>(&w),
        keys::<Widget, ByApp>(&w),
    ] {
        assert!(empty.is_empty(), "{empty:?}");
    }
}

#[test]
fn owner_indexes_filter_by_group_kind_and_controller_and_key_by_uid_or_name() {
    let mut w = widget("ns", "child", "red", 1);
    let mut foreign_widget = owner("Widget", "parent", "uid-4", true);
    foreign_widget.api_version = "other.example.com/v1".into();
    w.metadata.owner_references = Some(vec![
        owner("Widget", "parent", "uid-1", true),
        owner("Widget", "other", "uid-2", false),
        owner("ConfigMap", "cm", "uid-3", true),
        foreign_widget,
    ]);
    assert_eq!(
        keys::<Widget, ByOwner>(&w),
        ["uid-1", "uid-2", "uid-3", "uid-4"]
    );
    // Only the controller of kind Widget in Widget's group, not the other group's.
    assert_eq!(keys::<Widget, ByParentName>(&w), ["parent"]);
    w.metadata.owner_references.as_mut().unwrap().remove(0);
    assert!(keys::<Widget, ByParentName>(&w).is_empty());
}

#[test]
fn derive_declares_names_types_and_label_fields() {
    assert_eq!(<ByColor as Index<Widget>>::NAME, "by_color");
    assert_eq!(Widget::INDEX_NAMES.len(), 14);
    assert_eq!(Widget::INDEX_NAMES[0], "by_color");
    let names: Vec<String> = Widget::indexers().names().map(str::to_owned).collect();
    assert_eq!(names, Widget::INDEX_NAMES);
    assert_eq!(
        IndexFunc::<Widget>::indexed_field(&TypedIndex::<ByApp>::new()),
        IndexedField::Label("app")
    );
    assert_eq!(
        IndexFunc::<Widget>::indexed_field(&TypedIndex::<ByColor>::new()),
        IndexedField::Custom
    );
    // Key types follow the fields: `i32` for `replica_count`, `Phase` for `phase`.
    let replicas: <ByReplicas as Index<Widget>>::Value = 3i32;
    let phase: <ByPhase as Index<Widget>>::Value = Phase::Ready;
    assert_eq!(ByReplicas::encode(&replicas), "3");
    assert_eq!(ByPhase::encode(&phase), "Ready");
    assert_eq!(ByPhaseText::encode(&phase), "ready");
    let options = InformerConfig::<Widget>::informable();
    assert_eq!(
        options.indexers.names().collect::<Vec<_>>(),
        Widget::INDEX_NAMES
    );
    assert_eq!(
        options.key_fn.key(&widget("ns", "w", "red", 1)),
        ObjectKey::namespaced("ns", "w")
    );
}

fn widget_cache() -> (Writer<Widget>, Lister<Widget>) {
    let mut writer = Writer::with_indexers(Widget::key_fn(), Widget::indexers()).unwrap();
    for (ns, name, color, replicas) in [
        ("a", "w1", "red", 1),
        ("a", "w2", "blue", 3),
        ("b", "w3", "red", 3),
    ] {
        writer.upsert(widget(ns, name, color, replicas));
    }
    let lister = Lister::new(writer.indexer());
    (writer, lister)
}

#[test]
// Passing references is part of what is tested.
#[allow(clippy::needless_borrows_for_generic_args)]
fn typed_queries_through_markers_and_generated_methods() {
    let (mut writer, lister) = widget_cache();
    assert_eq!(names(&lister.by_index::<ByColor>("red")), ["w1", "w3"]);
    assert_eq!(names(&lister.by_color("red")), ["w1", "w3"]);
    assert_eq!(names(&lister.by_color(String::from("blue"))), ["w2"]);
    assert_eq!(names(&lister.by_color(&String::from("blue"))), ["w2"]);
    assert_eq!(names(&lister.by_replicas(3)), ["w2", "w3"]);
    assert_eq!(names(&lister.by_replicas(&1)), ["w1"]);
    assert_eq!(lister.by_phase(Phase::Ready).len(), 3);
    assert!(lister.by_phase(Phase::Pending).is_empty());
    assert_eq!(names(&lister.namespaced("a").by_color("red")), ["w1"]);
    assert_eq!(
        names(&lister.namespaced("b").by_index::<ByReplicas>(3)),
        ["w3"]
    );
    let keys = lister.index_keys::<ByColor>("red");
    let mut keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    keys.sort();
    assert_eq!(keys, ["a/w1", "b/w3"]);
    let mut values = lister.index_values::<ByColor>();
    values.sort();
    assert_eq!(values, [Arc::from("blue"), Arc::from("red")]);
    // The generated methods work on the indexer too.
    assert_eq!(writer.indexer().by_color("blue").len(), 1);
    assert_eq!(
        IndexQuery::by_index::<ByColor>(&writer.indexer(), "blue").len(),
        1
    );

    // Updates move objects between keys; deletes remove them.
    writer.upsert(widget("a", "w1", "blue", 1));
    assert_eq!(names(&lister.by_color("blue")), ["w1", "w2"]);
    assert_eq!(names(&lister.by_color("red")), ["w3"]);
    writer.delete_key(&ObjectKey::namespaced("b", "w3"));
    assert!(lister.by_color("red").is_empty());
}

#[test]
fn a_typed_query_adds_a_missing_index_over_the_current_content() {
    let mut writer = Writer::<Widget>::new();
    writer.upsert(widget("a", "w1", "red", 1));
    writer.upsert(widget("a", "w2", "blue", 1));
    let lister = Lister::new(writer.indexer());
    assert!(
        !writer
            .indexer()
            .index_names()
            .contains(&"by_color".to_owned())
    );
    assert_eq!(names(&lister.by_color("red")), ["w1"]);
    assert!(
        writer
            .indexer()
            .index_names()
            .contains(&"by_color".to_owned())
    );
    // From then on it is maintained like any other.
    writer.upsert(widget("a", "w3", "red", 1));
    assert_eq!(names(&lister.by_color("red")), ["w1", "w3"]);
}

// --- A hand-written resource: a slim Pod that decodes only what a controller reads. ---

#[derive(Deserialize, Clone, Debug, Informable)]
#[informable(
    crate = crate,
    key = slim_pod_key,
    index(name = "by_node", path = "spec.nodeName"),
    index(name = "by_image", path = "spec.containers.image"),
    index(name = "by_port", path = "spec.containers.ports.containerPort", value = i32),
    index(name = "by_selector", path = "spec.nodeSelector['zone']"),
)]
struct SlimPod {
    metadata: ObjectMeta,
    spec: Option<SlimPodSpec>,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
struct SlimPodSpec {
    node_name: Option<String>,
    #[serde(default)]
    containers: Vec<SlimContainer>,
    node_selector: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
struct SlimContainer {
    image: Option<String>,
    ports: Option<Vec<SlimPort>>,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
struct SlimPort {
    container_port: i32,
}

impl k8s_openapi::Resource for SlimPod {
    const API_VERSION: &'static str = "v1";
    const GROUP: &'static str = "";
    const KIND: &'static str = "Pod";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "pods";
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl k8s_openapi::Metadata for SlimPod {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// Pods keyed by UID: a custom key function.
fn slim_pod_key(pod: &SlimPod) -> ObjectKey {
    ObjectKey::cluster_scoped(pod.metadata.uid.clone().unwrap_or_default())
}

#[test]
fn a_slim_projection_decodes_a_full_pod_and_indexes_nested_fields() {
    let pod: SlimPod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": "web-0", "namespace": "shop", "uid": "u-1" },
        "spec": {
            "nodeName": "n1",
            "nodeSelector": { "zone": "z1" },
            "restartPolicy": "Always",
            "containers": [
                { "name": "web", "image": "nginx", "ports": [{ "containerPort": 80 }, { "containerPort": 443 }] },
                { "name": "log", "image": "fluentd" },
            ],
        },
    }))
    .unwrap();
    assert_eq!(keys::<SlimPod, ByNode>(&pod), ["n1"]);
    assert_eq!(keys::<SlimPod, ByImage>(&pod), ["fluentd", "nginx"]);
    assert_eq!(keys::<SlimPod, ByPort>(&pod), ["443", "80"]);
    assert_eq!(keys::<SlimPod, BySelector>(&pod), ["z1"]);
    assert_eq!(
        SlimPod::key_fn().key(&pod),
        ObjectKey::cluster_scoped("u-1")
    );

    let unscheduled: SlimPod = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "pending", "namespace": "shop", "uid": "u-2" },
    }))
    .unwrap();
    assert!(keys::<SlimPod, ByNode>(&unscheduled).is_empty());

    let mut writer = Writer::with_indexers(SlimPod::key_fn(), SlimPod::indexers()).unwrap();
    writer.upsert(pod);
    writer.upsert(unscheduled);
    let lister = Lister::new(writer.indexer());
    assert_eq!(names(&lister.by_node("n1")), ["web-0"]);
    assert_eq!(names(&lister.by_port(443)), ["web-0"]);
    assert!(lister.by_port(8080).is_empty());
    assert!(writer.indexer().get_by_key("u-2").is_some());
}

// --- Built-in types: a set of indexes declared on a local struct with `foreign`. ---

mod foreign {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::Informable;

    /// Typed indexes of ConfigMaps.
    #[derive(Informable)]
    #[informable(
        crate = crate,
        kind = ConfigMap,
        foreign,
        index(name = "by_backup", owner(kind = "Backup", api_version = "test.informer.dev/v1", controller, name)),
        index(name = "by_app", path = "metadata.labels['app']"),
        index(name = "by_data_owner", path = "data['owner']"),
        index(name = "by_immutable", path = "immutable", value = bool),
        index(name = "by_data_key", fn = data_keys),
    )]
    pub(super) struct ConfigMapIndexes;

    fn data_keys(config_map: &ConfigMap) -> Vec<&str> {
        config_map
            .data
            .iter()
            .flatten()
            .map(|(k, _)| k.as_str())
            .collect()
    }

    /// Typed indexes of Pods: deep paths into k8s-openapi's types, by JSON or Rust names.
    #[derive(Informable)]
    #[informable(
        crate = crate,
        kind = k8s_openapi::api::core::v1::Pod,
        foreign,
        lister_trait = PodQueries,
        index(name = "by_node", path = "spec.nodeName"),
        index(name = "by_image", path = "spec.containers.image"),
        index(name = "by_port", path = "spec.containers.ports.containerPort", value = i32),
        index(name = "by_phase", path = "status.phase"),
        index(name = "by_service_account", path = "spec.service_account_name"),
        index(name = "by_config_volume", path = "spec.volumes.configMap.name"),
    )]
    pub(super) struct PodIndexes;
}

fn backed_up(key: &str, backup: Option<(&str, bool)>, app: &str) -> ConfigMap {
    let mut config_map = config_map(key, &[("app", app)], 1);
    config_map.metadata.owner_references = backup.map(|(name, controller)| {
        vec![
            owner("Backup", name, &format!("uid-{name}"), controller),
            owner("Widget", "w", "uid-w", false),
        ]
    });
    config_map
}

#[test]
fn foreign_indexes_find_keys_in_built_in_types() {
    use foreign::{
        ByBackup, ByConfigVolume, ByDataKey, ByDataOwner, ByImmutable, ByServiceAccount,
    };

    let mut cm = backed_up("ns/cm", Some(("nightly", true)), "shop");
    cm.data = Some(
        [("owner", "team-a"), ("extra", "x")]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .into(),
    );
    cm.immutable = Some(true);
    assert_eq!(keys::<ConfigMap, ByBackup>(&cm), ["nightly"]);
    assert_eq!(keys::<ConfigMap, foreign::ByApp>(&cm), ["shop"]);
    assert_eq!(keys::<ConfigMap, ByDataOwner>(&cm), ["team-a"]);
    assert_eq!(keys::<ConfigMap, ByImmutable>(&cm), ["true"]);
    assert_eq!(keys::<ConfigMap, ByDataKey>(&cm), ["extra", "owner"]);
    // Only the controller reference of kind Backup counts.
    let not_controller = backed_up("ns/cm", Some(("nightly", false)), "shop");
    assert!(keys::<ConfigMap, ByBackup>(&not_controller).is_empty());
    assert!(keys::<ConfigMap, ByDataOwner>(&not_controller).is_empty());
    assert_eq!(
        <foreign::ByApp as Index<ConfigMap>>::indexed_field(),
        IndexedField::Label("app")
    );

    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "web-0", "namespace": "shop" },
        "spec": {
            "nodeName": "n1",
            "serviceAccountName": "web",
            "containers": [
                { "name": "web", "image": "nginx", "ports": [{ "containerPort": 80 }, { "containerPort": 443 }] },
                { "name": "log", "image": "fluentd" },
            ],
            "volumes": [
                { "name": "conf", "configMap": { "name": "web-conf" } },
                { "name": "tmp", "emptyDir": {} },
            ],
        },
        "status": { "phase": "Running" },
    }))
    .unwrap();
    assert_eq!(keys::<Pod, foreign::ByNode>(&pod), ["n1"]);
    assert_eq!(keys::<Pod, foreign::ByImage>(&pod), ["fluentd", "nginx"]);
    assert_eq!(keys::<Pod, foreign::ByPort>(&pod), ["443", "80"]);
    assert_eq!(keys::<Pod, foreign::ByPhase>(&pod), ["Running"]);
    assert_eq!(keys::<Pod, ByServiceAccount>(&pod), ["web"]);
    assert_eq!(keys::<Pod, ByConfigVolume>(&pod), ["web-conf"]);
    let port: <foreign::ByPort as Index<Pod>>::Value = 443i32;
    assert_eq!(foreign::ByPort::encode(&port), "443");
    assert!(keys::<Pod, foreign::ByNode>(&Pod::default()).is_empty());
}

#[test]
fn a_foreign_set_declares_its_indexes_on_the_struct_and_as_an_index_set() {
    use foreign::{ConfigMapIndexes, PodIndexes};

    assert_eq!(
        ConfigMapIndexes::INDEX_NAMES,
        [
            "by_backup",
            "by_app",
            "by_data_owner",
            "by_immutable",
            "by_data_key"
        ]
    );
    let names: Vec<String> = ConfigMapIndexes::indexers()
        .names()
        .map(str::to_owned)
        .collect();
    assert_eq!(names, ConfigMapIndexes::INDEX_NAMES);
    assert_eq!(
        <ConfigMapIndexes as IndexSet<ConfigMap>>::INDEX_NAMES,
        ConfigMapIndexes::INDEX_NAMES
    );
    assert_eq!(
        <PodIndexes as IndexSet<Pod>>::indexers().len(),
        PodIndexes::INDEX_NAMES.len()
    );
    // An informer can maintain them from the start.
    let options = InformerConfig::<ConfigMap>::default().indexers(ConfigMapIndexes::indexers());
    assert_eq!(
        options.indexers.names().collect::<Vec<_>>(),
        ConfigMapIndexes::INDEX_NAMES
    );
}

#[test]
fn foreign_indexes_answer_typed_queries_on_listers() {
    use foreign::{ByBackup, ConfigMapIndexes, ConfigMapIndexesExt, PodIndexes, PodQueries};

    let mut writer =
        Writer::with_indexers(KeyFn::meta_namespace(), ConfigMapIndexes::indexers()).unwrap();
    writer.upsert(backed_up("a/copy-1", Some(("nightly", true)), "shop"));
    writer.upsert(backed_up("b/copy-2", Some(("nightly", true)), "db"));
    writer.upsert(backed_up("a/copy-3", Some(("weekly", true)), "shop"));
    writer.upsert(backed_up("a/plain", None, "shop"));
    let lister: Lister<ConfigMap> = Lister::new(writer.indexer());
    assert_eq!(names(&lister.by_backup("nightly")), ["copy-1", "copy-2"]);
    assert_eq!(
        names(&lister.by_index::<ByBackup>(String::from("weekly"))),
        ["copy-3"]
    );
    assert_eq!(
        names(&lister.namespaced("a").by_backup("nightly")),
        ["copy-1"]
    );
    assert_eq!(names(&lister.by_app("shop")), ["copy-1", "copy-3", "plain"]);
    assert!(lister.by_immutable(true).is_empty());
    assert_eq!(writer.indexer().by_backup("weekly").len(), 1);

    // Updates move objects between keys; deletes remove them.
    writer.upsert(backed_up("a/copy-1", Some(("weekly", true)), "shop"));
    assert_eq!(names(&lister.by_backup("nightly")), ["copy-2"]);
    assert_eq!(names(&lister.by_backup("weekly")), ["copy-1", "copy-3"]);
    writer.delete_key(&ObjectKey::namespaced("a", "copy-3"));
    assert_eq!(names(&lister.by_backup("weekly")), ["copy-1"]);

    // Queries by an index the cache lacks add it first (Pods here have none).
    let mut pods = Writer::<Pod>::new();
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "p", "namespace": "a" },
        "spec": { "nodeName": "n1", "containers": [] },
    }))
    .unwrap();
    pods.upsert(pod);
    let pod_lister = Lister::new(pods.indexer());
    assert_eq!(names(&pod_lister.by_node("n1")), ["p"]);
    assert!(
        pods.indexer()
            .index_names()
            .contains(&PodIndexes::INDEX_NAMES[0].to_owned())
    );
}

#[test]
fn add_to_adds_only_the_missing_indexes_of_a_set() {
    use foreign::{ConfigMapIndexes, ConfigMapIndexesExt};

    let mut writer = Writer::<ConfigMap>::new();
    writer.upsert(backed_up("a/copy", Some(("nightly", true)), "shop"));
    let indexer = writer.indexer();
    // A typed query has added one of the set's indexes already.
    assert_eq!(names(&indexer.by_app("shop")), ["copy"]);
    assert!(
        indexer.add_indexers(ConfigMapIndexes::indexers()).is_err(),
        "all or nothing: `add_indexers` refuses the set"
    );
    ConfigMapIndexes::add_to(&indexer);
    let mut expected: Vec<String> = ConfigMapIndexes::INDEX_NAMES
        .iter()
        .map(|n| n.to_string())
        .collect();
    expected.push(crate::store::NAMESPACE_INDEX.to_owned());
    expected.sort();
    let sorted = |mut names: Vec<String>| {
        names.sort();
        names
    };
    assert_eq!(sorted(indexer.index_names()), expected);
    // Built over the current content, maintained from then on; a second call (another
    // component sharing the informer) changes nothing.
    assert_eq!(names(&indexer.by_backup("nightly")), ["copy"]);
    <ConfigMapIndexes as IndexSet<ConfigMap>>::add_to(&indexer);
    assert_eq!(sorted(indexer.index_names()), expected);
    writer.upsert(backed_up("b/copy", Some(("nightly", true)), "db"));
    assert_eq!(names(&indexer.by_backup("nightly")), ["copy", "copy"]);

    // Many components at once: each index is defined exactly once.
    let fresh = Writer::<ConfigMap>::new();
    std::thread::scope(|scope| {
        for _ in 0..8 {
            let indexer = fresh.indexer();
            scope.spawn(move || ConfigMapIndexes::add_to(&indexer));
        }
    });
    assert_eq!(sorted(fresh.indexer().index_names()), expected);
}

/// A hand-written set that names one index twice.
struct Twice;

impl IndexSet<ConfigMap> for Twice {
    const INDEX_NAMES: &'static [&'static str] = &["by_app", "by_app"];

    fn indexers() -> Indexers<ConfigMap> {
        Indexers::new()
            .with_index::<foreign::ByApp>()
            .with_index::<foreign::ByApp>()
    }
}

#[test]
fn add_to_defines_a_name_given_twice_once() {
    let writer = Writer::<ConfigMap>::new();
    Twice::add_to(&writer.indexer());
    let names = writer.indexer().index_names();
    assert_eq!(names.iter().filter(|n| *n == "by_app").count(), 1);
}

// --- The derive's runtime. ---

#[test]
fn serde_keys_are_strings_as_themselves_and_json_otherwise() {
    assert_eq!(__private::serde_key(&Phase::Ready), "Ready");
    assert_eq!(__private::serde_key("plain"), "plain");
    assert_eq!(__private::serde_key(&5), "5");
}

#[test]
fn map_lookups_read_string_keyed_maps() {
    let btree: BTreeMap<String, i32> = [("a".to_owned(), 1)].into();
    let hash: std::collections::HashMap<String, i32> = [("b".to_owned(), 2)].into();
    assert_eq!(__private::map_get(&btree, "a"), Some(&1));
    assert_eq!(__private::map_get(&btree, "z"), None);
    assert_eq!(__private::map_get(&hash, "b"), Some(&2));
}

// --- Hygiene: names in the user's scope do not change what the output means. ---

#[allow(dead_code, non_snake_case, clippy::all)]
mod shadowed {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::Informable;

    // Everything the expansion uses, shadowed.
    type Option = ();
    type Vec = ();
    type String = ();
    type Result = ();
    struct Arc;
    struct Cow;
    trait FnMut {}
    trait Sized {}
    trait Iterator {}
    trait Index {}
    trait IndexKey {}
    fn Some() {}
    fn object() {}
    fn value() {}
    fn v0() {}

    /// An index function named like the expansion's own parameter.
    fn emit(thing: &Thing) -> ::std::option::Option<&str> {
        thing.spec.note.as_deref()
    }

    #[derive(::serde::Deserialize, ::core::clone::Clone, ::core::fmt::Debug, Informable)]
    #[informable(
        crate = crate,
        index(name = "by_note", path = "spec.note"),
        index(name = "by_emit", fn = emit),
        index(name = "by_owner", owner(controller)),
        index(name = "by_app", path = "metadata.labels['app']"),
    )]
    pub(super) struct Thing {
        pub(super) metadata: ObjectMeta,
        pub(super) spec: ThingSpec,
    }

    #[derive(::serde::Deserialize, ::core::clone::Clone, ::core::fmt::Debug)]
    pub(super) struct ThingSpec {
        pub(super) note: ::std::option::Option<::std::string::String>,
    }

    impl k8s_openapi::Resource for Thing {
        const API_VERSION: &'static str = "example.com/v1";
        const GROUP: &'static str = "example.com";
        const KIND: &'static str = "Thing";
        const VERSION: &'static str = "v1";
        const URL_PATH_SEGMENT: &'static str = "things";
        type Scope = k8s_openapi::ClusterResourceScope;
    }

    impl k8s_openapi::Metadata for Thing {
        type Ty = ObjectMeta;
        fn metadata(&self) -> &ObjectMeta {
            &self.metadata
        }
        fn metadata_mut(&mut self) -> &mut ObjectMeta {
            &mut self.metadata
        }
    }
}

#[test]
fn the_expansion_ignores_names_in_the_users_scope() {
    use shadowed::{ByEmit, ByNote, Thing, ThingIndexes, ThingSpec};
    let thing = Thing {
        metadata: ObjectMeta {
            name: Some("t".into()),
            ..ObjectMeta::default()
        },
        spec: ThingSpec {
            note: Some("hello".into()),
        },
    };
    assert_eq!(keys::<Thing, ByNote>(&thing), ["hello"]);
    assert_eq!(keys::<Thing, ByEmit>(&thing), ["hello"]);
    let mut writer = Writer::with_indexers(Thing::key_fn(), Thing::indexers()).unwrap();
    writer.upsert(thing);
    let lister = Lister::new(writer.indexer());
    assert_eq!(names(&lister.by_note("hello")), ["t"]);
    // Cluster-scoped: `get` by name exists, as the type's scope says.
    assert!(lister.get("t").is_ok());
}

/// The derived indexes that read only `metadata` (labels, generation, owners) index
/// the metadata-only `PartialObjectMeta<Widget>` too, queried through the generated
/// `WidgetMetadataIndexes` (and for a foreign set, `ConfigMapIndexesMetadataExt`);
/// the others (spec paths, functions of `&Widget`) stay with the full type.
#[test]
fn metadata_indexes_apply_to_the_metadata_only_type() {
    use foreign::ConfigMapIndexesMetadataExt;
    use kube::core::PartialObjectMeta;

    fn partial<K>(metadata: ObjectMeta) -> PartialObjectMeta<K> {
        PartialObjectMeta {
            types: None,
            metadata,
            _phantom: std::marker::PhantomData,
        }
    }
    let mut meta = widget("ns", "w", "red", 1).metadata;
    meta.labels = Some([("app".to_owned(), "shop".to_owned())].into());
    meta.generation = Some(4);
    meta.owner_references = Some(vec![owner("Widget", "parent", "uid-p", true)]);
    let mut other = meta.clone();
    other.name = Some("v".into());
    other.labels = None;

    let metadata_indexes: Vec<String> = Widget::metadata_indexers()
        .names()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        metadata_indexes,
        ["by_app", "by_generation", "by_owner", "by_parent"]
    );
    let mut cache = Writer::<PartialObjectMeta<Widget>>::default();
    cache.upsert(partial(meta.clone()));
    cache.upsert(partial(other));
    let lister = Lister::new(cache.indexer());
    assert_eq!(names(&lister.by_app("shop")), ["w"]);
    assert_eq!(names(&lister.by_generation(4)), ["v", "w"]);
    assert_eq!(names(&lister.by_owner("uid-p")), ["v", "w"]);
    assert_eq!(
        names(&lister.namespaced("ns").by_parent("parent")),
        ["v", "w"]
    );
    assert_eq!(
        <ByApp as Index<PartialObjectMeta<Widget>>>::indexed_field(),
        IndexedField::Label("app")
    );

    let mut config_maps = Writer::<PartialObjectMeta<ConfigMap>>::default();
    config_maps.upsert(partial(
        backed_up("ns/cm", Some(("nightly", true)), "shop").metadata,
    ));
    let lister = Lister::new(config_maps.indexer());
    assert_eq!(names(&lister.by_backup("nightly")), ["cm"]);
    assert_eq!(names(&lister.by_index::<foreign::ByApp>("shop")), ["cm"]);
}
