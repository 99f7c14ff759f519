//! Deltas: what happened to one object, typed.

use educe::Educe;
use std::{fmt, iter, sync::Arc, vec};

use crate::key::ObjectKey;
use crate::object::Object;

/// The kind of a change (client-go's `DeltaType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// The watch reported a new object.
    Added,
    /// The watch reported a changed object.
    Updated,
    /// The object is gone: reported by the watch, or found missing by a relist.
    Deleted,
    /// A relist (`replace`) listed the object; it may or may not have changed.
    Replaced,
    /// A periodic resync re-delivered the object from the cache, unchanged.
    Sync,
}

impl fmt::Display for DeltaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeltaType::Added => "Added",
            DeltaType::Updated => "Updated",
            DeltaType::Deleted => "Deleted",
            DeltaType::Replaced => "Replaced",
            DeltaType::Sync => "Sync",
        })
    }
}

/// The tombstone of an object whose deletion the watch never reported: a relist found it
/// missing (client-go's `DeletedFinalStateUnknown`). Its state is the last one known,
/// possibly stale.
#[derive(Debug, PartialEq, Educe)]
#[educe(Clone)]
pub struct DeletedFinalStateUnknown<K> {
    /// The key of the deleted object.
    pub key: Arc<ObjectKey>,
    /// The last state of the object this process saw.
    pub last_known: Arc<K>,
}

/// A deleted object: its final state from the watch, or a tombstone. What client-go
/// passes to `OnDelete` as `interface{}`, as a type you match on.
#[derive(Debug, PartialEq, Educe)]
#[educe(Clone)]
pub enum DeletedObject<K> {
    /// The watch reported the deletion with the object's final state.
    Final(Arc<K>),
    /// The deletion was missed (e.g. while disconnected); the state may be stale.
    Unknown(DeletedFinalStateUnknown<K>),
}

impl<K> DeletedObject<K> {
    /// The object: its final state, or the last known one for a tombstone.
    pub fn object(&self) -> &Arc<K> {
        match self {
            DeletedObject::Final(obj) => obj,
            DeletedObject::Unknown(tombstone) => &tombstone.last_known,
        }
    }

    /// Whether this is a tombstone (the final state is unknown).
    pub fn is_final_state_unknown(&self) -> bool {
        matches!(self, DeletedObject::Unknown(_))
    }
}

impl<K: Object> DeletedObject<K> {
    /// The deleted object's key, as client-go's `DeletionHandlingMetaNamespaceKeyFunc`
    /// gives it: a tombstone's own key (made by the informer's key function), or the
    /// `namespace/name` of the final state.
    pub fn key(&self) -> ObjectKey {
        match self {
            DeletedObject::Final(obj) => ObjectKey::of(obj.as_ref()),
            DeletedObject::Unknown(tombstone) => ObjectKey::clone(&tombstone.key),
        }
    }
}

/// One change to one object (client-go's `Delta`): its kind and the object's state
/// after the change (for a deletion, its final or last known state).
///
/// Only [`Delta::Deleted`] can carry a tombstone, so a tombstone never hides behind an
/// `Added` the way an `interface{}` could.
#[derive(Debug, PartialEq, Educe)]
#[educe(Clone)]
pub enum Delta<K> {
    /// See [`DeltaType::Added`].
    Added(Arc<K>),
    /// See [`DeltaType::Updated`].
    Updated(Arc<K>),
    /// See [`DeltaType::Deleted`].
    Deleted(DeletedObject<K>),
    /// See [`DeltaType::Replaced`].
    Replaced(Arc<K>),
    /// See [`DeltaType::Sync`].
    Sync(Arc<K>),
}

impl<K> Delta<K> {
    /// The kind of change.
    pub fn kind(&self) -> DeltaType {
        match self {
            Delta::Added(_) => DeltaType::Added,
            Delta::Updated(_) => DeltaType::Updated,
            Delta::Deleted(_) => DeltaType::Deleted,
            Delta::Replaced(_) => DeltaType::Replaced,
            Delta::Sync(_) => DeltaType::Sync,
        }
    }

    /// The object after the change; for a deletion its final (or last known) state.
    pub fn object(&self) -> &Arc<K> {
        match self {
            Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
                obj
            }
            Delta::Deleted(deleted) => deleted.object(),
        }
    }

    /// A delta of `kind` for `obj`; a [`DeltaType::Deleted`] one carries the final state.
    pub fn new(kind: DeltaType, obj: Arc<K>) -> Self {
        match kind {
            DeltaType::Added => Delta::Added(obj),
            DeltaType::Updated => Delta::Updated(obj),
            DeltaType::Deleted => Delta::Deleted(DeletedObject::Final(obj)),
            DeltaType::Replaced => Delta::Replaced(obj),
            DeltaType::Sync => Delta::Sync(obj),
        }
    }

    fn is_tombstone(&self) -> bool {
        matches!(self, Delta::Deleted(DeletedObject::Unknown(_)))
    }
}

/// Every change to one object since it was last popped, oldest first (client-go's
/// `Deltas`). Never empty.
///
/// The oldest delta is stored inline, so the common case of one delta per key costs no
/// extra allocation.
#[derive(Debug, Educe)]
#[educe(Clone)]
pub struct Deltas<K> {
    pub(super) key: Arc<ObjectKey>,
    /// The hash of `key` in the queue's map.
    pub(super) hash: u64,
    oldest: Delta<K>,
    rest: Vec<Delta<K>>,
    /// Queued by the first `replace`: part of the initial list.
    pub(super) initial: bool,
    /// The number of the last `replace` that listed this key (0: none); lets `replace`
    /// tell listed keys from others without a set of its own.
    pub(super) listed_by: u64,
}

/// Equal when the key, the deltas and the initial-list flag are (the bookkeeping of
/// `replace` is not compared).
impl<K: PartialEq> PartialEq for Deltas<K> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
            && self.oldest == other.oldest
            && self.rest == other.rest
            && self.initial == other.initial
    }
}

impl<K> Deltas<K> {
    pub(super) fn new(key: Arc<ObjectKey>, hash: u64, delta: Delta<K>) -> Self {
        Self {
            key,
            hash,
            oldest: delta,
            rest: Vec::new(),
            initial: false,
            listed_by: 0,
        }
    }

    /// Appends `delta`, collapsing two deletions in a row into one: the one with the
    /// final state is kept over a tombstone, and otherwise the earlier one (client-go's
    /// `dedupDeltas`).
    pub(super) fn push(&mut self, delta: Delta<K>) {
        if let Delta::Deleted(_) = delta {
            let newest = self.newest_mut();
            if let Delta::Deleted(_) = newest {
                if newest.is_tombstone() {
                    *newest = delta;
                }
                return;
            }
        }
        self.rest.push(delta);
    }

    fn newest_mut(&mut self) -> &mut Delta<K> {
        match self.rest.last_mut() {
            Some(delta) => delta,
            None => &mut self.oldest,
        }
    }

    /// The key of the object.
    pub fn key(&self) -> &Arc<ObjectKey> {
        &self.key
    }

    /// The first change since the key was queued.
    pub fn oldest(&self) -> &Delta<K> {
        &self.oldest
    }

    /// The latest change: the object's current state as far as the queue knows.
    pub fn newest(&self) -> &Delta<K> {
        self.rest.last().unwrap_or(&self.oldest)
    }

    /// The changes, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Delta<K>> {
        iter::once(&self.oldest).chain(&self.rest)
    }

    /// How many changes (at least one).
    pub fn len(&self) -> usize {
        1 + self.rest.len()
    }

    /// Always `false`: a `Deltas` holds at least one delta.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether these deltas belong to the initial list: the key was queued by the first
    /// `replace` (what client-go passes to handlers as `isInInitialList`).
    pub fn is_initial_list(&self) -> bool {
        self.initial
    }

    /// The changes as a vector, oldest first.
    pub fn into_vec(self) -> Vec<Delta<K>> {
        self.into_iter().collect()
    }
}

impl<K> IntoIterator for Deltas<K> {
    type Item = Delta<K>;
    type IntoIter = iter::Chain<iter::Once<Delta<K>>, vec::IntoIter<Delta<K>>>;

    fn into_iter(self) -> Self::IntoIter {
        iter::once(self.oldest).chain(self.rest)
    }
}

impl<'a, K> IntoIterator for &'a Deltas<K> {
    type Item = &'a Delta<K>;
    type IntoIter = iter::Chain<iter::Once<&'a Delta<K>>, std::slice::Iter<'a, Delta<K>>>;

    fn into_iter(self) -> Self::IntoIter {
        iter::once(&self.oldest).chain(self.rest.iter())
    }
}
