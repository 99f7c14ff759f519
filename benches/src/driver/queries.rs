//! Scenario 4: cache queries on 10,000 objects, in one process, no server.

use anyhow::bail;

use super::process::run_worker;
use super::{Bench, Samples, thousands};
use crate::report::{QuerySample, Row, Target, WorkerReport, median};

/// Scenario 4: `--pairs` runs of the query worker.
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let (options, worker) = (bench.options, bench.worker);
    let label = format!("4. queries on {}", thousands(options.objects));
    for run in 0..options.pairs {
        let objects = options.objects.to_string();
        let WorkerReport::Queries(sample) =
            run_worker(worker, None, &["queries", &objects]).await?
        else {
            bail!("the queries worker reported something else");
        };
        for q in &sample.queries {
            eprintln!(
                "[{label}] run {}: {}: ours {:.0}/s ({} found), kube-runtime {:.0}/s ({} found)",
                run + 1,
                q.name,
                q.ours_per_second,
                q.ours_results,
                q.theirs_per_second,
                q.theirs_results
            );
        }
        samples.queries.push(sample);
    }
    rows.extend(query_rows(&label, &samples.queries));
    Ok(())
}

fn query_rows(label: &str, samples: &[QuerySample]) -> Vec<Row> {
    let Some(first) = samples.first() else {
        return Vec::new();
    };
    first
        .queries
        .iter()
        .enumerate()
        .map(|(i, query)| {
            let ours = median(samples.iter().map(|s| s.queries[i].ours_per_second));
            let theirs = median(samples.iter().map(|s| s.queries[i].theirs_per_second));
            let indexed = query.name.starts_with("list by");
            Row {
                scenario: label.to_owned(),
                metric: format!("{} (ops/s)", query.name),
                ours,
                theirs: Some(theirs),
                target: indexed.then_some(Target::RatioAtLeast(100.0)),
                ..Row::default()
            }
        })
        .collect()
}
