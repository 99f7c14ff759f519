//! The SharedIndexInformer: one list-and-watch, one cache, many handlers.
//!
//! client-go's `SharedIndexInformer`, typed. [`SharedIndexInformer::run`] starts a
//! [`Reflector`](crate::reflector::Reflector) that feeds a queue, by default the in-order
//! [`RealFifo`](crate::fifo::RealFifo) (every change in the order it happened, as
//! client-go's `InOrderInformers`), or the per-key [`DeltaFifo`](crate::fifo::DeltaFifo)
//! ([`QueueKind`]); the process loop pops the deltas, writes them to the
//! [`Indexer`](crate::store::Indexer) first, then tells every handler:
//!
//! - `Added`, `Updated`, `Sync` and `Replaced` become an add when the key was not in
//!   the cache and an update (old, new) when it was. Resync notifications (a `Sync`,
//!   or a `Replaced` that did not change the object) reach only the handlers whose
//!   resync period is due.
//! - `Deleted` becomes a delete with a [`DeletedObject`](crate::fifo::DeletedObject): the final state, or a
//!   tombstone carrying the last known state when the deletion was missed. A deletion
//!   of an object the cache does not hold (already removed) reaches no handler.
//!
//! Handlers ([`ResourceEventHandler`], or closures via [`ResourceEventHandlerFns`])
//! each get their own buffer and thread (see [`listener`](self#buffer-policy)), so a
//! slow or panicking handler stalls nobody else. A handler added after start first
//! receives an add for every cached object, flagged as initial list. Each handler may
//! ask for its own resync period; the informer checks at the smallest period asked
//! before start (client-go's rule: later, smaller periods are raised to it).
//! [`SharedIndexInformer::subscribe`] gives the same notifications as a `Stream`.
//!
//! # Buffer policy
//! Unbounded per handler: the process loop never waits for a handler, so the cache
//! stays current whatever handlers do; a handler that lags buffers notifications
//! (each an `Arc` or two, never a copy of the object). [`Registration::stats`] shows
//! how many are pending and the peak.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use informer::shared_informer::{ResourceEventHandlerFns, SharedIndexInformer};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::{Api, ResourceExt};
//!
//! let informer = SharedIndexInformer::new(Api::<ConfigMap>::default_namespaced(client));
//! informer.add_event_handler(
//!     ResourceEventHandlerFns::new()
//!         .on_add(|cm: &std::sync::Arc<ConfigMap>, _| println!("Added: {}", cm.name_any()))
//!         .on_delete(|gone| println!("Deleted: {}", gone.object().name_any())),
//! )?;
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! let running = tokio::spawn({
//!     let informer = informer.clone();
//!     async move { informer.run(async { stopped.await.ok(); }).await }
//! });
//! informer::shared_informer::wait_for_cache_sync(&[&informer]).await;
//! println!("{} config maps", informer.lister().list_all().len());
//! stop.send(()).ok();
//! running.await??;
//! # Ok(())
//! # }
//! ```

mod cache_size;
mod config;
mod error;
mod handler;
mod inner;
#[cfg(feature = "metrics")]
mod latency;
pub(crate) mod listener;
mod process;
mod processor;
mod queue;
mod registration;
mod shared_index_informer;
mod sink;
mod sync;
mod verify;

pub use crate::synced::{HasSynced, wait_for_cache_sync};
pub use cache_size::CacheSize;
pub use config::{InformerConfig, Transform};
pub use error::InformerError;
pub use handler::{Notification, ResourceEventHandler, ResourceEventHandlerFns};
#[cfg(feature = "metrics")]
pub(crate) use latency::LatencySnapshot;
pub use listener::ListenerStats;
pub use queue::QueueKind;
pub use registration::{Registration, Subscription};
pub use shared_index_informer::SharedIndexInformer;
#[cfg(feature = "metrics")]
pub(crate) use shared_index_informer::WeakInformer;

#[cfg(test)]
mod tests;
