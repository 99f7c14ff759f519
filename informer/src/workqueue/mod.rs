//! The work queue and the controller loop, as client-go's `util/workqueue`.
//!
//! A controller does not act inside informer event handlers. Handlers only add the
//! object's key to a work queue; workers take keys from the queue, read the current
//! state from the informer's cache and reconcile. The queue is what makes that
//! correct and cheap:
//!
//! - [`WorkQueue`] ([below](self#the-queue)): the queue. FIFO, an item already queued is not
//!   queued twice, and an item being processed is never handed to a second worker: an
//!   add during processing marks it dirty and it is queued again on `done`. `get`
//!   returns `None` once the queue is shut down and empty; `shutdown_with_drain` waits
//!   for the items in flight. `add_after(item, delay)` holds an item back (the earliest
//!   deadline wins for an item added twice), and `add_rate_limited`, `forget` and
//!   `num_requeues` pace retries with the queue's [`RateLimiter`]. client-go's
//!   `DelayingInterface` and `RateLimitingInterface` are this one type.
//! - [`RateLimiter`] ([below](self#rate-limiters)): how long a retry waits: per-item
//!   exponential, token bucket, fast-slow, max-of, and client-go's default
//!   ([`default_controller_rate_limiter`]), which [`WorkQueue::new`] uses.
//! - [`QueueMetrics`] ([below](self#metrics)): hooks for client-go's queue metrics (depth, adds,
//!   latency, work duration, retries, unfinished work), with [`InMemoryMetrics`] to
//!   read them.
//! - [`Runner`] ([below](self#the-runner)): the worker loop every controller writes: N workers, a
//!   typed async reconcile, retry with backoff on error or panic, forget on success,
//!   requeue-after, clean shutdown.
//!
//! Items are any `T: Hash + Eq + Clone + Send + Sync + 'static` (the informer enqueues
//! `ObjectKey`s). The queue is a cheap handle with an `Arc` inside: clone it into each
//! handler and worker. It runs no background task, and all timing uses
//! [`tokio::time`], so tests can run with paused time.
//!
//! ```
//! use std::convert::Infallible;
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::time::Duration;
//! use informer::controller::Action;
//! use informer::workqueue::{Runner, RunnerConfig, WorkQueue};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap()
//! #     .block_on(async {
//! let queue: WorkQueue<String> = WorkQueue::new();
//! // An informer handler does this on every add, update and delete:
//! queue.add("default/web".to_string());
//! queue.add("default/db".to_string());
//!
//! let reconciled = Arc::new(AtomicUsize::new(0));
//! let config = RunnerConfig::default().workers(4).drain_queue(true);
//! Runner::with_config(queue.clone(), config)
//!     .run(
//!         {
//!             let reconciled = Arc::clone(&reconciled);
//!             move |key: String| {
//!                 let reconciled = Arc::clone(&reconciled);
//!                 async move {
//!                     // Read the object for `key` from the lister and act on it.
//!                     println!("reconciling {key}");
//!                     reconciled.fetch_add(1, Ordering::SeqCst);
//!                     Ok::<_, Infallible>(Action::RequeueAfter(Duration::from_secs(300)))
//!                 }
//!             }
//!         },
//!         // Stop at once, after working through the queue; a controller would
//!         // wait for Ctrl-C here.
//!         async {},
//!     )
//!     .await;
//! assert_eq!(reconciled.load(Ordering::SeqCst), 2);
//! assert!(queue.is_shutting_down());
//! # });
//! ```
//!
//! # The queue
//!
//! The work queue: FIFO order, deduplication, one worker per item at a time, delayed
//! adds and rate-limited retries.
//!
//! client-go builds this in three layers, each wrapping the one below: the plain
//! `workqueue.Typed[T]` (`Interface`), `DelayingInterface` (adds `AddAfter`) and
//! `RateLimitingInterface` (adds `AddRateLimited`, `Forget`, `NumRequeues`). Here they
//! are one type, [`WorkQueue`], which owns all their state: the three sets below, the
//! items waiting for a deadline, and a [`RateLimiter`].
//!
//! ## Queued, dirty, processing
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
//! the outcome; the [`Runner`] does that for you.
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
//!
//! ## Delayed adds
//!
//! [`add_after(item, delay)`](WorkQueue::add_after) holds the item back until its
//! deadline, then adds it as [`add`](WorkQueue::add) would (so it is deduplicated
//! against what is queued then). If an item already waits, the earliest deadline wins:
//! a shorter delay moves it forward, a longer one is ignored. A delay of zero adds at
//! once. After shutdown, `add_after` is ignored and items still waiting are dropped.
//! Every `add_after` counts as a retry in the [metrics](self#metrics), as in
//! client-go.
//!
//! client-go runs a goroutine that moves due items into the queue. This queue needs
//! no background task (so it can be built outside a runtime and leaves nothing
//! running): whoever waits in [`get`](WorkQueue::get) sleeps until the earliest
//! deadline and moves due items across, and [`len`](WorkQueue::len) does the same
//! before counting. Deadlines use [`tokio::time`], so tests can pause and advance
//! time.
//!
//! ```
//! use std::time::Duration;
//! use informer::workqueue::WorkQueue;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true)
//! #     .build().unwrap().block_on(async {
//! let queue = WorkQueue::new();
//! queue.add_after("default/web", Duration::from_secs(30));
//! queue.add_after("default/web", Duration::from_secs(5)); // earliest deadline wins
//! assert_eq!(queue.len(), 0);
//!
//! let start = tokio::time::Instant::now();
//! assert_eq!(queue.get().await, Some("default/web"));
//! assert_eq!(start.elapsed(), Duration::from_secs(5));
//! # });
//! ```
//!
//! ## Rate-limited retries
//!
//! The queue keeps a [`RateLimiter`] beside its items:
//!
//! - [`add_rate_limited`](WorkQueue::add_rate_limited) asks the limiter how long this
//!   item should wait (recording one more failure) and adds it after that delay;
//! - [`forget`](WorkQueue::forget) clears the item's failure history, so its next
//!   failure starts again from the shortest delay. Call it when processing succeeded;
//!   it does not take the item out of the queue;
//! - [`num_requeues`](WorkQueue::num_requeues) is how many failures are on record, for
//!   a "give up after N retries" policy.
//!
//! The default limiter is client-go's `DefaultControllerRateLimiter`
//! ([`default_controller_rate_limiter`]); [`WorkQueue::with_rate_limiter`] and
//! [`WorkQueue::with_config`] choose another.
//!
//! ```
//! use std::time::Duration;
//! use informer::workqueue::WorkQueue;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true)
//! #     .build().unwrap().block_on(async {
//! let queue = WorkQueue::new();
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
//!
//! ## Priorities
//!
//! Every item is queued at a [`Priority`]; [`get`](WorkQueue::get) hands out the
//! highest first, and within one priority in the order they were queued. A plain
//! [`add`](WorkQueue::add) is [`Priority::NORMAL`], so a queue used only with `add`
//! is exactly client-go's FIFO. [`add_with_priority`](WorkQueue::add_with_priority),
//! [`add_after_with_priority`](WorkQueue::add_after_with_priority) and
//! [`add_rate_limited_with_priority`](WorkQueue::add_rate_limited_with_priority) choose
//! one, and [`get_with_priority`](WorkQueue::get_with_priority) says which an item had.
//! This is controller-runtime's priority queue, which a
//! [`Controller`](crate::controller::Controller) uses so that a real change is not
//! reconciled behind the backlog of an initial list, a relist, a resync or a take-over
//! ([`Priority::LOW`]).
//!
//! The rules above hold across priorities: an item is queued once. Adding an item
//! that is already queued (or being processed) at a higher priority moves it up; at a
//! lower or equal one changes nothing, so a real change never falls back into the
//! backlog. Unlike controller-runtime's queue, lower priorities are never starved: of
//! every eight items handed out while items of different priorities wait, one is the
//! item that has waited longest, so a backlog still drains under a steady stream of
//! changes (at an eighth of the pace at worst).
//!
//! ```
//! use informer::workqueue::{Priority, WorkQueue};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let queue = WorkQueue::new();
//! queue.add_with_priority("default/listed-at-start", Priority::LOW);
//! queue.add_with_priority("default/edited", Priority::LOW);
//! queue.add("default/edited"); // a real change: moves up, still queued once
//! assert_eq!(queue.len(), 2);
//! assert_eq!(queue.get_with_priority().await, Some(("default/edited", Priority::NORMAL)));
//! assert_eq!(queue.get().await, Some("default/listed-at-start"));
//! # });
//! ```
//!
//! # Rate limiters
//!
//! Rate limiters: how long an item waits before it is retried.
//!
//! A [`RateLimiter`] is client-go's `workqueue.TypedRateLimiter[T]`:
//! [`when`](RateLimiter::when) is asked each time an item fails and returns the delay
//! before its retry (recording the failure), [`forget`](RateLimiter::forget) clears an
//! item's history once it succeeds, and [`num_requeues`](RateLimiter::num_requeues)
//! says how many failures are on record. The limiters here are client-go's:
//!
//! - [`ItemExponentialFailureRateLimiter`]: per item, `base * 2^failures`, capped;
//!   5 ms doubling up to 1000 s by default.
//! - [`BucketRateLimiter`]: one token bucket for all items (10 per second, bursts of
//!   100 by default), which bounds the overall retry rate however many items fail.
//! - [`ItemFastSlowRateLimiter`]: a short delay for the first few failures of an item,
//!   then a long one.
//! - [`MaxOfRateLimiter`]: asks several limiters and uses the longest delay.
//!
//! [`default_controller_rate_limiter`] is client-go's `DefaultControllerRateLimiter`:
//! the max of the default exponential and bucket limiters, so one item backs off
//! exponentially while a storm of failures is held to 10 retries per second overall.
//!
//! Times come from [`tokio::time`], so paused-time tests control the bucket.
//!
//! ```
//! use std::time::Duration;
//! use informer::workqueue::{ItemExponentialFailureRateLimiter, RateLimiter};
//!
//! let limiter = ItemExponentialFailureRateLimiter::new(
//!     Duration::from_millis(5),
//!     Duration::from_secs(1000),
//! );
//! assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
//! assert_eq!(limiter.when(&"a"), Duration::from_millis(10));
//! assert_eq!(limiter.num_requeues(&"a"), 2);
//! limiter.forget(&"a");
//! assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
//! ```
//!
//! # Metrics
//!
//! Metrics hooks for the workqueue.
//!
//! client-go's workqueue reports seven metrics per named queue through a
//! `MetricsProvider`: `depth`, `adds_total`, `queue_duration_seconds` (latency),
//! `work_duration_seconds`, `unfinished_work_seconds`,
//! `longest_running_processor_seconds` and `retries_total`. Here the same values reach
//! one object per queue that implements [`QueueMetrics`]; every method has a no-op
//! default, so an implementation overrides only what it records. `NoopMetrics` (the
//! default) records nothing, and [`InMemoryMetrics`] keeps everything in memory for
//! tests, debugging endpoints or a periodic exporter to read with
//! [`InMemoryMetrics::snapshot`].
//!
//! What each hook means, in client-go's terms:
//!
//! | hook | client-go metric | called when |
//! |------|------------------|-------------|
//! | [`on_add`](QueueMetrics::on_add) | `adds_total` | an add was not deduplicated |
//! | [`set_depth`](QueueMetrics::set_depth) | `depth` | the number of pending items changes |
//! | [`observe_latency`](QueueMetrics::observe_latency) | `queue_duration_seconds` | `get` hands out an item: time since its add |
//! | [`observe_work_duration`](QueueMetrics::observe_work_duration) | `work_duration_seconds` | `done`: time since the `get` |
//! | [`on_retry`](QueueMetrics::on_retry) | `retries_total` | `add_after` / `add_rate_limited` was called |
//! | [`set_unfinished_work`](QueueMetrics::set_unfinished_work) | `unfinished_work_seconds`, `longest_running_processor_seconds` | on every `get` and `done`, and on [`WorkQueue::report_unfinished_work`](WorkQueue::report_unfinished_work) |
//!
//! Depth counts every item that is waiting to be handed out, including an item that
//! was added again while being processed and will be queued once its `done` comes (as
//! client-go counts it). client-go refreshes the unfinished-work gauges from a
//! background ticker; this queue has no background task, so call
//! [`report_unfinished_work`](WorkQueue::report_unfinished_work) from a timer
//! if you need the gauge to move while workers are stuck.
//!
//! The queue calls the hooks while it holds its internal lock, so they always see a
//! consistent order of events. Keep them short, and never call back into the queue
//! from a hook.
//!
//! ```
//! use informer::workqueue::{
//!     InMemoryMetrics, QueueConfig, WorkQueue, default_controller_rate_limiter,
//! };
//!
//! let metrics = InMemoryMetrics::new();
//! let queue: WorkQueue<&str> = WorkQueue::with_config(
//!     QueueConfig::default().name("pods").metrics(metrics.clone()),
//!     default_controller_rate_limiter(),
//! );
//! queue.add("default/web");
//! queue.add("default/web"); // deduplicated: not counted
//! assert_eq!(metrics.snapshot().adds, 1);
//! assert_eq!(metrics.snapshot().depth, 1);
//! ```
//!
//! # The runner
//!
//! The controller loop: N workers reconciling items from a work queue.
//!
//! Every client-go controller writes the same `runWorker` / `processNextWorkItem`
//! pair: get a key, call the sync handler, `Forget` on success, `AddRateLimited` on
//! error, `Done` either way, and keep going until the queue shuts down. [`Runner`] is
//! that loop, once, for any item type:
//!
//! - [`RunnerConfig::workers`] tasks pull items from a [`WorkQueue`] and call
//!   your async reconcile function with an owned item. The queue guarantees one item
//!   is never reconciled by two workers at once.
//! - `Ok(Action::Done)`: the item's failure history is forgotten.
//! - `Ok(Action::RequeueAfter(d))`: forgotten, and added again after `d` (a periodic
//!   re-check), at the [priority](self#priorities) the item had;
//!   `Ok(Action::RequeueAfterWithPriority(d, p))` names the priority instead.
//! - `Err(e)` or a panic inside reconcile: logged and retried with the queue's rate
//!   limiter; after [`RunnerConfig::max_retries`] (if set) the item is forgotten and
//!   dropped, as client-go's sample controller does. A panic never takes a worker
//!   down. A retry keeps the item's priority.
//! - `done` is always called, whatever happened.
//!
//! [`Runner::run`] returns when the `shutdown` future completes (or the queue is shut
//! down by someone else). It shuts the queue down, lets every worker finish the item
//! in hand (by default workers then stop; with [`RunnerConfig::drain_queue`] they
//! first work through what is still queued), and returns once every worker task has
//! ended: no task is left running. Dropping the `run` future instead aborts the
//! workers.
//!
//! [`Runner::run_until`] runs the workers for a while and leaves the queue open, for
//! work that runs in turns, such as only while this replica leads (see
//! [`leader`](crate::leader)): workers stop taking items when told, the reconciles in
//! hand get a deadline to finish, and are dropped if they have not.
//!
//! Reconcile functions read state from the informer's cache (its lister), not from
//! the API server; the item is usually an `ObjectKey`, but any
//! `Hash + Eq + Clone + Debug` type works.
//!
//! ```
//! use std::convert::Infallible;
//! use informer::controller::Action;
//! use informer::workqueue::{Runner, RunnerConfig, WorkQueue};
//! use tokio::sync::{mpsc, oneshot};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap()
//! #     .block_on(async {
//! let queue = WorkQueue::new();
//! let (reconciled_tx, mut reconciled) = mpsc::unbounded_channel();
//! let (stop, stopped) = oneshot::channel::<()>();
//!
//! let runner = Runner::with_config(queue.clone(), RunnerConfig::default().workers(2));
//! let controller = tokio::spawn(runner.run(
//!     move |key: String| {
//!         let reconciled_tx = reconciled_tx.clone();
//!         async move {
//!             // Read the object for `key` from the lister and act on it here.
//!             reconciled_tx.send(key).unwrap();
//!             Ok::<_, Infallible>(Action::Done)
//!         }
//!     },
//!     async move {
//!         let _ = stopped.await; // e.g. informer::shutdown_signal()
//!     },
//! ));
//!
//! queue.add("default/web".to_string()); // what an informer's handler does
//! assert_eq!(reconciled.recv().await.as_deref(), Some("default/web"));
//! stop.send(()).unwrap();
//! controller.await.unwrap(); // every worker has finished
//! # });
//! ```

mod delay;
mod metrics;
mod priority;
mod queue;
mod rate_limiter;
pub(crate) mod runner;

pub use metrics::{DurationStats, InMemoryMetrics, MetricsSnapshot, QueueMetrics, UnfinishedWork};
pub use priority::Priority;
pub use queue::{QueueConfig, WorkQueue};
pub use rate_limiter::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter,
    MaxOfRateLimiter, RateLimiter, default_controller_rate_limiter,
};
pub(crate) use runner::Action;
pub use runner::{Runner, RunnerConfig};
