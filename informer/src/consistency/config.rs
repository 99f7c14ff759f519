//! [`ConsistencyConfig`]: how often an informer checks its cache against the server,
//! and what it does about a difference. A `Default` struct with `#[must_use]` builder
//! methods.

use std::time::Duration;

/// How an informer checks its cache while it runs (see the [module docs](super)).
///
/// Opt in per informer ([`InformerConfig::consistency`](crate::shared_informer::InformerConfig::consistency))
/// or for every informer of a factory
/// ([`FactoryConfig::consistency`](crate::factory::FactoryConfig::consistency)).
///
/// ```
/// use std::time::Duration;
/// use informer::consistency::ConsistencyConfig;
///
/// // Every 10 minutes (give or take a minute), relisting when the cache is wrong.
/// let config = ConsistencyConfig::default().heal(true);
/// assert_eq!(config.interval, Duration::from_secs(600));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[must_use]
#[non_exhaustive]
pub struct ConsistencyConfig {
    /// The time between two checks (default 10 minutes). Each check lists the
    /// collection's metadata once (in pages), and a second time only when the cache
    /// differs.
    pub interval: Duration,
    /// Each wait is drawn from `interval` to `interval * (1 + jitter)` (default 0.1),
    /// so the informers of many replicas do not list together.
    pub jitter: f64,
    /// Relist when a check finds the cache differing (default false: log and count
    /// only). The relist replaces the cache with the server's collection, as after 410
    /// Gone; handlers see the changes it makes.
    pub heal: bool,
    /// The time between two staleness probes (default 30 seconds; `None` or zero: no
    /// probes besides the one each check makes). A probe is one consistent read of one object
    /// and, when the cache is not already past it, a watch of a few seconds from the
    /// cache's version that reads only versions.
    pub staleness_interval: Option<Duration>,
    /// Objects per page of the check's lists (default 500; 0 is read as 1).
    pub page_size: u32,
    /// How long one request may take (default 60 seconds); also how long a check
    /// waits for the cache to pass a newer version when the server no longer keeps the
    /// one it wanted.
    pub request_timeout: Duration,
    /// How many differing keys a log line names (default 10); the report names all.
    pub logged_differences: usize,
}

impl Default for ConsistencyConfig {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(600),
            jitter: 0.1,
            heal: false,
            staleness_interval: Some(Duration::from_secs(30)),
            page_size: 500,
            request_timeout: Duration::from_secs(60),
            logged_differences: 10,
        }
    }
}

impl ConsistencyConfig {
    /// The time between two checks.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// The jitter of each wait, a fraction of the interval (read within `0..=10`).
    pub fn jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter;
        self
    }

    /// Whether to relist when a check finds a difference.
    pub fn heal(mut self, heal: bool) -> Self {
        self.heal = heal;
        self
    }

    /// The time between two staleness probes; `None` (or zero) probes only with each
    /// check.
    pub fn staleness_interval(mut self, interval: Option<Duration>) -> Self {
        self.staleness_interval = interval;
        self
    }

    /// Objects per page of the check's lists (read as at least 1).
    pub fn page_size(mut self, page_size: u32) -> Self {
        self.page_size = page_size;
        self
    }

    /// How long one request may take.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How many differing keys a log line names.
    pub fn logged_differences(mut self, count: usize) -> Self {
        self.logged_differences = count;
        self
    }

    /// A wait before the next check: `interval`, plus up to `jitter` of it.
    pub(crate) fn next_wait(&self) -> Duration {
        jittered(self.interval, self.jitter)
    }

    /// A wait before the next staleness probe, jittered as checks are; none for a
    /// zero interval, however the field was set (it would probe without a pause).
    pub(crate) fn next_probe_wait(&self) -> Option<Duration> {
        self.staleness_interval
            .filter(|interval| !interval.is_zero())
            .map(|interval| jittered(interval, self.jitter))
    }
}

fn jittered(interval: Duration, jitter: f64) -> Duration {
    use rand::Rng;
    let extra = interval.mul_f64(jitter.clamp(0.0, 10.0) * rand::rng().random::<f64>());
    interval + extra
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_stay_within_the_jitter() {
        let config = ConsistencyConfig::default()
            .interval(Duration::from_secs(100))
            .jitter(0.2);
        for _ in 0..100 {
            let wait = config.next_wait();
            assert!(wait >= Duration::from_secs(100) && wait <= Duration::from_secs(120));
        }
        let probes = config.clone().staleness_interval(None);
        assert_eq!(probes.next_probe_wait(), None);
    }

    #[test]
    fn a_zero_probe_interval_or_a_negative_jitter_set_on_the_field_is_read_safely() {
        let config = ConsistencyConfig {
            staleness_interval: Some(Duration::ZERO),
            jitter: -1.0,
            ..ConsistencyConfig::default().interval(Duration::from_secs(100))
        };
        assert_eq!(
            config.next_probe_wait(),
            None,
            "no probe loop without a pause"
        );
        assert_eq!(config.next_wait(), Duration::from_secs(100));
    }
}
