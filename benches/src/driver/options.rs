//! The driver's settings, from its command line (see the [driver's docs](super)).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

/// The scenarios, numbered 1 to this.
pub const SCENARIOS: u8 = 18;

/// The largest count of `--projection-pods` at which scenario 15 runs every variant:
/// above it, only our projection and our metadata-only informer (the full Pods of the
/// others would take GiB each, tens of GiB together, at 150,000).
pub const ALL_VARIANTS_UP_TO: usize = 50_000;

/// The driver's settings.
#[derive(Debug, Clone)]
pub struct Options {
    /// Pairs of runs (ours, kube-runtime) per server scenario.
    pub pairs: usize,
    /// Which scenarios to run (1 to [`SCENARIOS`]).
    pub only: Vec<u8>,
    /// Objects of scenarios 1, 3 and 4.
    pub objects: usize,
    /// Objects of scenarios 2, 10 and 11.
    pub large_objects: usize,
    /// Payload bytes of each object of scenarios 1, 3 and 4.
    pub payload: usize,
    /// Payload bytes of each object of scenario 2.
    pub large_payload: usize,
    /// Updates of scenario 3.
    pub updates: usize,
    /// Objects listed in scenario 5.
    pub pipeline_objects: usize,
    /// Watch events of scenario 5.
    pub pipeline_events: usize,
    /// Objects of scenario 8.
    pub scale_objects: usize,
    /// Pods of scenario 9 (and scenario 15's first count).
    pub pods: usize,
    /// Pods of scenario 15's larger collections, one namespace each (`--projection-pods
    /// 30000,150000`); above [`ALL_VARIANTS_UP_TO`] only our projection and our
    /// metadata-only informer run.
    pub projection_pods: Vec<usize>,
    /// Pods of scenario 15's churn (half deleted, the rest relabelled); 0 skips it. By
    /// default the first count of `projection_pods`, so that a small run churns few.
    pub churn_pods: usize,
    /// Where scenario 15 draws its figure (SVG).
    pub plot: PathBuf,
    /// Parents (each owning one child) of scenario 7.
    pub controller_objects: usize,
    /// Children scenario 7 changes after the first convergence.
    pub controller_updates: usize,
    /// Children scenario 12 changes while the startup backlog drains.
    pub backlog_edits: usize,
    /// Parents (each owning one child) of scenario 13's small operator.
    pub footprint_objects: usize,
    /// Clusters of scenario 14's fleet (namespaces of the one server).
    pub fleet_clusters: usize,
    /// ConfigMaps in each cluster of scenario 14's fleet.
    pub fleet_objects: usize,
    /// Minutes of scenario 15's long run.
    pub consistency_minutes: u64,
    /// Seconds between two checks in scenario 15's long run.
    pub consistency_interval: u64,
    /// Lost updates scenario 15's long run makes.
    pub consistency_drifts: usize,
    /// The delay scenario 15's staleness run puts on every watch event, ms.
    pub consistency_delay_ms: u64,
    /// Where to write every sample as JSON.
    pub json: PathBuf,
    /// Create the objects, print the kubeconfig's path and wait (until killed)
    /// instead of measuring: for profiling workers by hand.
    pub serve: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            pairs: 3,
            only: (1..=SCENARIOS).collect(),
            objects: 10_000,
            large_objects: 50_000,
            payload: 1024,
            large_payload: 1024,
            updates: 5_000,
            pipeline_objects: 10_000,
            pipeline_events: 500_000,
            scale_objects: 100_000,
            pods: 10_000,
            projection_pods: vec![30_000],
            churn_pods: 30_000,
            plot: Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-projections.svg"),
            controller_objects: 10_000,
            controller_updates: 5_000,
            backlog_edits: 200,
            footprint_objects: 20,
            fleet_clusters: 10,
            fleet_objects: 5_000,
            consistency_minutes: 10,
            consistency_interval: 15,
            consistency_drifts: 5,
            consistency_delay_ms: 2_000,
            json: Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-results.json"),
            serve: false,
        }
    }
}

/// A flag's value that lists numbers: `1,2,10`.
fn comma_list<T: std::str::FromStr>(value: &str) -> Result<Vec<T>, T::Err> {
    value.split(',').map(str::parse).collect()
}

impl Options {
    /// Parses the command line (see the [driver's docs](super)).
    pub fn parse(args: impl IntoIterator<Item = String>) -> anyhow::Result<Self> {
        let mut options = Self::default();
        let mut args = args.into_iter();
        let mut churn_pods = None;
        while let Some(flag) = args.next() {
            let mut value = || args.next().with_context(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--pairs" => options.pairs = value()?.parse()?,
                "--only" => options.only = comma_list(&value()?)?,
                "--objects" => options.objects = value()?.parse()?,
                "--large-objects" => options.large_objects = value()?.parse()?,
                "--payload" => options.payload = value()?.parse()?,
                "--large-payload" => options.large_payload = value()?.parse()?,
                "--updates" => options.updates = value()?.parse()?,
                "--pipeline-objects" => options.pipeline_objects = value()?.parse()?,
                "--pipeline-events" => options.pipeline_events = value()?.parse()?,
                "--scale-objects" => options.scale_objects = value()?.parse()?,
                "--pods" => options.pods = value()?.parse()?,
                "--projection-pods" => options.projection_pods = comma_list(&value()?)?,
                "--churn-pods" => churn_pods = Some(value()?.parse()?),
                "--plot" => options.plot = value()?.into(),
                "--controller-objects" => options.controller_objects = value()?.parse()?,
                "--controller-updates" => options.controller_updates = value()?.parse()?,
                "--backlog-edits" => options.backlog_edits = value()?.parse()?,
                "--footprint-objects" => options.footprint_objects = value()?.parse()?,
                "--fleet-clusters" => options.fleet_clusters = value()?.parse()?,
                "--fleet-objects" => options.fleet_objects = value()?.parse()?,
                "--consistency-minutes" => options.consistency_minutes = value()?.parse()?,
                "--consistency-interval" => options.consistency_interval = value()?.parse()?,
                "--consistency-drifts" => options.consistency_drifts = value()?.parse()?,
                "--consistency-delay-ms" => options.consistency_delay_ms = value()?.parse()?,
                "--json" => options.json = value()?.into(),
                "--serve" => options.serve = true,
                "-h" | "--help" => {
                    println!("see the docs of informer_benches::driver for the flags");
                    std::process::exit(0);
                }
                other => bail!("unknown flag {other:?}"),
            }
        }
        options.churn_pods =
            churn_pods.unwrap_or_else(|| options.projection_pods.first().copied().unwrap_or(0));
        if options.pairs == 0 {
            bail!("--pairs must be at least 1");
        }
        if let Some(unknown) = options
            .only
            .iter()
            .find(|&&s| !(1..=SCENARIOS).contains(&s))
        {
            bail!("--only: there is no scenario {unknown} (they are 1 to {SCENARIOS})");
        }
        if options.updates == 0 || options.updates > options.objects {
            bail!("--updates must be between 1 and --objects");
        }
        // Each checked where its scenario runs: `--only 12 --controller-objects 100`
        // needs no `--controller-updates`.
        if options.runs(7) && options.controller_updates > options.controller_objects {
            bail!("--controller-updates must be at most --controller-objects");
        }
        if options.runs(12)
            && (options.backlog_edits == 0 || options.backlog_edits > options.controller_objects)
        {
            bail!("--backlog-edits must be between 1 and --controller-objects");
        }
        if options.runs(15) {
            let counts = &options.projection_pods;
            if counts.is_empty() || counts.contains(&0) {
                bail!("--projection-pods takes counts of at least 1, e.g. 30000,150000");
            }
            // One namespace per count: the same count twice would be synced twice.
            if (1..counts.len()).any(|i| counts[..i].contains(&counts[i])) {
                bail!("--projection-pods: each count once");
            }
            if options.churn_pods == 1 {
                bail!("--churn-pods must be 0 (no churn) or at least 2 (half are deleted)");
            }
        }
        if options.footprint_objects == 0 {
            bail!("--footprint-objects must be at least 1");
        }
        if options.runs(16)
            && (options.consistency_minutes == 0 || options.consistency_interval == 0)
        {
            bail!("--consistency-minutes and --consistency-interval must be at least 1");
        }
        if options.runs(14) && (options.fleet_clusters < 2 || options.fleet_objects == 0) {
            bail!("--fleet-clusters must be at least 2 (one joins the others), --fleet-objects 1");
        }
        Ok(options)
    }

    pub(super) fn runs(&self, scenario: u8) -> bool {
        self.only.contains(&scenario)
    }
}
