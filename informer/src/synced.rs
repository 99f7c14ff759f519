//! Whether something has received its initial list ([`HasSynced`]), and waiting until
//! it has (client-go's `WaitForCacheSync`). Informers, registrations, subscriptions,
//! FIFOs, listers and factories all answer it, so it sits on the ground floor; its
//! public path is [`crate::shared_informer`].

use std::time::Duration;

use futures::future::BoxFuture;

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
/// [`last_sync_error`](crate::shared_informer::SharedIndexInformer::last_sync_error) (and in its logs);
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
