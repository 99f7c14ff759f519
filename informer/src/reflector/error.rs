//! What can go wrong while a reflector lists and watches.

use std::time::Duration;

/// An object the resource type could not decode: reported with its key and skipped,
/// so one bad object never stalls the informer.
#[derive(Debug, thiserror::Error)]
#[error("could not decode {kind} {key}")]
pub struct DecodeError {
    /// The kind the reflector expected.
    pub kind: String,
    /// The object's `namespace/name`, or what could be read of it.
    pub key: String,
    /// The object's resourceVersion, when readable.
    pub resource_version: Option<String>,
    /// The object's `namespace/name`, when its name could be read: what a store uses
    /// to drop the object it held under that name (see
    /// [`ReflectorStore::forget`](super::ReflectorStore::forget)).
    pub object_key: Option<std::sync::Arc<crate::key::ObjectKey>>,
    /// Why decoding failed.
    #[source]
    pub source: serde_json::Error,
}

/// An error seen by a reflector. The reflector itself never stops on one: it backs off
/// and tries again. Handlers set with a watch-error handler see each of them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReflectorError {
    /// Listing failed (forbidden, unauthorized, unreachable, timed out...).
    #[error("list failed")]
    List(#[source] kube::Error),
    /// Starting or reading a watch failed.
    #[error("watch failed")]
    Watch(#[source] kube::Error),
    /// The watch's resourceVersion is too old (410 Gone / Expired): a relist follows.
    #[error("watch expired (resourceVersion too old): relisting")]
    Expired(#[source] kube::Error),
    /// A watch ended at once with no events, which means something is wrong.
    #[error("very short watch: closed after {0:?} with no events")]
    ShortWatch(Duration),
    /// A watch was still open (or still unanswered) this long after it was asked
    /// for, well past the timeout the server ends it at: its connection died without
    /// a word (see [`Config::watch_timeout`](super::Config::watch_timeout)). The
    /// reflector watches again from the last resourceVersion.
    #[error("dead watch: no end from the server after {0:?}; watching again")]
    DeadWatch(Duration),
    /// A streaming list ended before the bookmark that ends its initial events: what
    /// it sent is dropped (the store sees none of it), and the reflector syncs again
    /// after a backoff.
    #[error("the streaming list ended after {events} initial events, before their end")]
    InitialEventsIncomplete {
        /// How many initial events had come.
        events: usize,
    },
    /// An object could not be decoded; it was skipped.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// An event carried an object of another kind than the reflector's.
    #[error("expected kind {expected}, got {found} for {key}")]
    UnexpectedKind {
        /// The reflector's kind.
        expected: String,
        /// The object's kind.
        found: String,
        /// The object's `namespace/name`.
        key: String,
    },
    /// The server's response could not be read as a list or watch event.
    #[error("malformed response: {0}")]
    Malformed(String),
}

impl ReflectorError {
    /// The HTTP status code when the API server answered with an error status.
    pub fn status_code(&self) -> Option<u16> {
        match self {
            Self::List(e) | Self::Watch(e) | Self::Expired(e) => api_status_code(e),
            _ => None,
        }
    }

    /// Whether this is the API server refusing access (401 or 403).
    pub fn is_access_denied(&self) -> bool {
        matches!(self.status_code(), Some(401 | 403))
    }
}

pub(crate) fn api_status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// 410 Gone: the resourceVersion asked for is older than what the server keeps.
pub(crate) fn is_expired(e: &kube::Error) -> bool {
    api_status_code(e) == Some(410)
}

/// "Too large resource version": the server (say, restarted with an empty watch
/// cache) is behind the version asked for. Like 410, a consistent relist fixes it.
///
/// As client-go's `isTooLargeResourceVersionError`: the `ResourceVersionTooLarge`
/// cause; or, from servers that predate it, a timeout whose cause (1.17.0 to 1.18.5)
/// or message (before 1.17) says "Too large resource version".
pub(crate) fn is_too_large_resource_version(e: &kube::Error) -> bool {
    const MESSAGE: &str = "Too large resource version";
    let kube::Error::Api(status) = e else {
        return false;
    };
    let causes = || status.details.iter().flat_map(|details| &details.causes);
    if causes().any(|cause| cause.reason == "ResourceVersionTooLarge") {
        return true;
    }
    let timeout = status.reason == "Timeout" || status.code == 504;
    timeout && (causes().any(|cause| cause.message == MESSAGE) || status.message.contains(MESSAGE))
}

/// Whether the cause is a refused TCP connection (the API server is not up), in which
/// case client-go retries the watch after a backoff instead of relisting.
pub(crate) fn is_connection_refused(e: &kube::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        source = err.source();
    }
    // hyper-util's connector does not always expose the io::Error as a source.
    e.to_string().contains("Connection refused") || format!("{e:?}").contains("ConnectionRefused")
}

/// 429: the server asks us to slow down, which is not a reason to relist.
pub(crate) fn is_too_many_requests(e: &kube::Error) -> bool {
    api_status_code(e) == Some(429)
}
