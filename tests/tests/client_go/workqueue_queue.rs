//! client-go: util/workqueue/queue_test.go

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use informer::workqueue::WorkQueue;

use crate::support::WAIT;

/// `get` with a deadline, so a broken queue fails the test instead of hanging it.
async fn get<T: std::hash::Hash + Eq + Clone + Send + Sync + 'static>(
    queue: &WorkQueue<T>,
) -> Option<T> {
    tokio::time::timeout(WAIT, queue.get())
        .await
        .expect("get returned in time")
}

// client-go: queue_test.go TestBasic
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic() {
    const PRODUCERS: usize = 50;
    const CONSUMERS: usize = 10;
    let queue: WorkQueue<usize> = WorkQueue::new();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move {
                for i in 0..50 {
                    queue.add(i);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            })
        })
        .collect();
    let seen = Arc::new(Mutex::new(HashSet::new()));
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let queue = queue.clone();
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                while let Some(item) = queue.get().await {
                    seen.lock().unwrap().insert(item);
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    queue.done(&item);
                }
            })
        })
        .collect();
    for producer in producers {
        producer.await.unwrap();
    }
    queue.shutdown();
    // Consumers drain what is queued and then see the shutdown.
    for consumer in consumers {
        tokio::time::timeout(WAIT, consumer).await.unwrap().unwrap();
    }
    assert_eq!(queue.len(), 0);
    assert_eq!(seen.lock().unwrap().len(), 50, "every item was handed out");
}

// client-go: queue_test.go TestAddWhileProcessing
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_while_processing() {
    const PRODUCERS: usize = 50;
    const CONSUMERS: usize = 10;
    let queue: WorkQueue<usize> = WorkQueue::new();
    for i in 0..PRODUCERS {
        queue.add(i);
    }
    // Each consumer adds every item it sees a second time while processing it; each
    // item must come out exactly twice, never to two workers at once.
    let counts = Arc::new(Mutex::new(std::collections::HashMap::<usize, usize>::new()));
    let in_flight = Arc::new(Mutex::new(HashSet::new()));
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| {
            let queue = queue.clone();
            let counts = Arc::clone(&counts);
            let in_flight = Arc::clone(&in_flight);
            tokio::spawn(async move {
                while let Some(item) = queue.get().await {
                    assert!(
                        in_flight.lock().unwrap().insert(item),
                        "{item} twice at once"
                    );
                    let times = {
                        let mut counts = counts.lock().unwrap();
                        let n = counts.entry(item).or_default();
                        *n += 1;
                        *n
                    };
                    if times == 1 {
                        queue.add(item);
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    in_flight.lock().unwrap().remove(&item);
                    queue.done(&item);
                }
            })
        })
        .collect();
    crate::common::eventually("every item processed twice", WAIT, || {
        let counts = counts.lock().unwrap();
        counts.len() == PRODUCERS && counts.values().all(|&n| n == 2)
    })
    .await;
    queue.shutdown();
    for consumer in consumers {
        tokio::time::timeout(WAIT, consumer).await.unwrap().unwrap();
    }
    assert!(counts.lock().unwrap().values().all(|&n| n == 2));
}

// client-go: queue_test.go TestLen
#[tokio::test]
async fn len() {
    let queue = WorkQueue::new();
    queue.add("foo");
    assert_eq!(queue.len(), 1);
    queue.add("bar");
    assert_eq!(queue.len(), 2);
    queue.add("foo"); // already queued
    assert_eq!(queue.len(), 2);
}

// client-go: queue_test.go TestReinsert
#[tokio::test]
async fn reinsert() {
    let queue = WorkQueue::new();
    queue.add("foo");
    // Start processing, add it again, finish: it is queued again.
    let item = get(&queue).await.unwrap();
    queue.add(item);
    queue.done(&item);
    assert_eq!(get(&queue).await, Some("foo"));
    queue.done(&"foo");
    assert_eq!(queue.len(), 0);
}

// client-go: queue_test.go TestCollapse
#[tokio::test]
async fn collapse() {
    let queue = WorkQueue::new();
    // Added twice before anyone got it: handed out once.
    queue.add("bar");
    queue.add("bar");
    let item = get(&queue).await.unwrap();
    assert_eq!(item, "bar");
    queue.done(&item);
    assert_eq!(queue.len(), 0);
}

// client-go: queue_test.go TestCollapseWhileProcessing
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collapse_while_processing() {
    let queue = WorkQueue::new();
    queue.add("foo");
    let first = get(&queue).await.unwrap();
    // Added twice while processing: one more round, not two.
    queue.add("foo");
    queue.add("foo");
    let other_worker = {
        let queue = queue.clone();
        tokio::spawn(async move {
            let item = queue.get().await.unwrap();
            queue.done(&item);
            item
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !other_worker.is_finished(),
        "not handed out while being processed"
    );
    queue.done(&first);
    let again = tokio::time::timeout(WAIT, other_worker)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again, "foo");
    assert_eq!(queue.len(), 0, "the two adds collapsed into one");
}

// client-go: queue_test.go TestQueueDrainageUsingShutDownWithDrain
#[tokio::test]
async fn drainage_using_shutdown_with_drain() {
    let queue = WorkQueue::new();
    queue.add("foo");
    queue.add("bar");
    let first = get(&queue).await.unwrap();
    let second = get(&queue).await.unwrap();
    let drain = tokio::spawn({
        let queue = queue.clone();
        async move { queue.shutdown_with_drain().await }
    });
    while get(&queue).await.is_some() {}
    tokio::task::yield_now().await;
    assert!(
        !drain.is_finished(),
        "the drain waits for the items in flight"
    );
    queue.done(&first);
    queue.done(&second);
    tokio::time::timeout(WAIT, drain).await.unwrap().unwrap();
}

// client-go: queue_test.go TestNoQueueDrainageUsingShutDown
#[tokio::test]
async fn no_drainage_using_shutdown() {
    let queue = WorkQueue::new();
    queue.add("foo");
    queue.add("bar");
    get(&queue).await.unwrap();
    get(&queue).await.unwrap();
    // Returns at once, with both items still in flight.
    queue.shutdown();
    assert!(queue.is_shutting_down());
    assert_eq!(get(&queue).await, None);
}

// client-go: queue_test.go TestForceQueueShutdownUsingShutDown
#[tokio::test]
async fn force_shutdown_using_shutdown() {
    let queue = WorkQueue::new();
    queue.add("foo");
    queue.add("bar");
    get(&queue).await.unwrap();
    get(&queue).await.unwrap();
    let drain = tokio::spawn({
        let queue = queue.clone();
        async move { queue.shutdown_with_drain().await }
    });
    while get(&queue).await.is_some() {}
    // A plain shutdown (a second Ctrl-C) calls the drain off: it returns without any
    // item being done.
    queue.shutdown();
    tokio::time::timeout(WAIT, drain).await.unwrap().unwrap();
}

// client-go: queue_test.go TestQueueDrainageUsingShutDownWithDrainWithDirtyItem
#[tokio::test]
async fn drainage_with_dirty_item() {
    let queue = WorkQueue::new();
    queue.add("foo");
    let gotten = get(&queue).await.unwrap();
    queue.add("foo"); // dirty: added again while processing
    let drain = tokio::spawn({
        let queue = queue.clone();
        async move { queue.shutdown_with_drain().await }
    });
    while !queue.is_shutting_down() {
        tokio::task::yield_now().await;
    }
    assert_eq!(queue.len(), 0);
    queue.done(&gotten);
    // The dirty item is queued again by done, and handed out although shutting down.
    assert_eq!(get(&queue).await, Some("foo"));
    queue.done(&"foo");
    assert_eq!(get(&queue).await, None, "now really done");
    tokio::time::timeout(WAIT, drain).await.unwrap().unwrap();
}

// client-go: queue_test.go TestGarbageCollection
#[tokio::test]
async fn garbage_collection() {
    let queue: WorkQueue<Arc<String>> = WorkQueue::new();
    let big = Arc::new("hello".to_owned());
    let weak = Arc::downgrade(&big);
    queue.add(big);
    let item = get(&queue).await.unwrap();
    queue.done(&item);
    drop(item);
    // The queue keeps nothing of an item once it is done.
    assert!(weak.upgrade().is_none(), "the queue still holds the item");
    drop(queue);
}
