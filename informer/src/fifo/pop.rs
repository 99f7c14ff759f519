//! How popping fails: what a process function asks for, and what `pop` reports; and
//! the batch of deltas the informer's process loop takes under one lock.

use super::Deltas;

/// Why a queue's `pop` ([`DeltaFifo::pop`](super::DeltaFifo::pop),
/// [`RealFifo::pop`](super::RealFifo::pop)) returned without a successful result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PopError<E> {
    /// The queue was closed.
    #[error("the queue is closed")]
    Closed,
    /// The process function asked for a requeue; the deltas are queued again (only a
    /// [`DeltaFifo`](super::DeltaFifo) requeues).
    #[error("processing failed; the deltas were requeued: {0}")]
    Requeued(#[source] E),
    /// The process function failed; the deltas were dropped.
    #[error("processing failed; the deltas were dropped: {0}")]
    Failed(#[source] E),
}

/// How a process function given to [`DeltaFifo::pop`](super::DeltaFifo::pop) fails.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProcessError<E> {
    /// Put the deltas back at the end of the queue to be processed again (client-go's
    /// `ErrRequeue`); `pop` returns [`PopError::Requeued`].
    Requeue(E),
    /// Drop the deltas; `pop` returns [`PopError::Failed`].
    Fail(E),
}

impl<E> ProcessError<E> {
    /// The error, whatever was asked.
    pub fn into_inner(self) -> E {
        match self {
            ProcessError::Requeue(e) | ProcessError::Fail(e) => e,
        }
    }
}

/// The deltas of one `pop_batch`, handed out one key (or change) at a time, whichever
/// queue feeds the informer: the DeltaFIFO's under its lock, the RealFIFO's taken out
/// of it and handed out with the lock released.
pub(crate) trait DeltaBatch<K> {
    /// Calls `apply` with the next deltas of the batch; `false` (without calling it)
    /// once the batch is full or the queue empty.
    fn apply_next(&mut self, apply: &mut dyn FnMut(&Deltas<K>)) -> bool;
}

#[cfg(test)]
mod tests {
    use super::PopError;

    #[test]
    fn a_failed_process_says_why() {
        let why = || std::io::Error::other("handler unavailable");
        assert_eq!(
            PopError::Requeued(why()).to_string(),
            "processing failed; the deltas were requeued: handler unavailable"
        );
        assert_eq!(
            PopError::Failed(why()).to_string(),
            "processing failed; the deltas were dropped: handler unavailable"
        );
        assert_eq!(
            PopError::<std::io::Error>::Closed.to_string(),
            "the queue is closed"
        );
    }
}
