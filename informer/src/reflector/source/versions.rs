//! The versions of a collection's objects, as the server holds them: what a
//! consistency check compares an informer's cache with.
//!
//! A [`VersionSource`] answers three questions a cache cannot answer about itself,
//! each with a request that reads only metadata:
//!
//! - which objects the collection held at exactly one resourceVersion, each as its
//!   name, uid and resourceVersion ([`VersionSource::list_versions`], a list with
//!   `resourceVersionMatch=Exact`, in pages: a [`ListRequest`] answered by a
//!   [`ListPage`] of [`ObjectVersion`]s);
//! - how far the server is now ([`VersionSource::current_resource_version`], a
//!   consistent read of one object);
//! - which changes came after a resourceVersion ([`VersionSource::watch_versions`], a
//!   short watch that reads only the versions of its events: a [`WatchStream`] of
//!   [`ObjectVersion`]s).
//!
//! A [`ListerWatcher`](super::ListerWatcher) offers one through
//! [`versions`](super::Capabilities#structfield.versions): [`ApiListerWatcher`](super::ApiListerWatcher)
//! asks the API server with the same namespace and selectors it lists with, and
//! [`FakeSource`](super::FakeSource) answers from its change log.

use std::time::Duration;

use futures::future::BoxFuture;

use super::requests::{ListPage, ListRequest, WatchStream};
use crate::key::ObjectKey;
use crate::object::{Meta, Object};

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

impl ObjectVersion {
    /// The version of `object`, as a version list would name it.
    pub(crate) fn of<K: Object>(object: &K) -> Self {
        let meta = object.metadata();
        Self {
            key: ObjectKey::of(object),
            uid: meta.uid().map(str::to_owned),
            resource_version: meta.resource_version().map(str::to_owned),
        }
    }
}

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
    /// (`resourceVersionMatch=Exact`; `""`: the latest, read consistently), or the
    /// page after `request.continue_token`, of at most `request.limit` objects, with
    /// only the objects `request.key_filter` keeps. A version the server no longer
    /// keeps is 410 Gone; one it has not reached is "too large resource version" (or,
    /// from etcd directly, a 500 "required revision is a future revision").
    fn list_versions(
        &self,
        request: ListRequest,
    ) -> BoxFuture<'_, Result<ListPage<ObjectVersion>, kube::Error>>;

    /// The collection's resourceVersion now, read consistently (a quorum read, or the
    /// watch cache once it has caught up with one): a list of one object, without
    /// selectors.
    fn current_resource_version(&self) -> BoxFuture<'_, Result<String, kube::Error>>;

    /// The changes after `resource_version`, each as the version of the object it
    /// added, modified or deleted, with bookmarks, for at most `timeout` (the server
    /// ends the watch then).
    fn watch_versions(
        &self,
        resource_version: String,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<WatchStream<ObjectVersion>, kube::Error>>;
}
