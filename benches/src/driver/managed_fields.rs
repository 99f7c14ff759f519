//! Scenario 18: managedFields on the wire. Kubernetes 1.37's KEP-5958
//! (`ManagedFieldsOptOut`, alpha) lets a client ask the server to leave
//! `metadata.managedFields` out of what it sends; our informer asks whenever it drops
//! them anyway (`ManagedFields::Drop`, the default). Two of our informers sync scenario
//! 1's collection, each through a proxy of its own that counts the bytes the server
//! sent: one asking (the default), one not (`ManagedFields::Keep`), the first side
//! alternating. A server that honours the request sends the first fewer bytes; one
//! that does not know it (1.37.2: its `k8s.io/apiserver` has no such gate) sends both
//! the same.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::FutureExt as _;
use informer::reflector::source::{ApiListerWatcher, ManagedFields};
use informer::shared_informer::{InformerConfig, SharedIndexInformer, wait_for_cache_sync};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;

use super::{Bench, MIB, SMALL_NAMESPACE, Samples, rotated, thousands};
use crate::report::{Row, median};

/// How long one sync may take.
const SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// The two sides: asking the server to leave managedFields out, and not.
const SIDES: [(ManagedFields, &str); 2] = [
    (
        ManagedFields::Drop,
        "asking the server to leave them out (ours by default)",
    ),
    (ManagedFields::Keep, "not asking (ManagedFields::Keep)"),
];

/// Scenario 18: `--pairs` runs of each side.
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    _samples: &mut Samples,
) -> anyhow::Result<()> {
    let env = bench.env.context("no control plane")?;
    let options = bench.options;
    let label = format!(
        "18. managedFields on the wire, sync {}",
        thousands(options.objects)
    );
    let mut bytes: [Vec<f64>; 2] = Default::default();
    for round in 0..options.pairs {
        for side in rotated(round, SIDES.len()) {
            let (managed_fields, what) = SIDES[side];
            let proxy = env.fault_proxy().await?;
            let api = Api::<ConfigMap>::namespaced(proxy.client()?, SMALL_NAMESPACE);
            let informer = SharedIndexInformer::with_config(
                ApiListerWatcher::new(api).managed_fields(managed_fields),
                InformerConfig::default(),
            )?;
            let started = Instant::now();
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let running = tokio::spawn({
                let informer = informer.clone();
                // Runs until `stop` is sent (or dropped).
                async move { informer.run(stopped.map(drop)).await }
            });
            tokio::time::timeout(SYNC_TIMEOUT, wait_for_cache_sync(&[&informer]))
                .await
                .context("the informer did not sync")?;
            let seconds = started.elapsed().as_secs_f64();
            let received = proxy.bytes_to_clients();
            let _ = stop.send(());
            running.await??;
            let synced = informer.lister().list_all().len();
            anyhow::ensure!(
                synced == options.objects,
                "synced {synced} objects of {}",
                options.objects
            );
            eprintln!(
                "[{label}] {what}, run {}: {:.2} MiB received, synced in {seconds:.2} s",
                round + 1,
                received as f64 / MIB / MIB
            );
            bytes[side].push(received as f64);
        }
    }
    let asking = median(bytes[0].iter().copied());
    let not_asking = median(bytes[1].iter().copied());
    for ((_, what), value) in SIDES.iter().zip([asking, not_asking]) {
        rows.push(Row {
            scenario: label.clone(),
            metric: format!("bytes received, {what} (MiB)"),
            ours: value / MIB / MIB,
            ..Row::default()
        });
    }
    rows.push(Row {
        scenario: label,
        metric: "bytes received asking / not asking".to_owned(),
        ours: asking / not_asking,
        ..Row::default()
    });
    Ok(())
}
