//! The rate limiters, explained in the [module docs](super#rate-limiters).

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::lock::MutexExt;

/// Decides how long an item waits before its retry; client-go's `RateLimiter`.
///
/// Implementations use interior mutability: a queue shares one limiter between all
/// its handles and workers.
pub trait RateLimiter<T>: Send + Sync {
    /// Records a failure of `item` and returns how long to wait before retrying it.
    fn when(&self, item: &T) -> Duration;

    /// Clears `item`'s failure history (call when it was processed successfully).
    fn forget(&self, item: &T);

    /// How many failures of `item` are on record.
    fn num_requeues(&self, item: &T) -> u32;
}

impl<T, R: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<R> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }

    fn forget(&self, item: &T) {
        (**self).forget(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        (**self).num_requeues(item)
    }
}

/// Per-item exponential backoff: the n-th failure in a row waits `base * 2^(n-1)`,
/// never more than `max`.
///
/// The default is client-go's controller default: 5 ms base, 1000 s cap.
pub struct ItemExponentialFailureRateLimiter<T> {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<T, u32>>,
}

impl<T> ItemExponentialFailureRateLimiter<T> {
    /// Backoff starting at `base` and doubling up to `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> Default for ItemExponentialFailureRateLimiter<T> {
    /// 5 ms doubling up to 1000 s, as client-go's `DefaultControllerRateLimiter`.
    fn default() -> Self {
        Self::new(Duration::from_millis(5), Duration::from_secs(1000))
    }
}

impl<T> fmt::Debug for ItemExponentialFailureRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialFailureRateLimiter")
            .field("base", &self.base)
            .field("max", &self.max)
            .field("items", &self.failures.locked().len())
            .finish()
    }
}

impl<T> RateLimiter<T> for ItemExponentialFailureRateLimiter<T>
where
    T: Hash + Eq + Clone + Send,
{
    fn when(&self, item: &T) -> Duration {
        let exponent = {
            let mut failures = self.failures.locked();
            let count = failures.entry(item.clone()).or_insert(0);
            let exponent = *count;
            *count = count.saturating_add(1);
            exponent
        };
        // 2^exponent overflows u32 from 32 on, and the product can overflow Duration:
        // either way the cap applies.
        1u32.checked_shl(exponent)
            .and_then(|factor| self.base.checked_mul(factor))
            .map_or(self.max, |delay| delay.min(self.max))
    }

    fn forget(&self, item: &T) {
        self.failures.locked().remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.locked().get(item).copied().unwrap_or(0)
    }
}

/// Per-item two-speed delay: `fast` for the first `max_fast_attempts` failures of an
/// item, `slow` after that.
pub struct ItemFastSlowRateLimiter<T> {
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
    failures: Mutex<HashMap<T, u32>>,
}

impl<T> ItemFastSlowRateLimiter<T> {
    /// Waits `fast` for the first `max_fast_attempts` failures, then `slow`.
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        Self {
            fast,
            slow,
            max_fast_attempts,
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> fmt::Debug for ItemFastSlowRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlowRateLimiter")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .field("items", &self.failures.locked().len())
            .finish()
    }
}

impl<T> RateLimiter<T> for ItemFastSlowRateLimiter<T>
where
    T: Hash + Eq + Clone + Send,
{
    fn when(&self, item: &T) -> Duration {
        let mut failures = self.failures.locked();
        let count = failures.entry(item.clone()).or_insert(0);
        *count = count.saturating_add(1);
        if *count <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }

    fn forget(&self, item: &T) {
        self.failures.locked().remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.locked().get(item).copied().unwrap_or(0)
    }
}

/// A token bucket shared by all items: `burst` retries at once, refilled at `qps`
/// per second (client-go's `BucketRateLimiter` over `golang.org/x/time/rate`).
///
/// Each call to `when` takes a token; when none is left it reserves a future one
/// and returns the wait until then, so the retries it schedules are spaced `1/qps`
/// apart. The bucket starts full. It keeps no per-item history: `forget` does
/// nothing and `num_requeues` is always 0.
///
/// An infinite `qps` never delays. A `qps` that is zero, negative or NaN never
/// refills: once the burst is spent, delays are "forever" ([`Duration::MAX`], which
/// the queue's `add_after` caps at about 30 years). A `burst` of 0 is treated as 1.
pub struct BucketRateLimiter {
    qps: f64,
    burst: u32,
    bucket: Mutex<Option<Bucket>>,
}

#[derive(Debug)]
struct Bucket {
    /// Tokens available; negative when future tokens are already reserved.
    tokens: f64,
    /// When `tokens` was last brought up to date.
    updated: Instant,
}

impl BucketRateLimiter {
    /// A bucket of `burst` tokens refilled at `qps` tokens per second.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            qps,
            burst: burst.max(1),
            bucket: Mutex::new(None),
        }
    }

    fn refills(&self) -> bool {
        self.qps > 0.0
    }
}

impl Default for BucketRateLimiter {
    /// 10 per second, bursts of 100, as client-go's `DefaultControllerRateLimiter`.
    fn default() -> Self {
        Self::new(10.0, 100)
    }
}

impl fmt::Debug for BucketRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BucketRateLimiter")
            .field("qps", &self.qps)
            .field("burst", &self.burst)
            .finish_non_exhaustive()
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        if self.qps == f64::INFINITY {
            return Duration::ZERO;
        }
        let now = Instant::now();
        let burst = f64::from(self.burst);
        let mut guard = self.bucket.locked();
        let bucket = guard.get_or_insert(Bucket {
            tokens: burst,
            updated: now,
        });
        if self.refills() {
            let elapsed = now.saturating_duration_since(bucket.updated);
            bucket.tokens = (bucket.tokens + elapsed.as_secs_f64() * self.qps).min(burst);
        }
        bucket.updated = bucket.updated.max(now);
        bucket.tokens -= 1.0;
        if bucket.tokens >= 0.0 {
            Duration::ZERO
        } else if self.refills() {
            Duration::try_from_secs_f64(-bucket.tokens / self.qps).unwrap_or(Duration::MAX)
        } else {
            Duration::MAX
        }
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}

/// Asks every limiter it holds and uses the longest delay; `num_requeues` is the
/// largest count and `forget` reaches them all.
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> MaxOfRateLimiter<T> {
    /// Combines `limiters`; with none, every delay is zero.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }

    /// Adds one more limiter to ask.
    #[must_use]
    pub fn with(mut self, limiter: impl RateLimiter<T> + 'static) -> Self {
        self.limiters.push(Box::new(limiter));
        self
    }
}

impl<T> fmt::Debug for MaxOfRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOfRateLimiter")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        // Every limiter must record the failure, so no short-circuit here.
        self.limiters
            .iter()
            .map(|limiter| limiter.when(item))
            .fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, item: &T) {
        for limiter in &self.limiters {
            limiter.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.limiters
            .iter()
            .map(|limiter| limiter.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// client-go's `DefaultControllerRateLimiter`: the max of a per-item exponential
/// backoff (5 ms doubling to 1000 s) and a shared bucket (10 per second, burst 100).
pub fn default_controller_rate_limiter<T>() -> MaxOfRateLimiter<T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    MaxOfRateLimiter::new(Vec::new())
        .with(ItemExponentialFailureRateLimiter::default())
        .with(BucketRateLimiter::default())
}

#[cfg(test)]
mod tests {
    use tokio::time::advance;

    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn exponential_doubles_from_the_base_per_failure() {
        let limiter = ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000));
        let delays: Vec<_> = (0..6).map(|_| limiter.when(&"a")).collect();
        assert_eq!(
            delays,
            [5 * MS, 10 * MS, 20 * MS, 40 * MS, 80 * MS, 160 * MS]
        );
        assert_eq!(limiter.num_requeues(&"a"), 6);
    }

    #[test]
    fn exponential_is_capped_at_max() {
        let limiter = ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000));
        // 5 ms * 2^17 = 655.36 s, 5 ms * 2^18 = 1310.72 s > cap.
        for _ in 0..17 {
            limiter.when(&"a");
        }
        assert_eq!(limiter.when(&"a"), Duration::from_millis(655_360));
        assert_eq!(limiter.when(&"a"), Duration::from_secs(1000));
        assert_eq!(limiter.when(&"a"), Duration::from_secs(1000));
    }

    #[test]
    fn exponential_does_not_overflow_after_many_failures() {
        let limiter = ItemExponentialFailureRateLimiter::new(Duration::from_secs(1), Duration::MAX);
        for _ in 0..40 {
            limiter.when(&"a");
        }
        assert_eq!(limiter.when(&"a"), Duration::MAX);
        assert_eq!(limiter.num_requeues(&"a"), 41);
    }

    #[test]
    fn exponential_forget_resets_the_backoff() {
        let limiter = ItemExponentialFailureRateLimiter::<&str>::default();
        limiter.when(&"a");
        limiter.when(&"a");
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
        assert_eq!(limiter.when(&"a"), 5 * MS);
    }

    #[test]
    fn exponential_tracks_items_independently() {
        let limiter = ItemExponentialFailureRateLimiter::<&str>::default();
        limiter.when(&"a");
        limiter.when(&"a");
        assert_eq!(limiter.when(&"b"), 5 * MS);
        assert_eq!(limiter.num_requeues(&"a"), 2);
        assert_eq!(limiter.num_requeues(&"b"), 1);
    }

    #[test]
    fn fast_slow_switches_after_max_fast_attempts() {
        let limiter = ItemFastSlowRateLimiter::new(5 * MS, Duration::from_secs(10), 3);
        let delays: Vec<_> = (0..5).map(|_| limiter.when(&"a")).collect();
        assert_eq!(
            delays,
            [
                5 * MS,
                5 * MS,
                5 * MS,
                Duration::from_secs(10),
                Duration::from_secs(10)
            ]
        );
        assert_eq!(limiter.num_requeues(&"a"), 5);
        assert_eq!(limiter.when(&"b"), 5 * MS, "per item");
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
        assert_eq!(limiter.when(&"a"), 5 * MS);
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_allows_the_burst_then_spaces_retries_at_qps() {
        let limiter = BucketRateLimiter::new(10.0, 100);
        for i in 0..100 {
            assert_eq!(RateLimiter::<u32>::when(&limiter, &i), Duration::ZERO);
        }
        assert_eq!(limiter.when(&100u32), 100 * MS);
        assert_eq!(limiter.when(&101u32), 200 * MS);
        assert_eq!(limiter.when(&102u32), 300 * MS);
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_refills_over_time_up_to_the_burst() {
        let limiter = BucketRateLimiter::new(10.0, 5);
        for _ in 0..5 {
            assert_eq!(limiter.when(&()), Duration::ZERO);
        }
        advance(Duration::from_secs(1)).await; // 10 tokens' worth, capped at 5
        for _ in 0..5 {
            assert_eq!(limiter.when(&()), Duration::ZERO);
        }
        assert_eq!(limiter.when(&()), 100 * MS);
        // That reservation is paid back by time, not forgotten.
        advance(150 * MS).await;
        assert_eq!(limiter.when(&()), 50 * MS);
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_keeps_no_per_item_history() {
        let limiter = BucketRateLimiter::new(1.0, 1);
        assert_eq!(limiter.when(&"a"), Duration::ZERO);
        assert_eq!(limiter.when(&"a"), Duration::from_secs(1));
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
        assert_eq!(
            limiter.when(&"b"),
            Duration::from_secs(2),
            "shared by all items"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_edge_rates() {
        let unlimited = BucketRateLimiter::new(f64::INFINITY, 1);
        for _ in 0..1000 {
            assert_eq!(unlimited.when(&()), Duration::ZERO);
        }
        let never = BucketRateLimiter::new(0.0, 0);
        assert_eq!(never.when(&()), Duration::ZERO, "burst 0 is treated as 1");
        assert_eq!(never.when(&()), Duration::MAX);
        advance(Duration::from_secs(3600)).await;
        assert_eq!(never.when(&()), Duration::MAX);
    }

    #[tokio::test(start_paused = true)]
    async fn max_of_uses_the_longest_delay_and_forwards_forget() {
        let limiter = MaxOfRateLimiter::new(Vec::new())
            .with(ItemExponentialFailureRateLimiter::new(
                5 * MS,
                Duration::from_secs(1),
            ))
            .with(ItemFastSlowRateLimiter::new(MS, Duration::from_secs(60), 2));
        assert_eq!(limiter.when(&"a"), 5 * MS); // max(5 ms, 1 ms)
        assert_eq!(limiter.when(&"a"), 10 * MS); // max(10 ms, 1 ms)
        assert_eq!(limiter.when(&"a"), Duration::from_secs(60)); // max(20 ms, 60 s)
        assert_eq!(limiter.num_requeues(&"a"), 3);
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
        assert_eq!(limiter.when(&"a"), 5 * MS);
        let empty = MaxOfRateLimiter::<&str>::new(Vec::new());
        assert_eq!(empty.when(&"a"), Duration::ZERO);
        assert_eq!(empty.num_requeues(&"a"), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn default_controller_rate_limiter_is_max_of_exponential_and_bucket() {
        let limiter = default_controller_rate_limiter::<u32>();
        // One item failing again and again: the exponential part dominates.
        assert_eq!(limiter.when(&0), 5 * MS);
        assert_eq!(limiter.when(&0), 10 * MS);
        assert_eq!(limiter.num_requeues(&0), 2);
        limiter.forget(&0);
        assert_eq!(limiter.num_requeues(&0), 0);
        // A storm of distinct failures: after the burst of 100 (two tokens were spent
        // above), the bucket spaces retries 100 ms apart.
        for item in 1..=98 {
            assert_eq!(limiter.when(&item), 5 * MS);
        }
        assert_eq!(limiter.when(&99), 100 * MS);
        assert_eq!(limiter.when(&100), 200 * MS);
    }
}
