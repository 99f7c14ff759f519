//! [`RecorderConfig`]: the recorder's limits and timings, client-go's by default.

use std::time::Duration;

/// How a [`Recorder`](super::Recorder) queues, folds, filters and writes events.
///
/// The defaults are client-go's (`tools/events` and `tools/record`); tests shorten
/// the timings. Zero counts and a zero flush interval are taken as the smallest
/// workable value (one, or a millisecond).
///
/// ```
/// use std::time::Duration;
/// use informer::events::RecorderConfig;
///
/// let config = RecorderConfig::default()
///     .flush_interval(Duration::from_millis(200))
///     .spam_burst(5);
/// assert_eq!(config.spam_burst, 5);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
#[must_use]
pub struct RecorderConfig {
    /// How many writes may wait for the background writer (1000).
    pub queue_capacity: usize,
    /// How many writes run at once (8).
    pub workers: usize,
    /// How long after its last occurrence an event still folds into its series (6 min).
    pub series_window: Duration,
    /// How often changed series counts are written (30 s).
    pub flush_interval: Duration,
    /// The spam filter's burst per object (25).
    pub spam_burst: u32,
    /// How often the spam filter gives an object a token back (5 min; zero: off).
    pub spam_refill: Duration,
    /// How many distinct events and objects the caches remember (4096).
    pub cache_capacity: usize,
    /// How long a failed write waits before its retry (10 s, ±25 % jitter).
    pub retry_backoff: Duration,
    /// How many times a write is tried before it is given up (12).
    pub max_tries: u32,
    /// Where Events about cluster-scoped objects go (`default`).
    pub cluster_scoped_namespace: String,
}

impl Default for RecorderConfig {
    fn default() -> Self {
        Self {
            queue_capacity: 1000,
            workers: 8,
            series_window: Duration::from_secs(6 * 60),
            flush_interval: Duration::from_secs(30),
            spam_burst: 25,
            spam_refill: Duration::from_secs(5 * 60),
            cache_capacity: 4096,
            retry_backoff: Duration::from_secs(10),
            max_tries: 12,
            cluster_scoped_namespace: "default".to_owned(),
        }
    }
}

impl RecorderConfig {
    /// How many writes may wait for the background writer (client-go's
    /// `maxQueuedEvents`, 1000). A publish that finds the queue full is dropped and
    /// counted; repeats folded into a series take no place in it.
    pub fn queue_capacity(mut self, capacity: usize) -> Self {
        self.queue_capacity = capacity;
        self
    }

    /// How many writes run at once (client-go's `recordWorkers`, 8). Writes for one
    /// Event never overlap.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// How long after its last occurrence an event still folds into the same series
    /// (client-go's `finishTime`, 6 minutes). Later, an identical event starts a new
    /// Event.
    pub fn series_window(mut self, window: Duration) -> Self {
        self.series_window = window;
        self
    }

    /// How often changed series counts are written (30 s): each Event gets at most one
    /// patch per interval however often it repeats, besides the one that starts its
    /// series. Retired Events are forgotten on the same beat.
    pub fn flush_interval(mut self, interval: Duration) -> Self {
        self.flush_interval = interval;
        self
    }

    /// The spam filter's burst per object (client-go's `defaultSpamBurst`, 25).
    pub fn spam_burst(mut self, burst: u32) -> Self {
        self.spam_burst = burst;
        self
    }

    /// How often the spam filter gives an object a token back (client-go's
    /// `defaultSpamQPS`, one per 5 minutes). `Duration::ZERO` turns the filter off.
    pub fn spam_refill(mut self, every: Duration) -> Self {
        self.spam_refill = every;
        self
    }

    /// How many distinct events the series cache, and objects the spam filter,
    /// remember (client-go's `maxLruCacheEntries`, 4096). Beyond it events are
    /// still written, without folding.
    pub fn cache_capacity(mut self, capacity: usize) -> Self {
        self.cache_capacity = capacity;
        self
    }

    /// How long a write waits before it is retried after a connection error or a
    /// server error (client-go's `defaultSleepDuration`, 10 s, with ±25 % jitter).
    pub fn retry_backoff(mut self, backoff: Duration) -> Self {
        self.retry_backoff = backoff;
        self
    }

    /// How many times a write is tried before it is given up (client-go's
    /// `maxTriesPerEvent`, 12).
    pub fn max_tries(mut self, tries: u32) -> Self {
        self.max_tries = tries;
        self
    }

    /// The namespace of Events about cluster-scoped objects (Nodes, Namespaces,
    /// cluster-scoped custom resources), which have none of their own: `default`, as
    /// client-go and `kubectl describe` expect. API servers before 1.21 accept only
    /// `kube-system` there.
    pub fn cluster_scoped_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.cluster_scoped_namespace = namespace.into();
        self
    }
}
