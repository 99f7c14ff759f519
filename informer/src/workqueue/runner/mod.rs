//! [`Runner`], explained in the [module docs](super#the-runner).

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

use super::priority::Priority;
use super::queue::WorkQueue;

/// What a successful reconcile asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Action {
    /// Nothing until the item is added again (typically by an informer event).
    #[default]
    Done,
    /// Reconcile the item again after this delay, even if nothing changes; queued at
    /// the priority it had this time.
    RequeueAfter(Duration),
    /// Reconcile the item again after this delay, queued at this [`Priority`] (e.g.
    /// [`Priority::NORMAL`] for a check that must not wait behind a startup backlog).
    RequeueAfterWithPriority(Duration, Priority),
}

/// How a [`Runner`] works: number of workers, retry limit, shutdown behaviour.
///
/// Start from `default()` and chain the builder methods.
#[derive(Debug, Clone)]
#[non_exhaustive]
#[must_use]
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
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// Gives up on an item after `retries` retries in a row.
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = Some(retries);
        self
    }

    /// Whether workers work through the queued items on shutdown.
    pub fn drain_queue(mut self, drain: bool) -> Self {
        self.drain_queue = drain;
        self
    }
}

/// Runs worker tasks that reconcile items from a [`WorkQueue`]; see the
/// [module documentation](super#the-runner).
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
            next = queue.get_with_priority() => next,
        };
        let Some((item, priority)) = next else {
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
                queue.add_after_with_priority(item.clone(), delay, priority);
            }
            Ok(Ok(Action::RequeueAfterWithPriority(delay, priority))) => {
                queue.forget(&item);
                queue.add_after_with_priority(item.clone(), delay, priority);
            }
            Ok(Err(error)) => retry(&queue, (&item, priority), &config, &error),
            Err(panic) => retry(&queue, (&item, priority), &config, &PanicMessage(panic)),
        }
    }
}

/// Retries `item` with backoff, at the priority it had, unless it ran out of retries.
fn retry<T>(
    queue: &WorkQueue<T>,
    (item, priority): (&T, Priority),
    config: &RunnerConfig,
    error: &dyn fmt::Display,
) where
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
        queue.add_rate_limited_with_priority(item.clone(), priority);
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
mod tests;
