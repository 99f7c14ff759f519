//! What an informer's checks have found so far: counters for the metrics, and the
//! last check for a health endpoint.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::report::Difference;
use crate::lock::MutexExt;

/// How a check ended (the `result` label of `informer_consistency_checks_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CheckResult {
    /// The cache held exactly the server's collection.
    Consistent,
    /// It did not.
    Inconsistent,
    /// The check could not run this time and says nothing either way: the cache had
    /// not synced or settled at a version, or the server no longer kept the version
    /// and the cache passed no newer one in time, or the informer's lister-watcher
    /// cannot list what the server holds.
    Skipped,
    /// A request failed or timed out.
    Error,
}

impl CheckResult {
    /// `consistent`, `inconsistent`, `skipped`, `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Consistent => "consistent",
            Self::Inconsistent => "inconsistent",
            Self::Skipped => "skipped",
            Self::Error => "error",
        }
    }
}

/// One check, as the informer remembers it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LastCheck {
    /// How it ended.
    pub result: CheckResult,
    /// The resourceVersion compared at, when it got that far.
    pub resource_version: Option<String>,
    /// The differences it named.
    pub differences: Vec<Difference>,
    /// When it ended.
    pub finished: std::time::Instant,
}

/// An informer's consistency figures at one moment
/// ([`SharedIndexInformer::consistency_stats`](crate::shared_informer::SharedIndexInformer::consistency_stats)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConsistencyStats {
    /// Periodic checks and probes are on ([`ConsistencyConfig`](super::ConsistencyConfig)).
    pub periodic: bool,
    /// Periodic checks that found the cache consistent.
    pub consistent: u64,
    /// Periodic checks that found it differing.
    pub inconsistent: u64,
    /// Periodic checks that could not run (see [`CheckResult::Skipped`]).
    pub skipped: u64,
    /// Periodic checks whose requests failed.
    pub errors: u64,
    /// Differences found, each counted once: a difference a check finds again is not
    /// counted again.
    pub differences: u64,
    /// Relists made to heal a difference ([`ConsistencyConfig::heal`](super::ConsistencyConfig::heal)).
    pub heals: u64,
    /// The last periodic check.
    pub last_check: Option<LastCheck>,
    /// The last periodic check that ended consistent or inconsistent.
    pub last_verdict: Option<LastCheck>,
    /// The staleness gauge (see [`Health::staleness`](super::Health::staleness)).
    pub staleness: Option<Duration>,
    /// The newest probe's lag: how long after the server read it, the cache held the
    /// state the probe read (0 when it already did). The gauge equals it while no probe
    /// finds the cache behind.
    pub lag: Option<Duration>,
}

impl ConsistencyStats {
    /// Checks by result, in the order of [`CheckResult`].
    pub fn checks(&self) -> [(CheckResult, u64); 4] {
        [
            (CheckResult::Consistent, self.consistent),
            (CheckResult::Inconsistent, self.inconsistent),
            (CheckResult::Skipped, self.skipped),
            (CheckResult::Error, self.errors),
        ]
    }
}

/// The counters an informer's checks keep.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    consistent: AtomicU64,
    inconsistent: AtomicU64,
    skipped: AtomicU64,
    errors: AtomicU64,
    differences: AtomicU64,
    heals: AtomicU64,
    last: Mutex<(Option<LastCheck>, Option<LastCheck>)>,
}

impl Counters {
    /// A check ended; `new_differences` of its differences were not found before.
    pub(crate) fn checked(&self, check: LastCheck, new_differences: usize) {
        let counter = match check.result {
            CheckResult::Consistent => &self.consistent,
            CheckResult::Inconsistent => &self.inconsistent,
            CheckResult::Skipped => &self.skipped,
            CheckResult::Error => &self.errors,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.differences
            .fetch_add(new_differences as u64, Ordering::Relaxed);
        let mut last = self.last.locked();
        if matches!(
            check.result,
            CheckResult::Consistent | CheckResult::Inconsistent
        ) {
            last.1 = Some(check.clone());
        }
        last.0 = Some(check);
    }

    /// A relist was asked for to heal a difference.
    pub(crate) fn healed(&self) {
        self.heals.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(
        &self,
        periodic: bool,
        (staleness, lag): (Option<Duration>, Option<Duration>),
    ) -> ConsistencyStats {
        let (last_check, last_verdict) = self.last.locked().clone();
        ConsistencyStats {
            periodic,
            consistent: self.consistent.load(Ordering::Relaxed),
            inconsistent: self.inconsistent.load(Ordering::Relaxed),
            skipped: self.skipped.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            differences: self.differences.load(Ordering::Relaxed),
            heals: self.heals.load(Ordering::Relaxed),
            last_check,
            last_verdict,
            staleness,
            lag,
        }
    }
}
