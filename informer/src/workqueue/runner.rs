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
//!   re-check).
//! - `Err(e)` or a panic inside reconcile: logged and retried with the queue's rate
//!   limiter; after [`RunnerConfig::max_retries`] (if set) the item is forgotten and
//!   dropped, as client-go's sample controller does. A panic never takes a worker
//!   down.
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
//! use informer::workqueue::{Action, Runner, RunnerConfig, WorkQueue};
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
//!         let _ = stopped.await; // e.g. tokio::signal::ctrl_c()
//!     },
//! ));
//!
//! queue.add("default/web".to_string()); // what an informer's handler does
//! assert_eq!(reconciled.recv().await.as_deref(), Some("default/web"));
//! stop.send(()).unwrap();
//! controller.await.unwrap(); // every worker has finished
//! # });
//! ```

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::watch;
use tokio::task::{JoinError, JoinSet};

use super::queue::WorkQueue;

/// What a successful reconcile asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Action {
    /// Nothing until the item is added again (typically by an informer event).
    #[default]
    Done,
    /// Reconcile the item again after this delay, even if nothing changes.
    RequeueAfter(Duration),
}

/// How a [`Runner`] works: number of workers, retry limit, shutdown behaviour.
///
/// Start from `default()` and chain the builder methods.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Number of worker tasks (client-go's "threadiness"). Default 1; 0 counts as 1.
    pub workers: usize,
    /// Give up on an item once it has been retried this many times in a row (client-go's
    /// sample controller uses 5). Default `None`: retry for ever, with backoff.
    pub max_retries: Option<u32>,
    /// On shutdown, work through the items still queued before stopping. Default
    /// `false`: workers finish the item in hand and stop; what is left in the queue
    /// is dropped (an informer lists everything again on the next start).
    pub drain_queue: bool,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        Self {
            workers: 1,
            max_retries: None,
            drain_queue: false,
        }
    }
}

impl RunnerConfig {
    /// Sets the number of worker tasks (0 counts as 1).
    #[must_use]
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// Gives up on an item after `retries` retries in a row.
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = Some(retries);
        self
    }

    /// Whether workers work through the queued items on shutdown.
    #[must_use]
    pub fn drain_queue(mut self, drain: bool) -> Self {
        self.drain_queue = drain;
        self
    }
}

/// Runs worker tasks that reconcile items from a [`WorkQueue`]; see the
/// [module documentation](self).
pub struct Runner<T> {
    queue: WorkQueue<T>,
    config: RunnerConfig,
}

impl<T> fmt::Debug for Runner<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runner")
            .field("queue", &self.queue)
            .field("config", &self.config)
            .finish()
    }
}

impl<T> Runner<T>
where
    T: Hash + Eq + Clone + fmt::Debug + Send + Sync + 'static,
{
    /// A runner with the default [`RunnerConfig`] (one worker).
    pub fn new(queue: WorkQueue<T>) -> Self {
        Self::with_config(queue, RunnerConfig::default())
    }

    /// A runner with `config`.
    pub fn with_config(queue: WorkQueue<T>, config: RunnerConfig) -> Self {
        Self { queue, config }
    }

    /// The queue the workers pull from.
    pub fn queue(&self) -> &WorkQueue<T> {
        &self.queue
    }

    /// Runs the workers until `shutdown` completes or the queue is shut down, then
    /// shuts the queue down and waits for every worker to finish.
    ///
    /// `reconcile` is called with an owned item; errors are logged with their
    /// `Display` and retried with the queue's rate limiter.
    pub async fn run<F, Fut, E, S>(self, reconcile: F, shutdown: S)
    where
        F: Fn(T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
        S: Future<Output = ()> + Send,
    {
        // Never set: these workers stop when the queue shuts down.
        let (_never_stop, stop) = watch::channel(false);
        let mut workers = self.spawn_workers(reconcile, &stop);

        let mut shutdown = pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                joined = workers.join_next() => match joined {
                    Some(joined) => self.report_exit(joined),
                    // The queue was shut down by someone else and every worker ended.
                    None => return,
                },
            }
        }
        tracing::debug!(queue = self.queue.name(), "shutting down the workers");
        self.queue.shutdown();
        while let Some(joined) = workers.join_next().await {
            self.report_exit(joined);
        }
    }

    /// Spawns the worker tasks; they stop taking items once `stop` is set.
    fn spawn_workers<F, Fut, E>(&self, reconcile: F, stop: &watch::Receiver<bool>) -> JoinSet<()>
    where
        F: Fn(T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        let reconcile = Arc::new(reconcile);
        let mut workers = JoinSet::new();
        for _ in 0..self.config.workers.max(1) {
            workers.spawn(work(
                self.queue.clone(),
                Arc::clone(&reconcile),
                self.config.clone(),
                stop.clone(),
            ));
        }
        workers
    }

    fn report_exit(&self, joined: Result<(), JoinError>) {
        if let Err(error) = joined {
            // Reconcile panics are caught in the worker; this is a panic elsewhere,
            // e.g. in a metrics hook.
            tracing::error!(queue = self.queue.name(), %error, "a worker task failed");
        }
    }
}

/// One worker: get, reconcile, settle, done; until the queue says stop.
/// Also stops, without waiting for an item, once `stop` is set.
async fn work<T, F, Fut, E>(
    queue: WorkQueue<T>,
    reconcile: Arc<F>,
    config: RunnerConfig,
    mut stop: watch::Receiver<bool>,
) where
    T: Hash + Eq + Clone + fmt::Debug + Send + Sync + 'static,
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: fmt::Display + Send + 'static,
{
    loop {
        if *stop.borrow() || (!config.drain_queue && queue.is_shutting_down()) {
            return;
        }
        // `get` is cancel-safe: a worker told to stop while waiting takes nothing.
        let next = tokio::select! {
            biased;
            _ = stop.wait_for(|stop| *stop) => return,
            next = queue.get() => next,
        };
        let Some(item) = next else {
            return;
        };
        // `done` must come whatever happens below, even if this task is aborted.
        let _done = DoneOnDrop {
            queue: &queue,
            item: &item,
        };
        let attempt = AssertUnwindSafe(async { (*reconcile)(item.clone()).await })
            .catch_unwind()
            .await;
        match attempt {
            Ok(Ok(Action::Done)) => queue.forget(&item),
            Ok(Ok(Action::RequeueAfter(delay))) => {
                queue.forget(&item);
                queue.add_after(item.clone(), delay);
            }
            Ok(Err(error)) => retry(&queue, &item, &config, &error),
            Err(panic) => retry(&queue, &item, &config, &PanicMessage(panic)),
        }
    }
}

fn retry<T>(queue: &WorkQueue<T>, item: &T, config: &RunnerConfig, error: &dyn fmt::Display)
where
    T: Hash + Eq + Clone + fmt::Debug + Send + Sync + 'static,
{
    let retries = queue.num_requeues(item);
    if config.max_retries.is_some_and(|max| retries >= max) {
        queue.forget(item);
        tracing::error!(
            queue = queue.name(),
            ?item,
            retries,
            %error,
            "reconcile failed; giving up on the item"
        );
    } else {
        tracing::warn!(
            queue = queue.name(),
            ?item,
            retries,
            %error,
            "reconcile failed; retrying with backoff"
        );
        queue.add_rate_limited(item.clone());
    }
}

/// Calls `done` for the item when dropped.
struct DoneOnDrop<'a, T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    queue: &'a WorkQueue<T>,
    item: &'a T,
}

impl<T> Drop for DoneOnDrop<'_, T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    fn drop(&mut self) {
        self.queue.done(self.item);
    }
}

/// A caught panic, shown as its message.
struct PanicMessage(Box<dyn Any + Send>);

impl fmt::Display for PanicMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "reconcile panicked: {}",
            crate::panic::message(self.0.as_ref())
        )
    }
}

mod until;

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};
    use std::sync::Mutex;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use tokio::sync::{mpsc, oneshot};
    use tokio::time::{Instant, sleep};

    use super::*;
    use crate::workqueue::{ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter};

    const MS: Duration = Duration::from_millis(1);

    /// Every reconcile call: item, attempt number (from 1) and time.
    type Calls = Arc<Mutex<Vec<(&'static str, u32, Instant)>>>;

    /// Starts a runner whose reconcile takes `hold` (paused time) and then returns
    /// `behave(item, attempt)`; returns the call log, a channel that sees each call,
    /// the stop switch and the run task.
    fn start_holding(
        queue: &WorkQueue<&'static str>,
        config: RunnerConfig,
        hold: Duration,
        behave: impl Fn(&'static str, u32) -> Result<Action, String> + Send + Sync + 'static,
    ) -> (
        Calls,
        mpsc::UnboundedReceiver<&'static str>,
        oneshot::Sender<()>,
        tokio::task::JoinHandle<()>,
    ) {
        let calls = Calls::default();
        let (seen_tx, seen) = mpsc::unbounded_channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let behave = Arc::new(behave);
        let log = Arc::clone(&calls);
        let runner = Runner::with_config(queue.clone(), config);
        let task = tokio::spawn(runner.run(
            move |item| {
                let attempt = {
                    let mut log = log.lock().unwrap();
                    let attempt = log.iter().filter(|(i, ..)| *i == item).count() as u32 + 1;
                    log.push((item, attempt, Instant::now()));
                    attempt
                };
                let _ = seen_tx.send(item);
                let behave = Arc::clone(&behave);
                async move {
                    if !hold.is_zero() {
                        sleep(hold).await;
                    }
                    behave(item, attempt)
                }
            },
            async move {
                let _ = stopped.await;
            },
        ));
        (calls, seen, stop, task)
    }

    /// [`start_holding`] with reconciles that return at once.
    fn start(
        queue: &WorkQueue<&'static str>,
        config: RunnerConfig,
        behave: impl Fn(&'static str, u32) -> Result<Action, String> + Send + Sync + 'static,
    ) -> (
        Calls,
        mpsc::UnboundedReceiver<&'static str>,
        oneshot::Sender<()>,
        tokio::task::JoinHandle<()>,
    ) {
        start_holding(queue, config, Duration::ZERO, behave)
    }

    fn offsets(calls: &Calls) -> Vec<Duration> {
        let calls = calls.lock().unwrap();
        let start = calls[0].2;
        calls.iter().map(|(.., at)| *at - start).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn runner_forgets_on_success() {
        let queue = WorkQueue::new();
        queue.add_rate_limited("a"); // a failure on record from earlier
        let (calls, mut seen, stop, task) =
            start(&queue, RunnerConfig::default(), |_, _| Ok(Action::Done));
        assert_eq!(seen.recv().await, Some("a"));
        sleep(MS).await; // let the worker settle the item
        assert_eq!(queue.num_requeues(&"a"), 0);
        assert_eq!(calls.lock().unwrap().len(), 1);
        stop.send(()).unwrap();
        task.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn runner_requeues_with_rate_limit_on_error() {
        let queue = WorkQueue::new();
        queue.add("a");
        let (calls, mut seen, stop, task) = start(&queue, RunnerConfig::default(), |_, attempt| {
            if attempt < 4 {
                Err(format!("attempt {attempt} failed"))
            } else {
                Ok(Action::Done)
            }
        });
        for _ in 0..4 {
            assert_eq!(seen.recv().await, Some("a"));
        }
        // Exponential backoff from the default limiter: 5, 10, 20 ms.
        assert_eq!(offsets(&calls), [Duration::ZERO, 5 * MS, 15 * MS, 35 * MS]);
        sleep(MS).await;
        assert_eq!(queue.num_requeues(&"a"), 0, "forgotten after the success");
        stop.send(()).unwrap();
        task.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn runner_contains_a_panic_and_retries_it_as_an_error() {
        let queue = WorkQueue::new();
        queue.add("boom");
        let (calls, mut seen, stop, task) =
            start(&queue, RunnerConfig::default(), |item, attempt| {
                if item == "boom" && attempt == 1 {
                    panic!("reconcile blew up");
                }
                Ok(Action::Done)
            });
        assert_eq!(seen.recv().await, Some("boom"));
        assert_eq!(seen.recv().await, Some("boom"));
        assert_eq!(offsets(&calls), [Duration::ZERO, 5 * MS]);
        // The worker survived and keeps serving.
        queue.add("next");
        assert_eq!(seen.recv().await, Some("next"));
        stop.send(()).unwrap();
        task.await.unwrap();
        assert_eq!(queue.unfinished_work().in_flight, 0, "done was called");
    }

    #[tokio::test(start_paused = true)]
    async fn runner_requeues_after_the_delay_a_reconcile_asks_for() {
        let queue = WorkQueue::new();
        queue.add("a");
        let (calls, mut seen, stop, task) = start(&queue, RunnerConfig::default(), |_, attempt| {
            Ok(if attempt == 1 {
                Action::RequeueAfter(Duration::from_secs(30))
            } else {
                Action::Done
            })
        });
        assert_eq!(seen.recv().await, Some("a"));
        assert_eq!(seen.recv().await, Some("a"));
        assert_eq!(offsets(&calls), [Duration::ZERO, Duration::from_secs(30)]);
        assert_eq!(queue.num_requeues(&"a"), 0, "a requeue is not a failure");
        stop.send(()).unwrap();
        task.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn runner_gives_up_after_max_retries() {
        let queue = WorkQueue::new();
        queue.add("a");
        let (calls, mut seen, stop, task) =
            start(&queue, RunnerConfig::default().max_retries(2), |_, _| {
                Err("always".to_string())
            });
        for _ in 0..3 {
            assert_eq!(seen.recv().await, Some("a"));
        }
        sleep(Duration::from_secs(3600)).await;
        assert_eq!(calls.lock().unwrap().len(), 3, "one try and two retries");
        assert_eq!(queue.num_requeues(&"a"), 0, "forgotten when dropped");
        assert_eq!(queue.waiting_len(), 0);
        stop.send(()).unwrap();
        task.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn runner_shutdown_waits_for_in_flight_reconciles_and_leaves_no_task() {
        let queue = WorkQueue::new();
        let finished = Arc::new(Mutex::new(Vec::new()));
        let (started_tx, mut started) = mpsc::unbounded_channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let runner = Runner::with_config(queue.clone(), RunnerConfig::default().workers(3));
        let task = tokio::spawn(runner.run(
            {
                let finished = Arc::clone(&finished);
                move |item: u32| {
                    let (finished, started_tx) = (Arc::clone(&finished), started_tx.clone());
                    async move {
                        started_tx.send(item).unwrap();
                        sleep(Duration::from_secs(10)).await;
                        finished.lock().unwrap().push(item);
                        Ok::<_, String>(Action::Done)
                    }
                }
            },
            async move {
                let _ = stopped.await;
            },
        ));
        for item in 0..3 {
            queue.add(item);
        }
        for _ in 0..3 {
            started.recv().await.unwrap();
        }
        stop.send(()).unwrap();
        task.await.unwrap();

        let mut finished_items = finished.lock().unwrap().clone();
        finished_items.sort_unstable();
        assert_eq!(
            finished_items,
            [0, 1, 2],
            "every in-flight reconcile completed"
        );
        assert!(queue.is_shutting_down());
        assert_eq!(queue.unfinished_work().in_flight, 0);
        // The reconcile closure (and with it every worker) is gone.
        assert_eq!(Arc::strong_count(&finished), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn runner_stops_taking_items_after_shutdown() {
        let queue = WorkQueue::new();
        for item in ["a", "b", "c"] {
            queue.add(item);
        }
        let (calls, mut seen, stop, task) =
            start_holding(&queue, RunnerConfig::default(), MS, |_, _| Ok(Action::Done));
        assert_eq!(seen.recv().await, Some("a"));
        stop.send(()).unwrap();
        task.await.unwrap();
        let items: Vec<_> = calls.lock().unwrap().iter().map(|(i, ..)| *i).collect();
        assert_eq!(items, ["a"]);
        assert_eq!(queue.len(), 2, "the backlog is left in the queue");
    }

    #[tokio::test(start_paused = true)]
    async fn runner_with_drain_queue_works_through_the_backlog() {
        let queue = WorkQueue::new();
        for item in ["a", "b", "c"] {
            queue.add(item);
        }
        let (calls, mut seen, stop, task) = start_holding(
            &queue,
            RunnerConfig::default().drain_queue(true),
            MS,
            |_, _| Ok(Action::Done),
        );
        assert_eq!(seen.recv().await, Some("a"));
        stop.send(()).unwrap();
        task.await.unwrap();
        let items: Vec<_> = calls.lock().unwrap().iter().map(|(i, ..)| *i).collect();
        assert_eq!(items, ["a", "b", "c"]);
        assert!(queue.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn runner_returns_when_the_queue_is_shut_down_elsewhere() {
        let queue: WorkQueue<&str> = WorkQueue::new();
        let runner = Runner::with_config(queue.clone(), RunnerConfig::default().workers(4));
        let task = tokio::spawn(runner.run(
            |_item| async { Ok::<_, String>(Action::Done) },
            std::future::pending(),
        ));
        tokio::task::yield_now().await;
        queue.shutdown();
        task.await.unwrap();
        assert!(queue.is_shutting_down());
    }

    #[tokio::test(start_paused = true)]
    async fn runner_aborted_by_drop_still_marks_items_done() {
        let queue = WorkQueue::new();
        queue.add("stuck");
        let (started_tx, mut started) = mpsc::unbounded_channel();
        let runner = Runner::new(queue.clone());
        let task = tokio::spawn(runner.run(
            move |item| {
                let started_tx = started_tx.clone();
                async move {
                    started_tx.send(item).unwrap();
                    std::future::pending::<Result<Action, String>>().await
                }
            },
            std::future::pending(),
        ));
        assert_eq!(started.recv().await, Some("stuck"));
        assert_eq!(queue.unfinished_work().in_flight, 1);
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
        // The aborted workers unwind at their next poll; the drain sees them finish.
        queue.shutdown_with_drain().await;
        assert_eq!(queue.unfinished_work().in_flight, 0);
    }

    /// Many workers, random adds and random failures: one item is never reconciled
    /// by two workers at once, and every add is followed by a reconcile that saw it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn runner_stress_never_reconciles_one_item_concurrently() {
        const ITEMS: u32 = 32;
        #[derive(Default)]
        struct Model {
            added: HashMap<u32, u64>,
            seen: HashMap<u32, u64>,
            in_progress: HashSet<u32>,
            overlaps: usize,
        }
        let model = Arc::new(Mutex::new(Model::default()));
        // Retries without delay keep the test off the clock.
        let queue = WorkQueue::with_rate_limiter(ItemFastSlowRateLimiter::new(
            Duration::ZERO,
            Duration::ZERO,
            0,
        ));
        let runner = Runner::with_config(
            queue.clone(),
            RunnerConfig::default().workers(8).drain_queue(true),
        );
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(runner.run(
            {
                let model = Arc::clone(&model);
                move |item: u32| {
                    let model = Arc::clone(&model);
                    async move {
                        let fail = {
                            let mut m = model.lock().unwrap();
                            if !m.in_progress.insert(item) {
                                m.overlaps += 1;
                            }
                            let added = m.added.get(&item).copied().unwrap_or(0);
                            m.seen.insert(item, added);
                            added % 3 == 0
                        };
                        tokio::task::yield_now().await;
                        model.lock().unwrap().in_progress.remove(&item);
                        if fail {
                            Err("every third add fails".to_string())
                        } else {
                            Ok(Action::Done)
                        }
                    }
                }
            },
            async move {
                let _ = stopped.await;
            },
        ));

        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..5_000 {
            let item = rng.random_range(0..ITEMS);
            *model.lock().unwrap().added.entry(item).or_default() += 1;
            queue.add(item);
            if rng.random_ratio(1, 16) {
                tokio::task::yield_now().await;
            }
        }
        stop.send(()).unwrap();
        task.await.unwrap();

        let m = model.lock().unwrap();
        assert_eq!(
            m.overlaps, 0,
            "an item was reconciled by two workers at once"
        );
        for (item, added) in &m.added {
            assert_eq!(
                m.seen.get(item),
                Some(added),
                "item {item}: last add never seen"
            );
        }
        assert_eq!(queue.unfinished_work().in_flight, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn runner_uses_the_queues_rate_limiter() {
        let queue = WorkQueue::with_rate_limiter(ItemExponentialFailureRateLimiter::new(
            Duration::from_secs(1),
            Duration::from_secs(60),
        ));
        queue.add("a");
        let (calls, mut seen, stop, task) = start(&queue, RunnerConfig::default(), |_, attempt| {
            if attempt < 3 {
                Err("not yet".into())
            } else {
                Ok(Action::Done)
            }
        });
        for _ in 0..3 {
            seen.recv().await;
        }
        assert_eq!(
            offsets(&calls),
            [
                Duration::ZERO,
                Duration::from_secs(1),
                Duration::from_secs(3)
            ]
        );
        stop.send(()).unwrap();
        task.await.unwrap();
    }
}
