//! [`Priority`]: which queued items a [`WorkQueue`](super::WorkQueue) hands out first.

use std::fmt;

/// How soon a queued item is handed out: higher first, in the order they were queued
/// within one priority (see the [module docs](super#priorities)).
///
/// [`NORMAL`](Self::NORMAL) is what [`WorkQueue::add`](super::WorkQueue::add) uses, so
/// a queue whose items all come from `add` is client-go's plain FIFO.
/// [`LOW`](Self::LOW) is for backlog: the keys an initial list, a relist, a resync or a
/// take-over queue, which the controller puts behind the keys of real changes (as
/// controller-runtime's priority queue does, whose `LowPriority` is the same -100).
///
/// ```
/// use informer::workqueue::Priority;
///
/// assert!(Priority::NORMAL > Priority::LOW);
/// assert_eq!(Priority::default(), Priority::NORMAL);
/// assert!(Priority::new(10) > Priority::NORMAL);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Priority(i32);

impl Priority {
    /// Real changes, and every plain `add`: 0.
    pub const NORMAL: Self = Self(0);

    /// Backlog, behind real changes: -100.
    pub const LOW: Self = Self(-100);

    /// A priority of your own; higher values are handed out first.
    pub const fn new(value: i32) -> Self {
        Self(value)
    }

    /// The number behind it.
    pub const fn value(self) -> i32 {
        self.0
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::NORMAL => f.write_str("normal"),
            Self::LOW => f.write_str("low"),
            Self(value) => write!(f, "{value}"),
        }
    }
}
