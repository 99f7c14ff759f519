//! # informer
//!
//! client-go's informer machinery rebuilt in Rust on [`kube`], [`k8s_openapi`] and
//! [`tokio`], generic over the resource type. Where a Go controller writes
//! `obj.(*v1.Deployment)`, this crate hands out `Arc<Deployment>`; where it switches on
//! `DeletedFinalStateUnknown`, you match on a [`DeletedObject`](fifo::DeletedObject).
//!
//! ```text
//! kube::Api<K> --list/watch--> Reflector<K> --deltas--> RealFifo<K> --pop--> process loop
//!                                                    (or DeltaFifo<K>)    |          |
//!                                                  Indexer<K> <-----------+          +--> handlers
//!                                                      ^
//!                                        Lister<K> ----+  (sync reads, Arc<K>, no copies)
//! ```
//!
//! # Where each concept lives
//!
//! Every public name has one path, in the module of its concept; the [`prelude`]
//! gathers the ones a controller uses most.
//!
//! - [`reflector`]: lists and watches the API server into a store, with client-go's
//!   resourceVersion, paging, 410 Gone, backoff and resync rules ([`Reflector`](reflector::Reflector),
//!   [`ListerWatcher`](reflector::ListerWatcher), [`ApiListerWatcher`](reflector::ApiListerWatcher)),
//!   and the other sources a reflector can read: [`ListWatch`](reflector::ListWatch) from
//!   two closures, and [`FakeSource`](reflector::FakeSource), an in-memory collection
//!   that drives an informer in unit tests without a server.
//! - [`fifo`]: the queues of typed deltas between reflector and cache: the in-order
//!   [`RealFifo`](fifo::RealFifo) (the default, client-go's `InOrderInformers`) and the
//!   per-object [`DeltaFifo`](fifo::DeltaFifo); [`DeletedObject`](fifo::DeletedObject)
//!   with its tombstone.
//! - [`store`]: the indexed cache ([`Indexer`](store::Indexer)), named indexes,
//!   label selectors, and typed indexes ([`Index`](store::Index)).
//! - [`shared_informer`]: [`SharedIndexInformer`](shared_informer::SharedIndexInformer), its options, handlers,
//!   registrations, subscriptions and [`wait_for_cache_sync`](shared_informer::wait_for_cache_sync).
//! - [`factory`]: [`SharedInformerFactory`](factory::SharedInformerFactory), one informer per type, shared;
//!   metadata-only informers ([`metadata_informer::<Pod>()`](factory::SharedInformerFactory::metadata_informer))
//!   and dynamic ones ([`dynamic_informer`](factory::SharedInformerFactory::dynamic_informer)) beside them.
//! - [`dynamic`]: resources known only at run time: [`DynamicResource`](dynamic::DynamicResource)
//!   found through discovery, [`JsonPathIndex`](dynamic::JsonPathIndex) over `DynamicObject`s.
//! - [`controller`]: [`Controller`](controller::Controller), a primary type with what it owns
//!   and watches mapped to one queue of keys, typed reconciles, finalizers and
//!   read-your-writes, on the factory's shared informers.
//! - [`leader`]: leader election on a Lease ([`LeaderElector`](leader::LeaderElector)),
//!   so a controller runs as several replicas of which one works.
//! - [`shard`]: a controller's keys split across replicas ([`ShardMember`](shard::ShardMember),
//!   one Lease each, rendezvous hashing), so all of them work, never two on one key.
//! - [`projection`]: `#[derive(Projection)]`, a struct of the fields a controller
//!   reads, cached as a resource of the original's kind and decoded straight from the
//!   wire, every other field skipped unread.
//! - [`lister`]: [`Lister`](lister::Lister), typed reads of the cache, scope checked by
//!   the compiler.
//! - [`consistency`]: the cache proven right while it runs: periodic checks against the
//!   server's list ([`ConsistencyConfig`](consistency::ConsistencyConfig),
//!   [`verify`](shared_informer::SharedIndexInformer::verify)), a staleness gauge and a
//!   [`Health`](consistency::Health) for readiness endpoints.
//! - [`informable`]: `#[derive(Informable)]`, typed keys and indexes checked by the
//!   compiler, for CRDs and hand-written resource types alike.
//! - [`key`]: [`ObjectKey`](key::ObjectKey) (`namespace/name`) and key functions.
//! - [`scope`]: resource scopes in the type system: [`FactoryScope`](scope::FactoryScope)
//!   for code generic over a scope, and the markers that decide a lister's reads.
//! - [`workqueue`]: client-go's work queue, rate limiters, and the [`Runner`](workqueue::Runner)
//!   that drives a controller's reconcile loop.
//! - [`events`]: an `events.k8s.io/v1` event [`Recorder`](events::Recorder) with
//!   client-go's series and spam filter, writing in the background.
//! - `metrics` (feature `metrics`): Prometheus metrics of queues, controllers,
//!   informers and reflectors, with client-go's and controller-runtime's names.
//! - `testenv` (feature `testenv`): a real kube-apiserver and etcd on loopback.
//!
//! Cached objects leave out `metadata.managedFields`: they are skipped while decoding,
//! which roughly halves the memory of small objects and loses nothing a controller
//! needs (see [`ManagedFields`](reflector::ManagedFields)). Ask for them with
//! [`ApiListerWatcher::managed_fields`](reflector::ApiListerWatcher::managed_fields) or [`FactoryOptions::managed_fields`](factory::FactoryOptions::managed_fields).
//!
//! Nothing fails silently. A list that keeps failing is retried without end, as in
//! client-go, but logged (at warn level, once per streak) and kept as the informer's
//! [`last_sync_error`](shared_informer::SharedIndexInformer::last_sync_error), a
//! [`SyncError`](reflector::SyncError) that names the resource
//! (`backups.ops.example.com is not served by the API server`) or the address of a
//! server that cannot be reached; [`SharedInformerFactory::wait_for_cache_sync_within`](factory::SharedInformerFactory::wait_for_cache_sync_within)
//! reports it per informer. A lister's `get` before its informer synced is
//! [`LookupError::NotSynced`](lister::LookupError::NotSynced), not `NotFound`.
//!
//! ```no_run
//! use informer::prelude::*;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::{Api, ResourceExt};
//!
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let informer = SharedIndexInformer::new(Api::<ConfigMap>::namespaced(client, "default"));
//! informer.add_event_handler(
//!     ResourceEventHandlerFns::new()
//!         .on_add(|cm: &std::sync::Arc<ConfigMap>, _| println!("Added: {}", cm.name_any()))
//!         .on_delete(|gone| println!("Deleted: {}", gone.object().name_any())),
//! )?;
//! tokio::spawn({
//!     let informer = informer.clone();
//!     async move { informer.run(std::future::pending()).await }
//! });
//! wait_for_cache_sync(&[&informer]).await;
//! let web: Selector = "app=web".parse()?;
//! let cached = informer.lister().namespaced("default").list(&web);
//! # let _ = cached;
//! # Ok(())
//! # }
//! ```
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
pub mod projection;
pub mod reflector;
pub mod scope;
pub mod shard;
pub mod shared_informer;
pub mod store;
pub mod workqueue;

mod cached;
mod cause;
mod claim;
mod clock;
mod lock;
mod panic;
mod shutdown;
mod synced;
#[cfg(test)]
mod test_support;

pub use shutdown::shutdown_signal;

/// The names a controller uses most, for `use informer::prelude::*`.
pub mod prelude {
    pub use crate::controller::{Context, Controller, Predicate, Retry, backoff};
    pub use crate::events::{EventSpec, Recorder, Reporter};
    pub use crate::factory::{FactoryOptions, SharedInformerFactory};
    pub use crate::fifo::{DeletedFinalStateUnknown, DeletedObject};
    pub use crate::fleet::ClusterContext;
    pub use crate::informable::Informable;
    pub use crate::key::ObjectKey;
    pub use crate::lister::{Lister, NamespaceLister};
    pub use crate::shared_informer::{
        HasSynced, InformerOptions, Notification, ResourceEventHandler, ResourceEventHandlerFns,
        SharedIndexInformer, wait_for_cache_sync,
    };
    pub use crate::shutdown_signal;
    pub use crate::store::{IndexQuery, Indexer, Indexers, Selector};
    pub use crate::workqueue::{Action, Priority, Runner, RunnerConfig, WorkQueue};
}
