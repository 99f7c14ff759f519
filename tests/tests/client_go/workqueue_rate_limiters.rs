//! client-go: util/workqueue/default_rate_limiters_test.go

use std::time::Duration;

use informer::workqueue::{
    ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter,
};

const MS: Duration = Duration::from_millis(1);

// client-go: default_rate_limiters_test.go TestItemExponentialFailureRateLimiter
#[test]
fn item_exponential_failure_rate_limiter() {
    let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
    for expected in [1, 2, 4, 8, 16] {
        assert_eq!(limiter.when(&"one"), expected * MS);
    }
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two"), MS);
    assert_eq!(limiter.when(&"two"), 2 * MS);
    assert_eq!(limiter.num_requeues(&"two"), 2);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), MS);
}

// client-go: default_rate_limiters_test.go TestItemExponentialFailureRateLimiterOverFlow
#[test]
fn item_exponential_failure_rate_limiter_overflow() {
    let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1000));
    for _ in 0..5 {
        limiter.when(&"one");
    }
    assert_eq!(limiter.when(&"one"), 32 * MS);
    // So many failures that 2^n overflows: the cap, not a wrap-around.
    for _ in 0..1000 {
        limiter.when(&"overflow1");
    }
    assert_eq!(limiter.when(&"overflow1"), Duration::from_secs(1000));

    let minute = Duration::from_secs(60);
    let limiter = ItemExponentialFailureRateLimiter::new(minute, 1000 * 60 * minute);
    for _ in 0..2 {
        limiter.when(&"two");
    }
    assert_eq!(limiter.when(&"two"), 4 * minute);
    for _ in 0..1000 {
        limiter.when(&"overflow2");
    }
    assert_eq!(limiter.when(&"overflow2"), 1000 * 60 * minute);
}

// client-go: default_rate_limiters_test.go TestItemFastSlowRateLimiter
#[test]
fn item_fast_slow_rate_limiter() {
    let limiter = ItemFastSlowRateLimiter::new(5 * MS, Duration::from_secs(10), 3);
    for _ in 0..3 {
        assert_eq!(limiter.when(&"one"), 5 * MS);
    }
    for _ in 0..2 {
        assert_eq!(limiter.when(&"one"), Duration::from_secs(10));
    }
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.num_requeues(&"two"), 2);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), 5 * MS);
}

// client-go: default_rate_limiters_test.go TestMaxOfRateLimiter
#[test]
fn max_of_rate_limiter() {
    let limiter = MaxOfRateLimiter::new(Vec::new())
        .with(ItemFastSlowRateLimiter::new(
            5 * MS,
            Duration::from_secs(3),
            3,
        ))
        .with(ItemExponentialFailureRateLimiter::new(
            MS,
            Duration::from_secs(1),
        ));
    for _ in 0..3 {
        assert_eq!(limiter.when(&"one"), 5 * MS);
    }
    for _ in 0..2 {
        assert_eq!(limiter.when(&"one"), Duration::from_secs(3));
    }
    assert_eq!(limiter.num_requeues(&"one"), 5);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.when(&"two"), 5 * MS);
    assert_eq!(limiter.num_requeues(&"two"), 2);
    limiter.forget(&"one");
    assert_eq!(limiter.num_requeues(&"one"), 0);
    assert_eq!(limiter.when(&"one"), 5 * MS);
}
