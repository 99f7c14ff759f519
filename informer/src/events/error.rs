//! Why an event was not recorded.

use crate::cause::kube_cause;

/// Why an event was dropped, or why writing it failed.
///
/// Recording events is best effort, as in client-go: [`Recorder::publish`] never fails
/// the caller, it reports a dropped event as
/// [`Published::Dropped`](super::Published::Dropped) with one of these, and the
/// background writer logs write failures with one. A reconciler should not fail
/// because an event could not be recorded.
///
/// [`Recorder::publish`]: super::Recorder::publish
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EventError {
    /// The event breaks a rule the API server enforces (an empty or too long reason,
    /// action or reporting instance, a regarding object without a name, ...), so it
    /// was not sent.
    #[error("invalid event: {field} {problem}")]
    Invalid {
        /// The field at fault, as the API names it (`reason`, `regarding.name`, ...).
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The spam filter has no token left for this source and object (client-go's
    /// `EventSourceObjectSpamFilter`): the event was dropped.
    #[error("event about {object} throttled by the spam filter")]
    Throttled {
        /// The regarding object, as `kind namespace/name`.
        object: String,
    },
    /// The queue to the background writer is full (the API server is slow or down):
    /// the event was dropped rather than queued without bound.
    #[error("event queue full ({capacity} writes pending): event dropped")]
    QueueFull {
        /// The configured queue capacity.
        capacity: usize,
    },
    /// The publisher may no longer act: a controller replica whose leadership term
    /// ended, or whose shard lease may have expired for the other members (see
    /// [`Fenced`](crate::controller::Fenced)). The event was not recorded.
    #[error("event not recorded: {reason}")]
    Fenced {
        /// Why the replica may no longer act.
        reason: String,
    },
    /// The recorder has been shut down (or its writer has ended): nothing more is
    /// recorded.
    #[error("the event recorder is shut down")]
    ShutDown,
    /// The API server refused a write, or it failed more times than the recorder
    /// retries: the write was given up.
    #[error("writing event {namespace}/{name} failed: {}", kube_cause(source))]
    Write {
        /// The Event's namespace.
        namespace: String,
        /// The Event's name.
        name: String,
        /// The last error of the write.
        #[source]
        source: kube::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::EventError;

    #[test]
    fn a_failed_write_says_what_the_server_answered() {
        let invalid = kube::Error::Api(
            kube::core::Status::failure(
                r#"Event.events.k8s.io "web.17a" is invalid: note: Too long: may not be more than 1024 bytes"#,
                "Invalid",
            )
            .with_code(422)
            .boxed(),
        );
        let error = EventError::Write {
            namespace: "default".to_owned(),
            name: "web.17a".to_owned(),
            source: invalid,
        };
        assert_eq!(
            error.to_string(),
            r#"writing event default/web.17a failed: 422 Invalid: Event.events.k8s.io "web.17a" is invalid: note: Too long: may not be more than 1024 bytes"#
        );
    }
}
