//! [`Capabilities`]: what a lister-watcher can do beyond listing and watching, and
//! what it reads, as one value.
//!
//! A feature that needs a source's help (streaming lists, key filters applied before
//! decoding, consistency checks, measured sizes) adds a field here with a default
//! that asks nothing of the source, not a method every implementer of
//! [`ListerWatcher`](super::ListerWatcher) has to read, and a wrapper passes every
//! one of them on by passing the value on.

use std::fmt;
use std::sync::Arc;

use super::decoded_sizes::DecodedSizes;
use super::versions::VersionSource;

/// What a [`ListerWatcher`](super::ListerWatcher) can do and what it reads
/// ([`ListerWatcher::capabilities`](super::ListerWatcher::capabilities)). The
/// default can do nothing beyond `list`, `list_reusing` and `watch`, and names
/// nothing: it is what a lister-watcher written before a field existed says.
///
/// Non-exhaustive, so a new capability is not a breaking change: start from
/// [`Capabilities::default`] and set what the source does, with the builder methods
/// or by assigning the fields. What it says must not change over the source's life: a
/// reflector and an informer read it once, when they are made.
///
/// ```
/// use informer::reflector::source::Capabilities;
///
/// let said = Capabilities::default()
///     .streaming_list(true)
///     .resource("backups.ops.example.com");
/// assert!(said.streaming_list && !said.filters_keys);
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct Capabilities {
    /// [`watch`](super::ListerWatcher::watch) serves streaming lists
    /// ([`WatchRequest::streaming_list`](super::WatchRequest::streaming_list)): it
    /// passes the request on to a server, which then streams the collection or refuses
    /// with an error status, or serves the protocol itself. The reflector sends
    /// streaming lists only to lister-watchers that say so (client-go's
    /// `IsWatchListSemanticsUnSupported`, turned around).
    ///
    /// `false` by default, unlike client-go's: a lister-watcher written before the
    /// field existed would answer a streaming list as a plain watch, and the reflector
    /// would wait for an end of the initial events that never comes.
    pub streaming_list: bool,
    /// `list`, `list_reusing` and `watch` honour the requests' key filter
    /// ([`ListRequest::key_filter`](super::ListRequest::key_filter),
    /// [`WatchRequest::key_filter`](super::WatchRequest::key_filter)): they skip the
    /// objects it does not keep before decoding them. The reflector applies the filter
    /// itself to what comes from a lister-watcher that does not (the default,
    /// `false`), so either way only kept objects reach the store; this says only where
    /// the work is done.
    pub filters_keys: bool,
    /// The resource listed, as `kubectl` names it: `plural.group`
    /// (`deployments.apps`), or `plural` for the core group (`configmaps`). Errors name
    /// it ([`SyncError`](crate::reflector::SyncError)); `None`, the default, names the Rust type.
    pub resource: Option<String>,
    /// The address of the server listed from: a
    /// [`SyncError::Unreachable`](crate::reflector::SyncError::Unreachable) names it. `None`, the
    /// default, leaves errors to name what the connection error says, if anything.
    pub server_url: Option<String>,
    /// What the objects it decodes weigh, and how many the collection holds, for a
    /// source that measures them (an [`ApiListerWatcher`](super::ApiListerWatcher)
    /// does): the figures of the informer's
    /// [`cache_size`](crate::shared_informer::SharedIndexInformer::cache_size) and its
    /// budget. `None`, the default, for sources that hand objects over undecoded.
    pub decoded_sizes: Option<Arc<DecodedSizes>>,
    /// Where a consistency check reads what the server holds: the versions of the
    /// collection this source lists, with the same namespace and selectors (see
    /// [`VersionSource`]). `None`, the default, for a source that cannot say; an
    /// informer over one cannot be checked.
    pub versions: Option<Arc<dyn VersionSource>>,
}

impl Capabilities {
    /// Says whether the source serves streaming lists (see the field).
    #[must_use]
    pub fn streaming_list(mut self, served: bool) -> Self {
        self.streaming_list = served;
        self
    }

    /// Says whether the source honours the requests' key filter (see the field).
    #[must_use]
    pub fn filters_keys(mut self, honoured: bool) -> Self {
        self.filters_keys = honoured;
        self
    }

    /// Names the resource listed, `plural.group` (see the field).
    #[must_use]
    pub fn resource(mut self, resource: impl Into<String>) -> Self {
        self.resource = Some(resource.into());
        self
    }

    /// Names the server listed from (see the field).
    #[must_use]
    pub fn server_url(mut self, url: impl Into<String>) -> Self {
        self.server_url = Some(url.into());
        self
    }

    /// Where the sizes of the decoded objects are kept (see the field).
    #[must_use]
    pub fn decoded_sizes(mut self, sizes: Arc<DecodedSizes>) -> Self {
        self.decoded_sizes = Some(sizes);
        self
    }

    /// Where consistency checks read what the server holds (see the field); `None`:
    /// nowhere.
    #[must_use]
    pub fn versions(mut self, source: Option<Arc<dyn VersionSource>>) -> Self {
        self.versions = source;
        self
    }
}

impl fmt::Debug for Capabilities {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Capabilities")
            .field("streaming_list", &self.streaming_list)
            .field("filters_keys", &self.filters_keys)
            .field("resource", &self.resource)
            .field("server_url", &self.server_url)
            .field("decoded_sizes", &self.decoded_sizes.is_some())
            .field("versions", &self.versions.is_some())
            .finish()
    }
}
