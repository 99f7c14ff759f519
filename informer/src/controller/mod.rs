//! Controllers: a primary type, what it owns and watches, one queue, typed reconciles.
//!
//! A [`Controller`] is a thin builder over what the crate already has: the shared
//! informers of a [`SharedInformerFactory`](crate::factory::SharedInformerFactory)
//! (one watch and one cache per type, shared with every other controller of the
//! process), the rate-limited [`WorkQueue`](crate::workqueue::WorkQueue) and the
//! [`Runner`](crate::workqueue::Runner). There is no second cache and no second queue:
//!
//! ```text
//! factory.informer::<K>() ---------------- K's key -------------------+
//! factory.informer::<C>()  owns::<C>()    controller ownerReference --+--> WorkQueue<ObjectKey> --> Runner
//! factory.informer::<W>()  watches(map)   map(&W, &Lister<K>) --------+        |
//!                                          (a typed index query)               v
//!                          reconcile(Arc<K>, Context<K>) -> Result<Action, E>, or cleanup
//! ```
//!
//! - **Mapping without scans.** [`owns`](Controller::owns) reads the child's controller
//!   owner reference; [`watches`](Controller::watches) calls your mapper with the
//!   primary lister, so a typed index query (`backups.by_target(name)`) is the lookup.
//!   [`Context::owned`] answers "which children does this primary own" from an index
//!   the controller keeps on each owned type.
//! - **One key, one worker.** A key is never reconciled twice at once; changes during a
//!   reconcile queue it once more, after.
//! - **Errors.** A failed reconcile goes to the error policy, which picks a [`Retry`]:
//!   [`backoff`] (client-go's rate limiter: 5 ms doubling to 1000 s per key, 10 qps
//!   overall), a fixed delay, or giving up. A panic is contained and retried.
//! - **Deletions.** [`cleanup`](Controller::cleanup) runs for a deleted object's last
//!   state; with a [`finalizer`](Controller::finalizer) it also covers deletions made
//!   while the controller was down (see [`finalizer`]).
//! - **Several replicas.** With [`leader_election`](Controller::leader_election) the
//!   controller runs on every replica with warm caches and reconciles only on the one
//!   that leads (see [`leader`](crate::leader)); built with
//!   [`sharded`](Controller::sharded) it shares the keys with the other replicas,
//!   each reconciling its own shard (see [`shard`](crate::shard)).
//! - **Read-your-writes.** Writes made through [`Context::api`] are remembered, and the
//!   next reconcile of the same key waits (bounded) until the cache shows them, so a
//!   quick requeue never creates a second child (see [`read_your_writes`]).
//!
//! ```no_run
//! use std::sync::Arc;
//! use informer::controller::{backoff, Context, Controller};
//! use informer::factory::{FactoryOptions, SharedInformerFactory};
//! use informer::workqueue::Action;
//! use k8s_openapi::api::apps::v1::Deployment;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Patch, PatchParams};
//! use kube::{Resource, ResourceExt};
//!
//! /// Keeps a ConfigMap `{name}-replicas` beside every Deployment, owned by it.
//! async fn reconcile(deployment: Arc<Deployment>, ctx: Context<Deployment>) -> Result<Action, kube::Error> {
//!     let replicas = deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
//!     let name = format!("{}-replicas", deployment.name_any());
//!     let current = ctx.owned::<ConfigMap>(&deployment);
//!     if current.iter().any(|cm| cm.data.as_ref().and_then(|d| d.get("replicas")) == Some(&replicas.to_string())) {
//!         return Ok(Action::Done);
//!     }
//!     let child = serde_json::json!({
//!         "apiVersion": "v1", "kind": "ConfigMap",
//!         "metadata": { "name": name, "ownerReferences": [deployment.controller_owner_ref(&())] },
//!         "data": { "replicas": replicas.to_string() },
//!     });
//!     ctx.api::<ConfigMap>()
//!         .patch(&name, &PatchParams::apply("replicas-controller"), &Patch::Apply(&child))
//!         .await?;
//!     Ok(Action::Done)
//! }
//!
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let factory = SharedInformerFactory::new(client, FactoryOptions::default().namespace("default"));
//! Controller::<Deployment>::new(&factory)
//!     .owns::<ConfigMap>()
//!     // Until Ctrl-C, say: `async { tokio::signal::ctrl_c().await.ok(); }`
//!     .run(reconcile, backoff, std::future::pending())
//!     .await?;
//! factory.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod builder;
mod context;
pub mod finalizer;
mod leading;
mod mapping;
mod primaries;
pub mod read_your_writes;
mod registry;
mod sharding;
mod tombstones;
mod worker;

use std::time::Duration;

pub use builder::Controller;
pub use context::{Context, TrackedApi};
pub use mapping::IntoPrimaryKey;

/// What the error policy asks for after a failed reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Retry {
    /// Retry with the queue's rate limiter (per-key exponential backoff); the failure
    /// is logged. client-go's `AddRateLimited`, and the default.
    #[default]
    Backoff,
    /// Retry after this delay, whatever the failure history; the failure is logged.
    After(Duration),
    /// Give up on the key until its next change; the failure is logged.
    Never,
}

/// The default error policy: retry with the queue's rate limiter (client-go's
/// `AddRateLimited`). Pass it as `error_policy` to [`Controller::run`].
pub fn backoff<K, E>(_object: &K, _error: &E, _context: &Context<K>) -> Retry {
    Retry::Backoff
}

/// Why a controller could not run.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// An informer the controller needs was already shut down (its factory was).
    #[error("the {controller} cannot run: the {kind} informer has been shut down")]
    InformerStopped {
        /// The controller's name.
        controller: String,
        /// The type whose informer was shut down.
        kind: &'static str,
    },
    /// The controller was given both a shard and leader election: sharding already
    /// decides which replica reconciles which key.
    #[error("the {controller} is sharded and leader-elected at once; use one of the two")]
    ShardedAndLeaderElected {
        /// The controller's name.
        controller: String,
    },
}
