//! The periodic side: staleness probes and checks on their intervals, each check's
//! outcome logged once, counted, and, when asked, healed by a relist. Nothing here
//! can fail or stall the informer: every request has a timeout, every error is logged
//! and retried at the next interval.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::object::Object;

use super::check::Checker;
use super::config::ConsistencyConfig;
use super::probe::{Probe, probe};
use super::report::{ConsistencyReport, DifferenceKind};
use super::stats::{CheckResult, Counters, LastCheck};
use crate::key::ObjectKey;
use crate::reflector::RelistTrigger;

/// One informer's periodic checks.
pub(crate) struct Periodic<K> {
    pub(crate) checker: Checker<K>,
    pub(crate) config: ConsistencyConfig,
    pub(crate) counters: Arc<Counters>,
    pub(crate) relist: RelistTrigger,
    /// Whether the informer's first list is in its cache.
    pub(crate) synced: Box<dyn Fn() -> bool + Send + Sync>,
}

/// The differences of the last check, to log and count each only once.
type Seen = BTreeSet<(ObjectKey, DifferenceKind)>;

impl<K: Object + 'static> Periodic<K> {
    /// Probes and checks until dropped.
    pub(crate) async fn run(self) {
        tokio::join!(self.probes(), self.checks());
    }

    async fn probes(&self) {
        let Some(source) = self.checker.source.as_deref() else {
            return;
        };
        while let Some(wait) = self.config.next_probe_wait() {
            tokio::time::sleep(wait).await;
            if !(self.synced)() {
                continue;
            }
            let found = probe(&self.checker.tracker, source, self.config.request_timeout).await;
            if let Probe::Failed(why) = found {
                tracing::debug!(resource = %self.checker.resource, "staleness probe failed: {why}");
            }
        }
    }

    async fn checks(&self) {
        let mut seen = Seen::new();
        let mut failing = false;
        loop {
            tokio::time::sleep(self.config.next_wait()).await;
            let checked = self.checker.check((self.synced)()).await;
            let finished = std::time::Instant::now();
            let (check, new_differences) = match checked {
                Ok(report) => {
                    failing = false;
                    let new = self.judge(&report, &mut seen);
                    let check = LastCheck {
                        result: if report.consistent {
                            CheckResult::Consistent
                        } else {
                            CheckResult::Inconsistent
                        },
                        resource_version: Some(report.resource_version.clone()),
                        differences: report.differences.clone(),
                        finished,
                    };
                    (check, new)
                }
                Err(error) => {
                    let result = error.result();
                    let resource = &self.checker.resource;
                    let why = crate::cause::Chain(&error);
                    if result == CheckResult::Error && !failing {
                        tracing::warn!(%resource, "consistency check failed: {why}; trying again at the next check");
                    } else {
                        tracing::debug!(%resource, ?result, "consistency check did not run: {why}");
                    }
                    failing = result == CheckResult::Error;
                    let check = LastCheck {
                        result,
                        resource_version: None,
                        differences: Vec::new(),
                        finished,
                    };
                    (check, 0)
                }
            };
            self.counters.checked(check, new_differences);
        }
    }

    /// Logs a check's report (a difference only the first check that finds it) and
    /// heals if asked; returns how many of its differences are new.
    fn judge(&self, report: &ConsistencyReport, seen: &mut Seen) -> usize {
        let resource = &self.checker.resource;
        if report.consistent {
            if !seen.is_empty() {
                tracing::info!(%resource, "the cache matches the server again: {report}");
            } else {
                tracing::debug!(%resource, "{report}");
            }
            seen.clear();
            return 0;
        }
        let now: Seen = report
            .differences
            .iter()
            .map(|d| (d.key.clone(), d.kind))
            .collect();
        let new = now.difference(seen).count();
        let heal = if self.config.heal {
            self.relist.relist();
            self.counters.healed();
            "; relisting to heal"
        } else {
            ""
        };
        if new > 0 || (report.differences.is_empty() && seen.is_empty()) {
            let shown = self.config.logged_differences;
            let mut keys: Vec<String> = report
                .differences
                .iter()
                .take(shown)
                .map(ToString::to_string)
                .collect();
            if report.differences.len() > shown {
                keys.push(format!("and {} more", report.differences.len() - shown));
            }
            let keys = if keys.is_empty() {
                String::new()
            } else {
                format!(": {}", keys.join(", "))
            };
            tracing::warn!(%resource, "the cache differs from the server: {report}{keys}{heal}");
        } else {
            tracing::debug!(%resource, "the cache still differs as reported: {report}{heal}");
        }
        *seen = now;
        new
    }
}
