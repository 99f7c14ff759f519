//! Handles to a registered handler or subscription.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use educe::Educe;
use futures::Stream;
use futures::future::BoxFuture;

use super::handler::Notification;
use super::inner::Inner;
use super::listener::{Listener, ListenerStats, Receiver};
use crate::synced::HasSynced;

/// A registered event handler (client-go's `ResourceEventHandlerRegistration`).
///
/// Dropping it does not remove the handler; call [`Registration::remove`].
#[derive(Educe)]
#[educe(Debug)]
pub struct Registration<K> {
    #[educe(Debug(ignore))]
    pub(super) informer: Arc<Inner<K>>,
    pub(super) listener: Arc<Listener<K>>,
}

impl<K: Send + Sync + 'static> Registration<K> {
    /// Whether this handler has received every object of the initial list: the
    /// informer has synced and the handler has handled every notification flagged
    /// `is_initial_list` (for a handler added late, its replay of the cache).
    pub fn has_synced(&self) -> bool {
        self.informer.has_synced() && self.listener.initial_list_delivered()
    }

    /// Removes the handler: it is called no more (after the call it may be in), and
    /// its buffered notifications are dropped.
    pub fn remove(&self) {
        self.informer.processor.remove(self.listener.id);
    }

    /// Removes the handler, then waits until its call under way (if any) has returned:
    /// afterwards the handler is not running and never runs again, so what it shares
    /// can be torn down. Do not await it from inside the handler itself, which would
    /// wait for its own return.
    pub async fn remove_and_wait(&self) {
        self.remove();
        self.listener.handler_finished().await;
    }

    /// The handler's buffer counters.
    pub fn stats(&self) -> ListenerStats {
        self.listener.stats()
    }

    /// The handler's resync period, as the informer settled it (raised to the minimum
    /// or to the running informer's check period; `None`: no resync).
    pub fn resync_period(&self) -> Option<std::time::Duration> {
        self.listener.resync_period
    }
}

impl<K: Send + Sync + 'static> HasSynced for Registration<K> {
    fn has_synced(&self) -> bool {
        Registration::has_synced(self)
    }

    fn synced(&self) -> BoxFuture<'_, ()> {
        Box::pin(
            self.informer
                .sync_signal
                .wait_until(|| Registration::has_synced(self)),
        )
    }
}

/// A stream of an informer's notifications for async code, from
/// [`subscribe`](super::SharedIndexInformer::subscribe). It buffers without bound like
/// a handler does; dropping it unsubscribes.
#[derive(Educe)]
#[educe(Debug)]
pub struct Subscription<K> {
    pub(super) registration: Registration<K>,
    #[educe(Debug(ignore))]
    pub(super) receiver: Receiver<K>,
}

impl<K: Send + Sync + 'static> Subscription<K> {
    /// Whether every notification of the initial list has been taken from the stream.
    pub fn has_synced(&self) -> bool {
        self.registration.has_synced()
    }

    /// The subscription's buffer counters.
    pub fn stats(&self) -> ListenerStats {
        self.registration.stats()
    }
}

impl<K: Send + Sync + 'static> HasSynced for Subscription<K> {
    fn has_synced(&self) -> bool {
        Subscription::has_synced(self)
    }

    fn synced(&self) -> BoxFuture<'_, ()> {
        self.registration.synced()
    }
}

impl<K: Send + Sync + 'static> Stream for Subscription<K> {
    type Item = Notification<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.receiver.poll_recv(cx);
        if let Poll::Ready(Some(notification)) = &polled {
            self.registration
                .listener
                .delivered(notification.is_initial_list());
        }
        polled
    }
}

impl<K> Drop for Subscription<K> {
    fn drop(&mut self) {
        self.registration.listener.close();
        self.registration
            .informer
            .processor
            .remove(self.registration.listener.id);
    }
}
