//! How long the process loop takes to apply one popped batch: write its deltas to the
//! cache and hand their notifications to the handlers' buffers. client-go 1.36 calls
//! it the processing latency (`informer_processing_latency_seconds`, observed once per
//! pop, or per batch with batch processing on); this keeps the same buckets.
//!
//! Recorded by every informer built with the `metrics` feature (one clock read and two
//! atomic adds per batch; without the feature nothing is recorded, since nothing could
//! read it); the metrics read it at scrape time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The buckets' upper bounds in seconds: client-go's.
pub(crate) const BUCKETS: [f64; 12] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// A histogram of batch processing times.
#[derive(Debug, Default)]
pub(crate) struct ProcessingLatency {
    /// Batches per bucket, not cumulative; the last one counts those over the last
    /// bound.
    counts: [AtomicU64; BUCKETS.len() + 1],
    nanos: AtomicU64,
}

/// A [`ProcessingLatency`] as read at one moment.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LatencySnapshot {
    /// Batches processed.
    pub(crate) count: u64,
    /// Their processing time in all, in seconds.
    pub(crate) sum_seconds: f64,
    /// `(upper bound, batches)` per bucket, not cumulative; the last bound is infinite.
    pub(crate) buckets: Vec<(f64, u64)>,
}

impl ProcessingLatency {
    /// Counts one batch that took `took`.
    pub(crate) fn record(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        // A bucket counts what is at most its bound (Prometheus's `le`).
        let bucket = BUCKETS.partition_point(|&bound| bound < seconds);
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// What has been recorded so far. Counts and sum are read one after the other, so
    /// under a concurrent `record` they may disagree by one batch.
    pub(crate) fn snapshot(&self) -> LatencySnapshot {
        let bounds = BUCKETS
            .iter()
            .copied()
            .chain(std::iter::once(f64::INFINITY));
        let buckets: Vec<(f64, u64)> = bounds
            .zip(&self.counts)
            .map(|(bound, count)| (bound, count.load(Ordering::Relaxed)))
            .collect();
        LatencySnapshot {
            count: buckets.iter().map(|(_, count)| count).sum(),
            sum_seconds: Duration::from_nanos(self.nanos.load(Ordering::Relaxed)).as_secs_f64(),
            buckets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_batch_lands_in_the_first_bucket_that_holds_it() {
        let latency = ProcessingLatency::default();
        latency.record(Duration::from_micros(200));
        latency.record(Duration::from_millis(1)); // on a bound: that bucket
        latency.record(Duration::from_millis(30));
        latency.record(Duration::from_secs(11));
        let snapshot = latency.snapshot();
        assert_eq!(snapshot.count, 4);
        let per_bucket: Vec<u64> = snapshot.buckets.iter().map(|(_, n)| *n).collect();
        assert_eq!(per_bucket, [2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(snapshot.buckets.last().unwrap().0, f64::INFINITY);
        assert!((snapshot.sum_seconds - 11.0312).abs() < 1e-9);
    }
}
