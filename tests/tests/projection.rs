//! Projections against a real API server: a projection informer and a full
//! informer of Pods agree on every projected field through creates, updates,
//! deletes, a relist after 410 Gone and a restart; a controller whose primary and
//! owned types are projections converges; the cache-size gauges move with the
//! objects. (A CRD projection: `custom_resources.rs`.) A projection reads what the full
//! type reads from the server's own JSON, look-alike keys, `null`s and drift included:
//! `projection/raw_json.rs`.

mod common;
#[path = "projection/raw_json.rs"]
mod raw_json;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::scrape::{scrape, value};
use common::{eventually, spawn_run, spawn_until_stopped as spawn};
use informer::controller::Action;
use informer::controller::{Context, Controller, backoff};
use informer::factory::{FactoryConfig, SharedInformerFactory};
use informer::informable::Informable;
use informer::metrics::Metrics;
use informer::metrics::prometheus_client::registry::Registry;
use informer::object::{Meta, Object};
use informer::projection::{Projection, Shared, shared_size};
use informer::shared_informer::{SharedIndexInformer, wait_for_cache_sync};
use informer::testenv::TestEnv;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, PodSpec, PodStatus, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::PartialObjectMeta;
use kube::{Resource, ResourceExt};
use tokio::sync::OnceCell;

const WAIT: Duration = Duration::from_secs(30);

/// What a controller of Pods reads: slim metadata, node, containers' images, phase.
#[derive(Projection, Clone, Debug)]
#[projection(of = Pod)]
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

/// What a projection's metadata holds of an object's: the fields of the default
/// `ProjectedMeta`.
fn projected_meta(meta: &ObjectMeta) -> ObjectMeta {
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

/// The projected fields of a full Pod, as a projection holds them.
fn projected(pod: &Pod) -> (ObjectMeta, Option<PodViewSpec>, Option<PodViewStatus>) {
    let metadata = projected_meta(&pod.metadata);
    let spec = pod.spec.as_ref().map(|spec| PodViewSpec {
        node_name: spec.node_name.clone(),
        containers: spec
            .containers
            .iter()
            .map(|c| ContainerImage {
                name: c.name.clone(),
                image: c.image.clone(),
            })
            .collect(),
    });
    let status = pod.status.as_ref().map(|status| PodViewStatus {
        phase: status.phase.clone(),
        pod_ip: status.pod_ip.clone(),
    });
    (metadata, spec, status)
}

/// Whether the two caches hold the same Pods with the same projected fields.
fn agree(full: &SharedIndexInformer<Pod>, view: &SharedIndexInformer<PodView>) -> bool {
    let full: BTreeMap<String, _> = full
        .indexer()
        .list()
        .iter()
        .map(|pod| (pod.name_any(), projected(pod)))
        .collect();
    let view: BTreeMap<String, _> = view
        .indexer()
        .list()
        .iter()
        .map(|pod| {
            (
                pod.name_any(),
                (pod.metadata.clone(), pod.spec.clone(), pod.status.clone()),
            )
        })
        .collect();
    full == view
}

fn pod(name: &str, image: &str, node: usize) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": name,
            "labels": {"app": "web"},
            "annotations": {"note": "not projected"},
            "finalizers": ["example.com/hold"],
        },
        "spec": {
            "nodeName": format!("node-{node}"),
            "containers": [
                {"name": "app", "image": image, "args": ["--port", "8080"],
                 "env": [{"name": "A", "value": "1"}], "resources": {"limits": {"cpu": "1"}}},
                {"name": "sidecar", "image": "registry.example.com/sidecar:1"},
            ],
            "volumes": [{"name": "cache", "emptyDir": {}}],
        },
    }))
    .expect("a valid Pod")
}

/// A control plane without the watch cache: compacting etcd gives a 410 at once.
async fn uncached_env() -> &'static TestEnv {
    static ENV: OnceCell<TestEnv> = OnceCell::const_new();
    ENV.get_or_init(|| async { TestEnv::builder().watch_cache(false).start().await.unwrap() })
        .await
}

fn informers(
    client: kube::Client,
    ns: &str,
) -> (SharedIndexInformer<Pod>, SharedIndexInformer<PodView>) {
    (
        SharedIndexInformer::new(Api::<Pod>::namespaced(client.clone(), ns)),
        SharedIndexInformer::new(Api::<PodView>::namespaced(client, ns)),
    )
}

async fn set_phase(api: &Api<Pod>, name: &str, phase: &str, ip: &str) {
    let status = serde_json::json!({"status": {"phase": phase, "podIP": ip}});
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projection_and_the_full_type_agree_through_changes_a_relist_and_a_restart() {
    let env = uncached_env().await;
    let proxy = env.fault_proxy().await.unwrap();
    let ns = env.create_namespace("projection").await.unwrap();
    let api = Api::<Pod>::namespaced(env.client().unwrap(), &ns);
    for i in 0..6 {
        let pod = pod(&format!("web-{i}"), &format!("nginx:1.{i}"), i);
        api.create(&PostParams::default(), &pod).await.unwrap();
    }
    set_phase(&api, "web-0", "Running", "10.1.0.1").await;

    let (full, view) = informers(proxy.client().unwrap(), &ns);
    let running = (spawn_run(&full), spawn_run(&view));
    wait_for_cache_sync(&[&full, &view]).await;
    assert_eq!(view.indexer().len(), 6);
    assert!(agree(&full, &view));
    let cached = view.lister().namespaced(&ns).get("web-0").unwrap();
    assert_eq!(
        cached.status.as_ref().unwrap().phase.as_deref(),
        Some("Running")
    );
    assert_eq!(cached.metadata.annotations, None, "slim metadata");

    // Updates of projected fields (an image, a label, the phase), of fields the
    // projection skips (an annotation), a delete held by a finalizer, a delete.
    let image =
        serde_json::json!({"spec": {"containers": [{"name": "app", "image": "nginx:2.0"}]}});
    api.patch("web-1", &PatchParams::default(), &Patch::Strategic(&image))
        .await
        .unwrap();
    let label = serde_json::json!({"metadata": {"labels": {"tier": "front"}, "annotations": {"note": "changed"}}});
    api.patch("web-2", &PatchParams::default(), &Patch::Merge(&label))
        .await
        .unwrap();
    set_phase(&api, "web-3", "Succeeded", "10.1.0.3").await;
    api.delete("web-4", &DeleteParams::default()).await.unwrap();
    let release = serde_json::json!({"metadata": {"finalizers": null}});
    api.patch("web-5", &PatchParams::default(), &Patch::Merge(&release))
        .await
        .unwrap();
    // Without a kubelet, only a deletion without grace period removes a Pod at once.
    let now = DeleteParams::default().grace_period(0);
    api.delete("web-5", &now).await.unwrap();
    eventually("the changes in both caches", WAIT, || {
        view.indexer().len() == 5 && agree(&full, &view)
    })
    .await;
    let web_1 = view.lister().namespaced(&ns).get("web-1").unwrap();
    assert_eq!(
        web_1.spec.as_ref().unwrap().containers[0].image.as_deref(),
        Some("nginx:2.0")
    );
    let web_4 = view.lister().namespaced(&ns).get("web-4").unwrap();
    assert!(
        web_4.metadata.deletion_timestamp.is_some(),
        "held by its finalizer"
    );

    // Cut off while things change, etcd compacted: both relist after 410 Gone.
    proxy.disconnect().await;
    api.patch("web-0", &PatchParams::default(), &Patch::Strategic(&image))
        .await
        .unwrap();
    api.delete("web-2", &now).await.unwrap();
    api.patch("web-2", &PatchParams::default(), &Patch::Merge(&release))
        .await
        .unwrap();
    api.create(&PostParams::default(), &pod("web-6", "nginx:3.0", 6))
        .await
        .unwrap();
    env.compact_etcd().await.unwrap();
    proxy.reconnect().await.unwrap();
    eventually("the relists after 410", WAIT, || {
        full.reflector_stats().is_some_and(|s| s.expired >= 1)
            && view.reflector_stats().is_some_and(|s| s.expired >= 1)
            && view.lister().namespaced(&ns).get("web-6").is_ok()
            && view.lister().namespaced(&ns).get("web-2").is_err()
            && agree(&full, &view)
    })
    .await;
    running.0.stop().await;
    running.1.stop().await;

    // A restart: new informers list afresh, and agree with each other.
    let (full, view) = informers(env.client().unwrap(), &ns);
    let running = (spawn_run(&full), spawn_run(&view));
    wait_for_cache_sync(&[&full, &view]).await;
    assert_eq!(view.indexer().len(), 5);
    assert!(agree(&full, &view));
    // The projection holds a fraction of the full Pods' bytes.
    let (full_size, view_size) = (full.cache_size(), view.cache_size());
    assert_eq!((full_size.objects, view_size.objects), (5, 5));
    assert!(
        view_size.bytes.unwrap() * 3 < full_size.bytes.unwrap(),
        "{view_size:?} against {full_size:?}"
    );
    running.0.stop().await;
    running.1.stop().await;
}

/// A new namespace, and a factory in it observed by metrics in a registry of its own.
async fn metered_factory(
    env: &TestEnv,
    namespace: &str,
) -> (String, Registry, SharedInformerFactory) {
    let ns = env.create_namespace(namespace).await.unwrap();
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryConfig::default()
            .namespace(ns.clone())
            .metrics(&metrics),
    );
    (ns, registry, factory)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_size_gauges_move_with_the_objects_and_name_the_projection() {
    let env = TestEnv::shared().await.unwrap();
    let (ns, registry, factory) = metered_factory(env, "projection-gauges").await;
    let full = factory.informer::<Pod>();
    let view = factory.informer::<PodView>();
    assert_eq!(factory.len(), 2, "two informers of Pods, one per type");
    factory.start();
    factory.wait_for_cache_sync().await.unwrap();
    let objects = |projection: bool| {
        let series = if projection {
            format!("informer_cache_objects{{informer=\"Pod in {ns}\",projection=\"PodView\"}}")
        } else {
            format!("informer_cache_objects{{informer=\"Pod in {ns}\"}}")
        };
        value(&scrape(&registry), &series)
    };
    let bytes = |projection: bool| {
        let series = if projection {
            format!("informer_cache_bytes{{informer=\"Pod in {ns}\",projection=\"PodView\"}}")
        } else {
            format!("informer_cache_bytes{{informer=\"Pod in {ns}\"}}")
        };
        value(&scrape(&registry), &series)
    };
    assert_eq!(objects(true), Some(0.0));
    assert_eq!(bytes(true), None, "nothing decoded yet: no estimate");

    let api = Api::<Pod>::namespaced(env.client().unwrap(), &ns);
    for i in 0..8 {
        let mut pod = pod(&format!("web-{i}"), "nginx:1", i);
        pod.metadata.finalizers = None;
        api.create(&PostParams::default(), &pod).await.unwrap();
    }
    eventually("eight Pods in the gauges", WAIT, || {
        objects(true) == Some(8.0) && objects(false) == Some(8.0)
    })
    .await;
    let (view_bytes, full_bytes) = (bytes(true).unwrap(), bytes(false).unwrap());
    assert!(
        view_bytes > 0.0 && view_bytes * 3.0 < full_bytes,
        "{view_bytes} {full_bytes}"
    );
    assert_eq!(view.cache_size().bytes, Some(view_bytes as u64));
    assert_eq!(full.cache_size().bytes, Some(full_bytes as u64));
    for i in 0..4 {
        api.delete(
            &format!("web-{i}"),
            &DeleteParams::default().grace_period(0),
        )
        .await
        .unwrap();
    }
    eventually("four Pods left in the gauges", WAIT, || {
        objects(true) == Some(4.0) && bytes(true).is_some_and(|b| b < view_bytes)
    })
    .await;
    factory.shutdown().await;
}

/// The same Pods with their repeating values shared: the node and the container list.
#[derive(Projection, Clone, Debug)]
#[projection(of = Pod)]
struct SharedView {
    metadata: ObjectMeta,
    spec: Option<SharedViewSpec>,
}

#[derive(Projection, Clone, Debug, Default)]
#[projection(of = PodSpec)]
struct SharedViewSpec {
    node_name: Option<Shared<String>>,
    containers: Shared<Vec<SharedContainer>>,
}

#[derive(Projection, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[projection(of = Container)]
struct SharedContainer {
    name: String,
    image: Option<String>,
}

/// The one test of this binary that makes shared values: [`shared_size`] counts the
/// process's, so every count below is this test's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_values_follow_the_live_objects_through_deletes_and_changes() {
    let env = TestEnv::shared().await.unwrap();
    let (ns, registry, factory) = metered_factory(env, "projection-shared").await;
    let views = factory.informer::<SharedView>();
    factory.start();
    factory.wait_for_cache_sync().await.unwrap();
    let api = Api::<Pod>::namespaced(env.client().unwrap(), &ns);
    // Twelve Pods on three nodes, two templates (images a and b).
    for i in 0..12 {
        let image = if i < 6 { "img:a" } else { "img:b" };
        let mut pod = pod(&format!("web-{i}"), image, i % 3);
        pod.metadata.finalizers = None;
        api.create(&PostParams::default(), &pod).await.unwrap();
    }
    let gauge = || value(&scrape(&registry), "informer_shared_values");
    let images = || {
        let mut images: Vec<String> = views
            .lister()
            .list_all()
            .iter()
            .map(|view| {
                let spec = view.spec.as_ref().unwrap();
                spec.containers[0].image.clone().unwrap()
            })
            .collect();
        images.sort();
        images.dedup();
        images
    };
    eventually("twelve Pods cached", WAIT, || {
        views.lister().list_all().len() == 12
    })
    .await;
    // Three node names and two container lists, however many Pods hold them.
    assert_eq!(shared_size().values, 5);
    assert_eq!(gauge(), Some(5.0));
    let on_node_0 = views
        .lister()
        .list_all()
        .iter()
        .filter(|v| {
            v.spec
                .as_ref()
                .unwrap()
                .node_name
                .as_ref()
                .is_some_and(|n| *n == "node-0")
        })
        .count();
    assert_eq!(on_node_0, 4);
    let lists: Vec<Arc<SharedView>> = views.lister().list_all();
    let same_template = |a: &SharedView, b: &SharedView| {
        Shared::ptr_eq(
            &a.spec.as_ref().unwrap().containers,
            &b.spec.as_ref().unwrap().containers,
        )
    };
    let a: Vec<&Arc<SharedView>> = lists
        .iter()
        .filter(|v| v.spec.as_ref().unwrap().containers[0].image.as_deref() == Some("img:a"))
        .collect();
    assert_eq!(a.len(), 6);
    assert!(a.windows(2).all(|w| same_template(w[0], w[1])));
    drop(a);
    drop(lists);

    // The Pods of template b go: its list goes with them; the nodes stay.
    for i in 6..12 {
        api.delete(
            &format!("web-{i}"),
            &DeleteParams::default().grace_period(0),
        )
        .await
        .unwrap();
    }
    eventually("template b's list gone with its Pods", WAIT, || {
        views.lister().list_all().len() == 6 && shared_size().values == 4
    })
    .await;
    assert_eq!(images(), ["img:a"]);

    // Template a's Pods change image: the old list goes, one new list serves them.
    for i in 0..6 {
        let patch =
            serde_json::json!({"spec": {"containers": [{"name": "app", "image": "img:c"}]}});
        api.patch(
            &format!("web-{i}"),
            &PatchParams::default(),
            &Patch::Strategic(&patch),
        )
        .await
        .unwrap();
    }
    eventually("one list for the changed Pods", WAIT, || {
        images() == ["img:c"] && shared_size().values == 4
    })
    .await;
    assert_eq!(gauge(), Some(4.0));
    factory.shutdown().await;
    drop((views, factory));
    eventually("every value gone with the cache", WAIT, || {
        shared_size().values == 0
    })
    .await;
}

/// The primary: what the controller reads of a ConfigMap (slim metadata with its
/// annotations).
#[derive(Projection, Clone, Debug)]
#[projection(of = ConfigMap, annotations)]
struct Source {
    metadata: ObjectMeta,
    data: Option<BTreeMap<String, String>>,
}

/// The owned type: what it reads of the Secrets it keeps (their owners and keys).
#[derive(Projection, Clone, Debug)]
#[projection(of = Secret)]
struct Copy {
    metadata: ObjectMeta,
    type_: Option<String>,
}

/// Keeps a Secret `{name}-copy` with the ConfigMap's data, and marks the source once
/// with the resourceVersion it first copied (a write conditional on the projection's).
async fn copy(source: Arc<Source>, ctx: Context<Source>) -> Result<Action, kube::Error> {
    let name = format!("{}-copy", source.name_any());
    let secret = serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "ownerReferences": [ctx.controller_reference(&source)]},
        "stringData": source.data.clone().unwrap_or_default(),
    });
    let apply = PatchParams::apply("projection-test").force();
    ctx.api::<Secret>()
        .patch(&name, &apply, &Patch::Apply(&secret))
        .await?;
    if source.annotations().contains_key("example.com/copied") {
        return Ok(Action::Done);
    }
    let mark = serde_json::json!({"metadata": {"annotations": {
        "example.com/copied": source.metadata.resource_version,
    }}});
    match ctx
        .api::<ConfigMap>()
        .if_unchanged_from(&source)
        .patch(&PatchParams::default(), &Patch::Merge(&mark))
        .await
    {
        // A newer version is on its way to the cache: its reconcile marks it.
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(Action::Done),
        other => other.map(|_| Action::Done),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_of_projections_converges() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("projection-ctl").await.unwrap();
    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryConfig::default().namespace(ns.clone()),
    );
    let config_maps = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    let secrets = Api::<Secret>::namespaced(env.client().unwrap(), &ns);
    for i in 0..3 {
        config_maps
            .create(
                &PostParams::default(),
                &common::config_map(&format!("src-{i}"), &format!("v{i}"), &[]),
            )
            .await
            .unwrap();
    }
    let controller = Controller::<Source>::new(&factory)
        .owns::<Copy>()
        .name("projection-copy");
    let running = spawn(|stop| controller.run(copy, backoff, stop));
    let copies = factory.informer::<Copy>();
    let sources = factory.informer::<Source>();
    let converged = |expected: &[(&str, &str)]| {
        expected.iter().all(|(source, value)| {
            let Ok(copy) = copies
                .lister()
                .namespaced(&ns)
                .get(&format!("{source}-copy"))
            else {
                return false;
            };
            let Ok(cm) = sources.lister().namespaced(&ns).get(source) else {
                return false;
            };
            // Owned by the ConfigMap, by group (core) and kind, as for a full Secret.
            let owner = &copy.metadata.owner_references.as_ref().unwrap()[0];
            owner.kind == "ConfigMap"
                && owner.uid == cm.meta().uid.clone().unwrap()
                && copy.type_.as_deref() == Some("Opaque")
                && cm.data.as_ref().is_some_and(|d| d["key"] == *value)
        })
    };
    eventually("a copy of each source", WAIT, || {
        converged(&[("src-0", "v0"), ("src-1", "v1"), ("src-2", "v2")])
    })
    .await;

    // A copy deleted: its owner is reconciled again (the owned projection's owner
    // reference maps to the primary), and the copy comes back with the source's data.
    secrets
        .delete("src-1-copy", &DeleteParams::default())
        .await
        .unwrap();
    let change = serde_json::json!({"data": {"key": "changed"}});
    config_maps
        .patch("src-2", &PatchParams::default(), &Patch::Merge(&change))
        .await
        .unwrap();
    let api = secrets.clone();
    common::eventually_async("the copies back and current", WAIT, || {
        let api = api.clone();
        async move {
            let (Ok(one), Ok(two)) = (api.get("src-1-copy").await, api.get("src-2-copy").await)
            else {
                return false;
            };
            let value = |s: &Secret, v: &str| {
                s.data
                    .as_ref()
                    .is_some_and(|d| d.get("key").map(|b| b.0.as_slice()) == Some(v.as_bytes()))
            };
            value(&one, "v1") && value(&two, "changed")
        }
    })
    .await;
    // Every source is marked with the version it was copied at (the conditional
    // write from the projection's resourceVersion went through).
    eventually("every source marked", WAIT, || {
        sources
            .lister()
            .namespaced(&ns)
            .list(&Default::default())
            .len()
            == 3
    })
    .await;
    common::eventually_async("the marks", WAIT, || {
        let config_maps = config_maps.clone();
        async move {
            let Ok(list) = config_maps.list(&Default::default()).await else {
                return false;
            };
            list.items
                .iter()
                .filter(|cm| cm.name_any().starts_with("src-"))
                .all(|cm| cm.annotations().contains_key("example.com/copied"))
        }
    })
    .await;
    running.stop().await;
    factory.shutdown().await;
}

/// A ConfigMap held with a metadata of its own, not an `ObjectMeta`: not a
/// `kube::Resource`, only an `informer::object::Object` listed and watched as a
/// ConfigMap, its metadata read through `informer::object::Meta`.
#[derive(serde::Deserialize, Clone, Debug)]
struct ConfigMapValue {
    metadata: OwnMeta,
    #[serde(default)]
    data: BTreeMap<String, String>,
}

/// What [`ConfigMapValue`] keeps of the metadata (every other key skipped by serde).
#[derive(serde::Deserialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
struct OwnMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    owner_references: Vec<OwnerReference>,
    #[serde(default)]
    finalizers: Vec<String>,
    deletion_timestamp: Option<Time>,
}

impl Meta for OwnMeta {
    fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
    fn generate_name(&self) -> Option<&str> {
        None
    }
    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }
    fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }
    fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }
    fn generation(&self) -> Option<i64> {
        None
    }
    fn labels(&self) -> Option<&BTreeMap<String, String>> {
        self.labels.as_ref()
    }
    fn annotations(&self) -> Option<&BTreeMap<String, String>> {
        None
    }
    fn owner_references(&self) -> &[OwnerReference] {
        &self.owner_references
    }
    fn deletion_timestamp(&self) -> Option<&Time> {
        self.deletion_timestamp.as_ref()
    }
    fn finalizers(&self) -> &[String] {
        &self.finalizers
    }
}

impl Object for ConfigMapValue {
    type Resource = ConfigMap;
    type Meta = OwnMeta;

    fn metadata(&self) -> &OwnMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut OwnMeta {
        &mut self.metadata
    }
}

/// The names of `selected`, sorted.
fn sorted_names<K: Object>(selected: Vec<Arc<K>>) -> Vec<String> {
    let mut names: Vec<String> = selected
        .iter()
        .map(|object| object.metadata().name().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// ConfigMaps as `name -> (resourceVersion, labels, data)`.
type Versions = BTreeMap<String, (String, BTreeMap<String, String>, BTreeMap<String, String>)>;

/// The server's ConfigMaps, as [`Versions`].
async fn server_config_maps(api: &Api<ConfigMap>) -> Versions {
    api.list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|cm| {
            let version = cm.resource_version().unwrap_or_default();
            let labels = cm.metadata.labels.clone().unwrap_or_default();
            (
                cm.name_any(),
                (version, labels, cm.data.unwrap_or_default()),
            )
        })
        .collect()
}

/// The cache's, the same way.
fn cached_config_maps(lister: &informer::lister::Lister<ConfigMapValue>) -> Versions {
    lister
        .list_all()
        .iter()
        .map(|cm| {
            let meta = cm.metadata();
            (
                meta.name().unwrap().to_owned(),
                (
                    meta.resource_version().unwrap_or_default().to_owned(),
                    meta.labels().cloned().unwrap_or_default(),
                    cm.data.clone(),
                ),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_type_with_a_metadata_of_its_own_is_cached_listed_and_selected_like_a_resource() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("own-meta").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    for (name, tier) in [("a", "web"), ("b", "web"), ("c", "db")] {
        let cm = common::config_map(name, &format!("v-{name}"), &[("tier", tier)]);
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
    // Another namespace's ConfigMap, which the factory's namespace leaves out.
    let other = env.create_namespace("own-meta-other").await.unwrap();
    Api::<ConfigMap>::namespaced(env.client().unwrap(), &other)
        .create(&PostParams::default(), &common::config_map("x", "v", &[]))
        .await
        .unwrap();

    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryConfig::default().namespace(ns.clone()),
    );
    let informer = factory.informer::<ConfigMapValue>();
    let lister = informer.lister();
    factory.start();
    factory.wait_for_cache_sync().await.unwrap();
    assert_eq!(cached_config_maps(&lister), server_config_maps(&api).await);
    let a = lister.namespaced(&ns).get("a").unwrap();
    assert_eq!(a.data.get("key").map(String::as_str), Some("v-a"));
    assert!(a.metadata().uid().is_some());
    let web = "tier=web".parse().unwrap();
    let names = sorted_names::<ConfigMapValue>;
    assert_eq!(names(lister.list(&web)), ["a", "b"]);

    // A label moved, a value changed, one deleted: the cache follows the server.
    let relabel =
        serde_json::json!({"metadata": {"labels": {"tier": "web"}}, "data": {"key": "v-c2"}});
    api.patch("c", &PatchParams::default(), &Patch::Merge(&relabel))
        .await
        .unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let server = server_config_maps(&api).await;
    eventually("the cache holds what the server holds", WAIT, || {
        cached_config_maps(&lister) == server
    })
    .await;
    assert_eq!(names(lister.list(&web)), ["b", "c"]);
    assert!(lister.namespaced(&ns).get("a").unwrap_err().is_not_found());
    factory.shutdown().await;
}

/// A ConfigMap's data with [`CompactMeta`](informer::projection::CompactMeta), indexed
/// by a data value and by its owner's name.
#[derive(Projection, Informable, Clone, Debug)]
#[projection(of = ConfigMap)]
#[informable(
    index(name = "by_key", path = "data['key']"),
    index(name = "by_owner", owner(type = ConfigMap, controller, name)),
    index(name = "by_tier", path = "metadata.labels['tier']")
)]
struct CompactConfigMap {
    metadata: informer::projection::CompactMeta,
    data: Option<BTreeMap<String, String>>,
}

/// ConfigMaps as `name -> (uid, resourceVersion, labels, owners, data)`.
type Identities = BTreeMap<
    String,
    (
        String,
        String,
        BTreeMap<String, String>,
        Vec<OwnerReference>,
        BTreeMap<String, String>,
    ),
>;

/// One ConfigMap, as [`Identities`].
fn identity(meta: &impl Meta, data: Option<&BTreeMap<String, String>>) -> Identities {
    let name = meta.name().unwrap().to_owned();
    let mut one = Identities::new();
    one.insert(
        name,
        (
            meta.uid().unwrap().to_owned(),
            meta.resource_version().unwrap().to_owned(),
            meta.labels().cloned().unwrap_or_default(),
            meta.owner_references().to_vec(),
            data.cloned().unwrap_or_default(),
        ),
    );
    one
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projection_with_compact_metadata_follows_the_server_its_labels_and_owners_shared() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("compact-meta").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    let owner = api
        .create(
            &PostParams::default(),
            &common::config_map("owner", "v", &[]),
        )
        .await
        .unwrap();
    let owned_by = serde_json::json!([{
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
        "uid": owner.uid().unwrap(), "controller": true,
    }]);
    for (name, tier) in [("a", "web"), ("b", "web"), ("c", "db")] {
        let mut cm = common::config_map(name, &format!("v-{name}"), &[("tier", tier)]);
        cm.metadata.owner_references = serde_json::from_value(owned_by.clone()).unwrap();
        api.create(&PostParams::default(), &cm).await.unwrap();
    }
    let server = || async {
        let list = api.list(&Default::default()).await.unwrap();
        list.items
            .iter()
            .flat_map(|cm| identity(&cm.metadata, cm.data.as_ref()))
            .collect::<Identities>()
    };

    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryConfig::default().namespace(ns.clone()),
    );
    let informer = factory.informable::<CompactConfigMap>();
    let lister = informer.lister();
    // The metadata-only informer of the ConfigMaps the projection is listed as, with
    // the projection's owner index.
    let metadata = factory.metadata_informable::<CompactConfigMap>();
    let cached = || {
        lister
            .list_all()
            .iter()
            .flat_map(|cm| identity(cm.metadata(), cm.data.as_ref()))
            .collect::<Identities>()
    };
    factory.start();
    factory.wait_for_cache_sync().await.unwrap();
    assert_eq!(cached(), server().await);
    let get = |name: &str| lister.namespaced(&ns).get(name).unwrap();
    let owned = sorted_names::<PartialObjectMeta<ConfigMap>>;
    // One label map and one owner list for the objects that have equal ones.
    let (a, b, c) = (get("a"), get("b"), get("c"));
    assert!(std::ptr::eq(
        a.metadata().labels().unwrap(),
        b.metadata().labels().unwrap()
    ));
    assert!(!std::ptr::eq(
        a.metadata().labels().unwrap(),
        c.metadata().labels().unwrap()
    ));
    assert!(std::ptr::eq(
        a.metadata().owner_references(),
        c.metadata().owner_references()
    ));
    let web = "tier=web".parse().unwrap();
    let names = sorted_names::<CompactConfigMap>;
    assert_eq!(names(lister.list(&web)), ["a", "b"]);
    assert_eq!(names(lister.by_key("v-b")), ["b"]);
    assert_eq!(names(lister.by_owner("owner")), ["a", "b", "c"]);
    assert_eq!(names(lister.by_tier("web")), ["a", "b"]);
    assert_eq!(owned(metadata.lister().by_tier("db")), ["c"]);
    assert_eq!(owned(metadata.lister().by_owner("owner")), ["a", "b", "c"]);
    drop((a, b, c));

    // A label moved, a value changed, one deleted, an owner dropped: the cache
    // follows the server.
    let relabel =
        serde_json::json!({"metadata": {"labels": {"tier": "web"}}, "data": {"key": "v-c2"}});
    api.patch("c", &PatchParams::default(), &Patch::Merge(&relabel))
        .await
        .unwrap();
    let orphan = serde_json::json!({"metadata": {"ownerReferences": null}});
    api.patch("b", &PatchParams::default(), &Patch::Merge(&orphan))
        .await
        .unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let server = server().await;
    eventually("the cache holds what the server holds", WAIT, || {
        cached() == server
    })
    .await;
    assert_eq!(names(lister.list(&web)), ["b", "c"]);
    assert!(lister.namespaced(&ns).get("a").unwrap_err().is_not_found());
    assert_eq!(names(lister.by_key("v-c2")), ["c"]);
    assert_eq!(names(lister.by_owner("owner")), ["c"]);
    assert_eq!(names(lister.by_tier("web")), ["b", "c"]);
    assert!(lister.by_tier("db").is_empty());
    eventually("the metadata-only cache follows", WAIT, || {
        owned(metadata.lister().by_owner("owner")) == ["c"]
    })
    .await;
    let (b, c) = (get("b"), get("c"));
    assert!(std::ptr::eq(
        b.metadata().labels().unwrap(),
        c.metadata().labels().unwrap()
    ));
    assert!(b.metadata().owner_references().is_empty());
    assert_eq!(c.metadata().owner_references()[0].name, "owner");
    factory.shutdown().await;
}
