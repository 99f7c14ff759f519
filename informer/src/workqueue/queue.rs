//! The basic work queue: FIFO order, deduplication, one worker per item at a time.
//!
//! This is client-go's `workqueue.Typed[T]` (the plain `Interface`), with the same
//! three sets of state:
//!
//! - *queued*: items waiting for `get`, in the order they were first added;
//! - *dirty*: items that need processing: everything queued, plus items that were
//!   added again while a worker was processing them;
//! - *processing*: items handed out by `get` whose `done` has not come yet.
//!
//! The rules that follow from them, which a controller relies on:
//!
//! - Adding an item that is already queued does nothing: ten updates to one object
//!   before a worker gets to it cost one reconcile.
//! - Adding an item that is being processed does not queue it; it marks it dirty, and
//!   [`done`](WorkQueue::done) queues it again. So an item is never handed to two
//!   workers at once, and a change that arrives during a reconcile is never missed.
//! - After [`shutdown`](WorkQueue::shutdown), adds are ignored; `get` still hands out
//!   what is queued and returns `None` once the queue is empty (client-go's `Get`
//!   returning `shutdown == true`).
//! - [`shutdown_with_drain`](WorkQueue::shutdown_with_drain) also waits until every
//!   item handed out has been marked `done`.
//!
//! Every worker must call [`done`](WorkQueue::done) for every item it got, whatever
//! the outcome; the [`Runner`](super::Runner) does that for you.
//!
//! [`WorkQueue`] is a handle: clones share one queue, so informer handlers and workers
//! each keep their own. [`get`](WorkQueue::get) is cancel-safe: a `get` dropped before
//! it completes takes nothing out of the queue.
//!
//! ```
//! use informer::workqueue::WorkQueue;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let queue = WorkQueue::new();
//! queue.add("default/web");
//! queue.add("default/web"); // already queued: not duplicated
//! assert_eq!(queue.len(), 1);
//!
//! let item = queue.get().await.unwrap();
//! queue.add("default/web"); // being processed: marked dirty, not queued
//! assert_eq!(queue.len(), 0);
//! queue.done(&item); // dirty: queued again
//! assert_eq!(queue.len(), 1);
//!
//! queue.shutdown();
//! assert_eq!(queue.get().await, Some("default/web")); // still handed out
//! queue.done(&"default/web");
//! assert_eq!(queue.get().await, None);
//! # });
//! ```

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;
use tokio::time::Instant;

use super::metrics::{NoopMetrics, QueueMetrics, UnfinishedWork};

/// Settings shared by every kind of queue: a name and where metrics go.
///
/// Built like kube-runtime's `watcher::Config`: start from `default()` and chain the
/// builder methods.
#[derive(Clone)]
pub struct QueueConfig {
    /// The queue's name, used in logs and `Debug` output (client-go's
    /// `QueueConfig.Name`, the metrics label). Empty by default.
    pub name: String,
    /// Where the queue's metrics go. [`NoopMetrics`] by default.
    pub metrics: Arc<dyn QueueMetrics>,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            name: String::new(),
            metrics: Arc::new(NoopMetrics),
        }
    }
}

impl QueueConfig {
    /// Sets the queue's name.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sends the queue's metrics to `metrics`.
    #[must_use]
    pub fn metrics(mut self, metrics: impl QueueMetrics) -> Self {
        self.metrics = Arc::new(metrics);
        self
    }
}

impl fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// client-go's basic workqueue: deduplicating, FIFO, never one item in two workers.
///
/// A cheap handle (an `Arc` inside): clones share the queue. See the
/// [module documentation](self) for the rules.
pub struct WorkQueue<T> {
    shared: Arc<Shared<T>>,
}

struct Shared<T> {
    name: String,
    metrics: Arc<dyn QueueMetrics>,
    state: Mutex<State<T>>,
    /// An item was queued, or the queue shut down.
    item_ready: Notify,
    /// Nothing is being processed any more, or a drain was called off.
    idle: Notify,
}

struct State<T> {
    /// Items waiting for `get`; each is also in `dirty` and never in `processing`.
    queue: VecDeque<T>,
    /// Items that need processing, with the time they were added (for latency).
    dirty: HashMap<T, Instant>,
    /// Items handed out by `get`, with the time they were handed out.
    processing: HashMap<T, Instant>,
    shutting_down: bool,
    draining: bool,
}

impl<T> State<T> {
    fn unfinished_work(&self, now: Instant) -> UnfinishedWork {
        let mut work = UnfinishedWork {
            in_flight: self.processing.len(),
            ..UnfinishedWork::default()
        };
        for started in self.processing.values() {
            let running = now.saturating_duration_since(*started);
            work.total = work.total.saturating_add(running);
            work.longest = work.longest.max(running);
        }
        work
    }
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("WorkQueue")
            .field("name", &self.shared.name)
            .field("queued", &state.queue.len())
            .field("processing", &state.processing.len())
            .field("shutting_down", &state.shutting_down)
            .finish()
    }
}

impl<T> Default for WorkQueue<T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    fn default() -> Self {
        Self::new()
    }
}

impl<T> WorkQueue<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panicking metrics hook must not wedge every worker: the state itself is
        // updated in steps that leave it consistent, so a poisoned lock is still usable.
        self.shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T> WorkQueue<T>
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
            shared: Arc::new(Shared {
                name: config.name,
                metrics: config.metrics,
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    dirty: HashMap::new(),
                    processing: HashMap::new(),
                    shutting_down: false,
                    draining: false,
                }),
                item_ready: Notify::new(),
                idle: Notify::new(),
            }),
        }
    }

    /// The queue's name from its [`QueueConfig`].
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    pub(crate) fn metrics(&self) -> &dyn QueueMetrics {
        &*self.shared.metrics
    }

    /// Marks `item` as needing processing.
    ///
    /// Does nothing if the item is already queued or the queue is shutting down. If a
    /// worker is processing the item, it is queued again when that worker calls
    /// [`done`](Self::done).
    pub fn add(&self, item: T) {
        let mut state = self.lock();
        if state.shutting_down || state.dirty.contains_key(&item) {
            return;
        }
        let metrics = &self.shared.metrics;
        metrics.on_add();
        state.dirty.insert(item.clone(), Instant::now());
        metrics.set_depth(state.dirty.len());
        if state.processing.contains_key(&item) {
            return;
        }
        state.queue.push_back(item);
        drop(state);
        self.shared.item_ready.notify_one();
    }

    /// Waits for an item and hands it out; `None` once the queue is shut down and
    /// empty.
    ///
    /// The item counts as being processed until [`done`](Self::done) is called with
    /// it. Cancel-safe: dropping the future before it completes takes nothing out of
    /// the queue.
    pub async fn get(&self) -> Option<T> {
        loop {
            // Register for a wake-up before looking, so an add that lands between the
            // look and the wait is not missed.
            let mut ready = pin!(self.shared.item_ready.notified());
            ready.as_mut().enable();
            match self.try_get() {
                Lookup::Item(item) => return Some(item),
                Lookup::ShutDown => return None,
                Lookup::Empty => ready.await,
            }
        }
    }

    fn try_get(&self) -> Lookup<T> {
        let mut state = self.lock();
        let Some(item) = state.queue.pop_front() else {
            return if state.shutting_down {
                Lookup::ShutDown
            } else {
                Lookup::Empty
            };
        };
        let now = Instant::now();
        let metrics = &self.shared.metrics;
        if let Some(added) = state.dirty.remove(&item) {
            metrics.observe_latency(now.saturating_duration_since(added));
        }
        metrics.set_depth(state.dirty.len());
        state.processing.insert(item.clone(), now);
        metrics.set_unfinished_work(state.unfinished_work(now));
        let more = !state.queue.is_empty();
        drop(state);
        if more {
            // Pass the baton: a wake-up may have been spent on an item another `get`
            // took without waiting.
            self.shared.item_ready.notify_one();
        }
        Lookup::Item(item)
    }

    /// Marks `item` as processed.
    ///
    /// If it was added again while being processed, it is queued again now. Calling
    /// `done` for an item that is not being processed does nothing.
    pub fn done(&self, item: &T) {
        let mut state = self.lock();
        let Some((item, started)) = state.processing.remove_entry(item) else {
            return;
        };
        let now = Instant::now();
        let metrics = &self.shared.metrics;
        metrics.observe_work_duration(now.saturating_duration_since(started));
        metrics.set_unfinished_work(state.unfinished_work(now));
        let requeued = state.dirty.contains_key(&item);
        if requeued {
            state.queue.push_back(item);
        }
        let idle = state.processing.is_empty();
        drop(state);
        if requeued {
            self.shared.item_ready.notify_one();
        }
        if idle {
            self.shared.idle.notify_waiters();
        }
    }

    /// Number of items waiting for `get` (not counting items being processed, nor
    /// dirty items waiting for their `done`), as client-go's `Len`.
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// Whether no item is waiting for `get`.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops the queue: adds are ignored from now on, and `get` returns `None` once
    /// the items already queued have been handed out.
    ///
    /// Does not wait for anything. Also calls off a
    /// [`shutdown_with_drain`](Self::shutdown_with_drain) in progress, which then
    /// returns at once (as in client-go).
    pub fn shutdown(&self) {
        self.stop(false);
    }

    /// Refuses adds from now on and wakes every waiting `get`; with `drain`, also
    /// starts a drain (which a plain shutdown calls off).
    pub(crate) fn stop(&self, drain: bool) {
        let mut state = self.lock();
        state.shutting_down = true;
        state.draining = drain;
        drop(state);
        self.shared.item_ready.notify_waiters();
        if !drain {
            self.shared.idle.notify_waiters();
        }
    }

    /// Stops the queue like [`shutdown`](Self::shutdown), then waits until no item is
    /// being processed, i.e. every item handed out by `get` has been marked `done`.
    ///
    /// Items still queued are handed out by `get` afterwards, as in client-go; a
    /// worker that stops pulling once [`is_shutting_down`](Self::is_shutting_down)
    /// returns true leaves them. Waits forever if a worker never calls `done`.
    pub async fn shutdown_with_drain(&self) {
        self.stop(true);
        self.wait_drained().await;
    }

    /// Waits until nothing is being processed or the drain is called off.
    pub(crate) async fn wait_drained(&self) {
        loop {
            let mut idle = pin!(self.shared.idle.notified());
            idle.as_mut().enable();
            {
                let state = self.lock();
                if !state.draining || state.processing.is_empty() {
                    return;
                }
            }
            idle.await;
        }
    }

    /// Whether [`shutdown`](Self::shutdown) or
    /// [`shutdown_with_drain`](Self::shutdown_with_drain) has been called.
    pub fn is_shutting_down(&self) -> bool {
        self.lock().shutting_down
    }

    /// The work in progress right now: items handed out and not yet `done`.
    pub fn unfinished_work(&self) -> UnfinishedWork {
        self.lock().unfinished_work(Instant::now())
    }

    /// Sends the current [`unfinished_work`](Self::unfinished_work) to the metrics.
    ///
    /// The queue does this on every `get` and `done`; call it from a timer (client-go
    /// uses 500 ms) to keep the gauge moving while workers are stuck.
    pub fn report_unfinished_work(&self) {
        let state = self.lock();
        self.shared
            .metrics
            .set_unfinished_work(state.unfinished_work(Instant::now()));
    }
}

/// What a non-blocking look at the queue found.
enum Lookup<T> {
    Item(T),
    Empty,
    ShutDown,
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
    use std::time::Duration;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use tokio::time::{advance, timeout};

    use super::*;
    use crate::workqueue::InMemoryMetrics;

    /// Whether `get` would hand something out without waiting (paused time makes the
    /// timeout immediate when nothing else can run).
    async fn gets_nothing<T>(queue: &WorkQueue<T>) -> bool
    where
        T: Hash + Eq + Clone + Send + Sync + 'static,
    {
        timeout(Duration::from_secs(1), queue.get()).await.is_err()
    }

    #[tokio::test]
    async fn get_hands_out_items_in_fifo_order() {
        let queue = WorkQueue::new();
        for item in ["a", "b", "c"] {
            queue.add(item);
        }
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(queue.get().await, Some("b"));
        assert_eq!(queue.get().await, Some("c"));
    }

    #[tokio::test]
    async fn add_while_queued_is_not_duplicated() {
        let queue = WorkQueue::new();
        queue.add("a");
        queue.add("b");
        queue.add("a");
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(queue.get().await, Some("b"));
        assert!(queue.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn add_while_processing_marks_dirty_and_done_requeues() {
        let queue = WorkQueue::new();
        queue.add("a");
        let item = queue.get().await.unwrap();
        queue.add("a");
        queue.add("a"); // still one dirty mark
        assert_eq!(queue.len(), 0, "a dirty item is not queued while processed");
        assert!(
            gets_nothing(&queue).await,
            "never handed to a second worker"
        );
        queue.done(&item);
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.get().await, Some("a"));
        queue.done(&"a");
        assert!(gets_nothing(&queue).await, "requeued once, not twice");
    }

    #[tokio::test(start_paused = true)]
    async fn done_without_dirty_mark_does_not_requeue() {
        let queue = WorkQueue::new();
        queue.add(1);
        let item = queue.get().await.unwrap();
        queue.done(&item);
        assert_eq!(queue.len(), 0);
        assert!(gets_nothing(&queue).await);
    }

    #[tokio::test]
    async fn done_for_an_item_not_being_processed_is_a_no_op() {
        let queue = WorkQueue::new();
        queue.add("queued");
        queue.done(&"queued");
        queue.done(&"unknown");
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.unfinished_work().in_flight, 0);
    }

    #[tokio::test]
    async fn get_waits_for_an_add() {
        let queue = WorkQueue::new();
        let getter = tokio::spawn({
            let queue = queue.clone();
            async move { queue.get().await }
        });
        tokio::task::yield_now().await;
        assert!(!getter.is_finished());
        queue.add(7);
        assert_eq!(getter.await.unwrap(), Some(7));
    }

    #[tokio::test]
    async fn get_returns_none_after_shutdown() {
        let queue: WorkQueue<u8> = WorkQueue::new();
        queue.shutdown();
        assert!(queue.is_shutting_down());
        assert_eq!(queue.get().await, None);
    }

    #[tokio::test]
    async fn get_hands_out_queued_items_after_shutdown_then_none() {
        let queue = WorkQueue::new();
        queue.add("a");
        queue.add("b");
        queue.shutdown();
        assert_eq!(queue.get().await, Some("a"));
        assert_eq!(queue.get().await, Some("b"));
        assert_eq!(queue.get().await, None);
    }

    #[tokio::test]
    async fn shutdown_wakes_every_waiting_get() {
        let queue: WorkQueue<u8> = WorkQueue::new();
        let getters: Vec<_> = (0..4)
            .map(|_| {
                let queue = queue.clone();
                tokio::spawn(async move { queue.get().await })
            })
            .collect();
        tokio::task::yield_now().await;
        queue.shutdown();
        for getter in getters {
            assert_eq!(getter.await.unwrap(), None);
        }
    }

    #[tokio::test]
    async fn add_after_shutdown_is_ignored() {
        let queue = WorkQueue::new();
        queue.shutdown();
        queue.add("late");
        assert_eq!(queue.len(), 0);
        assert_eq!(queue.get().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn dirty_item_is_requeued_by_done_after_shutdown() {
        let queue = WorkQueue::new();
        queue.add("a");
        let item = queue.get().await.unwrap();
        queue.add("a");
        queue.shutdown();
        queue.done(&item);
        assert_eq!(queue.get().await, Some("a"));
        queue.done(&"a");
        assert_eq!(queue.get().await, None);
    }

    #[tokio::test]
    async fn len_counts_only_queued_items() {
        let queue = WorkQueue::new();
        assert!(queue.is_empty());
        queue.add(1);
        queue.add(2);
        assert_eq!(queue.len(), 2);
        let one = queue.get().await.unwrap();
        assert_eq!(queue.len(), 1, "an item being processed is not counted");
        queue.add(one);
        assert_eq!(queue.len(), 1, "nor is a dirty item waiting for its done");
    }

    #[tokio::test(start_paused = true)]
    async fn get_is_cancel_safe() {
        let queue = WorkQueue::new();
        // A get that is cancelled while waiting must not swallow the next item.
        assert!(gets_nothing(&queue).await);
        queue.add("a");
        assert_eq!(queue.get().await, Some("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_with_drain_waits_for_in_flight_items() {
        let queue = WorkQueue::new();
        queue.add("a");
        queue.add("b");
        let a = queue.get().await.unwrap();
        let b = queue.get().await.unwrap();

        let mut drain = tokio::spawn({
            let queue = queue.clone();
            async move { queue.shutdown_with_drain().await }
        });
        assert!(timeout(Duration::from_secs(60), &mut drain).await.is_err());
        assert!(
            queue.is_shutting_down(),
            "adds are refused during the drain"
        );
        queue.done(&a);
        assert!(timeout(Duration::from_secs(60), &mut drain).await.is_err());
        queue.done(&b);
        drain.await.unwrap();
        assert_eq!(queue.unfinished_work().in_flight, 0);
    }

    #[tokio::test]
    async fn shutdown_with_drain_returns_at_once_when_idle() {
        let queue = WorkQueue::new();
        queue.add("queued, not processed");
        queue.shutdown_with_drain().await;
        assert!(queue.is_shutting_down());
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_calls_off_a_pending_drain() {
        let queue = WorkQueue::new();
        queue.add("stuck");
        let _stuck = queue.get().await.unwrap();
        let mut drain = tokio::spawn({
            let queue = queue.clone();
            async move { queue.shutdown_with_drain().await }
        });
        assert!(timeout(Duration::from_secs(60), &mut drain).await.is_err());
        queue.shutdown();
        drain.await.unwrap();
        assert_eq!(queue.unfinished_work().in_flight, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn metrics_record_adds_depth_latency_work_and_unfinished_work() {
        let metrics = InMemoryMetrics::new();
        let queue = WorkQueue::with_config(QueueConfig::default().metrics(metrics.clone()));
        queue.add("a");
        queue.add("a");
        queue.add("b");
        assert_eq!(metrics.snapshot().adds, 2);
        assert_eq!(metrics.snapshot().depth, 2);

        advance(Duration::from_secs(3)).await;
        let a = queue.get().await.unwrap();
        let snap = metrics.snapshot();
        assert_eq!(snap.depth, 1);
        assert_eq!(snap.latency.count, 1);
        assert_eq!(snap.latency.max, Duration::from_secs(3));
        assert_eq!(snap.unfinished_work.in_flight, 1);

        queue.add("a"); // dirty while processing: counted in depth, as client-go
        assert_eq!(metrics.snapshot().depth, 2);

        advance(Duration::from_secs(2)).await;
        let _b = queue.get().await.unwrap();
        advance(Duration::from_secs(5)).await;
        queue.report_unfinished_work();
        assert_eq!(
            metrics.snapshot().unfinished_work,
            UnfinishedWork {
                in_flight: 2,
                total: Duration::from_secs(7 + 5),
                longest: Duration::from_secs(7),
            }
        );

        queue.done(&a);
        let snap = metrics.snapshot();
        assert_eq!(snap.work_duration.count, 1);
        assert_eq!(snap.work_duration.max, Duration::from_secs(7));
        assert_eq!(snap.unfinished_work.in_flight, 1);
        assert_eq!(queue.len(), 1, "the dirty `a` is queued again");
        assert_eq!(snap.depth, 1);
    }

    /// Many workers, many producers, random adds: no item is ever processed by two
    /// workers at once, and every add is followed by a processing that saw it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn stress_no_item_processed_concurrently_and_none_lost() {
        const ITEMS: u32 = 64;
        const PRODUCERS: u64 = 4;
        const ADDS_PER_PRODUCER: usize = 3_000;
        const WORKERS: usize = 12;

        struct Model {
            /// How many times each item has been added.
            added: Vec<u64>,
            /// The add count each item's latest processing started from.
            seen: Vec<u64>,
            /// Items a worker is processing right now.
            in_progress: HashSet<u32>,
            overlaps: usize,
            processed: usize,
        }
        let model = Arc::new(Mutex::new(Model {
            added: vec![0; ITEMS as usize],
            seen: vec![0; ITEMS as usize],
            in_progress: HashSet::new(),
            overlaps: 0,
            processed: 0,
        }));
        let queue = WorkQueue::new();

        let workers: Vec<_> = (0..WORKERS)
            .map(|w| {
                let (queue, model) = (queue.clone(), Arc::clone(&model));
                tokio::spawn(async move {
                    let mut rng = StdRng::seed_from_u64(1_000 + w as u64);
                    while let Some(item) = queue.get().await {
                        {
                            let mut m = model.lock().unwrap();
                            if !m.in_progress.insert(item) {
                                m.overlaps += 1;
                            }
                            m.seen[item as usize] = m.added[item as usize];
                            m.processed += 1;
                        }
                        for _ in 0..rng.random_range(0..4) {
                            tokio::task::yield_now().await;
                        }
                        model.lock().unwrap().in_progress.remove(&item);
                        queue.done(&item);
                    }
                })
            })
            .collect();

        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let (queue, model) = (queue.clone(), Arc::clone(&model));
                tokio::spawn(async move {
                    let mut rng = StdRng::seed_from_u64(p);
                    for _ in 0..ADDS_PER_PRODUCER {
                        let item = rng.random_range(0..ITEMS);
                        // Count the add before making it, so a worker that gets the
                        // item sees the count.
                        model.lock().unwrap().added[item as usize] += 1;
                        queue.add(item);
                        if rng.random_ratio(1, 8) {
                            tokio::task::yield_now().await;
                        }
                    }
                })
            })
            .collect();
        for producer in producers {
            producer.await.unwrap();
        }

        // Everything queued is still handed out after the shutdown; the workers stop
        // when the queue is empty.
        queue.shutdown_with_drain().await;
        for worker in workers {
            worker.await.unwrap();
        }

        let m = model.lock().unwrap();
        assert_eq!(
            m.overlaps, 0,
            "an item was processed by two workers at once"
        );
        assert!(m.in_progress.is_empty());
        assert_eq!(
            m.added.iter().sum::<u64>(),
            PRODUCERS * ADDS_PER_PRODUCER as u64
        );
        for item in 0..ITEMS as usize {
            assert_eq!(
                m.seen[item], m.added[item],
                "item {item}: its last add was never processed"
            );
        }
        assert!(m.processed >= ITEMS as usize);
        assert!(queue.is_empty());
        assert_eq!(queue.unfinished_work().in_flight, 0);
    }

    /// While workers are busy and producers keep adding, `shutdown_with_drain` returns
    /// only after every item handed out before it was called has been marked done.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn shutdown_with_drain_under_load_waits_for_every_in_flight_item() {
        const WORKERS: usize = 8;
        // A global order of events: get, done, drain start and drain end take tickets.
        let clock = Arc::new(AtomicU64::new(1));
        // (item, ticket after get returned, ticket before done was called)
        let log = Arc::new(Mutex::new(Vec::<(u32, u64, u64)>::new()));
        let queue = WorkQueue::new();

        let workers: Vec<_> = (0..WORKERS)
            .map(|w| {
                let (queue, clock, log) = (queue.clone(), clock.clone(), log.clone());
                tokio::spawn(async move {
                    let mut rng = StdRng::seed_from_u64(w as u64);
                    let mut first = true;
                    while let Some(item) = queue.get().await {
                        let got = clock.fetch_add(1, SeqCst);
                        for _ in 0..rng.random_range(1..20) {
                            tokio::task::yield_now().await;
                        }
                        if w == 0 && std::mem::take(&mut first) {
                            // Guarantees at least one item in flight across the drain.
                            while !queue.is_shutting_down() {
                                tokio::task::yield_now().await;
                            }
                        }
                        let finished = clock.fetch_add(1, SeqCst);
                        log.lock().unwrap().push((item, got, finished));
                        queue.done(&item);
                    }
                })
            })
            .collect();
        let producer = tokio::spawn({
            let queue = queue.clone();
            async move {
                let mut rng = StdRng::seed_from_u64(99);
                // Keeps adding until (and after) the shutdown, which ignores the rest.
                for _ in 0..20_000 {
                    queue.add(rng.random_range(0..200u32));
                    if rng.random_ratio(1, 4) {
                        tokio::task::yield_now().await;
                    }
                }
            }
        });

        // Let the load build up, then drain in the middle of it.
        while log.lock().unwrap().len() < 500 {
            tokio::task::yield_now().await;
        }
        let drain_started = clock.fetch_add(1, SeqCst);
        queue.shutdown_with_drain().await;
        let drain_ended = clock.fetch_add(1, SeqCst);

        producer.await.unwrap();
        for worker in workers {
            worker.await.unwrap();
        }
        let log = log.lock().unwrap();
        let in_flight_at_drain: Vec<_> = log
            .iter()
            .filter(|(_, got, finished)| *got < drain_started && *finished > drain_started)
            .collect();
        assert!(!in_flight_at_drain.is_empty());
        for (item, _, finished) in &in_flight_at_drain {
            assert!(
                *finished < drain_ended,
                "item {item} was in flight when the drain began but finished after it returned"
            );
        }
        assert!(queue.is_shutting_down());
        assert!(queue.is_empty());
        assert_eq!(queue.unfinished_work().in_flight, 0);
    }
}
