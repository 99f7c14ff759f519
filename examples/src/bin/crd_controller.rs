//! CRD controller: a custom resource with typed indexes, queried from the cache.
//!
//! Defines a `Widget` custom resource (`#[derive(CustomResource)]`, with a schemars
//! schema) whose spec derives `Informable`: an index by the spec's `color`, one by its
//! `size` (keys are `u32`), and one by the controlling owner, another Widget, the
//! "kit" it belongs to. The example installs the CRD, creates two kits and their
//! parts, and runs a `Controller` of Widgets that `owns` Widgets: a part's change
//! reconciles its kit (through the part's controller reference), and the reconcile
//! lists the kit's parts with a typed index query (`by_kit(uid)`), never the API
//! server. Then it moves a part to the other kit: both kits are reconciled again (the
//! part's old and new owner) and report the move.
//!
//! Run: `cargo run --bin crd_controller` (uses your kubeconfig's cluster, or starts an
//! embedded control plane when none is configured).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use informer::prelude::*;
use informer_examples::Cluster;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{CustomResource, CustomResourceExt, ResourceExt};
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
    index(name = "by_kit", owner(type = Widget, controller))
)]
struct WidgetSpec {
    /// The widget's color.
    color: String,
    /// Its size, 1 to 3.
    size: u32,
}

const API_VERSION: &str = "examples.informer.dev/v1";

/// Parts per kit, as the last reconcile of each kit saw them.
type Seen = Arc<Mutex<BTreeMap<String, usize>>>;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    informer_examples::init_tracing();
    let cluster = Cluster::connect().await?;
    cluster.install_crd(&Widget::crd()).await?;
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
        FactoryConfig::default().namespace(namespace.clone()),
    );
    let widgets = factory.informable::<Widget>();
    let seen = Seen::default();
    let demo = {
        let (seen, lister) = (seen.clone(), widgets.lister());
        async move {
            wait_for(&seen, &[("kit-a", 2), ("kit-b", 2)]).await;
            // Index queries by the spec: a String key and a u32 key.
            println!("Red widgets: {}", names(&lister.by_color("red")));
            println!("Size 3 widgets: {}", names(&lister.by_size(3u32)));
            // Move `spring` to kit-a: both kits hear of it through its owner reference.
            let patch =
                serde_json::json!({ "metadata": { "ownerReferences": [owner_ref(&kit_a)] } });
            println!("Moving spring to kit-a");
            if let Err(error) = api
                .patch("spring", &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                return eprintln!("could not move spring: {error}");
            }
            wait_for(&seen, &[("kit-a", 3), ("kit-b", 1)]).await;
        }
    };
    Controller::<Widget>::new(&factory)
        .owns::<Widget>()
        .run(reconcile_with(seen), backoff, demo)
        .await?;
    factory.shutdown().await;
    cluster.delete_namespace(&namespace).await?;
    Ok(())
}

/// The reconcile of a kit: reads its parts from the cache's `by_kit` index only.
fn reconcile_with(
    seen: Seen,
) -> impl Fn(Arc<Widget>, Context<Widget>) -> std::future::Ready<Result<Action, kube::Error>> {
    move |kit, ctx| {
        if kit.owner_references().is_empty() {
            let parts = ctx.lister::<Widget>().by_kit(kit.uid().unwrap_or_default());
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
            seen.lock()
                .expect("lock")
                .insert(kit.name_any(), parts.len());
        }
        std::future::ready(Ok(Action::Done))
    }
}

/// Waits until the kits' last reconciles saw these part counts (30 s at most).
async fn wait_for(seen: &Seen, counts: &[(&str, usize)]) {
    let done = || {
        counts
            .iter()
            .all(|(kit, n)| seen.lock().expect("lock").get(*kit) == Some(n))
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !done() {
        if tokio::time::Instant::now() >= deadline {
            return eprintln!("the kits were not reconciled to {counts:?} within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The sorted names of `widgets`.
fn names(widgets: &[Arc<Widget>]) -> String {
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
