//! Leader election and shard membership metrics, read from the observed handles at
//! scrape time, like the informers'.
//!
//! Leader election, labelled `name` (the Lease's name), with client-go's names:
//! `leader_election_master_status` (1 while this replica leads) and
//! `leader_election_slowpath_total`; ours, `informer_leader_dropped_reconciles_total`
//! and `informer_leader_refused_writes_total`. Shard membership, labelled `group`:
//! `informer_shard_members`, `informer_shard_active` and the counters of
//! [`ShardStats`](crate::shard::ShardStats).

use std::fmt;
use std::sync::{Arc, Mutex};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::{Value, labelled_family};
use crate::leader::LeadershipHandle;
use crate::lock::MutexExt;
use crate::shard::{ShardHandle, ShardStats};

/// The elections and shard memberships being observed, each reported until its
/// elector or member has stopped.
#[derive(Default)]
pub(super) struct Observed {
    elections: Vec<LeadershipHandle>,
    shards: Vec<ShardHandle>,
}

impl Observed {
    /// Observes `handle`, in place of an earlier election on a Lease of the same name
    /// (one series per label value).
    pub(super) fn election(&mut self, handle: &LeadershipHandle) {
        self.elections
            .retain(|known| known.lease_name() != handle.lease_name());
        self.elections.push(handle.clone());
    }

    /// Observes `handle`, in place of an earlier member of the same group.
    pub(super) fn shard(&mut self, handle: &ShardHandle) {
        self.shards.retain(|known| known.group() != handle.group());
        self.shards.push(handle.clone());
    }
}

/// Shared by [`super::Metrics`] (which adds to it) and the collector (which reads it).
pub(super) type Coordination = Arc<Mutex<Observed>>;

/// Encodes every observed election and shard membership on each scrape.
pub(super) struct CoordinationCollector {
    pub(super) observed: Coordination,
}

impl fmt::Debug for CoordinationCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let observed = self.observed.locked();
        f.debug_struct("CoordinationCollector")
            .field("elections", &observed.elections.len())
            .field("shards", &observed.shards.len())
            .finish()
    }
}

/// A shard counter: name (the encoder appends `_total`), help, value.
type ShardCounter = (&'static str, &'static str, fn(&ShardStats) -> u64);

const SHARD_COUNTERS: [ShardCounter; 6] = [
    (
        "informer_shard_membership_changes",
        "Reads of the shard group that found other members than before (each moves keys)",
        |s| s.membership_changes,
    ),
    (
        "informer_shard_fenced_members",
        "Leases of other members deleted by this one because they were not renewed for a lease duration",
        |s| s.fenced_members,
    ),
    (
        "informer_shard_rejoins",
        "Times this member found its own Lease deleted by another (not renewed for a lease duration) and joined again",
        |s| s.rejoins,
    ),
    (
        "informer_shard_dropped_reconciles",
        "Reconciles dropped before their next step: their key moved away and outlasted the hand-off timeout, the member's lease may have expired for the others (a pause, a partition), or it was fenced or shut down",
        |s| s.dropped_reconciles,
    ),
    (
        "informer_shard_refused_writes",
        "Writes through a sharded controller's context refused before they were sent, because the key was no longer this member's or its lease may have expired for the others",
        |s| s.refused_writes,
    ),
    (
        "informer_shard_request_errors",
        "Requests of the shard member to the API server that failed (each is retried)",
        |s| s.request_errors,
    ),
];

impl Collector for CoordinationCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        let (mut elections, mut shards) = {
            let mut observed = self.observed.locked();
            observed.elections.retain(|handle| !handle.is_gone());
            observed.shards.retain(|handle| !handle.is_gone());
            (observed.elections.clone(), observed.shards.clone())
        };
        elections.sort_by(|a, b| a.lease_name().cmp(b.lease_name()));
        shards.sort_by(|a, b| a.group().cmp(b.group()));
        let e = &mut encoder;
        labelled_family(
            e,
            "leader_election_master_status",
            "1 while this replica leads on the Lease called name, 0 while it follows",
            MetricType::Gauge,
            "name",
            elections
                .iter()
                .map(|h| (h.lease_name(), Value::from(h.is_leading()))),
        )?;
        labelled_family(
            e,
            "leader_election_slowpath",
            "Renewals of the leader's Lease that had to read it first (client-go's slow path)",
            MetricType::Counter,
            "name",
            elections
                .iter()
                .map(|h| (h.lease_name(), Value::Count(h.slow_path_renewals()))),
        )?;
        labelled_family(
            e,
            "informer_leader_dropped_reconciles",
            "Reconciles of a leader-elected controller dropped before their next step because their term ended (a lost lease, a pause past the deadline)",
            MetricType::Counter,
            "name",
            elections
                .iter()
                .map(|h| (h.lease_name(), Value::Count(h.dropped_reconciles()))),
        )?;
        labelled_family(
            e,
            "informer_leader_refused_writes",
            "Writes through a leader-elected controller's context refused before they were sent because their term had ended",
            MetricType::Counter,
            "name",
            elections
                .iter()
                .map(|h| (h.lease_name(), Value::Count(h.refused_writes()))),
        )?;

        let stats: Vec<(&str, ShardStats)> =
            shards.iter().map(|h| (h.group(), h.stats())).collect();
        labelled_family(
            e,
            "informer_shard_members",
            "Members of the shard group as this member last read it, itself included",
            MetricType::Gauge,
            "group",
            stats.iter().map(|(g, s)| (*g, Value::Int(s.members))),
        )?;
        labelled_family(
            e,
            "informer_shard_active",
            "1 while this member holds its lease and may reconcile the keys of its shard",
            MetricType::Gauge,
            "group",
            stats.iter().map(|(g, s)| (*g, Value::from(s.active))),
        )?;
        for (name, help, value) in SHARD_COUNTERS {
            labelled_family(
                e,
                name,
                help,
                MetricType::Counter,
                "group",
                stats.iter().map(|(g, s)| (*g, Value::Count(value(s)))),
            )?;
        }
        Ok(())
    }
}
