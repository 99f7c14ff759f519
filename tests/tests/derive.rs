//! `#[derive(Informable)]` against a real API server: typed index queries over an
//! informer's cache agree with what the server lists, through create/update/delete
//! churn, for a CRD, for a slim projection of Pods and for ConfigMaps through a
//! `foreign` index set (its metadata indexes on a metadata-only informer too); the
//! factory shares one informer that maintains the derived indexes; and owner indexes
//! tell a CRD `Deployment` of ours from the built-in `apps/v1` one.

mod common;

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use common::eventually;
use informer::factory::{FactoryConfig, SharedInformerFactory};
use informer::informable::Informable;
use informer::lister::Lister;
use informer::shared_informer::{SharedIndexInformer, wait_for_cache_sync};
use informer::testenv::TestEnv;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::PartialObjectMeta;
use kube::{CustomResource, CustomResourceExt, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const WAIT: Duration = Duration::from_secs(20);

#[derive(CustomResource, Informable, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "derive.informer.example.com",
    version = "v1",
    kind = "Widget",
    namespaced
)]
#[informable(
    index(name = "by_color", path = "spec.color"),
    index(name = "by_size", path = "spec.size"),
    index(name = "by_tag", path = "spec.tags"),
    index(name = "by_app", path = "metadata.labels['app']"),
    index(name = "by_owner", owner(type = Widget))
)]
struct WidgetSpec {
    color: String,
    size: u32,
    tags: Option<Vec<String>>,
}

const COLORS: [&str; 3] = ["red", "green", "blue"];
const TAGS: [&str; 3] = ["new", "big", "sale"];
const APPS: [&str; 2] = ["web", "db"];

/// A small deterministic generator: the churn is the same on every run.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }

    fn spec(&mut self) -> serde_json::Value {
        let tags: Vec<&str> = TAGS
            .iter()
            .copied()
            .filter(|_| self.below(2) == 0)
            .collect();
        serde_json::json!({
            "color": COLORS[self.below(COLORS.len())],
            "size": self.below(4),
            "tags": if self.below(4) == 0 { serde_json::Value::Null } else { tags.into() },
        })
    }

    /// Labels for a merge patch: `app` set to one of [`APPS`], or removed.
    fn labels(&mut self) -> serde_json::Value {
        match self.below(3) {
            2 => serde_json::json!({ "app": null }),
            i => serde_json::json!({ "app": APPS[i] }),
        }
    }
}

fn sorted_names<K: Resource>(objects: impl IntoIterator<Item = impl Borrow<K>>) -> Vec<String> {
    let mut names: Vec<String> = objects
        .into_iter()
        .map(|o| o.borrow().meta().name.clone().unwrap_or_default())
        .collect();
    names.sort();
    names
}

/// Every index query the test asks, with what the server's list says it should
/// return; empty when they agree.
fn disagreements(lister: &Lister<Widget>, listed: &[Widget], namespace: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut compare = |what: String, cached: Vec<Arc<Widget>>, filter: &dyn Fn(&Widget) -> bool| {
        let cached = sorted_names::<Widget>(cached);
        let expected = sorted_names::<Widget>(listed.iter().filter(|w| filter(w)));
        if cached != expected {
            problems.push(format!("{what}: cache {cached:?}, server {expected:?}"));
        }
    };
    for color in COLORS {
        compare(format!("by_color({color})"), lister.by_color(color), &|w| {
            w.spec.color == color
        });
        compare(
            format!("namespaced by_color({color})"),
            lister.namespaced(namespace).by_color(color),
            &|w| w.spec.color == color,
        );
    }
    for size in 0..4u32 {
        compare(format!("by_size({size})"), lister.by_size(size), &|w| {
            w.spec.size == size
        });
    }
    for tag in TAGS {
        compare(
            format!("by_tag({tag})"),
            lister.by_index::<ByTag>(tag),
            &|w| w.spec.tags.iter().flatten().any(|t| t == tag),
        );
    }
    for app in APPS {
        compare(format!("by_app({app})"), lister.by_app(app), &|w| {
            w.labels().get("app").map(String::as_str) == Some(app)
        });
    }
    for owner in listed {
        let uid = owner.uid().unwrap_or_default();
        compare(
            format!("by_owner({})", owner.name_any()),
            lister.by_owner(uid.as_str()),
            &|w| w.owner_references().iter().any(|r| r.uid == uid),
        );
    }
    problems
}

/// The index names of an informer's cache, sorted.
fn index_names(informer: &SharedIndexInformer<Widget>) -> Vec<String> {
    let mut names = informer.indexer().index_names();
    names.sort();
    names
}

/// The derived indexes plus the namespace index every informer keeps, sorted.
fn derived_and_namespace() -> Vec<String> {
    let mut names: Vec<String> = Widget::INDEX_NAMES.iter().map(|n| n.to_string()).collect();
    names.push(informer::store::NAMESPACE_INDEX.to_owned());
    names.sort();
    names
}

#[tokio::test]
async fn index_queries_agree_with_the_server_under_churn() {
    let env = TestEnv::shared().await.unwrap();
    env.install_crd(&Widget::crd()).await.unwrap();
    let ns = env.create_namespace("derive-churn").await.unwrap();
    let api = Api::<Widget>::namespaced(env.client().unwrap(), &ns);

    let informer = SharedIndexInformer::informable(api.clone());
    assert_eq!(index_names(&informer), derived_and_namespace());
    let running = common::spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    let lister = informer.lister();

    let mut rng = Lcg(6);
    let mut next_name = 0;
    for round in 0..4 {
        for _ in 0..25 {
            let live = api.list(&ListParams::default()).await.unwrap().items;
            match rng.below(10) {
                // Create, sometimes owned by a live widget.
                0..=4 => {
                    next_name += 1;
                    let mut labels = rng.labels();
                    if labels["app"].is_null() {
                        labels = serde_json::json!({});
                    }
                    let mut metadata = serde_json::json!({
                        "name": format!("w{next_name}"),
                        "labels": labels,
                    });
                    if !live.is_empty() && rng.below(2) == 0 {
                        let owner = &live[rng.below(live.len())];
                        metadata["ownerReferences"] = serde_json::json!([{
                            "apiVersion": "derive.informer.example.com/v1",
                            "kind": "Widget",
                            "name": owner.name_any(),
                            "uid": owner.uid().unwrap(),
                        }]);
                    }
                    let widget: Widget = serde_json::from_value(serde_json::json!({
                        "apiVersion": "derive.informer.example.com/v1",
                        "kind": "Widget",
                        "metadata": metadata,
                        "spec": rng.spec(),
                    }))
                    .unwrap();
                    api.create(&PostParams::default(), &widget).await.unwrap();
                }
                // Update spec and labels.
                5..=7 if !live.is_empty() => {
                    let target = live[rng.below(live.len())].name_any();
                    let patch = serde_json::json!({
                        "metadata": { "labels": rng.labels() },
                        "spec": rng.spec(),
                    });
                    api.patch(&target, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .unwrap();
                }
                // Delete (no garbage collector runs: owned widgets stay).
                _ if !live.is_empty() => {
                    let target = live[rng.below(live.len())].name_any();
                    api.delete(&target, &DeleteParams::default()).await.unwrap();
                }
                _ => {}
            }
        }
        let listed = api.list(&ListParams::default()).await.unwrap().items;
        assert!(!listed.is_empty(), "the churn leaves widgets");
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let problems = disagreements(&lister, &listed, &ns);
            if problems.is_empty() {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "round {round}: the cache's indexes disagree with the server:\n{}",
                problems.join("\n")
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Every index holds exactly the keys the listed objects have.
        let mut colors: Vec<String> = lister
            .index_values::<ByColor>()
            .iter()
            .map(|v| v.to_string())
            .collect();
        colors.sort();
        let expected: BTreeSet<String> = listed.iter().map(|w| w.spec.color.clone()).collect();
        assert_eq!(colors, expected.into_iter().collect::<Vec<_>>());
        if round == 3 {
            // The churn exercised the owner index too.
            assert!(listed.iter().any(|w| {
                !w.owner_references().is_empty()
                    && !lister
                        .by_owner(w.owner_references()[0].uid.as_str())
                        .is_empty()
            }));
        }
    }

    running.stop().await;
    env.delete_namespace(&ns).await.unwrap();
}

/// A slim projection of Pod: only the metadata and the node name are decoded, so the
/// cache holds a fraction of each Pod.
#[derive(Deserialize, Clone, Debug, Informable)]
#[informable(
    index(name = "by_node", path = "spec.nodeName"),
    index(name = "by_image", path = "spec.containers.image")
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
}

#[derive(Deserialize, Clone, Debug)]
struct SlimContainer {
    image: Option<String>,
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

fn pod(name: &str, node: Option<&str>, image: &str) -> k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": name },
        "spec": {
            "nodeName": node,
            "containers": [{ "name": "main", "image": image }],
        },
    }))
    .unwrap()
}

#[tokio::test]
async fn a_slim_pod_projection_indexes_agree_with_field_selected_lists() {
    use k8s_openapi::api::core::v1::Pod;

    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("derive-pods").await.unwrap();
    let pods = Api::<Pod>::namespaced(env.client().unwrap(), &ns);
    let informer =
        SharedIndexInformer::informable(Api::<SlimPod>::namespaced(env.client().unwrap(), &ns));
    let running = common::spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    let lister = informer.lister();

    let nodes = ["n1", "n2"];
    let mut rng = Lcg(11);
    for i in 0..24 {
        let node = match rng.below(3) {
            2 => None,
            n => Some(nodes[n]),
        };
        let image = ["nginx", "redis"][rng.below(2)];
        pods.create(&PostParams::default(), &pod(&format!("p{i}"), node, image))
            .await
            .unwrap();
        if i % 5 == 4 {
            pods.delete(
                &format!("p{}", i - 2),
                &DeleteParams::default().grace_period(0),
            )
            .await
            .unwrap();
        }
    }

    // What the server answers to `spec.nodeName=<node>`, against the cache's index.
    let mut expected: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for node in nodes {
        let selected = pods
            .list(&ListParams::default().fields(&format!("spec.nodeName={node}")))
            .await
            .unwrap();
        assert!(!selected.items.is_empty(), "pods on {node}");
        expected.insert(node, sorted_names::<Pod>(selected.items));
    }
    let all = pods.list(&ListParams::default()).await.unwrap().items;
    eventually("the node index agrees with the server", WAIT, || {
        nodes
            .iter()
            .all(|node| sorted_names::<SlimPod>(lister.by_node(*node)) == expected[node])
            && ["nginx", "redis"].iter().all(|image| {
                let want = sorted_names::<Pod>(all.iter().filter(|p| {
                    p.spec
                        .iter()
                        .flat_map(|s| &s.containers)
                        .any(|c| c.image.as_deref() == Some(image))
                }));
                sorted_names::<SlimPod>(lister.namespaced(&ns).by_image(*image)) == want
            })
    })
    .await;
    assert!(lister.by_node("n3").is_empty());

    running.stop().await;
    env.delete_namespace(&ns).await.unwrap();
}

#[tokio::test]
async fn the_factory_shares_one_informer_with_the_derived_indexes() {
    let env = TestEnv::shared().await.unwrap();
    env.install_crd(&Widget::crd()).await.unwrap();
    let ns = env.create_namespace("derive-factory").await.unwrap();
    let api = Api::<Widget>::namespaced(env.client().unwrap(), &ns);
    for (name, color) in [("a", "red"), ("b", "blue"), ("c", "red")] {
        let widget = Widget::new(
            name,
            WidgetSpec {
                color: color.into(),
                size: 1,
                tags: None,
            },
        );
        api.create(&PostParams::default(), &widget).await.unwrap();
    }
    common::wait_for_watch_cache(&api, 3).await;

    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryConfig::default().namespace(ns.clone()),
    );
    let widgets = factory.informable::<Widget>();
    assert_eq!(
        widgets,
        factory.informer::<Widget>(),
        "one informer per type"
    );
    assert_eq!(index_names(&widgets), derived_and_namespace());

    // Asked first through `informer()`, the derived indexes are added on `informable()`.
    let other_factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryConfig::default().namespace(ns.clone()),
    );
    let plain = other_factory.informer::<Widget>();
    assert_eq!(
        plain.indexer().index_names(),
        [informer::store::NAMESPACE_INDEX]
    );
    assert_eq!(other_factory.informable::<Widget>(), plain);
    assert_eq!(index_names(&plain), derived_and_namespace());

    factory.start();
    other_factory.start();
    factory.wait_for_cache_sync().await.unwrap();
    other_factory.wait_for_cache_sync().await.unwrap();
    for lister in [widgets.lister(), plain.lister()] {
        assert_eq!(sorted_names::<Widget>(lister.by_color("red")), ["a", "c"]);
        assert_eq!(
            sorted_names::<Widget>(lister.namespaced(&ns).by_index::<ByColor>("blue")),
            ["b"]
        );
    }
    factory.shutdown().await;
    other_factory.shutdown().await;
    env.delete_namespace(&ns).await.unwrap();
}

/// Typed indexes of ConfigMaps, a k8s-openapi type: declared on a local struct.
#[derive(Informable)]
#[informable(
    kind = ConfigMap,
    foreign,
    index(name = "by_backup", owner(kind = "Backup", group = "backup.example.com", controller, name)),
    index(name = "by_tier", path = "metadata.labels['tier']"),
    index(name = "by_source", path = "data['source']")
)]
struct ConfigMapIndexes;

const BACKUPS: [&str; 2] = ["nightly", "weekly"];
const TIERS: [&str; 2] = ["web", "db"];
const SOURCES: [&str; 2] = ["git", "s3"];

impl Lcg {
    /// One of `values`, or `null` (absent) one time in three.
    fn maybe(&mut self, values: [&str; 2]) -> serde_json::Value {
        match self.below(3) {
            2 => serde_json::Value::Null,
            i => values[i].into(),
        }
    }

    /// `metadata.ownerReferences`: the controller reference of a Backup, a Backup
    /// reference that is not the controller, or none (`null`).
    fn backup_owners(&mut self) -> serde_json::Value {
        let backup = BACKUPS[self.below(BACKUPS.len())];
        let controller = match self.below(4) {
            0 | 1 => true,
            2 => false,
            _ => return serde_json::Value::Null,
        };
        serde_json::json!([{
            "apiVersion": "backup.example.com/v1",
            "kind": "Backup",
            "name": backup,
            "uid": format!("uid-{backup}"),
            "controller": controller,
        }])
    }
}

/// `value` without its `null` object members (which a merge patch reads as "remove",
/// and a new object cannot hold).
fn without_nulls(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(members) => members
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k, without_nulls(v)))
            .collect(),
        other => other,
    }
}

/// Every query of the foreign indexes against what the server's list says; empty when
/// they agree.
fn config_map_disagreements(
    lister: &Lister<ConfigMap>,
    listed: &[ConfigMap],
    namespace: &str,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut compare =
        |what: String, cached: Vec<Arc<ConfigMap>>, filter: &dyn Fn(&ConfigMap) -> bool| {
            let cached = sorted_names::<ConfigMap>(cached);
            let expected = sorted_names::<ConfigMap>(listed.iter().filter(|c| filter(c)));
            if cached != expected {
                problems.push(format!("{what}: cache {cached:?}, server {expected:?}"));
            }
        };
    for backup in BACKUPS {
        let owned_by = |c: &ConfigMap| {
            c.owner_references()
                .iter()
                .any(|r| r.kind == "Backup" && r.controller == Some(true) && r.name == backup)
        };
        compare(
            format!("by_backup({backup})"),
            lister.by_backup(backup),
            &owned_by,
        );
        compare(
            format!("namespaced by_index::<ByBackup>({backup})"),
            lister.namespaced(namespace).by_index::<ByBackup>(backup),
            &owned_by,
        );
    }
    for tier in TIERS {
        compare(format!("by_tier({tier})"), lister.by_tier(tier), &|c| {
            c.labels().get("tier").map(String::as_str) == Some(tier)
        });
    }
    for source in SOURCES {
        compare(
            format!("by_source({source})"),
            lister.by_source(source),
            &|c| {
                c.data
                    .as_ref()
                    .and_then(|d| d.get("source"))
                    .map(String::as_str)
                    == Some(source)
            },
        );
    }
    problems
}

/// The foreign indexes that read only metadata (`by_backup`, `by_tier`) on a
/// metadata-only informer, queried through the generated
/// `ConfigMapIndexesMetadataExt`, against the server's list; empty when they agree.
fn metadata_disagreements(
    lister: &Lister<PartialObjectMeta<ConfigMap>>,
    listed: &[ConfigMap],
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut compare = |what: String,
                       cached: Vec<Arc<PartialObjectMeta<ConfigMap>>>,
                       filter: &dyn Fn(&ConfigMap) -> bool| {
        let cached = sorted_names::<PartialObjectMeta<ConfigMap>>(cached);
        let expected = sorted_names::<ConfigMap>(listed.iter().filter(|c| filter(c)));
        if cached != expected {
            problems.push(format!("{what}: cache {cached:?}, server {expected:?}"));
        }
    };
    for backup in BACKUPS {
        compare(
            format!("by_backup({backup})"),
            lister.by_backup(backup),
            &|c| {
                c.owner_references()
                    .iter()
                    .any(|r| r.kind == "Backup" && r.controller == Some(true) && r.name == backup)
            },
        );
    }
    for tier in TIERS {
        compare(format!("by_tier({tier})"), lister.by_tier(tier), &|c| {
            c.labels().get("tier").map(String::as_str) == Some(tier)
        });
    }
    problems
}

#[tokio::test]
async fn foreign_indexes_of_config_maps_agree_with_the_server_on_factory_informers() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("derive-foreign").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    let factory = |ns: &str| {
        SharedInformerFactory::new(
            env.client().unwrap(),
            FactoryConfig::default().namespace(ns.to_owned()),
        )
    };
    let sorted = |mut names: Vec<String>| {
        names.sort();
        names
    };
    let mut with_set: Vec<String> = ConfigMapIndexes::INDEX_NAMES
        .iter()
        .map(|n| n.to_string())
        .collect();
    with_set.push(informer::store::NAMESPACE_INDEX.to_owned());
    let with_set = sorted(with_set);

    // Indexes added before the start, by two controllers sharing the informer.
    let early = factory(&ns);
    let early_config_maps = early.informer::<ConfigMap>();
    ConfigMapIndexes::add_to(&early_config_maps.indexer());
    ConfigMapIndexes::add_to(&early.informer::<ConfigMap>().indexer());
    assert_eq!(sorted(early_config_maps.indexer().index_names()), with_set);
    // And a metadata-only informer beside it, whose metadata indexes the first queries
    // add.
    let early_metadata = early.metadata_informer::<ConfigMap>();
    early.start();
    assert!(early.wait_for_cache_sync().await.is_ok());

    let mut rng = Lcg(17);
    let mut next_name = 0;
    let mut late: Option<(SharedInformerFactory, SharedIndexInformer<ConfigMap>)> = None;
    for round in 0..4 {
        for _ in 0..20 {
            let live = api.list(&ListParams::default()).await.unwrap().items;
            match rng.below(10) {
                0..=4 => {
                    next_name += 1;
                    let config_map: ConfigMap =
                        serde_json::from_value(without_nulls(serde_json::json!({
                            "metadata": {
                                "name": format!("copy-{next_name}"),
                                "labels": { "tier": rng.maybe(TIERS) },
                                "ownerReferences": rng.backup_owners(),
                            },
                            "data": { "source": rng.maybe(SOURCES) },
                        })))
                        .unwrap();
                    api.create(&PostParams::default(), &config_map)
                        .await
                        .unwrap();
                }
                5..=7 if !live.is_empty() => {
                    let target = live[rng.below(live.len())].name_any();
                    let patch = serde_json::json!({
                        "metadata": {
                            "labels": { "tier": rng.maybe(TIERS) },
                            "ownerReferences": rng.backup_owners(),
                        },
                        "data": { "source": rng.maybe(SOURCES) },
                    });
                    api.patch(&target, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .unwrap();
                }
                _ if !live.is_empty() => {
                    let target = live[rng.below(live.len())].name_any();
                    api.delete(&target, &DeleteParams::default()).await.unwrap();
                }
                _ => {}
            }
        }
        if round == 0 {
            // A second factory's informer, indexed only after it has synced (and after a
            // query added one index by itself): built over the cache, then maintained.
            let factory = factory(&ns);
            let config_maps = factory.informer::<ConfigMap>();
            factory.start();
            assert!(factory.wait_for_cache_sync().await.is_ok());
            let _ = config_maps.lister().by_tier("web");
            ConfigMapIndexes::add_to(&config_maps.indexer());
            assert_eq!(sorted(config_maps.indexer().index_names()), with_set);
            late = Some((factory, config_maps));
        }
        let listed = api.list(&ListParams::default()).await.unwrap().items;
        assert!(!listed.is_empty(), "the churn leaves ConfigMaps");
        let listers = [
            ("early", early_config_maps.lister()),
            ("late", late.as_ref().unwrap().1.lister()),
        ];
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let problems: Vec<String> = listers
                .iter()
                .flat_map(|(which, lister)| {
                    config_map_disagreements(lister, &listed, &ns)
                        .into_iter()
                        .map(move |p| format!("{which}: {p}"))
                })
                .chain(
                    metadata_disagreements(&early_metadata.lister(), &listed)
                        .into_iter()
                        .map(|p| format!("metadata: {p}")),
                )
                .collect();
            if problems.is_empty() {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "round {round}: the foreign indexes disagree with the server:\n{}",
                problems.join("\n")
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // The churn reached every kind of key.
    let lister = early_config_maps.lister();
    assert!(BACKUPS.iter().all(|b| !lister.by_backup(*b).is_empty()));
    assert!(TIERS.iter().all(|t| !lister.by_tier(*t).is_empty()));
    assert!(SOURCES.iter().all(|s| !lister.by_source(*s).is_empty()));

    early.shutdown().await;
    if let Some((factory, _)) = late {
        factory.shutdown().await;
    }
    env.delete_namespace(&ns).await.unwrap();
}

/// A CRD whose kind is the built-in `apps/v1` Deployment's: same kind, another group.
mod ours {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
    #[kube(
        group = "derive.informer.example.com",
        version = "v1",
        kind = "Deployment",
        namespaced
    )]
    pub(crate) struct DeploymentSpec {
        pub(crate) replicas: u32,
    }
}

/// Owner indexes of ConfigMaps by a Deployment, built-in or ours: typed and explicit.
#[derive(Informable)]
#[informable(
    kind = ConfigMap,
    foreign,
    index(name = "by_deployment", owner(type = Deployment, controller, name)),
    index(name = "by_our_deployment", owner(type = ours::Deployment, controller, name)),
    index(name = "by_apps_deployment_uid", owner(kind = "Deployment", group = "apps", controller)),
    index(
        name = "by_our_deployment_uid",
        owner(kind = "Deployment", api_version = "derive.informer.example.com/v1", controller)
    )
)]
struct OwnedConfigMapIndexes;

/// A ConfigMap with the given owner references.
fn owned_config_map(name: &str, owners: Vec<OwnerReference>) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            owner_references: Some(owners),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

/// Every query of the owner indexes, cluster-wide and in `namespace`, against the
/// server's list filtered by group, kind, controller and name or UID; empty when they
/// agree.
fn owner_disagreements(
    lister: &Lister<ConfigMap>,
    listed: &[ConfigMap],
    namespace: &str,
    apps_uid: &str,
    our_uid: &str,
) -> Vec<String> {
    let controlled_by = |api_version: &'static str| {
        move |c: &ConfigMap| {
            c.owner_references().iter().any(|r| {
                r.controller == Some(true)
                    && r.kind == "Deployment"
                    && r.api_version == api_version
                    && r.name == "web"
            })
        }
    };
    let apps = controlled_by("apps/v1");
    let ours = controlled_by("derive.informer.example.com/v1");
    let mut problems = Vec::new();
    let mut compare =
        |what: &str, cached: Vec<Arc<ConfigMap>>, filter: &dyn Fn(&ConfigMap) -> bool| {
            let cached = sorted_names::<ConfigMap>(cached);
            let expected = sorted_names::<ConfigMap>(listed.iter().filter(|c| filter(c)));
            if cached != expected {
                problems.push(format!("{what}: cache {cached:?}, server {expected:?}"));
            }
        };
    compare("by_deployment(web)", lister.by_deployment("web"), &apps);
    compare(
        "by_our_deployment(web)",
        lister.by_our_deployment("web"),
        &ours,
    );
    compare(
        "by_apps_deployment_uid",
        lister.by_apps_deployment_uid(apps_uid),
        &apps,
    );
    compare(
        "by_our_deployment_uid",
        lister.by_our_deployment_uid(our_uid),
        &ours,
    );
    compare(
        "namespaced by_deployment(web)",
        lister.namespaced(namespace).by_deployment("web"),
        &apps,
    );
    compare(
        "namespaced by_our_deployment(web)",
        lister.namespaced(namespace).by_our_deployment("web"),
        &ours,
    );
    // The UID of the other group's owner is never a key of the index.
    compare(
        "by_our_deployment_uid(apps uid)",
        lister.by_our_deployment_uid(apps_uid),
        &|_| false,
    );
    compare(
        "by_apps_deployment_uid(our uid)",
        lister.by_apps_deployment_uid(our_uid),
        &|_| false,
    );
    problems
}

/// Our CRD `Deployment` and the built-in `apps/v1` Deployment, both named `web`, each
/// control ConfigMaps in one namespace: the owner indexes, typed and explicit, answer
/// only their own group's children, through creates, a change of controller and
/// deletes; a comparison of kinds alone would have mixed them.
#[tokio::test]
async fn owner_indexes_tell_our_deployment_from_the_built_in_one() {
    let env = TestEnv::shared().await.unwrap();
    env.install_crd(&ours::Deployment::crd()).await.unwrap();
    let ns = env.create_namespace("derive-owner-groups").await.unwrap();
    let client = env.client().unwrap();
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), &ns);

    let built_in: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "web" },
        "spec": {
            "selector": { "matchLabels": { "app": "web" } },
            "template": {
                "metadata": { "labels": { "app": "web" } },
                "spec": { "containers": [{ "name": "web", "image": "nginx" }] },
            },
        },
    }))
    .unwrap();
    let built_in = Api::<Deployment>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &built_in)
        .await
        .unwrap();
    let ours = Api::<ours::Deployment>::namespaced(client.clone(), &ns)
        .create(
            &PostParams::default(),
            &ours::Deployment::new("web", ours::DeploymentSpec { replicas: 1 }),
        )
        .await
        .unwrap();
    let apps_owner = built_in.controller_owner_ref(&()).unwrap();
    let our_owner = ours.controller_owner_ref(&()).unwrap();
    assert_eq!(
        (apps_owner.kind.as_str(), apps_owner.name.as_str()),
        (our_owner.kind.as_str(), our_owner.name.as_str()),
        "the two owners differ only in their API group"
    );
    assert_eq!(apps_owner.api_version, "apps/v1");
    assert_eq!(our_owner.api_version, "derive.informer.example.com/v1");
    let apps_uid = apps_owner.uid.clone();
    let our_uid = our_owner.uid.clone();
    let not_controller = |owner: &OwnerReference| OwnerReference {
        controller: Some(false),
        block_owner_deletion: None,
        ..owner.clone()
    };

    let factory = SharedInformerFactory::new(
        client.clone(),
        FactoryConfig::default().namespace(ns.clone()),
    );
    let informer = factory.informer::<ConfigMap>();
    OwnedConfigMapIndexes::add_to(&informer.indexer());
    factory.start();
    assert!(factory.wait_for_cache_sync().await.is_ok());
    let lister = informer.lister();

    // Side by side: children of each, and one controlled by ours that also lists the
    // built-in one as a plain owner.
    for i in 0..3 {
        for (prefix, owner) in [("apps", &apps_owner), ("ours", &our_owner)] {
            config_maps
                .create(
                    &PostParams::default(),
                    &owned_config_map(&format!("{prefix}-{i}"), vec![owner.clone()]),
                )
                .await
                .unwrap();
        }
    }
    config_maps
        .create(
            &PostParams::default(),
            &owned_config_map(
                "mixed",
                vec![our_owner.clone(), not_controller(&apps_owner)],
            ),
        )
        .await
        .unwrap();

    let agree = |stage: &'static str| {
        let config_maps = config_maps.clone();
        let lister = lister.clone();
        let (ns, apps_uid, our_uid) = (ns.clone(), apps_uid.clone(), our_uid.clone());
        async move {
            let listed = config_maps
                .list(&ListParams::default())
                .await
                .unwrap()
                .items;
            let deadline = tokio::time::Instant::now() + WAIT;
            loop {
                let problems = owner_disagreements(&lister, &listed, &ns, &apps_uid, &our_uid);
                if problems.is_empty() {
                    return listed;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{stage}: the owner indexes disagree with the server:\n{}",
                    problems.join("\n")
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    let listed = agree("created").await;
    assert_eq!(
        sorted_names::<ConfigMap>(lister.by_deployment("web")),
        ["apps-0", "apps-1", "apps-2"]
    );
    assert_eq!(
        sorted_names::<ConfigMap>(lister.by_our_deployment("web")),
        ["mixed", "ours-0", "ours-1", "ours-2"]
    );
    // What a comparison of kinds alone would have answered: the children of both.
    let by_kind_alone = listed
        .iter()
        .filter(|c| {
            c.owner_references()
                .iter()
                .any(|r| r.controller == Some(true) && r.kind == "Deployment" && r.name == "web")
        })
        .count();
    assert_eq!(by_kind_alone, 7);

    // A child changes hands (ours takes `apps-0` over), and one of ours goes away.
    let take_over = serde_json::json!({ "metadata": { "ownerReferences": [our_owner] } });
    config_maps
        .patch("apps-0", &PatchParams::default(), &Patch::Merge(&take_over))
        .await
        .unwrap();
    config_maps
        .delete("ours-1", &DeleteParams::default())
        .await
        .unwrap();
    agree("after a change of controller and a delete").await;
    assert_eq!(
        sorted_names::<ConfigMap>(lister.by_deployment("web")),
        ["apps-1", "apps-2"]
    );
    assert_eq!(
        sorted_names::<ConfigMap>(lister.by_our_deployment_uid(our_uid.as_str())),
        ["apps-0", "mixed", "ours-0", "ours-2"]
    );

    factory.shutdown().await;
    env.delete_namespace(&ns).await.unwrap();
}
