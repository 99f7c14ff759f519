//! Kubernetes' sample-controller (kubernetes/sample-controller's `controller.go`, the
//! reference client-go controller) on our `Controller`: a `Foo` keeps a Deployment of
//! `replicas` nginx pods named `deploymentName`, controlled by the Foo, and copies the
//! Deployment's available replicas into its status.
//!
//! - `owns::<Deployment>()`: a change to the Deployment reconciles its Foo, and
//!   `ctx.owned` reads it from the owner index, never the API server.
//! - A Deployment of that name the Foo does not control is left alone: the create
//!   fails (409 AlreadyExists), the Foo gets a Warning event `ErrResourceExists` and
//!   the reconcile fails, retried with backoff. An empty `deploymentName` fails too,
//!   without retry (`Retry::Never`) until the Foo changes.
//! - Events through the context's recorder; writes through the context, so a quick
//!   requeue never sees a stale cache.
//!
//! Its twin on kube-runtime is `sample_controller_kube_runtime`; both are driven by the
//! same script (`informer_examples::sample_demo`). Run: `cargo run --bin sample_controller`.

// `foo` names a Foo here, as in sample-controller, not a placeholder.
#![allow(clippy::disallowed_names)]

use std::sync::Arc;

use informer::prelude::*;
use informer_examples::{Cluster, sample_demo::Demo};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{CustomResource, CustomResourceExt, ResourceExt};
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

async fn reconcile(foo: Arc<Foo>, ctx: Context<Foo>) -> Result<Action, Error> {
    let name = &foo.spec.deployment_name;
    if name.is_empty() {
        return Err(Error::NoDeploymentName);
    }
    let deployments = ctx.api::<Deployment>();
    let ours = ctx
        .owned::<Deployment>(&foo)
        .into_iter()
        .find(|d| d.name_any() == *name);
    let deployment = match ours {
        None => {
            let new = new_deployment(&foo, ctx.controller_reference(&foo))?;
            match deployments.create(&PostParams::default(), &new).await {
                Err(kube::Error::Api(status)) if status.code == 409 => {
                    let error = Error::NotManaged(name.clone());
                    let warning = EventSpec::warning("ErrResourceExists", "Sync");
                    ctx.publish(&foo, warning.note(error.to_string()));
                    return Err(error);
                }
                created => Arc::new(created?),
            }
        }
        Some(deployment) if needs_scaling(&deployment, &foo) => {
            let scale = json!({ "spec": { "replicas": foo.spec.replicas } });
            Arc::new(
                deployments
                    .patch(name, &PatchParams::default(), &Patch::Merge(&scale))
                    .await?,
            )
        }
        Some(deployment) => deployment,
    };
    let available = deployment
        .status
        .as_ref()
        .and_then(|s| s.available_replicas);
    let status = json!({ "status": { "availableReplicas": available.unwrap_or(0) } });
    ctx.api::<Foo>()
        .patch_status(
            &foo.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await?;
    let synced = EventSpec::normal("Synced", "Sync").note("Foo synced successfully");
    ctx.publish(&foo, synced);
    Ok(Action::Done)
}

fn error_policy(_foo: &Foo, error: &Error, _ctx: &Context<Foo>) -> Retry {
    match error {
        Error::NoDeploymentName => Retry::Never,
        _ => Retry::Backoff,
    }
}

/// Whether `deployment` has other replicas than `foo` asks for, if it asks.
fn needs_scaling(deployment: &Deployment, foo: &Foo) -> bool {
    let current = deployment.spec.replicas;
    foo.spec
        .replicas
        .is_some_and(|wanted| current != Some(wanted))
}

/// The Deployment `foo` asks for: `replicas` nginx pods, controlled by `foo`.
fn new_deployment(foo: &Foo, owner: Option<OwnerReference>) -> serde_json::Result<Deployment> {
    let labels = json!({ "app": "nginx", "controller": foo.name_any() });
    serde_json::from_value(json!({
        "metadata": { "name": foo.spec.deployment_name, "ownerReferences": [owner] },
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
    let factory = SharedInformerFactory::new(
        cluster.client.clone(),
        FactoryConfig::default().namespace(namespace.clone()),
    );
    Controller::<Foo>::new(&factory)
        .name("sample-controller")
        // Its own status writes are no reason to reconcile.
        .predicate(Predicate::generation_changed())
        .owns::<Deployment>()
        .run(
            reconcile,
            error_policy,
            demo.clone().run(cluster.client.clone(), namespace.clone()),
        )
        .await?;
    factory.shutdown().await;
    cluster.delete_namespace(&namespace).await?;
    demo.result()
}
