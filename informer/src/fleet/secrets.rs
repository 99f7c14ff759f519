//! [`KubeconfigSecrets`]: the fleet as Secrets holding kubeconfigs in a namespace of
//! a management cluster (Cluster API's `<cluster>-kubeconfig` Secrets).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use educe::Educe;
use futures::future::BoxFuture;
use futures::stream::BoxStream;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::config::Kubeconfig;
use kube::{Api, Client, ResourceExt};

use super::error::KubeconfigError;
use super::kubeconfigs::config_from;
use super::membership::{ClusterProvider, Membership, Rejected};
use crate::reflector::source::ApiListerWatcher;
use crate::shared_informer::{InformerConfig, SharedIndexInformer, Subscription};

/// The label Cluster API puts on a cluster's kubeconfig Secret, naming the cluster.
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";

/// The fleet as the Secrets of one namespace of a management cluster, each holding a
/// kubeconfig: Cluster API's `<cluster>-kubeconfig` Secrets (key `value`) are the
/// common case. Followed by an informer: a Secret created joins its cluster, a Secret
/// deleted removes it, a Secret changed restarts that cluster only.
///
/// A cluster is named by the Secret's `cluster.x-k8s.io/cluster-name` label, else by
/// the Secret's name without a `-kubeconfig` suffix. A Secret whose kubeconfig is
/// missing or invalid is [rejected](Rejected), named `Secret <namespace>/<name>`, and
/// stops no other cluster.
///
/// ```no_run
/// # async fn demo(management: kube::Client) {
/// use informer::fleet::{ClusterSet, KubeconfigSecrets};
///
/// let fleet = ClusterSet::new(
///     KubeconfigSecrets::new(management, "fleet")
///         .selector("cluster.x-k8s.io/cluster-name"), // only Cluster API's
/// );
/// # }
/// ```
#[derive(Educe, Clone)]
#[educe(Debug)]
pub struct KubeconfigSecrets {
    #[educe(Debug(ignore))]
    client: Client,
    namespace: String,
    selector: Option<String>,
    key: String,
}

impl KubeconfigSecrets {
    /// The Secrets of `namespace`, read with `client` (the management cluster's).
    pub fn new(client: Client, namespace: impl Into<String>) -> Self {
        Self {
            client,
            namespace: namespace.into(),
            selector: None,
            key: "value".to_owned(),
        }
    }

    /// Only the Secrets matching this label selector.
    #[must_use]
    pub fn selector(mut self, selector: impl Into<String>) -> Self {
        self.selector = Some(selector.into());
        self
    }

    /// The data key holding the kubeconfig (default `value`, as Cluster API writes
    /// it).
    #[must_use]
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = key.into();
        self
    }

    /// The membership the cached Secrets describe.
    async fn membership(&self, secrets: Vec<Arc<Secret>>) -> Membership {
        let mut membership = Membership::default();
        let mut named: BTreeMap<String, String> = BTreeMap::new();
        for secret in secrets {
            let source = format!("Secret {}/{}", self.namespace, secret.name_any());
            let name = cluster_name(&secret);
            if let Some(first) = named.get(&name) {
                membership.rejected.push(Rejected {
                    source,
                    error: KubeconfigError::Duplicate {
                        cluster: name,
                        first: first.clone(),
                    },
                });
                continue;
            }
            match self.config(&secret).await {
                Ok(config) => {
                    named.insert(name.clone(), source);
                    membership.clusters.insert(name, config);
                }
                Err(error) => membership.rejected.push(Rejected { source, error }),
            }
        }
        membership
    }

    async fn config(&self, secret: &Secret) -> Result<super::ClusterConfig, KubeconfigError> {
        let missing = || KubeconfigError::MissingKey {
            key: self.key.clone(),
        };
        let bytes = secret
            .data
            .as_ref()
            .and_then(|data| data.get(&self.key))
            .ok_or_else(missing)?;
        let text = std::str::from_utf8(&bytes.0).map_err(|_| KubeconfigError::NotText)?;
        let kubeconfig = Kubeconfig::from_yaml(text)
            .map_err(|error| KubeconfigError::Invalid(Arc::new(error)))?;
        config_from(kubeconfig, None, text).await
    }
}

/// The cluster a Secret names.
fn cluster_name(secret: &Secret) -> String {
    if let Some(name) = secret.labels().get(CLUSTER_NAME_LABEL) {
        return name.clone();
    }
    let name = secret.name_any();
    match name.strip_suffix("-kubeconfig") {
        Some(cluster) if !cluster.is_empty() => cluster.to_owned(),
        _ => name,
    }
}

/// The provider's informer and its run, dropped with the stream.
struct Following {
    provider: KubeconfigSecrets,
    informer: SharedIndexInformer<Secret>,
    changes: Subscription<Secret>,
    run: BoxFuture<'static, ()>,
}

impl ClusterProvider for KubeconfigSecrets {
    fn memberships(self: Box<Self>) -> BoxStream<'static, Membership> {
        let api = Api::<Secret>::namespaced(self.client.clone(), &self.namespace);
        let mut lister_watcher = ApiListerWatcher::new(api);
        if let Some(selector) = &self.selector {
            lister_watcher = lister_watcher.labels(selector.clone());
        }
        let informer = SharedIndexInformer::with_config(lister_watcher, InformerConfig::default())
            .expect("no indexes to clash");
        let changes = informer.subscribe().expect("not started");
        // Driven by the stream itself, not a task of its own: when the set drops the
        // stream, the informer goes with it and nothing is left running.
        let run: BoxFuture<'static, ()> = Box::pin({
            let informer = informer.clone();
            async move {
                let _ = informer.run(std::future::pending()).await;
            }
        });
        let following = Following {
            provider: *self,
            informer,
            changes,
            run,
        };
        futures::stream::unfold(following, |mut following| async move {
            let Following {
                provider,
                informer,
                changes,
                run,
            } = &mut following;
            // Wait for a change; take every other one already waiting with it.
            running(run, changes.next()).await??;
            while let Some(Some(_)) = changes.next().now_or_never() {}
            if !informer.has_synced() {
                running(run, crate::synced::HasSynced::synced(&*informer)).await?;
                while let Some(Some(_)) = changes.next().now_or_never() {}
            }
            let secrets = informer.lister().list_all();
            let membership = running(run, provider.membership(secrets)).await?;
            Some((membership, following))
        })
        .boxed()
    }
}

/// Waits for `wait` while driving the informer's `run`; `None` if the informer
/// stopped (it runs until dropped, so only if it could not start).
async fn running<T>(run: &mut BoxFuture<'static, ()>, wait: impl Future<Output = T>) -> Option<T> {
    tokio::select! {
        value = wait => Some(value),
        () = run => None,
    }
}
