//! The work queue and the controller loop, as client-go's `util/workqueue`.
//!
//! A controller does not act inside informer event handlers. Handlers only add the
//! object's key to a work queue; workers take keys from the queue, read the current
//! state from the informer's cache and reconcile. The queue is what makes that
//! correct and cheap:
//!
//! - [`WorkQueue`] ([`queue`]): the queue. FIFO, an item already queued is not
//!   queued twice, and an item being processed is never handed to a second worker: an
//!   add during processing marks it dirty and it is queued again on `done`. `get`
//!   returns `None` once the queue is shut down and empty; `shutdown_with_drain` waits
//!   for the items in flight. `add_after(item, delay)` holds an item back (the earliest
//!   deadline wins for an item added twice), and `add_rate_limited`, `forget` and
//!   `num_requeues` pace retries with the queue's [`RateLimiter`]. client-go's
//!   `DelayingInterface` and `RateLimitingInterface` are this one type.
//! - [`RateLimiter`] ([`rate_limiter`]): how long a retry waits: per-item
//!   exponential, token bucket, fast-slow, max-of, and client-go's default
//!   ([`default_controller_rate_limiter`]), which [`WorkQueue::new`] uses.
//! - [`QueueMetrics`] ([`metrics`]): hooks for client-go's queue metrics (depth, adds,
//!   latency, work duration, retries, unfinished work), with [`InMemoryMetrics`] to
//!   read them.
//! - [`Runner`] ([`runner`]): the worker loop every controller writes: N workers, a
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
//! use informer::workqueue::{Action, Runner, RunnerConfig, WorkQueue};
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

mod delay;
mod metrics;
mod queue;
mod rate_limiter;
mod runner;

pub use metrics::{DurationStats, InMemoryMetrics, MetricsSnapshot, QueueMetrics, UnfinishedWork};
pub use queue::{QueueConfig, WorkQueue};
pub use rate_limiter::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter,
    MaxOfRateLimiter, RateLimiter, default_controller_rate_limiter,
};
pub use runner::{Action, Runner, RunnerConfig};

/// Compile-time checks that the public types (and the futures of their async
/// methods) can cross threads, in the style of tokio's `tests/async_send_sync.rs`.
#[cfg(test)]
mod send_sync {
    use std::convert::Infallible;

    use super::*;

    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>(_: &T) {}

    /// An item type that is `Send + Sync` and nothing more.
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    struct Key(String);

    const _: fn() = || {
        send_sync::<WorkQueue<Key>>();
        send_sync::<Runner<Key>>();
        send_sync::<RunnerConfig>();
        send_sync::<Action>();
        send_sync::<QueueConfig>();
        send_sync::<InMemoryMetrics>();
        send_sync::<MetricsSnapshot>();
        send_sync::<ItemExponentialFailureRateLimiter<Key>>();
        send_sync::<ItemFastSlowRateLimiter<Key>>();
        send_sync::<BucketRateLimiter>();
        send_sync::<MaxOfRateLimiter<Key>>();
        send_sync::<Box<dyn RateLimiter<Key>>>();
        send_sync::<std::sync::Arc<dyn QueueMetrics>>();
    };

    const _: fn() = || {
        let queue = WorkQueue::<Key>::new();
        send(&queue.get());
        send(&queue.shutdown_with_drain());
        let run = Runner::new(queue).run(
            |_key: Key| async { Ok::<_, Infallible>(Action::Done) },
            std::future::pending(),
        );
        send(&run);
    };
}
