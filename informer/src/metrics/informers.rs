//! Informer and reflector metrics, read from the informers' own counters at scrape
//! time: nothing is recorded on the hot path beyond what every informer already
//! counts.

use std::fmt;
use std::sync::{Arc, Mutex};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::encoding::EncodeMetric;
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;

use super::encode::{Value, family_of};
use crate::consistency::ConsistencyStats;
use crate::lock::MutexExt;
use crate::projection::shared_size;
use crate::reflector::StatsSnapshot;
use crate::shared_informer::{LatencySnapshot, ListenerStats, SharedIndexInformer, WeakInformer};

/// One informer's figures at one scrape.
pub(crate) struct InformerSample {
    /// The `informer` label: the factory's name for it, or the one given with it.
    pub(crate) name: String,
    /// The `cluster` label, for an informer of a fleet member's factory.
    pub(crate) cluster: Option<Arc<str>>,
    /// The `projection` label: the Rust type of a projection of the resource.
    pub(crate) projection: Option<&'static str>,
    pub(crate) cached: usize,
    /// The cache's estimated bytes, when its source measures them.
    pub(crate) cache_bytes: Option<u64>,
    pub(crate) synced: bool,
    /// [`SharedIndexInformer::store_resource_version`] as a number; `None` before the
    /// first list is in the cache.
    pub(crate) store_resource_version: Option<u64>,
    /// What the queue holds for the process loop.
    pub(crate) queued_items: usize,
    pub(crate) processing_latency: LatencySnapshot,
    pub(crate) handlers: Vec<ListenerStats>,
    pub(crate) handler_panics: u64,
    /// `None` until the informer runs.
    pub(crate) reflector: Option<StatsSnapshot>,
    pub(crate) consistency: ConsistencyStats,
}

impl InformerSample {
    pub(crate) fn of<K>(name: String, informer: &SharedIndexInformer<K>) -> Self
    where
        K: crate::object::Object + Send + Sync + 'static,
    {
        let size = informer.cache_size();
        Self {
            name,
            cluster: None,
            projection: None,
            cached: size.objects,
            cache_bytes: size.bytes,
            synced: informer.has_synced(),
            store_resource_version: informer.store_resource_version().parse().ok(),
            queued_items: informer.queued_items(),
            processing_latency: informer.processing_latency(),
            handlers: informer.handler_stats(),
            handler_panics: informer.handler_panics(),
            reflector: informer.reflector_stats(),
            consistency: informer.consistency_stats(),
        }
    }
}

/// Something holding informers to sample: a factory, or one informer.
pub(crate) trait InformerSource: Send + Sync {
    /// Adds a sample of each informer; `false` once the source is gone (dropped), so
    /// that the collector forgets it.
    fn sample(&self, samples: &mut Vec<InformerSample>) -> bool;
}

/// One informer, held weakly: observing it does not keep it alive.
pub(super) struct SingleInformer<K> {
    pub(super) name: String,
    pub(super) informer: WeakInformer<K>,
}

impl<K: crate::object::Object + Send + Sync + 'static> InformerSource for SingleInformer<K> {
    fn sample(&self, samples: &mut Vec<InformerSample>) -> bool {
        match self.informer.upgrade() {
            Some(informer) => {
                samples.push(InformerSample::of(self.name.clone(), &informer));
                true
            }
            None => false,
        }
    }
}

/// The informers being observed, each with the fleet cluster it belongs to (if any),
/// shared by [`super::Metrics`] (which adds to them) and the collector in the
/// registry (which reads them).
pub(super) type Sources = Arc<Mutex<Vec<(Option<Arc<str>>, Box<dyn InformerSource>)>>>;

/// Encodes every observed informer's figures on each scrape.
pub(super) struct InformerCollector {
    pub(super) sources: Sources,
}

impl fmt::Debug for InformerCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerCollector")
            .field("sources", &self.sources.locked().len())
            .finish()
    }
}

impl Collector for InformerCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        let mut samples = Vec::new();
        self.sources.locked().retain(|(cluster, source)| {
            let from = samples.len();
            let live = source.sample(&mut samples);
            for sample in &mut samples[from..] {
                sample.cluster.clone_from(cluster);
            }
            live
        });
        samples.sort_by(|a, b| {
            (&a.cluster, &a.name, a.projection).cmp(&(&b.cluster, &b.name, b.projection))
        });
        let reflected: Vec<(Labels<'_>, &StatsSnapshot)> = samples
            .iter()
            .filter_map(|s| Some((labels(s), s.reflector.as_ref()?)))
            .collect();
        let e = &mut encoder;
        family(
            e,
            "informer_cached_objects",
            "Objects in the informer's cache",
            MetricType::Gauge,
            samples.iter().map(|s| (labels(s), Value::Int(s.cached))),
        )?;
        family(
            e,
            "informer_cache_objects",
            "Objects in the informer's cache (the count behind informer_cache_bytes)",
            MetricType::Gauge,
            samples.iter().map(|s| (labels(s), Value::Int(s.cached))),
        )?;
        family(
            e,
            "informer_cache_bytes",
            "Estimated bytes the informer's cache holds: its objects times the mean size of the objects it decoded lately, plus the store's cost per object",
            MetricType::Gauge,
            samples.iter().filter_map(|s| {
                let bytes = usize::try_from(s.cache_bytes?).unwrap_or(usize::MAX);
                Some((labels(s), Value::Int(bytes)))
            }),
        )?;
        family(
            e,
            "informer_synced",
            "1 once the informer's cache has synced (its first list is in the cache)",
            MetricType::Gauge,
            samples.iter().map(|s| (labels(s), Value::from(s.synced))),
        )?;
        family(
            e,
            "informer_store_resource_version",
            "The resourceVersion up to which the informer's cache reflects the server (client-go's name, from 1.36)",
            MetricType::Gauge,
            samples.iter().filter_map(|s| {
                let version = usize::try_from(s.store_resource_version?).ok()?;
                Some((labels(s), Value::Int(version)))
            }),
        )?;
        family(
            e,
            "informer_queued_items",
            "Number of items currently queued in the FIFO: changes for the in-order queue, keys for the per-key one (client-go's name, from 1.36)",
            MetricType::Gauge,
            samples
                .iter()
                .map(|s| (labels(s), Value::Int(s.queued_items))),
        )?;
        family(
            e,
            "informer_processing_latency_seconds",
            "Time taken to process events after popping from the queue, per popped batch: writing them to the cache and handing them to the handlers' buffers (client-go's name and buckets, from 1.36)",
            MetricType::Histogram,
            samples
                .iter()
                .map(|s| (labels(s), Value::Histogram(s.processing_latency.clone()))),
        )?;
        family(
            e,
            "informer_handlers",
            "Event handlers and subscriptions registered with the informer",
            MetricType::Gauge,
            samples
                .iter()
                .map(|s| (labels(s), Value::Int(s.handlers.len()))),
        )?;
        family(
            e,
            "informer_handler_pending",
            "Notifications buffered for the informer's handlers and not yet handled, summed over its handlers",
            MetricType::Gauge,
            samples.iter().map(|s| {
                let pending = s.handlers.iter().map(|h| h.pending).sum();
                (labels(s), Value::Int(pending))
            }),
        )?;
        family(
            e,
            "informer_handler_pending_peak",
            "The most notifications ever buffered at once for one of the informer's handlers",
            MetricType::Gauge,
            samples.iter().map(|s| {
                let peak = s.handlers.iter().map(|h| h.peak_pending).max();
                (labels(s), Value::Int(peak.unwrap_or(0)))
            }),
        )?;
        family(
            e,
            "informer_handler_panics",
            "Notifications whose handler panicked (each panic was contained)",
            MetricType::Counter,
            samples
                .iter()
                .map(|s| (labels(s), Value::Count(s.handler_panics))),
        )?;
        for (name, help, value) in REFLECTOR_COUNTERS {
            family(
                e,
                name,
                help,
                MetricType::Counter,
                reflected
                    .iter()
                    .map(|(n, s)| (n.clone(), Value::Count(value(s)))),
            )?;
        }
        family(
            e,
            "informer_reflector_sync_failures",
            "Lists that failed in a row, up to now (0 once one succeeds)",
            MetricType::Gauge,
            reflected.iter().map(|(n, s)| {
                let failures = usize::try_from(s.sync_failures).unwrap_or(usize::MAX);
                (n.clone(), Value::Int(failures))
            }),
        )?;
        family(
            e,
            "informer_reflector_last_resource_version_age_seconds",
            "Seconds since the cache last reached a new resourceVersion (by a list, an event or a bookmark)",
            MetricType::Gauge,
            reflected.iter().filter_map(|(n, s)| {
                Some((
                    n.clone(),
                    Value::Seconds(s.resource_version_age?.as_secs_f64()),
                ))
            }),
        )?;
        let checked: Vec<(Labels<'_>, &ConsistencyStats)> = samples
            .iter()
            .filter(|s| s.consistency.periodic)
            .map(|s| (labels(s), &s.consistency))
            .collect();
        super::consistency::encode(e, &checked)?;
        // The process's, not an informer's: a value is counted once however many
        // caches hold it (see `projection::Shared`).
        let shared = shared_size();
        for (name, help, value) in [
            (
                "informer_shared_values",
                "Distinct shared values (projection fields of type Shared) alive in the process, each stored once whichever caches hold it",
                shared.values,
            ),
            (
                "informer_shared_values_bytes",
                "Estimated bytes of the shared values alive in the process, counted once each and in no informer's informer_cache_bytes",
                shared.bytes,
            ),
        ] {
            let metric = e.encode_descriptor(name, help, None, MetricType::Gauge)?;
            ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX)).encode(metric)?;
        }
        Ok(())
    }
}

/// The reflector's counters: name (the encoder appends `_total`), help, value.
type ReflectorCounter = (&'static str, &'static str, fn(&StatsSnapshot) -> u64);

const REFLECTOR_COUNTERS: [ReflectorCounter; 9] = [
    (
        "informer_reflector_lists",
        "Completed lists, streaming lists included",
        |s| s.lists,
    ),
    (
        "informer_reflector_list_items",
        "Objects received by lists",
        |s| s.list_items,
    ),
    ("informer_reflector_watches", "Watches started", |s| {
        s.watches
    }),
    (
        "informer_reflector_short_watches",
        "Watches that ended at once without events",
        |s| s.short_watches,
    ),
    (
        "informer_reflector_watch_events",
        "Watch events received, bookmarks included",
        |s| s.watch_events,
    ),
    (
        "informer_reflector_errors",
        "List and watch errors (the reflector retries each)",
        |s| s.errors,
    ),
    (
        "informer_reflector_relists_after_expired",
        "Relists because the server answered 410 Gone (the resourceVersion had expired)",
        |s| s.expired,
    ),
    (
        "informer_reflector_filtered_out",
        "Objects skipped before decoding because the key filter does not keep them",
        |s| s.filtered_out,
    ),
    (
        "informer_reflector_relists_after_filter_change",
        "Relists because the key filter changed",
        |s| s.filter_relists,
    ),
];

/// A series' labels: `informer`, `cluster` for a fleet member's, and `projection`
/// for a projection's (two informers of one resource).
type Labels<'s> = Vec<(&'static str, &'s str)>;

/// The labels of `sample`'s series.
fn labels(sample: &InformerSample) -> Labels<'_> {
    let mut labels = Vec::with_capacity(3);
    if let Some(cluster) = &sample.cluster {
        labels.push(("cluster", &**cluster));
    }
    labels.push(("informer", sample.name.as_str()));
    if let Some(projection) = sample.projection {
        labels.push(("projection", projection));
    }
    labels
}

/// Writes one family whose series are labelled by `informer` (and `cluster`).
fn family<'s>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    metric_type: MetricType,
    series: impl Iterator<Item = (Labels<'s>, Value)>,
) -> fmt::Result {
    family_of(encoder, name, help, metric_type, series)
}
