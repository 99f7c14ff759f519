//! [`PopBatch`]: several keys popped under one hold of the queue's lock, as the
//! informer's process loop takes them.

use super::DeltaFifo;
use super::state::{Queued, State};
use crate::fifo::queue_state::QueueState;
use crate::fifo::{DeltaBatch, Deltas, PopError, ProcessError};

/// The keys of one [`DeltaFifo::pop_batch`], handed out under the queue's lock.
pub(crate) struct PopBatch<'a, K> {
    pub(super) fifo: &'a DeltaFifo<K>,
    pub(super) state: &'a mut State<K>,
    /// Keys the batch may still take.
    pub(super) left: usize,
}

impl<K> PopBatch<'_, K> {
    /// Takes the next queued key, if the batch has room left, and calls `process` with
    /// its deltas, as [`DeltaFifo::pop`] does (a requeue puts them back at the end);
    /// `None` when the batch is full or the queue empty.
    pub(crate) fn next<T, E>(
        &mut self,
        process: impl FnOnce(&Deltas<K>) -> Result<T, ProcessError<E>>,
    ) -> Option<Result<T, PopError<E>>> {
        while self.left > 0 {
            let Queued { hash, key } = self.state.queue.pop_front()?;
            let Some(deltas) = self.state.take(hash, &key) else {
                continue;
            };
            self.left -= 1;
            if self.state.wake_needed() {
                // Pass the wake-up on to another waiting pop.
                self.fifo.shared.notify.notify_one();
            }
            return Some(match process(&deltas) {
                Ok(value) => Ok(value),
                Err(ProcessError::Fail(e)) => Err(PopError::Failed(e)),
                Err(ProcessError::Requeue(e)) => {
                    self.state.requeue(hash, key, deltas);
                    Err(PopError::Requeued(e))
                }
            });
        }
        None
    }
}

impl<K> DeltaBatch<K> for PopBatch<'_, K> {
    fn apply_next(&mut self, apply: &mut dyn FnMut(&Deltas<K>)) -> bool {
        self.next(|deltas| {
            apply(deltas);
            Ok::<_, ProcessError<std::convert::Infallible>>(())
        })
        .is_some()
    }
}
