//! The runner's tests: what each outcome does to the queue, shutdown and drain,
//! panics, retries, and a randomised run checking that no item runs twice at once.

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
    let (calls, mut seen, stop, task) = start(&queue, RunnerConfig::default(), |item, attempt| {
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

/// A requeue or a retry keeps the priority its item was handed out with, unless the
/// reconcile names another.
#[tokio::test(start_paused = true)]
async fn requeues_and_retries_keep_their_priority_unless_the_action_names_one() {
    let queue = WorkQueue::new();
    for item in ["requeue", "raise", "fail"] {
        queue.add_with_priority(item, Priority::LOW);
    }
    let runner = Runner::with_config(queue.clone(), RunnerConfig::default().workers(3));
    let reconcile = |item: &'static str| async move {
        match item {
            "requeue" => Ok(Action::RequeueAfter(Duration::from_secs(10))),
            "raise" => Ok(Action::RequeueAfterWithPriority(
                Duration::from_secs(10),
                Priority::NORMAL,
            )),
            _ => Err("failed"),
        }
    };
    // Workers stop after a second; the queue stays open with the three waiting.
    runner
        .run_until(reconcile, sleep(Duration::from_secs(1)), sleep(MS))
        .await;
    tokio::time::advance(Duration::from_secs(20)).await;
    let mut requeued = Vec::new();
    for _ in 0..3 {
        requeued.push(queue.get_with_priority().await.unwrap());
    }
    assert_eq!(
        requeued,
        [
            ("raise", Priority::NORMAL),
            ("fail", Priority::LOW),
            ("requeue", Priority::LOW),
        ]
    );
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
