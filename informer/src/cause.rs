//! What went wrong in a request, in one line: what every error that wraps a
//! [`kube::Error`] puts after its own words, so a handler that logs `to_string()` sees
//! the server's answer. It sits on the ground floor because errors on every floor
//! (reflector, leader, shard, events, dynamic, testenv) wrap one.

/// The server's status code, reason and message for an API error (not kube's dump of
/// the whole Status), else the innermost cause (`Connection refused (os error 111)`,
/// say): the outer layers of a transport error are wrappers ("client error
/// (Connect)", "tcp connect error").
pub(crate) fn kube_cause(kube_error: &kube::Error) -> String {
    if let kube::Error::Api(status) = kube_error {
        return match (status.reason.as_str(), status.message.as_str()) {
            ("", "") => status.code.to_string(),
            (reason, "") => format!("{} {reason}", status.code),
            ("", message) => format!("{}: {message}", status.code),
            (reason, message) => format!("{} {reason}: {message}", status.code),
        };
    }
    let mut innermost: &(dyn std::error::Error + 'static) = kube_error;
    while let Some(source) = innermost.source() {
        innermost = source;
    }
    innermost.to_string()
}

#[cfg(test)]
mod tests {
    use super::kube_cause;

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
