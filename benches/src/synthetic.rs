//! An in-memory [`ListerWatcher`]: serves one list and one watch without a server, so
//! that the in-process scenarios measure the informer's pipeline and cache, not JSON
//! decoding or the network.
//!
//! The list and the watch events are built beforehand (on the caller's thread), so
//! building them is not measured; the price is that the events are cold in the CPU
//! cache when the reflector takes them, where freshly decoded ones would be warm.
//!
//! The watch stream hands out its events as fast as they are taken, but returns
//! `Pending` (and wakes itself) every `yield_every` events, as a real watch does when
//! it has consumed what arrived on the socket; otherwise the reflector would queue the
//! whole stream before the informer's process loop (which shares its task) ran once.
//! When its events are used up, the stream stays open and idle, like a quiet watch.

use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Instant;

use futures::future::BoxFuture;
use futures::{FutureExt, Stream, StreamExt};
use informer::reflector::source::{
    ListPage, ListRequest, ListerWatcher, WatchEvent, WatchRequest, WatchStream,
};

/// Serves `list` to the first list request and `events` (as `MODIFIED`) to the first
/// watch; later requests never answer.
pub struct SyntheticListerWatcher<K> {
    list: Mutex<Option<Vec<K>>>,
    events: Mutex<Option<Vec<K>>>,
    yield_every: usize,
    listed_at: Arc<OnceLock<Instant>>,
}

impl<K> SyntheticListerWatcher<K> {
    /// Serves `list`, then `events`, returning `Pending` every `yield_every` events.
    pub fn new(list: Vec<K>, events: Vec<K>, yield_every: usize) -> Self {
        Self {
            list: Mutex::new(Some(list)),
            events: Mutex::new(Some(events)),
            yield_every: yield_every.max(1),
            listed_at: Arc::default(),
        }
    }

    /// Set when the reflector asks for the list: the start of the pipeline.
    pub fn listed_at(&self) -> Arc<OnceLock<Instant>> {
        Arc::clone(&self.listed_at)
    }
}

impl<K: Send + Sync + 'static> ListerWatcher<K> for SyntheticListerWatcher<K> {
    fn list(&self, _request: ListRequest) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>> {
        let _ = self.listed_at.set(Instant::now());
        match self.list.lock().expect("lock").take() {
            Some(items) => futures::future::ready(Ok(ListPage::new(items, "1"))).boxed(),
            None => futures::future::pending().boxed(),
        }
    }

    fn watch(&self, _request: WatchRequest) -> BoxFuture<'_, Result<WatchStream<K>, kube::Error>> {
        let Some(events) = self.events.lock().expect("lock").take() else {
            return futures::future::ready(Ok(futures::stream::pending().boxed())).boxed();
        };
        let stream = SyntheticWatch {
            events: events.into_iter(),
            served: 0,
            yield_every: self.yield_every,
        };
        futures::future::ready(Ok(stream.boxed())).boxed()
    }
}

/// The synthetic watch: hands out `events` as `MODIFIED`, returning `Pending` (after
/// waking itself) once every `yield_every` events, then stays open and idle. A plain
/// `Stream` rather than `stream::unfold`, whose state and item would be moved a few
/// times per event: the harness should cost the pipeline as little as it can.
struct SyntheticWatch<K> {
    events: std::vec::IntoIter<K>,
    served: usize,
    yield_every: usize,
}

impl<K> Unpin for SyntheticWatch<K> {}

impl<K> Stream for SyntheticWatch<K> {
    type Item = Result<WatchEvent<K>, kube::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.events.len() == 0 {
            // Used up: a quiet watch, never woken.
            return Poll::Pending;
        }
        this.served += 1;
        if this.served.is_multiple_of(this.yield_every) {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(
            this.events
                .next()
                .map(|object| Ok(WatchEvent::Modified(object))),
        )
    }
}
