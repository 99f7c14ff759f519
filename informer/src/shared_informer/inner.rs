//! The state one informer's handles share ([`Inner`]): its source, cache, queue,
//! handlers and the settings that may change until it starts. The informer's handles
//! and its registrations hold it, so it has its own file below both.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use crate::object::Object;

use super::config::Transform;
use super::handler::Notification;
#[cfg(feature = "metrics")]
use super::latency::ProcessingLatency;
use super::listener::Listener;
use super::processor::Processor;
use super::queue::Queue;
use super::sync::SyncSignal;
use crate::consistency::{ConsistencyConfig, Counters, Tracker};
use crate::lock::MutexExt;
use crate::reflector::source::{Capabilities, ListerWatcher};
use crate::reflector::{self, ReflectorStats, SharedKeyFilter};
use crate::store::{Indexer, Writer};

/// The smallest handler resync period (client-go's `minimumResyncPeriod`): smaller
/// ones are raised to it.
pub(super) const MINIMUM_RESYNC: Duration = Duration::from_secs(1);

/// What every handle of one informer shares.
pub(crate) struct Inner<K> {
    pub(super) kind: &'static str,
    pub(super) lister_watcher: Arc<dyn ListerWatcher<K>>,
    /// What the lister-watcher said it can do, read once when the informer is made
    /// (it does not change): its resource, decoded sizes and versions.
    pub(super) capabilities: Capabilities,
    pub(super) indexer: Indexer<K>,
    pub(super) queue: Queue<K>,
    pub(super) processor: Processor<K>,
    /// The cache's only writer. Held while one object's deltas are applied, and while
    /// a late handler receives its replay, so the two never interleave.
    pub(super) writer: Mutex<Writer<K>>,
    /// The resync period of handlers added without one.
    pub(super) default_resync: Option<Duration>,
    /// What `run` starts the reflector with: `Some` until `run` takes it.
    pub(super) startup: Mutex<Option<Startup<K>>>,
    /// The reflector's resync tick once started (see [`Startup::resync_check_period`]).
    pub(super) running_resync_check: OnceLock<Option<Duration>>,
    pub(super) stopped: AtomicBool,
    pub(super) reflector_stats: OnceLock<Arc<ReflectorStats>>,
    /// Wakes [`HasSynced::synced`] waiters of the informer and of its registrations.
    pub(super) sync_signal: Arc<SyncSignal>,
    /// The cache's digest and points, for consistency checks and staleness.
    pub(super) tracker: Arc<Tracker>,
    /// What the informer's consistency checks need besides the tracker.
    pub(super) consistency: ConsistencyParts,
    /// How long the process loop takes per batch.
    #[cfg(feature = "metrics")]
    pub(super) processing_latency: ProcessingLatency,
}

/// The settings and counters of an informer's consistency checks.
pub(super) struct ConsistencyParts {
    /// Periodic checks, when asked for.
    pub(super) config: Option<ConsistencyConfig>,
    pub(super) counters: Arc<Counters>,
    /// The reflector's key filter: a check lists what the reflector keeps.
    pub(super) key_filter: Option<SharedKeyFilter>,
}

/// The settings that can change until the informer starts: client-go lets
/// `SetTransform` and `SetWatchErrorHandler` be called on an informer until it runs,
/// which is how a controller configures an informer that a shared factory built, and
/// handlers added before start lower the resync check period.
pub(super) struct Startup<K> {
    /// The reflector's resync tick: the smallest period asked for before start.
    pub(super) resync_check_period: Option<Duration>,
    pub(super) reflector: reflector::Config,
    pub(super) transform: Option<Transform<K>>,
}

impl<K> Inner<K> {
    pub(super) fn startup(&self) -> MutexGuard<'_, Option<Startup<K>>> {
        self.startup.locked()
    }
}

impl<K: 'static> Inner<K> {
    pub(super) fn has_synced(&self) -> bool {
        self.queue.has_synced()
    }
}

impl<K: Object + Send + Sync + 'static> Inner<K> {
    /// client-go's rule: before start a smaller period lowers the resync check
    /// period; after start it cannot, so the handler's period is raised to it.
    pub(super) fn adjust_resync(&self, requested: Duration) -> Option<Duration> {
        if requested.is_zero() {
            return None;
        }
        let requested = if requested < MINIMUM_RESYNC {
            tracing::warn!(
                kind = self.kind,
                ?requested,
                minimum = ?MINIMUM_RESYNC,
                "resync period too small; raised to the minimum"
            );
            MINIMUM_RESYNC
        } else {
            requested
        };
        let mut startup = self.startup();
        if let Some(startup) = startup.as_mut() {
            let check = &mut startup.resync_check_period;
            if check.is_none_or(|check| requested < check) {
                *check = Some(requested);
            }
            return Some(requested);
        }
        let check = self.running_resync_check.get().copied().flatten();
        match check {
            None => {
                tracing::warn!(
                    kind = self.kind,
                    ?requested,
                    "informer started without resync: the handler's resync period is ignored"
                );
                None
            }
            Some(check) if requested < check => {
                tracing::warn!(
                    kind = self.kind,
                    ?requested,
                    ?check,
                    "resync period smaller than the running informer's check period; raised"
                );
                Some(check)
            }
            Some(_) => Some(requested),
        }
    }

    /// Queues an initial-list add of every cached object for a new listener.
    pub(super) fn replay(&self, listener: &Listener<K>) {
        self.indexer.for_each(|_, object| {
            listener.push(Notification::Add {
                object: Arc::clone(object),
                is_initial_list: true,
            });
        });
    }
}
