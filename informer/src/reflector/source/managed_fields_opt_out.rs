//! [`ManagedFieldsOptOut`]: asking the API server to leave `metadata.managedFields` out
//! of what it sends, where it can, and knowing whether it did.
//!
//! Kubernetes 1.37's KEP-5958 (alpha, gate `ManagedFieldsOptOut`) lets a client ask for
//! objects without managedFields with a media-type parameter,
//! `Accept: application/json;drop=metadata.managedFields`, custom resources included.
//! An [`ApiListerWatcher`](super::ApiListerWatcher) that drops them anyway
//! ([`ManagedFields::Drop`](super::ManagedFields::Drop), the default) sends it with every
//! list and watch, metadata-only ones too, so a server that honours it need not send
//! the bytes at all. Nothing is assumed of the server:
//!
//! - kube-apiserver sets unrecognised media-type parameters aside and serves the media
//!   type (its content negotiation, `acceptMediaTypeOptions`): a server without the
//!   feature answers as if the parameter were not there, and the decoder skips the
//!   managedFields that arrive, as it always does. (The releases the tests run, 1.37.2
//!   and 1.33.13, are such servers: 1.37.2's `k8s.io/apiserver` has no
//!   `ManagedFieldsOptOut` gate.)
//! - A server that refuses the parameter (406 Not Acceptable to a request carrying it)
//!   is asked again without it, and never again by this lister-watcher.
//! - Whether the server left them out is read from what arrives: the first object of
//!   each list says (an object the API server stores has at least one managedFields
//!   entry, the one of the manager that created it). A server that leaves them out
//!   is said once at INFO; one that sends them, the common case today, at DEBUG; a
//!   change either way at INFO.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::lock::MutexExt;

/// The media-type parameter of KEP-5958.
const DROP: &str = ";drop=metadata.managedFields";

/// The `Accept` of a full object list or watch without managedFields.
const JSON: &str = "application/json;drop=metadata.managedFields";

/// The key that is there when the server sent managedFields.
const KEY: &[u8] = b"\"managedFields\"";

/// Whether to ask for, and what was seen of, managedFields left out by the server, for
/// one lister-watcher (shared by its clones).
#[derive(Debug)]
pub(super) struct ManagedFieldsOptOut {
    /// Whether to ask: the objects drop them anyway, and the server has not refused.
    asks: AtomicBool,
    /// What was last said: whether the server left them out.
    said: Mutex<Option<bool>>,
}

impl ManagedFieldsOptOut {
    /// Asks (`asks`) only where managedFields are dropped anyway.
    pub(super) fn new(asks: bool) -> Self {
        Self {
            asks: AtomicBool::new(asks),
            said: Mutex::new(None),
        }
    }

    /// The `Accept` to send: `base` (a metadata-only media type, or `None` for plain
    /// JSON) with the parameter while it is asked for; `None` for the client's default.
    pub(super) fn accept(&self, base: Option<&str>) -> Option<String> {
        match (self.asks.load(Ordering::Relaxed), base) {
            (true, Some(base)) => Some(format!("{base}{DROP}")),
            (true, None) => Some(JSON.to_owned()),
            (false, base) => base.map(str::to_owned),
        }
    }

    /// Whether a request was sent with the parameter.
    pub(super) fn asked(&self) -> bool {
        self.asks.load(Ordering::Relaxed)
    }

    /// `error` answered a request with the parameter: whether it refuses the parameter
    /// (406), in which case it is not sent again.
    pub(super) fn refused(&self, resource: &str, error: &kube::Error) -> bool {
        let refused = matches!(error, kube::Error::Api(status) if status.code == 406);
        if refused && self.asks.swap(false, Ordering::Relaxed) {
            tracing::info!(
                resource,
                "the API server does not accept a request to leave managedFields out \
                 (406); asking without it, and skipping them while decoding"
            );
        }
        refused
    }

    /// The first object of a list, as it arrived (`object`'s bytes): says whether the
    /// server left managedFields out, once, and again on a change.
    pub(super) fn first_listed(&self, resource: &str, object: &[u8]) {
        if !self.asked() {
            return;
        }
        let left_out = !object.windows(KEY.len()).any(|w| w == KEY);
        let mut said = self.said.locked();
        if *said == Some(left_out) {
            return;
        }
        let before = said.replace(left_out);
        if left_out {
            tracing::info!(
                resource,
                "the API server leaves managedFields out (KEP-5958)"
            );
        } else if before.is_some() {
            // It did leave them out: worth saying at the level that said so.
            tracing::info!(
                resource,
                "the API server sends managedFields again though asked not to; they \
                 are skipped while decoding"
            );
        } else {
            // Every server released so far (1.37.2 included): the common case, not news.
            tracing::debug!(
                resource,
                "the API server sends managedFields though asked not to (it predates \
                 KEP-5958 or has its ManagedFieldsOptOut gate off); they are skipped \
                 while decoding"
            );
        }
    }

    /// What was seen: whether the server left managedFields out (`None` before a list
    /// brought an object, or when not asked).
    #[cfg(test)]
    pub(super) fn left_out(&self) -> Option<bool> {
        *self.said.locked()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameter_is_added_only_while_asked() {
        let asking = ManagedFieldsOptOut::new(true);
        assert_eq!(
            asking.accept(None).as_deref(),
            Some("application/json;drop=metadata.managedFields")
        );
        assert_eq!(
            asking
                .accept(Some(
                    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
                ))
                .as_deref(),
            Some(
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1;drop=metadata.managedFields"
            )
        );
        let keeping = ManagedFieldsOptOut::new(false);
        assert_eq!(keeping.accept(None), None);
        assert_eq!(keeping.accept(Some("a/b")).as_deref(), Some("a/b"));
    }

    #[test]
    fn a_406_stops_asking_other_errors_do_not() {
        let opt_out = ManagedFieldsOptOut::new(true);
        let status = |code| {
            kube::Error::Api(
                kube::core::Status::failure("no", "NotAcceptable")
                    .with_code(code)
                    .boxed(),
            )
        };
        assert!(!opt_out.refused("pods", &status(500)));
        assert!(opt_out.asked());
        assert!(opt_out.refused("pods", &status(406)));
        assert!(!opt_out.asked());
        assert_eq!(opt_out.accept(None), None);
    }

    #[test]
    fn the_first_listed_object_tells_whether_the_server_left_them_out() {
        let opt_out = ManagedFieldsOptOut::new(true);
        assert_eq!(opt_out.left_out(), None);
        opt_out.first_listed("pods", br#"{"metadata":{"name":"a","managedFields":[{}]}}"#);
        assert_eq!(opt_out.left_out(), Some(false));
        opt_out.first_listed("pods", br#"{"metadata":{"name":"a"}}"#);
        assert_eq!(opt_out.left_out(), Some(true));
        let keeping = ManagedFieldsOptOut::new(false);
        keeping.first_listed("pods", br#"{"metadata":{"name":"a"}}"#);
        assert_eq!(keeping.left_out(), None, "not asked, nothing to tell");
    }
}
