//! Why a key was queued: for the span of its next reconcile, and for the priority it
//! is queued at. A key queued several times before a worker takes it is reconciled
//! once, for the most urgent of its reasons (the latest among equals). Forgotten when
//! the key is taken, reconciled or not, so nothing is kept for keys a replica does not
//! work.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use crate::key::ObjectKey;
use crate::lock::MutexExt;
use crate::workqueue::{Priority, WorkQueue};

/// What sighting to an object that queued a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sighting {
    /// Added, changed or deleted: a real change.
    Changed,
    /// In the informer's initial list: seen for the first time, maybe unchanged for
    /// long.
    Listed,
    /// Delivered again unchanged (same resourceVersion): a resync, or a relist that
    /// found it as it was.
    Resynced,
}

impl Sighting {
    fn as_str(self) -> &'static str {
        match self {
            Sighting::Changed => "changed",
            Sighting::Listed => "listed",
            Sighting::Resynced => "resynced",
        }
    }
}

/// Why a key was queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reason {
    /// Something sighting to the primary object itself.
    Primary(Sighting),
    /// Something sighting to an owned, watched or read object: its type's short name
    /// and key.
    Related {
        /// `owned`, `watched` or `read`.
        relation: &'static str,
        kind: &'static str,
        key: ObjectKey,
        sighting: Sighting,
    },
    /// This replica took the key over (a term started, keys became its shard's).
    TookOver,
}

impl Reason {
    /// Real changes go first; the backlog of lists, resyncs and take-overs after them.
    pub(crate) fn priority(&self) -> Priority {
        match self {
            Reason::Primary(Sighting::Changed)
            | Reason::Related {
                sighting: Sighting::Changed,
                ..
            } => Priority::NORMAL,
            Reason::Primary(_) | Reason::Related { .. } | Reason::TookOver => Priority::LOW,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Primary(sighting) => write!(f, "object {}", sighting.as_str()),
            Reason::Related {
                relation,
                kind,
                key,
                sighting,
            } => write!(f, "{relation} {kind} {key} {}", sighting.as_str()),
            Reason::TookOver => f.write_str("taken over by this replica"),
        }
    }
}

/// The reasons of the keys queued and not yet taken, and whether they set priorities.
#[derive(Debug)]
pub(crate) struct Reasons {
    queued: Mutex<HashMap<ObjectKey, Reason>>,
    /// Queue backlog behind real changes (the controller's `priority_queue`).
    prioritize: bool,
}

impl Default for Reasons {
    fn default() -> Self {
        Self::new(true)
    }
}

impl Reasons {
    /// Reasons that set the keys' priorities if `prioritize`, else queue everything
    /// at [`Priority::NORMAL`] (a plain FIFO).
    pub(crate) fn new(prioritize: bool) -> Self {
        Self {
            queued: Mutex::default(),
            prioritize,
        }
    }

    /// Queues `key` for `reason`, at the reason's priority, and records the reason
    /// unless the key waits for a more urgent one.
    pub(crate) fn queue(&self, queue: &WorkQueue<ObjectKey>, key: ObjectKey, reason: Reason) {
        let priority = if self.prioritize {
            reason.priority()
        } else {
            Priority::NORMAL
        };
        {
            let mut queued = self.queued.locked();
            match queued.get_mut(&key) {
                Some(recorded) if recorded.priority() > reason.priority() => {}
                Some(recorded) => *recorded = reason,
                None => {
                    queued.insert(key.clone(), reason);
                }
            }
        }
        queue.add_with_priority(key, priority);
    }

    /// Why `key` was queued, forgetting it: `None` when nothing recorded it (a
    /// requeue asked for by a reconcile or the error policy).
    pub(crate) fn take(&self, key: &ObjectKey) -> Option<Reason> {
        self.queued.locked().remove(key)
    }

    /// How many reasons are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.queued.locked().len()
    }
}

/// The span's `reason` field: the recorded reason, or a requeue.
pub(crate) fn describe(reason: Option<&Reason>) -> String {
    reason.map_or_else(|| "requeued".to_owned(), Reason::to_string)
}
