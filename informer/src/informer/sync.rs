//! Waiting until caches are filled (client-go's `WaitForCacheSync`).

use std::time::Duration;

/// Anything that knows whether it has received its initial list: informers,
/// registrations, subscriptions, DeltaFIFOs.
pub trait HasSynced {
    /// Whether the initial list has been delivered.
    fn has_synced(&self) -> bool;
}

impl<T: HasSynced + ?Sized> HasSynced for &T {
    fn has_synced(&self) -> bool {
        (**self).has_synced()
    }
}

impl<T: HasSynced + ?Sized> HasSynced for std::sync::Arc<T> {
    fn has_synced(&self) -> bool {
        (**self).has_synced()
    }
}

/// How often [`wait_for_cache_sync`] checks (client-go polls every 100 ms; checks
/// are a few atomic loads, so we look more often).
const POLL: Duration = Duration::from_millis(10);

/// Waits until every item has synced. Wrap it in `tokio::time::timeout` or race it
/// with a shutdown signal to give up; it never gives up by itself.
///
/// ```no_run
/// # async fn demo(
/// #     pods: informer::informer::SharedIndexInformer<k8s_openapi::api::core::v1::Pod>,
/// #     registration: informer::informer::Registration<k8s_openapi::api::core::v1::Pod>,
/// # ) {
/// use informer::informer::wait_for_cache_sync;
/// wait_for_cache_sync(&[&pods as &dyn informer::informer::HasSynced, &registration]).await;
/// # }
/// ```
pub async fn wait_for_cache_sync(items: &[&dyn HasSynced]) {
    while !items.iter().all(|item| item.has_synced()) {
        tokio::time::sleep(POLL).await;
    }
}
