//! One add-on kept in every cluster of a fleet: a fleet controller.
//!
//! The platform team keeps the add-on's desired state as the ConfigMap
//! `addon-template` in a namespace of the management cluster; the fleet is the
//! kubeconfig Secrets in that same namespace (`KubeconfigSecrets`, as Cluster API
//! writes them). A `FleetController` runs a controller in every member that keeps the
//! ConfigMap `fleet-addon` a copy of the template: a template change reaches every
//! member, a copy edited or deleted in a member is put back, a cluster whose Secret
//! is created joins and gets its copy, one whose Secret is deleted leaves (its copy
//! stays, no longer managed). A Secret that is not a kubeconfig is rejected, and a
//! cluster that cannot be reached is named by `troubled()` while the others go on.
//!
//! The members are the one cluster the example connects to (your kubeconfig's, or
//! the embedded control plane), under three names: each Secret holds that cluster's
//! kubeconfig, cut down to its current context. So the example needs a kubeconfig
//! file (`KUBECONFIG` or `~/.kube/config`, or none at all for the embedded control
//! plane), and on your cluster it writes your current context's credentials into
//! those Secrets, in a namespace `fleet-XXXX` it deletes at the end. In a real fleet
//! the add-on would live in `kube-system` of every cluster; here the members share
//! one API server, so each keeps its copy in a namespace of its own,
//! `fleet-XXXX-<cluster>` (the example creates it as it adds the cluster, as a new
//! cluster comes with its `kube-system`). A fourth Secret points at an address
//! nobody listens on: `cluster-offline`.
//!
//! Each member's controller has the Namespace holding the add-on as its primary, and
//! watches the ConfigMap `fleet-addon`: a controller reconciles objects it has cached,
//! so a primary that must exist before the copy does (as `kube-system` does) is what
//! lets it create a missing copy. The template is in another cluster than the
//! member's, so no `watches` of the member's factory can see it change: each member's
//! controller gets a queue of its own (`Controller::queue`), and a handler on the
//! management cluster's template informer queues every member's key.
//!
//! Run: `cargo run --bin fleet_addon`. It prints:
//!
//! ```text
//! cluster-a has addon v1
//! cluster-b has addon v1
//! Secret broken-kubeconfig rejected: invalid kubeconfig
//! cluster-offline cannot be reached: troubled() names it, the others did not wait
//! template changed: cluster-a has addon v2, cluster-b has addon v2
//! addon edited in cluster-a, deleted in cluster-b: both put back at v2
//! cluster-c joined: cluster-c has addon v2
//! cluster-b left: its addon stays at v2, no longer managed
//! fleet-wide view: cluster-a v2, cluster-c v2
//! ```

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use informer::fleet::{
    Cluster, ClusterContext, ClusterSet, FleetInformer, KubeconfigError, KubeconfigSecrets,
};
use informer::prelude::*;
use informer::shared_informer::{ResourceEventHandlerFns, wait_for_cache_sync};
use informer::workqueue::{QueueConfig, WorkQueue, default_controller_rate_limiter};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::config::Kubeconfig;
use kube::{Client, ResourceExt};
use serde_json::json;
use tokio::sync::oneshot;

/// The add-on's desired state, in the management cluster.
const TEMPLATE: &str = "addon-template";
/// The add-on's copy in every member.
const ADDON: &str = "fleet-addon";
/// How long the example waits for each step.
const WAIT: Duration = Duration::from_secs(30);

/// The namespace where `cluster` keeps its add-on (`kube-system` in a real fleet).
fn home(fleet: &str, cluster: &str) -> String {
    format!("{fleet}-{cluster}")
}

/// Each member's controller queue, fed by template changes too.
type Queues = Arc<Mutex<Vec<(Cluster, WorkQueue<ObjectKey>)>>>;

/// Puts the template's data in the member's copy, unless it is there already.
async fn reconcile(
    namespace: Arc<Namespace>,
    ctx: Context<Namespace>,
    home: String,
    template: Option<Arc<ConfigMap>>,
) -> Result<Action, kube::Error> {
    // Another namespace of the member; and no template, nothing to keep (its
    // creation queues every member).
    let Some(template) = template.filter(|_| namespace.name_any() == home) else {
        return Ok(Action::Done);
    };
    let copy = ctx.lister::<ConfigMap>().namespaced(&home).get(ADDON).ok();
    if copy.is_some_and(|copy| copy.data == template.data) {
        return Ok(Action::Done);
    }
    let addon = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": ADDON, "labels": { "app.kubernetes.io/managed-by": "fleet-addon" } },
        "data": template.data,
    });
    ctx.api_in::<ConfigMap>(Some(&home))
        .patch(
            ADDON,
            &PatchParams::apply("fleet-addon").force(),
            &Patch::Apply(&addon),
        )
        .await?;
    Ok(Action::Done)
}

/// Every member's controller: its own queue (kept in `queues`), the Namespace as
/// primary, the add-on's changes mapped to its namespace.
fn build(queues: &Queues, cluster: &Cluster) -> Controller<Namespace> {
    let queue = WorkQueue::with_config(
        QueueConfig::default().name(format!("fleet-addon-{}", cluster.name())),
        default_controller_rate_limiter(),
    );
    let mut queues = queues.lock().expect("lock");
    queues.retain(|(member, _)| !member.is_retired());
    queues.push((cluster.clone(), queue.clone()));
    Controller::<Namespace>::new(cluster.factory())
        .name("fleet-addon")
        .watches(|cm: &ConfigMap, _: &Lister<Namespace>| {
            let namespace = cm.namespace().filter(|_| cm.name_any() == ADDON);
            namespace.map(ObjectKey::cluster_scoped)
        })
        .queue(queue)
}

/// Queues every member's add-on namespace: the template changed.
fn queue_every_member(queues: &Queues, fleet: &str) {
    for (cluster, queue) in queues.lock().expect("lock").iter() {
        if !cluster.is_retired() {
            queue.add(ObjectKey::cluster_scoped(home(fleet, cluster.name())));
        }
    }
}

/// The connected cluster's kubeconfig, cut down to its current context, as text.
fn own_kubeconfig(cluster: &informer_examples::Cluster) -> anyhow::Result<String> {
    let mut kubeconfig = match &cluster.embedded {
        Some(env) => Kubeconfig::read_from(env.kubeconfig_path())?,
        None => Kubeconfig::read().context(
            "fleet_addon hands the cluster's kubeconfig to its members: it needs a \
             kubeconfig file (KUBECONFIG or ~/.kube/config), or INFORMER_EMBEDDED=1",
        )?,
    };
    let current = kubeconfig
        .current_context
        .clone()
        .context("no current context")?;
    kubeconfig.contexts.retain(|named| named.name == current);
    let context = kubeconfig
        .contexts
        .first()
        .and_then(|named| named.context.clone())
        .context("the current context is not in the kubeconfig")?;
    kubeconfig
        .clusters
        .retain(|named| named.name == context.cluster);
    kubeconfig
        .auth_infos
        .retain(|named| Some(&named.name) == context.user.as_ref());
    Ok(serde_json::to_string(&kubeconfig)?)
}

/// A kubeconfig for an API server nobody runs.
fn offline_kubeconfig() -> String {
    json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{ "name": "offline", "cluster": { "server": "https://127.0.0.1:1" } }],
        "users": [{ "name": "offline", "user": {} }],
        "contexts": [{ "name": "offline", "context": { "cluster": "offline", "user": "offline" } }],
        "current-context": "offline",
    })
    .to_string()
}

/// The script's hands: the management cluster's API, and each member's add-on.
struct Script {
    client: Client,
    fleet: String,
    kubeconfig: String,
}

impl Script {
    fn secrets(&self) -> Api<Secret> {
        Api::namespaced(self.client.clone(), &self.fleet)
    }

    /// The add-on's copies in `cluster` (the one API server of every member).
    fn addon(&self, cluster: &str) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &home(&self.fleet, cluster))
    }

    async fn create_secret(&self, name: &str, kubeconfig: &str) -> anyhow::Result<()> {
        let secret = serde_json::from_value(json!({
            "metadata": { "name": name }, "stringData": { "value": kubeconfig },
        }))?;
        self.secrets()
            .create(&PostParams::default(), &secret)
            .await?;
        Ok(())
    }

    /// A new cluster: its add-on namespace, then its kubeconfig Secret.
    async fn add_cluster(&self, cluster: &str) -> anyhow::Result<()> {
        let namespace =
            serde_json::from_value(json!({ "metadata": { "name": home(&self.fleet, cluster) } }))?;
        Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &namespace)
            .await?;
        self.create_secret(&format!("{cluster}-kubeconfig"), &self.kubeconfig)
            .await
    }

    async fn set_template(&self, version: &str) -> anyhow::Result<()> {
        let template = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": TEMPLATE }, "data": { "version": version },
        });
        Api::<ConfigMap>::namespaced(self.client.clone(), &self.fleet)
            .patch(
                TEMPLATE,
                &PatchParams::apply("platform-team").force(),
                &Patch::Apply(&template),
            )
            .await?;
        Ok(())
    }

    /// The add-on's version in `cluster`, as its API server has it.
    async fn version(&self, cluster: &str) -> anyhow::Result<Option<String>> {
        let copy = self.addon(cluster).get_opt(ADDON).await?;
        Ok(copy.and_then(|cm| cm.data?.get("version").cloned()))
    }

    /// Waits until `cluster` has the add-on at `version`.
    async fn has(&self, cluster: &str, version: &str) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + WAIT;
        while self.version(cluster).await?.as_deref() != Some(version) {
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "{cluster} did not get addon {version} within {WAIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }
}

/// Polls `check` until true; fails after `WAIT`.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !check() {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// The story, told while the fleet and its controller run.
async fn drive(
    script: &Script,
    fleet: &ClusterSet,
    view: &FleetInformer<ConfigMap>,
) -> anyhow::Result<()> {
    script.has("cluster-a", "v1").await?;
    println!("cluster-a has addon v1");
    script.has("cluster-b", "v1").await?;
    println!("cluster-b has addon v1");

    for rejected in fleet.rejected() {
        let secret = rejected.source.rsplit('/').next().unwrap_or_default();
        let why = match &rejected.error {
            KubeconfigError::Invalid(_) => "invalid kubeconfig".to_owned(),
            other => other.to_string(),
        };
        println!("Secret {secret} rejected: {why}");
    }
    eventually("cluster-offline named by troubled()", || {
        let troubled = view.troubled();
        troubled.len() == 1
            && &*troubled[0].cluster == "cluster-offline"
            && troubled[0].value.is_some()
    })
    .await?;
    println!("cluster-offline cannot be reached: troubled() names it, the others did not wait");

    script.set_template("v2").await?;
    script.has("cluster-a", "v2").await?;
    script.has("cluster-b", "v2").await?;
    println!("template changed: cluster-a has addon v2, cluster-b has addon v2");

    let edit = json!({ "data": { "version": "edited" } });
    script
        .addon("cluster-a")
        .patch(ADDON, &PatchParams::default(), &Patch::Merge(&edit))
        .await?;
    script
        .addon("cluster-b")
        .delete(ADDON, &DeleteParams::default())
        .await?;
    script.has("cluster-a", "v2").await?;
    script.has("cluster-b", "v2").await?;
    println!("addon edited in cluster-a, deleted in cluster-b: both put back at v2");

    script.add_cluster("cluster-c").await?;
    script.has("cluster-c", "v2").await?;
    println!("cluster-c joined: cluster-c has addon v2");

    let leaving = fleet
        .cluster("cluster-b")
        .context("cluster-b is a member")?;
    let its_informer = leaving.factory().informer::<ConfigMap>();
    script
        .secrets()
        .delete("cluster-b-kubeconfig", &DeleteParams::default())
        .await?;
    // Retired: its controller stopped, then its informers.
    eventually("cluster-b's informers to stop", || {
        leaving.is_retired() && its_informer.is_stopped()
    })
    .await?;
    let version = script.version("cluster-b").await?.unwrap_or_default();
    println!("cluster-b left: its addon stays at {version}, no longer managed");

    let copies = || {
        let mut copies: Vec<String> = view
            .list_all()
            .into_iter()
            .filter(|copy| copy.value.name_any() == ADDON)
            .map(|copy| {
                let data = copy.value.data.clone().unwrap_or_default();
                let version = data.get("version").cloned().unwrap_or_default();
                format!("{} {version}", copy.cluster)
            })
            .collect();
        copies.sort();
        copies
    };
    eventually("the fleet-wide view", || {
        copies() == ["cluster-a v2", "cluster-c v2"]
    })
    .await?;
    println!("fleet-wide view: {}", copies().join(", "));
    Ok(())
}

/// Sets the fleet up, runs it and its controller while the story is told, stops them.
async fn demo(script: &Script) -> anyhow::Result<()> {
    script.set_template("v1").await?;
    script
        .create_secret("broken-kubeconfig", "clusters: [not a kubeconfig")
        .await?;
    script
        .create_secret("cluster-offline-kubeconfig", &offline_kubeconfig())
        .await?;
    script.add_cluster("cluster-a").await?;
    script.add_cluster("cluster-b").await?;

    // The management cluster: the template's informer.
    let management = SharedInformerFactory::new(
        script.client.clone(),
        FactoryConfig::default().namespace(&script.fleet),
    );
    let templates = management.informer::<ConfigMap>();

    // The fleet: every member's factory watches its add-on's namespace only.
    let fleet_ns = script.fleet.clone();
    let fleet = ClusterSet::with_config(
        KubeconfigSecrets::new(script.client.clone(), &script.fleet),
        move |cluster| FactoryConfig::default().namespace(home(&fleet_ns, cluster)),
    );
    let view = fleet.informer::<ConfigMap>();
    let queues = Queues::default();
    let controller = fleet.controller({
        let queues = Arc::clone(&queues);
        move |cluster| build(&queues, cluster)
    });
    let poke = {
        let (queues, fleet) = (Arc::clone(&queues), script.fleet.clone());
        move |cm: &ConfigMap| {
            if cm.name_any() == TEMPLATE {
                queue_every_member(&queues, &fleet);
            }
        }
    };
    let (on_add, on_update, on_delete) = (poke.clone(), poke.clone(), poke);
    templates.add_event_handler_on_runtime(
        ResourceEventHandlerFns::new()
            .on_add(move |cm, _| on_add(cm))
            .on_update(move |_, cm| on_update(cm))
            .on_delete(move |gone| on_delete(gone.object())),
    )?;
    management.start();
    wait_for_cache_sync(&[&templates]).await;

    let (stop_fleet, fleet_stopped) = oneshot::channel::<()>();
    let running_fleet = tokio::spawn({
        let fleet = fleet.clone();
        async move { fleet.run(async { fleet_stopped.await.unwrap_or(()) }).await }
    });
    let (stop_controller, controller_stopped) = oneshot::channel::<()>();
    let template_lister = templates.lister();
    let fleet_ns = script.fleet.clone();
    let running_controller = tokio::spawn(controller.run(
        move |namespace, ctx| {
            let home = home(&fleet_ns, ctx.cluster().unwrap_or_default());
            let template = template_lister.namespaced(&fleet_ns).get(TEMPLATE).ok();
            reconcile(namespace, ctx, home, template)
        },
        backoff,
        async { controller_stopped.await.unwrap_or(()) },
    ));

    let outcome = drive(script, &fleet, &view).await;
    let _ = stop_controller.send(());
    running_controller.await?;
    let _ = stop_fleet.send(());
    running_fleet.await??;
    management.shutdown().await;
    outcome
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    informer_examples::init_tracing();
    let cluster = informer_examples::Cluster::connect().await?;
    let script = Script {
        client: cluster.client.clone(),
        kubeconfig: own_kubeconfig(&cluster)?,
        fleet: cluster.create_namespace("fleet").await?,
    };
    eprintln!(
        "The fleet is the kubeconfig Secrets of namespace {}: this cluster under three names.",
        script.fleet
    );
    let outcome = demo(&script).await;
    let mut namespaces: Vec<String> = ["cluster-a", "cluster-b", "cluster-c"]
        .iter()
        .map(|member| home(&script.fleet, member))
        .collect();
    namespaces.push(script.fleet.clone());
    for namespace in namespaces {
        // After a failure, some may not have been created.
        let deleted = cluster.delete_namespace(&namespace).await;
        if outcome.is_ok() {
            deleted?;
        }
    }
    outcome
}
