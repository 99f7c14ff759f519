//! Builders shared by the unit tests of several modules.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::key::ObjectKey;

/// A ConfigMap named by `key` (`ns/name` or `name`) with `labels` and
/// resourceVersion `version`, so tests can tell its states apart.
pub(crate) fn config_map(key: &str, labels: &[(&str, &str)], version: u32) -> ConfigMap {
    let key = ObjectKey::parse(key).expect("a valid key");
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(key.name),
            namespace: key.namespace,
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).into(), (*v).into()))
                    .collect(),
            ),
            resource_version: Some(version.to_string()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The resourceVersion set by [`config_map`].
pub(crate) fn version(obj: &ConfigMap) -> u32 {
    obj.metadata
        .resource_version
        .as_deref()
        .expect("a resourceVersion")
        .parse()
        .expect("a numeric resourceVersion")
}

/// The names of `objects`, sorted, to compare query results whatever their order.
pub(crate) fn names<K: kube::Resource>(objects: &[std::sync::Arc<K>]) -> Vec<String> {
    let mut names: Vec<String> = objects
        .iter()
        .map(|o| o.meta().name.clone().unwrap_or_default())
        .collect();
    names.sort();
    names
}

/// Runs `informer` in a task until the returned sender is used (or dropped).
pub(crate) fn spawn_run(
    informer: &crate::shared_informer::SharedIndexInformer<ConfigMap>,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), crate::shared_informer::InformerError>>,
) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let informer = informer.clone();
    let running = tokio::spawn(async move {
        informer
            .run(async {
                stopped.await.ok();
            })
            .await
    });
    (stop, running)
}

/// Polls `check` every 5 ms until it holds; panics naming `what` once `limit` has
/// passed on tokio's clock (so a test with paused time waits no real time).
pub(crate) async fn until(what: &str, limit: std::time::Duration, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never happened within {limit:?}: {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}
