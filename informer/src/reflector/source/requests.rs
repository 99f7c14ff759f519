//! What crosses the [`ListerWatcher`](super::ListerWatcher) seam: the requests a
//! source answers ([`ListRequest`], [`WatchRequest`]), the pages and events that
//! answer them ([`ListPage`], [`WatchEvent`], [`WatchStream`]), and the options sent
//! with every request ([`ListOptions`]). A consistency check's version source
//! answers the same requests with the same types, of
//! [`ObjectVersion`](super::ObjectVersion)s.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;

use crate::key::ObjectKey;
use crate::reflector::error::{DecodeError, ReflectorError};
use crate::reflector::key_filter::SharedKeyFilter;

/// What to list: one page, or the whole collection when `limit` is `None`.
///
/// Non-exhaustive, so a new field is not a breaking change: start from
/// [`ListRequest::default`] and set what you need (a lister-watcher reads the fields).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListRequest {
    /// `resourceVersion`: `"0"` lets the server answer from its watch cache, `""` asks
    /// for a consistent read from etcd, anything else means "at least this recent".
    pub resource_version: String,
    /// Page size (`limit`); `None` lists everything at once.
    pub limit: Option<u32>,
    /// The `continue` token of the previous page.
    pub continue_token: Option<String>,
    /// Only the objects this filter keeps are wanted (the reflector's
    /// [`Config::key_filter`](crate::reflector::Config#structfield.key_filter)): a lister-watcher
    /// that [filters keys](super::Capabilities#structfield.filters_keys) skips the others before
    /// decoding them, and counts them in [`ListPage::filtered_out`].
    pub key_filter: Option<SharedKeyFilter>,
}

/// One page of a list. Non-exhaustive, so a new field is not a breaking change: a
/// lister-watcher makes one with [`ListPage::new`] and the builder methods.
#[derive(Debug)]
#[non_exhaustive]
pub struct ListPage<K> {
    /// The objects that decoded.
    pub items: Vec<K>,
    /// Listed objects that the [`CachedObjects`](crate::reflector::CachedObjects) given to
    /// [`ListerWatcher::list_reusing`](super::ListerWatcher::list_reusing) held at the same resourceVersion: its copies,
    /// not decoded again. Always empty from [`ListerWatcher::list`](super::ListerWatcher::list).
    pub unchanged: Vec<Arc<K>>,
    /// The objects that did not decode, skipped.
    pub undecodable: Vec<DecodeError>,
    /// Listed objects the request's [`key_filter`](ListRequest::key_filter) does not
    /// keep: skipped without being decoded (and not reported if they would not have
    /// decoded).
    pub filtered_out: usize,
    /// The list's resourceVersion.
    pub resource_version: String,
    /// The token for the next page, when there is one.
    pub continue_token: Option<String>,
    /// The server filtered the page by the key filter's
    /// [shard selector](crate::reflector::KeyFilter::server_selector) (the list said so in
    /// `metadata.shardInfo`): it sent only objects the selector matches.
    pub served_shard: bool,
}

/// What to watch. Non-exhaustive, so a new field is not a breaking change: start from
/// [`WatchRequest::new`] and set what you need.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WatchRequest {
    /// Watch changes after this resourceVersion.
    pub resource_version: String,
    /// The server ends the watch after this long (`timeoutSeconds`).
    pub timeout: Duration,
    /// Ask for BOOKMARK events (`allowWatchBookmarks`).
    pub allow_bookmarks: bool,
    /// A streaming list (client-go's WatchList): `sendInitialEvents=true` with
    /// `resourceVersionMatch=NotOlderThan` (and bookmarks). The server first sends an
    /// ADDED event for every object as of a version not older than
    /// `resource_version` ("" meaning the most recent, read consistently), then a
    /// [`WatchEvent::Bookmark`] with `initial_events_end` set at that version, then
    /// goes on as a plain watch. A server that does not serve streaming lists
    /// answers with an error status. Only sent to lister-watchers that say they
    /// serve it ([`Capabilities::streaming_list`](super::Capabilities#structfield.streaming_list)).
    pub streaming_list: bool,
    /// Only the objects this filter keeps are wanted: a lister-watcher that
    /// [filters keys](super::Capabilities#structfield.filters_keys) sends a
    /// [`WatchEvent::FilteredOut`] for the others' events, without decoding them.
    pub key_filter: Option<SharedKeyFilter>,
}

/// One event of a watch stream.
#[derive(Debug)]
pub enum WatchEvent<K> {
    /// The object was created (or first seen).
    Added(K),
    /// The object changed.
    Modified(K),
    /// The object was deleted; this is its last state.
    Deleted(K),
    /// Nothing changed, but the collection reached this resourceVersion. Made with
    /// [`WatchEvent::bookmark`] or [`WatchEvent::initial_events_end`].
    #[non_exhaustive]
    Bookmark {
        /// The resourceVersion to resume from.
        resource_version: String,
        /// This bookmark ends the initial events of a streaming list (its object is
        /// annotated `k8s.io/initial-events-end: "true"`): the objects sent
        /// before it are the whole collection at `resource_version`.
        initial_events_end: bool,
    },
    /// An event (added, modified or deleted) about an object the request's
    /// [`key_filter`](WatchRequest::key_filter) does not keep: not decoded, and known
    /// only by the resourceVersion the watch has reached with it and, where the
    /// lister-watcher read it, the object's key. Made with [`WatchEvent::filtered_out`].
    #[non_exhaustive]
    FilteredOut {
        /// The object's resourceVersion: the watch resumes after it.
        resource_version: String,
        /// The object's `namespace/name`, when known: a cache that holds an object
        /// under it drops it, since its new state is not the cache's to keep (a key
        /// filter on the object's controller reference, say, whose controller moved).
        key: Option<ObjectKey>,
    },
    /// An event whose object did not decode (or was of another kind); the reflector
    /// reports it and goes on.
    Undecodable(ReflectorError),
}

impl<K> WatchEvent<K> {
    /// A bookmark: the collection reached `resource_version`.
    pub fn bookmark(resource_version: impl Into<String>) -> Self {
        WatchEvent::Bookmark {
            resource_version: resource_version.into(),
            initial_events_end: false,
        }
    }

    /// The bookmark that ends a streaming list's initial events at `resource_version`.
    pub fn initial_events_end(resource_version: impl Into<String>) -> Self {
        WatchEvent::Bookmark {
            resource_version: resource_version.into(),
            initial_events_end: true,
        }
    }

    /// An event about an object the request's key filter does not keep, at
    /// `resource_version`.
    pub fn filtered_out(resource_version: impl Into<String>) -> Self {
        WatchEvent::FilteredOut {
            resource_version: resource_version.into(),
            key: None,
        }
    }

    /// The same event with `f` of its object, if it has one.
    pub(crate) fn map<T>(self, f: impl FnOnce(K) -> T) -> WatchEvent<T> {
        match self {
            WatchEvent::Added(object) => WatchEvent::Added(f(object)),
            WatchEvent::Modified(object) => WatchEvent::Modified(f(object)),
            WatchEvent::Deleted(object) => WatchEvent::Deleted(f(object)),
            WatchEvent::Bookmark {
                resource_version,
                initial_events_end,
            } => WatchEvent::Bookmark {
                resource_version,
                initial_events_end,
            },
            WatchEvent::FilteredOut {
                resource_version,
                key,
            } => WatchEvent::FilteredOut {
                resource_version,
                key,
            },
            WatchEvent::Undecodable(error) => WatchEvent::Undecodable(error),
        }
    }
}

impl ListRequest {
    /// Lists at `resource_version` (see the field).
    #[must_use]
    pub fn resource_version(mut self, resource_version: impl Into<String>) -> Self {
        self.resource_version = resource_version.into();
        self
    }

    /// Lists pages of at most `limit` objects.
    #[must_use]
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Continues a paged list from the previous page's token.
    #[must_use]
    pub fn continue_token(mut self, token: impl Into<String>) -> Self {
        self.continue_token = Some(token.into());
        self
    }

    /// Wants only the objects `filter` keeps.
    #[must_use]
    pub fn key_filter(mut self, filter: SharedKeyFilter) -> Self {
        self.key_filter = Some(filter);
        self
    }
}

impl WatchRequest {
    /// Watches changes after `resource_version`, for at most `timeout`; no bookmarks,
    /// no streaming list, no key filter.
    pub fn new(resource_version: impl Into<String>, timeout: Duration) -> Self {
        Self {
            resource_version: resource_version.into(),
            timeout,
            allow_bookmarks: false,
            streaming_list: false,
            key_filter: None,
        }
    }

    /// Asks for bookmarks.
    #[must_use]
    pub fn allow_bookmarks(mut self, allow: bool) -> Self {
        self.allow_bookmarks = allow;
        self
    }

    /// Asks for a streaming list (see the field).
    #[must_use]
    pub fn streaming_list(mut self, streaming: bool) -> Self {
        self.streaming_list = streaming;
        self
    }

    /// Wants only the objects `filter` keeps.
    #[must_use]
    pub fn key_filter(mut self, filter: SharedKeyFilter) -> Self {
        self.key_filter = Some(filter);
        self
    }
}

impl<K> ListPage<K> {
    /// A page of `items` listed at `resource_version`: the last page (no continue
    /// token), nothing reused, undecodable or filtered out.
    pub fn new(items: Vec<K>, resource_version: impl Into<String>) -> Self {
        Self {
            items,
            resource_version: resource_version.into(),
            ..Self::default()
        }
    }

    /// A page the list goes on after, from `token`.
    #[must_use]
    pub fn continue_token(mut self, token: impl Into<String>) -> Self {
        self.continue_token = Some(token.into());
        self
    }

    /// Listed objects that did not decode, skipped.
    #[must_use]
    pub fn undecodable(mut self, undecodable: Vec<DecodeError>) -> Self {
        self.undecodable = undecodable;
        self
    }

    /// How many listed objects the request's key filter left out.
    #[must_use]
    pub fn filtered_out(mut self, count: usize) -> Self {
        self.filtered_out = count;
        self
    }
}

/// A stream of watch events; it ends when the server closes the watch.
pub type WatchStream<K> = BoxStream<'static, Result<WatchEvent<K>, kube::Error>>;

impl<K> Default for ListPage<K> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            unchanged: Vec::new(),
            undecodable: Vec::new(),
            filtered_out: 0,
            resource_version: String::new(),
            continue_token: None,
            served_shard: false,
        }
    }
}

/// Options sent with every list and watch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// `labelSelector`, in the API server's grammar, e.g. `app=web,tier!=db`.
    pub label_selector: Option<String>,
    /// `fieldSelector`, e.g. `metadata.name=demo`.
    pub field_selector: Option<String>,
}
