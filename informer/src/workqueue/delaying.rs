//! The delaying queue: add an item once a delay has passed.
//!
//! client-go's `DelayingInterface` adds `AddAfter(item, duration)` to the basic queue:
//! the item waits outside the queue until its deadline, then is added as by
//! [`add`](DelayingQueue::add) (so it is deduplicated against what is queued then).
//! If an item is already waiting, the earliest deadline wins: a shorter delay moves it
//! forward, a longer one is ignored. A delay of zero adds at once. After shutdown,
//! `add_after` is ignored and items still waiting are dropped. Every `add_after`
//! counts as a retry in the [metrics](super::metrics), as in client-go.
//!
//! client-go runs a goroutine that moves due items into the queue. This queue needs
//! no background task (so it can be built outside a runtime and leaves nothing
//! running): whoever waits in [`get`](DelayingQueue::get) sleeps until the earliest
//! deadline and moves due items across, and [`len`](DelayingQueue::len) does the same
//! before counting. Deadlines use [`tokio::time`], so tests can pause and advance
//! time.
//!
//! ```
//! use std::time::Duration;
//! use informer::workqueue::DelayingQueue;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true)
//! #     .build().unwrap().block_on(async {
//! let queue = DelayingQueue::new();
//! queue.add_after("default/web", Duration::from_secs(30));
//! queue.add_after("default/web", Duration::from_secs(5)); // earliest deadline wins
//! assert_eq!(queue.len(), 0);
//!
//! let start = tokio::time::Instant::now();
//! assert_eq!(queue.get().await, Some("default/web"));
//! assert_eq!(start.elapsed(), Duration::from_secs(5));
//! # });
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::Hash;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::{Instant, sleep_until};

use super::metrics::UnfinishedWork;
use super::queue::{QueueConfig, WorkQueue};

/// Delays longer than this are cut to it, so deadlines never overflow the clock.
/// Roughly 30 years, the same horizon tokio uses for "never".
const MAX_DELAY: Duration = Duration::from_secs(86_400 * 365 * 30);

/// A [`WorkQueue`] that can also add an item after a delay.
///
/// A cheap handle (an `Arc` inside): clones share the queue. See the
/// [module documentation](self).
pub struct DelayingQueue<T> {
    queue: WorkQueue<T>,
    delayed: Arc<Delayed<T>>,
}

struct Delayed<T> {
    waiting: Mutex<Waiting<T>>,
    /// The earliest deadline moved forward, or the queue shut down.
    changed: Notify,
}

/// Items waiting for their deadline: ordered by deadline, at most one entry per item.
struct Waiting<T> {
    /// `(deadline, sequence)` keeps items with equal deadlines in insertion order.
    by_deadline: BTreeMap<(Instant, u64), T>,
    slot: HashMap<T, (Instant, u64)>,
    next_seq: u64,
    /// Set on shutdown: checked under the lock, so an `add_after` racing the shutdown
    /// cannot leave an item behind.
    closed: bool,
}

impl<T: Hash + Eq + Clone> Waiting<T> {
    fn new() -> Self {
        Self {
            by_deadline: BTreeMap::new(),
            slot: HashMap::new(),
            next_seq: 0,
            closed: false,
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        self.by_deadline
            .keys()
            .next()
            .map(|(deadline, _)| *deadline)
    }

    /// Schedules `item` for `deadline` unless it already waits for an earlier one;
    /// returns whether the earliest deadline of all moved forward.
    fn insert(&mut self, item: T, deadline: Instant) -> bool {
        if self.closed {
            return false;
        }
        if let Some(&(current, seq)) = self.slot.get(&item) {
            if current <= deadline {
                return false;
            }
            self.by_deadline.remove(&(current, seq));
        }
        let earlier = self.next_deadline().is_none_or(|next| deadline < next);
        let key = (deadline, self.next_seq);
        self.next_seq += 1;
        self.slot.insert(item.clone(), key);
        self.by_deadline.insert(key, item);
        earlier
    }

    /// Removes and returns the items whose deadline is at or before `now`, earliest
    /// first.
    fn take_due(&mut self, now: Instant) -> Vec<T> {
        let mut due = Vec::new();
        while let Some(entry) = self.by_deadline.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let item = entry.remove();
            self.slot.remove(&item);
            due.push(item);
        }
        due
    }

    /// Drops every waiting item and refuses new ones.
    fn close(&mut self) {
        self.closed = true;
        self.by_deadline.clear();
        self.slot.clear();
    }
}

impl<T> Clone for DelayingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            delayed: Arc::clone(&self.delayed),
        }
    }
}

impl<T> fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let waiting = self.waiting_lock().by_deadline.len();
        f.debug_struct("DelayingQueue")
            .field("queue", &self.queue)
            .field("waiting", &waiting)
            .finish()
    }
}

impl<T> Default for DelayingQueue<T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T> DelayingQueue<T> {
    fn waiting_lock(&self) -> MutexGuard<'_, Waiting<T>> {
        self.delayed
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T> DelayingQueue<T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    /// An empty queue with the default [`QueueConfig`].
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// An empty queue with a name and metrics.
    pub fn with_config(config: QueueConfig) -> Self {
        Self {
            queue: WorkQueue::with_config(config),
            delayed: Arc::new(Delayed {
                waiting: Mutex::new(Waiting::new()),
                changed: Notify::new(),
            }),
        }
    }

    /// The queue's name from its [`QueueConfig`].
    pub fn name(&self) -> &str {
        self.queue.name()
    }

    /// Marks `item` as needing processing now; see [`WorkQueue::add`].
    pub fn add(&self, item: T) {
        self.queue.add(item);
    }

    /// Adds `item` once `delay` has passed; if it already waits, the earliest deadline
    /// wins. A zero delay adds at once. Ignored after shutdown.
    pub fn add_after(&self, item: T, delay: Duration) {
        if self.queue.is_shutting_down() {
            return;
        }
        self.queue.metrics().on_retry();
        if delay.is_zero() {
            self.queue.add(item);
            return;
        }
        let deadline = Instant::now() + delay.min(MAX_DELAY);
        if self.waiting_lock().insert(item, deadline) {
            self.delayed.changed.notify_waiters();
        }
    }

    /// Moves due items into the queue; returns the next deadline still waiting.
    fn promote_due(&self) -> Option<Instant> {
        let (due, next) = {
            let mut waiting = self.waiting_lock();
            (waiting.take_due(Instant::now()), waiting.next_deadline())
        };
        for item in due {
            self.queue.add(item);
        }
        next
    }

    /// Waits for an item and hands it out; `None` once the queue is shut down and
    /// empty. See [`WorkQueue::get`]; also cancel-safe.
    pub async fn get(&self) -> Option<T> {
        loop {
            let mut changed = pin!(self.delayed.changed.notified());
            changed.as_mut().enable();
            let next = self.promote_due();
            let timer = async {
                match next {
                    Some(deadline) => sleep_until(deadline).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                item = self.queue.get() => return item,
                () = timer => {}
                () = changed => {}
            }
        }
    }

    /// Marks `item` as processed; see [`WorkQueue::done`].
    pub fn done(&self, item: &T) {
        self.queue.done(item);
    }

    /// Number of items ready for `get` (due items are moved in first); items still
    /// waiting for their delay are not counted, see
    /// [`waiting_len`](Self::waiting_len).
    pub fn len(&self) -> usize {
        self.promote_due();
        self.queue.len()
    }

    /// Whether no item is ready for `get`.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of items waiting for their delay to pass.
    pub fn waiting_len(&self) -> usize {
        self.promote_due();
        self.waiting_lock().by_deadline.len()
    }

    /// Stops the queue and drops the items waiting for their delay; see
    /// [`WorkQueue::shutdown`].
    pub fn shutdown(&self) {
        self.queue.shutdown();
        self.close_waiting();
    }

    /// Stops the queue, drops waiting items and waits until no item is being
    /// processed; see [`WorkQueue::shutdown_with_drain`].
    pub async fn shutdown_with_drain(&self) {
        self.queue.stop(true);
        self.close_waiting();
        self.queue.wait_drained().await;
    }

    fn close_waiting(&self) {
        self.waiting_lock().close();
        self.delayed.changed.notify_waiters();
    }

    /// Whether the queue has been shut down.
    pub fn is_shutting_down(&self) -> bool {
        self.queue.is_shutting_down()
    }

    /// The work in progress right now; see [`WorkQueue::unfinished_work`].
    pub fn unfinished_work(&self) -> UnfinishedWork {
        self.queue.unfinished_work()
    }

    /// Sends the current unfinished work to the metrics; see
    /// [`WorkQueue::report_unfinished_work`].
    pub fn report_unfinished_work(&self) {
        self.queue.report_unfinished_work();
    }
}

#[cfg(test)]
mod tests {
    use tokio::time::{advance, timeout};

    use super::*;
    use crate::workqueue::{InMemoryMetrics, QueueConfig};

    const SECOND: Duration = Duration::from_secs(1);

    #[tokio::test(start_paused = true)]
    async fn add_after_makes_the_item_ready_only_after_the_delay() {
        let queue = DelayingQueue::new();
        queue.add_after("a", 10 * SECOND);
        assert_eq!(queue.len(), 0);
        assert_eq!(queue.waiting_len(), 1);
        advance(10 * SECOND - Duration::from_millis(1)).await;
        assert_eq!(queue.len(), 0);
        advance(Duration::from_millis(1)).await;
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.waiting_len(), 0);
        assert_eq!(queue.get().await, Some("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn get_sleeps_until_the_deadline() {
        let queue = DelayingQueue::new();
        let start = Instant::now();
        queue.add_after(1, 3 * SECOND);
        assert_eq!(queue.get().await, Some(1));
        assert_eq!(start.elapsed(), 3 * SECOND);
    }

    #[tokio::test]
    async fn add_after_zero_adds_at_once() {
        let queue = DelayingQueue::new();
        queue.add_after("now", Duration::ZERO);
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.waiting_len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_earliest_deadline_wins() {
        let queue = DelayingQueue::new();
        let start = Instant::now();
        queue.add_after("a", 10 * SECOND);
        queue.add_after("a", 2 * SECOND); // moves it forward
        queue.add_after("a", 5 * SECOND); // later: ignored
        assert_eq!(queue.waiting_len(), 1, "one entry per item");
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(start.elapsed(), 2 * SECOND);
        queue.done(&"a");
        advance(20 * SECOND).await;
        assert_eq!(queue.len(), 0, "the later deadlines left nothing behind");
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_items_come_out_in_deadline_order() {
        let queue = DelayingQueue::new();
        queue.add_after("c", 3 * SECOND);
        queue.add_after("a", SECOND);
        queue.add_after("b", 2 * SECOND);
        queue.add_after("a2", SECOND);
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(queue.get().await, Some("a2"));
        assert_eq!(queue.get().await, Some("b"));
        assert_eq!(queue.get().await, Some("c"));
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_deadline_wakes_a_waiting_get() {
        let queue = DelayingQueue::new();
        queue.add_after("late", 60 * SECOND);
        let start = Instant::now();
        let getter = tokio::spawn({
            let queue = queue.clone();
            async move { queue.get().await }
        });
        tokio::task::yield_now().await;
        queue.add_after("early", SECOND);
        assert_eq!(getter.await.unwrap(), Some("early"));
        assert_eq!(start.elapsed(), SECOND);
    }

    #[tokio::test(start_paused = true)]
    async fn a_plain_add_wakes_a_get_waiting_for_a_deadline() {
        let queue = DelayingQueue::new();
        queue.add_after("late", 60 * SECOND);
        let start = Instant::now();
        let getter = tokio::spawn({
            let queue = queue.clone();
            async move { queue.get().await }
        });
        tokio::task::yield_now().await;
        queue.add("now");
        assert_eq!(getter.await.unwrap(), Some("now"));
        assert_eq!(start.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_delayed_item_being_processed_is_marked_dirty_not_duplicated() {
        let queue = DelayingQueue::new();
        queue.add("a");
        let a = queue.get().await.unwrap();
        queue.add_after("a", SECOND);
        advance(2 * SECOND).await;
        assert_eq!(queue.len(), 0);
        queue.done(&a);
        assert_eq!(queue.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_drops_waiting_items_and_ignores_add_after() {
        let queue = DelayingQueue::new();
        queue.add_after("waiting", SECOND);
        queue.shutdown();
        queue.add_after("late", SECOND);
        assert_eq!(queue.waiting_len(), 0);
        advance(10 * SECOND).await;
        assert_eq!(queue.get().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_wakes_a_get_waiting_for_a_deadline() {
        let queue: DelayingQueue<u8> = DelayingQueue::new();
        queue.add_after(1, 60 * SECOND);
        let getter = tokio::spawn({
            let queue = queue.clone();
            async move { queue.get().await }
        });
        tokio::task::yield_now().await;
        let start = Instant::now();
        queue.shutdown();
        assert_eq!(getter.await.unwrap(), None);
        assert_eq!(start.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn get_waiting_for_a_deadline_is_cancel_safe() {
        let queue = DelayingQueue::new();
        queue.add_after("a", 10 * SECOND);
        assert!(timeout(SECOND, queue.get()).await.is_err());
        assert_eq!(queue.waiting_len(), 1);
        assert_eq!(queue.get().await, Some("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn every_add_after_counts_as_a_retry() {
        let metrics = InMemoryMetrics::new();
        let queue = DelayingQueue::with_config(QueueConfig::default().metrics(metrics.clone()));
        queue.add_after("a", SECOND);
        queue.add_after("a", Duration::ZERO);
        queue.add("b");
        assert_eq!(metrics.snapshot().retries, 2);
    }

    #[tokio::test(start_paused = true)]
    async fn huge_delays_do_not_overflow() {
        let queue = DelayingQueue::new();
        queue.add_after("never", Duration::MAX);
        advance(86_400 * SECOND).await;
        assert_eq!(queue.len(), 0);
        assert_eq!(queue.waiting_len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn many_getters_each_receive_one_due_item() {
        let queue = DelayingQueue::new();
        let getters: Vec<_> = (0..5)
            .map(|_| {
                let queue = queue.clone();
                tokio::spawn(async move { queue.get().await })
            })
            .collect();
        tokio::task::yield_now().await;
        for item in 0..5 {
            queue.add_after(item, SECOND);
        }
        let mut got = Vec::new();
        for getter in getters {
            got.push(getter.await.unwrap().unwrap());
        }
        got.sort_unstable();
        assert_eq!(got, vec![0, 1, 2, 3, 4]);
    }
}
