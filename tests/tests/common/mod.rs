//! Helpers shared by the integration tests (each test file includes this module).
#![allow(dead_code, unreachable_pub)]

pub mod flavour;
pub mod scrape;

use std::future::Future;

use futures::future::BoxFuture;
use std::time::Duration;

use informer::testenv::TestEnv;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};

/// Polls `check` every 20 ms until it returns true; panics with `what` after `limit`.
pub async fn eventually(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Like [`eventually`], for an async check.
pub async fn eventually_async<F, Fut>(what: &str, limit: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A ConfigMap with one data entry and the given labels.
pub fn config_map(name: &str, value: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let labels: serde_json::Map<String, serde_json::Value> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v)))
        .collect();
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": name, "labels": labels },
        "data": { "key": value },
    }))
    .expect("a valid ConfigMap")
}

/// Creates `count` ConfigMaps named `{prefix}-{i}`, a few requests at a time.
pub async fn create_config_maps(
    api: &Api<ConfigMap>,
    prefix: &str,
    count: usize,
    labels: &[(&str, &str)],
) {
    use futures::StreamExt;
    futures::stream::iter(0..count)
        .map(|i| {
            let cm = config_map(&format!("{prefix}-{i}"), &i.to_string(), labels);
            async move { api.create(&PostParams::default(), &cm).await.unwrap() }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
}

/// Waits until a list served from the API server's watch cache (resourceVersion "0",
/// what an informer's first list asks for) shows at least `count` objects. The watch
/// cache trails etcd by a moment: a test that creates objects and then asserts they
/// arrive in an informer's *initial* list must wait for it first.
pub async fn wait_for_watch_cache<K>(api: &Api<K>, count: usize)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let params = kube::api::ListParams::default().match_any();
    eventually_async(
        "the watch cache to catch up",
        Duration::from_secs(20),
        || async {
            api.list(&params)
                .await
                .is_ok_and(|list| list.items.len() >= count)
        },
    )
    .await;
}

/// Creates `a` and `b` labelled `app=watched`, and `noise` without the label, in the
/// namespace of `api`: the set-up of the 410 Gone tests.
pub async fn create_watched_pair_and_noise(api: &Api<ConfigMap>) {
    for name in ["a", "b"] {
        api.create(
            &PostParams::default(),
            &config_map(name, "1", &[("app", "watched")]),
        )
        .await
        .unwrap();
    }
    api.create(&PostParams::default(), &config_map("noise", "0", &[]))
        .await
        .unwrap();
}

/// On a control plane without the watch cache: writes to `noise` (which a watch on
/// `app=watched` does not see) move etcd past the watcher's last version (without the
/// watch cache there are no bookmarks to tell it), then compaction drops every version
/// up to now, so the watcher's next watch gets 410 Gone.
pub async fn expire_watches_on_app_watched(env: &TestEnv, api: &Api<ConfigMap>) {
    for i in 1..=5 {
        let patch = serde_json::json!({ "data": { "key": i.to_string() } });
        api.patch("noise", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }
    env.compact_etcd().await.unwrap();
}

/// A running informer (or anything else run until stopped, such as a controller):
/// stop it with [`Running::stop`].
pub struct Running<E = informer::shared_informer::InformerError> {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), E>>,
}

impl<E: std::fmt::Debug> Running<E> {
    /// Stops it and waits (at most 10 s) until its run has returned `Ok`.
    pub async fn stop(self) {
        self.stop.send(()).ok();
        tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("run returned in time")
            .expect("run did not panic")
            .expect("run succeeded");
    }
}

/// Spawns `run(stopped)`, where `stopped` completes when [`Running::stop`] is called.
pub fn spawn_until_stopped<F, E>(run: impl FnOnce(BoxFuture<'static, ()>) -> F) -> Running<E>
where
    F: Future<Output = Result<(), E>> + Send + 'static,
    E: Send + 'static,
{
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run(Box::pin(async {
        stopped.await.ok();
    })));
    Running { stop, task }
}

/// Runs `informer` in a task (client-go's `go informer.Run(stop)`).
pub fn spawn_run<K>(informer: &informer::shared_informer::SharedIndexInformer<K>) -> Running
where
    K: kube::Resource + Send + Sync + 'static,
{
    let informer = informer.clone();
    spawn_until_stopped(|stopped| async move { informer.run(stopped).await })
}

/// On a server that refuses streaming lists (`env`, without the watch cache, so that a
/// compaction makes an old version 410 at once): an informer with the default config
/// asks for one once, lists and watches instead, syncs, follows changes, relists by a
/// plain list after a 410, and never asks for a streaming list again. Shared by the
/// 1.37 test with the `WatchList` gate off and the 1.33 one, where it is off by default.
pub async fn refused_streaming_lists_are_listed_and_watched(env: &TestEnv) {
    use informer::reflector::source::ApiListerWatcher;
    use informer::shared_informer::{InformerConfig, SharedIndexInformer, wait_for_cache_sync};
    use kube::ResourceExt;
    const WAIT: Duration = Duration::from_secs(30);

    let proxy = env.fault_proxy().await.unwrap();
    let ns = env.create_namespace("streaming-refused").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    create_watched_pair_and_noise(&api).await;

    let through_proxy = Api::<ConfigMap>::namespaced(proxy.client().unwrap(), &ns);
    let informer = SharedIndexInformer::with_config(
        ApiListerWatcher::new(through_proxy).labels("app=watched"),
        InformerConfig::default(),
    )
    .unwrap();
    let running = spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    let values = || {
        informer
            .indexer()
            .list()
            .iter()
            .map(|o| {
                let value = o.data.as_ref().and_then(|d| d.get("key").cloned());
                (o.name_any(), value.unwrap_or_default())
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let expect = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    assert_eq!(values(), expect(&[("a", "1"), ("b", "1")]));
    let stats = informer.reflector_stats().unwrap();
    assert!(stats.streaming_list_refused, "{stats:?}");
    assert_eq!((stats.streaming_list_requests, stats.lists), (1, 1));

    // The watch follows a change.
    let patch = serde_json::json!({ "data": { "key": "2" } });
    api.patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    eventually("the update of a", WAIT, || {
        values() == expect(&[("a", "2"), ("b", "1")])
    })
    .await;

    // Cut the watch while etcd moves on and is compacted: it comes back to a 410, and
    // the informer relists, by a plain list, with what changed meanwhile.
    proxy.disconnect().await;
    let patch = serde_json::json!({ "data": { "key": "3" } });
    api.patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    expire_watches_on_app_watched(env, &api).await;
    proxy.reconnect().await.unwrap();
    eventually("the relist", WAIT, || {
        informer.reflector_stats().unwrap().lists == 2
    })
    .await;
    eventually("the relisted a", WAIT, || {
        values() == expect(&[("a", "3"), ("b", "1")])
    })
    .await;
    api.delete("b", &kube::api::DeleteParams::default())
        .await
        .unwrap();
    eventually("the delete of b", WAIT, || {
        values() == expect(&[("a", "3")])
    })
    .await;

    let stats = informer.reflector_stats().unwrap();
    assert!(stats.streaming_list_refused);
    assert_eq!(stats.streaming_list_requests, 1, "never asked again");
    running.stop().await;
}

/// A shard member run on a task of its own until [`leave`](Self::leave).
pub struct RunningMember {
    /// Its handle: its view of the group, its share.
    pub handle: informer::shard::ShardHandle,
    stop: tokio::sync::oneshot::Sender<()>,
    run: tokio::task::JoinHandle<()>,
}

impl RunningMember {
    /// Starts a member of `config`'s group through `client`.
    pub fn join(client: kube::Client, config: informer::shard::ShardConfig) -> Self {
        let member = informer::shard::ShardMember::new(client, config).unwrap();
        let handle = member.handle();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let run = tokio::spawn(member.run(async {
            stopped.await.ok();
        }));
        Self { handle, stop, run }
    }

    /// Stops it (it releases its Lease) and waits, at most a minute, for its run.
    pub async fn leave(self) {
        self.stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(60), self.run)
            .await
            .expect("the member stopped in time")
            .unwrap();
    }
}
