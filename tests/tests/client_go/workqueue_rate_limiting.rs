//! client-go: util/workqueue/rate_limiting_queue_test.go

use std::time::Duration;

use informer::workqueue::{ItemExponentialFailureRateLimiter, WorkQueue};
use tokio::time::advance;

const MS: Duration = Duration::from_millis(1);

// client-go: rate_limiting_queue_test.go TestRateLimitingQueue
#[tokio::test(start_paused = true)]
async fn rate_limiting_queue() {
    let queue = WorkQueue::with_rate_limiter(ItemExponentialFailureRateLimiter::new(
        MS,
        Duration::from_secs(1),
    ));
    queue.add_rate_limited("one");
    assert_eq!(queue.waiting_len(), 1);
    queue.add_rate_limited("one"); // a 2 ms delay; the 1 ms one already waits
    assert_eq!(queue.num_requeues(&"one"), 2);
    queue.add_rate_limited("two");
    queue.add_rate_limited("two");
    assert_eq!(queue.waiting_len(), 2);
    // Each retry waits for its first (1 ms) deadline.
    advance(MS).await;
    assert_eq!(queue.len(), 2);
    assert_eq!(queue.waiting_len(), 0);

    // Forget clears the history: the next retry waits the base delay again.
    queue.forget(&"one");
    assert_eq!(queue.num_requeues(&"one"), 0);
    let one = queue.get().await.unwrap();
    queue.done(&one);
    queue.add_rate_limited("one");
    assert_eq!(queue.num_requeues(&"one"), 1);
    advance(MS - Duration::from_micros(1)).await;
    assert_eq!(queue.len(), 1, "only two is ready before 1 ms");
    advance(Duration::from_micros(1)).await;
    assert_eq!(queue.len(), 2);
}
