//! The one view the factory has of its informers, whatever their type: run, sync
//! state, last error, a downcast to the concrete informer, and (feature `metrics`) a
//! sample for the scrape.

use std::any::Any;

use futures::future::BoxFuture;
use tokio::sync::watch;

use crate::object::Object;
use crate::reflector::SyncError;
use crate::shared_informer::{HasSynced, SharedIndexInformer};

/// What the factory needs of an informer of any type.
pub(super) trait ManagedInformer: HasSynced {
    fn run(&self, shutdown: watch::Receiver<bool>) -> BoxFuture<'static, ()>;
    fn last_sync_error(&self) -> Option<SyncError>;
    fn as_any(&self) -> &dyn Any;
    #[cfg(feature = "metrics")]
    fn sample(&self, name: &str) -> crate::metrics::InformerSample;
}

impl<K> ManagedInformer for SharedIndexInformer<K>
where
    K: Object + Send + Sync + 'static,
{
    fn run(&self, mut shutdown: watch::Receiver<bool>) -> BoxFuture<'static, ()> {
        let informer = self.clone();
        Box::pin(async move {
            let stop = async move {
                let _ = shutdown.wait_for(|stop| *stop).await;
            };
            if let Err(error) = informer.run(stop).await {
                tracing::error!(%error, "informer did not run");
            }
        })
    }

    fn last_sync_error(&self) -> Option<SyncError> {
        SharedIndexInformer::last_sync_error(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    #[cfg(feature = "metrics")]
    fn sample(&self, name: &str) -> crate::metrics::InformerSample {
        crate::metrics::InformerSample::of(name.to_owned(), self)
    }
}
