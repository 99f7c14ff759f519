//! Scenario 7: **metadata-only sync of the 50,000 ConfigMaps**, against full objects.
//!
//! Four implementations, alternating in each pair so that a load change on the machine
//! hits them alike: ours full (`SharedIndexInformer<ConfigMap>`, default options),
//! ours metadata-only (`SharedIndexInformer<PartialObjectMeta<ConfigMap>>`, which asks
//! for `PartialObjectMetadata`), kube-runtime's metadata-only
//! `reflector(writer, watcher(Api::<PartialObjectMeta<ConfigMap>>, Config::default()))`
//! (kube 5's form of the deprecated `metadata_watcher`, the same requests) and kube-runtime's
//! full `reflector` + `watcher`. Each is one `bench-worker sync` child, measured like
//! scenarios 1 and 2 (time to synced, CPU, peak RSS).
//!
//! Rows: the metadata-only pair side by side (ours vs kube-runtime), the full pair of
//! the same run, and for each side what metadata-only costs as a share of full.

use std::path::Path;

use futures::StreamExt;
use informer::reflector::ApiListerWatcher;
use informer::shared_informer::{InformerOptions, SharedIndexInformer, wait_for_cache_sync};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::core::PartialObjectMeta;
use kube_runtime::reflector::{self, Store};
use kube_runtime::watcher;

use crate::report::{Implementation, Row, SyncSample, median};
use crate::sync::sync_pairs;

/// A synced metadata-only cache of either implementation.
pub enum MetadataCache {
    /// Ours.
    Ours(SharedIndexInformer<PartialObjectMeta<ConfigMap>>),
    /// kube-runtime's store behind its `metadata_watcher`.
    KubeRuntime(Store<PartialObjectMeta<ConfigMap>>),
}

impl MetadataCache {
    /// How many objects it holds.
    pub fn len(&self) -> usize {
        match self {
            MetadataCache::Ours(informer) => informer.indexer().len(),
            MetadataCache::KubeRuntime(store) => store.len(),
        }
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Worker side: starts the metadata-only `implementation` on `api`'s namespace and
/// returns once it has synced. Both sides with default options.
pub async fn start_and_sync(
    implementation: Implementation,
    api: Api<ConfigMap>,
) -> anyhow::Result<MetadataCache> {
    let namespace = api.namespace().map(str::to_owned);
    let client = api.into_client();
    match implementation {
        Implementation::OursMetadata => {
            let informer = SharedIndexInformer::with_options(
                ApiListerWatcher::<PartialObjectMeta<ConfigMap>>::in_namespace(
                    client,
                    namespace.as_deref(),
                ),
                InformerOptions::default(),
            )?;
            tokio::spawn({
                let informer = informer.clone();
                async move { informer.run(std::future::pending()).await }
            });
            wait_for_cache_sync(&[&informer]).await;
            Ok(MetadataCache::Ours(informer))
        }
        Implementation::KubeRuntimeMetadata => {
            // kube 5's metadata watcher: a `watcher` over `Api<PartialObjectMeta<K>>`
            // (what the deprecated `metadata_watcher` now calls), which asks for
            // `PartialObjectMetadata` as ours does.
            let api = match &namespace {
                Some(ns) => Api::<PartialObjectMeta<ConfigMap>>::namespaced(client, ns),
                None => Api::<PartialObjectMeta<ConfigMap>>::all(client),
            };
            let (reader, writer) = reflector::store::<PartialObjectMeta<ConfigMap>>();
            let stream =
                reflector::reflector(writer, watcher::watcher(api, watcher::Config::default()));
            tokio::spawn(stream.for_each(|_| futures::future::ready(())));
            reader.wait_until_ready().await?;
            Ok(MetadataCache::KubeRuntime(reader))
        }
        other => anyhow::bail!("{} is not a metadata-only implementation", other.as_str()),
    }
}

/// Driver side: `pairs` rounds of the four implementations on `(namespace, objects)`;
/// the rows go to `rows`, every sample is returned.
pub async fn scenario(
    worker: &Path,
    kubeconfig: Option<&Path>,
    target: (&str, usize),
    pairs: usize,
    label: &str,
    rows: &mut Vec<Row>,
) -> anyhow::Result<Vec<SyncSample>> {
    let mut metadata = Vec::new();
    let mut full = Vec::new();
    for round in 0..pairs {
        // Each call runs one pair: the log names the round instead.
        let logged = format!("{label}, round {}", round + 1);
        // One pair of each at a time, so the four alternate.
        metadata.extend(
            sync_pairs(
                worker,
                kubeconfig,
                target,
                [
                    Implementation::OursMetadata,
                    Implementation::KubeRuntimeMetadata,
                ],
                1,
                &logged,
            )
            .await?,
        );
        full.extend(
            sync_pairs(
                worker,
                kubeconfig,
                target,
                [Implementation::Ours, Implementation::KubeRuntime],
                1,
                &logged,
            )
            .await?,
        );
    }
    rows.extend(rows_of(label, &metadata, &full));
    let samples = metadata
        .into_iter()
        .chain(full)
        .flat_map(|(ours, theirs)| [ours, theirs])
        .collect();
    Ok(samples)
}

/// The rows: metadata-only ours vs kube-runtime, full ours vs kube-runtime, and each
/// side's metadata-only figure as a share of its full one.
fn rows_of(
    label: &str,
    metadata: &[(SyncSample, SyncSample)],
    full: &[(SyncSample, SyncSample)],
) -> Vec<Row> {
    type Metric = (&'static str, fn(&SyncSample) -> f64);
    const METRICS: [Metric; 4] = [
        ("time to synced (s)", |s| s.synced_seconds),
        ("CPU to sync, user+sys (s)", |s| s.cpu_seconds),
        ("peak RSS (MiB)", |s| s.peak_rss_kib as f64 / 1024.0),
        ("RSS after sync above start, per object (bytes)", |s| {
            (s.rss_after_sync_kib.saturating_sub(s.baseline_rss_kib) * 1024) as f64
                / s.objects.max(1) as f64
        }),
    ];
    let medians = |pairs: &[(SyncSample, SyncSample)], f: fn(&SyncSample) -> f64| {
        (
            median(pairs.iter().map(|(ours, _)| f(ours))),
            median(pairs.iter().map(|(_, theirs)| f(theirs))),
        )
    };
    let mut rows = Vec::new();
    for (what, pairs) in [("metadata-only", metadata), ("full", full)] {
        for (metric, f) in METRICS {
            let (ours, theirs) = medians(pairs, f);
            rows.push(Row {
                scenario: label.to_owned(),
                metric: format!("{what}: {metric}"),
                ours,
                theirs: Some(theirs),
                target: None,
            });
        }
    }
    for (metric, f) in METRICS.into_iter().take(3) {
        let (ours_metadata, theirs_metadata) = medians(metadata, f);
        let (ours_full, theirs_full) = medians(full, f);
        rows.push(Row {
            scenario: label.to_owned(),
            metric: format!("metadata-only / full: {metric}"),
            ours: ours_metadata / ours_full,
            theirs: Some(theirs_metadata / theirs_full),
            target: None,
        });
    }
    rows
}
