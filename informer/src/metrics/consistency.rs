//! The consistency families of informers with periodic checks, read from their
//! counters at scrape time (see [`consistency`](crate::consistency)).

use std::fmt;

use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use super::encode::{Value, family_of};
use crate::consistency::ConsistencyStats;

/// An informer's labels (`informer`, and `cluster` for a fleet member's).
type Labels<'s> = Vec<(&'static str, &'s str)>;

/// Writes the families for `checked`, each informer under its labels.
pub(super) fn encode(
    encoder: &mut DescriptorEncoder<'_>,
    checked: &[(Labels<'_>, &ConsistencyStats)],
) -> fmt::Result {
    family_of(
        encoder,
        "informer_consistency_checks",
        "Checks of the informer's cache against the server's list, by result",
        MetricType::Counter,
        checked.iter().flat_map(|(labels, stats)| {
            stats.checks().into_iter().map(|(result, count)| {
                let mut labels = labels.clone();
                labels.push(("result", result.as_str()));
                (labels, Value::Count(count))
            })
        }),
    )?;
    family_of(
        encoder,
        "informer_consistency_differences",
        "Objects on which the cache differed from the server (missing, extra, older, newer), each counted once",
        MetricType::Counter,
        checked
            .iter()
            .map(|(labels, stats)| (labels.clone(), Value::Count(stats.differences))),
    )?;
    family_of(
        encoder,
        "informer_consistency_heals",
        "Relists made to heal a difference",
        MetricType::Counter,
        checked
            .iter()
            .map(|(labels, stats)| (labels.clone(), Value::Count(stats.heals))),
    )?;
    family_of(
        encoder,
        "informer_staleness_seconds",
        "How long after the server the cache reached the same state, from the last probe; while a probe finds it behind, how long it has been",
        MetricType::Gauge,
        checked.iter().filter_map(|(labels, stats)| {
            Some((
                labels.clone(),
                Value::Seconds(stats.staleness?.as_secs_f64()),
            ))
        }),
    )
}
