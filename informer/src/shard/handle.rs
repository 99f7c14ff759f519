//! [`ShardHandle`]: what the rest of the process asks a [`ShardMember`](super::ShardMember):
//! whose keys are whose, and whether a key may be reconciled now.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio::sync::watch;

use super::assignment::Assignment;
use super::config::ShardBy;
use super::in_flight::{InFlight, InFlightGuard};
use super::key_claim::KeyClaim;
use super::stats::{Counters, ShardStats};
use crate::clock::MissedTime;
use crate::hold::{Hold, Holds};
use crate::key::ObjectKey;
use crate::reflector::{KeyFilter, ObjectHead, ShardSelector};

/// What a handle shares with its member besides the assignment.
pub(crate) struct HandleParts {
    pub(crate) in_flight: Arc<InFlight>,
    pub(crate) writes: Arc<Holds>,
    pub(crate) counters: Arc<Counters>,
    pub(crate) clocks: Arc<MissedTime>,
    pub(crate) releases: Arc<Holds>,
    pub(crate) identity: Arc<str>,
    pub(crate) group: Arc<str>,
    pub(crate) shard_by: ShardBy,
}

/// A view of one [`ShardMember`](super::ShardMember). Cheap to clone.
///
/// It is also a [`KeyFilter`]: an informer filtered by it keeps only this member's
/// shard of the target view, and relists when the members change. When its
/// [`ShardBy`] names a field the API server hashes (uid or namespace), the filter also
/// asks the server for that shard ([`KeyFilter::server_selector`]): a server with
/// sharded list and watch then sends only it.
#[derive(Debug, Clone)]
pub struct ShardHandle {
    state: watch::Receiver<Arc<Assignment>>,
    generation: watch::Receiver<u64>,
    in_flight: Arc<InFlight>,
    writes: Arc<Holds>,
    counters: Arc<Counters>,
    clocks: Arc<MissedTime>,
    releases: Arc<Holds>,
    identity: Arc<str>,
    group: Arc<str>,
    shard_by: ShardBy,
}

impl ShardHandle {
    pub(crate) fn new(
        state: watch::Receiver<Arc<Assignment>>,
        generation: watch::Receiver<u64>,
        parts: HandleParts,
    ) -> Self {
        Self {
            state,
            generation,
            in_flight: parts.in_flight,
            writes: parts.writes,
            counters: parts.counters,
            clocks: parts.clocks,
            releases: parts.releases,
            identity: parts.identity,
            group: parts.group,
            shard_by: parts.shard_by,
        }
    }

    /// The group this member belongs to.
    pub fn group(&self) -> &str {
        &self.group
    }

    /// This member's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The members this one last read (identities, sorted), itself included once its
    /// Lease exists.
    pub fn members(&self) -> Vec<String> {
        self.state
            .borrow()
            .members
            .identities()
            .map(str::to_owned)
            .collect()
    }

    /// Whether `key` is in this member's shard of the members last read (what its
    /// filtered cache keeps). It may not be reconciled yet: see
    /// [`may_reconcile`](Self::may_reconcile). With [`ShardBy::Uid`] a key alone does
    /// not say: `false` (ask [`in_shard_object`](Self::in_shard_object)).
    pub fn in_shard(&self, key: &ObjectKey) -> bool {
        self.hash_of(key, None)
            .is_some_and(|hash| self.in_shard_hash(hash))
    }

    /// Whether the object `meta` describes is in this member's shard, whatever
    /// [`ShardBy`] decides by.
    pub fn in_shard_object(&self, meta: &ObjectMeta) -> bool {
        self.hash_of_meta(meta)
            .is_some_and(|hash| self.in_shard_hash(hash))
    }

    /// Whether this member may reconcile `key` now: its lease is held, the key is in
    /// its shard, and every other member has published a view in which the key is
    /// not theirs (see the [protocol](super#the-protocol)). With [`ShardBy::Uid`] a
    /// key alone does not say: `false` (ask
    /// [`may_reconcile_object`](Self::may_reconcile_object)).
    pub fn may_reconcile(&self, key: &ObjectKey) -> bool {
        self.hash_of(key, None)
            .is_some_and(|hash| self.may_reconcile_hash(hash))
    }

    /// Whether this member may reconcile the object `meta` describes now (see
    /// [`may_reconcile`](Self::may_reconcile)), whatever [`ShardBy`] decides by.
    pub fn may_reconcile_object(&self, meta: &ObjectMeta) -> bool {
        self.hash_of_meta(meta)
            .is_some_and(|hash| self.may_reconcile_hash(hash))
    }

    /// Whether this member may reconcile the key whose hash is `hash` now.
    pub(crate) fn may_reconcile_hash(&self, hash: u64) -> bool {
        let state = self.state.borrow();
        let now = state.effective_now(&self.clocks);
        state.may_reconcile(hash, now)
    }

    fn hash_of_meta(&self, meta: &ObjectMeta) -> Option<u64> {
        self.shard_by.object_hash(
            meta.namespace.as_deref(),
            meta.name.as_deref().unwrap_or(""),
            meta.uid.as_deref(),
        )
    }

    /// Whether this member holds its lease (renewed within the renew deadline) and
    /// is not stepping down.
    pub fn is_active(&self) -> bool {
        let state = self.state.borrow();
        state.active && state.effective_now(&self.clocks) < state.renew_deadline
    }

    /// Whether the member has stopped (its `run` returned or is stepping down for
    /// good).
    pub fn is_stopped(&self) -> bool {
        self.state.borrow().stopped
    }

    /// The member's figures now: members, whether active, the shard selector its
    /// sharded caches send, and its counters.
    pub fn stats(&self) -> ShardStats {
        let members = self.state.borrow().members.identities().count();
        let selector = self.server_selector();
        self.counters.snapshot(
            members,
            self.is_active(),
            *self.generation.borrow(),
            selector.as_ref(),
        )
    }

    /// Whether the member has stopped or its task is gone: nothing will change.
    #[cfg(feature = "metrics")]
    pub(crate) fn is_gone(&self) -> bool {
        self.state.has_changed().is_err() || self.state.borrow().stopped
    }

    /// Waits until the member's assignment changes (a read of the group, a renewal,
    /// a hand-off); `false` once the member is gone.
    pub async fn changed(&mut self) -> bool {
        self.state.changed().await.is_ok()
    }

    /// What decides which member a key belongs to.
    pub fn shard_by(&self) -> ShardBy {
        self.shard_by
    }

    /// The hash deciding the holder of `key`, whose object has `uid` if known;
    /// `None` by uid without one.
    pub(crate) fn hash_of(&self, key: &ObjectKey, uid: Option<&str>) -> Option<u64> {
        self.shard_by
            .object_hash(key.namespace.as_deref(), &key.name, uid)
    }

    /// The hash deciding the holder of `key`; by uid, that of the uid `uid` finds
    /// (asked only then).
    pub(crate) fn hash_of_key(
        &self,
        key: &ObjectKey,
        uid: impl FnOnce() -> Option<String>,
    ) -> Option<u64> {
        match self.shard_by {
            ShardBy::Uid => self.hash_of(key, uid().as_deref()),
            _ => self.hash_of(key, None),
        }
    }

    /// Whether the key whose hash is `hash` is in this member's shard.
    pub(crate) fn in_shard_hash(&self, hash: u64) -> bool {
        self.state.borrow().in_shard(hash)
    }

    /// The current assignment.
    pub(crate) fn assignment(&self) -> Arc<Assignment> {
        Arc::clone(&self.state.borrow())
    }

    /// Resolves once the member has read the group (this member's shard is known,
    /// even if empty), or has stopped.
    pub(crate) async fn read_once(&self) {
        let mut state = self.state.clone();
        // An error means the member is gone: nothing more to wait for.
        let _ = state
            .wait_for(|assignment| {
                assignment.stopped || assignment.members.identities().next().is_some()
            })
            .await;
    }

    /// The claim of a reconcile of `key`, whose holder `hash` decides, starting now,
    /// if this member [may reconcile](Self::may_reconcile) it: tied to this
    /// membership (see [`KeyClaim`]).
    pub(crate) fn claim(&self, key: &ObjectKey, hash: u64) -> Option<KeyClaim> {
        let state = self.state.borrow();
        if !state.may_reconcile(hash, state.effective_now(&self.clocks)) {
            return None;
        }
        Some(KeyClaim {
            state: self.state.clone(),
            membership: state.membership.clone(),
            key: key.clone(),
            hash,
            writes: Arc::clone(&self.writes),
            counters: Arc::clone(&self.counters),
            clocks: Arc::clone(&self.clocks),
            group: Arc::clone(&self.group),
            identity: Arc::clone(&self.identity),
        })
    }

    /// Keeps the member from deleting its Lease on shutdown until dropped (at most
    /// its hand-off timeout): a controller holds it until its pending events are
    /// written.
    pub(crate) fn hold_release(&self) -> Hold {
        self.releases.hold()
    }

    /// Records a reconcile of `key`, whose holder `hash` decides, as running, for
    /// hand-offs to wait on.
    pub(crate) fn enter(&self, key: &ObjectKey, hash: u64) -> InFlightGuard {
        self.in_flight.enter(key, hash)
    }
}

impl KeyFilter for ShardHandle {
    /// By uid, an object known only by its key is kept (to be reported): its uid is
    /// unknown.
    fn keeps(&self, namespace: Option<&str>, name: &str) -> bool {
        self.shard_by
            .key_hash(namespace, name)
            .is_none_or(|hash| self.in_shard_hash(hash))
    }

    fn keeps_object(&self, head: &ObjectHead<'_>) -> bool {
        self.shard_by
            .object_hash(head.namespace, head.name, head.uid)
            .is_none_or(|hash| self.in_shard_hash(hash))
    }

    fn generation(&self) -> watch::Receiver<u64> {
        self.generation.clone()
    }

    /// This member's share of the target view as hash ranges over the field the
    /// server hashes, when [`ShardBy`] names one.
    fn server_selector(&self) -> Option<ShardSelector> {
        let field = self.shard_by.server_field()?;
        let runs = self.state.borrow().members.runs_of(&self.identity);
        Some(ShardSelector::new(
            field,
            runs.iter().map(|run| run.hashes()),
        ))
    }
}
