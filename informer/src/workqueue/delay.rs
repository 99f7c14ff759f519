//! The items a [`WorkQueue`](super::WorkQueue) holds back until their deadline.
//!
//! A plain data structure, with no lock, clock or task of its own: the queue keeps it
//! inside its state, under its one lock, and moves due items across whenever it looks
//! at itself (client-go runs a goroutine for that; this queue needs none). It holds at
//! most one deadline per item, and the earliest wins, so scheduling an item again can
//! only bring it forward. Items due at the same instant come out in the order they
//! were scheduled.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

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
    slot: HashMap<T, (Instant, u64)>,
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
    /// Schedules `item` for `deadline` unless it already waits for an earlier one;
    /// returns whether the earliest deadline of all moved forward.
    pub(super) fn insert(&mut self, item: T, deadline: Instant) -> bool {
        if let Some(&(current, seq)) = self.slot.get(&item) {
            if current <= deadline {
                return false;
            }
            self.by_deadline.remove(&(current, seq));
        }
        let earlier = self.next_deadline().is_none_or(|next| deadline < next);
        let key = (deadline, self.next_seq);
        self.next_seq += 1;
        self.slot.insert(item.clone(), key);
        self.by_deadline.insert(key, item);
        earlier
    }

    /// Removes and returns the earliest item if its deadline is at or before `now`.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<T> {
        let entry = self.by_deadline.first_entry()?;
        if entry.key().0 > now {
            return None;
        }
        let item = entry.remove();
        self.slot.remove(&item);
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    fn drain_due<T: Hash + Eq + Clone>(heap: &mut DelayHeap<T>, now: Instant) -> Vec<T> {
        std::iter::from_fn(|| heap.pop_due(now)).collect()
    }

    #[test]
    fn pop_due_hands_out_due_items_by_deadline_then_insertion_order() {
        let start = Instant::now();
        let mut heap = DelayHeap::new();
        heap.insert("c", start + 3 * SECOND);
        heap.insert("a", start + SECOND);
        heap.insert("b", start + 2 * SECOND);
        heap.insert("a2", start + SECOND);
        assert_eq!(drain_due(&mut heap, start), Vec::<&str>::new());
        assert_eq!(drain_due(&mut heap, start + 2 * SECOND), ["a", "a2", "b"]);
        assert_eq!(heap.len(), 1);
        assert_eq!(heap.next_deadline(), Some(start + 3 * SECOND));
    }

    #[test]
    fn insert_keeps_the_earliest_deadline_and_reports_a_new_earliest() {
        let start = Instant::now();
        let mut heap = DelayHeap::new();
        assert!(heap.insert("a", start + 10 * SECOND), "first deadline");
        assert!(heap.insert("a", start + 2 * SECOND), "moved forward");
        assert!(!heap.insert("a", start + 5 * SECOND), "later: ignored");
        assert!(!heap.insert("b", start + 4 * SECOND), "not the earliest");
        assert_eq!(heap.len(), 2, "one entry per item");
        assert_eq!(drain_due(&mut heap, start + 2 * SECOND), ["a"]);
        assert_eq!(drain_due(&mut heap, start + 10 * SECOND), ["b"]);
        assert!(heap.is_empty());
    }

    #[test]
    fn deadline_after_caps_huge_delays() {
        let now = Instant::now();
        assert_eq!(deadline_after(now, SECOND), now + SECOND);
        assert_eq!(deadline_after(now, Duration::MAX), now + MAX_DELAY);
    }
}
