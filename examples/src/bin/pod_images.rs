//! Pod images: a projection of Pods (only their names, owners, node, phase and
//! container images are cached), indexed by image, and what that saves.
//!
//! Creates three Pods, caches them as `PodView` through a factory, lists the Pods
//! running one image from a typed index, changes one Pod's image (through the full
//! `Pod` type: a projection is never written back) and lists again, then prints what
//! the projection's cache holds beside a cache of the full `Pod`s.
//!
//! Run: `cargo run --bin pod_images` (uses your kubeconfig's cluster, or starts an
//! embedded control plane when none is configured).

use std::time::Duration;

use informer::factory::{FactoryConfig, SharedInformerFactory};
use informer::informable::Informable;
use informer::projection::Projection;
use informer::shared_informer::CacheSize;
use informer_examples::Cluster;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};

/// What this program reads of a Pod. Slim metadata (name, namespace, uid, labels,
/// owners...); `spec.nodeName`, each container's name and image; `status.phase`.
/// Everything else is skipped while decoding, never built.
#[derive(Projection, Informable, Clone, Debug)]
#[projection(of = Pod)]
#[informable(index(name = "by_image", path = "spec.containers.image"))]
struct PodView {
    metadata: ObjectMeta,
    spec: Option<PodViewSpec>,
    status: Option<PodViewStatus>,
}

#[derive(Projection, Clone, Debug, Default)]
#[projection(of = PodSpec)]
struct PodViewSpec {
    node_name: Option<String>,
    containers: Vec<ContainerImage>,
}

#[derive(Projection, Clone, Debug, Default)]
#[projection(of = Container)]
struct ContainerImage {
    name: String,
    image: Option<String>,
}

#[derive(Projection, Clone, Debug, Default)]
#[projection(of = PodStatus)]
struct PodViewStatus {
    phase: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    informer_examples::init_tracing();
    let cluster = Cluster::connect().await?;
    let namespace = cluster.create_namespace("pod-images").await?;
    let pods = Api::<Pod>::namespaced(cluster.client.clone(), &namespace);
    for (name, image) in [
        ("web-0", "nginx:1.27"),
        ("web-1", "nginx:1.27"),
        ("cache-0", "redis:7"),
    ] {
        pods.create(&PostParams::default(), &pod(name, image)?)
            .await?;
    }

    let factory = SharedInformerFactory::new(
        cluster.client.clone(),
        FactoryConfig::default().namespace(namespace.clone()),
    );
    // One informer per type: the projection and (for the comparison at the end) the
    // full Pod are two informers, each listing and watching Pods.
    let views = factory.informable::<PodView>();
    let full = factory.informer::<Pod>();
    factory.start();
    factory
        .wait_for_cache_sync_within(Duration::from_secs(60))
        .await?;
    eventually(|| views.indexer().len() == 3).await?;
    println!("Cached {} Pods as PodView", views.indexer().len());
    print_image(&views, "nginx:1.27");

    // Writes go through the full type; the projection's cache follows the watch.
    let image =
        serde_json::json!({"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}});
    pods.patch("web-1", &PatchParams::default(), &Patch::Strategic(&image))
        .await?;
    eventually(|| views.lister().by_image("nginx:1.28").len() == 1).await?;
    let updated = views.lister().namespaced(&namespace).get("web-1")?;
    for container in updated.spec.iter().flat_map(|spec| &spec.containers) {
        let image = container.image.as_deref().unwrap_or("no image");
        println!(
            "Updated: web-1 runs {image} in container {}",
            container.name
        );
    }
    print_image(&views, "nginx:1.27");

    eventually(|| full.indexer().len() == 3).await?;
    let (view, whole) = (views.cache_size(), full.cache_size());
    println!(
        "Cache: PodView {} Pods, about {} bytes each; Pod {} Pods, about {} bytes each",
        view.objects,
        per_object(view),
        whole.objects,
        per_object(whole)
    );
    factory.shutdown().await;
    cluster.delete_namespace(&namespace).await?;
    Ok(())
}

/// Prints the Pods that run `image`, from the `by_image` index.
fn print_image(views: &informer::shared_informer::SharedIndexInformer<PodView>, image: &str) {
    let mut names: Vec<String> = views
        .lister()
        .by_image(image)
        .iter()
        .map(|pod| {
            let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
            let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
            let (node, phase) = (node.unwrap_or("no node"), phase.unwrap_or("no phase"));
            format!("{} ({node}, {phase})", pod.name_any())
        })
        .collect();
    names.sort();
    println!("Pods running {image}: {}", names.join(", "));
}

fn per_object(size: CacheSize) -> u64 {
    size.bytes.unwrap_or(0) / size.objects.max(1) as u64
}

/// Waits (at most 30 s) until `done`.
async fn eventually(done: impl Fn() -> bool) -> anyhow::Result<()> {
    tokio::time::timeout(Duration::from_secs(30), async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await?;
    Ok(())
}

/// A Pod with one container running `image`, on a node (no scheduler needed), with
/// what a real Pod carries beside: env, args, resources, probes, a volume.
fn pod(name: &str, image: &str) -> anyhow::Result<Pod> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {"app": name.split('-').next()}},
        "spec": {
            "nodeName": "node-1",
            "containers": [{
                "name": "app", "image": image, "args": ["--port", "8080"],
                "env": [{"name": "MODE", "value": "production"}, {"name": "LOG", "value": "info"}],
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}},
                "volumeMounts": [{"name": "cache", "mountPath": "/var/cache"}],
            }],
            "volumes": [{"name": "cache", "emptyDir": {}}],
        },
    }))?)
}
