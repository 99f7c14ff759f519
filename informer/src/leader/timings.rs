//! [`LeaseTimings`]: how long a Lease lasts, how long its holder tries to renew it and
//! how often everyone tries, with client-go's defaults and rules. Leader election
//! ([`LeaderElectionConfig`](super::LeaderElectionConfig)) and sharding
//! ([`ShardConfig`](crate::shard::ShardConfig)) share them.

use std::time::Duration;

use super::LeaderError;

/// client-go's `JitterFactor`: a candidate waits between one and `1 + JITTER_FACTOR`
/// retry periods between two tries to acquire, so candidates started together do not
/// hit the API server in step.
pub const JITTER_FACTOR: f64 = 1.2;

/// The timings of a Lease held by renewing it, as a
/// [`LeaderElectionConfig`](super::LeaderElectionConfig) or a
/// [`ShardConfig`](crate::shard::ShardConfig) holds them: set with the config's
/// setters, read with its `timings()`. The defaults are client-go's and those of
/// Kubernetes' own components (kube-controller-manager, kube-scheduler): a 15 s lease,
/// a 10 s renew deadline and a 2 s retry period; the rules are client-go's
/// `NewLeaderElector`'s: `lease_duration > renew_deadline > retry_period * 1.2`, all
/// above zero, and the lease a whole number of seconds, at least one (the Lease holds
/// whole seconds and the other replicas time what it holds, so a holder timing a
/// fraction more would work on after they took over).
///
/// ```
/// use std::time::Duration;
/// use informer::leader::LeaderElectionConfig;
///
/// let config = LeaderElectionConfig::default().retry_period(Duration::from_secs(1));
/// let timings = config.timings;
/// assert_eq!(timings.lease_duration, Duration::from_secs(15));
/// assert_eq!(timings.renew_deadline, Duration::from_secs(10));
/// assert_eq!(timings.retry_period, Duration::from_secs(1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseTimings {
    /// How long the lease is valid after the last change a candidate *observed*
    /// (client-go's `LeaseDuration`, 15 s): a standby takes over only after seeing
    /// no renewal for this long. Written to the Lease in whole seconds.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up leading
    /// (client-go's `RenewDeadline`, 10 s), measured from the moment it sent its last
    /// successful renewal. Shorter than the lease duration, so the leader stops
    /// before anyone else can take over.
    pub renew_deadline: Duration,
    /// How long to wait between tries (client-go's `RetryPeriod`, 2 s); candidates
    /// add up to [`JITTER_FACTOR`] times as much again.
    pub retry_period: Duration,
}

impl Default for LeaseTimings {
    fn default() -> Self {
        Self {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

impl LeaseTimings {
    /// Checks the timings as client-go's `NewLeaderElector` does.
    pub(crate) fn validate(&self) -> Result<(), LeaderError> {
        for (which, duration) in [
            ("lease_duration", self.lease_duration),
            ("renew_deadline", self.renew_deadline),
            ("retry_period", self.retry_period),
        ] {
            if duration.is_zero() {
                return Err(LeaderError::ZeroDuration { which });
            }
        }
        if self.lease_duration < Duration::from_secs(1) {
            return Err(LeaderError::LeaseUnderOneSecond {
                lease_duration: self.lease_duration,
            });
        }
        if self.lease_duration.subsec_nanos() != 0 {
            return Err(LeaderError::LeaseNotWholeSeconds {
                lease_duration: self.lease_duration,
                written: self.lease_duration.as_secs(),
            });
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(LeaderError::LeaseNotLongerThanRenewDeadline {
                lease_duration: self.lease_duration,
                renew_deadline: self.renew_deadline,
            });
        }
        if self.renew_deadline <= self.retry_period.mul_f64(JITTER_FACTOR) {
            return Err(LeaderError::RenewDeadlineTooShort {
                renew_deadline: self.renew_deadline,
                retry_period: self.retry_period,
            });
        }
        Ok(())
    }

    /// The lease duration in whole seconds, as the Lease records it.
    pub(crate) fn lease_duration_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

/// When work still running on a Lease's behalf must stop, unless the lease is renewed:
/// halfway between the holder's renew deadline and the lease's expiry (both counted
/// from the last successful renewal's send time), the other half being the margin for
/// clocks that drift and timers that fire late on a loaded machine. Leader election's
/// terms and shard members use it alike.
pub(crate) fn drop_deadline(
    renew_deadline: tokio::time::Instant,
    lease_expiry: tokio::time::Instant,
) -> tokio::time::Instant {
    renew_deadline + (lease_expiry - renew_deadline) / 2
}
