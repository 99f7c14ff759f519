//! Waiting until caches are filled (client-go's `WaitForCacheSync`), woken by the
//! informer as it syncs rather than by polling.

use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::Notify;

/// Anything that knows whether it has received its initial list: informers,
/// registrations, subscriptions, DeltaFIFOs, factories.
pub trait HasSynced: Send + Sync {
    /// Whether the initial list has been delivered.
    fn has_synced(&self) -> bool;

    /// Completes once [`has_synced`](Self::has_synced) is true. Informers,
    /// registrations and subscriptions complete as soon as they sync (they are
    /// notified); the default implementation checks every 10 ms.
    fn synced(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            while !self.has_synced() {
                tokio::time::sleep(POLL).await;
            }
        })
    }
}

impl<T: HasSynced + ?Sized> HasSynced for &T {
    fn has_synced(&self) -> bool {
        (**self).has_synced()
    }

    fn synced(&self) -> BoxFuture<'_, ()> {
        (**self).synced()
    }
}

impl<T: HasSynced + ?Sized> HasSynced for std::sync::Arc<T> {
    fn has_synced(&self) -> bool {
        (**self).has_synced()
    }

    fn synced(&self) -> BoxFuture<'_, ()> {
        (**self).synced()
    }
}

/// How often the default [`HasSynced::synced`] checks (client-go polls every 100 ms;
/// checks are a few atomic loads, so it looks more often).
const POLL: Duration = Duration::from_millis(10);

/// Waits until every item has synced. Wrap it in `tokio::time::timeout` or race it
/// with a shutdown signal to give up; it never gives up by itself. An informer that
/// does not sync says why in
/// [`last_sync_error`](super::SharedIndexInformer::last_sync_error) (and in its logs);
/// [`SharedInformerFactory::wait_for_cache_sync_within`](crate::factory::SharedInformerFactory::wait_for_cache_sync_within)
/// gives up by itself and reports it.
///
/// ```no_run
/// # async fn demo(
/// #     pods: informer::shared_informer::SharedIndexInformer<k8s_openapi::api::core::v1::Pod>,
/// #     registration: informer::shared_informer::Registration<k8s_openapi::api::core::v1::Pod>,
/// # ) {
/// use informer::shared_informer::wait_for_cache_sync;
/// wait_for_cache_sync(&[&pods as &dyn informer::shared_informer::HasSynced, &registration]).await;
/// # }
/// ```
pub async fn wait_for_cache_sync(items: &[&dyn HasSynced]) {
    futures::future::join_all(items.iter().map(|item| item.synced())).await;
}

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
