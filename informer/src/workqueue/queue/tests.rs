//! Tests of the queue's rules: deduplication and dirty items, shutdown and drain,
//! delayed adds, rate-limited retries, metrics, and two concurrency stress tests.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::time::{advance, timeout};

use super::*;
use crate::workqueue::{
    InMemoryMetrics, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter,
};

const MS: Duration = Duration::from_millis(1);
const SECOND: Duration = Duration::from_secs(1);

// ---------------------------------------------------------------------------------------
// Helpers

/// Whether `get` would hand something out without waiting (paused time makes the
/// timeout immediate when nothing else can run).
async fn gets_nothing<T>(queue: &WorkQueue<T>) -> bool
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    timeout(Duration::from_secs(1), queue.get()).await.is_err()
}

// ---------------------------------------------------------------------------------------
// Queueing, dirty items, shutdown and drain, metrics

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
    let queue = WorkQueue::with_config(
        QueueConfig::default().metrics(metrics.clone()),
        default_controller_rate_limiter(),
    );
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

// ---------------------------------------------------------------------------------------
// Delayed adds (`add_after`)

#[tokio::test(start_paused = true)]
async fn add_after_makes_the_item_ready_only_after_the_delay() {
    let queue = WorkQueue::new();
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
    let queue = WorkQueue::new();
    let start = Instant::now();
    queue.add_after(1, 3 * SECOND);
    assert_eq!(queue.get().await, Some(1));
    assert_eq!(start.elapsed(), 3 * SECOND);
}

#[tokio::test]
async fn add_after_zero_adds_at_once() {
    let queue = WorkQueue::new();
    queue.add_after("now", Duration::ZERO);
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.waiting_len(), 0);
}

#[tokio::test(start_paused = true)]
async fn add_after_earliest_deadline_wins() {
    let queue = WorkQueue::new();
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
    let queue = WorkQueue::new();
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
    let queue = WorkQueue::new();
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
    let queue = WorkQueue::new();
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
    let queue = WorkQueue::new();
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
    let queue = WorkQueue::new();
    queue.add_after("waiting", SECOND);
    queue.shutdown();
    queue.add_after("late", SECOND);
    assert_eq!(queue.waiting_len(), 0);
    advance(10 * SECOND).await;
    assert_eq!(queue.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shutdown_wakes_a_get_waiting_for_a_deadline() {
    let queue: WorkQueue<u8> = WorkQueue::new();
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
    let queue = WorkQueue::new();
    queue.add_after("a", 10 * SECOND);
    assert!(timeout(SECOND, queue.get()).await.is_err());
    assert_eq!(queue.waiting_len(), 1);
    assert_eq!(queue.get().await, Some("a"));
}

#[tokio::test(start_paused = true)]
async fn every_add_after_counts_as_a_retry() {
    let metrics = InMemoryMetrics::new();
    let queue = WorkQueue::with_config(
        QueueConfig::default().metrics(metrics.clone()),
        default_controller_rate_limiter(),
    );
    queue.add_after("a", SECOND);
    queue.add_after("a", Duration::ZERO);
    queue.add("b");
    assert_eq!(metrics.snapshot().retries, 2);
}

#[tokio::test(start_paused = true)]
async fn huge_delays_do_not_overflow() {
    let queue = WorkQueue::new();
    queue.add_after("never", Duration::MAX);
    advance(86_400 * SECOND).await;
    assert_eq!(queue.len(), 0);
    assert_eq!(queue.waiting_len(), 1);
}

#[tokio::test(start_paused = true)]
async fn many_getters_each_receive_one_due_item() {
    let queue = WorkQueue::new();
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

// ---------------------------------------------------------------------------------------
// Rate-limited retries

#[tokio::test(start_paused = true)]
async fn add_rate_limited_waits_the_limiters_delay() {
    let queue = WorkQueue::new();
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
    let queue = WorkQueue::new();
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
    let queue = WorkQueue::with_rate_limiter(ItemExponentialFailureRateLimiter::new(
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
    let queue = WorkQueue::new();
    queue.add("a");
    queue.forget(&"a");
    assert_eq!(queue.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn rate_limited_retries_count_in_metrics() {
    let metrics = InMemoryMetrics::new();
    let queue = WorkQueue::with_config(
        QueueConfig::default().metrics(metrics.clone()),
        ItemFastSlowRateLimiter::new(MS, Duration::from_secs(1), 1),
    );
    queue.add_rate_limited(1);
    queue.add_rate_limited(2);
    assert_eq!(metrics.snapshot().retries, 2);
}

#[tokio::test(start_paused = true)]
async fn add_rate_limited_after_shutdown_is_ignored() {
    let queue = WorkQueue::new();
    queue.shutdown();
    queue.add_rate_limited("a");
    assert_eq!(queue.num_requeues(&"a"), 0);
    assert_eq!(queue.waiting_len(), 0);
    assert_eq!(queue.get().await, None);
}

// ---------------------------------------------------------------------------------------
// Priorities

#[tokio::test]
async fn higher_priorities_are_handed_out_first_fifo_within_one() {
    let queue = WorkQueue::new();
    queue.add_with_priority("listed-1", Priority::LOW);
    queue.add("changed-1");
    queue.add_with_priority("listed-2", Priority::LOW);
    queue.add_with_priority("urgent", Priority::new(10));
    queue.add("changed-2");
    assert_eq!(queue.len(), 5);
    let mut order = Vec::new();
    for _ in 0..5 {
        order.push(queue.get_with_priority().await.unwrap());
    }
    assert!(queue.is_empty());
    assert_eq!(
        order,
        [
            ("urgent", Priority::new(10)),
            ("changed-1", Priority::NORMAL),
            ("changed-2", Priority::NORMAL),
            ("listed-1", Priority::LOW),
            ("listed-2", Priority::LOW),
        ]
    );
}

#[tokio::test]
async fn a_queued_item_moves_up_once_and_never_down() {
    let queue = WorkQueue::new();
    queue.add_with_priority("a", Priority::LOW);
    queue.add_with_priority("b", Priority::LOW);
    queue.add("c");
    queue.add("b"); // a real change to a backlog item: it moves up
    queue.add_with_priority("c", Priority::LOW); // never down
    assert_eq!(queue.len(), 3, "moving up queues nothing twice");
    assert_eq!(
        queue.get_with_priority().await,
        Some(("c", Priority::NORMAL))
    );
    assert_eq!(
        queue.get_with_priority().await,
        Some(("b", Priority::NORMAL))
    );
    assert_eq!(queue.get_with_priority().await, Some(("a", Priority::LOW)));
    assert!(queue.is_empty());
    assert!(
        gets_nothing(&queue).await,
        "b's old entry is not handed out"
    );
}

#[tokio::test(start_paused = true)]
async fn an_item_added_while_processing_comes_back_at_its_highest_priority() {
    let queue = WorkQueue::new();
    queue.add_with_priority("a", Priority::LOW);
    queue.add_with_priority("b", Priority::LOW);
    let (a, _) = queue.get_with_priority().await.unwrap();
    queue.add_with_priority("a", Priority::LOW);
    queue.add("a"); // dirty while processing: its priority still rises
    queue.done(&a);
    assert_eq!(
        queue.get_with_priority().await,
        Some(("a", Priority::NORMAL))
    );
    assert_eq!(queue.get_with_priority().await, Some(("b", Priority::LOW)));
}

#[tokio::test(start_paused = true)]
async fn delayed_and_rate_limited_adds_keep_their_priority() {
    let queue = WorkQueue::new();
    queue.add_after_with_priority("later", SECOND, Priority::LOW);
    queue.add_rate_limited_with_priority("retry", Priority::LOW);
    queue.add_after("plain", SECOND);
    advance(2 * SECOND).await;
    assert_eq!(queue.len(), 3);
    assert_eq!(
        queue.get_with_priority().await,
        Some(("plain", Priority::NORMAL))
    );
    assert_eq!(
        queue.get_with_priority().await,
        Some(("retry", Priority::LOW))
    );
    assert_eq!(
        queue.get_with_priority().await,
        Some(("later", Priority::LOW))
    );
}

/// A steady stream of changes never starves the backlog: while two workers keep
/// the queue full of new changes, every backlog item is still handed out, about one
/// in every eight items, and every change too.
#[tokio::test(start_paused = true)]
async fn a_steady_stream_of_changes_does_not_starve_the_backlog() {
    const BACKLOG: usize = 100;
    let queue = WorkQueue::new();
    for i in 0..BACKLOG {
        queue.add_with_priority(format!("listed-{i}"), Priority::LOW);
    }
    // Each item handed out brings a new change, so changes are always waiting.
    let mut next_change = 0;
    for _ in 0..4 {
        queue.add(format!("change-{next_change}"));
        next_change += 1;
    }
    let mut handed_out = Vec::new();
    let mut backlog_left = BACKLOG;
    while backlog_left > 0 {
        let (item, priority) = queue.get_with_priority().await.unwrap();
        if priority == Priority::LOW {
            backlog_left -= 1;
        }
        queue.done(&item);
        handed_out.push(item);
        queue.add(format!("change-{next_change}"));
        next_change += 1;
        assert!(
            handed_out.len() <= BACKLOG * 8,
            "the backlog is starved: {backlog_left} left after {} items",
            handed_out.len()
        );
    }
    assert_eq!(handed_out.len(), BACKLOG * 8, "one backlog item in eight");
    // Every change handed out came in the order it was made.
    let changes: Vec<usize> = handed_out
        .iter()
        .filter_map(|item| item.strip_prefix("change-")?.parse().ok())
        .collect();
    assert_eq!(changes, (0..changes.len()).collect::<Vec<_>>());
}

// ---------------------------------------------------------------------------------------
// Concurrency stress

/// Many workers, many producers, random adds: no item is ever processed by two
/// workers at once, and every add is followed by a processing that saw it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stress_no_item_processed_concurrently_and_none_lost() {
    stress(false).await;
}

/// The same with random priorities, so items move up while queued and while being
/// processed: still never two workers on one item, and no add lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stress_with_priorities_no_item_processed_concurrently_and_none_lost() {
    stress(true).await;
}

async fn stress(priorities: bool) {
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
                    if priorities {
                        queue.add_with_priority(item, Priority::new(rng.random_range(-2..=2)));
                    } else {
                        queue.add(item);
                    }
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
