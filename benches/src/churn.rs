//! The worker's side of scenario 15's churn ([`crate::driver`]'s `churn.rs` is the
//! driver's): sync, say so, then follow the driver's deletes and relabels until the
//! cache shows all of them, and report the memory the cache keeps.

use std::time::Duration;

use anyhow::bail;
use kube::ResourceExt as _;

use crate::handshake::{read_driver_line, say_synced};
use crate::measure::{Mark, memory};
use crate::report::{ChurnSample, Implementation};
use crate::worker::{Synced, sync_and_keep};

/// How often the worker looks at its cache. Once the count is right, a look visits
/// every object, so it is rarer than the watch scenario's 5 ms: a look costs a
/// fraction of a millisecond per ten thousand objects, and the churn takes seconds.
const POLL: Duration = Duration::from_millis(20);

/// Syncs the `K`s of `namespace`, prints `synced`, reads `go <objects> <key> <value>`
/// and waits until the cache holds exactly `objects` objects, each labelled
/// `key=value`; then reads its RSS and cache-size estimate.
///
/// The count alone cannot be right before every delete is applied (the churn makes
/// none), and the label not on every object before every relabel is: the condition
/// holds only once the whole churn is in the cache.
pub(crate) async fn run<K: Synced>(
    implementation: Implementation,
    namespace: &str,
) -> anyhow::Result<ChurnSample> {
    let (synced, cache) = sync_and_keep::<K>(implementation, namespace).await?;
    say_synced()?;
    let line = read_driver_line().await?;
    let mut words = line.split_whitespace();
    let (Some("go"), Some(objects), Some(key), Some(value)) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        bail!("expected `go <objects> <key> <value>`, got {line:?}");
    };
    let objects: usize = objects.parse()?;
    let mark = Mark::now();
    let labelled = |object: &K| object.labels().get(key).is_some_and(|v| v == value);
    while !(cache.len() == objects && cache.all(labelled)) {
        tokio::time::sleep(POLL).await;
    }
    let seconds = mark.wall_seconds();
    let cpu_seconds = mark.cpu_seconds();
    let after = memory();
    Ok(ChurnSample {
        synced,
        objects: cache.len(),
        seconds,
        cpu_seconds,
        rss_after_churn_kib: after.rss_kib,
        estimated_cache_bytes: cache.estimated_bytes(),
    })
}
