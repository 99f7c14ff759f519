//! client-go: util/workqueue/delaying_queue_test.go (paused tokio time stands in for
//! the fake clock).

use std::time::Duration;

use informer::workqueue::WorkQueue;
use tokio::time::advance;

const MS: Duration = Duration::from_millis(1);

// client-go: delaying_queue_test.go TestSimpleQueue
#[tokio::test(start_paused = true)]
async fn simple_queue() {
    let queue = WorkQueue::new();
    queue.add_after("foo", 50 * MS);
    assert_eq!(queue.len(), 0, "not ready before its delay");
    advance(60 * MS).await;
    assert_eq!(queue.len(), 1);
    let item = queue.get().await.unwrap();
    assert_eq!(item, "foo");
    queue.done(&item);
    // Nothing is left waiting either.
    advance(10 * 1000 * MS).await;
    assert_eq!(queue.len(), 0);
    assert_eq!(queue.waiting_len(), 0);
}

// client-go: delaying_queue_test.go TestDeduping
#[tokio::test(start_paused = true)]
async fn deduping() {
    let queue = WorkQueue::new();
    queue.add_after("foo", 50 * MS);
    queue.add_after("foo", 70 * MS); // later: ignored
    assert_eq!(queue.waiting_len(), 1);
    advance(60 * MS).await;
    assert_eq!(queue.len(), 1, "ready at the first, earlier deadline");
    let item = queue.get().await.unwrap();
    queue.done(&item);
    advance(20 * MS).await;
    assert_eq!(queue.len(), 0, "the later add did not fire a second time");

    // An earlier deadline moves a waiting item forward.
    queue.add_after("foo", 70 * MS);
    queue.add_after("foo", 50 * MS);
    advance(60 * MS).await;
    assert_eq!(queue.len(), 1);
    let item = queue.get().await.unwrap();
    queue.done(&item);
    advance(20 * MS).await;
    assert_eq!(queue.len(), 0);
}

// client-go: delaying_queue_test.go TestAddTwoFireEarly
#[tokio::test(start_paused = true)]
async fn add_two_fire_early() {
    let queue = WorkQueue::new();
    queue.add_after("foo", 1000 * MS);
    queue.add_after("bar", 50 * MS);
    advance(60 * MS).await;
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await, Some("bar"));
    // foo is asked for sooner now: the earlier deadline wins.
    queue.add_after("foo", 50 * MS);
    advance(60 * MS).await;
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.get().await, Some("foo"));
}

// client-go: delaying_queue_test.go TestCopyShifting
#[tokio::test(start_paused = true)]
async fn copy_shifting() {
    let queue = WorkQueue::new();
    queue.add_after("foo", 1000 * MS);
    queue.add_after("bar", 500 * MS);
    queue.add_after("baz", 250 * MS);
    assert_eq!(queue.len(), 0);
    advance(2000 * MS).await;
    assert_eq!(queue.len(), 3);
    // Handed out in deadline order, whatever the order they were added in.
    for expected in ["baz", "bar", "foo"] {
        assert_eq!(queue.get().await, Some(expected));
    }
}
