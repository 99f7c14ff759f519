//! The versions of a collection's objects, as the server holds them: what a
//! consistency check compares an informer's cache with.
//!
//! A [`VersionSource`] answers three questions a cache cannot answer about itself,
//! each with a request that reads only metadata:
//!
//! - which objects the collection held at exactly one resourceVersion, each as its
//!   name, uid and resourceVersion ([`VersionSource::list_versions`], a list with
//!   `resourceVersionMatch=Exact`, in pages);
//! - how far the server is now ([`VersionSource::current_resource_version`], a
//!   consistent read of one object);
//! - which changes came after a resourceVersion ([`VersionSource::watch_versions`], a
//!   short watch that reads only the versions of its events).
//!
//! A [`ListerWatcher`](super::ListerWatcher) offers one through
//! [`versions`](super::Capabilities#structfield.versions): [`ApiListerWatcher`](super::ApiListerWatcher)
//! asks the API server with the same namespace and selectors it lists with, and
//! [`FakeSource`](super::FakeSource) answers from its change log.

use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;

use crate::key::ObjectKey;
use crate::reflector::key_filter::SharedKeyFilter;

/// One object as a version list names it: enough to tell whether a cached object is
/// the server's, and the same version of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectVersion {
    /// `namespace/name`.
    pub key: ObjectKey,
    /// `metadata.uid` (absent only from objects that never went through a server).
    pub uid: Option<String>,
    /// `metadata.resourceVersion`.
    pub resource_version: Option<String>,
}

/// One page of versions to list. Non-exhaustive, so a new field is not a breaking
/// change: start from [`VersionsRequest::at`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VersionsRequest {
    /// The collection exactly as it was at this resourceVersion
    /// (`resourceVersionMatch=Exact`); `""` for the latest, read consistently.
    pub resource_version: String,
    /// Page size (`limit`); `None` lists everything at once.
    pub limit: Option<u32>,
    /// The `continue` token of the previous page (it carries the resourceVersion).
    pub continue_token: Option<String>,
    /// Only the objects this filter keeps, as the informer's reflector keeps them.
    pub key_filter: Option<SharedKeyFilter>,
}

impl VersionsRequest {
    /// The first page of the collection as it was at `resource_version`, unpaged.
    pub fn at(resource_version: impl Into<String>) -> Self {
        Self {
            resource_version: resource_version.into(),
            limit: None,
            continue_token: None,
            key_filter: None,
        }
    }

    /// Pages of at most `limit` objects.
    #[must_use]
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Only the objects `filter` keeps.
    #[must_use]
    pub fn key_filter(mut self, filter: Option<SharedKeyFilter>) -> Self {
        self.key_filter = filter;
        self
    }
}

/// One page of a version list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VersionsPage {
    /// The objects of this page that the request's key filter keeps.
    pub versions: Vec<ObjectVersion>,
    /// The list's resourceVersion.
    pub resource_version: String,
    /// The token for the next page, when there is one.
    pub continue_token: Option<String>,
}

impl VersionsPage {
    /// The last page (no continue token) of a list at `resource_version`.
    pub fn new(versions: Vec<ObjectVersion>, resource_version: impl Into<String>) -> Self {
        Self {
            versions,
            resource_version: resource_version.into(),
            continue_token: None,
        }
    }

    /// A page the list goes on after, from `token`.
    #[must_use]
    pub fn continue_token(mut self, token: impl Into<String>) -> Self {
        self.continue_token = Some(token.into());
        self
    }
}

/// One event of a [`VersionSource::watch_versions`] stream: how far the collection
/// got, not what changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionEvent {
    /// An object was added, changed or deleted at this resourceVersion.
    Changed(String),
    /// A bookmark: every change up to this resourceVersion has been sent.
    Bookmark(String),
}

/// A stream of [`VersionEvent`]s; it ends when the server closes the watch.
pub type VersionStream = BoxStream<'static, Result<VersionEvent, kube::Error>>;

/// The server's side of a consistency check: which objects the collection held at
/// one resourceVersion ([`list_versions`](Self::list_versions)), how far the server is
/// now ([`current_resource_version`](Self::current_resource_version)), and which
/// changes came after a resourceVersion ([`watch_versions`](Self::watch_versions));
/// each is a request that reads only metadata.
///
/// A [`ListerWatcher`](super::ListerWatcher) offers one through
/// [`versions`](super::Capabilities#structfield.versions).
pub trait VersionSource: Send + Sync {
    /// One page of the collection as it was at exactly `request.resource_version`
    /// (or the page after `request.continue_token`). A version the server no longer
    /// keeps is 410 Gone; one it has not reached is "too large resource version"
    /// (or, from etcd directly, a 500 "required revision is a future revision").
    fn list_versions(
        &self,
        request: VersionsRequest,
    ) -> BoxFuture<'_, Result<VersionsPage, kube::Error>>;

    /// The collection's resourceVersion now, read consistently (a quorum read, or the
    /// watch cache once it has caught up with one): a list of one object, without
    /// selectors.
    fn current_resource_version(&self) -> BoxFuture<'_, Result<String, kube::Error>>;

    /// The versions of the changes after `resource_version`, with bookmarks, for at
    /// most `timeout` (the server ends the watch then).
    fn watch_versions(
        &self,
        resource_version: String,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<VersionStream, kube::Error>>;
}
