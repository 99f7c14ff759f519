//! [`QueueMetrics`] and its implementations, explained in the [module docs](super#metrics).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::lock::MutexExt;

/// Receives the workqueue's metrics; every hook defaults to doing nothing.
///
/// One value serves one queue (the queue's name is in its
/// [`QueueConfig`](super::QueueConfig) if an implementation needs a label). See the
/// [module documentation](super#metrics) for when each hook is called. Hooks run under the
/// queue's lock: keep them cheap and never call the queue from inside one.
pub trait QueueMetrics: Send + Sync + 'static {
    /// An item was added to the queue (adds that were deduplicated are not counted).
    fn on_add(&self) {}

    /// The number of items waiting to be handed out by `get` is now `depth`.
    fn set_depth(&self, depth: usize) {
        let _ = depth;
    }

    /// `get` handed out an item that had waited `queued_for` since it was added.
    fn observe_latency(&self, queued_for: Duration) {
        let _ = queued_for;
    }

    /// `done` was called for an item that had been processed for `took`.
    fn observe_work_duration(&self, took: Duration) {
        let _ = took;
    }

    /// An item was scheduled for a retry (`add_after` or `add_rate_limited`).
    fn on_retry(&self) {}

    /// The work currently in progress: items handed out by `get` and not yet `done`.
    fn set_unfinished_work(&self, work: UnfinishedWork) {
        let _ = work;
    }
}

/// Work in progress at one instant: items handed out by `get` whose `done` has not
/// come yet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnfinishedWork {
    /// How many items are being processed.
    pub in_flight: usize,
    /// The sum of the time each of them has been processed so far
    /// (client-go's `unfinished_work_seconds`).
    pub total: Duration,
    /// The time the longest-running of them has been processed so far
    /// (client-go's `longest_running_processor_seconds`).
    pub longest: Duration,
}

/// Metrics that go nowhere; the default for every queue.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NoopMetrics;

impl QueueMetrics for NoopMetrics {}

/// Count, sum and maximum of a series of observed durations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DurationStats {
    /// Number of observations.
    pub count: u64,
    /// Sum of all observations.
    pub total: Duration,
    /// Largest observation.
    pub max: Duration,
}

impl DurationStats {
    fn observe(&mut self, value: Duration) {
        self.count += 1;
        self.total = self.total.saturating_add(value);
        self.max = self.max.max(value);
    }
}

/// A copy of everything an [`InMemoryMetrics`] has recorded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MetricsSnapshot {
    /// Items waiting to be handed out (the last value given to `set_depth`).
    pub depth: usize,
    /// Items added (not counting deduplicated adds).
    pub adds: u64,
    /// Retries scheduled with `add_after` / `add_rate_limited`.
    pub retries: u64,
    /// Time items spent queued before `get` handed them out.
    pub latency: DurationStats,
    /// Time between `get` and `done`.
    pub work_duration: DurationStats,
    /// Work in progress, as last reported.
    pub unfinished_work: UnfinishedWork,
}

/// Records the queue's metrics in memory; clone it to keep a handle for reading.
///
/// Clones share the same record, so give one clone to the queue's
/// [`QueueConfig`](super::QueueConfig) and read the other with
/// [`snapshot`](Self::snapshot).
#[derive(Debug, Clone, Default)]
pub struct InMemoryMetrics {
    record: Arc<Mutex<MetricsSnapshot>>,
}

impl InMemoryMetrics {
    /// An empty record.
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of everything recorded so far.
    pub fn snapshot(&self) -> MetricsSnapshot {
        *self.record.locked()
    }

    fn update(&self, change: impl FnOnce(&mut MetricsSnapshot)) {
        change(&mut self.record.locked());
    }
}

impl QueueMetrics for InMemoryMetrics {
    fn on_add(&self) {
        self.update(|m| m.adds += 1);
    }

    fn set_depth(&self, depth: usize) {
        self.update(|m| m.depth = depth);
    }

    fn observe_latency(&self, queued_for: Duration) {
        self.update(|m| m.latency.observe(queued_for));
    }

    fn observe_work_duration(&self, took: Duration) {
        self.update(|m| m.work_duration.observe(took));
    }

    fn on_retry(&self) {
        self.update(|m| m.retries += 1);
    }

    fn set_unfinished_work(&self, work: UnfinishedWork) {
        self.update(|m| m.unfinished_work = work);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_memory_metrics_record_every_hook_and_share_between_clones() {
        let metrics = InMemoryMetrics::new();
        let hooks: &dyn QueueMetrics = &metrics.clone();
        hooks.on_add();
        hooks.on_add();
        hooks.set_depth(2);
        hooks.observe_latency(Duration::from_millis(3));
        hooks.observe_latency(Duration::from_millis(7));
        hooks.observe_work_duration(Duration::from_secs(1));
        hooks.on_retry();
        let work = UnfinishedWork {
            in_flight: 1,
            total: Duration::from_secs(4),
            longest: Duration::from_secs(4),
        };
        hooks.set_unfinished_work(work);

        let snap = metrics.snapshot();
        assert_eq!(snap.adds, 2);
        assert_eq!(snap.depth, 2);
        assert_eq!(snap.retries, 1);
        assert_eq!(
            snap.latency,
            DurationStats {
                count: 2,
                total: Duration::from_millis(10),
                max: Duration::from_millis(7),
            }
        );
        assert_eq!(snap.work_duration.count, 1);
        assert_eq!(snap.work_duration.max, Duration::from_secs(1));
        assert_eq!(snap.unfinished_work, work);
    }
}
