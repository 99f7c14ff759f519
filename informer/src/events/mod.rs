//! Recording `events.k8s.io/v1` Events, as client-go's `tools/events`.
//!
//! A controller tells humans what it did through Events: `kubectl describe` shows
//! them under the object they regard. A [`Recorder`] publishes them without making
//! the caller wait for the API server and without flooding it, which needs three
//! things client-go has and this module rebuilds:
//!
//! - **A background writer** ([`Recorder`], client-go's `EventBroadcaster` and its
//!   recording workers). [`Recorder::publish`] checks the event, decides what to
//!   write and hands that to a task through a bounded queue (1000 writes); when the
//!   queue is full the event is dropped and counted, never queued without bound. The
//!   writer retries connection and server errors with a jittered backoff (10 s, 12
//!   tries) and gives up on events the server refuses.
//! - **Series** (client-go's event cache and `EventSeries`). An event identical to one
//!   published within the last 6 minutes (same type, reason, action, note, regarding
//!   and related object, same reporter) creates no new Event: the first repeat turns
//!   the existing Event into a series (`series.count = 2`, `lastObservedTime`) with
//!   one PATCH, later repeats only count, and the writer patches each changed count at
//!   its next flush (every 30 s): N identical events make one Event with
//!   `series.count == N` once flushed. A series whose Event is gone (its TTL ran out)
//!   is created again, count included. Unlike client-go's `getKey`, the key includes
//!   the note, so a series never hides a different message.
//! - **A spam filter** (client-go's `EventSourceObjectSpamFilter` from
//!   `tools/record`): a token bucket per object and event type, 25 events at once
//!   and one more every 5 minutes; beyond that events about the object are dropped
//!   (logged at debug level, counted), while other objects go on unaffected.
//!
//! Events are named `{regarding.name}.{unix nanoseconds in hex}` and live in the
//! regarding object's namespace, or `default` for cluster-scoped objects
//! ([configurable](RecorderConfig::cluster_scoped_namespace)), with
//! `eventTime` now and `reportingController`/`reportingInstance` from the
//! [`Reporter`]. Every limit and timing is in [`RecorderConfig`].
//!
//! [`Recorder::shutdown`] writes what is pending and ends the writer; dropping the
//! last handle does the same in the background.
//!
//! ```no_run
//! use informer::events::{EventSpec, Recorder, Reporter, object_reference};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::Api;
//!
//! # async fn demo(client: kube::Client) -> Result<(), kube::Error> {
//! let recorder = Recorder::new(client.clone(), Reporter::new("backup-operator"));
//! let config = Api::<ConfigMap>::namespaced(client, "prod").get("backup").await?;
//!
//! // In a reconciler (publish never waits for the API server):
//! recorder.publish(
//!     &object_reference(&config),
//!     EventSpec::warning("BackupFailed", "Backup").note("bucket unreachable"),
//! );
//!
//! // At the end of the program:
//! recorder.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! The recorder needs RBAC to `create` and `patch` `events` in the `events.k8s.io`
//! group in the namespaces of the objects it reports on.

mod config;
mod error;
mod event;
mod recorder;
mod series;
mod shared;
mod spam_filter;
mod spec;
mod stats;
mod writer;

pub use config::RecorderConfig;
pub use error::EventError;
pub use recorder::{Published, Recorder};
pub use spec::{EventSpec, EventType, Reporter, object_reference};
pub use stats::RecorderStats;
