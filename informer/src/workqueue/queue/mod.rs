//! [`WorkQueue`], explained in the [module docs](super#the-queue).

mod config;
mod ready;

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use educe::Educe;
use tokio::sync::Notify;
use tokio::time::{Instant, sleep_until};

use super::delay::{DelayHeap, deadline_after};
use super::metrics::{QueueMetrics, UnfinishedWork};
use super::priority::Priority;
use super::rate_limiter::{RateLimiter, default_controller_rate_limiter};
use ready::Ready;

use crate::lock::MutexExt;

pub use config::QueueConfig;

/// client-go's workqueue: deduplicating, FIFO, never one item in two workers, with
/// delayed adds and rate-limited retries; and controller-runtime's priority queue
/// when items are added with a [`Priority`].
///
/// client-go's `DelayingInterface` and `RateLimitingInterface` are this same type.
/// A cheap handle (an `Arc` inside): clones share the queue and its rate limiter. See
/// the [module documentation](super#the-queue) for the rules.
#[doc(alias = "DelayingQueue", alias = "RateLimitingQueue")]
#[derive(Educe)]
#[educe(Clone)]
pub struct WorkQueue<T> {
    shared: Arc<Shared<T>>,
}

struct Shared<T> {
    name: String,
    metrics: Arc<dyn QueueMetrics>,
    limiter: Box<dyn RateLimiter<T>>,
    state: Mutex<State<T>>,
    /// Wakes waiting `get`s: an item was queued, the earliest deadline moved forward,
    /// or the queue shut down.
    wake_get: Notify,
    /// Nothing is being processed any more, or a drain was called off.
    idle: Notify,
}

struct State<T> {
    /// Items waiting for `get`; each is also in `dirty` and never in `processing`.
    /// May hold stale entries of items that moved up (see [`Dirty::queued`]).
    ready: Ready<T>,
    /// How many items are in `ready` (its live entries).
    queued: usize,
    /// Items that need processing.
    dirty: HashMap<T, Dirty>,
    /// Items handed out by `get`, with the time they were handed out.
    processing: HashMap<T, Instant>,
    /// Items from `add_after`, until their deadline. Emptied on shutdown, so nothing
    /// from it reaches a queue that refuses adds.
    delayed: DelayHeap<T>,
    shutting_down: bool,
    draining: bool,
}

/// What the queue knows of an item that needs processing.
struct Dirty {
    /// When it was added, for the latency metric.
    added: Instant,
    /// The highest priority it was added with since it was last handed out.
    priority: Priority,
    /// The sequence number of its live entry in `ready`; `None` while it waits for a
    /// worker's `done`.
    queued: Option<u64>,
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

impl<T: Hash + Eq + Clone> State<T> {
    /// Marks `item` dirty and queues it at `priority` unless it is being processed;
    /// returns whether it was queued (and a `get` should be woken). An item already
    /// dirty is not added again, but moves up if `priority` is higher than its own.
    fn add(&mut self, item: T, priority: Priority, metrics: &dyn QueueMetrics) -> bool {
        if self.shutting_down {
            return false;
        }
        if let Some(dirty) = self.dirty.get_mut(&item) {
            if priority > dirty.priority {
                dirty.priority = priority;
                if dirty.queued.is_some() {
                    // Its old entry goes stale: `ready` skips it.
                    dirty.queued = Some(self.ready.push(priority, item));
                }
            }
            return false;
        }
        metrics.on_add();
        let processing = self.processing.contains_key(&item);
        let queued = (!processing).then(|| self.ready.push(priority, item.clone()));
        self.dirty.insert(
            item,
            Dirty {
                added: Instant::now(),
                priority,
                queued,
            },
        );
        metrics.set_depth(self.dirty.len());
        if processing {
            return false;
        }
        self.queued += 1;
        true
    }

    /// Takes the next queued item out of `ready` and `dirty`: its entry and priority.
    fn pop(&mut self) -> Option<(T, Dirty)> {
        let dirty = &self.dirty;
        let (item, _) = self.ready.pop(|item, seq| {
            dirty
                .get(item)
                .is_some_and(|dirty| dirty.queued == Some(seq))
        })?;
        self.queued -= 1;
        let entry = self.dirty.remove(&item)?;
        Some((item, entry))
    }

    /// Adds the delayed items whose deadline has passed; returns how many were queued.
    fn promote_due(&mut self, metrics: &dyn QueueMetrics) -> usize {
        if self.delayed.is_empty() {
            return 0;
        }
        let now = Instant::now();
        let mut queued = 0;
        while let Some((item, priority)) = self.delayed.pop_due(now) {
            queued += usize::from(self.add(item, priority, metrics));
        }
        queued
    }
}

impl<T> fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("WorkQueue")
            .field("name", &self.shared.name)
            .field("queued", &state.queued)
            .field("waiting", &state.delayed.len())
            .field("processing", &state.processing.len())
            .field("shutting_down", &state.shutting_down)
            .finish_non_exhaustive()
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
        self.shared.state.locked()
    }

    /// Wakes one waiting `get` per item queued.
    fn wake_gets(&self, queued: usize) {
        for _ in 0..queued {
            self.shared.wake_get.notify_one();
        }
    }
}

impl<T> WorkQueue<T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    /// An empty queue with client-go's default controller rate limiter and the
    /// default [`QueueConfig`].
    pub fn new() -> Self {
        Self::with_rate_limiter(default_controller_rate_limiter())
    }

    /// An empty queue whose retries are paced by `limiter`.
    pub fn with_rate_limiter(limiter: impl RateLimiter<T> + 'static) -> Self {
        Self::with_config(QueueConfig::default(), limiter)
    }

    /// An empty queue with a name and metrics, whose retries are paced by `limiter`
    /// (pass [`default_controller_rate_limiter()`] for client-go's default).
    pub fn with_config(config: QueueConfig, limiter: impl RateLimiter<T> + 'static) -> Self {
        Self {
            shared: Arc::new(Shared {
                name: config.name,
                metrics: config.metrics,
                limiter: Box::new(limiter),
                state: Mutex::new(State {
                    ready: Ready::new(),
                    queued: 0,
                    dirty: HashMap::new(),
                    processing: HashMap::new(),
                    delayed: DelayHeap::new(),
                    shutting_down: false,
                    draining: false,
                }),
                wake_get: Notify::new(),
                idle: Notify::new(),
            }),
        }
    }

    /// The queue's name from its [`QueueConfig`].
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Marks `item` as needing processing, at [`Priority::NORMAL`].
    ///
    /// Does nothing if the item is already queued or the queue is shutting down. If a
    /// worker is processing the item, it is queued again when that worker calls
    /// [`done`](Self::done).
    pub fn add(&self, item: T) {
        self.add_with_priority(item, Priority::NORMAL);
    }

    /// Marks `item` as needing processing, handed out after the items of higher
    /// priorities (see the [module docs](super#priorities)).
    ///
    /// An item already queued is not queued twice; it moves up if `priority` is higher
    /// than the one it has, and keeps its own otherwise.
    pub fn add_with_priority(&self, item: T, priority: Priority) {
        let queued = self.lock().add(item, priority, &*self.shared.metrics);
        self.wake_gets(usize::from(queued));
    }

    /// Adds `item` once `delay` has passed, as [`add`](Self::add) would then; if it
    /// already waits, the earliest deadline wins. A zero delay adds at once. Ignored
    /// after shutdown.
    pub fn add_after(&self, item: T, delay: Duration) {
        self.add_after_with_priority(item, delay, Priority::NORMAL);
    }

    /// [`add_after`](Self::add_after) at `priority`: once `delay` has passed, adds as
    /// [`add_with_priority`](Self::add_with_priority) would. An item waiting for two
    /// deadlines keeps the earliest deadline and the highest priority.
    pub fn add_after_with_priority(&self, item: T, delay: Duration, priority: Priority) {
        let metrics = &*self.shared.metrics;
        let mut state = self.lock();
        if state.shutting_down {
            return;
        }
        metrics.on_retry();
        if delay.is_zero() {
            let queued = state.add(item, priority, metrics);
            drop(state);
            self.wake_gets(usize::from(queued));
            return;
        }
        let deadline = deadline_after(Instant::now(), delay);
        let earlier = state.delayed.insert(item, deadline, priority);
        drop(state);
        if earlier {
            // Every `get` sleeping until a later deadline must look again.
            self.shared.wake_get.notify_waiters();
        }
    }

    /// Adds `item` after the delay the rate limiter chooses for it, and records one
    /// more failure. Ignored after shutdown (the failure is not recorded then).
    pub fn add_rate_limited(&self, item: T) {
        self.add_rate_limited_with_priority(item, Priority::NORMAL);
    }

    /// [`add_rate_limited`](Self::add_rate_limited) at `priority` (a retry keeps the
    /// priority its item was handed out with, as [`Runner`](super::Runner) does).
    pub fn add_rate_limited_with_priority(&self, item: T, priority: Priority) {
        if self.is_shutting_down() {
            return;
        }
        // Asked outside the queue's lock: a limiter is user code.
        let delay = self.shared.limiter.when(&item);
        self.add_after_with_priority(item, delay, priority);
    }

    /// Clears `item`'s failure history in the rate limiter. The item stays queued if
    /// it is.
    pub fn forget(&self, item: &T) {
        self.shared.limiter.forget(item);
    }

    /// How many failures of `item` the rate limiter has on record.
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.shared.limiter.num_requeues(item)
    }

    /// Waits for an item and hands it out; `None` once the queue is shut down and
    /// empty.
    ///
    /// The item counts as being processed until [`done`](Self::done) is called with
    /// it. Cancel-safe: dropping the future before it completes takes nothing out of
    /// the queue.
    pub async fn get(&self) -> Option<T> {
        self.get_with_priority().await.map(|(item, _)| item)
    }

    /// [`get`](Self::get), with the priority the item was queued at (the highest it
    /// was added with since it was last handed out), for a retry or requeue to keep.
    /// Cancel-safe, as `get`.
    pub async fn get_with_priority(&self) -> Option<(T, Priority)> {
        loop {
            // Register for a wake-up before looking, so an add that lands between the
            // look and the wait is not missed.
            let mut woken = pin!(self.shared.wake_get.notified());
            woken.as_mut().enable();
            match self.try_get() {
                Lookup::Item(item) => return Some(item),
                Lookup::ShutDown => return None,
                Lookup::Empty {
                    next_deadline: None,
                } => woken.await,
                Lookup::Empty {
                    next_deadline: Some(deadline),
                } => {
                    tokio::select! {
                        biased;
                        () = woken => {}
                        () = sleep_until(deadline) => {}
                    }
                }
            }
        }
    }

    fn try_get(&self) -> Lookup<T> {
        let metrics = &*self.shared.metrics;
        let mut state = self.lock();
        // Whatever is promoted here is handed on by the baton below.
        state.promote_due(metrics);
        let Some((item, dirty)) = state.pop() else {
            return if state.shutting_down {
                Lookup::ShutDown
            } else {
                Lookup::Empty {
                    next_deadline: state.delayed.next_deadline(),
                }
            };
        };
        let now = Instant::now();
        metrics.observe_latency(now.saturating_duration_since(dirty.added));
        metrics.set_depth(state.dirty.len());
        state.processing.insert(item.clone(), now);
        metrics.set_unfinished_work(state.unfinished_work(now));
        let more = state.queued > 0;
        drop(state);
        if more {
            // Pass the baton: a wake-up may have been spent on an item another `get`
            // took without waiting.
            self.shared.wake_get.notify_one();
        }
        Lookup::Item((item, dirty.priority))
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
        let State {
            ready,
            dirty,
            queued,
            ..
        } = &mut *state;
        let requeued = match dirty.get_mut(&item) {
            Some(dirty) => {
                dirty.queued = Some(ready.push(dirty.priority, item));
                *queued += 1;
                true
            }
            None => false,
        };
        let idle = state.processing.is_empty();
        drop(state);
        if requeued {
            self.shared.wake_get.notify_one();
        }
        if idle {
            self.shared.idle.notify_waiters();
        }
    }

    /// Number of items ready for `get` (due delayed items are moved in first), as
    /// client-go's `Len`.
    ///
    /// Not counted: items being processed, dirty items waiting for their `done`, and
    /// items still waiting for their delay (see [`waiting_len`](Self::waiting_len)).
    pub fn len(&self) -> usize {
        let mut state = self.lock();
        let promoted = state.promote_due(&*self.shared.metrics);
        let len = state.queued;
        drop(state);
        self.wake_gets(promoted);
        len
    }

    /// Whether no item is ready for `get`.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of items waiting for their delay to pass (including rate-limited
    /// retries).
    pub fn waiting_len(&self) -> usize {
        let mut state = self.lock();
        let promoted = state.promote_due(&*self.shared.metrics);
        let waiting = state.delayed.len();
        drop(state);
        self.wake_gets(promoted);
        waiting
    }

    /// Stops the queue: adds are ignored from now on, items waiting for their delay are
    /// dropped, and `get` returns `None` once the items already queued have been handed
    /// out.
    ///
    /// Does not wait for anything. Also calls off a
    /// [`shutdown_with_drain`](Self::shutdown_with_drain) in progress, which then
    /// returns at once (as in client-go).
    pub fn shutdown(&self) {
        self.stop(false);
    }

    /// Refuses adds from now on, drops the delayed items and wakes every waiting
    /// `get`; with `drain`, also starts a drain (which a plain shutdown calls off).
    fn stop(&self, drain: bool) {
        let mut state = self.lock();
        state.shutting_down = true;
        state.draining = drain;
        state.delayed.clear();
        drop(state);
        self.shared.wake_get.notify_waiters();
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
    Item((T, Priority)),
    /// Nothing ready; a delayed item becomes due at `next_deadline`, if any waits.
    Empty {
        next_deadline: Option<Instant>,
    },
    ShutDown,
}

#[cfg(test)]
mod tests;
