//! controller-runtime's reconcile metrics, one series per controller name.

use std::time::Instant;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// `controller`, and `cluster` for a fleet member's.
type ControllerLabel = Vec<(&'static str, String)>;
/// The same and `result`.
type ResultLabels = Vec<(&'static str, String)>;

/// controller-runtime's buckets for `controller_runtime_reconcile_time_seconds`.
fn reconcile_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
        15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
    ])
}

/// The controller families, registered once.
#[derive(Debug, Clone)]
pub(super) struct ControllerFamilies {
    reconciles: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabel, Counter>,
    panics: Family<ControllerLabel, Counter>,
    timeouts: Family<ControllerLabel, Counter>,
    own_writes: Family<ResultLabels, Counter>,
    time: Family<ControllerLabel, Histogram, fn() -> Histogram>,
    active_workers: Family<ControllerLabel, Gauge>,
    max_concurrent: Family<ControllerLabel, Gauge>,
}

impl ControllerFamilies {
    pub(super) fn register(registry: &mut Registry) -> Self {
        let families = Self {
            reconciles: Family::default(),
            errors: Family::default(),
            panics: Family::default(),
            timeouts: Family::default(),
            own_writes: Family::default(),
            time: Family::new_with_constructor(reconcile_histogram),
            active_workers: Family::default(),
            max_concurrent: Family::default(),
        };
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            families.reconciles.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            families.errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_panics",
            "Total number of reconciliation panics per controller",
            families.panics.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_timeouts",
            "Total number of reconciliation timeouts per controller",
            families.timeouts.clone(),
        );
        registry.register(
            "informer_controller_read_your_writes_waits",
            "Reconciles that first waited for the cache to show this controller's own earlier writes of the key, by result: caught_up, or timed_out (the bound passed and the reconcile went ahead)",
            families.own_writes.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            families.time.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            families.active_workers.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            families.max_concurrent.clone(),
        );
        families
    }

    pub(super) fn controller(&self, name: &str, cluster: Option<&str>) -> ControllerMetrics {
        let label = super::encode::with_cluster(cluster, vec![("controller", name.to_owned())]);
        let labelled = |family: &Family<ResultLabels, Counter>, result: &str| {
            let mut labels = label.clone();
            labels.push(("result", result.to_owned()));
            family.get_or_create(&labels).clone()
        };
        let result = |result: &str| labelled(&self.reconciles, result);
        ControllerMetrics {
            success: result("success"),
            error: result("error"),
            requeue_after: result("requeue_after"),
            errors: self.errors.get_or_create(&label).clone(),
            panics: self.panics.get_or_create(&label).clone(),
            timeouts: self.timeouts.get_or_create(&label).clone(),
            writes_caught_up: labelled(&self.own_writes, "caught_up"),
            writes_timed_out: labelled(&self.own_writes, "timed_out"),
            time: self.time.get_or_create(&label).clone(),
            active_workers: self.active_workers.get_or_create(&label).clone(),
            max_concurrent: self.max_concurrent.get_or_create(&label).clone(),
        }
    }
}

/// How one reconcile ended, as controller-runtime's `result` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Done: nothing until the next change.
    Success,
    /// Asked to run again after a delay.
    RequeueAfter,
    /// Failed: the reconcile, the cleanup or the finalizer update (whatever the error
    /// policy then chose).
    Error,
}

/// One controller's series.
#[derive(Debug, Clone)]
pub(crate) struct ControllerMetrics {
    success: Counter,
    error: Counter,
    requeue_after: Counter,
    errors: Counter,
    panics: Counter,
    timeouts: Counter,
    writes_caught_up: Counter,
    writes_timed_out: Counter,
    time: Histogram,
    active_workers: Gauge,
    max_concurrent: Gauge,
}

impl ControllerMetrics {
    /// A reconcile ran past the controller's timeout and was cancelled.
    pub(crate) fn timed_out(&self) {
        self.timeouts.inc();
    }

    /// A reconcile first waited for the cache to show the controller's own writes of
    /// its key: `caught_up` when it did, `false` when the bound passed first.
    pub(crate) fn waited_for_own_writes(&self, caught_up: bool) {
        if caught_up {
            self.writes_caught_up.inc();
        } else {
            self.writes_timed_out.inc();
        }
    }

    /// The controller runs `workers` workers.
    pub(crate) fn set_max_concurrent(&self, workers: usize) {
        self.max_concurrent
            .set(i64::try_from(workers).unwrap_or(i64::MAX));
    }

    /// A reconcile starts: it counts as an active worker until the returned timer is
    /// finished or dropped.
    pub(crate) fn start(&self) -> ReconcileTimer<'_> {
        self.active_workers.inc();
        ReconcileTimer {
            metrics: self,
            started: Instant::now(),
            finished: false,
        }
    }

    fn record(&self, outcome: Outcome, started: Instant) {
        self.time.observe(started.elapsed().as_secs_f64());
        match outcome {
            Outcome::Success => self.success.inc(),
            Outcome::RequeueAfter => self.requeue_after.inc(),
            Outcome::Error => {
                self.errors.inc();
                self.error.inc()
            }
        };
    }
}

/// Times one reconcile. Dropped unfinished while a panic unwinds, it records the
/// reconcile as a panic and an error (as controller-runtime does); dropped unfinished
/// otherwise (the reconcile was abandoned at shutdown), it records nothing.
pub(crate) struct ReconcileTimer<'a> {
    metrics: &'a ControllerMetrics,
    started: Instant,
    finished: bool,
}

impl ReconcileTimer<'_> {
    /// The reconcile ended with `outcome`.
    pub(crate) fn finish(mut self, outcome: Outcome) {
        self.finished = true;
        self.metrics.record(outcome, self.started);
    }
}

impl Drop for ReconcileTimer<'_> {
    fn drop(&mut self) {
        self.metrics.active_workers.dec();
        if !self.finished && std::thread::panicking() {
            self.metrics.panics.inc();
            self.metrics.record(Outcome::Error, self.started);
        }
    }
}
