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

/// The reason kube gives an error answer whose body is not a Status (a proxy's or a
/// load balancer's page), the body then being the message.
const UNPARSED: &str = "Failed to parse error data";

/// A Status as its code, reason and message, in one line (the message left out when
/// it only repeats the reason, as a 401's "Unauthorized" does).
fn status_words(status: &kube::core::Status) -> String {
    if status.reason == UNPARSED {
        return page_words(status.code, &status.message);
    }
    let message = if status.message == status.reason {
        String::new()
    } else {
        one_line(&status.message)
    };
    match (status.reason.as_str(), message.as_str()) {
        ("", "") => status.code.to_string(),
        (reason, "") => format!("{} {reason}", status.code),
        ("", message) => format!("{}: {message}", status.code),
        (reason, message) => format!("{} {reason}: {message}", status.code),
    }
}

/// An error answer that is not a Status, from its code and `body`: the page's title
/// if it is HTML (`414 Request-URI Too Large`, as nginx writes it), else its first
/// line, after the code and its reason phrase unless it starts with the code.
fn page_words(code: u16, body: &str) -> String {
    let text = match html_title(body) {
        Some(title) => one_line(title),
        None if body.trim_start().starts_with('<') => String::new(),
        None => one_line(
            body.lines()
                .find(|line| !line.trim().is_empty())
                .unwrap_or(""),
        ),
    };
    let text: String = if text.chars().count() > 200 {
        text.chars().take(200).chain(['…']).collect()
    } else {
        text
    };
    if text.starts_with(&code.to_string()) {
        return text;
    }
    let phrase = http::StatusCode::from_u16(code)
        .ok()
        .and_then(|code| code.canonical_reason());
    match (phrase, text.as_str()) {
        (None, "") => code.to_string(),
        (None, text) => format!("{code}: {text}"),
        (Some(phrase), "") => format!("{code} {phrase}"),
        (Some(phrase), text) => format!("{code} {phrase}: {text}"),
    }
}

/// The text of an HTML page's `<title>`, if it has one.
fn html_title(page: &str) -> Option<&str> {
    let lower = page.to_ascii_lowercase();
    let start = lower.find("<title>")? + "<title>".len();
    let end = start + lower[start..].find("</title>")?;
    page.get(start..end).map(str::trim)
}

/// `text` on one line: its lines, trimmed, joined by spaces.
fn one_line(text: &str) -> String {
    if !text.contains(['\n', '\r']) {
        return text.to_owned();
    }
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
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

    /// A page from something on the way (a proxy's 414), which kube could not read
    /// as a Status: its title, or first line, never the page.
    #[test]
    fn a_page_that_is_not_a_status_is_its_title_or_first_line() {
        let nginx = "<html>\r\n<head><title>414 Request-URI Too Large</title></head>\r\n<body>\r\n\
                     <center><h1>414 Request-URI Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n\
                     </body>\r\n</html>";
        let page = |code, body| status(code, "Failed to parse error data", body);
        assert_eq!(kube_cause(&page(414, nginx)), "414 Request-URI Too Large");
        assert_eq!(
            kube_cause(&page(431, "<html><body>too big</body></html>")),
            "431 Request Header Fields Too Large"
        );
        assert_eq!(
            kube_cause(&page(502, "upstream connect error\nreset reason: overflow")),
            "502 Bad Gateway: upstream connect error"
        );
        assert_eq!(kube_cause(&page(503, "")), "503 Service Unavailable");
        // A Status message over several lines is said on one.
        assert_eq!(
            kube_cause(&status(500, "InternalError", "first\n  second\n")),
            "500 InternalError: first second"
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
