//! What can go wrong while a reflector lists and watches.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::cause::kube_cause;

/// An object the resource type could not decode: reported with its key and skipped,
/// so one bad object never stalls the informer.
#[derive(Debug, thiserror::Error)]
#[error("could not decode {kind} {key}: {source}")]
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
///
/// Each says its failure in one line (`watch failed: 401 Unauthorized`, `list failed:
/// 403 Forbidden: configmaps is forbidden: ...`, `list failed: Connection refused (os
/// error 111)`): the HTTP status once, the server's message once. A request's
/// [`kube::Error`] is in its variant ([`kube_error`](Self::kube_error)) and not
/// given as the [`source`](std::error::Error::source): the line already says what it
/// has to say, and an error reporter that follows the sources (tracing's
/// `error.sources`, anyhow's "Caused by") would add kube's own text, which repeats
/// the status and dumps it whole (`ApiError: Unauthorized: Unauthorized (Status {
/// ..`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReflectorError {
    /// Listing failed (forbidden, unauthorized, unreachable, timed out...).
    #[error("list failed: {}", kube_cause(.0))]
    List(kube::Error),
    /// Starting or reading a watch failed.
    #[error("watch failed: {}", kube_cause(.0))]
    Watch(kube::Error),
    /// The watch's resourceVersion is too old (410 Gone / Expired): a relist follows.
    #[error("watch expired (resourceVersion too old): relisting: {}", kube_cause(.0))]
    Expired(kube::Error),
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

    /// The request's own error, for a failed list or watch.
    pub fn kube_error(&self) -> Option<&kube::Error> {
        match self {
            Self::List(e) | Self::Watch(e) | Self::Expired(e) => Some(e),
            _ => None,
        }
    }
}

/// Why a reflector's last (re)sync failed: its list, or streaming list, did not fill the
/// store. Unlike [`ReflectorError`], which says what went wrong in which request, this
/// says it for people: it names the resource as `kubectl` does (`backups.example.com`,
/// `configmaps`) and, when the API server could not be reached, its address.
///
/// The reflector keeps the last one until a sync succeeds
/// ([`Reflector::last_sync_error`](super::Reflector::last_sync_error),
/// [`SharedIndexInformer::last_sync_error`](crate::shared_informer::SharedIndexInformer::last_sync_error)),
/// which is how a [`SharedInformerFactory`](crate::factory::SharedInformerFactory) that
/// gives up waiting says why an informer never synced. Cloning is cheap: the cause is
/// shared.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SyncError {
    /// The API server answered 404 for the collection: it does not serve the resource.
    /// A custom resource whose CRD is not installed (or not yet established), or an API
    /// group or version the server does not have.
    #[error("{resource} is not served by the API server")]
    NotServed {
        /// The resource, as `plural.group` (`plural` for the core group).
        resource: String,
        /// The failure as the reflector saw it.
        error: Arc<ReflectorError>,
    },
    /// No connection to the API server: refused, timed out, name not resolved, TLS
    /// handshake failed.
    #[error("cannot reach the API server{} to list {resource}: {}", at(address.as_deref()), root_cause(error))]
    Unreachable {
        /// The resource, as `plural.group` (`plural` for the core group).
        resource: String,
        /// The server's URL as configured
        /// ([`ApiListerWatcher::server_url`](super::source::ApiListerWatcher::server_url)), or
        /// else the socket address the connection was refused at, when known.
        address: Option<String>,
        /// The failure as the reflector saw it.
        error: Arc<ReflectorError>,
    },
    /// Anything else: access denied, a server error, a streaming list that broke off...
    #[error("listing {resource} failed: {}", root_cause(error))]
    Failed {
        /// The resource, as `plural.group` (`plural` for the core group).
        resource: String,
        /// The failure as the reflector saw it.
        error: Arc<ReflectorError>,
    },
}

impl SyncError {
    /// Describes `error`, a failed sync of `resource` (see [`SyncError::resource`]);
    /// `server_url`, when known, names the server if it could not be reached.
    pub fn new(error: ReflectorError, resource: &str, server_url: Option<&str>) -> Self {
        let resource = resource.to_owned();
        if error.status_code() == Some(404) {
            return Self::NotServed {
                resource,
                error: Arc::new(error),
            };
        }
        let kube_error = match &error {
            ReflectorError::List(e) | ReflectorError::Watch(e) | ReflectorError::Expired(e) => {
                Some(e)
            }
            _ => None,
        };
        match kube_error {
            Some(e) if is_unreachable(e) => Self::Unreachable {
                resource,
                address: server_url
                    .map(str::to_owned)
                    .or_else(|| connect_address(e).map(|a| a.to_string())),
                error: Arc::new(error),
            },
            _ => Self::Failed {
                resource,
                error: Arc::new(error),
            },
        }
    }

    /// The resource that could not be listed, as `plural.group` (`deployments.apps`),
    /// or `plural` for the core group (`configmaps`). For lister-watchers that do not
    /// say ([`Capabilities::resource`](super::source::Capabilities#structfield.resource)), the Rust
    /// type's name.
    pub fn resource(&self) -> &str {
        match self {
            Self::NotServed { resource, .. }
            | Self::Unreachable { resource, .. }
            | Self::Failed { resource, .. } => resource,
        }
    }

    /// The failure as the reflector saw it (with the request's own error in it:
    /// [`ReflectorError::kube_error`]).
    pub fn reflector_error(&self) -> &ReflectorError {
        match self {
            Self::NotServed { error, .. }
            | Self::Unreachable { error, .. }
            | Self::Failed { error, .. } => error,
        }
    }

    /// The HTTP status code when the API server answered with an error status.
    pub fn status_code(&self) -> Option<u16> {
        self.reflector_error().status_code()
    }
}

/// " at {address}", or nothing.
fn at(address: Option<&str>) -> String {
    address.map(|a| format!(" at {a}")).unwrap_or_default()
}

/// What a person needs of an error chain: the server's answer for an error status,
/// else the innermost cause (the outer layers of a transport error are wrappers:
/// "client error (Connect)", "tcp connect error").
fn root_cause(error: &ReflectorError) -> String {
    match error {
        ReflectorError::List(e) | ReflectorError::Watch(e) | ReflectorError::Expired(e) => {
            kube_cause(e)
        }
        other => other.to_string(),
    }
}

/// Whether the request never reached the API server: the connection could not be made
/// (refused, timed out, no route, name not resolved, TLS handshake failed), or timed out.
pub(crate) fn is_unreachable(e: &kube::Error) -> bool {
    use std::io::ErrorKind::{ConnectionRefused, HostUnreachable, NetworkUnreachable, TimedOut};
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if err
            .downcast_ref::<hyper_util::client::legacy::Error>()
            .is_some_and(hyper_util::client::legacy::Error::is_connect)
        {
            return true;
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                ConnectionRefused | TimedOut | HostUnreachable | NetworkUnreachable
            )
        {
            return true;
        }
        source = err.source();
    }
    is_connection_refused(e)
}

/// The socket address a connection failed at, when the error says: hyper-util's
/// connector keeps it in its connect error, shown only by `Debug`
/// (`ConnectError("tcp connect error", 127.0.0.1:6443, Os { .. })`).
fn connect_address(e: &kube::Error) -> Option<SocketAddr> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if err
            .downcast_ref::<hyper_util::client::legacy::Error>()
            .is_some()
        {
            return socket_address_in(&format!("{err:?}"));
        }
        source = err.source();
    }
    None
}

/// The first socket address written in `text` (`10.0.0.1:6443`, `[::1]:6443`).
fn socket_address_in(text: &str) -> Option<SocketAddr> {
    text.split([' ', ',', '(', ')', '"', '{', '}'])
        .find_map(|word| word.parse().ok())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, reason: &str, message: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(message, reason)
                .with_code(code)
                .boxed(),
        )
    }

    fn refused() -> kube::Error {
        kube::Error::Service(Box::new(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "Connection refused (os error 111)",
        )))
    }

    #[test]
    fn a_404_list_is_a_resource_the_server_does_not_serve() {
        let error = ReflectorError::List(status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ));
        let sync = SyncError::new(error, "backups.ops.example.com", None);
        assert!(matches!(sync, SyncError::NotServed { .. }), "{sync:?}");
        assert_eq!(
            sync.to_string(),
            "backups.ops.example.com is not served by the API server"
        );
        assert_eq!(sync.resource(), "backups.ops.example.com");
        assert_eq!(sync.status_code(), Some(404));
    }

    #[test]
    fn a_refused_connection_names_the_configured_server() {
        let error = ReflectorError::List(refused());
        let sync = SyncError::new(error, "configmaps", Some("https://10.0.0.1:6443/"));
        assert_eq!(
            sync.to_string(),
            "cannot reach the API server at https://10.0.0.1:6443/ to list configmaps: \
             Connection refused (os error 111)"
        );
        // A streaming list's watch request counts the same.
        let error = ReflectorError::Watch(refused());
        let sync = SyncError::new(error, "configmaps", None);
        let SyncError::Unreachable { address, .. } = &sync else {
            panic!("{sync:?}");
        };
        assert_eq!(*address, None);
        assert_eq!(
            sync.to_string(),
            "cannot reach the API server to list configmaps: Connection refused (os error 111)"
        );
    }

    #[test]
    fn a_timeout_is_unreachable() {
        let timed_out = kube::Error::Service(Box::new(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "connect timed out",
        )));
        let sync = SyncError::new(
            ReflectorError::List(timed_out),
            "pods",
            Some("https://k8s:443"),
        );
        assert!(matches!(sync, SyncError::Unreachable { .. }), "{sync:?}");
        assert!(sync.to_string().contains("at https://k8s:443"), "{sync}");
    }

    #[test]
    fn other_failures_say_what_the_server_answered() {
        let denied = status(
            403,
            "Forbidden",
            r#"configmaps is forbidden: User "x" cannot list"#,
        );
        let sync = SyncError::new(
            ReflectorError::List(denied),
            "configmaps",
            Some("https://k8s"),
        );
        assert!(matches!(sync, SyncError::Failed { .. }), "{sync:?}");
        assert_eq!(
            sync.to_string(),
            r#"listing configmaps failed: 403 Forbidden: configmaps is forbidden: User "x" cannot list"#
        );
        assert!(sync.reflector_error().is_access_denied());
        let incomplete = ReflectorError::InitialEventsIncomplete { events: 3 };
        let sync = SyncError::new(incomplete, "configmaps", None);
        assert_eq!(
            sync.to_string(),
            "listing configmaps failed: the streaming list ended after 3 initial events, before their end"
        );
    }

    /// A Status as the API server sends it.
    fn answered(json: &str) -> kube::Error {
        kube::Error::Api(
            serde_json::from_str::<kube::core::Status>(json)
                .unwrap()
                .boxed(),
        )
    }

    /// Each failure reads as one line, the status and the server's message each once;
    /// nothing is left for a reporter that follows sources to add (kube's text, which
    /// repeats the status and dumps it).
    fn one_line(error: &ReflectorError) -> String {
        let line = error.to_string();
        assert!(!line.contains('\n'), "{line}");
        assert!(
            !line.contains("ApiError") && !line.contains("Status {"),
            "{line}"
        );
        assert!(std::error::Error::source(error).is_none(), "{line}");
        assert_eq!(crate::cause::Chain(error).to_string(), line);
        line
    }

    #[test]
    fn every_failure_is_one_line_with_the_status_and_message_once() {
        let unauthorized = answered(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#,
        );
        assert_eq!(
            one_line(&ReflectorError::Watch(unauthorized)),
            "watch failed: 401 Unauthorized"
        );
        let forbidden = answered(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"widgets.example.com is forbidden: User \"system:serviceaccount:ops:backup\" cannot list resource \"widgets\" in API group \"example.com\" at the cluster scope","reason":"Forbidden","details":{"group":"example.com","kind":"widgets"},"code":403}"#,
        );
        assert_eq!(
            one_line(&ReflectorError::List(forbidden)),
            r#"list failed: 403 Forbidden: widgets.example.com is forbidden: User "system:serviceaccount:ops:backup" cannot list resource "widgets" in API group "example.com" at the cluster scope"#
        );
        let gone = answered(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 5 (10)","reason":"Expired","code":410}"#,
        );
        assert_eq!(
            one_line(&ReflectorError::Expired(gone)),
            "watch expired (resourceVersion too old): relisting: 410 Expired: too old resource version: 5 (10)"
        );
        let internal = answered(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"etcdserver: request timed out","reason":"InternalError","details":{"causes":[{"message":"etcdserver: request timed out"}]},"code":500}"#,
        );
        assert_eq!(
            one_line(&ReflectorError::List(internal)),
            "list failed: 500 InternalError: etcdserver: request timed out"
        );
        let access = ReflectorError::Watch(status(403, "Forbidden", "no"));
        assert!(access.kube_error().is_some());
        assert!(
            ReflectorError::ShortWatch(Duration::ZERO)
                .kube_error()
                .is_none()
        );
    }

    /// A real refused connection: kube's error wraps hyper's, which wraps the socket's.
    #[tokio::test]
    async fn a_refused_connection_is_one_line_too() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = kube::Config::new(format!("http://127.0.0.1:{port}").parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let request = http::Request::get("/api/v1/configmaps")
            .body(Vec::new())
            .unwrap();
        let error = client.request_text(request).await.unwrap_err();
        assert!(is_connection_refused(&error));
        let error = ReflectorError::List(error);
        assert_eq!(
            one_line(&error),
            "list failed: Connection refused (os error 111)"
        );
        let sync = SyncError::new(error, "configmaps", None);
        assert_eq!(
            sync.to_string(),
            format!(
                "cannot reach the API server at 127.0.0.1:{port} to list configmaps: \
                 Connection refused (os error 111)"
            )
        );
    }

    #[test]
    fn socket_addresses_are_found_in_debug_text() {
        let text = r#"hyper_util::client::legacy::Error(Connect, ConnectError("tcp connect error", 127.0.0.1:36325, Os { code: 111, kind: ConnectionRefused, message: "Connection refused" }))"#;
        assert_eq!(
            socket_address_in(text),
            Some("127.0.0.1:36325".parse().unwrap())
        );
        let text = r#"ConnectError("tcp connect error", [::1]:6443, Os { code: 111 })"#;
        assert_eq!(socket_address_in(text), Some("[::1]:6443".parse().unwrap()));
        assert_eq!(
            socket_address_in(r#"ConnectError("dns error", Custom { .. })"#),
            None
        );
    }
}
