//! The script both Backup operators run against (ours in `backup_operator`, kube-runtime's
//! in `backup_operator_kube_runtime`), kept out of their files so that their line counts
//! compare only operator code.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Cluster;
use crate::script::Outcome;

/// The demo's outcome, read after the operator stopped.
#[derive(Clone, Default)]
pub struct Demo {
    outcome: Outcome,
}

impl Demo {
    /// Installs the Backup CRD and creates a namespace for the demo.
    pub async fn prepare(
        cluster: &Cluster,
        crd: CustomResourceDefinition,
    ) -> anyhow::Result<(Self, String)> {
        cluster.install_crd(&crd).await?;
        let namespace = cluster.create_namespace("backup-operator").await?;
        Ok((Self::default(), namespace))
    }

    /// Starts driving the demo (it ends at Ctrl-C too); the returned future completes
    /// when it is over: the operator's shutdown signal.
    pub fn run<B>(
        self,
        client: Client,
        namespace: String,
        backup: fn(&str, &str) -> B,
    ) -> impl Future<Output = ()> + Send + Sync + 'static
    where
        B: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
        B: Clone + Serialize + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    {
        self.outcome
            .drive(async move { drive(client, &namespace, backup).await })
    }

    /// The demo's result, once the operator has stopped.
    pub fn result(&self) -> anyhow::Result<()> {
        self.outcome.result()
    }
}

/// Creates a target and its Backup, changes the target, deletes the Backup; checks
/// the operator's copy after each step.
async fn drive<B>(
    client: Client,
    namespace: &str,
    backup: fn(&str, &str) -> B,
) -> anyhow::Result<()>
where
    B: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    B: Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    let backups = Api::<B>::namespaced(client, namespace);
    let settings = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "settings" }, "data": { "greeting": "hello" },
    }))?;
    config_maps
        .create(&PostParams::default(), &settings)
        .await?;
    backups
        .create(&PostParams::default(), &backup("nightly", "settings"))
        .await?;
    wait_for_copy(&config_maps, Some("hello")).await?;
    println!("nightly-copy holds greeting=hello");

    let change = serde_json::json!({ "data": { "greeting": "bonjour" } });
    config_maps
        .patch("settings", &PatchParams::default(), &Patch::Merge(&change))
        .await?;
    wait_for_copy(&config_maps, Some("bonjour")).await?;
    println!("settings changed: nightly-copy holds greeting=bonjour");

    backups.delete("nightly", &DeleteParams::default()).await?;
    wait_for_copy(&config_maps, None).await?;
    until(|| async { Ok(backups.list(&ListParams::default()).await?.items.is_empty()) }).await?;
    println!("nightly deleted: its copy was cleaned up");
    Ok(())
}

/// Waits until `nightly-copy` holds `greeting` (or is gone, for `None`).
async fn wait_for_copy(config_maps: &Api<ConfigMap>, greeting: Option<&str>) -> anyhow::Result<()> {
    until(|| async {
        let copy = config_maps.get_opt("nightly-copy").await?;
        let data: Option<BTreeMap<String, String>> = copy.map(|cm| cm.data.unwrap_or_default());
        Ok(match (greeting, data) {
            (Some(greeting), Some(data)) => {
                data.get("greeting").map(String::as_str) == Some(greeting)
            }
            (None, None) => true,
            _ => false,
        })
    })
    .await
}

/// Polls `check` until true; fails after 30 s.
pub(crate) async fn until<F, Fut>(mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<bool>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check().await? {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the operator did not act within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}
