//! [`QueueConfig`]: a queue's name and where its metrics go.

use std::fmt;
use std::sync::Arc;

use crate::workqueue::metrics::{NoopMetrics, QueueMetrics};

/// A queue's name and where its metrics go.
///
/// Built like kube-runtime's `watcher::Config`: start from `default()` and chain the
/// builder methods. The rate limiter is not part of it but passed beside it to
/// [`WorkQueue::with_config`](super::WorkQueue::with_config), as in client-go: a limiter keeps per-item failure
/// history for one queue, and a config is cloned freely.
#[derive(Clone)]
#[non_exhaustive]
#[must_use]
pub struct QueueConfig {
    /// The queue's name, used in logs and `Debug` output (client-go's
    /// `QueueConfig.Name`, the metrics label). Empty by default.
    pub name: String,
    /// Where the queue's metrics go. Nowhere by default.
    pub metrics: Arc<dyn QueueMetrics>,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            name: String::new(),
            metrics: Arc::new(NoopMetrics),
        }
    }
}

impl QueueConfig {
    /// Sets the queue's name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sends the queue's metrics to `metrics`.
    pub fn metrics(mut self, metrics: impl QueueMetrics) -> Self {
        self.metrics = Arc::new(metrics);
        self
    }
}

impl fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}
