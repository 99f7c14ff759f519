//! # informer
//!
//! Kubernetes controllers in Rust on [`kube`], [`k8s_openapi`] and [`tokio`], with
//! client-go's informer machinery underneath, typed throughout: where a Go controller
//! writes `obj.(*v1.Deployment)`, this crate hands out `Arc<Deployment>`.
//!
//! **Writing an operator: start with [`Controller`](controller::Controller).** It
//! reconciles a primary type, maps the changes of what it owns and watches to the
//! primaries' keys through typed indexes, and hands each reconcile a
//! [`Context`](controller::Context) with the shared caches' listers, a client whose
//! writes the next reconcile is sure to see, and an event recorder:
//!
//! ```no_run
//! use std::sync::Arc;
//! use informer::prelude::*;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use k8s_openapi::api::apps::v1::Deployment;
//! use kube::api::{Patch, PatchParams};
//! use kube::ResourceExt;
//!
//! /// Keeps a ConfigMap `{name}-image` beside every Deployment, owned by it.
//! async fn reconcile(deployment: Arc<Deployment>, ctx: Context<Deployment>) -> Result<Action, kube::Error> {
//!     let name = format!("{}-image", deployment.name_any());
//!     let image = deployment.spec.template.spec.as_ref()
//!         .and_then(|pod| pod.containers.first())
//!         .and_then(|container| container.image.clone())
//!         .unwrap_or_default();
//!     let child = serde_json::json!({
//!         "apiVersion": "v1", "kind": "ConfigMap",
//!         "metadata": { "name": name, "ownerReferences": [ctx.controller_reference(&deployment)] },
//!         "data": { "image": image },
//!     });
//!     ctx.api::<ConfigMap>()
//!         .patch(&name, &PatchParams::apply("image-controller"), &Patch::Apply(&child))
//!         .await?;
//!     Ok(Action::Done)
//! }
//!
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let factory = SharedInformerFactory::new(client, FactoryConfig::default().namespace("default"));
//! Controller::<Deployment>::new(&factory)
//!     .owns::<ConfigMap>()
//!     .run(reconcile, backoff, shutdown_signal())
//!     .await?;
//! # Ok(())
//! # }
//! ```
//!
//! The [`prelude`] holds what that code names. Where to go from there, by task:
//!
//! - **Reading a cache.** [`SharedInformerFactory`](factory::SharedInformerFactory)
//!   makes one informer per type, shared by every controller and handler of the
//!   process; [`Lister`](lister::Lister) reads it synchronously (`Arc<K>`, no copies),
//!   by namespace, label selector or a typed index (`#[derive(Informable)]`,
//!   [`informable`]). For event handlers without a controller,
//!   [`SharedIndexInformer`](shared_informer::SharedIndexInformer) and
//!   [`ResourceEventHandlerFns`](shared_informer::ResourceEventHandlerFns), with
//!   deletions as a [`DeletedObject`](fifo::DeletedObject), tombstones included.
//! - **Running as several replicas.** [`leader`]: one of them works
//!   ([`Controller::leader_election`](controller::Controller::leader_election));
//!   [`shard`]: all of them work, each on its own keys
//!   ([`Controller::sharded`](controller::Controller::sharded)); no write is sent
//!   outside a claim ([`Fenced`](controller::Fenced)).
//! - **Events and metrics.** [`events`] (`events.k8s.io/v1`, series and spam filter,
//!   through [`Context::publish`](controller::Context::publish)), `metrics` (feature
//!   `metrics`: Prometheus, with client-go's and controller-runtime's names).
//! - **Beyond one cluster and one shape.** [`fleet`] (a controller in every cluster
//!   of a fleet), [`projection`] (`#[derive(Projection)]`: cache only the fields you
//!   read), [`consistency`] (prove the cache right while it runs), [`dynamic`] (kinds
//!   known only at run time), `testenv` (feature `testenv`: a real kube-apiserver and
//!   etcd on loopback for your tests).
//! - **client-go's building blocks**, each usable on its own: [`reflector`] (list and
//!   watch, with client-go's resourceVersion, paging, 410 and backoff rules; what it
//!   reads from is [`reflector::source`]: the API server, two closures, or an
//!   in-memory collection for unit tests), [`fifo`]
//!   (RealFIFO, DeltaFIFO), [`store`] (the indexed cache), [`workqueue`] (rate-limited
//!   queues and the reconcile [`Runner`](workqueue::Runner)), [`key`] and [`scope`].
//!
//! Cached objects leave out `metadata.managedFields` (skipped while decoding; the
//! server is asked to leave them out where it can): see
//! [`ManagedFields`](reflector::source::ManagedFields). Nothing fails silently: a list
//! that keeps failing is retried as in client-go, logged once per streak and kept as the
//! informer's [`last_sync_error`](shared_informer::SharedIndexInformer::last_sync_error);
//! a lister's `get` before its informer synced is
//! [`LookupError::NotSynced`](lister::LookupError::NotSynced), not `NotFound`.
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "testenv")]
#[cfg_attr(docsrs, doc(cfg(feature = "testenv")))]
pub mod testenv;

pub mod consistency;
pub mod controller;
pub mod dynamic;
pub mod events;
pub mod factory;
pub mod fifo;
pub mod fleet;
pub mod informable;
pub mod key;
pub mod leader;
pub mod lister;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
pub mod object;
pub mod projection;
pub mod reflector;
pub mod scope;
pub mod shard;
pub mod shared_informer;
pub mod store;
pub mod workqueue;

mod allocator;
mod cached;
mod cause;
mod claim;
mod clock;
mod compact_meta;
mod hold;
mod lock;
mod panic;
mod shared;
mod shutdown;
mod synced;
#[cfg(test)]
mod test_support;
mod walk;

pub use shutdown::shutdown_signal;

/// What an operator's code names most, for `use informer::prelude::*`: the controller,
/// its reconcile's types, the factory and typed reads of its caches. Handlers, queues
/// and the other building blocks are imported from their modules.
pub mod prelude {
    pub use crate::controller::{Action, Context, Controller, Predicate, Retry, backoff};
    pub use crate::events::EventSpec;
    pub use crate::factory::{FactoryConfig, SharedInformerFactory};
    pub use crate::informable::Informable;
    pub use crate::key::ObjectKey;
    pub use crate::lister::{Lister, NamespaceLister};
    pub use crate::shutdown_signal;
    pub use crate::store::Selector;
}
