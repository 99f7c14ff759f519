//! CRD controller: a custom resource with typed indexes, queried from the cache.
//!
//! Defines a `Widget` custom resource (`#[derive(CustomResource)]`, with a schemars
//! schema) whose spec derives `Informable`: an index by the spec's `color`, one by its
//! `size` (keys are `u32`), and one by the controlling owner, another Widget, the
//! "kit" it belongs to. The example installs the CRD, creates two kits and their
//! parts, starts a `SharedInformerFactory`, and once the cache has synced a small
//! controller reconciles each kit by asking the lister for the widgets it owns
//! (`lister.by_kit(uid)`), never the API server. Then it moves a part to the other
//! kit and reconciles again when the index shows the move.
//!
//! Run: `cargo run --bin crd_controller` (uses your kubeconfig's cluster, or starts an
//! embedded control plane when none is configured).

use std::time::Duration;

use informer::factory::{FactoryOptions, SharedInformerFactory};
use informer::informable::Informable;
use informer::lister::Lister;
use informer_examples::Cluster;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A widget: a part of a kit, or a kit itself.
#[derive(CustomResource, Informable, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "examples.informer.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    printcolumn = r#"{"name":"Color","type":"string","jsonPath":".spec.color"}"#
)]
#[informable(
    index(name = "by_color", path = "spec.color"),
    index(name = "by_size", path = "spec.size"),
    index(name = "by_kit", owner(kind = "Widget", controller))
)]
struct WidgetSpec {
    /// The widget's color.
    color: String,
    /// Its size, 1 to 3.
    size: u32,
}

const API_VERSION: &str = "examples.informer.dev/v1";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    informer_examples::init_tracing();
    let cluster = Cluster::connect().await?;
    install_crd(&cluster.client).await?;
    let namespace = cluster.create_namespace("crd-controller").await?;
    let api = Api::<Widget>::namespaced(cluster.client.clone(), &namespace);

    let kit_a = create(&api, "kit-a", "red", 3, None).await?;
    let kit_b = create(&api, "kit-b", "blue", 3, None).await?;
    for (name, color, size, kit) in [
        ("bolt", "red", 1, &kit_a),
        ("nut", "red", 1, &kit_a),
        ("gear", "blue", 2, &kit_b),
        ("spring", "red", 2, &kit_b),
    ] {
        create(&api, name, color, size, Some(kit)).await?;
    }

    // The factory's informer maintains the derived indexes from the first object on.
    let factory = SharedInformerFactory::new(
        cluster.client.clone(),
        FactoryOptions::default().namespace(namespace.clone()),
    );
    let widgets = factory.informable::<Widget>();
    factory.start();
    // Says which informer did not sync in time, and why: were the CRD not installed,
    // "widgets.examples.informer.dev is not served by the API server".
    factory
        .wait_for_cache_sync_within(Duration::from_secs(60))
        .await?;
    let lister = widgets.lister();

    // Index queries by the spec: a String key and a u32 key.
    println!("Red widgets: {}", names(&lister.by_color("red")));
    println!("Size 3 widgets: {}", names(&lister.by_size(3u32)));
    for kit in ["kit-a", "kit-b"] {
        reconcile(&lister, &namespace, kit)?;
    }

    // Move `spring` to kit-a; reconcile again once the cache's index shows it.
    let kit_a_uid = kit_a.uid().unwrap_or_default();
    let patch = serde_json::json!({ "metadata": { "ownerReferences": [owner_ref(&kit_a)] } });
    api.patch("spring", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    println!("Moved spring to kit-a");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while lister.by_kit(kit_a_uid.as_str()).len() != 3 {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the move never reached the cache"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for kit in ["kit-a", "kit-b"] {
        reconcile(&lister, &namespace, kit)?;
    }

    factory.shutdown().await;
    cluster.delete_namespace(&namespace).await?;
    Ok(())
}

/// The controller's reconcile: reads the kit and its parts from the cache only.
fn reconcile(lister: &Lister<Widget>, namespace: &str, kit: &str) -> anyhow::Result<()> {
    let kit = lister.namespaced(namespace).get(kit)?;
    let parts = lister.by_kit(kit.uid().unwrap_or_default().as_str());
    let total: u32 = parts.iter().map(|part| part.spec.size).sum();
    let mut listed: Vec<String> = parts
        .iter()
        .map(|part| format!("{} ({})", part.name_any(), part.spec.color))
        .collect();
    listed.sort();
    let count = match parts.len() {
        1 => "1 part".to_owned(),
        n => format!("{n} parts"),
    };
    println!(
        "{} has {count}, total size {total}: {}",
        kit.name_any(),
        listed.join(", ")
    );
    Ok(())
}

/// The sorted names of `widgets`.
fn names(widgets: &[std::sync::Arc<Widget>]) -> String {
    let mut names: Vec<String> = widgets.iter().map(|w| w.name_any()).collect();
    names.sort();
    names.join(", ")
}

/// A controller reference to `kit`.
fn owner_ref(kit: &Widget) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": API_VERSION,
        "kind": "Widget",
        "name": kit.name_any(),
        "uid": kit.uid(),
        "controller": true,
    })
}

/// Creates a widget, owned by `kit` when given.
async fn create(
    api: &Api<Widget>,
    name: &str,
    color: &str,
    size: u32,
    kit: Option<&Widget>,
) -> anyhow::Result<Widget> {
    let mut widget = Widget::new(
        name,
        WidgetSpec {
            color: color.into(),
            size,
        },
    );
    if let Some(kit) = kit {
        widget.metadata.owner_references = Some(vec![serde_json::from_value(owner_ref(kit))?]);
    }
    Ok(api.create(&PostParams::default(), &widget).await?)
}

/// Installs the Widget CRD (if it is not there yet) and waits until it is served.
async fn install_crd(client: &Client) -> anyhow::Result<()> {
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    match crds.create(&PostParams::default(), &Widget::crd()).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => return Err(error.into()),
    }
    let widgets = Api::<Widget>::all(client.clone());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match widgets.list(&ListParams::default().limit(1)).await {
            Ok(_) => return Ok(()),
            Err(error) if tokio::time::Instant::now() >= deadline => return Err(error.into()),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}
