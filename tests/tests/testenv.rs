//! The embedded control plane itself: it must be a real, verified, faultable API server.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use informer::testenv::TestEnv;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::{Client, Config, Resource, ResourceExt};

fn config_map(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": name },
        "data": { "key": value },
    }))
    .unwrap()
}

async fn set_value(api: &Api<ConfigMap>, name: &str, value: &str) -> String {
    let patch = serde_json::json!({ "data": { "key": value } });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
}

#[tokio::test]
async fn creates_and_reads_an_object_through_a_verified_client() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("testenv-crud").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);

    let created = api
        .create(&PostParams::default(), &config_map("hello", "world"))
        .await
        .unwrap();
    let read = api.get("hello").await.unwrap();
    assert_eq!(read.data.unwrap()["key"], "world");
    assert_eq!(read.metadata.uid, created.metadata.uid);

    // The kubeconfig file on disk describes the same server.
    let kubeconfig = kube::config::Kubeconfig::read_from(env.kubeconfig_path()).unwrap();
    let from_file = Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let api = Api::<ConfigMap>::namespaced(Client::try_from(from_file).unwrap(), &ns);
    assert_eq!(
        api.get("hello").await.unwrap().metadata.uid,
        created.metadata.uid
    );

    // TLS is really verified: without the control plane's CA the handshake fails.
    let mut untrusted = env.config().clone();
    untrusted.root_cert = None;
    untrusted.accept_invalid_certs = false;
    let api = Api::<ConfigMap>::namespaced(Client::try_from(untrusted).unwrap(), &ns);
    let err = api.get("hello").await.unwrap_err();
    assert!(
        !matches!(err, kube::Error::Api(_)),
        "a client without the CA must fail the TLS handshake, got {err}"
    );
}

#[tokio::test]
async fn restricted_user_is_denied_until_rbac_allows_it() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("testenv-rbac").await.unwrap();
    let restricted = Api::<ConfigMap>::namespaced(env.restricted_client().unwrap(), &ns);

    match restricted.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 403, "{status:?}"),
        other => panic!("expected 403 Forbidden, got {other:?}"),
    }

    env.allow_restricted(&ns, "", "configmaps", &["get", "list", "watch"])
        .await
        .unwrap();

    // RBAC's authorizer cache is fed by an informer: allow a moment for it to see the binding.
    let mut allowed = false;
    for _ in 0..100 {
        if restricted.list(&ListParams::default()).await.is_ok() {
            allowed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(allowed, "the role binding never took effect");
}

/// The programs (by file name) running with `dir` on their command line: the servers
/// of a control plane and their supervisors all name its directory.
fn processes_naming(dir: &std::path::Path) -> Vec<String> {
    let dir = dir.to_string_lossy();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.iter().any(|a| a.contains(dir.as_ref())) {
            found.push(args[0].rsplit('/').next().unwrap_or_default().to_owned());
        }
    }
    found
}

#[tokio::test]
async fn restart_keeps_data_and_drop_stops_everything() {
    // With a controller manager too, to see it outlive the API server's restart and
    // stop with the rest.
    let env = TestEnv::builder()
        .controller_manager(true)
        .start()
        .await
        .unwrap();
    let ns = env.create_namespace("testenv-restart").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    let created = api
        .create(&PostParams::default(), &config_map("survivor", "1"))
        .await
        .unwrap();

    env.stop_apiserver().await;
    assert!(api.get("survivor").await.is_err(), "the API server is down");
    env.start_apiserver().await.unwrap();

    // The same client reconnects, and etcd kept the object as it was.
    let read = api.get("survivor").await.unwrap();
    assert_eq!(read.metadata.uid, created.metadata.uid);
    assert_eq!(
        read.metadata.resource_version,
        created.metadata.resource_version
    );

    env.restart_apiserver().await.unwrap();
    assert_eq!(
        api.get("survivor").await.unwrap().metadata.uid,
        created.metadata.uid
    );

    let dir = env.dir().to_owned();
    let running = processes_naming(&dir);
    for server in ["etcd", "kube-apiserver", "kube-controller-manager"] {
        assert!(
            running.iter().any(|p| p == server),
            "{server} in {running:?}"
        );
    }
    let url = env.apiserver_url();
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    drop(env);
    assert!(!dir.exists(), "{} is left behind", dir.display());
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the API server still listens on {url}"
    );
    let left = processes_naming(&dir);
    assert!(left.is_empty(), "still running: {left:?}");
}

/// Without `controller_manager(true)` nothing acts on deletions: a foreground
/// deletion waits on its finalizer, a background one leaves the dependents, and a
/// deleted namespace keeps its objects. (With one, the dependents go within a fraction
/// of a second and the namespace after the namespace controller's 5 s grace period:
/// `testenv_controller_manager.rs`.)
#[tokio::test]
async fn a_plain_control_plane_runs_no_garbage_collector_or_namespace_controller() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("testenv-plain").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    let owned_by = |name: &str, owner: &ConfigMap| {
        let mut owned = config_map(name, "owned");
        owned.metadata.owner_references = Some(vec![owner.controller_owner_ref(&()).unwrap()]);
        owned
    };
    let post = PostParams::default();
    for (owner, dependent) in [("background", "left-behind"), ("foreground", "blocking")] {
        let owner = api.create(&post, &config_map(owner, "1")).await.unwrap();
        api.create(&post, &owned_by(dependent, &owner))
            .await
            .unwrap();
    }
    api.delete("background", &DeleteParams::background())
        .await
        .unwrap();
    api.delete("foreground", &DeleteParams::foreground())
        .await
        .unwrap();
    env.delete_namespace(&ns).await.unwrap();

    // Past the namespace controller's grace period, many times the collector's delay.
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert!(api.get_opt("background").await.unwrap().is_none());
    assert!(api.get_opt("left-behind").await.unwrap().is_some());
    let waiting = api.get("foreground").await.unwrap();
    assert!(
        waiting
            .finalizers()
            .iter()
            .any(|f| f == "foregroundDeletion")
    );
    assert!(api.get_opt("blocking").await.unwrap().is_some());
    let namespace = Api::<Namespace>::all(env.client().unwrap())
        .get(&ns)
        .await
        .unwrap();
    assert!(namespace.metadata.deletion_timestamp.is_some());
}

#[tokio::test]
async fn compaction_makes_an_old_resource_version_answer_410_gone() {
    let env = TestEnv::builder().watch_cache(false).start().await.unwrap();
    let ns = env.create_namespace("testenv-compact").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    let old_rv = api
        .create(&PostParams::default(), &config_map("churn", "0"))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    for i in 1..=3 {
        set_value(&api, "churn", &i.to_string()).await;
    }

    // Before compaction the old version is still watchable.
    let events: Vec<_> = api
        .watch(&WatchParams::default().timeout(1), &old_rv)
        .await
        .unwrap()
        .take(3)
        .try_collect()
        .await
        .unwrap();
    assert!(
        events.iter().all(|e| matches!(e, WatchEvent::Modified(_))),
        "{events:?}"
    );

    let revision = env.compact_etcd().await.unwrap();
    assert!(revision >= old_rv.parse::<i64>().unwrap());

    let mut stream = api
        .watch(&WatchParams::default().timeout(5), &old_rv)
        .await
        .unwrap()
        .boxed();
    match stream.next().await {
        Some(Ok(WatchEvent::Error(status))) => assert_eq!(status.code, 410, "{status:?}"),
        other => panic!("expected a 410 Gone watch event, got {other:?}"),
    }
}

/// Counts the ERROR events of the future it is attached to.
struct ErrorCounter(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl tracing::Subscriber for ErrorCounter {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if *event.metadata().level() == tracing::Level::ERROR {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// A starting server refuses connections and answers `/readyz` (or the controller
/// manager's `/healthz`) with 500 for a while: that is expected, and polling it must
/// not log errors.
#[tokio::test]
async fn starting_and_restarting_the_control_plane_logs_no_error() {
    use tracing::instrument::WithSubscriber;
    let errors = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = ErrorCounter(std::sync::Arc::clone(&errors));
    async {
        let env = TestEnv::builder()
            .controller_manager(true)
            .start()
            .await
            .unwrap();
        env.restart_apiserver().await.unwrap();
        let api = Api::<ConfigMap>::all(env.client().unwrap());
        api.list(&ListParams::default().limit(1)).await.unwrap();
    }
    .with_subscriber(counter)
    .await;
    assert_eq!(errors.load(std::sync::atomic::Ordering::SeqCst), 0);
}
