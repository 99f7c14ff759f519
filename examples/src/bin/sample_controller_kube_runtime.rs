//! Kubernetes' sample-controller on kube-runtime's `Controller`, for comparison with
//! `sample_controller` (ours): the same behaviour, written the way kube-runtime's own
//! examples write it.
//!
//! The Deployment is read from the API server on every reconcile (kube-runtime's
//! `owns` keeps no readable cache) and checked for the Foo's controller reference;
//! events go through kube-runtime's `Recorder`, whose `publish` waits for the API
//! server; the error policy requeues after 5 s, or not at all for an empty
//! `deploymentName`.
//!
//! Both are driven by the same script (`informer_examples::sample_demo`).
//! Run: `cargo run --bin sample_controller_kube_runtime`.

// `foo` names a Foo here, as in sample-controller, not a placeholder.
#![allow(clippy::disallowed_names)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use informer_examples::{Cluster, sample_demo::Demo};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
use kube_runtime::controller::{Action, Controller};
use kube_runtime::events::{Event, EventType, Recorder};
use kube_runtime::watcher;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A Deployment of `replicas` nginx pods named `deploymentName`, owned by the Foo.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "samplecontroller.k8s.io", version = "v1alpha1", kind = "Foo")]
#[kube(namespaced, status = "FooStatus")]
#[kube(annotation("api-approved.kubernetes.io", "unapproved, experimental-only"))]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    /// The name of the Deployment.
    pub deployment_name: String,
    /// Its replicas.
    pub replicas: Option<i32>,
}

/// The state of the Foo's Deployment.
#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FooStatus {
    /// The Deployment's available replicas.
    pub available_replicas: i32,
}

/// Why a Foo could not be synced.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("deployment name missing from the Foo's spec")]
    NoDeploymentName,
    #[error("Resource {0:?} already exists and is not managed by Foo")]
    NotManaged(String),
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

struct Ctx {
    client: Client,
    recorder: Recorder,
}

async fn reconcile(foo: Arc<Foo>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = &foo.spec.deployment_name;
    if name.is_empty() {
        return Err(Error::NoDeploymentName);
    }
    let namespace = foo.namespace().unwrap_or_default();
    let deployments = Api::<Deployment>::namespaced(ctx.client.clone(), &namespace);
    let deployment = match deployments.get_opt(name).await? {
        None => {
            deployments
                .create(&PostParams::default(), &new_deployment(&foo)?)
                .await?
        }
        Some(deployment) if !is_controlled_by(&deployment, &foo) => {
            let error = Error::NotManaged(name.clone());
            let warning = Event {
                type_: EventType::Warning,
                reason: "ErrResourceExists".into(),
                note: Some(error.to_string()),
                action: "Sync".into(),
                secondary: None,
            };
            ctx.recorder.publish(&warning, &foo.object_ref(&())).await?;
            return Err(error);
        }
        Some(deployment) if needs_scaling(&deployment, &foo) => {
            let scale = json!({ "spec": { "replicas": foo.spec.replicas } });
            deployments
                .patch(name, &PatchParams::default(), &Patch::Merge(&scale))
                .await?
        }
        Some(deployment) => deployment,
    };
    let available = deployment.status.and_then(|s| s.available_replicas);
    let status = json!({ "status": { "availableReplicas": available.unwrap_or(0) } });
    Api::<Foo>::namespaced(ctx.client.clone(), &namespace)
        .patch_status(
            &foo.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await?;
    let synced = Event {
        type_: EventType::Normal,
        reason: "Synced".into(),
        note: Some("Foo synced successfully".into()),
        action: "Sync".into(),
        secondary: None,
    };
    ctx.recorder.publish(&synced, &foo.object_ref(&())).await?;
    Ok(Action::await_change())
}

fn error_policy(_foo: Arc<Foo>, error: &Error, _ctx: Arc<Ctx>) -> Action {
    match error {
        Error::NoDeploymentName => Action::await_change(),
        _ => Action::requeue(Duration::from_secs(5)),
    }
}

fn is_controlled_by(deployment: &Deployment, foo: &Foo) -> bool {
    let controller = deployment
        .owner_references()
        .iter()
        .find(|r| r.controller == Some(true));
    controller.is_some_and(|r| Some(&r.uid) == foo.meta().uid.as_ref())
}

/// Whether `deployment` has other replicas than `foo` asks for, if it asks.
fn needs_scaling(deployment: &Deployment, foo: &Foo) -> bool {
    let current = deployment.spec.replicas;
    foo.spec
        .replicas
        .is_some_and(|wanted| current != Some(wanted))
}

/// The Deployment `foo` asks for: `replicas` nginx pods, controlled by `foo`.
fn new_deployment(foo: &Foo) -> serde_json::Result<Deployment> {
    let labels = json!({ "app": "nginx", "controller": foo.name_any() });
    serde_json::from_value(json!({
        "metadata": { "name": foo.spec.deployment_name, "ownerReferences": [foo.controller_owner_ref(&())] },
        "spec": {
            "replicas": foo.spec.replicas,
            "selector": { "matchLabels": labels },
            "template": {
                "metadata": { "labels": labels },
                "spec": { "containers": [{ "name": "nginx", "image": "nginx:latest" }] },
            },
        },
    }))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    informer_examples::init_tracing();
    let cluster = Cluster::connect().await?;
    let (demo, namespace) = Demo::prepare(&cluster, Foo::crd()).await?;
    let client = cluster.client.clone();
    let ctx = Ctx {
        client: client.clone(),
        recorder: Recorder::new(client.clone(), "sample-controller".into()),
    };
    let foos = Api::<Foo>::namespaced(client.clone(), &namespace);
    let deployments = Api::<Deployment>::namespaced(client.clone(), &namespace);
    Controller::new(foos, watcher::Config::default())
        .owns(deployments, watcher::Config::default())
        .graceful_shutdown_on(demo.clone().run(client, namespace.clone()))
        .run(reconcile, error_policy, Arc::new(ctx))
        .for_each(|_| async {})
        .await;
    cluster.delete_namespace(&namespace).await?;
    demo.result()
}
