//! Scenario 5: the in-process pipeline (reflector, queue, indexer, handlers) on
//! synthetic deltas, with both queues and both allocators.

use anyhow::bail;

use super::process::{MIMALLOC_WORKER, run_worker};
use super::{Bench, Samples, thousands};
use crate::report::{PipelineSample, Row, Target, WorkerReport, median};

/// Scenario 5: 1 and 8 handlers, each queue, each allocator, `--pairs` runs each.
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let (options, worker) = (bench.options, bench.worker);
    let label = format!(
        "5. pipeline ({} listed + {} updates)",
        thousands(options.pipeline_objects),
        thousands(options.pipeline_events)
    );
    // The system allocator (what every other scenario uses) and mimalloc, run
    // alternately: the handler thread's work is mostly freeing replaced objects.
    let mimalloc = worker.with_file_name(MIMALLOC_WORKER);
    let allocators = [(worker, "glibc malloc"), (mimalloc.as_path(), "mimalloc")];
    // Both informer queues: the in-order one (the default) and the DeltaFIFO.
    let queues = [("in-order", "in-order queue"), ("delta-fifo", "DeltaFIFO")];
    for handlers in [1usize, 8] {
        for (queue, queue_text) in queues {
            let mut runs: [Vec<PipelineSample>; 2] = Default::default();
            for run in 0..options.pairs {
                for ((binary, allocator), runs) in allocators.iter().zip(&mut runs) {
                    let args = [
                        "pipeline".to_owned(),
                        handlers.to_string(),
                        options.pipeline_objects.to_string(),
                        options.pipeline_events.to_string(),
                        queue.to_owned(),
                    ];
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    let WorkerReport::Pipeline(sample) = run_worker(binary, None, &args).await?
                    else {
                        bail!("the pipeline worker reported something else");
                    };
                    eprintln!(
                        "[{label}] {handlers} handler(s), {queue_text}, {allocator:<12}, \
                         run {}: {:.0} deltas/s, {:.3} s, CPU {:.3} s",
                        run + 1,
                        sample.per_second,
                        sample.seconds,
                        sample.cpu_seconds
                    );
                    runs.push(sample);
                }
            }
            for ((_, allocator), runs) in allocators.iter().zip(runs) {
                let glibc = *allocator == "glibc malloc";
                let default_queue = queue == "in-order";
                let handlers_text = format!(
                    "{handlers} handler{}, {queue_text}, {allocator}",
                    if handlers == 1 { "" } else { "s" }
                );
                rows.push(Row {
                    scenario: label.clone(),
                    metric: format!("deltas/s, {handlers_text}"),
                    ours: median(runs.iter().map(|s| s.per_second)),
                    theirs: None,
                    target: (handlers == 1 && glibc && default_queue)
                        .then_some(Target::AtLeast(1_000_000.0)),
                    ..Row::default()
                });
                rows.push(Row {
                    scenario: label.clone(),
                    metric: format!("CPU per delta, {handlers_text} (µs)"),
                    ours: median(runs.iter().map(|s| s.cpu_seconds * 1e6 / s.deltas as f64)),
                    theirs: None,
                    target: None,
                    ..Row::default()
                });
                samples.pipeline.extend(runs);
            }
        }
    }
    Ok(())
}
