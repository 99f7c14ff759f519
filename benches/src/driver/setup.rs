//! Filling the server: namespaces of ConfigMaps.

use std::time::Instant;

use anyhow::Context as _;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::Api;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};

use crate::objects;

/// Creates in flight while filling the server.
pub(super) const CREATE_CONCURRENCY: usize = 32;

/// Creates `namespace` and `count` running-looking Pods in it ([`objects::pod`], then
/// its status).
pub(super) async fn create_pods(
    client: &kube::Client,
    namespace: &str,
    count: usize,
) -> anyhow::Result<()> {
    create_namespace(client, namespace).await?;
    let api = Api::<Pod>::namespaced(client.clone(), namespace);
    let started = Instant::now();
    // Each created Pod is dropped as it comes: kept, 150,000 of them (full Pods as the
    // server answers them, managedFields and all) filled this machine's 24 GiB.
    futures::stream::iter(0..count)
        .map(|i| create_pod(&api, i))
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_for_each(|_created| futures::future::ready(Ok(())))
        .await
        .with_context(|| format!("creating Pods in {namespace}"))?;
    eprintln!(
        "[bench] {namespace}: {count} Pods created in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Creates Pod `i` ([`objects::pod`]) with `api`, then its status
/// ([`objects::pod_status`]).
pub(super) async fn create_pod(api: &Api<Pod>, i: usize) -> kube::Result<Pod> {
    let pod = api.create(&PostParams::default(), &objects::pod(i)).await?;
    let name = pod.metadata.name.unwrap_or_default();
    let status = Patch::Merge(objects::pod_status(i));
    api.patch_status(&name, &PatchParams::default(), &status)
        .await
}

/// Creates `namespace`.
pub(super) async fn create_namespace(client: &kube::Client, namespace: &str) -> anyhow::Result<()> {
    let namespaces = Api::<Namespace>::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    namespaces.create(&PostParams::default(), &ns).await?;
    Ok(())
}

/// Creates `namespace` and `count` ConfigMaps in it.
pub(super) async fn create_objects(
    client: &kube::Client,
    namespace: &str,
    count: usize,
    payload: usize,
) -> anyhow::Result<()> {
    create_namespace(client, namespace).await?;
    let api = Api::<ConfigMap>::namespaced(client.clone(), namespace);
    let started = Instant::now();
    let mut created = 0usize;
    let mut creates = futures::stream::iter(0..count)
        .map(|i| {
            let api = api.clone();
            async move {
                let cm = objects::config_map(i, payload, None);
                api.create(&PostParams::default(), &cm).await
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY);
    while let Some(result) = creates.next().await {
        result.with_context(|| format!("creating ConfigMaps in {namespace}"))?;
        created += 1;
        if created.is_multiple_of(10_000) || created == count {
            let seconds = started.elapsed().as_secs_f64();
            eprintln!(
                "[bench] {namespace}: {created}/{count} ConfigMaps created in {seconds:.1} s ({:.0}/s)",
                created as f64 / seconds
            );
        }
    }
    Ok(())
}
