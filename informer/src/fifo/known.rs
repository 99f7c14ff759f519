//! Known objects: what the consumer of the queue already has.

use std::sync::Arc;

use crate::{
    key::{ObjectKey, ObjectKeyRef},
    store::Indexer,
};

/// The objects the consumer of a [`DeltaFifo`](super::DeltaFifo) already knows about
/// (client-go's `KeyListerGetter`), normally the informer's [`Indexer`].
///
/// It changes the behaviour of three operations:
/// - `delete` of a key neither queued nor known is ignored;
/// - `replace` emits a tombstone deletion for each known key missing from the list;
/// - `resync` re-delivers every known object whose key is not queued.
///
/// The FIFO calls these methods while holding its own lock; an implementation must not
/// call back into the FIFO.
pub trait KnownObjects<K>: Send + Sync {
    /// The stored key equal to `key`, if an object is known under it. The FIFO shares
    /// this allocation for the deltas it queues rather than making a new one.
    fn get_key(&self, key: ObjectKeyRef<'_>) -> Option<Arc<ObjectKey>>;

    /// Calls `f` with every known key and object.
    fn for_each_known(&self, f: &mut dyn FnMut(&Arc<ObjectKey>, &Arc<K>));
}

impl<K: Send + Sync + 'static> KnownObjects<K> for Indexer<K> {
    fn get_key(&self, key: ObjectKeyRef<'_>) -> Option<Arc<ObjectKey>> {
        self.stored_key(key)
    }

    fn for_each_known(&self, f: &mut dyn FnMut(&Arc<ObjectKey>, &Arc<K>)) {
        self.for_each(f);
    }
}
