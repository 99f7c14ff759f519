//! Writing a family of constant series, each under one label, at scrape time: how
//! the collectors report figures they read from the objects they observe.

use std::fmt;

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use crate::shared_informer::LatencySnapshot;

/// A value of one series.
pub(super) enum Value {
    Int(usize),
    Count(u64),
    Seconds(f64),
    /// A histogram read at scrape time.
    Histogram(LatencySnapshot),
}

impl From<bool> for Value {
    /// A flag as a gauge: 1 or 0.
    fn from(flag: bool) -> Self {
        Self::Int(usize::from(flag))
    }
}

/// Writes the family `name`, one series for each `(label value, value)`, labelled
/// `label`.
pub(super) fn labelled_family<'s>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    metric_type: MetricType,
    label: &str,
    series: impl Iterator<Item = (&'s str, Value)>,
) -> fmt::Result {
    let series = series.map(|(label_value, value)| ([(label, label_value)], value));
    family_of(encoder, name, help, metric_type, series)
}

/// Writes the family `name`, one series for each `(labels, value)`.
pub(super) fn family_of<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    metric_type: MetricType,
    series: impl Iterator<Item = (L, Value)>,
) -> fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, metric_type)?;
    for (labels, value) in series {
        let mut metric = family.encode_family(&labels)?;
        match value {
            Value::Int(v) => {
                ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX)).encode(metric)?
            }
            Value::Count(v) => ConstCounter::new(v).encode(metric)?,
            Value::Seconds(v) => ConstGauge::new(v).encode(metric)?,
            Value::Histogram(h) => {
                metric.encode_histogram::<NoLabelSet>(h.sum_seconds, h.count, &h.buckets, None)?
            }
        }
    }
    Ok(())
}

/// `labels` with `cluster` first, when given: a fleet member's series.
pub(super) fn with_cluster(
    cluster: Option<&str>,
    mut labels: Vec<(&'static str, String)>,
) -> Vec<(&'static str, String)> {
    if let Some(cluster) = cluster {
        labels.insert(0, ("cluster", cluster.to_owned()));
    }
    labels
}
