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
//!   while the controller was down (see [finalizers](#finalizers)).
//! - **Several replicas.** With [`leader_election`](Controller::leader_election) the
//!   controller runs on every replica with warm caches and reconciles only on the one
//!   that leads (see [`leader`](crate::leader)); built with
//!   [`sharded`](Controller::sharded) it shares the keys with the other replicas,
//!   each reconciling its own shard (see [`shard`](crate::shard)).
//! - **Read-your-writes.** Writes made through [`Context::api`] are remembered, and the
//!   next reconcile of the same key waits (bounded) until the cache shows them, so a
//!   quick requeue never creates a second child (see [read-your-writes](#read-your-writes)).
//!
//! ```no_run
//! use std::sync::Arc;
//! use informer::controller::{backoff, Context, Controller};
//! use informer::factory::{FactoryConfig, SharedInformerFactory};
//! use informer::controller::Action;
//! use k8s_openapi::api::apps::v1::Deployment;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Patch, PatchParams};
//! use kube::{Resource, ResourceExt};
//!
//! /// Keeps a ConfigMap `{name}-replicas` beside every Deployment, owned by it.
//! async fn reconcile(deployment: Arc<Deployment>, ctx: Context<Deployment>) -> Result<Action, kube::Error> {
//!     let replicas = deployment.spec.replicas.unwrap_or(1); // k8s-openapi v1_37: spec is required
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
//! let factory = SharedInformerFactory::new(client, FactoryConfig::default().namespace("default"));
//! Controller::<Deployment>::new(&factory)
//!     .owns::<ConfigMap>()
//!     .run(reconcile, backoff, informer::shutdown_signal())
//!     .await?;
//! factory.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! # Finalizers
//!
//! Cleanup that survives the controller being down. Without a finalizer, a controller learns of a deletion from the watch. A deletion
//! made while no replica ran is never seen: the next list simply lacks the object, and
//! whatever it owned outside Kubernetes (a bucket, a DNS record, a row) leaks. With
//! [`Controller::finalizer`]:
//!
//! 1. before an object's first reconcile, the controller adds its finalizer (a merge
//!    patch carrying the object's resourceVersion, so it never overwrites a change it
//!    has not seen: a conflict is retried with backoff);
//! 2. deleting the object then only sets `metadata.deletionTimestamp`: the API server
//!    keeps it until every finalizer is gone, however long the controller is down;
//! 3. once the controller sees the deletion timestamp it runs the cleanup instead of
//!    the reconcile, and removes its finalizer when the cleanup succeeded (a failed
//!    cleanup is retried with backoff, the object stays);
//! 4. an object being deleted that does not carry the finalizer (its cleanup is done,
//!    or it never got one) is not reconciled.
//!
//! Both patches go through the [`TrackedApi`], so the next reconcile
//! of the key waits until the cache shows them.
//!
//! # Read-your-writes
//!
//! A reconcile never acts on a cache older than its own writes. A reconcile that creates a child and is run again a moment later (its primary was
//! updated, or it asked to be requeued) reads the child from the informer's cache. If
//! the watch event of the create has not reached the cache yet, the second reconcile
//! sees no child and creates another one (or fails with a conflict and retries, which
//! is the lucky case). controller-runtime users meet this as kubernetes-sigs/
//! controller-runtime#3320; KEP-5647 proposes the fix the controller makes:
//!
//! - every write made through the [`Context`]'s
//!   [`TrackedApi`] is remembered under the key being reconciled,
//!   with the `resourceVersion` the server answered;
//! - before the next reconcile of that key starts, the worker waits until each written
//!   object's cache entry is at that version or newer (or, for a deletion, gone), and
//!   is woken by the informers' notifications, not by polling;
//! - the wait is bounded ([`Controller::read_your_writes_timeout`]):
//!   a cache that falls behind (a watch being re-established) delays a reconcile, it
//!   never stalls it. Passing the bound is logged and the reconcile goes ahead.
//!
//! Resource versions are compared as integers, which is what every API server backed
//! by etcd hands out (etcd revisions); a version that is not an integer is only ever
//! matched exactly, and at worst costs the bounded wait.
//!
//! # Replicas and fencing
//!
//! Run as several replicas, a controller is [`leader_election`](Controller::leader_election)
//! (one replica reconciles, the others keep warm caches) or
//! [`sharded`](Controller::sharded) (each replica reconciles its own share of the
//! keys); the mode is part of its type ([`ReplicationMode`]). Every reconcile runs
//! under a *claim*, what entitles this replica to act for its key now (a leader's
//! term, a shard member's claim on the key), and the *fence* checks the claim by the
//! clock. What is guaranteed, and how a test against the real API server breaks it
//! when it can:
//!
//! - **A replica stops acting when its claim may have ended, by its own clock.**
//!   Each reconcile (and cleanup) is checked before every step, that is before each
//!   poll of its future, against the instant its lease could no longer be its own
//!   (halfway between the renew deadline and the lease expiry, as of the last
//!   successful renewal, plus any time a suspended machine's monotonic clock missed).
//!   Once past it, the reconcile is dropped where it stands and its next step never
//!   runs. No one has to say so first: a process resuming from a pause finds every
//!   deadline passed at once.
//! - **Sends through the [`Context`] are fenced.** [`Context::api`],
//!   [`Context::client`] and the finalizer's patches check the claim just before the
//!   request is handed to the connection, and fail with [`Fenced`] (inside
//!   [`kube::Error::Service`]; [`Fenced::find`]) once it ended; reads go through,
//!   but GETs that act (`exec`, `attach`, `portforward`, `proxy`, upgrades) are
//!   fenced as writes. [`Context::publish`] and [`Context::recorder`] record an Event
//!   only while the claim holds, and the recorder sends it (and its later series
//!   counts) only while it still holds.
//! - **A claim lasts one term or membership.** A context kept by a task past its
//!   reconcile stops writing once the term or shard membership it was made in ends,
//!   and does not write again when the replica leads or joins again.
//! - **Counted.** Dropped reconciles and refused writes are counted in
//!   [`LeadershipHandle::dropped_reconciles`](crate::leader::LeadershipHandle::dropped_reconciles)
//!   and [`refused_writes`](crate::leader::LeadershipHandle::refused_writes), or in
//!   [`ShardStats`](crate::shard::ShardStats), and in the metrics of the election or
//!   shard member; Events not sent in
//!   [`RecorderStats::fenced`](crate::events::RecorderStats::fenced).
//! - **What only the server can close: sent is not landed.** A request handed to the
//!   connection before the deadline can still be applied after it (queued by an
//!   admission webhook or API Priority and Fairness, held by a network partition
//!   until it heals), whatever the client checks. A write that must never apply over
//!   newer state is made conditional on the state it was computed from:
//!   [`TrackedApi::if_unchanged`] sends the read `resourceVersion` as a
//!   precondition, and the API server answers 409 Conflict if anyone wrote the object
//!   since. Writes a user makes outside the context (a client of their own) are not
//!   fenced.
//!
//! A killed replica's work is taken over within the lease duration plus a retry
//! period; a replica cut off from the API server stops before its lease expires for
//! the others, and a paused one drops its work on resume, as above.

mod builder;
mod context;
mod finalizer;
mod handlers;
mod mapping;
mod predicate;
mod primary;
mod primary_cache;
mod read_your_writes;
mod reasons;
mod reconciler;
mod registry;
mod replication;
mod run;
mod tombstones;
mod tracked_api;
mod wiring;

use std::time::Duration;

/// What a reconcile asks for next (defined beside the [`Runner`](crate::workqueue::Runner)
/// that acts on it).
pub use crate::workqueue::runner::Action;
pub use builder::Controller;
pub use context::Context;
pub use mapping::IntoPrimaryKey;
pub use predicate::Predicate;
pub use primary::Primary;
pub(crate) use reconciler::{ReconcileFn, erase_reconcile};
pub(crate) use replication::{Decide, Replicate, Workload, gated_by_shard};
pub use replication::{Fenced, LeaderElected, ReplicationMode, Sharded, Single};
pub use tracked_api::{IfUnchanged, TrackedApi};

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
#[non_exhaustive]
pub enum ControllerError {
    /// An informer the controller needs was already shut down (its factory was).
    #[error("the {controller} cannot run: the {kind} informer has been shut down")]
    InformerStopped {
        /// The controller's name.
        controller: String,
        /// The type whose informer was shut down.
        kind: &'static str,
    },
}
