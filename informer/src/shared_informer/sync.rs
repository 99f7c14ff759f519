//! The informer's side of waiting until caches are filled: [`SyncSignal`] wakes the
//! waiters of [`HasSynced::synced`](crate::synced::HasSynced::synced) as the informer
//! syncs, rather than having them poll.

use tokio::sync::Notify;

/// Wakes the waiters of an informer's [`HasSynced::synced`] (and its registrations')
/// when something may have synced: the initial list was applied, or a handler has
/// handled its initial list. Waiters re-check their own condition.
#[derive(Debug, Default)]
pub(crate) struct SyncSignal {
    notify: Notify,
}

impl SyncSignal {
    /// Wakes every current waiter.
    pub(crate) fn announce(&self) {
        self.notify.notify_waiters();
    }

    /// Completes once `synced` returns true, checking it at first and after each
    /// [`announce`](Self::announce).
    pub(crate) async fn wait_until(&self, synced: impl Fn() -> bool) {
        loop {
            let notified = self.notify.notified();
            let mut notified = std::pin::pin!(notified);
            // Registered before the check, so an announcement between the check and
            // the wait is not lost.
            notified.as_mut().enable();
            if synced() {
                return;
            }
            notified.await;
        }
    }
}
