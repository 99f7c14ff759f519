//! Scenario 16, consistency checks and staleness probes: its worker (ours only:
//! neither kube-runtime nor client-go checks its cache against the server).
//!
//! ```text
//! bench-worker consistency-cost <namespace> <checks>
//! bench-worker consistency-run <namespace> <seconds> <interval-seconds> <drifts>
//! bench-worker consistency-staleness <namespace> <delay-ms> <seconds>
//! ```
//!
//! - `consistency-cost` syncs the collection, then runs `verify()` `checks` times on
//!   the settled cache, each measured alone: wall time, CPU (user + system), the
//!   requests it made (lists of versions, consistent reads, watches of versions,
//!   counted by a lister-watcher wrapper), the peak RSS above the RSS before it
//!   (`VmHWM`, reset before each) and the CPU the control plane (API server and etcd,
//!   found by the directory the driver names in `INFORMER_BENCH_SERVER_DIR`) spent
//!   meanwhile. Then one update of `cm-0` is lost
//!   (`testenv::FaultyWatches`) and one more check, which finds and names it (the
//!   keyed comparison), is measured the same way.
//! - `consistency-run` runs periodic checks every `interval-seconds` (jitter 0.1,
//!   healing) and staleness probes every 10 s for `seconds`, while it changes 10
//!   objects a second (from `cm-1000` on) and, `drifts` times, evenly spread, loses the
//!   watch event of an update it makes to one of `cm-0`..: each check's outcome is
//!   read as it ends; a check naming exactly the lost update's key is a detection
//!   (the time from the update's write to the check's end is the detection time);
//!   an inconsistent check naming anything else is a false alarm; a consistent check
//!   while the cache holds the server's version of the key again (a relist after the
//!   restart healed it first, as the server's own object says) ends that drift
//!   unfound. The next drift waits for the last to end. The driver compacts
//!   etcd and restarts the API server meanwhile.
//! - `consistency-staleness` informs a small collection through a lister-watcher that
//!   delays every watch event by `delay-ms`, with probes every 3 s, while it changes
//!   20 objects a second; once a second it reads the newest probe's lag (the gauge's
//!   resolved reading), and it keeps the gauge's largest reading.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::future::BoxFuture;
use futures::{FutureExt as _, StreamExt as _};
use informer::consistency::{CheckResult, ConsistencyConfig};
use informer::key::ObjectKey;
use informer::reflector::CachedObjects;
use informer::reflector::source::{
    ApiListerWatcher, Capabilities, ListPage, ListRequest, ListerWatcher, ObjectVersion,
    VersionSource, WatchRequest, WatchStream,
};
use informer::shared_informer::{InformerConfig, SharedIndexInformer, wait_for_cache_sync};
use informer::testenv::FaultyWatches;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams};

use crate::measure::{Mark, memory, processes_cpu, reset_peak};
use crate::objects;
use crate::report::{CheckCost, ConsistencyCostSample, ConsistencyRunSample, StalenessSample};

/// The variable through which the driver names the control plane's directory.
pub const SERVER_DIR: &str = "INFORMER_BENCH_SERVER_DIR";

/// Requests a consistency check made, by kind.
#[derive(Debug, Default)]
struct Counts {
    lists: AtomicU64,
    reads: AtomicU64,
    watches: AtomicU64,
}

impl Counts {
    fn now(&self) -> [u64; 3] {
        [&self.lists, &self.reads, &self.watches].map(|c| c.load(Ordering::Relaxed))
    }
}

/// A lister-watcher that counts the requests made through its versions.
struct Counting<L> {
    inner: L,
    counts: Arc<Counts>,
}

/// A version source that counts its requests.
struct CountingVersions {
    inner: Arc<dyn VersionSource>,
    counts: Arc<Counts>,
}

impl VersionSource for CountingVersions {
    fn list_versions(
        &self,
        request: ListRequest,
    ) -> BoxFuture<'_, Result<ListPage<ObjectVersion>, kube::Error>> {
        self.counts.lists.fetch_add(1, Ordering::Relaxed);
        self.inner.list_versions(request)
    }

    fn current_resource_version(&self) -> BoxFuture<'_, Result<String, kube::Error>> {
        self.counts.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.current_resource_version()
    }

    fn watch_versions(
        &self,
        resource_version: String,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<WatchStream<ObjectVersion>, kube::Error>> {
        self.counts.watches.fetch_add(1, Ordering::Relaxed);
        self.inner.watch_versions(resource_version, timeout)
    }
}

/// Watch events held back `delay` each (a cache that lags the server by `delay`).
struct Delayed<L> {
    inner: L,
    delay: Duration,
}

/// Forwards the lists to `inner`.
macro_rules! forward_lister_watcher {
    ($inner:ident) => {
        fn list(
            &self,
            request: ListRequest,
        ) -> BoxFuture<'_, Result<ListPage<ConfigMap>, kube::Error>> {
            self.$inner.list(request)
        }
        fn list_reusing(
            &self,
            request: ListRequest,
            cache: Arc<dyn CachedObjects<ConfigMap>>,
        ) -> BoxFuture<'_, Result<ListPage<ConfigMap>, kube::Error>> {
            self.$inner.list_reusing(request, cache)
        }
    };
}

impl<L: ListerWatcher<ConfigMap>> ListerWatcher<ConfigMap> for Counting<L> {
    forward_lister_watcher!(inner);

    fn watch(
        &self,
        request: WatchRequest,
    ) -> BoxFuture<'_, Result<WatchStream<ConfigMap>, kube::Error>> {
        self.inner.watch(request)
    }

    /// What `inner` can do, its versions counted.
    fn capabilities(&self) -> Capabilities {
        let mut capabilities = self.inner.capabilities();
        capabilities.versions = capabilities.versions.take().map(|inner| {
            Arc::new(CountingVersions {
                inner,
                counts: Arc::clone(&self.counts),
            }) as Arc<dyn VersionSource>
        });
        capabilities
    }
}

impl<L: ListerWatcher<ConfigMap>> ListerWatcher<ConfigMap> for Delayed<L> {
    forward_lister_watcher!(inner);

    fn watch(
        &self,
        request: WatchRequest,
    ) -> BoxFuture<'_, Result<WatchStream<ConfigMap>, kube::Error>> {
        let delay = self.delay;
        self.inner
            .watch(request)
            .map(move |events| {
                let mut events = events?;
                let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
                tokio::spawn(async move {
                    while let Some(event) = events.next().await {
                        if sender.send((Instant::now(), event)).is_err() {
                            return;
                        }
                    }
                });
                let delayed = futures::stream::unfold(receiver, move |mut receiver| async move {
                    let (arrived, event) = receiver.recv().await?;
                    tokio::time::sleep_until((arrived + delay).into()).await;
                    Some((event, receiver))
                });
                Ok(delayed.boxed())
            })
            .boxed()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
}

/// Changes the `consistency-rev` data entry of `cm-{index}`.
async fn touch(api: &Api<ConfigMap>, index: usize, rev: u64) -> Result<(), kube::Error> {
    let patch = serde_json::json!({ "data": { "consistency-rev": rev.to_string() } });
    api.patch(
        &objects::name(index),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map(drop)
}

/// Changes objects of `range` at `per_second`, spread over it, until aborted; counts
/// them.
fn churn(
    api: Api<ConfigMap>,
    range: std::ops::Range<usize>,
    per_second: u32,
    changes: Arc<AtomicU64>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(Duration::from_secs(1) / per_second);
        let mut rev = 0u64;
        loop {
            ticks.tick().await;
            rev += 1;
            // A large prime stride visits the range in a scattered order.
            let index = range.start + (rev as usize * 7919) % range.len();
            // A server restart fails some: the churn goes on.
            if touch(&api, index, rev).await.is_ok() {
                changes.fetch_add(1, Ordering::Relaxed);
            }
        }
    })
}

fn informer_over<L: ListerWatcher<ConfigMap> + 'static>(
    lister_watcher: L,
    consistency: Option<ConsistencyConfig>,
) -> anyhow::Result<SharedIndexInformer<ConfigMap>> {
    let mut options = InformerConfig::default();
    if let Some(config) = consistency {
        options = options.consistency(config);
    }
    let informer = SharedIndexInformer::with_config(lister_watcher, options)?;
    tokio::spawn({
        let informer = informer.clone();
        async move { informer.run(std::future::pending()).await }
    });
    Ok(informer)
}

/// Mode `consistency-cost` (see the [module docs](self)).
pub async fn cost(namespace: &str, checks: usize) -> anyhow::Result<ConsistencyCostSample> {
    let client = kube::Client::try_default().await?;
    let api = Api::<ConfigMap>::namespaced(client, namespace);
    let counts = Arc::new(Counts::default());
    let faulty = FaultyWatches::new(Counting {
        inner: ApiListerWatcher::new(api.clone()),
        counts: Arc::clone(&counts),
    });
    let started = Mark::now();
    let informer = informer_over(faulty.clone(), None)?;
    wait_for_cache_sync(&[&informer]).await;
    let sync_seconds = started.wall_seconds();
    let objects = informer.indexer().len();
    let rss_after_sync_kib = memory().rss_kib;

    // The driver names the control plane's directory, which its processes' command
    // lines hold.
    let server = std::env::var(SERVER_DIR).unwrap_or_default();
    let server_cpu = || match server.as_str() {
        "" => Duration::ZERO,
        dir => processes_cpu(dir),
    };
    let measure = || async {
        reset_peak().ok();
        let before = (Mark::now(), counts.now(), memory().rss_kib, server_cpu());
        let report = informer.verify().await.context("a check")?;
        let (mark, [lists, reads, watches], rss, server_before) = before;
        let [lists_after, reads_after, watches_after] = counts.now();
        anyhow::Ok(CheckCost {
            wall_seconds: mark.wall_seconds(),
            cpu_seconds: mark.cpu_seconds(),
            server_cpu_seconds: server_cpu().saturating_sub(server_before).as_secs_f64(),
            lists: lists_after - lists,
            reads: reads_after - reads,
            watches: watches_after - watches,
            peak_above_kib: memory().peak_kib.saturating_sub(rss),
            consistent: report.consistent,
            differences: report.differences.len(),
        })
    };
    let mut consistent_checks = Vec::new();
    for _ in 0..checks {
        consistent_checks.push(measure().await?);
    }
    // One lost update, then one change after it, so that the cache passes a point. A
    // value no run wrote before: an update that changes nothing sends no event.
    let rev = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as u64;
    faulty.lose_next(ObjectKey::namespaced(namespace, objects::name(0)));
    touch(&api, 0, rev).await?;
    touch(&api, 1, rev).await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while faulty.faults_done() == 0
        || informer
            .indexer()
            .get_by_key(&format!("{namespace}/{}", objects::name(1)))
            .and_then(|cm| cm.data.as_ref()?.get("consistency-rev").cloned())
            != Some(rev.to_string())
    {
        if Instant::now() > deadline {
            bail!("the change after the lost update never reached the cache");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let inconsistent_check = measure().await?;
    if inconsistent_check.consistent || inconsistent_check.differences != 1 {
        bail!("the check after a lost update found {inconsistent_check:?}");
    }
    Ok(ConsistencyCostSample {
        objects,
        sync_seconds,
        rss_after_sync_kib,
        consistent_checks,
        inconsistent_check,
    })
}

/// Mode `consistency-run` (see the [module docs](self)).
pub async fn run(
    namespace: &str,
    seconds: u64,
    interval: Duration,
    drifts: usize,
) -> anyhow::Result<ConsistencyRunSample> {
    let client = kube::Client::try_default().await?;
    let api = Api::<ConfigMap>::namespaced(client, namespace);
    let faulty = FaultyWatches::new(ApiListerWatcher::new(api.clone()));
    let config = ConsistencyConfig::default()
        .interval(interval)
        .heal(true)
        .staleness_interval(Some(Duration::from_secs(10)));
    let informer = informer_over(faulty.clone(), Some(config))?;
    wait_for_cache_sync(&[&informer]).await;
    let objects = informer.indexer().len();
    if objects <= 1000 + drifts {
        bail!("consistency-run needs more than {} objects", 1000 + drifts);
    }
    let changes = Arc::new(AtomicU64::new(0));
    let churning = churn(api.clone(), 1000..objects, 10, Arc::clone(&changes));

    let started = Instant::now();
    let end = started + Duration::from_secs(seconds);
    let spacing = Duration::from_secs(seconds) / u32::try_from(drifts + 1)?;
    let mut next_drift = 0usize;
    // The drift in place, its key and when its update was written.
    let mut drifting: Option<(String, Instant)> = None;
    let mut detections = Vec::new();
    let mut false_alarms = Vec::new();
    let mut healed_first = 0usize;
    let mut seen_checks = 0u64;
    while Instant::now() < end {
        if drifting.is_none()
            && next_drift < drifts
            && started.elapsed() >= spacing * u32::try_from(next_drift + 1)?
        {
            let key = ObjectKey::namespaced(namespace, objects::name(next_drift));
            faulty.lose_next(key.clone());
            let written = Instant::now();
            touch(&api, next_drift, 1_000_000 + next_drift as u64).await?;
            drifting = Some((key.to_string(), written));
            next_drift += 1;
        }
        let stats = informer.consistency_stats();
        let total: u64 = stats.checks().iter().map(|(_, count)| count).sum();
        if total > seen_checks {
            seen_checks = total;
            match stats.last_check {
                Some(check) if check.result == CheckResult::Inconsistent => {
                    let named: BTreeSet<String> = check
                        .differences
                        .iter()
                        .map(|d| d.key.to_string())
                        .collect();
                    match &drifting {
                        Some((key, written)) if named.len() == 1 && named.contains(key) => {
                            detections.push(written.elapsed().as_secs_f64());
                            drifting = None;
                        }
                        _ => false_alarms.push(named.into_iter().collect::<Vec<_>>().join(" ")),
                    }
                }
                // A consistent check while a drift is in place: a relist (after the
                // API server's restart, say) may have healed it first. The server's
                // own object decides.
                Some(check) if check.result == CheckResult::Consistent => {
                    if let Some((key, _)) = &drifting
                        && cache_agrees(&api, &informer, key).await
                    {
                        healed_first += 1;
                        drifting = None;
                    }
                }
                _ => {}
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    churning.abort();
    let stats = informer.consistency_stats();
    Ok(ConsistencyRunSample {
        objects,
        seconds: started.elapsed().as_secs_f64(),
        interval_seconds: interval.as_secs_f64(),
        checks: stats
            .checks()
            .map(|(result, count)| (result.as_str().to_owned(), count))
            .to_vec(),
        drifts: next_drift,
        detection_seconds: detections,
        healed_before_found: healed_first,
        false_alarms,
        heals: stats.heals,
        changes: changes.load(Ordering::Relaxed),
    })
}

/// Whether the cache holds the server's version of `key` (`namespace/name`).
async fn cache_agrees(
    api: &Api<ConfigMap>,
    informer: &SharedIndexInformer<ConfigMap>,
    key: &str,
) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    let Ok(server) = api.get(name).await else {
        return false;
    };
    let cached = informer.indexer().get_by_key(key);
    cached
        .is_some_and(|cached| cached.metadata.resource_version == server.metadata.resource_version)
}

/// Mode `consistency-staleness` (see the [module docs](self)).
pub async fn staleness(
    namespace: &str,
    delay: Duration,
    seconds: u64,
) -> anyhow::Result<StalenessSample> {
    let client = kube::Client::try_default().await?;
    let api = Api::<ConfigMap>::namespaced(client, namespace);
    let config = ConsistencyConfig::default()
        .interval(Duration::from_secs(3600))
        .staleness_interval(Some(Duration::from_secs(3)))
        .jitter(0.0);
    let informer = informer_over(
        Delayed {
            inner: ApiListerWatcher::new(api.clone()),
            delay,
        },
        Some(config),
    )?;
    wait_for_cache_sync(&[&informer]).await;
    let objects = informer.indexer().len();
    let changes = Arc::new(AtomicU64::new(0));
    let churning = churn(api, 0..objects, 20, Arc::clone(&changes));
    // The first probes may predate the churn's first change: skip their time.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let end = Instant::now() + Duration::from_secs(seconds);
    let mut lags = Vec::new();
    let mut gauge_max = 0f64;
    let mut next_sample = Instant::now();
    while Instant::now() < end {
        let stats = informer.consistency_stats();
        if let Some(gauge) = stats.staleness {
            gauge_max = gauge_max.max(gauge.as_secs_f64());
        }
        // The newest resolved probe's lag, once a second.
        if Instant::now() >= next_sample {
            next_sample += Duration::from_secs(1);
            lags.extend(stats.lag.map(|lag| lag.as_secs_f64()));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    churning.abort();
    Ok(StalenessSample {
        delay_seconds: delay.as_secs_f64(),
        lags,
        gauge_max_seconds: gauge_max,
        changes: changes.load(Ordering::Relaxed),
    })
}
