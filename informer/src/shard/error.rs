//! Why a shard member could not be built, or why one request about a Lease failed.

use std::time::Duration;

use crate::cause::kube_cause;

/// A [`ShardConfig`](super::ShardConfig) that breaks a rule, or a failed request
/// about a member Lease.
///
/// The config errors come from [`ShardMember::new`](super::ShardMember::new) and name
/// the `ShardConfig` setting at fault. The request errors are what the member logs
/// when a renewal, a list or a fencing delete fails; it keeps trying, so they never
/// end [`run`](super::ShardMember::run). Each says its failure in one line, the cause
/// included (the HTTP status once, the server's message once), so none gives its
/// cause again as its [`source`](std::error::Error::source): a reporter that follows
/// sources would print it twice, kube's dump of the whole `Status` with it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShardError {
    /// The namespace or the group is empty.
    #[error("a shard group needs a namespace and a group name (ShardConfig::new)")]
    Unnamed,
    /// The group is not usable as a label value and Lease name prefix.
    #[error(
        "shard group {group:?} must be 1-40 lowercase letters, digits or '-', starting and ending with a letter or digit"
    )]
    InvalidGroup {
        /// The group as configured.
        group: String,
    },
    /// The identity is not usable in a Lease name.
    #[error(
        "shard identity {identity:?} must be 1-200 lowercase letters, digits, '-' or '.', starting and ending with a letter or digit"
    )]
    InvalidIdentity {
        /// The identity as configured.
        identity: String,
    },
    /// The timings break leader election's rules, which members' leases follow (the
    /// rule broken, as leader election states it, in the variant).
    #[error("ShardConfig {}", timing_rule(.0))]
    Timings(crate::leader::LeaderError),
    /// A request about a Lease failed (the API server refused it or could not be
    /// reached).
    #[error("{action} shard Lease {lease} failed: {}", kube_cause(error))]
    Api {
        /// What was asked: `renewing`, `creating`, `listing`, `fencing`, `releasing`.
        action: &'static str,
        /// The Lease (`namespace/name`), or the group's selector for a list.
        lease: String,
        /// The client's error.
        error: kube::Error,
    },
    /// A request about a Lease got no answer in time.
    #[error("{action} shard Lease {lease}: no answer within {after:?}")]
    Timeout {
        /// What was asked.
        action: &'static str,
        /// The Lease, or the group's selector for a list.
        lease: String,
        /// How long the member waited.
        after: Duration,
    },
}

impl ShardError {
    /// The HTTP status the API server answered, if it answered with one.
    pub(crate) fn status(&self) -> Option<u16> {
        match self {
            ShardError::Api {
                error: kube::Error::Api(status),
                ..
            } => Some(status.code),
            _ => None,
        }
    }
}

/// A timing rule leader election's config broke, said of the shard config: the
/// setting and the rule (`lease_duration 2.9s is not a whole number of seconds ...`),
/// without leader election's own name.
fn timing_rule(error: &crate::leader::LeaderError) -> String {
    let rule = error.to_string();
    match rule.strip_prefix("leader election ") {
        Some(rule) => rule.to_owned(),
        None => format!("timings: {rule}"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::ShardError;
    use crate::leader::LeaderError;

    #[test]
    fn invalid_timings_say_which_setting_of_the_shard_config_breaks_which_rule() {
        let error = ShardError::Timings(LeaderError::ZeroDuration {
            which: "retry_period",
        });
        assert_eq!(
            error.to_string(),
            "ShardConfig retry_period must be greater than zero"
        );
        let error = ShardError::Timings(LeaderError::LeaseNotLongerThanRenewDeadline {
            lease_duration: Duration::from_secs(5),
            renew_deadline: Duration::from_secs(10),
        });
        assert_eq!(
            error.to_string(),
            "ShardConfig lease_duration 5s must be greater than renew_deadline 10s"
        );
        let error = ShardError::Timings(LeaderError::LeaseNotWholeSeconds {
            lease_duration: Duration::from_millis(2900),
            written: 2,
        });
        assert_eq!(
            error.to_string(),
            "ShardConfig lease_duration 2.9s is not a whole number of seconds (the Lease holds \
             whole seconds, and the other replicas would time 2s)"
        );
        // One line, said once: no source for a reporter to repeat.
        assert!(std::error::Error::source(&error).is_none());
    }

    #[test]
    fn a_failed_request_says_what_the_server_answered() {
        let conflict = kube::Error::Api(
            kube::core::Status::failure(
                "Operation cannot be fulfilled on leases.coordination.k8s.io \"workers-a\": the object has been modified",
                "Conflict",
            )
            .with_code(409)
            .boxed(),
        );
        let error = ShardError::Api {
            action: "renewing",
            lease: "ops/workers-a".to_owned(),
            error: conflict,
        };
        assert_eq!(
            error.to_string(),
            "renewing shard Lease ops/workers-a failed: 409 Conflict: Operation cannot be fulfilled on \
             leases.coordination.k8s.io \"workers-a\": the object has been modified"
        );
        let refused = kube::Error::Service(Box::new(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "Connection refused (os error 111)",
        )));
        let error = ShardError::Api {
            action: "listing",
            lease: "informer.rs/shard-group=workers".to_owned(),
            error: refused,
        };
        assert_eq!(
            error.to_string(),
            "listing shard Lease informer.rs/shard-group=workers failed: Connection refused (os error 111)"
        );
        assert!(std::error::Error::source(&error).is_none());
    }
}
