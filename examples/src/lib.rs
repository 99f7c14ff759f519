//! Runnable examples of the `informer` crate, one binary each under `src/bin/`:
//! `cargo run --bin quickstart`.
//!
//! Every example talks to the cluster your kubeconfig names, or, when none is
//! configured, to an embedded local control plane (etcd + kube-apiserver on loopback,
//! installed on first use). This library holds that shared connection logic, and the
//! logging set-up every example starts with, and the scripts that drive the operators
//! written twice, on ours and on kube-runtime's `Controller`: the Backup operator
//! ([`backup_demo`]) and Kubernetes' sample-controller ([`sample_demo`]).

use informer::testenv::TestEnv;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;

pub mod backup_demo;
pub mod sample_demo;
pub mod script;

/// Shows the informers' logs on stderr: `RUST_LOG` if set, else warnings and errors
/// (a list that keeps failing, say for a CRD that is not installed, is logged at warn
/// level, once per streak of failures), and the informer crate's info lines. Colour
/// only when stderr is a terminal: a file or a pipe gets plain text. A program that
/// installs no subscriber sees none of it.
pub fn init_tracing() {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        // kube's client logs every failed request at error level without saying what
        // it was for; the informers log their failures with the resource and the
        // server's address.
        EnvFilter::new("warn,informer=info,kube_client::client::builder=off")
    });
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        // stdout is the example's own output.
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// A connection to a cluster, keeping the embedded control plane alive when one was
/// started: dropping it stops the servers.
pub struct Cluster {
    /// A client for the cluster.
    pub client: Client,
    /// The embedded control plane, when no cluster was configured.
    pub embedded: Option<TestEnv>,
}

impl Cluster {
    /// Connects to the configured cluster (`KUBECONFIG`, `~/.kube/config` or
    /// in-cluster), or starts the embedded control plane when none is configured or
    /// when `INFORMER_EMBEDDED` is set (to keep the examples off a real cluster).
    pub async fn connect() -> anyhow::Result<Self> {
        let configured = match std::env::var_os("INFORMER_EMBEDDED") {
            Some(_) => None,
            None => kube::Config::infer().await.ok(),
        };
        match configured {
            Some(config) => {
                eprintln!(
                    "Using the configured cluster {} (INFORMER_EMBEDDED=1 starts an embedded one instead).",
                    config.cluster_url
                );
                Ok(Self {
                    client: Client::try_from(config)?,
                    embedded: None,
                })
            }
            None => {
                eprintln!("Starting an embedded control plane on loopback.");
                let env = TestEnv::start().await?;
                let client = env.client()?;
                let version = client.apiserver_version().await?;
                eprintln!(
                    "The embedded control plane runs Kubernetes {} (KUBEBUILDER_ASSETS names \
                     binaries of your own).",
                    version.git_version
                );
                Ok(Self {
                    client,
                    embedded: Some(env),
                })
            }
        }
    }

    /// Creates a namespace with a unique name for the example's objects.
    pub async fn create_namespace(&self, prefix: &str) -> anyhow::Result<String> {
        use k8s_openapi::api::core::v1::Namespace;
        use kube::api::{Api, PostParams};
        use rand::Rng;

        let name = format!("{prefix}-{:04x}", rand::rng().random_range(0..0x10000u32));
        let namespace: Namespace =
            serde_json::from_value(serde_json::json!({ "metadata": { "name": name } }))?;
        Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &namespace)
            .await?;
        Ok(name)
    }

    /// Deletes a namespace the example created.
    pub async fn delete_namespace(&self, name: &str) -> anyhow::Result<()> {
        use k8s_openapi::api::core::v1::Namespace;
        use kube::api::{Api, DeleteParams};

        Api::<Namespace>::all(self.client.clone())
            .delete(name, &DeleteParams::default())
            .await?;
        Ok(())
    }

    /// Installs a CustomResourceDefinition (an existing one of the same name is kept)
    /// and waits until the API server serves its resource.
    pub async fn install_crd(&self, crd: &CustomResourceDefinition) -> anyhow::Result<()> {
        use kube::api::{Api, PostParams};

        let crds = Api::<CustomResourceDefinition>::all(self.client.clone());
        match crds.create(&PostParams::default(), crd).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => return Err(error.into()),
        }
        let spec = &crd.spec;
        let version = spec
            .versions
            .iter()
            .find(|v| v.served)
            .map_or("v1", |v| v.name.as_str());
        let url = format!(
            "/apis/{}/{version}/{}?limit=1",
            spec.group, spec.names.plural
        );
        backup_demo::until(|| async {
            let request = http::Request::get(url.as_str()).body(Vec::new())?;
            Ok(self.client.request_text(request).await.is_ok())
        })
        .await
    }
}
