//! client-go's workqueue metrics as Prometheus families, one series per queue name.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::workqueue::{QueueMetrics, UnfinishedWork};

/// The labels of every workqueue series: `name`, and `cluster` for a fleet member's.
type QueueLabel = Vec<(&'static str, String)>;
type Seconds = Gauge<f64, AtomicU64>;
type Durations = Family<QueueLabel, Histogram, fn() -> Histogram>;

/// client-go's buckets for both workqueue histograms: 10 ns to 10 s, by tens.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 10))
}

/// The seven workqueue families, registered once.
#[derive(Debug, Clone)]
pub(super) struct WorkqueueFamilies {
    depth: Family<QueueLabel, Gauge>,
    adds: Family<QueueLabel, Counter>,
    queue_duration: Durations,
    work_duration: Durations,
    unfinished_work: Family<QueueLabel, Seconds>,
    longest_running: Family<QueueLabel, Seconds>,
    retries: Family<QueueLabel, Counter>,
}

impl WorkqueueFamilies {
    pub(super) fn register(registry: &mut Registry) -> Self {
        let families = Self {
            depth: Family::default(),
            adds: Family::default(),
            queue_duration: Family::new_with_constructor(duration_histogram),
            work_duration: Family::new_with_constructor(duration_histogram),
            unfinished_work: Family::default(),
            longest_running: Family::default(),
            retries: Family::default(),
        };
        // Counters are registered without `_total`: the encoder appends it.
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            families.depth.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            families.adds.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            families.queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            families.work_duration.clone(),
        );
        registry.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been \
             observed by work_duration. Large values indicate stuck threads. One can deduce \
             the number of stuck threads by observing the rate at which this increases",
            families.unfinished_work.clone(),
        );
        registry.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            families.longest_running.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            families.retries.clone(),
        );
        families
    }

    /// The series of the queue called `name`, in fleet cluster `cluster` if given.
    pub(super) fn queue(&self, name: &str, cluster: Option<&str>) -> WorkqueueMetrics {
        let label = super::encode::with_cluster(cluster, vec![("name", name.to_owned())]);
        WorkqueueMetrics {
            depth: self.depth.get_or_create(&label).clone(),
            adds: self.adds.get_or_create(&label).clone(),
            queue_duration: self.queue_duration.get_or_create(&label).clone(),
            work_duration: self.work_duration.get_or_create(&label).clone(),
            unfinished_work: self.unfinished_work.get_or_create(&label).clone(),
            longest_running: self.longest_running.get_or_create(&label).clone(),
            retries: self.retries.get_or_create(&label).clone(),
        }
    }
}

/// One queue's Prometheus series, with client-go's names and meaning
/// (`workqueue_depth{name="..."}` and the rest; see the [module docs](super)).
///
/// Made by [`Metrics::workqueue`](super::Metrics::workqueue); give it to a queue with
/// [`QueueConfig::metrics`](crate::workqueue::QueueConfig::metrics). Two queues given
/// the same name write the same series, as in client-go: name queues uniquely.
#[derive(Debug, Clone)]
pub struct WorkqueueMetrics {
    depth: Gauge,
    adds: Counter,
    queue_duration: Histogram,
    work_duration: Histogram,
    unfinished_work: Seconds,
    longest_running: Seconds,
    retries: Counter,
}

impl QueueMetrics for WorkqueueMetrics {
    fn on_add(&self) {
        self.adds.inc();
    }

    fn set_depth(&self, depth: usize) {
        self.depth.set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    fn observe_latency(&self, queued_for: Duration) {
        self.queue_duration.observe(queued_for.as_secs_f64());
    }

    fn observe_work_duration(&self, took: Duration) {
        self.work_duration.observe(took.as_secs_f64());
    }

    fn on_retry(&self) {
        self.retries.inc();
    }

    fn set_unfinished_work(&self, work: UnfinishedWork) {
        self.unfinished_work.set(work.total.as_secs_f64());
        self.longest_running.set(work.longest.as_secs_f64());
    }
}
