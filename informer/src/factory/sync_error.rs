//! Why a wait for the factory's caches ended without every informer synced.

use std::fmt;
use std::time::Duration;

use crate::reflector::SyncError;

/// Why [`SharedInformerFactory::wait_for_cache_sync`](crate::factory::SharedInformerFactory::wait_for_cache_sync) (or
/// [`wait_for_cache_sync_within`](crate::factory::SharedInformerFactory::wait_for_cache_sync_within))
/// did not see every informer sync. Informers are named by type and namespace
/// (`ConfigMap in default`, `Namespace`).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CacheSyncError {
    /// Informers were asked for but not started: [`start`](crate::factory::SharedInformerFactory::start)
    /// was not called, or not since they were asked for. Empty when the factory was
    /// never started and has no informer either.
    #[error(
        "{}: call start() after asking for informers and before waiting for them",
        not_started(informers)
    )]
    NotStarted {
        /// The informers never started, by name, sorted.
        informers: Vec<String>,
    },
    /// The factory shut down before these informers synced.
    #[error("the factory shut down before {} synced", list(unsynced))]
    ShutDown {
        /// The informers not synced, sorted by name.
        unsynced: Vec<Unsynced>,
    },
    /// The time given to [`wait_for_cache_sync_within`](crate::factory::SharedInformerFactory::wait_for_cache_sync_within)
    /// ran out before these informers synced (they go on trying).
    #[error("not synced after {after:?}: {}", list(unsynced))]
    TimedOut {
        /// How long the wait was.
        after: Duration,
        /// The informers not synced, sorted by name, with why their last list failed.
        unsynced: Vec<Unsynced>,
    },
}

impl CacheSyncError {
    /// The informers not synced with why, for [`ShutDown`](Self::ShutDown) and
    /// [`TimedOut`](Self::TimedOut); empty for [`NotStarted`](Self::NotStarted).
    pub fn unsynced(&self) -> &[Unsynced] {
        match self {
            Self::ShutDown { unsynced } | Self::TimedOut { unsynced, .. } => unsynced,
            Self::NotStarted { .. } => &[],
        }
    }
}

/// An informer that had not synced when the wait ended, and why.
#[derive(Debug, Clone)]
pub struct Unsynced {
    /// The informer's name: its type, and namespace if it has one (`ConfigMap in default`).
    pub informer: String,
    /// Why its last list (or streaming list) failed; `None` while the first one is
    /// still under way (or it never started).
    pub last_error: Option<SyncError>,
}

impl fmt::Display for Unsynced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.last_error {
            Some(error) => write!(f, "{} ({error})", self.informer),
            None => f.write_str(&self.informer),
        }
    }
}

fn not_started(informers: &[String]) -> String {
    match informers {
        [] => "nothing was started".to_owned(),
        [one] => format!("{one} was never started"),
        many => format!("{} were never started", many.join(", ")),
    }
}

fn list(unsynced: &[Unsynced]) -> String {
    let names: Vec<String> = unsynced.iter().map(ToString::to_string).collect();
    names.join(", ")
}
