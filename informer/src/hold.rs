//! [`Holds`]: something kept up until the last [`Hold`] on it is dropped, and a wait
//! for that moment. The one shape of the crate's keep-until-dropped guards: a write
//! on its way keeps its replica's Lease (a claim's `writes`), a leader's `Term` keeps
//! its elector from releasing the lease on step-down, a controller writing its last
//! events keeps its shard member's Lease, a controller running on a retired cluster
//! keeps that cluster's factory up.
//!
//! A hold is a receiver of a watch channel that never sends: the channel already
//! counts its receivers, and its sender wakes a waiter when the last one goes, so a
//! hold taken while someone waits is waited for too.

use tokio::sync::watch;

/// What holds are taken on; [`released`](Holds::released) waits until none is left.
#[derive(Debug)]
pub(crate) struct Holds(watch::Sender<()>);

/// One hold; dropping it releases it.
#[derive(Debug)]
pub(crate) struct Hold(#[allow(dead_code)] watch::Receiver<()>);

impl Default for Holds {
    fn default() -> Self {
        Holds(watch::Sender::new(()))
    }
}

impl Holds {
    /// Takes a hold, kept until the returned guard is dropped.
    pub(crate) fn hold(&self) -> Hold {
        Hold(self.0.subscribe())
    }

    /// Resolves once no hold is left (at once if none is taken).
    pub(crate) async fn released(&self) {
        self.0.closed().await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn released_waits_for_every_hold_even_one_taken_while_waiting() {
        let holds = Arc::new(Holds::default());
        holds.released().await;
        let first = holds.hold();
        let waiting = tokio::spawn({
            let holds = Arc::clone(&holds);
            async move { holds.released().await }
        });
        tokio::task::yield_now().await;
        let second = holds.hold();
        drop(first);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "one hold is still taken");
        drop(second);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("released once both holds are dropped")
            .unwrap();
        let again = holds.hold();
        let waiting = tokio::spawn({
            let holds = Arc::clone(&holds);
            async move { holds.released().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            !waiting.is_finished(),
            "a hold taken after a release is waited for"
        );
        drop(again);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("released again")
            .unwrap();
    }
}
