//! Fleets against real servers: three control planes on loopback (the shared 1.37
//! one, which is also the management cluster, a second 1.37 one and a 1.33 one, the
//! oldest supported release), clusters joining, restarting and leaving through kubeconfig Secrets, a
//! controller in every cluster with that cluster's context, a noisy cluster that
//! delays no other, and a cluster whose API server is stopped and started again.

mod common;
#[path = "common/replicas.rs"]
mod replicas;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{eventually, eventually_async};
use informer::controller::Action;
use informer::controller::{Context, Controller, backoff};
use informer::factory::FactoryConfig;
use informer::fleet::{
    CLUSTER_NAME_LABEL, Cluster, ClusterContext, ClusterSet, KubeconfigSecrets, Kubeconfigs,
};
use informer::metrics::Metrics;
use informer::metrics::prometheus_client::registry::Registry;
use informer::testenv::{Kubernetes, TestEnv};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

/// What the tests reconcile in every cluster: a status that names the cluster and
/// the spec's value.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "fleet.informer.example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
struct WidgetSpec {
    value: String,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
struct WidgetStatus {
    observed: Option<String>,
}

const WAIT: Duration = Duration::from_secs(30);

/// A second control plane of the default release, shared by this binary's tests.
async fn second() -> &'static TestEnv {
    static SECOND: OnceCell<TestEnv> = OnceCell::const_new();
    SECOND.get_or_try_init(TestEnv::start).await.unwrap()
}

/// The three control planes, named as the tests' fleets name them, with the Widget
/// CRD installed in each.
async fn three_clusters() -> [(&'static str, &'static TestEnv); 3] {
    let clusters = [
        ("alpha", TestEnv::shared().await.unwrap()),
        ("beta", second().await),
        ("gamma", oldest().await),
    ];
    for (_, env) in clusters {
        env.install_crd(&Widget::crd()).await.unwrap();
    }
    clusters
}

/// The oldest supported release (1.33), shared by this binary's tests: a fleet's
/// members need not run one release, and 1.33 serves no streaming lists.
async fn oldest() -> &'static TestEnv {
    static OLDEST: OnceCell<TestEnv> = OnceCell::const_new();
    OLDEST
        .get_or_try_init(|| TestEnv::builder().kubernetes(Kubernetes::V1_33).start())
        .await
        .unwrap()
}

/// A namespace of this name in every cluster.
async fn namespace_everywhere(envs: &[&TestEnv], name: &str) {
    for env in envs {
        let namespace: Namespace =
            serde_json::from_value(serde_json::json!({ "metadata": { "name": name } })).unwrap();
        Api::<Namespace>::all(env.client().unwrap())
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap();
    }
}

/// A unique namespace name for one test.
fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

fn widgets(env: &TestEnv, namespace: &str) -> Api<Widget> {
    Api::namespaced(env.client().unwrap(), namespace)
}

async fn create_widget(env: &TestEnv, namespace: &str, name: &str, value: &str) {
    let widget = Widget::new(
        name,
        WidgetSpec {
            value: value.into(),
        },
    );
    widgets(env, namespace)
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();
}

async fn set_value(env: &TestEnv, namespace: &str, name: &str, value: &str) {
    widgets(env, namespace)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "spec": { "value": value } })),
        )
        .await
        .unwrap();
}

/// Waits until the server shows `observed` in the widget's status.
async fn wait_for_status(env: &TestEnv, namespace: &str, name: &str, observed: &str) {
    let api = widgets(env, namespace);
    eventually_async(&format!("{name} to show {observed}"), WAIT, || async {
        api.get_opt(name)
            .await
            .ok()
            .flatten()
            .and_then(|w| w.status?.observed)
            .as_deref()
            == Some(observed)
    })
    .await;
}

/// A Secret `name` holding `kubeconfig` under `value`, with `labels`.
fn kubeconfig_secret(name: &str, kubeconfig: &str, labels: &[(&str, &str)]) -> Secret {
    let labels: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": name, "labels": labels },
        "stringData": { "value": kubeconfig },
    }))
    .unwrap()
}

fn kubeconfig_of(env: &TestEnv) -> String {
    std::fs::read_to_string(env.kubeconfig_path()).unwrap()
}

/// Changes cluster alpha's kubeconfig Secret (in `secrets`) without changing where it
/// points, and waits until `set` restarted alpha; returns alpha's member before.
async fn rotate_alpha(secrets: &Api<Secret>, set: &ClusterSet, alpha: &TestEnv) -> Cluster {
    let before = set.cluster("alpha").unwrap();
    let changed = format!("{}\n# rotated\n", kubeconfig_of(alpha));
    secrets
        .patch(
            "alpha-kubeconfig",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "stringData": { "value": changed } })),
        )
        .await
        .unwrap();
    eventually("alpha to restart", WAIT, || {
        set.cluster("alpha")
            .is_some_and(|now| !now.same_member(&before))
    })
    .await;
    before
}

/// Runs `set` until the returned sender is used; the handle returns its result.
fn run_set(
    set: &ClusterSet,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), informer::fleet::FleetError>>,
) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let set = set.clone();
    let task = tokio::spawn(async move {
        set.run(async {
            stopped.await.ok();
        })
        .await
    });
    (stop, task)
}

#[tokio::test]
async fn clusters_join_restart_and_leave_as_their_kubeconfig_secrets_do() {
    let [(_, alpha), (_, beta), (_, gamma)] = three_clusters().await;
    let management = alpha;
    let secrets_ns = management.create_namespace("fleet-secrets").await.unwrap();
    let widget_ns = unique("fleet-widgets");
    namespace_everywhere(&[alpha, beta, gamma], &widget_ns).await;
    let secrets = Api::<Secret>::namespaced(management.client().unwrap(), &secrets_ns);
    let create = |secret: Secret| {
        let secrets = secrets.clone();
        async move {
            secrets
                .create(&PostParams::default(), &secret)
                .await
                .unwrap();
        }
    };
    create(kubeconfig_secret(
        "alpha-kubeconfig",
        &kubeconfig_of(alpha),
        &[],
    ))
    .await;
    create(kubeconfig_secret(
        "beta-kubeconfig",
        &kubeconfig_of(beta),
        &[],
    ))
    .await;
    // Cluster API's label names the cluster, whatever the Secret's name.
    create(kubeconfig_secret(
        "third",
        &kubeconfig_of(gamma),
        &[(CLUSTER_NAME_LABEL, "gamma")],
    ))
    .await;
    create(kubeconfig_secret(
        "broken-kubeconfig",
        "clusters: [not a kubeconfig",
        &[],
    ))
    .await;

    let set = ClusterSet::new(KubeconfigSecrets::new(
        management.client().unwrap(),
        &secrets_ns,
    ));
    let fleet_widgets = set.informer::<Widget>();
    let (stop, running) = run_set(&set);
    tokio::time::timeout(
        WAIT,
        set.wait_until(|names| names == ["alpha", "beta", "gamma"]),
    )
    .await
    .expect("three clusters joined");
    let rejected = set.rejected();
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert_eq!(
        rejected[0].source,
        format!("Secret {secrets_ns}/broken-kubeconfig")
    );
    assert!(
        rejected[0].to_string().contains("invalid kubeconfig"),
        "{}",
        rejected[0]
    );

    // One fleet-wide view, each object with its cluster.
    for (name, env) in [("alpha", alpha), ("beta", beta), ("gamma", gamma)] {
        create_widget(env, &widget_ns, &format!("w-{name}"), "1").await;
    }
    let in_widget_ns = |found: Vec<informer::fleet::InCluster<Arc<Widget>>>| {
        let mut seen: Vec<(String, String)> = found
            .into_iter()
            .filter(|w| w.value.namespace().as_deref() == Some(widget_ns.as_str()))
            .map(|w| (w.cluster.to_string(), w.value.name_any()))
            .collect();
        seen.sort();
        seen
    };
    eventually("every cluster's widget in the fleet view", WAIT, || {
        in_widget_ns(fleet_widgets.list_all()).len() == 3
    })
    .await;
    assert_eq!(
        in_widget_ns(fleet_widgets.list_all()),
        [
            ("alpha".to_owned(), "w-alpha".to_owned()),
            ("beta".to_owned(), "w-beta".to_owned()),
            ("gamma".to_owned(), "w-gamma".to_owned()),
        ]
    );

    // A Secret deleted: its cluster leaves, and its informers stop.
    let beta_member = set.cluster("beta").unwrap();
    let beta_informer = beta_member.factory().informer::<Widget>();
    secrets
        .delete("beta-kubeconfig", &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::timeout(WAIT, set.wait_until(|names| names == ["alpha", "gamma"]))
        .await
        .expect("beta left");
    assert!(beta_member.is_retired());
    eventually("beta's informers to stop", WAIT, || {
        beta_informer.is_stopped()
    })
    .await;

    // A Secret changed: that cluster alone restarts.
    let gamma_member = set.cluster("gamma").unwrap();
    let alpha_member = rotate_alpha(&secrets, &set, alpha).await;
    assert!(alpha_member.is_retired());
    assert!(
        set.cluster("gamma").unwrap().same_member(&gamma_member),
        "gamma did not restart"
    );

    // The broken Secret fixed: its cluster joins, nothing is rejected any more.
    secrets
        .patch(
            "broken-kubeconfig",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "stringData": { "value": kubeconfig_of(beta) } })),
        )
        .await
        .unwrap();
    tokio::time::timeout(
        WAIT,
        set.wait_until(|names| names == ["alpha", "broken", "gamma"]),
    )
    .await
    .expect("the fixed cluster joined");
    assert!(set.rejected().is_empty());

    let members = set.clusters();
    stop.send(()).unwrap();
    tokio::time::timeout(WAIT, running)
        .await
        .expect("the set stopped")
        .unwrap()
        .unwrap();
    for member in members {
        assert!(member.is_retired(), "{member:?}");
        assert!(member.factory().informer::<Widget>().is_stopped());
    }
    management.delete_namespace(&secrets_ns).await.unwrap();
}

/// What the fleet controller's reconciles did: cluster and widget name, in order.
type Log = Arc<Mutex<Vec<(String, String)>>>;

/// A controller over `set`'s Widgets in `namespace`, one worker a cluster: writes
/// `{cluster}:{value}` to the status through the cluster's context; logs each
/// reconcile. Stops when `stop` is used.
fn run_widget_controller(
    set: &ClusterSet,
    log: &Log,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controller = set.controller(|cluster| {
        Controller::<Widget>::new(cluster.factory())
            .predicate(informer::controller::Predicate::generation_changed())
            .workers(1)
    });
    let log = Arc::clone(log);
    let task = tokio::spawn(controller.run(
        move |widget: Arc<Widget>, ctx: Context<Widget>| {
            let log = Arc::clone(&log);
            async move {
                let cluster = ctx.cluster().expect("a fleet's controller").to_owned();
                log.lock()
                    .unwrap()
                    .push((cluster.clone(), widget.name_any()));
                let observed = format!("{cluster}:{}", widget.spec.value);
                let status = serde_json::json!({ "status": { "observed": observed } });
                ctx.api::<Widget>()
                    .patch_status(
                        &widget.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(&status),
                    )
                    .await?;
                tokio::time::sleep(Duration::from_millis(10)).await;
                Ok::<_, kube::Error>(Action::Done)
            }
        },
        backoff,
        async {
            stopped.await.ok();
        },
    ));
    (stop, task)
}

#[tokio::test]
async fn a_controller_in_every_cluster_with_its_context_and_a_noisy_cluster_delays_no_other() {
    let [(_, alpha), (_, beta), (_, gamma)] = three_clusters().await;
    let namespace = unique("fleet-controller");
    namespace_everywhere(&[alpha, beta, gamma], &namespace).await;
    let provider = Kubeconfigs::new()
        .config("alpha", alpha.config().clone())
        .config("beta", beta.config().clone())
        .config("gamma", gamma.config().clone());
    let ns = namespace.clone();
    let set = ClusterSet::with_config(provider, move |_| {
        FactoryConfig::default().namespace(ns.clone())
    });
    let (stop_set, set_running) = run_set(&set);
    let log = Log::default();
    let (stop, controller) = run_widget_controller(&set, &log);

    // The same reconcile, each cluster's own context: decided from each server.
    for env in [alpha, beta, gamma] {
        create_widget(env, &namespace, "w", "1").await;
    }
    for (name, env) in [("alpha", alpha), ("beta", beta), ("gamma", gamma)] {
        wait_for_status(env, &namespace, "w", &format!("{name}:1")).await;
    }

    // A storm in alpha: 150 widgets, one worker there.
    let noisy = futures::future::join_all((0..150).map(|i| {
        let namespace = namespace.clone();
        async move { create_widget(alpha, &namespace, &format!("noise-{i}"), "1").await }
    }));
    noisy.await;
    let noise_done = |log: &Log| {
        log.lock()
            .unwrap()
            .iter()
            .filter(|(cluster, name)| cluster == "alpha" && name.starts_with("noise-"))
            .count()
    };
    eventually("alpha's storm to be under way", WAIT, || {
        noise_done(&log) >= 5
    })
    .await;
    set_value(gamma, &namespace, "w", "2").await;
    wait_for_status(gamma, &namespace, "w", "gamma:2").await;
    let during = noise_done(&log);
    assert!(
        during < 100,
        "gamma's change waited for {during} of alpha's 150 reconciles"
    );
    println!("gamma's change was reconciled while alpha had done {during} of its 150");

    stop.send(()).unwrap();
    tokio::time::timeout(WAIT, controller)
        .await
        .expect("the fleet controller stopped")
        .unwrap();
    stop_set.send(()).unwrap();
    set_running.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_cluster_whose_api_server_stops_stalls_no_other_and_resumes_by_itself() {
    let alpha = TestEnv::shared().await.unwrap();
    let gamma = oldest().await;
    // Its own control plane: its API server is stopped and started again.
    let delta = TestEnv::start().await.unwrap();
    for env in [alpha, gamma, &delta] {
        env.install_crd(&Widget::crd()).await.unwrap();
    }
    let namespace = unique("fleet-outage");
    namespace_everywhere(&[alpha, gamma, &delta], &namespace).await;
    let provider = Kubeconfigs::new()
        .config("alpha", alpha.config().clone())
        .config("delta", delta.config().clone())
        .config("gamma", gamma.config().clone());
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let ns = namespace.clone();
    let set = ClusterSet::with_config(provider, move |_| {
        FactoryConfig::default()
            .namespace(ns.clone())
            .metrics(&metrics)
    });
    let fleet_widgets = set.informer::<Widget>();
    let (stop_set, set_running) = run_set(&set);
    let log = Log::default();
    let (stop, controller) = run_widget_controller(&set, &log);
    for (name, env) in [("alpha", alpha), ("delta", &delta), ("gamma", gamma)] {
        create_widget(env, &namespace, "w", "1").await;
        wait_for_status(env, &namespace, "w", &format!("{name}:1")).await;
    }

    delta.stop_apiserver().await;
    eventually("delta to be reported by name", WAIT, || {
        fleet_widgets
            .troubled()
            .iter()
            .any(|t| &*t.cluster == "delta" && t.value.is_some())
    })
    .await;
    println!("while delta is down: {:?}", fleet_widgets.troubled());
    // And in the metrics, labelled by cluster.
    let errors_of = |cluster: &str| {
        let prefix = format!(r#"informer_reflector_errors_total{{cluster="{cluster}","#);
        common::scrape::scrape(&registry)
            .lines()
            .filter(|line| line.starts_with(&prefix))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>()
    };
    eventually("delta's errors in the metrics", WAIT, || {
        errors_of("delta") > 0.0
    })
    .await;
    assert_eq!(
        errors_of("alpha"),
        0.0,
        "{}",
        common::scrape::scrape(&registry)
    );
    // The others go on.
    set_value(alpha, &namespace, "w", "2").await;
    set_value(gamma, &namespace, "w", "2").await;
    wait_for_status(alpha, &namespace, "w", "alpha:2").await;
    wait_for_status(gamma, &namespace, "w", "gamma:2").await;

    // Back: delta resumes by itself.
    delta.start_apiserver().await.unwrap();
    set_value(&delta, &namespace, "w", "2").await;
    wait_for_status(&delta, &namespace, "w", "delta:2").await;
    eventually("no cluster troubled", WAIT, || {
        fleet_widgets.troubled().is_empty()
    })
    .await;

    stop.send(()).unwrap();
    tokio::time::timeout(WAIT, controller)
        .await
        .expect("the fleet controller stopped")
        .unwrap();
    stop_set.send(()).unwrap();
    set_running.await.unwrap().unwrap();
}

/// The clusters `identity` last said it engaged.
fn engaged(replicas: &replicas::Replicas, identity: &str) -> BTreeSet<String> {
    replicas
        .lines()
        .into_iter()
        .rev()
        .find(|l| l.identity == identity && l.event == "clusters")
        .map(|l| {
            l.detail
                .split(',')
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Clusters spread over replica processes by the shard's hashing of their names:
/// each replica engages (and caches) only its own clusters, a killed member's
/// clusters move to the survivors, and no cluster, so no key, is ever worked by two
/// replicas at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_sharded_over_replicas_hands_a_killed_members_clusters_over_and_never_works_one_twice()
 {
    use replicas::{RETRY, Replicas};

    const CLUSTERS: [&str; 6] = ["c0", "c1", "c2", "c3", "c4", "c5"];
    const OBJECTS: usize = 4;
    let env = TestEnv::shared().await.unwrap();
    let namespace = env.create_namespace("fleet-shards").await.unwrap();
    let cluster_namespaces: Vec<String> = CLUSTERS
        .iter()
        .map(|cluster| format!("{namespace}-{cluster}"))
        .collect();
    for cluster_namespace in &cluster_namespaces {
        namespace_everywhere(&[env], cluster_namespace).await;
        let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), cluster_namespace);
        common::create_config_maps(&api, "obj", OBJECTS, &[]).await;
        // Nearly always being reconciled: every hand-off meets a reconcile in flight.
        api.patch(
            "obj-0",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({ "data": { "requeue": "yes" } })),
        )
        .await
        .unwrap();
    }
    let mut replicas = Replicas::fleet(
        &namespace,
        env.kubeconfig_path(),
        &CLUSTERS,
        2,
        Duration::from_millis(200),
        Duration::from_secs(2),
    );
    for identity in ["a", "b", "c"] {
        replicas.spawn(identity, None);
    }
    let every_key = |after: u128, replicas: &Replicas| -> BTreeSet<String> {
        replicas
            .lines()
            .into_iter()
            .filter(|l| l.at >= after && l.event == "reconcile-start")
            .map(|l| l.detail.split(' ').next().unwrap_or_default().to_owned())
            .collect()
    };
    eventually(
        "every cluster's objects reconciled",
        Duration::from_secs(60),
        || every_key(0, &replicas).len() == CLUSTERS.len() * OBJECTS,
    )
    .await;
    // Settled: the three read each other, and their clusters split the fleet.
    eventually(
        "the clusters to be split among a, b and c",
        Duration::from_secs(60),
        || {
            let shares: Vec<BTreeSet<String>> = ["a", "b", "c"]
                .iter()
                .map(|i| engaged(&replicas, i))
                .collect();
            let total: usize = shares.iter().map(BTreeSet::len).sum();
            let union: BTreeSet<&String> = shares.iter().flatten().collect();
            total == CLUSTERS.len() && union.len() == CLUSTERS.len()
        },
    )
    .await;
    let b_had = engaged(&replicas, "b");
    println!(
        "clusters: a {:?}, b {b_had:?}, c {:?}",
        engaged(&replicas, "a"),
        engaged(&replicas, "c")
    );
    tokio::time::sleep(RETRY * 4).await;

    // SIGKILL b: its clusters move to a and c, once its lease has expired.
    let killed_at = replicas.kill("b");
    eventually(
        "a and c to share every cluster",
        Duration::from_secs(60),
        || {
            let a = engaged(&replicas, "a");
            let c = engaged(&replicas, "c");
            a.len() + c.len() == CLUSTERS.len() && a.union(&c).count() == CLUSTERS.len()
        },
    )
    .await;
    eventually(
        "b's clusters reconciled by the survivors",
        Duration::from_secs(60),
        || {
            let since = every_key(killed_at, &replicas);
            b_had
                .iter()
                .all(|cluster| (0..OBJECTS).all(|i| since.contains(&format!("{cluster}/obj-{i}"))))
        },
    )
    .await;
    tokio::time::sleep(RETRY * 4).await;
    let stopped_at = replicas.stop_all(&["a", "c"]).await;
    assert!(stopped_at > killed_at);

    replicas.assert_no_key_reconciled_twice_at_once();
    // No cluster worked by two replicas at once: a cluster's reconciles (any key) of
    // different replicas never overlap.
    let mut by_cluster: BTreeMap<String, Vec<(u128, u128, String)>> = BTreeMap::new();
    for (start, end, identity, key) in replicas.spans() {
        let cluster = key.split('/').next().unwrap_or_default().to_owned();
        by_cluster
            .entry(cluster)
            .or_default()
            .push((start, end, identity));
    }
    for (cluster, spans) in by_cluster {
        for (i, (start, end, identity)) in spans.iter().enumerate() {
            for (other_start, other_end, other) in &spans[i + 1..] {
                assert!(
                    identity == other || end <= other_start || other_end <= start,
                    "cluster {cluster} worked by {identity} and {other} at once\n{}",
                    replicas.describe()
                );
            }
        }
    }
    env.delete_namespace(&namespace).await.unwrap();
    for cluster_namespace in cluster_namespaces {
        env.delete_namespace(&cluster_namespace).await.unwrap();
    }
}

/// (replica, cluster, widget, value) of every reconcile of several replicas.
type ReplicaLog = Arc<Mutex<Vec<(String, String, String, String)>>>;

/// One replica of the leader-elected fleet test: its elector, set and controller.
struct LeaderElectedReplica {
    stop_elector: tokio::sync::oneshot::Sender<()>,
    electing: tokio::task::JoinHandle<()>,
    stop: tokio::sync::oneshot::Sender<()>,
    controlling: tokio::task::JoinHandle<()>,
    stop_set: tokio::sync::oneshot::Sender<()>,
    set_running: tokio::task::JoinHandle<Result<(), informer::fleet::FleetError>>,
}

impl LeaderElectedReplica {
    /// Stops the controller, then the elector (releasing the Lease), then the set,
    /// each within the test's wait.
    async fn stop(self) {
        self.stop.send(()).unwrap();
        tokio::time::timeout(WAIT, self.controlling)
            .await
            .unwrap()
            .unwrap();
        self.stop_elector.send(()).unwrap();
        tokio::time::timeout(WAIT, self.electing)
            .await
            .unwrap()
            .unwrap();
        self.stop_set.send(()).unwrap();
        self.set_running.await.unwrap().unwrap();
    }
}

/// With leader election, one replica works the whole fleet: two replicas in this
/// process run a leader-elected controller in every cluster; only the leader
/// reconciles, in every cluster, and the other takes the whole fleet over once the
/// leader steps down.
#[tokio::test]
async fn with_leader_election_the_leader_works_the_whole_fleet() {
    use informer::leader::{LeaderElectionConfig, LeaderElector};
    use replicas::{LEASE, RENEW, RETRY};

    let alpha = TestEnv::shared().await.unwrap();
    let gamma = oldest().await;
    for env in [alpha, gamma] {
        env.install_crd(&Widget::crd()).await.unwrap();
    }
    let namespace = unique("fleet-leader");
    namespace_everywhere(&[alpha, gamma], &namespace).await;
    let log = ReplicaLog::default();

    let start_replica = |identity: &'static str| {
        let elector = LeaderElector::new(
            alpha.client().unwrap(),
            LeaderElectionConfig::default()
                .lease(namespace.clone(), "fleet")
                .identity(identity)
                .lease_duration(LEASE)
                .renew_deadline(RENEW)
                .retry_period(RETRY),
        )
        .unwrap();
        let leadership = elector.handle();
        let (stop_elector, elector_stopped) = tokio::sync::oneshot::channel::<()>();
        let electing = tokio::spawn(elector.run(async {
            elector_stopped.await.ok();
        }));
        let ns = namespace.clone();
        let set = ClusterSet::with_config(
            Kubeconfigs::new()
                .config("alpha", alpha.config().clone())
                .config("gamma", gamma.config().clone()),
            move |_| FactoryConfig::default().namespace(ns.clone()),
        );
        let (stop_set, set_running) = run_set(&set);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let log = Arc::clone(&log);
        let controller = set.controller(move |cluster| {
            Controller::<Widget>::new(cluster.factory())
                .predicate(informer::controller::Predicate::generation_changed())
                .leader_election(leadership.clone())
        });
        let controlling = tokio::spawn(controller.run(
            move |widget: Arc<Widget>, ctx: Context<Widget>| {
                let log = Arc::clone(&log);
                async move {
                    let cluster = ctx.cluster().unwrap_or_default().to_owned();
                    log.lock().unwrap().push((
                        identity.to_owned(),
                        cluster.clone(),
                        widget.name_any(),
                        widget.spec.value.clone(),
                    ));
                    let observed = format!("{cluster}:{}", widget.spec.value);
                    ctx.api::<Widget>()
                        .patch_status(
                            &widget.name_any(),
                            &PatchParams::default(),
                            &Patch::Merge(
                                serde_json::json!({ "status": { "observed": observed } }),
                            ),
                        )
                        .await?;
                    Ok::<_, kube::Error>(Action::Done)
                }
            },
            backoff,
            async {
                stopped.await.ok();
            },
        ));
        LeaderElectedReplica {
            stop_elector,
            electing,
            stop,
            controlling,
            stop_set,
            set_running,
        }
    };

    let first = start_replica("first");
    for env in [alpha, gamma] {
        create_widget(env, &namespace, "w", "1").await;
    }
    for (name, env) in [("alpha", alpha), ("gamma", gamma)] {
        wait_for_status(env, &namespace, "w", &format!("{name}:1")).await;
    }
    let second = start_replica("second");
    for env in [alpha, gamma] {
        set_value(env, &namespace, "w", "2").await;
    }
    for (name, env) in [("alpha", alpha), ("gamma", gamma)] {
        wait_for_status(env, &namespace, "w", &format!("{name}:2")).await;
    }
    let by = |replica: &str| {
        log.lock()
            .unwrap()
            .iter()
            .filter(|entry| entry.0 == replica)
            .map(|entry| entry.1.clone())
            .collect::<BTreeSet<String>>()
    };
    assert_eq!(
        by("first"),
        BTreeSet::from(["alpha".to_owned(), "gamma".to_owned()])
    );
    assert!(
        by("second").is_empty(),
        "the follower reconciled: {:?}",
        log.lock().unwrap()
    );

    // The leader steps down: the other replica works the whole fleet.
    first.stop().await;
    for env in [alpha, gamma] {
        set_value(env, &namespace, "w", "3").await;
    }
    for (name, env) in [("alpha", alpha), ("gamma", gamma)] {
        wait_for_status(env, &namespace, "w", &format!("{name}:3")).await;
    }
    assert_eq!(
        by("second"),
        BTreeSet::from(["alpha".to_owned(), "gamma".to_owned()])
    );

    second.stop().await;
}

/// A cluster whose kubeconfig changed restarts: its old controller is stopped and a
/// new one started. The new one starts only once the old one's reconciles have
/// ended, so one key is never reconciled by both at once in this replica.
#[tokio::test]
async fn a_restarted_cluster_s_new_controller_waits_for_the_old_one_s_reconciles() {
    let alpha = TestEnv::shared().await.unwrap();
    alpha.install_crd(&Widget::crd()).await.unwrap();
    let secrets_ns = alpha.create_namespace("fleet-restart").await.unwrap();
    let widget_ns = unique("fleet-restart-widgets");
    namespace_everywhere(&[alpha], &widget_ns).await;
    let secrets = Api::<Secret>::namespaced(alpha.client().unwrap(), &secrets_ns);
    secrets
        .create(
            &PostParams::default(),
            &kubeconfig_secret("alpha-kubeconfig", &kubeconfig_of(alpha), &[]),
        )
        .await
        .unwrap();
    create_widget(alpha, &widget_ns, "slow", "1").await;
    let ns = widget_ns.clone();
    let set = ClusterSet::with_config(
        KubeconfigSecrets::new(alpha.client().unwrap(), &secrets_ns),
        move |_| FactoryConfig::default().namespace(ns.clone()),
    );
    let (stop_set, set_running) = run_set(&set);
    // Each reconcile of the one Widget takes 1.5 s and asks to run again at once: it
    // is nearly always being reconciled.
    let running = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let most = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let starts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controller = set.controller(|cluster| Controller::<Widget>::new(cluster.factory()));
    let reconcile = {
        let (running, most, starts) = (running.clone(), most.clone(), starts.clone());
        move |_: Arc<Widget>, _: Context<Widget>| {
            let (running, most, starts) = (running.clone(), most.clone(), starts.clone());
            async move {
                use std::sync::atomic::Ordering::SeqCst;
                starts.fetch_add(1, SeqCst);
                let now = running.fetch_add(1, SeqCst) + 1;
                most.fetch_max(now, SeqCst);
                tokio::time::sleep(Duration::from_millis(1500)).await;
                running.fetch_sub(1, SeqCst);
                Ok::<_, kube::Error>(Action::RequeueAfter(Duration::ZERO))
            }
        }
    };
    let task = tokio::spawn(controller.run(reconcile, backoff, async {
        stopped.await.ok();
    }));
    eventually("the first reconcile", WAIT, || {
        running.load(std::sync::atomic::Ordering::SeqCst) == 1
    })
    .await;

    // The kubeconfig changes while a reconcile runs: the cluster restarts.
    let member = rotate_alpha(&secrets, &set, alpha).await;
    let before = starts.load(std::sync::atomic::Ordering::SeqCst);
    eventually("the new controller to reconcile", WAIT, || {
        starts.load(std::sync::atomic::Ordering::SeqCst) >= before + 2
    })
    .await;
    stop.send(()).unwrap();
    tokio::time::timeout(WAIT, task)
        .await
        .expect("the fleet controller stopped")
        .unwrap();
    stop_set.send(()).unwrap();
    set_running.await.unwrap().unwrap();
    assert!(member.is_retired(), "the cluster did restart");
    assert_eq!(
        most.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the Widget was reconciled twice at once across the restart"
    );
}
