//! Why an elector could not be built, or why one try on the Lease failed.

use std::time::Duration;

use crate::cause::kube_cause;

/// A [`LeaderElectionConfig`](super::LeaderElectionConfig) that breaks a rule, or a
/// failed request about the Lease.
///
/// The config errors come from [`LeaderElector::new`](super::LeaderElector::new). The
/// request errors are what the elector logs when a try fails; it keeps trying, as
/// client-go does, so they never end [`run`](super::LeaderElector::run).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LeaderError {
    /// The Lease's namespace or name is empty.
    #[error("the leader election Lease needs a namespace and a name (LeaderElectionConfig::lease)")]
    LeaseUnnamed,
    /// The identity is empty: nobody could tell the holder apart.
    #[error("the leader election identity is empty")]
    EmptyIdentity,
    /// One of the three timings is zero.
    #[error("leader election {which} must be greater than zero")]
    ZeroDuration {
        /// Which one: `lease_duration`, `renew_deadline` or `retry_period`.
        which: &'static str,
    },
    /// The lease duration is under a second: the Lease holds it in whole seconds.
    #[error(
        "leader election lease_duration {lease_duration:?} is under one second (the Lease holds whole seconds)"
    )]
    LeaseUnderOneSecond {
        /// The configured lease duration.
        lease_duration: Duration,
    },
    /// The lease duration is not a whole number of seconds. The Lease records whole
    /// seconds (`leaseDurationSeconds`), and the others judge its expiry by what is
    /// written: 2.9 s would be written as 2 s, and the holder, timing 2.9 s, would
    /// work on after another replica took over.
    #[error(
        "leader election lease_duration {lease_duration:?} is not a whole number of seconds (the Lease holds whole seconds, and the other replicas would time {written}s)"
    )]
    LeaseNotWholeSeconds {
        /// The configured lease duration.
        lease_duration: Duration,
        /// What the Lease would record, in seconds.
        written: u64,
    },
    /// The lease would expire before the leader gives up renewing: two leaders.
    #[error(
        "leader election lease_duration {lease_duration:?} must be greater than renew_deadline {renew_deadline:?}"
    )]
    LeaseNotLongerThanRenewDeadline {
        /// The configured lease duration.
        lease_duration: Duration,
        /// The configured renew deadline.
        renew_deadline: Duration,
    },
    /// The leader would give up before its first retry could run.
    #[error(
        "leader election renew_deadline {renew_deadline:?} must be greater than retry_period {retry_period:?} * 1.2 (the jitter factor)"
    )]
    RenewDeadlineTooShort {
        /// The configured renew deadline.
        renew_deadline: Duration,
        /// The configured retry period.
        retry_period: Duration,
    },
    /// A request about the Lease failed (the API server refused it or could not be
    /// reached); a conflict means another replica wrote the Lease first.
    #[error("{action} Lease {lease} failed: {}", kube_cause(source))]
    Api {
        /// What was asked: `reading`, `creating` or `updating`.
        action: &'static str,
        /// The Lease, as `namespace/name`.
        lease: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// A request about the Lease got no answer in time.
    #[error("{action} Lease {lease}: no answer within {after:?}")]
    Timeout {
        /// What was asked: `reading`, `creating` or `updating`.
        action: &'static str,
        /// The Lease, as `namespace/name`.
        lease: String,
        /// How long the elector waited.
        after: Duration,
    },
}

#[cfg(test)]
mod tests {
    use super::LeaderError;

    #[test]
    fn a_failed_request_says_what_the_server_answered() {
        let denied = kube::Error::Api(
            kube::core::Status::failure(
                r#"leases.coordination.k8s.io "ctl" is forbidden: User "x" cannot update"#,
                "Forbidden",
            )
            .with_code(403)
            .boxed(),
        );
        let error = LeaderError::Api {
            action: "updating",
            lease: "kube-system/ctl".to_owned(),
            source: denied,
        };
        assert_eq!(
            error.to_string(),
            r#"updating Lease kube-system/ctl failed: 403 Forbidden: leases.coordination.k8s.io "ctl" is forbidden: User "x" cannot update"#
        );
    }
}
