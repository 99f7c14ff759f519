//! [`WritesInFlight`]: the writes a fence let through that the API server has not
//! answered yet, so that a replica giving up its claims can wait for them before it
//! tells the others so (deletes its Lease).
//!
//! A fence checks a write just before it leaves; a write that passed the check a moment
//! before the replica stepped down is still on its way. Were the Lease deleted then,
//! another replica could take the key and the old write land after it. So a write is
//! counted here before its check ([`Fence::start_write`](super::Fence::start_write)),
//! and a replica stepping down first ends its claims, then waits until the writes
//! counted are answered: one counted later finds the claim ended and is refused.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::lock::MutexExt;

/// Writes on their way to the API server under one replica's claims.
#[derive(Debug, Default)]
pub(crate) struct WritesInFlight {
    count: Mutex<usize>,
    /// Woken whenever the count drops to zero.
    answered: Notify,
}

/// One write on its way; it is answered (or abandoned) when this is dropped.
#[derive(Debug)]
pub(crate) struct WriteInFlight(Arc<WritesInFlight>);

impl WritesInFlight {
    /// Counts a write about to be checked and sent.
    pub(crate) fn start(self: &Arc<Self>) -> WriteInFlight {
        *self.count.locked() += 1;
        WriteInFlight(Arc::clone(self))
    }

    /// Resolves once no counted write is on its way.
    pub(crate) async fn answered(&self) {
        loop {
            let notified = self.answered.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if *self.count.locked() == 0 {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for WriteInFlight {
    fn drop(&mut self) {
        let mut count = self.0.count.locked();
        *count -= 1;
        if *count == 0 {
            self.0.answered.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn answered_waits_for_every_write_counted() {
        let writes = Arc::new(WritesInFlight::default());
        writes.answered().await;
        let first = writes.start();
        let second = writes.start();
        let waiting = tokio::spawn({
            let writes = Arc::clone(&writes);
            async move { writes.answered().await }
        });
        drop(first);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "one write is still on its way");
        drop(second);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("answered once both are")
            .unwrap();
    }
}
