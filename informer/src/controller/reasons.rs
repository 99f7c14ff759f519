//! Why a key was queued, for the span of its next reconcile: the last reason recorded
//! before a worker took the key (a key queued several times is reconciled once, for
//! the latest reason). Forgotten when the key is taken, reconciled or not, so nothing
//! is kept for keys a replica does not work.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use crate::key::ObjectKey;
use crate::lock::MutexExt;

/// Why a key was queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reason {
    /// The primary object was added, changed or deleted.
    Changed,
    /// An owned, watched or read object changed: its type's short name and key.
    Related {
        /// `owned` or `watched`.
        relation: &'static str,
        kind: &'static str,
        key: ObjectKey,
    },
    /// This replica took the key over (a term started, keys became its shard's).
    TookOver,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Changed => f.write_str("object changed"),
            Reason::Related {
                relation,
                kind,
                key,
            } => write!(f, "{relation} {kind} {key} changed"),
            Reason::TookOver => f.write_str("taken over by this replica"),
        }
    }
}

/// The reasons of the keys queued and not yet taken.
#[derive(Debug, Default)]
pub(crate) struct Reasons(Mutex<HashMap<ObjectKey, Reason>>);

impl Reasons {
    /// Records why `key` is being queued.
    pub(crate) fn record(&self, key: &ObjectKey, reason: Reason) {
        self.0.locked().insert(key.clone(), reason);
    }

    /// Why `key` was queued, forgetting it: `None` when nothing recorded it (a
    /// requeue asked for by a reconcile or the error policy).
    pub(crate) fn take(&self, key: &ObjectKey) -> Option<Reason> {
        self.0.locked().remove(key)
    }

    /// How many reasons are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.locked().len()
    }
}

/// The span's `reason` field: the recorded reason, or a requeue.
pub(crate) fn describe(reason: Option<&Reason>) -> String {
    reason.map_or_else(|| "requeued".to_owned(), Reason::to_string)
}
