//! Proving an informer's cache right while it runs: consistency checks against the
//! server, and how stale the cache is.
//!
//! Every informer keeps a **digest** of its cache, updated with each change it applies
//! (one hash in, one out: an order-independent sum over the objects' namespace, name,
//! uid and resourceVersion), and remembers a few **points**: moments the cache was
//! exactly the server's collection at some resourceVersion (its queue empty, the last
//! thing queued at that version), each with its digest. Nothing is kept per object.
//!
//! A **check** lists the collection's metadata at exactly a point's version
//! (`resourceVersionMatch=Exact`, in pages; from the watch cache's snapshots on servers
//! that keep them, from etcd on older ones) and compares digests. Equal: consistent.
//! Different: the cache is read at its point then and compared with a second list key
//! by key, and every difference is named: *missing* (the server has it, the cache does
//! not), *extra*, *older*, *newer*. A version the server no longer keeps (410, compacted)
//! makes the check wait for a newer point; a check never fails or stalls the informer.
//!
//! A **staleness probe** reads where the server is now (a consistent read of one
//! object) and how far the cache is from there (a short watch of versions from the
//! cache's point): the gauge says how long after the server the cache got to the same
//! state, and, while it has not, for how long it has lagged.
//!
//! Turn it on per informer or per factory; checks run every
//! [`interval`](ConsistencyConfig::interval) (10 minutes by default, with jitter) and
//! probes every [`staleness_interval`](ConsistencyConfig::staleness_interval) (30
//! seconds). Each difference is logged once (the resource, its kind, its key), counted
//! (`informer_consistency_differences_total` with the `metrics` feature), and, if
//! [`heal`](ConsistencyConfig::heal) says so, healed by a relist.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use informer::consistency::ConsistencyConfig;
//! use informer::prelude::*;
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! let factory = SharedInformerFactory::new(
//!     client,
//!     FactoryConfig::default().consistency(ConsistencyConfig::default().heal(true)),
//! );
//! let config_maps = factory.informer::<ConfigMap>();
//! factory.start();
//! factory.wait_for_cache_sync().await?;
//!
//! // On demand, e.g. from a health endpoint or a test:
//! let report = config_maps.verify().await?;
//! assert!(report.consistent, "{report}");
//! // Synced, at most 30 s behind the server, last check consistent:
//! let ready = config_maps.health().is_healthy(Duration::from_secs(30));
//! # let _ = ready;
//! # Ok(())
//! # }
//! ```
//!
//! # What it costs
//!
//! Per check, one metadata-only list of the collection in pages of 500 (a second one
//! only when the cache differs), and a probe when the cache's newest point is older
//! than a minute. Per probe, one consistent read of one
//! object, and, when the cache is not already past the server's version, a watch of
//! at most three seconds that reads only resourceVersions. In memory, eight bytes of
//! digest and eight points; a check holds one page at a time, and, only when the
//! digests differ, a map of the cache's keys and versions for the keyed comparison. On
//! the hot path, two hashes per applied change.
//!
//! # What it cannot see
//!
//! - An object whose newer state does not decode leaves the cache (see
//!   [`ReflectorStore::forget`](crate::reflector::ReflectorStore::forget)); a check
//!   reports it missing, which it is.
//! - A transform must keep `metadata.uid` and `resourceVersion`: the digest is made
//!   of them.
//! - On a server that sends no bookmarks (1.20), a collection with no change since
//!   etcd last compacted cannot be listed at the cache's version: a check then counts
//!   the cache consistent only if it equals the server's collection now, and otherwise
//!   is skipped until the collection changes again.
//! - resourceVersions are compared (staleness, older or newer) as integers: see
//!   [`Health::staleness`].

mod check;
mod compare;
mod config;
mod digest;
mod health;
mod points;
mod probe;
mod report;
mod run;
mod staleness;
mod stats;
mod tracker;

pub use config::ConsistencyConfig;
pub use health::{Health, HealthProblem};
pub use report::{ConsistencyReport, Difference, DifferenceKind};
pub use stats::{CheckResult, ConsistencyStats, LastCheck};

pub(crate) use check::Checker;
pub(crate) use run::Periodic;
pub(crate) use stats::Counters;
pub(crate) use tracker::{Applying, Tracker};

use std::time::Duration;

use crate::cause::kube_cause;

/// Why a check ([`SharedIndexInformer::verify`](crate::shared_informer::SharedIndexInformer::verify))
/// could not say whether the cache is right.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The informer's first list is not in its cache yet (or it has not started).
    #[error("the cache of {resource} has not synced")]
    NotSynced {
        /// The resource, as `kubectl` names it.
        resource: String,
    },
    /// The informer's lister-watcher cannot list what the server holds
    /// ([`Capabilities::versions`](crate::reflector::source::Capabilities#structfield.versions) is `None`).
    #[error("{resource}: the informer's lister-watcher offers no versions to check against")]
    Unsupported {
        /// The resource.
        resource: String,
    },
    /// The cache has not yet been settled at a resourceVersion (its queue empty after
    /// something that carried one).
    #[error("the cache of {resource} has not settled at a resourceVersion yet")]
    NoPoint {
        /// The resource.
        resource: String,
    },
    /// The server no longer keeps the version the cache was at, the cache passed no
    /// newer one in time, and it does not equal the server's collection now.
    #[error(
        "the server no longer keeps {resource} at resourceVersion {resource_version}, and the cache passed no newer version in time"
    )]
    Compacted {
        /// The resource.
        resource: String,
        /// The version the check wanted.
        resource_version: String,
    },
    /// No server answering has reached the version the cache was at (a lagging server
    /// behind a load balancer).
    #[error("the server has not reached {resource} at resourceVersion {resource_version}")]
    NotReached {
        /// The resource.
        resource: String,
        /// The version the check wanted.
        resource_version: String,
    },
    /// A list failed.
    #[error("listing {resource} at resourceVersion {resource_version} failed: {}", kube_cause(.source))]
    List {
        /// The resource.
        resource: String,
        /// The version listed (`""`: the latest).
        resource_version: String,
        /// The request's error.
        #[source]
        source: kube::Error,
    },
    /// The key filter changed (a shard hand-off) and the cache has not yet been
    /// settled under the new one (it follows after the relist the change brings): a
    /// cache is compared with the server only under the filter its objects were
    /// filtered with.
    #[error("{resource}: the key filter changed and the cache has not yet followed it")]
    FilterChanged {
        /// The resource.
        resource: String,
    },
    /// A request took longer than [`ConsistencyConfig::request_timeout`].
    #[error("a request listing {resource} took longer than {timeout:?}")]
    TimedOut {
        /// The resource.
        resource: String,
        /// The timeout.
        timeout: Duration,
    },
}

impl VerifyError {
    /// How a periodic check that ended with this error counts: skipped when the check
    /// could not run, an error when a request failed.
    pub fn result(&self) -> CheckResult {
        match self {
            Self::NotSynced { .. }
            | Self::Unsupported { .. }
            | Self::NoPoint { .. }
            | Self::Compacted { .. }
            | Self::FilterChanged { .. } => CheckResult::Skipped,
            Self::NotReached { .. } | Self::List { .. } | Self::TimedOut { .. } => {
                CheckResult::Error
            }
        }
    }
}
