//! Exponential backoff with jitter that forgets after a quiet period.
//!
//! client-go's reflector waits between attempts with an exponential backoff manager:
//! 800 ms doubling up to 30 s, each delay stretched by up to 100 % random jitter, and
//! back to 800 ms once two minutes have passed without needing a backoff. This keeps a
//! failing API server from being hammered while a reflector that fails once a day still
//! recovers at once.

use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;

/// Backoff settings; the default is client-go's reflector backoff. Each setting is a
/// public field to read, set with the builder methods.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
#[non_exhaustive]
pub struct BackoffConfig {
    /// The first delay.
    pub initial: Duration,
    /// The largest delay before jitter.
    pub max: Duration,
    /// Each delay is the previous one times this.
    pub factor: f64,
    /// Each delay is stretched by a random fraction in `0..=jitter` of itself.
    pub jitter: f64,
    /// After this long without a backoff, the next delay starts again at `initial`.
    pub reset_after: Duration,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
            factor: 2.0,
            jitter: 1.0,
            reset_after: Duration::from_secs(120),
        }
    }
}

impl BackoffConfig {
    /// The first delay (default 800 ms).
    pub fn initial(mut self, delay: Duration) -> Self {
        self.initial = delay;
        self
    }

    /// The largest delay before jitter (default 30 s).
    pub fn max(mut self, delay: Duration) -> Self {
        self.max = delay;
        self
    }

    /// How much each delay grows over the previous one (default 2).
    pub fn factor(mut self, factor: f64) -> Self {
        self.factor = factor;
        self
    }

    /// The largest random stretch of a delay, as a fraction of it (default 1.0).
    pub fn jitter(mut self, jitter: f64) -> Self {
        self.jitter = jitter;
        self
    }

    /// The quiet time after which the delays start again at `initial` (default 120 s).
    pub fn reset_after(mut self, quiet: Duration) -> Self {
        self.reset_after = quiet;
        self
    }
}

/// The state of one backoff sequence.
#[derive(Debug)]
pub(crate) struct Backoff {
    config: BackoffConfig,
    /// The next delay before jitter; `None` when the sequence starts afresh.
    next: Option<Duration>,
    last: Option<Instant>,
}

impl Backoff {
    pub(crate) fn new(config: BackoffConfig) -> Self {
        Self {
            config,
            next: None,
            last: None,
        }
    }

    /// The delay to wait now; each call grows the next one.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) > self.config.reset_after)
        {
            self.next = None;
        }
        self.last = Some(now);
        let base = self.next.unwrap_or(self.config.initial);
        self.next = Some(base.mul_f64(self.config.factor).min(self.config.max));
        let jitter = if self.config.jitter > 0.0 {
            rand::rng().random_range(0.0..=self.config.jitter)
        } else {
            0.0
        };
        base + base.mul_f64(jitter)
    }

    /// Forgets the sequence: the next delay is the initial one.
    pub(crate) fn reset(&mut self) {
        self.next = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_jitter() -> BackoffConfig {
        BackoffConfig {
            jitter: 0.0,
            ..BackoffConfig::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn doubles_from_800ms_up_to_30s() {
        let mut backoff = Backoff::new(no_jitter());
        let delays: Vec<_> = (0..8).map(|_| backoff.next_delay().as_millis()).collect();
        assert_eq!(delays, [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
    }

    #[tokio::test(start_paused = true)]
    async fn jitter_stretches_by_at_most_the_jitter_fraction() {
        let mut backoff = Backoff::new(BackoffConfig::default());
        for base in [800u128, 1600, 3200] {
            let delay = backoff.next_delay().as_millis();
            assert!((base..=2 * base).contains(&delay), "{delay} for {base}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn quiet_period_resets_the_sequence() {
        let mut backoff = Backoff::new(no_jitter());
        backoff.next_delay();
        backoff.next_delay();
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(backoff.next_delay(), Duration::from_millis(3200));
        tokio::time::advance(Duration::from_secs(121)).await;
        assert_eq!(backoff.next_delay(), Duration::from_millis(800));
    }

    #[tokio::test(start_paused = true)]
    async fn reset_starts_again() {
        let mut backoff = Backoff::new(no_jitter());
        backoff.next_delay();
        backoff.next_delay();
        backoff.reset();
        assert_eq!(backoff.next_delay(), Duration::from_millis(800));
    }
}
