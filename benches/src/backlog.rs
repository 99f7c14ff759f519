//! Scenario 12, edits made while a controller's startup backlog drains: its worker.
//!
//! The worker starts scenario 7's controller ([`crate::controller`]: the same
//! `Parent`s owning a ConfigMap child each, the same reconcile, [`WORKERS`] at once)
//! with a new tag, so that every one of the `objects` parents needs a reconcile: the
//! startup backlog. Once its first [`FIRST_PATCHES`] status patches are made (the
//! backlog is being worked, and nearly all of it is still there) it prints `synced`,
//! the handshake's word for "go ahead"; the driver then changes `edits` children, spread
//! over a few seconds, each stamped (`data.stamp`, see [`stamp_now`]) and given the
//! value `{tag}-{k}`. For each such edit the worker records the time from its stamp to
//! the first reconcile of its owner that saw it (once per edit, whichever side
//! reconciles an owner twice), and it measures until every parent has converged: each
//! patched at least once, and every edit's value in its owner's status.
//!
//! ```text
//! bench-worker backlog <ours|ours-fifo|kube-runtime> <namespace> <objects> <edits> <tag>
//! ```
//!
//! `ours` is our `Controller` with its priority queue (the default: the initial list's
//! keys at `Priority::LOW`, real changes at `Priority::NORMAL`), `ours-fifo` the same
//! with `.priority_queue(false)` (client-go's FIFO), `kube-runtime` its `Controller`
//! with `owns_stream`, as in scenario 7.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::ConfigMap;

use crate::controller::{
    Observer, Parent, WORKERS, millis_since, percentile, spawn_side, stamp_now, status_wanted,
};
use crate::handshake::say_synced;
use crate::measure::{Mark, memory};
use crate::report::{BacklogSample, Implementation, median};

/// Status patches made before the worker tells the driver to start its edits.
pub const FIRST_PATCHES: usize = 2 * WORKERS;

/// How often the worker looks at its progress (and logs it, to place each edit's
/// stamp against the backlog left then).
const POLL: Duration = Duration::from_millis(5);

/// An edit the reconciles saw.
#[derive(Debug, Clone, Copy)]
struct Seen {
    /// The edit's stamp (wall-clock nanoseconds).
    stamp: u128,
    /// Milliseconds from the stamp to the reconcile that first saw it.
    millis: f64,
}

/// What the reconciles report, under one lock.
#[derive(Default)]
struct State {
    /// Parents patched at least once.
    patched: HashSet<String>,
    /// Edits seen, by the child's value.
    seen: HashMap<String, Seen>,
    /// Edits whose value reached their owner's status.
    edits_patched: HashSet<String>,
}

/// Scenario 12's [`Observer`].
struct Backlog {
    /// The prefix of the values of this run's edits, `{tag}-`.
    edit_prefix: String,
    reconciles: AtomicUsize,
    state: Mutex<State>,
}

impl Backlog {
    fn new(tag: &str) -> Self {
        Self {
            edit_prefix: format!("{tag}-"),
            reconciles: AtomicUsize::new(0),
            state: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("not poisoned")
    }
}

impl Observer for Backlog {
    /// Records the first sighting of each of this run's edits.
    fn wanted(&self, tag: &str, parent: &Parent, child: &ConfigMap) -> Option<String> {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        let (wanted, stamp) = status_wanted(tag, parent, child)?;
        let value = child.data.as_ref().and_then(|data| data.get("value"));
        if let (Some(value), Some(stamp)) = (value, stamp)
            && value.starts_with(&self.edit_prefix)
        {
            let millis = millis_since(stamp);
            self.state()
                .seen
                .entry(value.clone())
                .or_insert(Seen { stamp, millis });
        }
        Some(wanted)
    }

    fn patched(&self, parent: &str, observed: &str) {
        let mut state = self.state();
        state.patched.insert(parent.to_owned());
        // `observed` is `{tag}:{value}`; the tag holds no `:`.
        if let Some((_, value)) = observed.split_once(':')
            && value.starts_with(&self.edit_prefix)
        {
            state.edits_patched.insert(value.to_owned());
        }
    }
}

/// The worker's mode `backlog` (see the [module docs](self)).
pub async fn run(
    implementation: Implementation,
    namespace: &str,
    objects: usize,
    edits: usize,
    tag: &str,
) -> anyhow::Result<BacklogSample> {
    let client = kube::Client::try_default().await?;
    let observer = Arc::new(Backlog::new(tag));
    let mark = Mark::now();
    let started = stamp_now();
    spawn_side(implementation, client, namespace, tag, observer.clone())?;
    // (wall-clock stamp, parents patched), every POLL: where each edit fell.
    let mut timeline: Vec<(u128, usize)> = Vec::new();
    let mut told = false;
    let mut first_patches_seconds = f64::NAN;
    loop {
        let (patched, edits_patched) = {
            let state = observer.state();
            (state.patched.len(), state.edits_patched.len())
        };
        timeline.push((stamp_now(), patched));
        if !told && patched >= FIRST_PATCHES.min(objects) {
            first_patches_seconds = mark.wall_seconds();
            say_synced()?;
            told = true;
        }
        if patched >= objects && edits_patched >= edits {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    let converge_seconds = mark.wall_seconds();
    let converge_cpu_seconds = mark.cpu_seconds();
    let reconciles = observer.reconciles.load(Ordering::Relaxed);
    let seen: Vec<Seen> = observer.state().seen.values().copied().collect();
    let latencies: Vec<f64> = seen.iter().map(|s| s.millis).collect();
    let first_stamp = seen.iter().map(|s| s.stamp).min().context("no edit seen")?;
    let last_stamp = seen.iter().map(|s| s.stamp).max().context("no edit seen")?;
    // Parents not yet patched at `stamp`: as of the last look before it.
    let backlog_at = |stamp: u128| {
        let at = timeline.partition_point(|&(when, _)| when <= stamp);
        objects - timeline[at.saturating_sub(1)].1.min(objects)
    };
    let seconds_since_start = |stamp: u128| stamp.saturating_sub(started) as f64 / 1e9;
    Ok(BacklogSample {
        implementation,
        objects,
        edits,
        workers: WORKERS,
        first_patches_seconds,
        first_edit_seconds: seconds_since_start(first_stamp),
        last_edit_seconds: seconds_since_start(last_stamp),
        backlog_at_first_edit: backlog_at(first_stamp),
        backlog_at_last_edit: backlog_at(last_stamp),
        converge_seconds,
        converge_cpu_seconds,
        reconciles,
        latency_p50_ms: median(latencies.iter().copied()),
        latency_p99_ms: percentile(&latencies, 0.99),
        latency_max_ms: latencies.iter().copied().fold(f64::NAN, f64::max),
        latencies: latencies.len(),
        peak_rss_kib: memory().peak_kib,
    })
}

/// Parses the worker's arguments after the mode.
pub fn parse_args(args: &[String]) -> anyhow::Result<(Implementation, &str, usize, usize, &str)> {
    crate::controller::parse_args(args)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::controller::{ParentSpec, ParentStatus};

    fn parent(observed: Option<&str>) -> Parent {
        let mut parent = Parent::new(
            "parent-1",
            ParentSpec {
                child: "parent-1-child".to_owned(),
            },
        );
        parent.status = Some(ParentStatus {
            observed: observed.map(str::to_owned),
        });
        parent
    }

    fn child(value: &str, stamp: Option<u128>) -> ConfigMap {
        let mut data = BTreeMap::from([("value".to_owned(), value.to_owned())]);
        if let Some(stamp) = stamp {
            data.insert("stamp".to_owned(), stamp.to_string());
        }
        ConfigMap {
            data: Some(data),
            ..ConfigMap::default()
        }
    }

    #[test]
    fn times_each_edit_of_its_own_run_once_and_converges_on_patches() {
        let observer = Backlog::new("b4");
        let stamp = stamp_now();
        // The backlog: an old value (an earlier run's edit, stamped) is not timed.
        let old = child("b1-7", Some(stamp));
        assert_eq!(
            observer.wanted("b4", &parent(Some("b1:b1-7")), &old),
            Some("b4:b1-7".to_owned())
        );
        observer.patched("parent-1", "b4:b1-7");
        // This run's edit, seen twice (e.g. before the cache showed the first patch):
        // timed once.
        let edit = child("b4-3", Some(stamp));
        assert_eq!(
            observer.wanted("b4", &parent(Some("b4:b1-7")), &edit),
            Some("b4:b4-3".to_owned())
        );
        assert!(observer.wanted("b4", &parent(None), &edit).is_some());
        observer.patched("parent-1", "b4:b4-3");
        // Current: nothing to do, nothing timed.
        assert_eq!(observer.wanted("b4", &parent(Some("b4:b4-3")), &edit), None);
        let state = observer.state();
        assert_eq!(state.seen.len(), 1);
        assert_eq!(state.seen["b4-3"].stamp, stamp);
        assert_eq!(state.patched.len(), 1);
        assert!(state.edits_patched.contains("b4-3"));
        assert_eq!(observer.reconciles.load(Ordering::Relaxed), 4);
    }
}
