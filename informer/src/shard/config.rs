//! [`ShardConfig`]: which group, who we are, and the lease timings.

use std::time::Duration;

use super::ShardError;
use crate::leader::{LeaderElectionConfig, LeaseTimings};
use crate::reflector::ShardField;

/// The label every member Lease of a group carries, with the group as its value.
pub const GROUP_LABEL: &str = "informer.rs/shard-group";

/// The annotation in which a member publishes the view it acts under: the identities
/// it shares keys with, comma-separated (see the [protocol](super#the-protocol)).
pub const VIEW_ANNOTATION: &str = "informer.rs/shard-view";

/// Which group of replicas to share keys with, under which identity, with which
/// timings.
///
/// Every replica of one controller uses the same namespace and group; each keeps a
/// Lease named `{group}-{identity}` there. The timings are leader election's (a 15 s
/// lease, a 10 s renew deadline, a 2 s retry period) and obey the same rules
/// (`lease_duration > renew_deadline > retry_period * 1.2`).
///
/// ```
/// use std::time::Duration;
/// use informer::shard::ShardConfig;
///
/// let config = ShardConfig::new("operators", "backup-controller")
///     .identity("backup-controller-0")
///     .lease_duration(Duration::from_secs(8))
///     .renew_deadline(Duration::from_secs(6))
///     .retry_period(Duration::from_secs(1));
/// assert_eq!(config.lease_name(), "backup-controller-backup-controller-0");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
#[must_use]
pub struct ShardConfig {
    /// The namespace of the member Leases.
    pub namespace: String,
    /// The group's name: the Leases' name prefix and [`GROUP_LABEL`] value.
    pub group: String,
    /// This replica's identity, unique among the live replicas (a Lease name part:
    /// lowercase letters, digits, `-`, `.`). The default is the host name (the Pod's
    /// name in a Pod) and a random suffix, so a restarted replica is a new member.
    pub identity: String,
    /// The member leases' timings, leader election's (a 15 s lease, a 10 s renew
    /// deadline, a 2 s retry period: client-go's defaults): a member that stops
    /// renewing loses its keys `lease_duration` after its last renewal was seen, plus
    /// up to one retry period; it stops working `renew_deadline` after it sent its
    /// last successful renewal; it renews and reads the others' every `retry_period`.
    /// Set with the setters below.
    pub timings: LeaseTimings,
    /// How long reconciles of keys that moved to another member may still run before
    /// they are dropped (default 10 s). The new holder starts those keys only after
    /// they ended here.
    pub handoff_timeout: Duration,
    /// What decides which member a key belongs to (default [`ShardBy::Key`]). Part of
    /// the protocol: every member of a group must use the same.
    pub shard_by: ShardBy,
}

/// What decides which member a key belongs to, and whether the API server can send
/// each member only its share.
///
/// Every member of a group must use the same: members deciding by different rules
/// would each claim keys the others also claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ShardBy {
    /// The object's key, its namespace and name: keys spread evenly over the members
    /// whatever the namespaces. The API server cannot hash a key, so every replica
    /// receives every object of the sharded caches and drops the others' before
    /// decoding them.
    #[default]
    Key,
    /// The object's namespace: every key of a namespace belongs to one member, and so
    /// do the objects the controller owns there (an owner reference never leaves its
    /// namespace). The API server hashes the namespace itself: a server with
    /// server-side sharded list and watch (Kubernetes 1.36 and later with the
    /// `ShardedListAndWatch` feature gate) sends each replica only its share, of the
    /// primary type and of every namespaced type it holds; any other server sends
    /// everything and the replica filters it as with [`Key`](Self::Key). The split is
    /// as even as the namespaces are many and alike: with a few large namespaces, one
    /// member may get most keys. Cluster-scoped keys (no namespace) all belong to one
    /// member.
    Namespace,
    /// The object's uid: keys spread evenly, within a namespace too, and the API
    /// server hashes the uid itself, so where it can (as for
    /// [`Namespace`](Self::Namespace)) each replica receives only its share of the
    /// primary type. The caches of owned types keep the children of the member's
    /// primaries by their owner reference's uid; the server cannot filter those.
    ///
    /// **The shard follows the object, not its name.** A key is reconciled by the
    /// member that holds its object, or the deleted object's last state: an object
    /// deleted and created again under the same name (a new uid) may belong to
    /// another member, so the cleanup of the old object and the reconcile of the new
    /// one may run at once on two replicas (a reconcile that writes by name should
    /// check the uid it acts for, e.g. with a precondition). A key whose object no
    /// member has seen (one a watched type's mapper names, before it exists) is
    /// reconciled by none: nothing says whose it is.
    Uid,
}

impl ShardBy {
    /// The hash deciding the holder of the key `namespace`/`name`; `None` when the
    /// key alone does not decide ([`Uid`](Self::Uid)).
    pub(crate) fn key_hash(self, namespace: Option<&str>, name: &str) -> Option<u64> {
        match self {
            Self::Key => Some(super::ring::key_hash(namespace, name)),
            Self::Namespace => Some(super::ranges::field_hash(namespace.unwrap_or(""))),
            Self::Uid => None,
        }
    }

    /// The hash deciding the holder of the object `namespace`/`name` with `uid`;
    /// `None` by uid without one.
    pub(crate) fn object_hash(
        self,
        namespace: Option<&str>,
        name: &str,
        uid: Option<&str>,
    ) -> Option<u64> {
        match self {
            Self::Uid => uid.map(super::ranges::field_hash),
            _ => self.key_hash(namespace, name),
        }
    }

    /// How a view lays the buckets out under this rule: by key in scattered buckets
    /// (nothing is sent to the server), by a field the server hashes in a few ranges
    /// per member (the shard selector it is sent).
    pub(crate) fn layout(self) -> super::ring::Layout {
        match self {
            Self::Key => super::ring::Layout::PerBucket,
            Self::Namespace | Self::Uid => super::ring::Layout::Ranges,
        }
    }

    /// The field the API server hashes for this rule, if it can.
    pub(crate) fn server_field(self) -> Option<ShardField> {
        match self {
            Self::Key => None,
            Self::Namespace => Some(ShardField::Namespace),
            Self::Uid => Some(ShardField::Uid),
        }
    }
}

impl ShardConfig {
    /// The group `group` in `namespace`, with the default identity and timings.
    pub fn new(namespace: impl Into<String>, group: impl Into<String>) -> Self {
        let election = LeaderElectionConfig::default();
        Self {
            namespace: namespace.into(),
            group: group.into(),
            identity: default_identity(&election.identity),
            timings: LeaseTimings::default(),
            handoff_timeout: Duration::from_secs(10),
            shard_by: ShardBy::Key,
        }
    }

    /// This replica's identity (default: host name and a random suffix).
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = identity.into();
        self
    }

    /// How long a lease lasts after its last observed renewal (default 15 s).
    pub fn lease_duration(mut self, duration: Duration) -> Self {
        self.timings.lease_duration = duration;
        self
    }

    /// How long a member tries to renew before it stops working (default 10 s).
    pub fn renew_deadline(mut self, deadline: Duration) -> Self {
        self.timings.renew_deadline = deadline;
        self
    }

    /// How often a member renews and reads the group (default 2 s).
    pub fn retry_period(mut self, period: Duration) -> Self {
        self.timings.retry_period = period;
        self
    }

    /// How long reconciles of keys that moved away may still run (default 10 s).
    pub fn handoff_timeout(mut self, timeout: Duration) -> Self {
        self.handoff_timeout = timeout;
        self
    }

    /// What decides which member a key belongs to (default [`ShardBy::Key`]).
    pub fn shard_by(mut self, shard_by: ShardBy) -> Self {
        self.shard_by = shard_by;
        self
    }

    /// This member's Lease name: `{group}-{identity}`.
    pub fn lease_name(&self) -> String {
        format!("{}-{}", self.group, self.identity)
    }

    /// The label selector of the group's Leases.
    pub(crate) fn selector(&self) -> String {
        format!("{GROUP_LABEL}={}", self.group)
    }

    /// Checks names (usable in a Lease name and a label) and timings (leader
    /// election's rules).
    pub(crate) fn validate(&self) -> Result<(), ShardError> {
        if self.namespace.is_empty() || self.group.is_empty() {
            return Err(ShardError::Unnamed);
        }
        if !is_name_part(&self.group, 40, false) {
            return Err(ShardError::InvalidGroup {
                group: self.group.clone(),
            });
        }
        if !is_name_part(&self.identity, 200, true) {
            return Err(ShardError::InvalidIdentity {
                identity: self.identity.clone(),
            });
        }
        self.timings.validate().map_err(ShardError::Timings)
    }

    /// The lease duration in whole seconds, as the Lease holds it.
    pub(crate) fn lease_duration_seconds(&self) -> i32 {
        self.timings.lease_duration_seconds()
    }
}

/// Whether `part` is 1 to `max` lowercase letters, digits and `-` (and `.` if
/// `dots`), starting and ending with a letter or digit.
fn is_name_part(part: &str, max: usize, dots: bool) -> bool {
    let bytes = part.as_bytes();
    let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.len() <= max
        && bytes.first().is_some_and(edge)
        && bytes.last().is_some_and(edge)
        && bytes
            .iter()
            .all(|b| edge(b) || *b == b'-' || (dots && *b == b'.'))
}

/// Leader election's default identity (`host_suffix`) made a Lease name part.
fn default_identity(election_identity: &str) -> String {
    let cleaned: String = election_identity
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let trimmed = cleaned.trim_matches(|c: char| c == '-' || c == '.');
    let tail = trimmed.len().saturating_sub(200);
    trimmed[tail..].trim_start_matches(['-', '.']).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leader::LeaderError;

    #[test]
    fn each_rule_hashes_what_it_names() {
        use crate::shard::ranges::field_hash;
        let uid = Some("6f1c2b1e-0d7a-4c55-9b3e-2a1f0e9d8c7b");
        // By key: namespace and name, never the uid.
        let by_key = ShardBy::Key.object_hash(Some("ns"), "web", uid);
        assert_eq!(by_key, ShardBy::Key.object_hash(Some("ns"), "web", None));
        assert_ne!(by_key, ShardBy::Key.object_hash(Some("ns"), "api", None));
        // By namespace: the server's FNV-1a of the namespace, whatever the name.
        assert_eq!(
            ShardBy::Namespace.object_hash(Some("ns"), "web", uid),
            Some(field_hash("ns"))
        );
        assert_eq!(
            ShardBy::Namespace.key_hash(None, "node-1"),
            Some(field_hash(""))
        );
        // By uid: the server's FNV-1a of the uid; a key alone says nothing.
        assert_eq!(
            ShardBy::Uid.object_hash(Some("ns"), "web", uid),
            uid.map(field_hash)
        );
        assert_eq!(ShardBy::Uid.key_hash(Some("ns"), "web"), None);
        assert_eq!(ShardBy::Uid.object_hash(Some("ns"), "web", None), None);
        assert_eq!(ShardBy::Key.server_field(), None);
        assert_eq!(ShardBy::Uid.server_field(), Some(ShardField::Uid));
    }

    #[test]
    fn names_and_timings_are_checked() {
        let valid = ShardConfig::new("default", "web").identity("web-0");
        assert!(valid.validate().is_ok());
        assert!(matches!(
            ShardConfig::new("", "web").validate(),
            Err(ShardError::Unnamed)
        ));
        for group in ["Web", "web_1", "-web", "a".repeat(41).as_str()] {
            assert!(
                matches!(
                    ShardConfig::new("default", group).validate(),
                    Err(ShardError::InvalidGroup { .. })
                ),
                "{group}"
            );
        }
        for identity in ["", "Web-0", "web_0", "web-0-"] {
            assert!(
                matches!(
                    valid.clone().identity(identity).validate(),
                    Err(ShardError::InvalidIdentity { .. })
                ),
                "{identity}"
            );
        }
        let error = valid
            .clone()
            .renew_deadline(Duration::from_secs(20))
            .validate()
            .unwrap_err();
        assert!(matches!(
            error,
            ShardError::Timings(LeaderError::LeaseNotLongerThanRenewDeadline { .. })
        ));
        // The member Leases hold whole seconds, as the election's.
        let error = valid
            .clone()
            .lease_duration(Duration::from_millis(2900))
            .renew_deadline(Duration::from_millis(2500))
            .retry_period(Duration::from_millis(500))
            .validate()
            .unwrap_err();
        assert!(matches!(
            error,
            ShardError::Timings(LeaderError::LeaseNotWholeSeconds { written: 2, .. })
        ));
    }

    #[test]
    fn default_identities_are_valid_and_unique() {
        let a = ShardConfig::new("default", "web");
        let b = ShardConfig::new("default", "web");
        assert!(a.validate().is_ok(), "{}", a.identity);
        assert_ne!(a.identity, b.identity);
        assert_eq!(default_identity("My_Host_00ff"), "my-host-00ff");
        assert_eq!(a.selector(), "informer.rs/shard-group=web");
    }
}
