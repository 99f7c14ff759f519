//! The queue between an informer's reflector and its process loop: in order (the
//! default) or one entry per key, as [`InformerConfig::queue`] chose.
//!
//! [`InformerConfig::queue`]: super::InformerConfig::queue

use std::sync::Arc;

use educe::Educe;

use crate::fifo::{DeltaBatch, DeltaFifo, DeltaFifoConfig, RealFifo, RealFifoConfig};
use crate::key::{KeyFn, ObjectKey};
use crate::store::Indexer;
use crate::synced::HasSynced;

/// Which queue carries an informer's changes from its reflector to its cache and
/// handlers (set with [`InformerConfig::queue`](super::InformerConfig::queue)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QueueKind {
    /// [`RealFifo`]: every change delivered in the order it happened, across keys; after
    /// a relist the deletions of vanished objects come before the listed objects.
    /// client-go's `InOrderInformers` behaviour, its default (and ours).
    #[default]
    InOrder,
    /// [`DeltaFifo`]: one entry per key; a key's pending changes are delivered together
    /// at the position of its first one, so keys overtake each other. What client-go's
    /// informers did before in-order delivery; a busy object costs one pop for many
    /// changes.
    DeltaFifo,
}

/// The informer's queue, either kind, with the one interface the reflector's sink and
/// the process loop use. Clones share the queue.
#[derive(Educe)]
#[educe(Clone)]
pub(super) enum Queue<K> {
    InOrder(RealFifo<K>),
    PerKey(DeltaFifo<K>),
}

/// Calls the same method on whichever queue this is.
macro_rules! dispatch {
    ($queue:expr, $fifo:ident => $call:expr) => {
        match $queue {
            Queue::InOrder($fifo) => $call,
            Queue::PerKey($fifo) => $call,
        }
    };
}

impl<K: 'static> Queue<K> {
    /// A queue of `kind` whose known objects are the informer's cache.
    pub(super) fn new(kind: QueueKind, key_fn: KeyFn<K>, cache: &Indexer<K>) -> Self
    where
        K: Send + Sync,
    {
        match kind {
            QueueKind::InOrder => Queue::InOrder(RealFifo::new(
                RealFifoConfig::new(key_fn).known_objects(cache.clone()),
            )),
            QueueKind::DeltaFifo => Queue::PerKey(DeltaFifo::new(
                DeltaFifoConfig::new(key_fn).known_objects(cache.clone()),
            )),
        }
    }

    pub(super) fn add(&self, object: Arc<K>) {
        dispatch!(self, fifo => fifo.add(object))
    }

    pub(super) fn update(&self, object: Arc<K>) {
        dispatch!(self, fifo => fifo.update(object))
    }

    pub(super) fn delete(&self, object: Arc<K>) {
        dispatch!(self, fifo => fifo.delete(object))
    }

    pub(super) fn delete_stale(&self, last_known: Arc<K>) {
        dispatch!(self, fifo => fifo.delete_stale(last_known))
    }

    pub(super) fn newest_queued(&self, key: &ObjectKey) -> Option<Arc<K>> {
        dispatch!(self, fifo => fifo.newest_queued(key))
    }

    pub(super) fn replace(&self, objects: Vec<Arc<K>>, resource_version: &str) {
        dispatch!(self, fifo => fifo.replace(objects, resource_version))
    }

    pub(super) fn resync(&self) {
        dispatch!(self, fifo => fifo.resync())
    }

    pub(super) fn close(&self) {
        dispatch!(self, fifo => fifo.close())
    }

    pub(super) fn has_synced(&self) -> bool {
        dispatch!(self, fifo => fifo.has_synced())
    }

    /// Whether every change queued so far has been applied: nothing queued, and (for
    /// the in-order queue, which processes outside its lock) no batch being applied.
    pub(super) fn is_settled(&self) -> bool {
        match self {
            Queue::InOrder(fifo) => fifo.is_settled(),
            Queue::PerKey(fifo) => fifo.is_empty(),
        }
    }

    /// Changes queued (in order), or keys (per key).
    #[cfg(feature = "metrics")]
    pub(super) fn len(&self) -> usize {
        dispatch!(self, fifo => fifo.len())
    }

    /// Waits for something queued, then calls `run` with a batch of up to `max` keys'
    /// (or changes') deltas: under the queue's lock for the per-key queue, with the
    /// changes taken out and the lock released for the in-order one; returns what `run` returns and whether
    /// the queue is empty now, `None` once it is closed and empty.
    pub(super) async fn pop_batch<T>(
        &self,
        max: usize,
        run: impl FnOnce(&mut dyn DeltaBatch<K>) -> T,
    ) -> Option<(T, bool)> {
        match self {
            Queue::InOrder(fifo) => fifo.pop_batch(max, |batch| run(batch)).await,
            Queue::PerKey(fifo) => fifo.pop_batch(max, |batch| run(batch)).await,
        }
    }
}

/// The informer's synced flag, for its listers.
impl<K: Send + Sync + 'static> HasSynced for Queue<K> {
    fn has_synced(&self) -> bool {
        Queue::has_synced(self)
    }
}
