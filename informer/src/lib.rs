//! # informer
//!
//! client-go's informer machinery rebuilt in Rust on [`kube`], [`k8s_openapi`] and
//! [`tokio`], generic over the resource type. Where a Go controller writes
//! `obj.(*v1.Deployment)`, this crate hands out `Arc<Deployment>`; where it switches on
//! `DeletedFinalStateUnknown`, you match on a [`DeletedObject`].
//!
//! ```text
//! kube::Api<K> --list/watch--> Reflector<K> --deltas--> DeltaFifo<K> --pop--> process loop
//!                                                                      |          |
//!                                                  Indexer<K> <--------+          +--> handlers
//!                                                      ^
//!                                        Lister<K> ----+  (sync reads, Arc<K>, no copies)
//! ```
//!
//! - [`reflector`]: lists and watches the API server into a store, with client-go's
//!   resourceVersion, paging, 410 Gone, backoff and resync rules.
//! - [`fifo`]: the DeltaFIFO, per-object queues of typed deltas with tombstones.
//! - [`store`]: the indexed cache ([`Indexer`]) with named indexes and label selectors.
//! - [`workqueue`]: rate-limited work queues and the controller loop.
//! - `testenv` (feature `testenv`): a real kube-apiserver and etcd on loopback.
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "testenv")]
#[cfg_attr(docsrs, doc(cfg(feature = "testenv")))]
pub mod testenv;

pub mod fifo;
pub mod key;
pub mod reflector;
pub mod store;
pub mod workqueue;

pub use fifo::{
    DeletedFinalStateUnknown, DeletedObject, Delta, DeltaFifo, DeltaFifoOptions, DeltaType,
    Deltas, KnownObjects, PopError, ProcessError,
};
pub use key::{KeyFn, ObjectKey, ObjectKeyRef};
pub use reflector::{ApiListerWatcher, ListerWatcher, Reflector, ReflectorError};
pub use store::{
    IndexFunc, Indexer, Indexers, LabelIndex, NAMESPACE_INDEX, NamespaceIndex, Requirement,
    Selector, StoreError,
};
pub use workqueue::{DelayingQueue, RateLimitingQueue, Runner, RunnerConfig, WorkQueue};
