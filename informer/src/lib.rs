//! # informer
//!
//! client-go's informer machinery rebuilt in Rust on [`kube`], [`k8s_openapi`] and
//! [`tokio`], generic over the resource type: a Reflector lists and watches the API
//! server, a DeltaFIFO queues per-object changes, an Indexer caches objects (each once,
//! as an `Arc<K>`) with named secondary indexes, and a shared informer fans changes out
//! to any number of handlers. A rate-limited workqueue drives reconcile loops.
//!
//! ```text
//! kube::Api<K> --list/watch--> Reflector<K> --deltas--> DeltaFIFO<K> --pop--> process loop
//!                                                                      |          |
//!                                                  Indexer<K> <--------+          +--> handlers
//! ```
//!
//! With the `testenv` feature, [`testenv`] starts a real kube-apiserver and etcd on
//! loopback for tests and demos.
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "testenv")]
#[cfg_attr(docsrs, doc(cfg(feature = "testenv")))]
pub mod testenv;

pub mod reflector;
pub mod workqueue;
