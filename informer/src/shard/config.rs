//! [`ShardConfig`]: which group, who we are, and the lease timings.

use std::ops::{Deref, DerefMut};
use std::time::Duration;

use super::ShardError;
use crate::leader::{LeaderElectionConfig, LeaseTimings};

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
    /// Read as the config's own fields (`config.retry_period`), set with its setters.
    pub timings: LeaseTimings,
    /// How long reconciles of keys that moved to another member may still run before
    /// they are dropped (default 10 s). The new owner starts those keys only after
    /// they ended here.
    pub handoff_timeout: Duration,
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
        }
    }

    /// This replica's identity (default: host name and a random suffix).
    #[must_use]
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = identity.into();
        self
    }

    /// How long a lease lasts after its last observed renewal (default 15 s).
    #[must_use]
    pub fn lease_duration(mut self, duration: Duration) -> Self {
        self.timings = self.timings.lease_duration(duration);
        self
    }

    /// How long a member tries to renew before it stops working (default 10 s).
    #[must_use]
    pub fn renew_deadline(mut self, deadline: Duration) -> Self {
        self.timings = self.timings.renew_deadline(deadline);
        self
    }

    /// How often a member renews and reads the group (default 2 s).
    #[must_use]
    pub fn retry_period(mut self, period: Duration) -> Self {
        self.timings = self.timings.retry_period(period);
        self
    }

    /// How long reconciles of keys that moved away may still run (default 10 s).
    #[must_use]
    pub fn handoff_timeout(mut self, timeout: Duration) -> Self {
        self.handoff_timeout = timeout;
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

// The timings read as the config's fields (`config.retry_period`), as they did before
// both configs shared them.
impl Deref for ShardConfig {
    type Target = LeaseTimings;

    fn deref(&self) -> &LeaseTimings {
        &self.timings
    }
}

impl DerefMut for ShardConfig {
    fn deref_mut(&mut self) -> &mut LeaseTimings {
        &mut self.timings
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
