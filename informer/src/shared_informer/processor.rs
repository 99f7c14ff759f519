//! Fan-out of notifications to every handler (client-go's `sharedProcessor`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};
use std::time::Duration;

use tokio::time::Instant;

use super::handler::{Notification, ResourceEventHandler};
use super::listener::{Listener, ListenerStats, Receiver};
use super::sync::SyncSignal;

use crate::lock::{MutexExt, RwLockExt};

/// A handler registered before start, with the listener and buffer it will drain.
struct Waiting<K> {
    listener: Arc<Listener<K>>,
    receiver: Receiver<K>,
    handler: Box<dyn ResourceEventHandler<K>>,
    runs_on: RunsOn,
}

/// Where a handler is called from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunsOn {
    /// A thread of its own: the handler may block.
    Thread,
    /// A task on the informer's runtime: for a cheap handler that never blocks.
    Runtime,
}

/// What is left to wait for once the processor stopped: the handlers' threads and
/// tasks, each ending after the call it may be in.
pub(crate) struct Stopped {
    pub(crate) threads: Vec<std::thread::JoinHandle<()>>,
    pub(crate) tasks: Vec<tokio::task::JoinHandle<()>>,
}

pub(crate) struct Processor<K> {
    kind: &'static str,
    next_id: AtomicU64,
    /// Given to each listener, which announces when it has handled its initial list.
    sync_signal: Arc<SyncSignal>,
    /// Read for every notification; written when listeners come and go.
    listeners: RwLock<Vec<Arc<Listener<K>>>>,
    /// Taken before `listeners` when both are needed.
    lifecycle: Mutex<Lifecycle<K>>,
    /// Panics of handlers removed since, so that the total never goes down.
    removed_panics: AtomicU64,
}

struct Lifecycle<K> {
    /// Handlers registered before start, waiting for their thread or task.
    waiting: Vec<Waiting<K>>,
    threads: Vec<std::thread::JoinHandle<()>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The runtime the informer runs on, where handler tasks run; set at start.
    runtime: Option<tokio::runtime::Handle>,
    started: bool,
    stopped: bool,
}

impl<K> Processor<K> {
    pub(crate) fn new(kind: &'static str, sync_signal: Arc<SyncSignal>) -> Self {
        Self {
            kind,
            next_id: AtomicU64::new(1),
            sync_signal,
            listeners: RwLock::new(Vec::new()),
            lifecycle: Mutex::new(Lifecycle {
                waiting: Vec::new(),
                threads: Vec::new(),
                tasks: Vec::new(),
                runtime: None,
                started: false,
                stopped: false,
            }),
            removed_panics: AtomicU64::new(0),
        }
    }

    /// The listeners, read-locked, for several [`distribute_to`](Self::distribute_to)
    /// calls under one lock (the set cannot change meanwhile).
    pub(crate) fn listeners(&self) -> RwLockReadGuard<'_, Vec<Arc<Listener<K>>>> {
        self.listeners.read_locked()
    }

    /// Hands `notification` to every one of `listeners`, or, for a resync, to those whose
    /// resync period is due. A listener's consumer is woken once a batch is queued,
    /// or by [`wake`](Self::wake).
    pub(crate) fn distribute_to(
        listeners: &[Arc<Listener<K>>],
        notification: Notification<K>,
        is_resync: bool,
    ) {
        let mut targets = listeners
            .iter()
            .filter(|l| !is_resync || l.resync_due())
            .peekable();
        while let Some(listener) = targets.next() {
            if targets.peek().is_some() {
                listener.push_deferred(notification.clone());
            } else {
                listener.push_deferred(notification);
                break;
            }
        }
    }

    /// Wakes every listener that has notifications queued by [`distribute_to`]
    /// (Self::distribute_to) and waits for them: the process loop calls this when it has
    /// nothing more to do for now.
    pub(crate) fn wake(&self) {
        for listener in self.listeners.read_locked().iter() {
            listener.wake();
        }
    }

    /// At a resync tick: marks the listeners whose period is due; whether any is.
    pub(crate) fn should_resync(&self) -> bool {
        let now = Instant::now();
        let mut any = false;
        for listener in self.listeners.read_locked().iter() {
            // Every listener must be checked: no short-circuit.
            any |= listener.check_resync(now);
        }
        any
    }

    pub(crate) fn listener_count(&self) -> usize {
        self.listeners.read_locked().len()
    }

    /// Each registered handler's buffer counters.
    pub(crate) fn listener_stats(&self) -> Vec<ListenerStats> {
        self.listeners
            .read_locked()
            .iter()
            .map(|l| l.stats())
            .collect()
    }

    /// Panics of every handler ever registered, removed ones included.
    pub(crate) fn panics(&self) -> u64 {
        let live: u64 = self
            .listeners
            .read_locked()
            .iter()
            .map(|l| l.stats().panics)
            .sum();
        live + self.removed_panics.load(Ordering::Relaxed)
    }

    /// Removes a listener: it gets nothing more.
    pub(crate) fn remove(&self, id: u64) {
        let mut lifecycle = self.lifecycle.locked();
        self.listeners.write_locked().retain(|l| {
            if l.id == id {
                l.close();
                self.removed_panics
                    .fetch_add(l.stats().panics, Ordering::Relaxed);
                false
            } else {
                true
            }
        });
        lifecycle.waiting.retain(|w| w.listener.id != id);
    }
}

impl<K: Send + Sync + 'static> Processor<K> {
    /// Registers a handler; its thread or task starts now if the processor runs, else
    /// with it. `None` once the processor has stopped.
    pub(crate) fn add_handler(
        &self,
        handler: Box<dyn ResourceEventHandler<K>>,
        runs_on: RunsOn,
        resync: Option<Duration>,
        replay: impl FnOnce(&Listener<K>),
    ) -> Option<Arc<Listener<K>>> {
        let mut lifecycle = self.lifecycle.locked();
        if lifecycle.stopped {
            return None;
        }
        let (listener, receiver) = self.new_listener(resync);
        replay(&listener);
        let waiting = Waiting {
            listener: Arc::clone(&listener),
            receiver,
            handler,
            runs_on,
        };
        if lifecycle.started {
            self.spawn(&mut lifecycle, waiting);
        } else {
            lifecycle.waiting.push(waiting);
        }
        self.listeners.write_locked().push(Arc::clone(&listener));
        Some(listener)
    }

    /// Registers a listener whose buffer the caller drains (a subscription).
    pub(crate) fn add_subscriber(
        &self,
        resync: Option<Duration>,
        replay: impl FnOnce(&Listener<K>),
    ) -> Option<(Arc<Listener<K>>, Receiver<K>)> {
        let lifecycle = self.lifecycle.locked();
        if lifecycle.stopped {
            return None;
        }
        let (listener, receiver) = self.new_listener(resync);
        replay(&listener);
        self.listeners.write_locked().push(Arc::clone(&listener));
        drop(lifecycle);
        Some((listener, receiver))
    }

    fn new_listener(&self, resync: Option<Duration>) -> (Arc<Listener<K>>, Receiver<K>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        Listener::new(id, resync, Arc::clone(&self.sync_signal))
    }

    fn spawn(&self, lifecycle: &mut Lifecycle<K>, waiting: Waiting<K>) {
        let Waiting {
            listener,
            receiver,
            handler,
            runs_on,
        } = waiting;
        if runs_on == RunsOn::Runtime
            && let Some(runtime) = &lifecycle.runtime
        {
            let task = listener.spawn_handler_task(runtime, receiver, handler);
            lifecycle.tasks.push(task);
            return;
        }
        let name = format!("handler-{}-{}", self.kind, listener.id);
        match listener.spawn_handler_thread(name, receiver, handler) {
            Ok(thread) => lifecycle.threads.push(thread),
            Err(error) => {
                tracing::error!(%error, kind = self.kind, "could not start a handler thread");
                listener.close();
            }
        }
    }

    /// Starts the threads and tasks of handlers registered so far; handler tasks run
    /// on `runtime`.
    pub(crate) fn start(&self, runtime: tokio::runtime::Handle) {
        let mut lifecycle = self.lifecycle.locked();
        lifecycle.started = true;
        lifecycle.runtime = Some(runtime);
        for waiting in std::mem::take(&mut lifecycle.waiting) {
            self.spawn(&mut lifecycle, waiting);
        }
    }

    /// Closes every listener and returns the handler threads and tasks to wait for.
    pub(crate) fn stop(&self) -> Stopped {
        let mut lifecycle = self.lifecycle.locked();
        lifecycle.stopped = true;
        for listener in self.listeners.write_locked().drain(..) {
            listener.close();
        }
        lifecycle.waiting.clear();
        Stopped {
            threads: std::mem::take(&mut lifecycle.threads),
            tasks: std::mem::take(&mut lifecycle.tasks),
        }
    }
}
