//! What both queues do alike, written once: how a pop waits, takes a batch and wakes
//! the next, closing, and the synced flag. Each queue states only what it holds (its
//! [`QueueState`]) and what its batches hand out.

use std::sync::{Mutex, MutexGuard};

use tokio::sync::Notify;

use crate::lock::MutexExt;

/// What the shared bodies need to know of a queue's state.
pub(super) trait QueueState {
    /// How many entries are queued (changes, or keys).
    fn len(&self) -> usize;
    /// `close` was called.
    fn is_closed(&self) -> bool;
    /// Marks the queue closed.
    fn set_closed(&mut self);
    /// Whether the initial list has been delivered (see each queue's `has_synced`).
    fn has_synced(&self) -> bool;
    /// How many pops are waiting: producers wake one only if there is one.
    fn waiters_mut(&mut self) -> &mut usize;

    /// Nothing is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A batch taken out is being processed outside the lock: the next pop waits for
    /// it, so that batches are processed one at a time and in order.
    fn is_busy(&self) -> bool {
        false
    }

    /// Whether a producer should wake a waiting pop.
    fn wake_needed(&mut self) -> bool {
        *self.waiters_mut() > 0 && !self.is_empty() && !self.is_busy()
    }
}

/// Releases the lock, then wakes a waiting pop if there is one and something to pop.
pub(super) fn release_and_wake<S: QueueState>(mut state: MutexGuard<'_, S>, notify: &Notify) {
    let wake = state.wake_needed();
    drop(state);
    if wake {
        notify.notify_one();
    }
}

/// Waits until the queue holds something (and no batch taken out is still being
/// processed), then calls `run` with its locked state and
/// returns what `run` returns; `None` once the queue is closed and empty (what is
/// still queued at `close` is handed out first, client-go's rule). Cancel-safe: a
/// dropped wait unregisters itself and loses nothing.
pub(super) async fn when_ready<'a, S: QueueState, T>(
    mutex: &'a Mutex<S>,
    notify: &'a Notify,
    run: impl FnOnce(MutexGuard<'a, S>) -> T,
) -> Option<T> {
    /// Keeps the waiter count right when a waiting pop is dropped.
    struct Registered<'a, S: QueueState> {
        mutex: &'a Mutex<S>,
        registered: bool,
    }
    impl<S: QueueState> Drop for Registered<'_, S> {
        fn drop(&mut self) {
            if self.registered {
                *self.mutex.locked().waiters_mut() -= 1;
            }
        }
    }

    let mut waiting = Registered {
        mutex,
        registered: false,
    };
    loop {
        let notified = {
            let mut state = mutex.locked();
            if std::mem::take(&mut waiting.registered) {
                *state.waiters_mut() -= 1;
            }
            if !state.is_busy() {
                if !state.is_empty() {
                    return Some(run(state));
                }
                if state.is_closed() {
                    return None;
                }
            }
            *state.waiters_mut() += 1;
            waiting.registered = true;
            notify.notified()
        };
        notified.await;
    }
}

/// Waits until the queue holds something, then calls `run` with its state (to hand a
/// batch out); returns what `run` returns and whether the queue is empty after it,
/// `None` once the queue is closed and empty. Wakes the next waiting pop if something
/// is left.
pub(super) async fn pop_batch<S: QueueState, T>(
    mutex: &Mutex<S>,
    notify: &Notify,
    run: impl FnOnce(&mut S) -> T,
) -> Option<(T, bool)> {
    when_ready(mutex, notify, |mut state| {
        let value = run(&mut state);
        let drained = state.is_empty();
        release_and_wake(state, notify);
        (value, drained)
    })
    .await
}

/// Closes the queue and wakes every waiting pop, registered so far, polled or not.
pub(super) fn close<S: QueueState>(mutex: &Mutex<S>, notify: &Notify) {
    mutex.locked().set_closed();
    notify.notify_waiters();
}
