//! SharedInformerFactory: one informer per type (and selection), shared by all who ask.
//!
//! client-go's `SharedInformerFactory`, generic instead of generated:
//! `factory.informer::<Deployment>()` returns the same informer every time it is
//! asked, so every controller in a process shares one watch and one cache per type.
//! Informers are keyed by (type, namespace, label selector, field selector, key
//! filter): [`SharedInformerFactory::informer_for`] asks for one with another
//! [`Selection`], such as one that keeps only a shard's objects ([`Selection::filtered`]).
//! [`informable`](SharedInformerFactory::informable) and
//! [`informable_for`](SharedInformerFactory::informable_for) share the same informers
//! and make them maintain an [`Informable`](crate::informable::Informable) type's key function and indexes.
//!
//! Beside full typed informers it makes metadata-only ones
//! ([`metadata_informer::<Pod>()`](SharedInformerFactory::metadata_informer): the server
//! sends, and the cache holds, only each object's `metadata`) and dynamic ones
//! ([`dynamic_informer(&resource)`](SharedInformerFactory::dynamic_informer), for a
//! resource known only at run time; see [`crate::dynamic`]), each shared the same way
//! and each its own entry: a full, a metadata-only and a dynamic informer of ConfigMaps
//! are three informers. Per-type settings address them by their object type
//! ([`ByObject`]`<PartialObjectMeta<Pod>>`, [`ByObject`]`<DynamicObject>`).
//!
//! [`start`](SharedInformerFactory::start) runs every informer not yet running (call
//! it again after asking for more), [`wait_for_cache_sync`](SharedInformerFactory::wait_for_cache_sync)
//! waits for them, and [`shutdown`](SharedInformerFactory::shutdown) stops them all and
//! waits until every task and handler thread has ended.
//!
//! Nothing fails silently: waiting for an informer that was never started is an error
//! that names it ([`CacheSyncError::NotStarted`]), and
//! [`wait_for_cache_sync_within`](SharedInformerFactory::wait_for_cache_sync_within)
//! gives up after a while with, for each informer not synced, why its last list
//! failed ([`CacheSyncError::TimedOut`]): a CRD that is not installed
//! (`backups.example.com is not served by the API server`), a server that cannot be
//! reached (named by its address: make the factory with
//! [`from_config`](SharedInformerFactory::from_config) for the configured one), access
//! denied. The informers also log each such failure, at warn level, once per streak.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use informer::factory::{FactoryConfig, SharedInformerFactory};
//! use k8s_openapi::api::apps::v1::Deployment;
//! use std::time::Duration;
//!
//! let factory = SharedInformerFactory::new(
//!     client,
//!     FactoryConfig::default()
//!         .namespace("default")
//!         .default_resync(Duration::from_secs(600))
//!         // Every type: drop kubectl's copy of the last applied object before
//!         // caching (managedFields are already left out by default).
//!         .transform_metadata(|meta| {
//!             if let Some(annotations) = &mut meta.annotations {
//!                 annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
//!             }
//!         }),
//! );
//! let deployments = factory.informer::<Deployment>();
//! factory.start();
//! // An error names each informer not synced after a minute, and why.
//! factory.wait_for_cache_sync_within(Duration::from_secs(60)).await?;
//! println!("{} deployments", deployments.lister().namespaced("default").list_all().len());
//! factory.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod cacheable;
mod config;
mod dynamic;
mod managed;
mod metadata;
#[cfg(feature = "metrics")]
mod metrics_view;
mod selection;
mod shared_informer_factory;
mod state;
mod sync_error;

pub use cacheable::Cacheable;
pub use config::{ByObject, FactoryConfig};
pub(crate) use selection::NamedKeyFilter;
pub use selection::Selection;
pub use shared_informer_factory::SharedInformerFactory;
pub use sync_error::{CacheSyncError, Unsynced};

#[cfg(test)]
mod tests;
