//! [`Health`]: one answer for a readiness endpoint: synced, not stale, and the last
//! check consistent.

use std::fmt;
use std::time::Duration;

use super::stats::{CheckResult, LastCheck};

/// An informer's health at one moment
/// ([`SharedIndexInformer::health`](crate::shared_informer::SharedIndexInformer::health)).
///
/// ```
/// # fn demo(informer: &informer::shared_informer::SharedIndexInformer<k8s_openapi::api::core::v1::ConfigMap>) {
/// use std::time::Duration;
///
/// let health = informer.health();
/// if let Err(problems) = health.check(Duration::from_secs(30)) {
///     // e.g. "not synced", "stale: 42s behind the server", "inconsistent at 1234: 2 differences"
///     let why: Vec<String> = problems.iter().map(ToString::to_string).collect();
///     eprintln!("not ready: {}", why.join("; "));
/// }
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Health {
    /// The first list is in the cache.
    pub synced: bool,
    /// How far the cache is behind the server, from the staleness probes: `None`
    /// before one has a reading (or when probes are off).
    pub staleness: Option<Duration>,
    /// The last check that ended consistent or inconsistent (checks that could not
    /// run say nothing about the cache).
    pub last_verdict: Option<LastCheck>,
}

/// Why an informer is not healthy.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HealthProblem {
    /// The first list is not in the cache yet.
    NotSynced,
    /// The cache is this far behind the server, more than allowed.
    Stale(Duration),
    /// The last check found the cache differing from the server.
    Inconsistent {
        /// Where it compared.
        resource_version: Option<String>,
        /// How many differences it named.
        differences: usize,
    },
}

impl fmt::Display for HealthProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotSynced => f.write_str("not synced"),
            Self::Stale(behind) => write!(f, "stale: {}s behind the server", behind.as_secs()),
            Self::Inconsistent {
                resource_version,
                differences,
            } => {
                let at = resource_version.as_deref().unwrap_or("?");
                write!(f, "inconsistent at {at}: {differences} differences")
            }
        }
    }
}

impl Health {
    /// `Ok` when synced, at most `max_staleness` behind (or not measured), and the
    /// last check (if any) consistent; else every problem.
    pub fn check(&self, max_staleness: Duration) -> Result<(), Vec<HealthProblem>> {
        let mut problems = Vec::new();
        if !self.synced {
            problems.push(HealthProblem::NotSynced);
        }
        if let Some(behind) = self.staleness.filter(|behind| *behind > max_staleness) {
            problems.push(HealthProblem::Stale(behind));
        }
        if let Some(verdict) = &self.last_verdict
            && verdict.result == CheckResult::Inconsistent
        {
            problems.push(HealthProblem::Inconsistent {
                resource_version: verdict.resource_version.clone(),
                differences: verdict.differences.len(),
            });
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }

    /// Whether [`check`](Self::check) passes.
    pub fn is_healthy(&self, max_staleness: Duration) -> bool {
        self.check(max_staleness).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consistency::{Difference, DifferenceKind};
    use crate::key::ObjectKey;

    fn missing(name: &str) -> Difference {
        Difference::new(
            ObjectKey::namespaced("ns", name),
            DifferenceKind::Missing,
            None,
            Some("3".into()),
        )
    }

    #[test]
    fn names_every_problem() {
        let verdict = LastCheck {
            result: CheckResult::Inconsistent,
            resource_version: Some("40".into()),
            differences: vec![missing("a"), missing("b")],
            finished: std::time::Instant::now(),
        };
        let health = Health {
            synced: false,
            staleness: Some(Duration::from_secs(42)),
            last_verdict: Some(verdict.clone()),
        };
        let problems = health.check(Duration::from_secs(30)).unwrap_err();
        let said: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            said,
            [
                "not synced",
                "stale: 42s behind the server",
                "inconsistent at 40: 2 differences"
            ]
        );
        let healthy = Health {
            synced: true,
            staleness: Some(Duration::from_secs(1)),
            last_verdict: Some(LastCheck {
                result: CheckResult::Consistent,
                ..verdict
            }),
        };
        assert!(healthy.is_healthy(Duration::from_secs(30)));
    }
}
