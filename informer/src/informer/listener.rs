//! One handler's buffer and the thread that drains it (client-go's
//! `processorListener`).
//!
//! Buffer policy: every handler has its own unbounded FIFO buffer. The informer's
//! process loop only appends to buffers, so it never waits for a handler, and a slow
//! handler delays nobody but itself; in exchange its buffer grows while it lags.
//! [`ListenerStats::pending`] and [`ListenerStats::peak_pending`] show that growth.
//! A handler runs on a dedicated thread (which has the tokio runtime's context, so it
//! may `tokio::spawn`), receives notifications one at a time in order, and is caught
//! when it panics: the panic is logged and counted, and the next notification is
//! delivered as usual.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::handler::{Notification, ResourceEventHandler};

/// Counters of one handler's buffer, from [`super::Registration::stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListenerStats {
    /// Notifications buffered, not yet handled.
    pub pending: usize,
    /// The most notifications ever buffered at once.
    pub peak_pending: usize,
    /// Notifications handled (or handed to the subscriber).
    pub delivered: u64,
    /// Notifications whose handler panicked.
    pub panics: u64,
}

/// The state shared by the process loop (producer) and the handler (consumer).
pub(crate) struct Listener<K> {
    pub(crate) id: u64,
    sender: Mutex<Option<mpsc::UnboundedSender<Notification<K>>>>,
    pending: AtomicUsize,
    peak_pending: AtomicUsize,
    pending_initial: AtomicUsize,
    delivered: AtomicU64,
    panics: AtomicU64,
    removed: AtomicBool,
    pub(crate) resync_period: Option<Duration>,
    resync: Mutex<Resync>,
}

struct Resync {
    next: Instant,
    due: bool,
}

impl<K> std::fmt::Debug for Listener<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("id", &self.id)
            .field("stats", &self.stats())
            .field("resync_period", &self.resync_period)
            .finish()
    }
}

impl<K> Listener<K> {
    pub(crate) fn new(
        id: u64,
        resync_period: Option<Duration>,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<Notification<K>>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let listener = Arc::new(Self {
            id,
            sender: Mutex::new(Some(sender)),
            pending: AtomicUsize::new(0),
            peak_pending: AtomicUsize::new(0),
            pending_initial: AtomicUsize::new(0),
            delivered: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            removed: AtomicBool::new(false),
            resync_period,
            resync: Mutex::new(Resync {
                next: Instant::now() + resync_period.unwrap_or_default(),
                due: false,
            }),
        });
        (listener, receiver)
    }

    /// Appends to the buffer; never blocks.
    pub(crate) fn push(&self, notification: Notification<K>) {
        if notification.is_initial_list() {
            self.pending_initial.fetch_add(1, Ordering::SeqCst);
        }
        let pending = self.pending.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak_pending.fetch_max(pending, Ordering::Relaxed);
        let sent = match &*self.sender.lock().expect("lock") {
            Some(sender) => sender.send(notification).is_ok(),
            None => false,
        };
        if !sent {
            // Removed or stopped: nobody will take it.
            self.pending.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Bookkeeping once the consumer has taken `notification` and dealt with it.
    pub(crate) fn delivered(&self, notification_was_initial: bool) {
        self.pending.fetch_sub(1, Ordering::Relaxed);
        self.delivered.fetch_add(1, Ordering::Relaxed);
        if notification_was_initial {
            self.pending_initial.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Whether every initial-list notification given to this listener was handled.
    pub(crate) fn initial_list_delivered(&self) -> bool {
        self.pending_initial.load(Ordering::SeqCst) == 0
    }

    /// Stops taking notifications; the handler gets no more calls after the one it
    /// may be in.
    pub(crate) fn close(&self) {
        self.removed.store(true, Ordering::SeqCst);
        self.sender.lock().expect("lock").take();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.removed.load(Ordering::SeqCst)
    }

    pub(crate) fn stats(&self) -> ListenerStats {
        ListenerStats {
            pending: self.pending.load(Ordering::Relaxed),
            peak_pending: self.peak_pending.load(Ordering::Relaxed),
            delivered: self.delivered.load(Ordering::Relaxed),
            panics: self.panics.load(Ordering::Relaxed),
        }
    }

    /// At a resync tick: whether this listener's period is due (and if so, plans the
    /// next one). Remembers the answer for [`Listener::resync_due`].
    pub(crate) fn check_resync(&self, now: Instant) -> bool {
        let mut resync = self.resync.lock().expect("lock");
        resync.due = match self.resync_period {
            Some(period) if now >= resync.next => {
                resync.next = now + period;
                true
            }
            _ => false,
        };
        resync.due
    }

    /// Whether this listener takes part in the resync under way.
    pub(crate) fn resync_due(&self) -> bool {
        self.resync.lock().expect("lock").due
    }
}

impl<K: Send + Sync + 'static> Listener<K> {
    /// Starts the thread that feeds `handler` from the buffer. The thread ends when
    /// the listener is closed.
    pub(crate) fn spawn_handler_thread(
        self: &Arc<Self>,
        name: String,
        mut receiver: mpsc::UnboundedReceiver<Notification<K>>,
        mut handler: Box<dyn ResourceEventHandler<K>>,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        let listener = Arc::clone(self);
        let runtime = tokio::runtime::Handle::try_current().ok();
        std::thread::Builder::new().name(name).spawn(move || {
            let _runtime = runtime.as_ref().map(|r| r.enter());
            while let Some(notification) = receiver.blocking_recv() {
                if listener.is_closed() {
                    break;
                }
                let initial = notification.is_initial_list();
                let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    notification.deliver(handler.as_mut());
                }));
                if let Err(panic) = outcome {
                    listener.panics.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(
                        handler = listener.id,
                        panic = panic_message(&panic),
                        "event handler panicked; going on with the next notification"
                    );
                }
                listener.delivered(initial);
            }
        })
    }
}

pub(crate) fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("<non-string panic payload>")
}
