//! client-go's `RealFIFO`: every change queued and popped in the order it happened.

#[cfg(test)]
mod tests;

use std::{
    collections::VecDeque,
    fmt,
    sync::{Arc, Mutex, MutexGuard},
};

use educe::Educe;
use kube::Resource;
use tokio::sync::Notify;

use super::queue_state::{self, QueueState, release_and_wake};
use super::{
    DeletedFinalStateUnknown, DeletedObject, Delta, DeltaBatch, Deltas, KnownObjects, PopError,
};
use crate::key::{KeyFn, ObjectKey, ObjectKeyRef};
use crate::lock::MutexExt;
use crate::store::{FastMap, FastSet};

/// Options of a [`RealFifo`] (client-go's `RealFIFOOptions`), as a builder.
pub struct RealFifoOptions<K> {
    key_fn: KeyFn<K>,
    known_objects: Option<Arc<dyn KnownObjects<K>>>,
}

impl<K: Resource> Default for RealFifoOptions<K> {
    /// [`KeyFn::meta_namespace`], no known objects.
    fn default() -> Self {
        Self::new(KeyFn::meta_namespace())
    }
}

impl<K> RealFifoOptions<K> {
    /// Options with the key function `key_fn` and no known objects.
    pub fn new(key_fn: KeyFn<K>) -> Self {
        Self {
            key_fn,
            known_objects: None,
        }
    }

    /// Sets the key function; it must agree with the known objects' key function.
    #[must_use]
    pub fn key_fn(mut self, key_fn: KeyFn<K>) -> Self {
        self.key_fn = key_fn;
        self
    }

    /// The objects the consumer knows (normally the informer's
    /// [`Indexer`](crate::store::Indexer)): `replace` tombstones those a relist lacks,
    /// and `resync` re-delivers them.
    #[must_use]
    pub fn known_objects(mut self, known: impl KnownObjects<K> + 'static) -> Self {
        self.known_objects = Some(Arc::new(known));
        self
    }
}

impl<K> fmt::Debug for RealFifoOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RealFifoOptions")
            .field("key_fn", &self.key_fn)
            .field("known_objects", &self.known_objects.is_some())
            .finish()
    }
}

struct Shared<K> {
    state: Mutex<State<K>>,
    notify: Notify,
    key_fn: KeyFn<K>,
    known: Option<Arc<dyn KnownObjects<K>>>,
}

/// One queued change and the key of its object.
struct Item<K> {
    key: Arc<ObjectKey>,
    delta: Delta<K>,
    /// Queued before the first `replace` was delivered: part of the initial list.
    initial: bool,
    /// How many items, this one first, a batch pop takes at once: more than 1 at the
    /// head of what one `replace` or `resync` queued (client-go's AtomicFIFO), so that
    /// a consumer applying a batch under one lock applies the whole relist or resync in
    /// one step; 1 otherwise.
    together: usize,
}

struct State<K> {
    items: VecDeque<Item<K>>,
    /// Some operation (other than `resync`) has happened.
    populated: bool,
    /// Items of the initial list not yet processed.
    initial_pending: usize,
    waiters: usize,
    closed: bool,
}

impl<K> QueueState for State<K> {
    fn len(&self) -> usize {
        self.items.len()
    }
    fn is_closed(&self) -> bool {
        self.closed
    }
    fn set_closed(&mut self) {
        self.closed = true;
    }
    fn has_synced(&self) -> bool {
        self.populated && self.initial_pending == 0
    }
    fn waiters_mut(&mut self) -> &mut usize {
        &mut self.waiters
    }
}

impl<K> State<K> {
    fn push(&mut self, key: Arc<ObjectKey>, delta: Delta<K>) {
        self.items.push_back(Item {
            key,
            delta,
            initial: false,
            together: 1,
        });
    }

    fn push_tombstone(&mut self, key: Arc<ObjectKey>, last_known: Arc<K>) {
        let tombstone = DeletedFinalStateUnknown {
            key: Arc::clone(&key),
            last_known,
        };
        self.push(key, Delta::Deleted(DeletedObject::Unknown(tombstone)));
    }

    /// The newest queued delta of `key`, if any is queued. O(queue length): only the
    /// rare [`RealFifo::delete_stale`] asks.
    fn newest_queued(&self, key: ObjectKeyRef<'_>) -> Option<&Item<K>> {
        self.items
            .iter()
            .rev()
            .find(|item| item.key.as_key_ref() == key)
    }

    /// Every queued key, in the order of its first queued delta, with the position of
    /// its newest one.
    fn queued_keys(&self) -> (Vec<&Arc<ObjectKey>>, FastMap<ObjectKeyRef<'_>, usize>) {
        let mut order = Vec::new();
        let mut newest = FastMap::default();
        for (position, item) in self.items.iter().enumerate() {
            if newest.insert(item.key.as_key_ref(), position).is_none() {
                order.push(&item.key);
            }
        }
        (order, newest)
    }
}

/// The deltas of one [`RealFifo::pop_batch`], handed out under the queue's lock.
pub(crate) struct RealPopBatch<'a, K> {
    notify: &'a Notify,
    state: &'a mut State<K>,
    /// Deltas the batch may still take.
    left: usize,
}

impl<K> State<K> {
    /// Marks the `count` items queued last as one group, popped together by a batch
    /// pop (see [`Item::together`]).
    fn group_last(&mut self, count: usize) {
        let len = self.items.len();
        if count > 1
            && let Some(first) = self.items.get_mut(len - count)
        {
            first.together = count;
        }
    }
}

impl<K> RealPopBatch<'_, K> {
    /// Takes the next queued delta, if the batch has room left, and calls `process`
    /// with it as a one-delta [`Deltas`]; `None` when the batch is full or the queue
    /// empty.
    fn next<T, E>(
        &mut self,
        process: impl FnOnce(&Deltas<K>) -> Result<T, E>,
    ) -> Option<Result<T, PopError<E>>> {
        if self.left == 0 {
            return None;
        }
        let Item {
            key,
            delta,
            initial,
            together,
        } = self.state.items.pop_front()?;
        self.left -= 1;
        if together > 1
            && let Some(next) = self.state.items.front_mut()
        {
            // What is left of the group stays one, should this batch stop here (a
            // one-delta `pop`).
            next.together = together - 1;
        }
        if self.state.wake_needed() {
            // Pass the wake-up on to another waiting pop.
            self.notify.notify_one();
        }
        let mut deltas = Deltas::new(key, 0, delta);
        deltas.initial = initial;
        let result = process(&deltas).map_err(PopError::Failed);
        // Counted once processed, so `has_synced` never turns true while the last item
        // of the initial list is still being applied (client-go's order).
        if initial {
            self.state.initial_pending -= 1;
        }
        Some(result)
    }
}

impl<K> DeltaBatch<K> for RealPopBatch<'_, K> {
    fn apply_next(&mut self, apply: &mut dyn FnMut(&Deltas<K>)) -> bool {
        self.next(|deltas| {
            apply(deltas);
            Ok::<_, std::convert::Infallible>(())
        })
        .is_some()
    }
}

/// client-go's `RealFIFO`: a queue in which every change is popped, in the order it was
/// queued. Cheap to clone (clones share the queue); `Send + Sync`.
///
/// # Rules (client-go's `RealFIFO` with known objects is the reference)
/// - **Every change, in order.** [`add`], [`update`] and [`delete`] each queue one
///   [`Delta`]; nothing is merged or reordered, across keys or within one. Each [`pop`]
///   hands out one delta, as a one-delta [`Deltas`].
/// - **Deletions are always queued**, even of a key the queue and the known objects
///   lack (client-go's `RealFIFO` queues everything; the informer skips a deletion
///   of an object its cache does not hold).
/// - **Replace.** [`replace`] (a relist) first queues a tombstoned deletion,
///   [`DeletedFinalStateUnknown`], for every key missing from the list: each queued key
///   whose newest delta is not already a deletion (carrying that newest state), then each
///   known key not queued (carrying the known state); then [`Delta::Replaced`] for every
///   listed object, in list order. So the deletions of vanished objects come before the
///   adds and updates of the relist.
/// - **Resync.** [`resync`] queues [`Delta::Sync`] for each known object whose key has
///   nothing queued, so a resync never overtakes (and reverts) a pending change.
/// - **Atomic relists and resyncs** (client-go's `AtomicFIFO`, on by default since
///   1.36): what one `replace` or `resync` queued is handed out in one batch pop,
///   whatever its size, so the informer applies it to its cache under one lock:
///   readers see the cache before the relist or after it, never a mix. A one-delta
///   [`pop`] still takes one.
/// - **Pop.** [`pop`] waits asynchronously for a delta, removes it and calls the process
///   function with it under the queue's lock, so the consumer updates the known objects
///   before any other operation looks at them. There is no requeue: putting a delta
///   back would reorder it (client-go's `RealFIFO` has none either).
/// - **Close.** [`close`] wakes every waiting [`pop`]; from then on `pop` hands out
///   what is still queued and then returns [`PopError::Closed`].
/// - **Synced.** [`has_synced`] turns true once every delta queued by the first
///   [`replace`] (its deletions included) has been popped and processed; it is true at
///   once if an `add`, `update` or `delete` came first. Those deltas report
///   [`Deltas::is_initial_list`].
/// - **Bounded work.** `add`, `update`, `delete` and `pop` do O(1) work; `replace` and
///   `resync` walk the queue and the known objects, and `delete_stale` the queue.
///
/// Objects are shared as `Arc<K>`, and a key the known objects already hold is shared
/// rather than allocated again, as in [`DeltaFifo`](super::DeltaFifo).
///
/// ```
/// use std::sync::Arc;
/// use informer::fifo::{Delta, RealFifo, RealFifoOptions};
/// use informer::store::Writer;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut store = Writer::<ConfigMap>::new();
/// let fifo = RealFifo::new(RealFifoOptions::default().known_objects(store.indexer()));
/// let cm = |name: &str| ConfigMap {
///     metadata: ObjectMeta { name: Some(name.into()), namespace: Some("default".into()), ..Default::default() },
///     ..Default::default()
/// };
/// fifo.add(cm("a"));
/// fifo.add(cm("b"));
/// fifo.update(cm("a"));
/// let mut order = Vec::new();
/// while !fifo.is_empty() {
///     fifo.pop(|deltas| {
///         let delta = deltas.newest();
///         order.push((delta.kind(), deltas.key().name.clone()));
///         match delta {
///             Delta::Deleted(_) => { store.delete_key(deltas.key()); }
///             other => { store.upsert_keyed(deltas.key(), Arc::clone(other.object())); }
///         }
///         Ok::<_, ()>(())
///     })
///     .await
///     .unwrap();
/// }
/// use informer::fifo::DeltaType::{Added, Updated};
/// assert_eq!(order, [(Added, "a".into()), (Added, "b".into()), (Updated, "a".into())]);
/// # });
/// ```
///
/// [`add`]: RealFifo::add
/// [`update`]: RealFifo::update
/// [`delete`]: RealFifo::delete
/// [`replace`]: RealFifo::replace
/// [`resync`]: RealFifo::resync
/// [`pop`]: RealFifo::pop
/// [`close`]: RealFifo::close
/// [`has_synced`]: RealFifo::has_synced
#[doc(alias = "RealFIFO")]
#[derive(Educe)]
#[educe(Clone)]
pub struct RealFifo<K> {
    shared: Arc<Shared<K>>,
}

// By hand: it shows the queue's live length and state, read under the lock.
impl<K> fmt::Debug for RealFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("RealFifo")
            .field("queued", &state.items.len())
            .field("closed", &state.closed)
            .finish_non_exhaustive()
    }
}

impl<K: Resource + 'static> Default for RealFifo<K> {
    fn default() -> Self {
        Self::new(RealFifoOptions::default())
    }
}

impl<K> RealFifo<K> {
    // A panicking process function poisons the lock; the queue's own state is consistent
    // at every point where user code runs, so carry on (the crate's policy, `lock.rs`).
    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.shared.state.locked()
    }
}

impl<K: 'static> RealFifo<K> {
    /// An empty queue with `options`.
    pub fn new(options: RealFifoOptions<K>) -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    items: VecDeque::new(),
                    populated: false,
                    initial_pending: 0,
                    waiters: 0,
                    closed: false,
                }),
                notify: Notify::new(),
                key_fn: options.key_fn,
                known: options.known_objects,
            }),
        }
    }

    /// The key function.
    pub fn key_fn(&self) -> &KeyFn<K> {
        &self.shared.key_fn
    }

    /// The key of `obj`: the known objects' allocation when they hold it, else a new one.
    fn key_of(&self, obj: &K) -> Arc<ObjectKey> {
        let candidate = self.shared.key_fn.candidate(obj);
        match self.shared.known.as_ref() {
            Some(known) => known
                .get_key(candidate.key_ref())
                .unwrap_or_else(|| candidate.into_shared()),
            None => candidate.into_shared(),
        }
    }

    fn queue_change(&self, obj: Arc<K>, make: fn(Arc<K>) -> Delta<K>) {
        // The key is made before the lock is taken: the known objects have their own.
        let key = self.key_of(&obj);
        let mut state = self.lock();
        state.populated = true;
        state.push(key, make(obj));
        self.wake(state);
    }

    fn wake(&self, state: MutexGuard<'_, State<K>>) {
        release_and_wake(state, &self.shared.notify);
    }

    /// Queues [`Delta::Added`] for `obj` (a watch `ADDED` event).
    pub fn add(&self, obj: impl Into<Arc<K>>) {
        self.queue_change(obj.into(), Delta::Added);
    }

    /// Queues [`Delta::Updated`] for `obj` (a watch `MODIFIED` event).
    pub fn update(&self, obj: impl Into<Arc<K>>) {
        self.queue_change(obj.into(), Delta::Updated);
    }

    /// Queues [`Delta::Deleted`] with `obj` as the final state (a watch `DELETED`
    /// event), whether or not the key is queued or known.
    pub fn delete(&self, obj: impl Into<Arc<K>>) {
        self.queue_change(obj.into(), |obj| Delta::Deleted(DeletedObject::Final(obj)));
    }

    /// The newest queued state of `key`, unless that is a deletion: an object a watch
    /// brought that the process loop has not stored yet.
    pub(crate) fn newest_queued(&self, key: &ObjectKey) -> Option<Arc<K>> {
        match self.lock().newest_queued(key.as_key_ref()) {
            Some(Item {
                delta: Delta::Deleted(_),
                ..
            })
            | None => None,
            Some(item) => Some(Arc::clone(item.delta.object())),
        }
    }

    /// Queues a tombstone ([`DeletedObject::Unknown`]) for the key of `last_known`: the
    /// object is no longer what the server would list for this cache (a later state of
    /// it could not be decoded). The tombstone carries the newest queued state of the
    /// key, or `last_known`. A no-op when the key is neither queued nor known, or when
    /// its newest queued delta is already a deletion.
    pub fn delete_stale(&self, last_known: impl Into<Arc<K>>) {
        let last_known = last_known.into();
        let key = self.key_of(&last_known);
        let mut state = self.lock();
        state.populated = true;
        let newest = match state.newest_queued(key.as_key_ref()) {
            Some(Item {
                delta: Delta::Deleted(_),
                ..
            }) => return,
            Some(item) => Arc::clone(item.delta.object()),
            None => {
                let known = self.shared.known.as_ref();
                if known.and_then(|k| k.get_key(key.as_key_ref())).is_none() {
                    return;
                }
                last_known
            }
        };
        state.push_tombstone(key, newest);
        self.wake(state);
    }

    /// A relist: queues a tombstoned [`Delta::Deleted`] for every queued or known key
    /// that `list` lacks, then [`Delta::Replaced`] for every object of `list`, in order.
    /// The first `replace` defines the initial list (see
    /// [`has_synced`](Self::has_synced)).
    ///
    /// The resource version is accepted for the reflector's sake and otherwise unused,
    /// as in client-go.
    pub fn replace<I>(&self, list: I, _resource_version: &str)
    where
        I: IntoIterator,
        I::Item: Into<Arc<K>>,
    {
        let listed: Vec<(Arc<ObjectKey>, Arc<K>)> = list
            .into_iter()
            .map(|obj| {
                let obj = obj.into();
                (self.key_of(&obj), obj)
            })
            .collect();
        let mut guard = self.lock();
        let state = &mut *guard;

        let vanished = {
            let listed_keys: FastSet<ObjectKeyRef<'_>> =
                listed.iter().map(|(key, _)| key.as_key_ref()).collect();
            let (queued_order, newest) = state.queued_keys();
            let mut vanished = Vec::new();
            // Queued keys first, in queue order, with their newest queued state; a key
            // whose newest delta is a deletion needs no second one.
            for key in queued_order {
                let item = &state.items[newest[&key.as_key_ref()]];
                if listed_keys.contains(&key.as_key_ref())
                    || matches!(item.delta, Delta::Deleted(_))
                {
                    continue;
                }
                vanished.push((Arc::clone(key), Arc::clone(item.delta.object())));
            }
            // Then known keys with nothing queued, with their known state.
            if let Some(known) = &self.shared.known {
                known.for_each_known(&mut |key, obj| {
                    let key_ref = key.as_key_ref();
                    if !listed_keys.contains(&key_ref) && !newest.contains_key(&key_ref) {
                        vanished.push((Arc::clone(key), Arc::clone(obj)));
                    }
                });
            }
            vanished
        };

        let group = vanished.len() + listed.len();
        state.items.reserve(group);
        for (key, last_known) in vanished {
            state.push_tombstone(key, last_known);
        }
        for (key, obj) in listed {
            state.push(key, Delta::Replaced(obj));
        }
        state.group_last(group);
        if !state.populated {
            // client-go counts the whole queue as the initial population.
            state.populated = true;
            state.initial_pending = state.items.len();
            for item in &mut state.items {
                item.initial = true;
            }
        }
        self.wake(guard);
    }

    /// Queues [`Delta::Sync`] for every known object whose key has nothing queued (a
    /// periodic resync). Without known objects, does nothing.
    pub fn resync(&self) {
        let Some(known) = &self.shared.known else {
            return;
        };
        let mut guard = self.lock();
        let state = &mut *guard;
        let mut to_sync = Vec::new();
        {
            let (_, queued) = state.queued_keys();
            known.for_each_known(&mut |key, obj| {
                if !queued.contains_key(&key.as_key_ref()) {
                    to_sync.push((Arc::clone(key), Arc::clone(obj)));
                }
            });
        }
        let group = to_sync.len();
        for (key, obj) in to_sync {
            state.push(key, Delta::Sync(obj));
        }
        state.group_last(group);
        self.wake(guard);
    }

    /// Waits for a queued delta, removes it and calls `process` with it (as a one-delta
    /// [`Deltas`]) while holding the queue's lock; returns what `process` returns, a
    /// failure as [`PopError::Failed`] (the delta is dropped: there is no requeue).
    ///
    /// `process` runs synchronously under the lock, as in client-go, so it must be quick
    /// and must not call this queue. Cancel-safe: dropping the future while it waits
    /// loses nothing.
    pub async fn pop<T, E, F>(&self, process: F) -> Result<T, PopError<E>>
    where
        F: FnOnce(&Deltas<K>) -> Result<T, E>,
    {
        let popped = self
            .pop_batch(1, |batch| batch.next(process))
            .await
            .and_then(|(result, _)| result);
        popped.unwrap_or(Err(PopError::Closed))
    }

    /// Like [`pop`](Self::pop) for several deltas under one lock: waits for a queued
    /// delta, then calls `run` once, under the queue's lock, with a batch that hands out
    /// up to `max` deltas in queue order, or, when the next delta heads what one
    /// `replace` or `resync` queued, all of those (client-go's AtomicFIFO: a consumer
    /// that applies a batch in one step applies a relist in one step). Returns what
    /// `run` returns and whether the queue is empty now; `None` once the queue is
    /// closed and empty.
    pub(crate) async fn pop_batch<T>(
        &self,
        max: usize,
        run: impl FnOnce(&mut RealPopBatch<'_, K>) -> T,
    ) -> Option<(T, bool)> {
        queue_state::pop_batch(&self.shared.state, &self.shared.notify, |state| {
            let together = state.items.front().map_or(1, |item| item.together);
            run(&mut RealPopBatch {
                notify: &self.shared.notify,
                state,
                left: max.max(together).max(1),
            })
        })
        .await
    }

    /// Closes the queue: wakes every waiting [`pop`](Self::pop). From then on a `pop`
    /// hands out what is still queued, and returns [`PopError::Closed`] instead of
    /// waiting for more.
    pub fn close(&self) {
        queue_state::close(&self.shared.state, &self.shared.notify);
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.lock().is_closed()
    }

    /// Whether the initial list has been delivered: every delta queued by the first
    /// [`replace`](Self::replace) was popped and processed, or an `add`, `update` or
    /// `delete` came before any `replace`.
    pub fn has_synced(&self) -> bool {
        self.lock().has_synced()
    }

    /// How many deltas are queued.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The queued deltas with their keys, in pop order (the objects are shared, not
    /// copied).
    pub fn queued(&self) -> Vec<(Arc<ObjectKey>, Delta<K>)> {
        self.lock()
            .items
            .iter()
            .map(|item| (Arc::clone(&item.key), item.delta.clone()))
            .collect()
    }
}
