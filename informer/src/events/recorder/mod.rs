//! [`Recorder`]: the handle reconcilers publish events with (client-go's
//! `EventRecorder` and `EventBroadcaster` in one).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::config::RecorderConfig;
use super::error::EventError;
use super::event::{make_event, validate};
use super::series::{EventKey, Observed, SeriesCache};
use super::shared::{Shared, State};
use super::spam_filter::{SpamFilter, SpamKey};
use super::spec::{EventSpec, Reporter};
use super::stats::{Counters, RecorderStats, bump};
use super::writer::Writer;
use crate::claim::Fence;
use crate::lock::MutexExt;

/// What [`Recorder::publish`] did with an event. Publishing is best effort: a caller
/// may ignore this (tests and metrics look at it).
#[derive(Debug)]
#[non_exhaustive]
pub enum Published {
    /// A new Event, queued to be created.
    New,
    /// Counted in the series of an identical recent Event: the first repeat's update
    /// is queued at once, later counts go out with the next flush.
    Folded,
    /// Dropped, and why: throttled by the spam filter, invalid, queue full, or the
    /// recorder is shut down.
    Dropped(EventError),
}

/// Publishes `events.k8s.io/v1` Events about objects, as client-go's
/// `tools/events` recorder: identical events fold into a series, a token bucket per
/// object stops floods, and a background task writes to the API server so
/// [`publish`](Self::publish) never waits for it.
///
/// A `Recorder` is a cheap handle (`Clone`, `Send`, `Sync`): clone it into every
/// reconciler. Its writer task ends after [`shutdown`](Self::shutdown), or when the
/// last handle is dropped, in both cases after writing the counts still pending.
#[derive(Clone)]
pub struct Recorder {
    inner: Arc<Inner>,
    /// The fence this handle publishes under (a controller's reconcile's): events are
    /// recorded, and written, only while it holds.
    fence: Fence,
}

/// The handles' side; dropped with the last handle, which closes the writer's queue.
struct Inner {
    shared: Arc<Shared>,
    jobs: mpsc::Sender<u64>,
    closing: watch::Sender<bool>,
    task: tokio::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Recorder {
    /// A recorder reporting as `reporter`, with client-go's limits and timings.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime: the writer is a task on the current runtime.
    pub fn new(client: Client, reporter: Reporter) -> Self {
        Self::with_config(client, reporter, RecorderConfig::default())
    }

    /// A recorder reporting as `reporter`, with `config`.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime: the writer is a task on the current runtime.
    pub fn with_config(client: Client, reporter: Reporter, config: RecorderConfig) -> Self {
        let (jobs, jobs_rx) = mpsc::channel(config.queue_capacity.max(1));
        let (closing, closing_rx) = watch::channel(false);
        let capacity = config.cache_capacity.max(1);
        let state = State {
            spam: SpamFilter::new(config.spam_burst, config.spam_refill, capacity),
            series: SeriesCache::new(config.series_window, capacity),
            closed: false,
        };
        let shared = Arc::new(Shared {
            reporter,
            config,
            state: Mutex::new(state),
            stats: Counters::default(),
            running: AtomicBool::new(true),
        });
        let writer = Writer {
            client,
            shared: Arc::clone(&shared),
            jobs: jobs_rx,
            closing: closing_rx,
        };
        let task = tokio::spawn(writer.run());
        Self {
            inner: Arc::new(Inner {
                shared,
                jobs,
                closing,
                task: tokio::sync::Mutex::new(Some(task)),
            }),
            fence: Fence::open(),
        }
    }

    /// Who this recorder reports as.
    pub fn reporter(&self) -> &Reporter {
        &self.inner.shared.reporter
    }

    /// Records an event about `regarding` (see
    /// [`object_reference`](super::object_reference)). Never waits for the API
    /// server: the event is checked, passed through the spam filter, folded into the
    /// series of an identical recent event or queued for the writer, and dropped (with
    /// a log line and a count) when any of that says no.
    pub fn publish(&self, regarding: &ObjectReference, spec: EventSpec) -> Published {
        let shared = &*self.inner.shared;
        bump(&shared.stats.published);
        if *self.inner.closing.borrow() {
            return self.after_shutdown();
        }
        if let Err(fenced) = self.fence.check_write() {
            bump(&shared.stats.fenced);
            return Published::Dropped(EventError::Fenced {
                reason: fenced.reason,
            });
        }
        let spec = match validate(&shared.reporter, regarding, spec) {
            Ok(spec) => spec,
            Err(error) => {
                bump(&shared.stats.invalid);
                tracing::warn!(%error, "event dropped");
                return Published::Dropped(error);
            }
        };
        let now = Instant::now();
        let mut state = shared.state.locked();
        if state.closed {
            drop(state);
            return self.after_shutdown();
        }
        if !state
            .spam
            .allow(&SpamKey::new(regarding, spec.event_type), now)
        {
            drop(state);
            bump(&shared.stats.throttled);
            let object = describe(regarding);
            tracing::debug!(%object, reason = %spec.reason, "event dropped by the spam filter");
            return Published::Dropped(EventError::Throttled { object });
        }
        let key = EventKey::new(regarding, &spec);
        let wall = Timestamp::now();
        let cluster_namespace = &shared.config.cluster_scoped_namespace;
        let make = || make_event(&shared.reporter, regarding, spec, wall, cluster_namespace);
        let (id, new) = match state
            .series
            .observe(key, now, wall, self.fence.clone(), make)
        {
            Observed::Folded => {
                bump(&shared.stats.folded);
                return Published::Folded;
            }
            Observed::New(id) => (id, true),
            Observed::SeriesStarted(id) => (id, false),
        };
        let sent = self.inner.jobs.try_send(id);
        if sent.is_err() {
            state.series.cancel(id);
        }
        drop(state);
        match sent {
            Ok(()) if new => Published::New,
            Ok(()) => {
                bump(&shared.stats.folded);
                Published::Folded
            }
            // The count stays in the cache: the next flush writes it.
            Err(mpsc::error::TrySendError::Full(_)) if !new => {
                bump(&shared.stats.folded);
                Published::Folded
            }
            Err(mpsc::error::TrySendError::Full(_)) => {
                let dropped = bump(&shared.stats.queue_full);
                let capacity = self.inner.jobs.max_capacity();
                // Warn on the 1st, 2nd, 4th, 8th... drop: a flood logs a few lines.
                if dropped.is_power_of_two() {
                    tracing::warn!(dropped, capacity, "event queue full: event dropped");
                }
                Published::Dropped(EventError::QueueFull { capacity })
            }
            Err(mpsc::error::TrySendError::Closed(_)) => self.after_shutdown(),
        }
    }

    /// This recorder, publishing under `fence`: an event is recorded only while the
    /// fence holds, and the writer sends it (and the series counts it adds to) only
    /// while it still holds; otherwise it is dropped and counted
    /// ([`RecorderStats::fenced`]).
    pub(crate) fn fenced(&self, fence: Fence) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            fence,
        }
    }

    /// Counts and reports an event published after shutdown.
    fn after_shutdown(&self) -> Published {
        bump(&self.inner.shared.stats.after_shutdown);
        tracing::debug!("event dropped: the recorder is shut down");
        Published::Dropped(EventError::ShutDown)
    }

    /// What this recorder has done so far.
    pub fn stats(&self) -> RecorderStats {
        self.inner.shared.stats.snapshot()
    }

    /// Whether the background writer is still running (false once
    /// [`shutdown`](Self::shutdown) has returned).
    pub fn is_running(&self) -> bool {
        self.inner.shared.running.load(Ordering::SeqCst)
    }

    /// Stops recording: events published from now on are dropped, the writer writes
    /// what is queued and every series count not yet written, and ends. Returns once
    /// it has; any handle may call it, as often as it likes.
    ///
    /// Writes that fail are not retried any more. To bound the wait when the API
    /// server may be unreachable, wrap it in [`tokio::time::timeout`].
    pub async fn shutdown(&self) {
        self.inner.closing.send_replace(true);
        let mut task = self.inner.task.lock().await;
        if let Some(handle) = task.as_mut() {
            if let Err(error) = handle.await
                && error.is_panic()
            {
                tracing::error!("the event writer panicked");
            }
            *task = None;
        }
    }
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("reporter", self.reporter())
            .field("running", &self.is_running())
            .field("stats", &self.stats())
            .finish()
    }
}

/// `Kind namespace/name` (or `Kind name`) of an object, for logs and errors.
fn describe(object: &ObjectReference) -> String {
    let kind = object.kind.as_deref().unwrap_or("object");
    let name = object.name.as_deref().unwrap_or_default();
    match object.namespace.as_deref() {
        Some(namespace) if !namespace.is_empty() => format!("{kind} {namespace}/{name}"),
        _ => format!("{kind} {name}"),
    }
}

#[cfg(test)]
mod tests;
