//! [`Runner::run_until`]: the workers for one stretch of time (a leadership term),
//! leaving the queue open for the next.

use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::pin::pin;

use tokio::sync::watch;

use super::{Action, Runner};

impl<T> Runner<T>
where
    T: Hash + Eq + Clone + fmt::Debug + Send + Sync + 'static,
{
    /// Runs the workers until `stop` completes, without shutting the queue down, so
    /// that another `run_until` can take over the same queue later.
    ///
    /// Once `stop` completes, workers take no new item; a worker with an item in
    /// hand may finish it until `abandon` completes, and then its reconcile is
    /// dropped (the item is marked done but not retried: the next stretch must queue
    /// what it needs). Returns once every worker task has ended, also early if the
    /// queue is shut down meanwhile. A leader passes "leadership lost" as `stop` and
    /// "the lease could expire now" as `abandon`.
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use std::time::Duration;
    /// use informer::controller::Action;
    /// use informer::workqueue::{Runner, WorkQueue};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true)
    /// #     .build().unwrap().block_on(async {
    /// let queue = WorkQueue::new();
    /// queue.add("slow");
    /// let runner = Runner::new(queue.clone());
    /// let reconcile = |_key: &'static str| async {
    ///     tokio::time::sleep(Duration::from_secs(60)).await;
    ///     Ok::<_, Infallible>(Action::Done)
    /// };
    /// let start = tokio::time::Instant::now();
    /// runner
    ///     .run_until(
    ///         reconcile,
    ///         tokio::time::sleep(Duration::from_secs(1)), // e.g. leadership lost
    ///         tokio::time::sleep(Duration::from_secs(5)), // e.g. the lease expires
    ///     )
    ///     .await;
    /// assert_eq!(start.elapsed(), Duration::from_secs(5)); // abandoned, not finished
    /// assert!(!queue.is_shutting_down()); // open for the next term
    /// # });
    /// ```
    pub async fn run_until<F, Fut, E, S, A>(&self, reconcile: F, stop: S, abandon: A)
    where
        F: Fn(T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
        S: Future<Output = ()> + Send,
        A: Future<Output = ()> + Send,
    {
        let (stop_workers, stopped) = watch::channel(false);
        let mut workers = self.spawn_workers(reconcile, &stopped);
        let mut stop = pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => break,
                joined = workers.join_next() => match joined {
                    Some(joined) => self.report_exit(joined),
                    // The queue was shut down by someone else and every worker ended.
                    None => return,
                },
            }
        }
        tracing::debug!(
            queue = self.queue.name(),
            "stopping the workers; the queue stays open"
        );
        stop_workers.send_replace(true);
        let mut abandon = pin!(abandon);
        loop {
            tokio::select! {
                joined = workers.join_next() => match joined {
                    Some(joined) => self.report_exit(joined),
                    None => return,
                },
                () = &mut abandon => break,
            }
        }
        tracing::warn!(
            queue = self.queue.name(),
            still_running = workers.len(),
            "abandoning the reconciles still running"
        );
        workers.abort_all();
        while let Some(joined) = workers.join_next().await {
            if let Err(error) = &joined
                && error.is_cancelled()
            {
                continue;
            }
            self.report_exit(joined);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use tokio::sync::oneshot;
    use tokio::time::{Instant, sleep};

    use super::*;
    use crate::workqueue::WorkQueue;

    const SECOND: Duration = Duration::from_secs(1);

    /// One log entry: item, "start" or "end", time since the test began.
    type Entry = (&'static str, &'static str, Duration);

    /// Reconciles that take `hold` and log (item, start, end-or-dropped).
    #[derive(Clone, Default)]
    struct Log(Arc<Mutex<Vec<Entry>>>);

    impl Log {
        fn reconcile(
            &self,
            start: Instant,
            hold: Duration,
        ) -> impl Fn(
            &'static str,
        ) -> futures::future::BoxFuture<'static, Result<Action, Infallible>>
        + Clone
        + Send
        + Sync
        + 'static {
            let log = self.clone();
            move |item| {
                let log = log.clone();
                Box::pin(async move {
                    log.0.lock().unwrap().push((item, "start", start.elapsed()));
                    let guard = EndGuard(log.clone(), item, start);
                    sleep(hold).await;
                    drop(guard);
                    Ok(Action::Done)
                })
            }
        }

        fn entries(&self) -> Vec<Entry> {
            self.0.lock().unwrap().clone()
        }
    }

    /// Logs "end" when the reconcile finishes or is dropped.
    struct EndGuard(Log, &'static str, Instant);

    impl Drop for EndGuard {
        fn drop(&mut self) {
            self.0
                .0
                .lock()
                .unwrap()
                .push((self.1, "end", self.2.elapsed()));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn in_flight_reconciles_finish_before_the_abandon_deadline() {
        let queue = WorkQueue::new();
        let log = Log::default();
        let start = Instant::now();
        queue.add("a");
        queue.add("b");
        Runner::new(queue.clone())
            .run_until(
                log.reconcile(start, 2 * SECOND),
                sleep(SECOND),
                sleep(10 * SECOND),
            )
            .await;
        // "a" finished at 2 s; "b" was never taken: the stop came first.
        assert_eq!(
            log.entries(),
            [("a", "start", Duration::ZERO), ("a", "end", 2 * SECOND)]
        );
        assert_eq!(start.elapsed(), 2 * SECOND);
        assert!(!queue.is_shutting_down());
        assert_eq!(queue.len(), 1, "b stays queued for the next term");
    }

    #[tokio::test(start_paused = true)]
    async fn reconciles_past_the_abandon_deadline_are_dropped_and_marked_done() {
        let queue = WorkQueue::new();
        let log = Log::default();
        let start = Instant::now();
        queue.add("slow");
        let runner = Runner::new(queue.clone());
        runner
            .run_until(
                log.reconcile(start, 60 * SECOND),
                sleep(SECOND),
                sleep(2 * SECOND),
            )
            .await;
        assert_eq!(
            log.entries(),
            [
                ("slow", "start", Duration::ZERO),
                ("slow", "end", 2 * SECOND)
            ]
        );
        // Done was called: the same queue hands "slow" out again in the next term.
        queue.add("slow");
        let (stop, stopped) = oneshot::channel::<()>();
        let next_term = tokio::spawn({
            let reconcile = log.reconcile(start, Duration::ZERO);
            async move {
                runner
                    .run_until(
                        reconcile,
                        async { stopped.await.unwrap() },
                        std::future::pending(),
                    )
                    .await;
            }
        });
        sleep(SECOND).await;
        stop.send(()).unwrap();
        next_term.await.unwrap();
        assert_eq!(log.entries().len(), 4, "{:?}", log.entries());
    }

    #[tokio::test(start_paused = true)]
    async fn a_queue_shut_down_elsewhere_ends_the_run() {
        let queue = WorkQueue::<&'static str>::new();
        let log = Log::default();
        queue.shutdown();
        Runner::new(queue.clone())
            .run_until(
                log.reconcile(Instant::now(), SECOND),
                std::future::pending(),
                std::future::pending(),
            )
            .await;
        assert!(log.entries().is_empty());
    }
}
