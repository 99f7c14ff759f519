//! Scenario 13: a small operator's footprint (see [`crate::footprint`]).
//!
//! `--pairs` rounds of ours and kube-runtime's two-informer controller, and
//! controller-runtime's when its peer is built (the first side rotating), each a
//! `bench-worker footprint` process (controller-runtime's: its peer's `footprint` mode)
//! run to completion on the parents of [`FOOTPRINT_NAMESPACE`] (`--footprint-objects`,
//! created beforehand), with a new tag each run (`f{n}`) so that every parent is
//! patched once.

use anyhow::{Context as _, bail};

use super::process::{program, run_worker};
use super::{Bench, Columns, MIB, Samples, rotated, row_of, sides_of, thousands};
use crate::report::{FootprintSample, Implementation, Row, Target, WorkerReport};

/// The namespace of the small operator's parents and children.
pub(super) const FOOTPRINT_NAMESPACE: &str = "bench-footprint";

/// Scenario 13's sides, in the order of each round's runs (controller-runtime when its
/// peer is built).
const SIDES: [Implementation; 3] = [
    Implementation::Ours,
    Implementation::KubeRuntime,
    Implementation::ControllerRuntime,
];

/// Scenario 13: `--pairs` rounds.
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let objects = bench.options.footprint_objects;
    let label = format!(
        "13. small operator (2 informers), {} parents owning a ConfigMap each",
        thousands(objects)
    );
    let sides = sides_of(bench, &SIDES);
    let mut rounds = Vec::new();
    for round in 0..bench.options.pairs {
        let mut runs: Vec<Option<FootprintSample>> = vec![None; sides.len()];
        for side in rotated(round, sides.len()) {
            let implementation = sides[side];
            let tag = format!("f{}", round * sides.len() + side);
            let report = run_worker(
                program(bench, implementation)?,
                bench.kubeconfig,
                &[
                    "footprint",
                    implementation.as_str(),
                    FOOTPRINT_NAMESPACE,
                    &objects.to_string(),
                    &tag,
                ],
            )
            .await?;
            let WorkerReport::Footprint(sample) = report else {
                bail!("the footprint worker reported something else");
            };
            eprintln!(
                "[{label}] round {}: {:<18} converged in {:.2} s; after {:.0} s idle: RSS {:.1} MiB \
                 ({:.1} MiB anonymous, {:.1} MiB files; before start {:.1} MiB), peak {:.1} MiB, \
                 {} threads ({} before start): {}",
                round + 1,
                implementation.as_str(),
                sample.converge_seconds,
                sample.idle_seconds,
                sample.idle_rss_kib as f64 / MIB,
                sample.idle_rss_anon_kib as f64 / MIB,
                sample.idle_rss_file_kib as f64 / MIB,
                sample.baseline_rss_kib as f64 / MIB,
                sample.peak_rss_kib as f64 / MIB,
                sample.threads,
                sample.baseline_threads,
                thread_summary(&sample.thread_names)
            );
            runs[side] = Some(sample);
        }
        rounds.push(
            runs.into_iter()
                .collect::<Option<Vec<_>>>()
                .context("a round lacks a side")?,
        );
    }
    let columns = Columns::of(&sides, Implementation::Ours, Implementation::KubeRuntime);
    rows.extend(footprint_rows(&label, &rounds, columns));
    samples.footprint = rounds.into_iter().flatten().collect();
    Ok(())
}

/// Thread names with their counts, e.g. `tokio-runtime-worker x2, bench-worker`.
fn thread_summary(names: &[String]) -> String {
    let mut counted: Vec<(&str, usize)> = Vec::new();
    for name in names {
        match counted.iter_mut().find(|(n, _)| n == name) {
            Some((_, count)) => *count += 1,
            None => counted.push((name, 1)),
        }
    }
    counted
        .iter()
        .map(|&(name, count)| match count {
            1 => name.to_owned(),
            n => format!("{name} x{n}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn footprint_rows(label: &str, rounds: &[Vec<FootprintSample>], columns: Columns) -> Vec<Row> {
    let row = |metric: &str, f: &dyn Fn(&FootprintSample) -> f64, target: Option<Target>| {
        row_of(label, metric, rounds, columns, f, target, None)
    };
    let no_heavier = Some(Target::RatioAtMost(1.0));
    let idle = crate::footprint::IDLE.as_secs();
    vec![
        row(
            &format!("idle RSS, converged + {idle} s (MiB)"),
            &|s| s.idle_rss_kib as f64 / MIB,
            no_heavier,
        ),
        row(
            "idle RSS, anonymous (heap, stacks; `RssAnon`) (MiB)",
            &|s| s.idle_rss_anon_kib as f64 / MIB,
            None,
        ),
        row(
            "idle RSS, mapped files (code, libraries; `RssFile`) (MiB)",
            &|s| s.idle_rss_file_kib as f64 / MIB,
            None,
        ),
        row(
            "peak RSS (MiB)",
            &|s| s.peak_rss_kib as f64 / MIB,
            no_heavier,
        ),
        row(
            &format!("threads, converged + {idle} s"),
            &|s| s.threads as f64,
            no_heavier,
        ),
        row(
            "RSS before start (MiB)",
            &|s| s.baseline_rss_kib as f64 / MIB,
            None,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_names_are_counted() {
        let names: Vec<String> = ["a", "b", "b", "c"].map(String::from).into();
        assert_eq!(thread_summary(&names), "a, b x2, c");
    }
}
