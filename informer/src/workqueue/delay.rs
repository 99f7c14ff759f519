//! The items a [`WorkQueue`](super::WorkQueue) holds back until their deadline.
//!
//! A plain data structure, with no lock, clock or task of its own: the queue keeps it
//! inside its state, under its one lock, and moves due items across whenever it looks
//! at itself (client-go runs a goroutine for that; this queue needs none). It holds at
//! most one deadline per item, and the earliest wins, so scheduling an item again can
//! only bring it forward. Items due at the same instant come out in the order they
//! were scheduled. Each item keeps the highest priority it was scheduled with.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

use super::Priority;

/// Delays longer than this are cut to it, so deadlines never overflow the clock.
/// Roughly 30 years, the same horizon tokio uses for "never".
const MAX_DELAY: Duration = Duration::from_secs(86_400 * 365 * 30);

/// The deadline `delay` after `now`, for any delay up to [`Duration::MAX`].
pub(super) fn deadline_after(now: Instant, delay: Duration) -> Instant {
    now + delay.min(MAX_DELAY)
}

/// Items waiting for their deadline: ordered by deadline, at most one entry per item.
pub(super) struct DelayHeap<T> {
    /// `(deadline, sequence)` keeps items with equal deadlines in insertion order.
    by_deadline: BTreeMap<(Instant, u64), T>,
    /// Each waiting item's key in `by_deadline`, and the priority it will be added
    /// with.
    slot: HashMap<T, ((Instant, u64), Priority)>,
    next_seq: u64,
}

impl<T> DelayHeap<T> {
    pub(super) fn new() -> Self {
        Self {
            by_deadline: BTreeMap::new(),
            slot: HashMap::new(),
            next_seq: 0,
        }
    }

    /// Number of items waiting.
    pub(super) fn len(&self) -> usize {
        self.by_deadline.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.by_deadline.is_empty()
    }

    /// The earliest deadline, if any item waits.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.by_deadline
            .keys()
            .next()
            .map(|(deadline, _)| *deadline)
    }

    /// Drops every waiting item.
    pub(super) fn clear(&mut self) {
        self.by_deadline.clear();
        self.slot.clear();
    }
}

impl<T: Hash + Eq + Clone> DelayHeap<T> {
    /// Schedules `item` for `deadline` at `priority` unless it already waits for an
    /// earlier one (it keeps the higher of the two priorities either way); returns
    /// whether the earliest deadline of all moved forward.
    pub(super) fn insert(&mut self, item: T, deadline: Instant, priority: Priority) -> bool {
        let mut priority = priority;
        if let Some((current, waiting)) = self.slot.get_mut(&item) {
            *waiting = (*waiting).max(priority);
            if current.0 <= deadline {
                return false;
            }
            priority = *waiting;
            let current = *current;
            self.by_deadline.remove(&current);
        }
        let earlier = self.next_deadline().is_none_or(|next| deadline < next);
        let key = (deadline, self.next_seq);
        self.next_seq += 1;
        self.slot.insert(item.clone(), (key, priority));
        self.by_deadline.insert(key, item);
        earlier
    }

    /// Removes and returns the earliest item, with its priority, if its deadline is at
    /// or before `now`.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<(T, Priority)> {
        let entry = self.by_deadline.first_entry()?;
        if entry.key().0 > now {
            return None;
        }
        let item = entry.remove();
        let priority = self
            .slot
            .remove(&item)
            .map_or(Priority::NORMAL, |(_, priority)| priority);
        Some((item, priority))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn drain_due<T: Hash + Eq + Clone>(heap: &mut DelayHeap<T>, now: Instant) -> Vec<T> {
        std::iter::from_fn(|| heap.pop_due(now).map(|(item, _)| item)).collect()
    }

    #[test]
    fn pop_due_hands_out_due_items_by_deadline_then_insertion_order() {
        let start = Instant::now();
        let mut heap = DelayHeap::new();
        heap.insert("c", start + 3 * SECOND, Priority::NORMAL);
        heap.insert("a", start + SECOND, Priority::NORMAL);
        heap.insert("b", start + 2 * SECOND, Priority::NORMAL);
        heap.insert("a2", start + SECOND, Priority::NORMAL);
        assert_eq!(drain_due(&mut heap, start), Vec::<&str>::new());
        assert_eq!(drain_due(&mut heap, start + 2 * SECOND), ["a", "a2", "b"]);
        assert_eq!(heap.len(), 1);
        assert_eq!(heap.next_deadline(), Some(start + 3 * SECOND));
    }

    #[test]
    fn insert_keeps_the_earliest_deadline_and_reports_a_new_earliest() {
        let start = Instant::now();
        let mut heap = DelayHeap::new();
        assert!(
            heap.insert("a", start + 10 * SECOND, Priority::NORMAL),
            "first deadline"
        );
        assert!(
            heap.insert("a", start + 2 * SECOND, Priority::NORMAL),
            "moved forward"
        );
        assert!(
            !heap.insert("a", start + 5 * SECOND, Priority::NORMAL),
            "later: ignored"
        );
        assert!(
            !heap.insert("b", start + 4 * SECOND, Priority::NORMAL),
            "not the earliest"
        );
        assert_eq!(heap.len(), 2, "one entry per item");
        assert_eq!(drain_due(&mut heap, start + 2 * SECOND), ["a"]);
        assert_eq!(drain_due(&mut heap, start + 10 * SECOND), ["b"]);
        assert!(heap.is_empty());
    }

    #[test]
    fn an_item_keeps_the_highest_priority_it_was_scheduled_with() {
        let start = Instant::now();
        let mut heap = DelayHeap::new();
        heap.insert("a", start + SECOND, Priority::LOW);
        heap.insert("a", start + 5 * SECOND, Priority::NORMAL); // later: priority kept
        heap.insert("b", start + 2 * SECOND, Priority::NORMAL);
        heap.insert("b", start + SECOND, Priority::LOW); // earlier: moved, still normal
        assert_eq!(heap.pop_due(start + SECOND), Some(("a", Priority::NORMAL)));
        assert_eq!(heap.pop_due(start + SECOND), Some(("b", Priority::NORMAL)));
    }

    #[test]
    fn deadline_after_caps_huge_delays() {
        let now = Instant::now();
        assert_eq!(deadline_after(now, SECOND), now + SECOND);
        assert_eq!(deadline_after(now, Duration::MAX), now + MAX_DELAY);
    }
}
