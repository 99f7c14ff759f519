//! What went wrong in a request, in one line: what every error that wraps a
//! [`kube::Error`] puts after its own words, so a handler that logs `to_string()` sees
//! the server's answer; and [`Chain`], an error with its causes for a log line, each
//! said once. It sits on the ground floor because errors on every floor (reflector,
//! leader, shard, events, dynamic, testenv, consistency) wrap one.

use std::fmt;

/// The server's status code, reason and message for an API error (not kube's dump of
/// the whole Status; a message that only repeats the reason is left out), else the
/// innermost cause (`Connection refused (os error 111)`, say): the outer layers of a
/// transport error are wrappers ("client error (Connect)", "tcp connect error").
pub(crate) fn kube_cause(kube_error: &kube::Error) -> String {
    if let kube::Error::Api(status) = kube_error {
        return status_words(status);
    }
    let mut innermost: &(dyn std::error::Error + 'static) = kube_error;
    while let Some(source) = innermost.source() {
        innermost = source;
    }
    innermost.to_string()
}

/// A Status as its code, reason and message (the message left out when it only
/// repeats the reason, as a 401's "Unauthorized" does).
fn status_words(status: &kube::core::Status) -> String {
    let message = if status.message == status.reason {
        ""
    } else {
        status.message.as_str()
    };
    match (status.reason.as_str(), message) {
        ("", "") => status.code.to_string(),
        (reason, "") => format!("{} {reason}", status.code),
        ("", message) => format!("{}: {message}", status.code),
        (reason, message) => format!("{} {reason}: {message}", status.code),
    }
}

/// An error and its causes, for one log line: `outer: cause: deeper cause`, where a
/// cause whose words the line already holds is left out (an error that puts its
/// cause's text in its own message, as most here do, would otherwise say it twice), and
/// a [`kube::Error::Api`] reads as its status code, reason and message
/// ([`kube_cause`]), never kube's dump of the whole `Status`.
pub(crate) struct Chain<'a>(pub(crate) &'a (dyn std::error::Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut line = said(self.0);
        let mut cause = self.0.source();
        while let Some(error) = cause {
            let words = said(error);
            if !words.is_empty() && !line.contains(&words) {
                line.push_str(": ");
                line.push_str(&words);
            }
            cause = error.source();
        }
        f.write_str(&line)
    }
}

/// What one link of a chain says on its own.
fn said(error: &(dyn std::error::Error + 'static)) -> String {
    if let Some(kube::Error::Api(status)) = error.downcast_ref::<kube::Error>() {
        return status_words(status);
    }
    // kube's `Error::Api` gives its Status as its source, boxed.
    let status = error
        .downcast_ref::<Box<kube::core::Status>>()
        .map(AsRef::as_ref)
        .or_else(|| error.downcast_ref::<kube::core::Status>());
    match status {
        Some(status) => status_words(status),
        None => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{Chain, kube_cause};

    fn status(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(message, reason)
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn an_api_error_is_its_code_reason_and_message() {
        assert_eq!(
            kube_cause(&status(403, "Forbidden", "leases is forbidden")),
            "403 Forbidden: leases is forbidden"
        );
        assert_eq!(kube_cause(&status(409, "Conflict", "")), "409 Conflict");
        assert_eq!(kube_cause(&status(500, "", "etcd down")), "500: etcd down");
        assert_eq!(kube_cause(&status(504, "", "")), "504");
    }

    /// A 401 reads "list failed: 401 Unauthorized": the reason is not repeated as the
    /// message, nor the cause after an error that already says it, nor kube's Status.
    #[test]
    fn a_chain_says_each_cause_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("list failed: {}", kube_cause(.0))]
        struct ListFailed(#[source] kube::Error);
        let error = ListFailed(status(401, "Unauthorized", "Unauthorized"));
        assert_eq!(Chain(&error).to_string(), "list failed: 401 Unauthorized");

        #[derive(Debug, thiserror::Error)]
        #[error("could not renew")]
        struct Renew(#[source] kube::Error);
        let error = Renew(status(409, "Conflict", "the object has been modified"));
        assert_eq!(
            Chain(&error).to_string(),
            "could not renew: 409 Conflict: the object has been modified"
        );
    }

    #[test]
    fn another_error_is_its_innermost_cause() {
        let refused = std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "Connection refused (os error 111)",
        );
        let error = kube::Error::Service(Box::new(refused));
        assert_eq!(kube_cause(&error), "Connection refused (os error 111)");
    }
}
