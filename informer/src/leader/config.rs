//! [`LeaderElectionConfig`]: which Lease, who we are, and the three timings.

use std::time::Duration;

use rand::Rng;

use super::LeaderError;
use super::timings::{JITTER_FACTOR, LeaseTimings};

/// Which Lease to compete for, under which identity, with which timings.
///
/// The defaults are those of Kubernetes' own components (kube-controller-manager,
/// kube-scheduler): a 15 s lease, a 10 s renew deadline and a 2 s retry period. The
/// Lease's namespace and name have no default: [`lease`](Self::lease) sets them.
/// [`LeaderElector::new`](super::LeaderElector::new) checks the timings as client-go
/// does: `lease_duration > renew_deadline > retry_period * 1.2`, all above zero.
///
/// ```
/// use std::time::Duration;
/// use informer::leader::LeaderElectionConfig;
///
/// let config = LeaderElectionConfig::default()
///     .lease("kube-system", "backup-operator")
///     .lease_duration(Duration::from_secs(30))
///     .renew_deadline(Duration::from_secs(20));
/// assert!(config.identity.contains('_')); // hostname_suffix
/// assert_eq!(config.timings.retry_period, Duration::from_secs(2));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
#[must_use]
pub struct LeaderElectionConfig {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name: every replica of one controller uses the same.
    pub name: String,
    /// This replica's identity, written as the Lease's `holderIdentity`. It must be
    /// unique among the replicas; the default is the host name (the Pod name in a
    /// Pod) and a random suffix, so a restarted replica is a new candidate.
    pub identity: String,
    /// The lease's timings (client-go's `LeaseDuration`, `RenewDeadline` and
    /// `RetryPeriod`: 15 s, 10 s, 2 s), set with the setters below.
    pub timings: LeaseTimings,
    /// Release the lease when [`LeaderElector::run`](super::LeaderElector::run)
    /// is shut down while leading (client-go's `ReleaseOnCancel`, on by default): the
    /// holder is cleared, so a standby takes over at its next try instead of waiting
    /// for the lease to expire.
    pub release_on_shutdown: bool,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        Self {
            namespace: String::new(),
            name: String::new(),
            identity: default_identity(),
            timings: LeaseTimings::default(),
            release_on_shutdown: true,
        }
    }
}

impl LeaderElectionConfig {
    /// The Lease to compete for (it is created on first use).
    pub fn lease(mut self, namespace: impl Into<String>, name: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self.name = name.into();
        self
    }

    /// This replica's identity (default: host name and a random suffix).
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = identity.into();
        self
    }

    /// How long the lease lasts after its last observed renewal (default 15 s).
    pub fn lease_duration(mut self, duration: Duration) -> Self {
        self.timings.lease_duration = duration;
        self
    }

    /// How long the leader tries to renew before it stops leading (default 10 s).
    pub fn renew_deadline(mut self, deadline: Duration) -> Self {
        self.timings.renew_deadline = deadline;
        self
    }

    /// The wait between tries (default 2 s, plus jitter for candidates).
    pub fn retry_period(mut self, period: Duration) -> Self {
        self.timings.retry_period = period;
        self
    }

    /// Whether a clean shutdown releases the lease (default `true`).
    pub fn release_on_shutdown(mut self, release: bool) -> Self {
        self.release_on_shutdown = release;
        self
    }

    /// Checks the config as client-go's `NewLeaderElector` does, and that the Lease
    /// and identity are named.
    pub(crate) fn validate(&self) -> Result<(), LeaderError> {
        if self.namespace.is_empty() || self.name.is_empty() {
            return Err(LeaderError::LeaseUnnamed);
        }
        if self.identity.is_empty() {
            return Err(LeaderError::EmptyIdentity);
        }
        self.timings.validate()
    }

    /// The lease duration as written to the Lease: whole seconds, as client-go does.
    pub(crate) fn lease_duration_seconds(&self) -> i32 {
        self.timings.lease_duration_seconds()
    }
}

/// The host name (the Pod's name in a Pod) and a random suffix, as client-go's
/// callers build it (`hostname + "_" + uuid`).
fn default_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "replica".to_owned());
    let suffix: u64 = rand::rng().random();
    format!("{host}_{suffix:016x}")
}

/// A wait of `period` plus up to `JITTER_FACTOR` times as much again (client-go's
/// `wait.Jitter(period, JitterFactor)`).
pub(crate) fn jittered(period: Duration) -> Duration {
    period + period.mul_f64(rand::rng().random::<f64>() * JITTER_FACTOR)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid() -> LeaderElectionConfig {
        LeaderElectionConfig::default().lease("default", "lock")
    }

    /// client-go's TestLeaderElectionConfigValidation, and the names.
    #[test]
    fn validation_follows_client_go() {
        assert!(valid().validate().is_ok());
        let check = |config: LeaderElectionConfig| config.validate().unwrap_err();
        assert!(matches!(
            check(LeaderElectionConfig::default()),
            LeaderError::LeaseUnnamed
        ));
        assert!(matches!(
            check(valid().identity("")),
            LeaderError::EmptyIdentity
        ));
        assert!(matches!(
            check(valid().retry_period(Duration::ZERO)),
            LeaderError::ZeroDuration {
                which: "retry_period"
            }
        ));
        assert!(matches!(
            check(valid().renew_deadline(Duration::from_secs(15))),
            LeaderError::LeaseNotLongerThanRenewDeadline { .. }
        ));
        // renew > retry * 1.2: 2.4 s is not enough for a 2 s retry period.
        let error = check(valid().renew_deadline(Duration::from_millis(2400)));
        assert!(matches!(error, LeaderError::RenewDeadlineTooShort { .. }));
        assert!(error.to_string().contains("1.2"), "{error}");
        assert!(
            valid()
                .renew_deadline(Duration::from_millis(2401))
                .validate()
                .is_ok()
        );
        assert!(matches!(
            check(
                valid()
                    .lease_duration(Duration::from_millis(900))
                    .renew_deadline(Duration::from_millis(500))
                    .retry_period(Duration::from_millis(100))
            ),
            LeaderError::LeaseUnderOneSecond { .. }
        ));
    }

    /// The Lease holds whole seconds and the other replicas time what it holds: a
    /// fraction more on the holder's side would let it work on after a takeover (with
    /// 2.9 s, the others take over 2 s after the last renewal they saw, while the
    /// holder's own deadlines run to 2.5 s and 2.7 s). Refused, saying what the Lease
    /// would record.
    #[test]
    fn a_lease_duration_that_is_not_whole_seconds_is_refused() {
        let config = valid()
            .lease_duration(Duration::from_millis(2900))
            .renew_deadline(Duration::from_millis(2500))
            .retry_period(Duration::from_millis(500));
        let error = config.validate().unwrap_err();
        assert!(
            matches!(
                error,
                LeaderError::LeaseNotWholeSeconds {
                    lease_duration,
                    written: 2
                } if lease_duration == Duration::from_millis(2900)
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains("2s"), "{error}");
        assert!(
            config
                .lease_duration(Duration::from_secs(3))
                .validate()
                .is_ok(),
            "whole seconds are what the Lease records"
        );
        assert_eq!(valid().lease_duration_seconds(), 15);
    }

    #[test]
    fn default_identities_differ_and_jitter_stays_in_range() {
        assert_ne!(default_identity(), default_identity());
        let period = Duration::from_secs(2);
        for _ in 0..100 {
            let wait = jittered(period);
            assert!(wait >= period && wait <= period.mul_f64(1.0 + JITTER_FACTOR));
        }
    }
}
