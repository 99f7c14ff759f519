//! [`InFlight`]: the keys a member's workers are reconciling now, so that the member
//! can wait for (or drop) the reconciles of keys that moved away before it lets the
//! new holder start them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{Notify, watch};

use crate::key::ObjectKey;
use crate::lock::MutexExt;

/// Reconciles running now, by key, each with a signal to drop it.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    running: Mutex<HashMap<ObjectKey, Running>>,
    /// Woken whenever a reconcile ends.
    ended: Notify,
}

#[derive(Debug)]
struct Running {
    /// The hash that decides the key's holder.
    hash: u64,
    /// How many reconciles of this key run (one, with the controller's queue).
    count: usize,
    drop_it: watch::Sender<bool>,
}

impl InFlight {
    /// Records that a reconcile of `key`, whose holder `hash` decides, starts; it ends
    /// when the guard is dropped.
    pub(crate) fn enter(self: &Arc<Self>, key: &ObjectKey, hash: u64) -> InFlightGuard {
        let mut running = self.running.locked();
        let entry = running.entry(key.clone()).or_insert_with(|| Running {
            hash,
            count: 0,
            drop_it: watch::Sender::new(false),
        });
        entry.count += 1;
        InFlightGuard {
            in_flight: Arc::clone(self),
            key: key.clone(),
            dropped: entry.drop_it.subscribe(),
        }
    }

    /// Whether a reconcile runs for any key whose hash satisfies `matches`.
    pub(crate) fn any(&self, matches: impl Fn(u64) -> bool) -> bool {
        self.running.locked().values().any(|run| matches(run.hash))
    }

    /// Waits until no reconcile runs for a key whose hash satisfies `matches`.
    pub(crate) async fn drained(&self, matches: impl Fn(u64) -> bool) {
        loop {
            let ended = self.ended.notified();
            if !self.any(&matches) {
                return;
            }
            ended.await;
        }
    }

    /// Tells the reconciles of keys whose hash satisfies `matches` to stop now;
    /// returns how many keys were told (not those told before and still ending).
    pub(crate) fn drop_matching(&self, matches: impl Fn(u64) -> bool) -> usize {
        let running = self.running.locked();
        let mut dropped = 0;
        for run in running.values() {
            if matches(run.hash) && !run.drop_it.send_replace(true) {
                dropped += 1;
            }
        }
        dropped
    }

    fn exit(&self, key: &ObjectKey) {
        let mut running = self.running.locked();
        if let Some(entry) = running.get_mut(key) {
            entry.count -= 1;
            if entry.count == 0 {
                running.remove(key);
            }
        }
        drop(running);
        self.ended.notify_waiters();
    }
}

/// One running reconcile; dropping it records the end.
#[derive(Debug)]
pub(crate) struct InFlightGuard {
    in_flight: Arc<InFlight>,
    key: ObjectKey,
    dropped: watch::Receiver<bool>,
}

impl InFlightGuard {
    /// Resolves when the member asks for this reconcile to be dropped.
    pub(crate) async fn dropped(&mut self) {
        if self.dropped.wait_for(|drop_it| *drop_it).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.in_flight.exit(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn draining_waits_for_matching_reconciles_and_dropping_ends_them() {
        let in_flight = Arc::new(InFlight::default());
        let a = ObjectKey::new(None, "a");
        let b = ObjectKey::new(None, "b");
        let hash_a = 1;
        let guard_b = in_flight.enter(&b, 2);
        let (started, ready) = tokio::sync::oneshot::channel();
        let task = tokio::spawn({
            let in_flight = Arc::clone(&in_flight);
            async move {
                let mut guard = in_flight.enter(&a, hash_a);
                started.send(()).unwrap();
                guard.dropped().await;
            }
        });
        ready.await.unwrap();
        assert!(in_flight.any(|h| h == hash_a));
        // b's reconcile does not hold up a drain of a's.
        let drained = tokio::time::timeout(
            Duration::from_millis(50),
            in_flight.drained(|h| h == hash_a),
        );
        assert!(drained.await.is_err());
        assert_eq!(in_flight.drop_matching(|h| h == hash_a), 1);
        // A reconcile told once is not counted again while it ends.
        assert_eq!(in_flight.drop_matching(|h| h == hash_a), 0);
        in_flight.drained(|h| h == hash_a).await;
        task.await.unwrap();
        assert!(in_flight.any(|_| true));
        drop(guard_b);
        assert!(!in_flight.any(|_| true));
    }
}
