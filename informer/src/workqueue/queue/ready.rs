//! The items ready for `get`, by priority: highest first, first queued first within
//! one priority, and every [`FAIR_TURN`]th item the one that has waited longest, so a
//! steady stream of high-priority items cannot starve the rest.
//!
//! Moving a queued item to a higher priority leaves its old entry behind: the queue
//! keeps each item's live entry (its sequence number) and this structure skips the
//! entries it is told are stale, so a move costs one push, not a search.

use std::cmp::Reverse;
use std::collections::{BTreeMap, VecDeque};

use crate::workqueue::Priority;

/// Of this many items handed out while items of different priorities wait, one is
/// the item that has waited longest (whatever its priority). A backlog behind a
/// steady stream of changes still drains, at an eighth of the pace at worst.
pub(super) const FAIR_TURN: u32 = 8;

/// Entries by priority; each entry is `(sequence, item)`, sequences growing with
/// every push, so the front of each level is its oldest entry.
pub(super) struct Ready<T> {
    levels: BTreeMap<Reverse<Priority>, VecDeque<(u64, T)>>,
    next_seq: u64,
    /// Items handed out in a row while an older item of another priority waited.
    passed_over: u32,
}

impl<T> Ready<T> {
    pub(super) fn new() -> Self {
        Self {
            levels: BTreeMap::new(),
            next_seq: 0,
            passed_over: 0,
        }
    }

    /// Queues an entry for `item` at `priority`; returns its sequence number.
    pub(super) fn push(&mut self, priority: Priority, item: T) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.levels
            .entry(Reverse(priority))
            .or_default()
            .push_back((seq, item));
        seq
    }

    /// Takes the next live entry, skipping (and dropping) the entries `is_live`
    /// rejects; `None` if no live entry is left.
    pub(super) fn pop(&mut self, is_live: impl Fn(&T, u64) -> bool) -> Option<(T, Priority)> {
        self.levels.retain(|_, entries| {
            while let Some((seq, item)) = entries.front() {
                if is_live(item, *seq) {
                    break;
                }
                entries.pop_front();
            }
            !entries.is_empty()
        });
        let highest = *self.levels.keys().next()?;
        let oldest = if self.levels.len() == 1 {
            highest
        } else {
            *self
                .levels
                .iter()
                .min_by_key(|(_, entries)| entries.front().map(|(seq, _)| *seq))
                .map(|(level, _)| level)?
        };
        let level = if oldest == highest {
            self.passed_over = 0;
            highest
        } else if self.passed_over + 1 >= FAIR_TURN {
            self.passed_over = 0;
            oldest
        } else {
            self.passed_over += 1;
            highest
        };
        let entries = self.levels.get_mut(&level)?;
        let (_, item) = entries.pop_front()?;
        if entries.is_empty() {
            self.levels.remove(&level);
        }
        Some((item, level.0))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A ready queue with its live entries, as the work queue keeps them.
    struct Queued {
        ready: Ready<&'static str>,
        live: HashMap<&'static str, u64>,
    }

    impl Queued {
        fn new() -> Self {
            Self {
                ready: Ready::new(),
                live: HashMap::new(),
            }
        }

        fn push(&mut self, item: &'static str, priority: Priority) {
            let seq = self.ready.push(priority, item);
            self.live.insert(item, seq);
        }

        fn pop(&mut self) -> Option<(&'static str, Priority)> {
            let live = &self.live;
            let popped = self.ready.pop(|item, seq| live.get(item) == Some(&seq))?;
            self.live.remove(popped.0);
            Some(popped)
        }

        fn drain(&mut self) -> Vec<&'static str> {
            std::iter::from_fn(|| self.pop().map(|(item, _)| item)).collect()
        }
    }

    #[test]
    fn one_priority_is_fifo() {
        let mut queued = Queued::new();
        for item in ["a", "b", "c"] {
            queued.push(item, Priority::NORMAL);
        }
        assert_eq!(queued.drain(), ["a", "b", "c"]);
        assert_eq!(queued.pop(), None);
    }

    #[test]
    fn higher_priorities_first_then_fifo() {
        let mut queued = Queued::new();
        queued.push("low-1", Priority::LOW);
        queued.push("normal-1", Priority::NORMAL);
        queued.push("low-2", Priority::LOW);
        queued.push("high", Priority::new(5));
        queued.push("normal-2", Priority::NORMAL);
        assert_eq!(queued.pop(), Some(("high", Priority::new(5))));
        assert_eq!(queued.drain(), ["normal-1", "normal-2", "low-1", "low-2"]);
    }

    #[test]
    fn a_moved_item_comes_out_once_from_its_new_place() {
        let mut queued = Queued::new();
        queued.push("a", Priority::LOW);
        queued.push("b", Priority::LOW);
        queued.push("c", Priority::NORMAL);
        queued.push("b", Priority::NORMAL); // moved up: its LOW entry is stale
        assert_eq!(queued.drain(), ["c", "b", "a"]);
    }

    #[test]
    fn every_eighth_item_is_the_one_waiting_longest() {
        let mut queued = Queued::new();
        let backlog = ["old-1", "old-2"];
        for item in backlog {
            queued.push(item, Priority::LOW);
        }
        let changes: Vec<&'static str> = (0..20)
            .map(|i| &*Box::leak(format!("new-{i}").into_boxed_str()))
            .collect();
        for item in &changes {
            queued.push(item, Priority::NORMAL);
        }
        let order = queued.drain();
        let position = |item: &str| order.iter().position(|i| *i == item).unwrap();
        assert_eq!(position("old-1"), usize::try_from(FAIR_TURN).unwrap() - 1);
        assert_eq!(
            position("old-2"),
            2 * usize::try_from(FAIR_TURN).unwrap() - 1
        );
        // The changes keep their order around the backlog's turns.
        let changes_out: Vec<&str> = order.into_iter().filter(|i| i.starts_with("new")).collect();
        assert_eq!(changes_out, changes);
    }
}
