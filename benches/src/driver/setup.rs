//! Filling the server: namespaces of ConfigMaps.

use std::time::Instant;

use anyhow::Context as _;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

use crate::objects;

/// Creates in flight while filling the server.
pub(super) const CREATE_CONCURRENCY: usize = 32;

/// Creates `namespace` and `count` ConfigMaps in it.
pub(super) async fn create_objects(
    client: &kube::Client,
    namespace: &str,
    count: usize,
    payload: usize,
) -> anyhow::Result<()> {
    let namespaces = Api::<Namespace>::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    namespaces.create(&PostParams::default(), &ns).await?;
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
