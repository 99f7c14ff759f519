//! The rate-limiting queue: retries wait as long as a rate limiter says.
//!
//! client-go's `RateLimitingInterface` is the queue controllers use. On top of the
//! [delaying queue](super::delaying) it keeps a [`RateLimiter`]:
//!
//! - [`add_rate_limited`](RateLimitingQueue::add_rate_limited) asks the limiter how
//!   long this item should wait (recording one more failure) and adds it after that
//!   delay;
//! - [`forget`](RateLimitingQueue::forget) clears the item's failure history, so its
//!   next failure starts again from the shortest delay. Call it when processing
//!   succeeded; it does not take the item out of the queue;
//! - [`num_requeues`](RateLimitingQueue::num_requeues) is how many failures are on
//!   record, for a "give up after N retries" policy.
//!
//! The default limiter is client-go's `DefaultControllerRateLimiter`
//! ([`default_controller_rate_limiter`]).
//!
//! ```
//! use std::time::Duration;
//! use informer::workqueue::RateLimitingQueue;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true)
//! #     .build().unwrap().block_on(async {
//! let queue = RateLimitingQueue::new();
//! queue.add("default/web");
//! let key = queue.get().await.unwrap();
//! // Reconcile failed: retry after the limiter's delay (5 ms the first time).
//! queue.add_rate_limited(key.clone());
//! queue.done(&key);
//! assert_eq!(queue.num_requeues(&key), 1);
//!
//! let key = queue.get().await.unwrap();
//! // Reconcile succeeded: forget the failures.
//! queue.forget(&key);
//! queue.done(&key);
//! assert_eq!(queue.num_requeues(&key), 0);
//! # });
//! ```

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use super::delaying::DelayingQueue;
use super::metrics::UnfinishedWork;
use super::queue::QueueConfig;
use super::rate_limiter::{RateLimiter, default_controller_rate_limiter};

/// A [`DelayingQueue`] whose retries are paced by a [`RateLimiter`].
///
/// A cheap handle (an `Arc` inside): clones share the queue and the limiter. See the
/// [module documentation](self).
pub struct RateLimitingQueue<T> {
    queue: DelayingQueue<T>,
    limiter: Arc<dyn RateLimiter<T>>,
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            limiter: Arc::clone(&self.limiter),
        }
    }
}

impl<T> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueue")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

impl<T> Default for RateLimitingQueue<T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T> RateLimitingQueue<T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    /// An empty queue with client-go's default controller rate limiter and the
    /// default [`QueueConfig`].
    pub fn new() -> Self {
        Self::with_rate_limiter(default_controller_rate_limiter())
    }

    /// An empty queue paced by `limiter`.
    pub fn with_rate_limiter(limiter: impl RateLimiter<T> + 'static) -> Self {
        Self::with_config(QueueConfig::default(), limiter)
    }

    /// An empty queue with a name and metrics, paced by `limiter`.
    pub fn with_config(config: QueueConfig, limiter: impl RateLimiter<T> + 'static) -> Self {
        Self {
            queue: DelayingQueue::with_config(config),
            limiter: Arc::new(limiter),
        }
    }

    /// The queue's name from its [`QueueConfig`].
    pub fn name(&self) -> &str {
        self.queue.name()
    }

    /// Adds `item` after the delay the rate limiter chooses for it, and records one
    /// more failure. Ignored after shutdown (the failure is not recorded then).
    pub fn add_rate_limited(&self, item: T) {
        if self.queue.is_shutting_down() {
            return;
        }
        let delay = self.limiter.when(&item);
        self.queue.add_after(item, delay);
    }

    /// Clears `item`'s failure history in the rate limiter. The item stays queued if
    /// it is.
    pub fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    /// How many failures of `item` the rate limiter has on record.
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.limiter.num_requeues(item)
    }

    /// Marks `item` as needing processing now; see [`WorkQueue::add`](super::WorkQueue::add).
    pub fn add(&self, item: T) {
        self.queue.add(item);
    }

    /// Adds `item` once `delay` has passed; see [`DelayingQueue::add_after`].
    pub fn add_after(&self, item: T, delay: Duration) {
        self.queue.add_after(item, delay);
    }

    /// Waits for an item and hands it out; `None` once the queue is shut down and
    /// empty. See [`WorkQueue::get`](super::WorkQueue::get); also cancel-safe.
    pub async fn get(&self) -> Option<T> {
        self.queue.get().await
    }

    /// Marks `item` as processed; see [`WorkQueue::done`](super::WorkQueue::done).
    pub fn done(&self, item: &T) {
        self.queue.done(item);
    }

    /// Number of items ready for `get`; see [`DelayingQueue::len`].
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no item is ready for `get`.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Number of items waiting for their delay (including rate-limited retries).
    pub fn waiting_len(&self) -> usize {
        self.queue.waiting_len()
    }

    /// Stops the queue; see [`DelayingQueue::shutdown`].
    pub fn shutdown(&self) {
        self.queue.shutdown();
    }

    /// Stops the queue and waits until no item is being processed; see
    /// [`WorkQueue::shutdown_with_drain`](super::WorkQueue::shutdown_with_drain).
    pub async fn shutdown_with_drain(&self) {
        self.queue.shutdown_with_drain().await;
    }

    /// Whether the queue has been shut down.
    pub fn is_shutting_down(&self) -> bool {
        self.queue.is_shutting_down()
    }

    /// The work in progress right now; see
    /// [`WorkQueue::unfinished_work`](super::WorkQueue::unfinished_work).
    pub fn unfinished_work(&self) -> UnfinishedWork {
        self.queue.unfinished_work()
    }

    /// Sends the current unfinished work to the metrics; see
    /// [`WorkQueue::report_unfinished_work`](super::WorkQueue::report_unfinished_work).
    pub fn report_unfinished_work(&self) {
        self.queue.report_unfinished_work();
    }
}

#[cfg(test)]
mod tests {
    use tokio::time::Instant;

    use super::*;
    use crate::workqueue::{
        InMemoryMetrics, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter,
    };

    const MS: Duration = Duration::from_millis(1);

    #[tokio::test(start_paused = true)]
    async fn add_rate_limited_waits_the_limiters_delay() {
        let queue = RateLimitingQueue::new();
        let start = Instant::now();
        queue.add_rate_limited("a");
        assert_eq!(queue.len(), 0);
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(start.elapsed(), 5 * MS);
        queue.done(&"a");

        let start = Instant::now();
        queue.add_rate_limited("a");
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(
            start.elapsed(),
            10 * MS,
            "the second failure doubles the delay"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn num_requeues_counts_rate_limited_adds() {
        let queue = RateLimitingQueue::new();
        assert_eq!(queue.num_requeues(&"a"), 0);
        queue.add_rate_limited("a");
        queue.add_rate_limited("a");
        queue.add("a");
        queue.add_after("a", MS);
        assert_eq!(queue.num_requeues(&"a"), 2);
        assert_eq!(queue.num_requeues(&"b"), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn forget_resets_the_backoff() {
        let queue = RateLimitingQueue::with_rate_limiter(ItemExponentialFailureRateLimiter::new(
            Duration::from_secs(1),
            Duration::from_secs(60),
        ));
        queue.add_rate_limited("a");
        queue.add_rate_limited("a");
        assert_eq!(queue.num_requeues(&"a"), 2);
        queue.forget(&"a");
        assert_eq!(queue.num_requeues(&"a"), 0);
        assert_eq!(queue.get().await, Some("a"));
        queue.done(&"a");

        let start = Instant::now();
        queue.add_rate_limited("a");
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(
            start.elapsed(),
            Duration::from_secs(1),
            "back to the base delay"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn forget_keeps_the_item_queued() {
        let queue = RateLimitingQueue::new();
        queue.add("a");
        queue.forget(&"a");
        assert_eq!(queue.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limited_retries_count_in_metrics() {
        let metrics = InMemoryMetrics::new();
        let queue = RateLimitingQueue::with_config(
            QueueConfig::default().metrics(metrics.clone()),
            ItemFastSlowRateLimiter::new(MS, Duration::from_secs(1), 1),
        );
        queue.add_rate_limited(1);
        queue.add_rate_limited(2);
        assert_eq!(metrics.snapshot().retries, 2);
    }

    #[tokio::test(start_paused = true)]
    async fn add_rate_limited_after_shutdown_is_ignored() {
        let queue = RateLimitingQueue::new();
        queue.shutdown();
        queue.add_rate_limited("a");
        assert_eq!(queue.num_requeues(&"a"), 0);
        assert_eq!(queue.waiting_len(), 0);
        assert_eq!(queue.get().await, None);
    }
}
