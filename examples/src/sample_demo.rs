//! The script both ports of Kubernetes' sample-controller run against (ours in
//! `sample_controller`, kube-runtime's in `sample_controller_kube_runtime`), kept out of
//! their files so that their line counts compare only controller code.
//!
//! It reads and writes Foos as dynamic objects, so each binary keeps its own `Foo`
//! type, and it plays kube-controller-manager's part itself (the embedded control
//! plane runs none): it sets the Deployment's status by hand.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch};
use kube::api::{PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::Cluster;
use crate::script::Outcome;

/// How long the controller has for each step.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);

/// The demo's outcome, read after the controller stopped.
#[derive(Clone, Default)]
pub struct Demo {
    outcome: Outcome,
}

impl Demo {
    /// Installs the Foo CRD and creates a namespace for the demo.
    pub async fn prepare(
        cluster: &Cluster,
        crd: CustomResourceDefinition,
    ) -> anyhow::Result<(Self, String)> {
        cluster.install_crd(&crd).await?;
        let namespace = cluster.create_namespace("sample-controller").await?;
        Ok((Self::default(), namespace))
    }

    /// Starts driving the demo (it ends at Ctrl-C too); the returned future completes
    /// when it is over: the controller's shutdown signal.
    pub fn run(
        self,
        client: Client,
        namespace: String,
    ) -> impl Future<Output = ()> + Send + Sync + 'static {
        self.outcome
            .drive(async move { drive(client, &namespace).await })
    }

    /// The demo's result, once the controller has stopped.
    pub fn result(&self) -> anyhow::Result<()> {
        self.outcome.result()
    }
}

/// sample-controller's story: a Foo gets its Deployment, follows its status, scales
/// it, keeps it at the Foo's replicas, and refuses a Deployment it does not control.
async fn drive(client: Client, namespace: &str) -> anyhow::Result<()> {
    let gvk = GroupVersionKind::gvk("samplecontroller.k8s.io", "v1alpha1", "Foo");
    let foos = Api::<DynamicObject>::namespaced_with(
        client.clone(),
        namespace,
        &ApiResource::from_gvk(&gvk),
    );
    let deployments = Api::<Deployment>::namespaced(client.clone(), namespace);
    let events = Api::<Event>::namespaced(client, namespace);
    let params = PatchParams::default();

    let created = foos
        .create(
            &PostParams::default(),
            &new_foo(&gvk, "example-foo", "example-foo", 1)?,
        )
        .await?;
    step("create example-foo's Deployment", || async {
        Ok(deployments
            .get_opt("example-foo")
            .await?
            .is_some_and(|d| replicas(&d) == Some(1) && controller(&d) == created.uid())
            .then_some(()))
    })
    .await?;
    println!("example-foo created: Deployment example-foo, 1 replica, controlled by the Foo");

    let available =
        json!({ "status": { "replicas": 1, "readyReplicas": 1, "availableReplicas": 1 } });
    deployments
        .patch_status("example-foo", &params, &Patch::Merge(&available))
        .await?;
    step("copy the available replicas into the Foo", || async {
        let example = foos.get("example-foo").await?;
        Ok((example.data["status"]["availableReplicas"] == 1).then_some(()))
    })
    .await?;
    println!("1 replica of Deployment example-foo available: example-foo's status says 1");

    let scale = json!({ "spec": { "replicas": 3 } });
    foos.patch("example-foo", &params, &Patch::Merge(&scale))
        .await?;
    step("scale the Deployment to 3", || async {
        Ok((replicas(&deployments.get("example-foo").await?) == Some(3)).then_some(()))
    })
    .await?;
    println!("example-foo scaled to 3: so is Deployment example-foo");

    let edit = json!({ "spec": { "replicas": 5 } });
    let edited = deployments
        .patch("example-foo", &params, &Patch::Merge(&edit))
        .await?;
    step("put the Deployment back to 3 replicas", || async {
        let deployment = deployments.get("example-foo").await?;
        let restored = deployment.resource_version() != edited.resource_version()
            && replicas(&deployment) == Some(3);
        Ok(restored.then_some(()))
    })
    .await?;
    println!("Deployment example-foo edited to 5 replicas: put back to 3");

    let foreign = deployments
        .create(&PostParams::default(), &deployment("foreign", 2)?)
        .await?;
    foos.create(
        &PostParams::default(),
        &new_foo(&gvk, "other-foo", "foreign", 1)?,
    )
    .await?;
    let warning = wait_for_event(&events, "other-foo", "Warning", "ErrResourceExists").await?;
    println!("other-foo wants Deployment foreign: Warning ErrResourceExists: {warning}");
    let now = deployments.get("foreign").await?;
    anyhow::ensure!(
        now.resource_version() == foreign.resource_version() && controller(&now).is_none(),
        "the foreign Deployment was changed: {now:?}"
    );
    println!("Deployment foreign untouched: 2 replicas, no owner");

    let synced = wait_for_event(&events, "example-foo", "Normal", "Synced").await?;
    println!("example-foo: Normal Synced: {synced}");
    Ok(())
}

/// A Foo asking for `replicas` of the Deployment `deployment`.
fn new_foo(
    gvk: &GroupVersionKind,
    name: &str,
    deployment: &str,
    replicas: i32,
) -> anyhow::Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": gvk.api_version(), "kind": gvk.kind,
        "metadata": { "name": name },
        "spec": { "deploymentName": deployment, "replicas": replicas },
    }))?)
}

/// A Deployment of nobody's.
fn deployment(name: &str, replicas: i32) -> anyhow::Result<Deployment> {
    let labels = json!({ "app": name });
    Ok(serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": labels },
            "template": {
                "metadata": { "labels": labels },
                "spec": { "containers": [{ "name": "nginx", "image": "nginx:latest" }] },
            },
        },
    }))?)
}

fn replicas(deployment: &Deployment) -> Option<i32> {
    deployment.spec.replicas
}

/// The uid of `deployment`'s controller, if it is a Foo.
fn controller(deployment: &Deployment) -> Option<String> {
    deployment
        .owner_references()
        .iter()
        .find(|owner| owner.controller == Some(true) && owner.kind == "Foo")
        .map(|owner| owner.uid.clone())
}

/// Waits for an Event of `type_` and `reason` about the Foo `name`; returns its note.
async fn wait_for_event(
    events: &Api<Event>,
    name: &str,
    type_: &str,
    reason: &str,
) -> anyhow::Result<String> {
    step(
        &format!("record a {type_} {reason} event on {name}"),
        || async {
            let events = events.list(&ListParams::default()).await?;
            Ok(events
                .into_iter()
                .find(|event| {
                    event.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                        && event.type_.as_deref() == Some(type_)
                        && event.reason.as_deref() == Some(reason)
                })
                .map(|event| event.note.unwrap_or_default()))
        },
    )
    .await
}

/// Polls `check` until it finds something; fails, naming what the controller did not
/// do, after [`STEP_TIMEOUT`].
async fn step<T, F, Fut>(what: &str, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + STEP_TIMEOUT;
    loop {
        if let Some(found) = check().await? {
            return Ok(found);
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the controller did not {what} within {STEP_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
