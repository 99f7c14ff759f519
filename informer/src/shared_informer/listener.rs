//! One handler's buffer and the thread (or task) that drains it (client-go's
//! `processorListener`).
//!
//! Buffer policy: every handler has its own unbounded FIFO buffer. The informer's
//! process loop only appends to buffers, so it never waits for a handler, and a slow
//! handler delays nobody but itself; in exchange its buffer grows while it lags.
//! [`ListenerStats::pending`] and [`ListenerStats::peak_pending`] show that growth.
//! The handler takes its buffer whole, in batches, and is woken when the process loop
//! runs out of work or a batch of notifications is waiting, not for every
//! notification, so a burst costs one wake-up per batch.
//! A handler runs on a dedicated thread (which has the tokio runtime's context, so it
//! may `tokio::spawn`), or, registered with `add_event_handler_on_runtime`, on a task
//! of the runtime (a cheap handler that never blocks needs no thread of its own).
//! Either way it receives notifications one at a time in order, and is caught when it
//! panics: the panic is logged and counted, and the next notification is delivered
//! as usual.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::Instant;

use super::handler::{Notification, ResourceEventHandler};
use super::sync::SyncSignal;

use crate::lock::MutexExt;

/// Counters of one handler's buffer, from [`super::Registration::stats`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
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

/// Queued notifications that wake a consumer even while the process loop is busy.
const WAKE_BATCH: usize = 64;

/// Keeps a counter on a cache line of its own, so that the producer's and the
/// consumer's counters do not invalidate each other's cache lines.
#[repr(align(64))]
#[derive(Debug, Default)]
struct Padded<T>(T);

/// The buffer between the process loop (producer) and the handler (consumer): an
/// unbounded queue that the consumer takes whole, so that a busy consumer takes the
/// lock and is woken once per batch, not once per notification.
struct Buffer<K> {
    state: Mutex<BufferState<K>>,
    /// Wakes a handler thread waiting for notifications.
    ready: Condvar,
}

struct BufferState<K> {
    queue: VecDeque<Notification<K>>,
    /// The listener was closed: nothing more is queued.
    closed: bool,
    /// A handler thread waits on `ready`.
    thread_waiting: bool,
    /// A subscription's task waits for notifications.
    waker: Option<Waker>,
    /// Notifications queued so far (written by the producer only).
    pushed: u64,
    /// How many notifications the consumer took with its last batch.
    taken: usize,
}

impl<K> Buffer<K> {
    fn lock(&self) -> MutexGuard<'_, BufferState<K>> {
        self.state.locked()
    }

    /// Waits for `pause` on the handler thread, or less if the listener is closed
    /// meanwhile (removal and shutdown do not wait for it).
    fn pause_unless_closed(&self, pause: Duration) {
        let deadline = std::time::Instant::now() + pause;
        let mut state = self.lock();
        while !state.closed {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return;
            }
            // `close` (and a push) wake a waiting thread; a push only ends this wait
            // early for another look at the deadline.
            state.thread_waiting = true;
            state = self
                .ready
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

/// How long a handler's thread waits after the handler panicked (client-go's listener
/// restarts after one second).
const PAUSE_AFTER_PANIC: Duration = Duration::from_secs(1);

/// The state shared by the process loop (producer) and the handler (consumer).
pub(crate) struct Listener<K> {
    pub(crate) id: u64,
    buffer: Buffer<K>,
    peak_pending: AtomicUsize,
    pending_initial: AtomicUsize,
    /// Written by the consumer only.
    delivered: Padded<AtomicU64>,
    panics: AtomicU64,
    removed: AtomicBool,
    /// A handler thread or task was started for this listener.
    has_consumer: AtomicBool,
    /// Its handler thread or task has ended: no call of the handler is under way or
    /// to come.
    consumer_ended: AtomicBool,
    /// Announced when the last initial-list notification has been handled.
    sync_signal: Arc<SyncSignal>,
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

/// The consuming end of a listener's buffer: a handler thread or a subscription.
pub(crate) struct Receiver<K> {
    listener: Arc<Listener<K>>,
    /// The batch taken from the buffer, being handed out.
    batch: VecDeque<Notification<K>>,
}

impl<K> Receiver<K> {
    /// The next notification, waiting for one; `None` once the listener is closed and
    /// its buffer drained.
    fn blocking_recv(&mut self) -> Option<Notification<K>> {
        if let Some(notification) = self.batch.pop_front() {
            return Some(notification);
        }
        let buffer = &self.listener.buffer;
        let mut state = buffer.lock();
        loop {
            if !state.queue.is_empty() {
                std::mem::swap(&mut self.batch, &mut state.queue);
                state.taken = self.batch.len();
                return self.batch.pop_front();
            }
            if state.closed {
                return None;
            }
            state.thread_waiting = true;
            state = buffer
                .ready
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// The next notification for an async consumer.
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Notification<K>>> {
        if let Some(notification) = self.batch.pop_front() {
            return Poll::Ready(Some(notification));
        }
        let mut state = self.listener.buffer.lock();
        if !state.queue.is_empty() {
            std::mem::swap(&mut self.batch, &mut state.queue);
            state.taken = self.batch.len();
            return Poll::Ready(self.batch.pop_front());
        }
        if state.closed {
            return Poll::Ready(None);
        }
        if !state
            .waker
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            state.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl<K> Listener<K> {
    pub(crate) fn new(
        id: u64,
        resync_period: Option<Duration>,
        sync_signal: Arc<SyncSignal>,
    ) -> (Arc<Self>, Receiver<K>) {
        let listener = Arc::new(Self {
            id,
            sync_signal,
            buffer: Buffer {
                state: Mutex::new(BufferState {
                    queue: VecDeque::new(),
                    closed: false,
                    thread_waiting: false,
                    waker: None,
                    pushed: 0,
                    taken: 0,
                }),
                ready: Condvar::new(),
            },
            peak_pending: AtomicUsize::new(0),
            pending_initial: AtomicUsize::new(0),
            delivered: Padded(AtomicU64::new(0)),
            panics: AtomicU64::new(0),
            removed: AtomicBool::new(false),
            has_consumer: AtomicBool::new(false),
            consumer_ended: AtomicBool::new(false),
            resync_period,
            resync: Mutex::new(Resync {
                next: Instant::now() + resync_period.unwrap_or_default(),
                due: false,
            }),
        });
        let receiver = Receiver {
            listener: Arc::clone(&listener),
            batch: VecDeque::new(),
        };
        (listener, receiver)
    }

    /// Appends to the buffer and wakes the consumer; never blocks (beyond the buffer's
    /// short lock).
    pub(crate) fn push(&self, notification: Notification<K>) {
        self.enqueue(notification, true);
    }

    /// Appends to the buffer, waking a waiting consumer only once [`WAKE_BATCH`]
    /// notifications are queued: the process loop calls [`Listener::wake`] when it
    /// runs out of work, so a consumer is woken once per batch rather than once per
    /// notification, yet nothing waits longer than the process loop stays busy.
    pub(crate) fn push_deferred(&self, notification: Notification<K>) {
        self.enqueue(notification, false);
    }

    fn enqueue(&self, notification: Notification<K>, wake: bool) {
        if notification.is_initial_list() {
            self.pending_initial.fetch_add(1, Ordering::SeqCst);
        }
        let mut state = self.buffer.lock();
        if state.closed {
            // Removed or stopped: nobody will take it.
            return;
        }
        state.queue.push_back(notification);
        state.pushed += 1;
        // Pending is at most what is queued plus the batch the consumer took last; only
        // when that could beat the peak is the consumer's counter read (its cache line
        // is the consumer's, so reading it costs a transfer between cores).
        let peak = self.peak_pending.load(Ordering::Relaxed);
        if state.queue.len() + state.taken > peak {
            let pending = state
                .pushed
                .saturating_sub(self.delivered.0.load(Ordering::Relaxed));
            let pending = usize::try_from(pending).unwrap_or(usize::MAX);
            if pending > peak {
                self.peak_pending.store(pending, Ordering::Relaxed);
            }
        }
        if wake || state.queue.len() >= WAKE_BATCH {
            Self::wake_consumer(&self.buffer, state);
        }
    }

    /// Wakes the consumer if it waits and something is queued.
    pub(crate) fn wake(&self) {
        let state = self.buffer.lock();
        if !state.queue.is_empty() {
            Self::wake_consumer(&self.buffer, state);
        }
    }

    fn wake_consumer(buffer: &Buffer<K>, mut state: MutexGuard<'_, BufferState<K>>) {
        let wake_thread = std::mem::take(&mut state.thread_waiting);
        let waker = state.waker.take();
        drop(state);
        if wake_thread {
            buffer.ready.notify_one();
        }
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Bookkeeping once the consumer has taken `notification` and dealt with it.
    pub(crate) fn delivered(&self, notification_was_initial: bool) {
        self.delivered.0.fetch_add(1, Ordering::Relaxed);
        if notification_was_initial && self.pending_initial.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.sync_signal.announce();
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
        let mut state = self.buffer.lock();
        state.closed = true;
        Self::wake_consumer(&self.buffer, state);
    }

    /// Completes once no call of the handler is under way or to come: at once for a
    /// listener that never had a thread or task (a subscription, or a handler removed
    /// before start), else when it has ended. Only meaningful once closed.
    pub(crate) async fn handler_finished(&self) {
        if !self.has_consumer.load(Ordering::SeqCst) {
            return;
        }
        self.sync_signal
            .wait_until(|| self.consumer_ended.load(Ordering::SeqCst))
            .await;
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.removed.load(Ordering::SeqCst)
    }

    pub(crate) fn stats(&self) -> ListenerStats {
        let pushed = self.buffer.lock().pushed;
        let delivered = self.delivered.0.load(Ordering::Relaxed);
        ListenerStats {
            pending: usize::try_from(pushed.saturating_sub(delivered)).unwrap_or(usize::MAX),
            peak_pending: self.peak_pending.load(Ordering::Relaxed),
            delivered,
            panics: self.panics.load(Ordering::Relaxed),
        }
    }

    /// At a resync tick: whether this listener's period is due (and if so, plans the
    /// next one). Remembers the answer for [`Listener::resync_due`].
    pub(crate) fn check_resync(&self, now: Instant) -> bool {
        let mut resync = self.resync.locked();
        resync.due = match self.resync_period {
            Some(period) if now >= resync.next => {
                // The next deadline follows the one just met, not the moment this tick
                // was handled: a tick handled a moment late would otherwise push every
                // later deadline past the tick meant to meet it, and a handler whose
                // period equals the check period would resync only every other tick.
                // Deadlines missed altogether (a stalled runtime) are skipped, not
                // made up in a burst.
                let behind = now.duration_since(resync.next).as_nanos() / period.as_nanos();
                let periods = u32::try_from(behind + 1).unwrap_or(u32::MAX);
                resync.next += period.saturating_mul(periods);
                true
            }
            _ => false,
        };
        resync.due
    }

    /// Whether this listener takes part in the resync under way.
    pub(crate) fn resync_due(&self) -> bool {
        self.resync.locked().due
    }
}

impl<K: Send + Sync + 'static> Listener<K> {
    /// Starts the thread that feeds `handler` from the buffer. The thread ends when
    /// the listener is closed.
    pub(crate) fn spawn_handler_thread(
        self: &Arc<Self>,
        name: String,
        mut receiver: Receiver<K>,
        mut handler: Box<dyn ResourceEventHandler<K>>,
    ) -> std::io::Result<std::thread::JoinHandle<()>> {
        let listener = Arc::clone(self);
        // Set before the thread runs, so that a wait for its end never misses it.
        self.has_consumer.store(true, Ordering::SeqCst);
        let runtime = tokio::runtime::Handle::try_current().ok();
        let spawned = std::thread::Builder::new().name(name).spawn(move || {
            let _runtime = runtime.as_ref().map(|r| r.enter());
            while let Some(notification) = receiver.blocking_recv() {
                if listener.is_closed() {
                    break;
                }
                if listener.handle(notification, handler.as_mut()) == Handled::Panicked {
                    // client-go restarts a crashed listener after a second: a handler
                    // that panics on every notification does not spin a core.
                    listener.buffer.pause_unless_closed(PAUSE_AFTER_PANIC);
                }
            }
            listener.consumer_done(&mut receiver, handler);
        });
        if spawned.is_err() {
            self.has_consumer.store(false, Ordering::SeqCst);
        }
        spawned
    }

    /// Starts the task that feeds `handler` from the buffer on `runtime`, for a
    /// handler that is cheap and never blocks. The task ends when the listener is
    /// closed.
    pub(crate) fn spawn_handler_task(
        self: &Arc<Self>,
        runtime: &tokio::runtime::Handle,
        mut receiver: Receiver<K>,
        mut handler: Box<dyn ResourceEventHandler<K>>,
    ) -> tokio::task::JoinHandle<()> {
        let listener = Arc::clone(self);
        self.has_consumer.store(true, Ordering::SeqCst);
        runtime.spawn(async move {
            let mut since_yield = 0;
            while let Some(notification) = poll_fn(|cx| receiver.poll_recv(cx)).await {
                if listener.is_closed() {
                    break;
                }
                if listener.handle(notification, handler.as_mut()) == Handled::Panicked {
                    listener.pause_unless_closed_async(PAUSE_AFTER_PANIC).await;
                }
                // A batch is handed out without waiting: give the runtime's other
                // tasks a turn now and then.
                since_yield += 1;
                if since_yield == YIELD_EVERY {
                    since_yield = 0;
                    tokio::task::yield_now().await;
                }
            }
            listener.consumer_done(&mut receiver, handler);
        })
    }

    /// Calls `handler` with `notification`, catching a panic (logged and counted).
    fn handle(
        &self,
        notification: Notification<K>,
        handler: &mut dyn ResourceEventHandler<K>,
    ) -> Handled {
        let initial = notification.is_initial_list();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            notification.deliver(handler);
        }));
        let handled = match outcome {
            Ok(()) => Handled::Returned,
            Err(panic) => {
                self.panics.fetch_add(1, Ordering::Relaxed);
                tracing::error!(
                    handler = self.id,
                    panic = crate::panic::message(panic.as_ref()),
                    "event handler panicked; going on with the next notification in {:?}",
                    PAUSE_AFTER_PANIC
                );
                Handled::Panicked
            }
        };
        self.delivered(initial);
        handled
    }

    /// Waits for `pause` on the handler's task, or less if the listener is closed
    /// meanwhile.
    async fn pause_unless_closed_async(&self, pause: Duration) {
        let closed = poll_fn(|cx| {
            let mut state = self.buffer.lock();
            if state.closed {
                return Poll::Ready(());
            }
            // `close` wakes it; so does a push, and then it looks again.
            state.waker = Some(cx.waker().clone());
            Poll::Pending
        });
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = closed => {}
        }
    }

    /// The consumer's end: removed or stopped. Drops what is still buffered, then the
    /// handler (and what it holds), and only then tells whoever waits that it ended.
    fn consumer_done(&self, receiver: &mut Receiver<K>, handler: Box<dyn ResourceEventHandler<K>>) {
        receiver.batch.clear();
        self.buffer.lock().queue.clear();
        drop(handler);
        self.consumer_ended.store(true, Ordering::SeqCst);
        self.sync_signal.announce();
    }
}

/// How a handler's call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handled {
    Returned,
    Panicked,
}

/// Notifications a handler task handles before it yields to the runtime's other tasks.
const YIELD_EVERY: u32 = 128;
