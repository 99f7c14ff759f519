//! client-go: tools/cache/wait_test.go (WaitFor is our `wait_for_cache_sync`, raced
//! against a timeout or a cancellation; paused time stands in for synctest)

use std::time::Duration;

use informer::shared_informer::{HasSynced, wait_for_cache_sync};
use tokio::time::Instant;

/// client-go's `mockChecker`: synced `delay` after creation, or never (`None`).
struct Checker {
    ready_at: Option<Instant>,
}

impl Checker {
    fn after(delay: Duration) -> Self {
        Self {
            ready_at: Some(Instant::now() + delay),
        }
    }

    fn never() -> Self {
        Self { ready_at: None }
    }
}

impl HasSynced for Checker {
    fn has_synced(&self) -> bool {
        self.ready_at.is_some_and(|at| Instant::now() >= at)
    }
}

/// Whether every checker synced before `limit`.
async fn wait_for(checkers: &[Checker], limit: Duration) -> bool {
    let items: Vec<&dyn HasSynced> = checkers.iter().map(|c| c as &dyn HasSynced).collect();
    tokio::time::timeout(limit, wait_for_cache_sync(&items))
        .await
        .is_ok()
}

const SECOND: Duration = Duration::from_secs(1);

// client-go: wait_test.go TestWaitFor "empty"
#[tokio::test(start_paused = true)]
async fn wait_for_empty() {
    assert!(wait_for(&[], Duration::ZERO).await);
}

// client-go: wait_test.go TestWaitFor "no-logging"
#[tokio::test(start_paused = true)]
async fn wait_for_all_sync_in_time() {
    let start = Instant::now();
    let checkers = [
        Checker::after(10 * SECOND),
        Checker::after(5 * SECOND),
        Checker::after(Duration::ZERO),
    ];
    assert!(wait_for(&checkers, Duration::from_secs(3600)).await);
    // Done when the last one synced, not before.
    assert!(start.elapsed() >= 10 * SECOND);
}

// client-go: wait_test.go TestWaitFor "some-timeout"
#[tokio::test(start_paused = true)]
async fn wait_for_some_timeout() {
    let checkers = [
        Checker::after(10 * SECOND),
        Checker::never(),
        Checker::after(Duration::ZERO),
    ];
    assert!(!wait_for(&checkers, 60 * SECOND).await);
}

// client-go: wait_test.go TestWaitFor "some-canceled"
#[tokio::test(start_paused = true)]
async fn wait_for_some_canceled() {
    let checkers = [
        Checker::after(10 * SECOND),
        Checker::never(),
        Checker::after(Duration::ZERO),
    ];
    // Cancelled at once: polled a single time, the wait is not done, since one
    // checker never syncs (the ready ones do not make it done).
    let items: Vec<&dyn HasSynced> = checkers.iter().map(|c| c as &dyn HasSynced).collect();
    let done = futures::FutureExt::now_or_never(wait_for_cache_sync(&items));
    assert!(done.is_none());
}

// client-go: wait_test.go TestWaitFor "all"
#[tokio::test(start_paused = true)]
async fn wait_for_none_synced() {
    let checkers = [Checker::never(), Checker::never(), Checker::never()];
    assert!(!wait_for(&checkers, 60 * SECOND).await);
}
