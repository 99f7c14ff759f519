//! [`ListerWatcher`]: listing and watching one resource type, the reflector's only
//! view of the server.
//!
//! It is the seam client-go calls `ListerWatcher`: the reflector asks for list pages
//! and watch streams (the types of [`requests`](super::requests)), and anything that
//! can answer (the API server through [`ApiListerWatcher`](super::ApiListerWatcher),
//! two closures in a [`ListWatch`](super::ListWatch), or the in-memory
//! [`FakeSource`](super::FakeSource) of unit tests) can serve it, saying what more it
//! can do in its [`Capabilities`].

use std::sync::Arc;

use futures::future::BoxFuture;

use super::capabilities::Capabilities;
use super::requests::{ListPage, ListRequest, WatchRequest, WatchStream};
use crate::cached::CachedObjects;

/// Lists and watches one resource type; see the [module docs](crate::reflector).
pub trait ListerWatcher<K>: Send + Sync {
    /// Lists one page (or all) of the collection.
    fn list(&self, request: ListRequest) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>>;

    /// Like [`list`](Self::list), for a relist while `cache` holds the objects of the
    /// previous one: objects that `cache` holds at the same resourceVersion may come
    /// back in [`ListPage::unchanged`] as the cached copies, not decoded again, so a
    /// relist does not hold every object twice. The default lists as `list` does.
    fn list_reusing(
        &self,
        request: ListRequest,
        cache: Arc<dyn CachedObjects<K>>,
    ) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>> {
        let _ = cache;
        self.list(request)
    }

    /// Starts a watch. An error here (or an error item in the stream) with status 410
    /// means the resourceVersion is too old.
    fn watch(&self, request: WatchRequest) -> BoxFuture<'_, Result<WatchStream<K>, kube::Error>>;

    /// What this lister-watcher can do beyond listing and watching, and what it
    /// reads: streaming lists, key filters, the resource's and server's names for
    /// errors, decoded sizes, where consistency checks read (see [`Capabilities`]).
    /// The default can do none of it. A wrapper passes on what it wraps:
    /// `self.inner.capabilities()`, changed where it changes something.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// Whether the API server filters by the key filter's
    /// [shard selector](crate::reflector::KeyFilter::server_selector), as far as this
    /// lister-watcher has seen: `Some(true)` it sends only what the selector matches,
    /// `Some(false)` it sends everything (or refused the selector), `None` (the
    /// default) not known: no selector sent, or not enough seen to tell.
    fn server_filters_shards(&self) -> Option<bool> {
        None
    }
}
