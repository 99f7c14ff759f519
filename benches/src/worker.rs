//! The measured side of every scenario: one child process per run.
//!
//! ```text
//! bench-worker sync     <ours|kube-runtime|ours-keep-mf|ours-list|kube-runtime-strip-mf|kube-runtime-watch-cache|kube-runtime-tuned> <namespace>
//! bench-worker sync-pods <ours|kube-runtime|...> <namespace>
//! bench-worker sync-pod-views|sync-pod-views-shared|sync-pods-metadata <ours> <namespace>
//! bench-worker sync-pod-partial|sync-pod-partial-slim <kube-runtime> <namespace>
//! bench-worker churn-pod-views|churn-pod-views-shared|churn-pods-metadata <ours> <namespace>
//! bench-worker sync-metadata <ours|kube-runtime|...> <namespace>
//! bench-worker watch    <ours|kube-runtime> <namespace>
//! bench-worker queries  <objects>
//! bench-worker pipeline <handlers> <objects> <events> <in-order|delta-fifo>
//! bench-worker relist   <ours|kube-runtime|kube-runtime-tuned> <namespace>
//! bench-worker controller <ours|kube-runtime|kube-runtime-tuned> <namespace> <objects> <updates> <tag>
//! bench-worker shard    <namespace> <group> <identity> [<key|uid|namespace> <configmap|item>]
//! bench-worker backlog  <ours|ours-fifo|kube-runtime> <namespace> <objects> <edits> <tag>
//! bench-worker footprint <ours|kube-runtime> <namespace> <objects> <tag>
//! bench-worker fleet    <objects> <start|join> <namespace>...
//! bench-worker fleet-shard <lease-namespace> <group> <identity> <namespace>...
//! bench-worker consistency-cost <namespace> <checks>
//! bench-worker consistency-run <namespace> <seconds> <interval-seconds> <drifts>
//! bench-worker consistency-staleness <namespace> <delay-ms> <seconds>
//! ```
//!
//! `sync-metadata` syncs the ConfigMaps of `namespace` metadata-only, as
//! `PartialObjectMeta<ConfigMap>`: both sides then ask the server for
//! `PartialObjectMetadata` (ours through `ApiListerWatcher`, kube-runtime through
//! `watcher(Api::<PartialObjectMeta<ConfigMap>>, ..)`, what kube 5's deprecated
//! `metadata_watcher` calls).
//!
//! `kube-runtime-tuned` is kube-runtime as its docs advise tuning it
//! ([`Implementation::KubeRuntimeTuned`]): `watcher::Config::default().streaming_lists()`
//! and `managedFields` cleared by `.modify()` before the store.
//!
//! The Go peers (`benches/client-go`, `benches/controller-runtime`) take the same
//! arguments and speak the same protocol: client-go's takes `json` or `protobuf` where
//! this worker takes the implementation; controller-runtime's takes
//! `controller-runtime` in the modes `sync`, `controller`, `backlog` and `footprint`.
//!
//! A worker prints one JSON [`WorkerReport`] as its last line on stdout and exits.
//! The server modes build their client from `KUBECONFIG` (`kube::Client::try_default`)
//! and measure from the moment the informer (or the watcher) starts; the baseline RSS is
//! read just before, with the runtime and the client already built.
//!
//! `watch` first syncs, prints `synced`, then waits for a line `go <name> <value>` on
//! stdin: from then on it measures until its cache shows `data.rev == value` on object
//! `name`, polling the cache every 5 ms (the same lookup on both sides).
//!
//! `churn-pod-views`, `churn-pod-views-shared` and `churn-pods-metadata` sync as
//! `sync-pod-views`, `sync-pod-views-shared` and `sync-pods-metadata` do, print
//! `synced`, then wait for a line `go <objects> <key> <value>` on stdin: from then on
//! they measure until the cache holds exactly `objects` objects, each labelled
//! `key=value` (`churn.rs`).

use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use futures::StreamExt;
use informer::reflector::Config as ReflectorConfig;
use informer::reflector::source::{ApiListerWatcher, ManagedFields};
use informer::shared_informer::{InformerConfig, SharedIndexInformer, wait_for_cache_sync};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::core::PartialObjectMeta;
use kube::{Api, ResourceExt as _};
use kube_runtime::reflector::{self, ObjectRef, Store};
use kube_runtime::{WatchStreamExt as _, watcher};

use crate::handshake::{read_driver_line, say_synced};
use crate::in_process;
use crate::measure::{Mark, Memory, memory, reset_peak};
use crate::projection_types::{CompactPodView, PodPartial, PodPartialSlim, PodView, SharedPodView};
use crate::report::{Implementation, RelistSample, SyncSample, WatchSample, WorkerReport};

/// Runs the worker with the process's arguments.
pub fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let report = match runtime.block_on(run(&args)) {
        Ok(report) => report,
        Err(error) => {
            // At once: dropping the runtime would first wait for whatever it still runs.
            eprintln!("Error: {error:?}");
            std::process::exit(1);
        }
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", serde_json::to_string(&report)?)?;
    stdout.flush()?;
    // Skip tearing down caches of tens of thousands of objects: nothing is measured
    // after this point.
    std::process::exit(0);
}

async fn run(args: &[String]) -> anyhow::Result<WorkerReport> {
    let arg = |i: usize| -> anyhow::Result<&str> {
        args.get(i)
            .map(String::as_str)
            .with_context(|| format!("missing argument {i}; usage in the worker's docs"))
    };
    let implementation = |i: usize| -> anyhow::Result<Implementation> {
        let s = arg(i)?;
        Implementation::parse(s).with_context(|| format!("unknown implementation {s:?}"))
    };
    match arg(0)? {
        "sync" => Ok(WorkerReport::Sync(
            sync::<ConfigMap>(implementation(1)?, arg(2)?).await?,
        )),
        "sync-pods" => Ok(WorkerReport::Sync(
            sync::<Pod>(implementation(1)?, arg(2)?).await?,
        )),
        // Scenario 15: the same Pods through a projection or a partial type.
        "sync-pod-views" => Ok(WorkerReport::Sync(
            sync::<PodView>(implementation(1)?, arg(2)?).await?,
        )),
        "sync-pod-views-shared" => Ok(WorkerReport::Sync(
            sync::<SharedPodView>(implementation(1)?, arg(2)?).await?,
        )),
        "sync-pod-views-compact" => Ok(WorkerReport::Sync(
            sync_ours::<CompactPodView>(implementation(1)?, arg(2)?).await?,
        )),
        "sync-pods-metadata" => Ok(WorkerReport::Sync(
            sync::<PartialObjectMeta<Pod>>(implementation(1)?, arg(2)?).await?,
        )),
        "sync-pod-partial" => Ok(WorkerReport::Sync(
            sync::<PodPartial>(implementation(1)?, arg(2)?).await?,
        )),
        "sync-pod-partial-slim" => Ok(WorkerReport::Sync(
            sync::<PodPartialSlim>(implementation(1)?, arg(2)?).await?,
        )),
        // Scenario 15's churn: sync, then follow the driver's deletes and relabels.
        "churn-pod-views" => Ok(WorkerReport::Churn(
            crate::churn::run::<PodView>(implementation(1)?, arg(2)?).await?,
        )),
        "churn-pod-views-shared" => Ok(WorkerReport::Churn(
            crate::churn::run::<SharedPodView>(implementation(1)?, arg(2)?).await?,
        )),
        "churn-pods-metadata" => Ok(WorkerReport::Churn(
            crate::churn::run::<PartialObjectMeta<Pod>>(implementation(1)?, arg(2)?).await?,
        )),
        "sync-metadata" => Ok(WorkerReport::Sync(
            sync::<PartialObjectMeta<ConfigMap>>(implementation(1)?, arg(2)?).await?,
        )),
        "watch" => Ok(WorkerReport::Watch(
            watch(implementation(1)?, arg(2)?).await?,
        )),
        "queries" => Ok(WorkerReport::Queries(
            in_process::queries(arg(1)?.parse()?).await?,
        )),
        "pipeline" => Ok(WorkerReport::Pipeline(
            in_process::pipeline(
                arg(1)?.parse()?,
                arg(2)?.parse()?,
                arg(3)?.parse()?,
                in_process::queue_kind(arg(4)?)?,
            )
            .await?,
        )),
        "fifo-push" => Ok(WorkerReport::FifoPush(crate::fifo_push::run(
            arg(1)?.parse()?,
            arg(2)?.parse()?,
        )?)),
        "relist" => Ok(WorkerReport::Relist(
            relist(implementation(1)?, arg(2)?).await?,
        )),
        "controller" => {
            let (implementation, namespace, objects, updates, tag) =
                crate::controller::parse_args(args)?;
            Ok(WorkerReport::Controller(
                crate::controller::run(implementation, namespace, objects, updates, tag).await?,
            ))
        }
        "shard" => {
            let shard = crate::shard_worker::parse_args(args)?;
            Ok(WorkerReport::Shard(crate::shard_worker::run(&shard).await?))
        }
        "backlog" => {
            let (implementation, namespace, objects, edits, tag) =
                crate::backlog::parse_args(args)?;
            Ok(WorkerReport::Backlog(
                crate::backlog::run(implementation, namespace, objects, edits, tag).await?,
            ))
        }
        "footprint" => {
            let (implementation, namespace, objects, tag) = crate::footprint::parse_args(args)?;
            Ok(WorkerReport::Footprint(
                crate::footprint::run(implementation, namespace, objects, tag).await?,
            ))
        }
        "fleet" => {
            let (objects, join, namespaces) = crate::fleet_worker::parse_args(args)?;
            Ok(WorkerReport::Fleet(
                crate::fleet_worker::run(objects, join, namespaces).await?,
            ))
        }
        "fleet-shard" => {
            let (lease_namespace, group, identity, namespaces) =
                crate::fleet_worker::parse_replica_args(args)?;
            Ok(WorkerReport::Shard(
                crate::fleet_worker::replica(lease_namespace, group, identity, namespaces).await?,
            ))
        }
        "consistency-cost" => Ok(WorkerReport::ConsistencyCost(
            crate::consistency::cost(arg(1)?, arg(2)?.parse()?).await?,
        )),
        "consistency-run" => Ok(WorkerReport::ConsistencyRun(
            crate::consistency::run(
                arg(1)?,
                arg(2)?.parse()?,
                Duration::from_secs(arg(3)?.parse()?),
                arg(4)?.parse()?,
            )
            .await?,
        )),
        "consistency-staleness" => Ok(WorkerReport::Staleness(
            crate::consistency::staleness(
                arg(1)?,
                Duration::from_millis(arg(2)?.parse()?),
                arg(3)?.parse()?,
            )
            .await?,
        )),
        other => bail!("unknown mode {other:?}"),
    }
}

/// A synced cache of either implementation, readable by key.
pub(crate) enum Cache<K: Synced = ConfigMap> {
    Ours(SharedIndexInformer<K>),
    KubeRuntime(Store<K>),
}

/// What the sync scenarios need of an object type.
pub(crate) trait Synced:
    kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Synced for K where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

impl<K: Synced> Cache<K> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Cache::Ours(informer) => informer.indexer().len(),
            Cache::KubeRuntime(store) => store.len(),
        }
    }

    /// Whether every cached object passes `check` (visited in place, no list built).
    pub(crate) fn all(&self, check: impl Fn(&K) -> bool) -> bool {
        match self {
            Cache::Ours(informer) => {
                let mut all = true;
                informer
                    .indexer()
                    .for_each(|_, object| all &= check(object));
                all
            }
            Cache::KubeRuntime(store) => store.state().iter().all(|object| check(object)),
        }
    }

    /// Our informer's estimate of its cache's bytes (`cache_size`); `None` for
    /// kube-runtime's store, which has none.
    pub(crate) fn estimated_bytes(&self) -> Option<u64> {
        match self {
            Cache::Ours(informer) => ours_estimate(informer),
            Cache::KubeRuntime(_) => None,
        }
    }

    fn get(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        match self {
            Cache::Ours(informer) => informer.lister().namespaced(namespace).get(name).ok(),
            Cache::KubeRuntime(store) => store.get(&ObjectRef::new(name).within(namespace)),
        }
    }
}

/// Starts `implementation` on `namespace` and returns once it has synced.
async fn start_and_sync<K: Synced>(
    implementation: Implementation,
    api: Api<K>,
) -> anyhow::Result<Cache<K>> {
    match implementation {
        Implementation::Ours | Implementation::OursKeepManagedFields | Implementation::OursList => {
            let informer = start_ours(ApiListerWatcher::new(api), implementation).await?;
            Ok(Cache::Ours(informer))
        }
        Implementation::KubeRuntime => {
            let (reader, writer) = reflector::store::<K>();
            let stream =
                reflector::reflector(writer, watcher::watcher(api, watcher::Config::default()));
            tokio::spawn(stream.for_each(|_| futures::future::ready(())));
            reader.wait_until_ready().await?;
            Ok(Cache::KubeRuntime(reader))
        }
        Implementation::KubeRuntimeWatchCache => {
            let (reader, writer) = reflector::store::<K>();
            let mut config = watcher::Config::default().any_semantic();
            config.page_size = None;
            let stream = reflector::reflector(writer, watcher::watcher(api, config));
            tokio::spawn(stream.for_each(|_| futures::future::ready(())));
            reader.wait_until_ready().await?;
            Ok(Cache::KubeRuntime(reader))
        }
        Implementation::KubeRuntimeStripManagedFields | Implementation::KubeRuntimeTuned => {
            let (reader, writer) = reflector::store::<K>();
            let config = if implementation == Implementation::KubeRuntimeTuned {
                tuned_watcher_config()
            } else {
                watcher::Config::default()
            };
            let watcher =
                watcher::watcher(api, config).modify(|object| object.managed_fields_mut().clear());
            let stream = reflector::reflector(writer, watcher);
            tokio::spawn(stream.for_each(|_| futures::future::ready(())));
            reader.wait_until_ready().await?;
            Ok(Cache::KubeRuntime(reader))
        }
        Implementation::ClientGoJson
        | Implementation::ClientGoProtobuf
        | Implementation::ControllerRuntime => {
            bail!(
                "{} runs as its own binary (a Go peer in benches/), not in this worker",
                implementation.as_str()
            )
        }
        Implementation::OursFifo => {
            bail!("ours-fifo is a controller without priorities (scenario 12), not an informer")
        }
    }
}

/// Starts our informer on `source` as `implementation` (one of ours) asks (managedFields
/// kept or dropped, the list streamed or not) and returns once it has synced.
async fn start_ours<K>(
    source: ApiListerWatcher<K>,
    implementation: Implementation,
) -> anyhow::Result<SharedIndexInformer<K>>
where
    K: informer::object::Object + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    let managed_fields = if implementation == Implementation::OursKeepManagedFields {
        ManagedFields::Keep
    } else {
        ManagedFields::Drop
    };
    let streaming = implementation != Implementation::OursList;
    let informer = SharedIndexInformer::with_config(
        source.managed_fields(managed_fields),
        InformerConfig::default().reflector(ReflectorConfig::default().streaming_list(streaming)),
    )?;
    tokio::spawn({
        let informer = informer.clone();
        async move { informer.run(std::future::pending()).await }
    });
    wait_for_cache_sync(&[&informer]).await;
    Ok(informer)
}

/// Our informer's estimate of its cache's bytes (`cache_size`), with the process's
/// shared values counted once (one cache a worker).
fn ours_estimate<K: informer::object::Object + Send + Sync + 'static>(
    informer: &SharedIndexInformer<K>,
) -> Option<u64> {
    informer
        .cache_size()
        .bytes
        .map(|bytes| bytes + informer::projection::shared_size().bytes)
}

/// kube-runtime's watcher configuration tuned as its docs say
/// ([`Implementation::KubeRuntimeTuned`], which also clears `managedFields` with
/// `.modify()`): streaming lists, so that a (re)sync is one watch whose initial events
/// are the list. Its page size (500, the default) applies to lists only, and it makes
/// none.
pub(crate) fn tuned_watcher_config() -> watcher::Config {
    watcher::Config::default().streaming_lists()
}

/// Scenarios 1, 2, 8, 9 and 10: one initial sync of the `K`s of `namespace`.
async fn sync<K: Synced>(
    implementation: Implementation,
    namespace: &str,
) -> anyhow::Result<SyncSample> {
    Ok(sync_and_keep::<K>(implementation, namespace).await?.0)
}

/// [`sync`], keeping the cache for what follows (scenario 15's churn).
pub(crate) async fn sync_and_keep<K: Synced>(
    implementation: Implementation,
    namespace: &str,
) -> anyhow::Result<(SyncSample, Cache<K>)> {
    let client = kube::Client::try_default().await?;
    let api = Api::<K>::namespaced(client, namespace);
    let baseline = memory();
    let mark = Mark::now();
    let cache = start_and_sync(implementation, api).await?;
    let sample = sample(
        implementation,
        &mark,
        baseline,
        cache.len(),
        cache.estimated_bytes(),
    );
    Ok((sample, cache))
}

/// [`sync`] for a type of ours only: an `Object` listed as its resource with a
/// metadata of its own (`CompactMeta`), not a `kube::Resource`, which kube-runtime's
/// store and `Api` ask for (scenario 15's `CompactPodView`).
async fn sync_ours<K>(implementation: Implementation, namespace: &str) -> anyhow::Result<SyncSample>
where
    K: informer::object::Object<
            Resource: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
        > + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    if !matches!(
        implementation,
        Implementation::Ours | Implementation::OursKeepManagedFields | Implementation::OursList
    ) {
        bail!(
            "{} cannot cache an object that is not a kube::Resource",
            implementation.as_str()
        );
    }
    let client = kube::Client::try_default().await?;
    let baseline = memory();
    let mark = Mark::now();
    let source = ApiListerWatcher::<K>::in_namespace(client, Some(namespace));
    let informer = start_ours(source, implementation).await?;
    let estimate = ours_estimate(&informer);
    let sample = sample(
        implementation,
        &mark,
        baseline,
        informer.indexer().len(),
        estimate,
    );
    // Held to the end of the sample, as the other caches are.
    drop(informer);
    Ok(sample)
}

/// The sample of a sync that began at `mark` with `baseline` memory and holds
/// `objects`, measured now.
fn sample(
    implementation: Implementation,
    mark: &Mark,
    baseline: Memory,
    objects: usize,
    estimated_cache_bytes: Option<u64>,
) -> SyncSample {
    let synced_seconds = mark.wall_seconds();
    let cpu_seconds = mark.cpu_seconds();
    let (user_seconds, sys_seconds) = mark.user_sys_seconds();
    let after = memory();
    SyncSample {
        implementation,
        objects,
        estimated_cache_bytes,
        synced_seconds,
        cpu_seconds,
        user_seconds,
        sys_seconds,
        baseline_rss_kib: baseline.rss_kib,
        peak_rss_kib: after.peak_kib,
        rss_after_sync_kib: after.rss_kib,
    }
}

/// How often the watch scenario looks for the last update in the cache: the lookup is
/// the same on both sides, and rare enough to cost next to nothing.
const POLL: Duration = Duration::from_millis(5);

/// Scenario 3: sync, then follow the driver's updates until the last one shows.
async fn watch(implementation: Implementation, namespace: &str) -> anyhow::Result<WatchSample> {
    let client = kube::Client::try_default().await?;
    let api = Api::<ConfigMap>::namespaced(client, namespace);
    let cache = start_and_sync(implementation, api).await?;
    say_synced()?;
    let line = read_driver_line().await?;
    let mark = Mark::now();
    let mut words = line.split_whitespace();
    let (Some("go"), Some(name), Some(value)) = (words.next(), words.next(), words.next()) else {
        bail!("expected `go <name> <value>`, got {line:?}");
    };
    loop {
        let seen = cache.get(namespace, name).is_some_and(|cm| {
            cm.data
                .as_ref()
                .and_then(|d| d.get("rev"))
                .is_some_and(|rev| rev == value)
        });
        if seen {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    let seconds = mark.wall_seconds();
    let cpu_seconds = mark.cpu_seconds();
    let after = memory();
    Ok(WatchSample {
        implementation,
        seconds,
        cpu_seconds,
        peak_rss_kib: after.peak_kib,
        rss_kib: after.rss_kib,
    })
}

/// Scenario 6: syncs with 2-second watches, prints `synced`, and waits until a relist
/// (after the 410 Gone the driver brings about) has been applied; measures the peak
/// RSS and the CPU from the sync until then.
async fn relist(implementation: Implementation, namespace: &str) -> anyhow::Result<RelistSample> {
    const WATCH_SECONDS: u32 = 2;
    let client = kube::Client::try_default().await?;
    let api = Api::<ConfigMap>::namespaced(client, namespace);
    // Lists completed so far, and the cache.
    let (lists, cache): (Box<dyn Fn() -> usize + Send>, Cache) = match implementation {
        Implementation::Ours => {
            let watch = Duration::from_secs(WATCH_SECONDS.into());
            let informer = SharedIndexInformer::with_config(
                ApiListerWatcher::new(api),
                InformerConfig::default()
                    .reflector(informer::reflector::Config::default().watch_timeout(watch..=watch)),
            )?;
            tokio::spawn({
                let informer = informer.clone();
                async move { informer.run(std::future::pending()).await }
            });
            wait_for_cache_sync(&[&informer]).await;
            let stats = informer.clone();
            let lists = move || stats.reflector_stats().map_or(0, |s| s.lists as usize);
            (Box::new(lists), Cache::Ours(informer))
        }
        Implementation::KubeRuntime | Implementation::KubeRuntimeTuned => {
            let (reader, writer) = reflector::store::<ConfigMap>();
            let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let counted = done.clone();
            let stream = if implementation == Implementation::KubeRuntimeTuned {
                let config = tuned_watcher_config().timeout(WATCH_SECONDS);
                let watcher = watcher::watcher(api, config)
                    .modify(|object| object.managed_fields_mut().clear());
                reflector::reflector(writer, watcher).boxed()
            } else {
                let config = watcher::Config::default().timeout(WATCH_SECONDS);
                reflector::reflector(writer, watcher::watcher(api, config)).boxed()
            };
            // A (re)sync ends with `InitDone`: after the last page of a list, or the
            // initial-events-end bookmark of a streaming list.
            tokio::spawn(stream.for_each(move |event| {
                if matches!(event, Ok(watcher::Event::InitDone)) {
                    counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                futures::future::ready(())
            }));
            reader.wait_until_ready().await?;
            let lists = move || done.load(std::sync::atomic::Ordering::SeqCst);
            (Box::new(lists), Cache::KubeRuntime(reader))
        }
        other => bail!(
            "scenario 6 runs ours and kube-runtime, not {}",
            other.as_str()
        ),
    };
    // The initial list may be reported a moment after the cache is ready.
    while lists() < 1 {
        tokio::time::sleep(POLL).await;
    }
    let rss_after_sync_kib = memory().rss_kib;
    reset_peak()?;
    let mark = Mark::now();
    say_synced()?;
    let deadline = Instant::now() + Duration::from_secs(120);
    while lists() < 2 {
        if Instant::now() > deadline {
            bail!("no relist within two minutes");
        }
        tokio::time::sleep(POLL).await;
    }
    // Let the relist's replace be applied (and the replaced objects dropped).
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(RelistSample {
        implementation,
        objects: cache.len(),
        rss_after_sync_kib,
        peak_rss_kib: memory().peak_kib,
        cpu_seconds: mark.cpu_seconds(),
    })
}
