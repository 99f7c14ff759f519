//! client-go's `RealFIFO`: every change queued and popped in the order it happened.

#[cfg(test)]
mod tests;

use std::{
    collections::VecDeque,
    fmt,
    sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError},
};

use educe::Educe;
use tokio::sync::Notify;

use super::queue_state::{self, QueueState, release_and_wake};
use super::{
    DeletedFinalStateUnknown, DeletedObject, Delta, DeltaBatch, Deltas, KnownObjects, PopError,
};
use crate::key::{KeyFn, ObjectKey, ObjectKeyRef};
use crate::lock::MutexExt;
use crate::object::Object;
use crate::store::{FastMap, FastSet};

/// Settings of a [`RealFifo`] (client-go's `RealFIFOOptions`): each a public field to
/// read, set with the builder methods.
#[non_exhaustive]
#[must_use]
pub struct RealFifoConfig<K> {
    /// The key function ([`key_fn`](Self::key_fn)).
    pub key_fn: KeyFn<K>,
    /// The objects the consumer knows ([`known_objects`](Self::known_objects)).
    pub known_objects: Option<Arc<dyn KnownObjects<K>>>,
}

impl<K: Object> Default for RealFifoConfig<K> {
    /// [`KeyFn::meta_namespace`], no known objects.
    fn default() -> Self {
        Self::new(KeyFn::meta_namespace())
    }
}

impl<K> RealFifoConfig<K> {
    /// Settings with the key function `key_fn` and no known objects.
    pub fn new(key_fn: KeyFn<K>) -> Self {
        Self {
            key_fn,
            known_objects: None,
        }
    }

    /// Sets the key function; it must agree with the known objects' key function.
    pub fn key_fn(mut self, key_fn: KeyFn<K>) -> Self {
        self.key_fn = key_fn;
        self
    }

    /// The objects the consumer knows (normally the informer's
    /// [`Indexer`](crate::store::Indexer)): `replace` tombstones those a relist lacks,
    /// and `resync` re-delivers them.
    pub fn known_objects(mut self, known: impl KnownObjects<K> + 'static) -> Self {
        self.known_objects = Some(Arc::new(known));
        self
    }
}

impl<K> fmt::Debug for RealFifoConfig<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RealFifoConfig")
            .field("key_fn", &self.key_fn)
            .field("known_objects", &self.known_objects.is_some())
            .finish()
    }
}

struct Shared<K> {
    state: Mutex<State<K>>,
    notify: Notify,
    /// Signalled when a batch taken out has been processed (`State::processing` ends).
    idle: Condvar,
    /// How many times an operation waited for a batch being processed (for tests).
    #[cfg(test)]
    idle_waits: std::sync::atomic::AtomicUsize,
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
    /// A batch is taken out of `items` and being processed, the lock released
    /// (client-go's `UnlockWhileProcessingFIFO`): its changes are in neither the queue
    /// nor, until processed, the known objects.
    processing: bool,
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
    fn is_busy(&self) -> bool {
        self.processing
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

/// The deltas of one [`RealFifo::pop_batch`]: taken out of the queue, and handed out
/// with the queue's lock released.
pub(crate) struct RealPopBatch<K> {
    taken: VecDeque<Item<K>>,
    /// Deltas of the initial list handed out and processed: counted off the queue's
    /// `initial_pending` once the batch is done.
    initial_done: usize,
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

    /// How many items from the front a batch of up to `max` takes: whole groups only
    /// (one longer than `max` when it is first), so that what one `replace` or
    /// `resync` queued is never split between batches.
    fn batch_len(&self, max: usize) -> usize {
        let mut taken = 0;
        while let Some(item) = self.items.get(taken) {
            let group = item.together.max(1);
            if taken > 0 && taken + group > max {
                break;
            }
            taken += group;
            if taken >= max {
                break;
            }
        }
        taken.min(self.items.len())
    }

    /// Takes the first `count` items out; a group cut short keeps the rest of it
    /// together.
    fn take(&mut self, count: usize) -> VecDeque<Item<K>> {
        let head_group = self.items.front().map_or(1, |item| item.together);
        let taken: VecDeque<Item<K>> = self.items.drain(..count).collect();
        if head_group > count
            && let Some(next) = self.items.front_mut()
        {
            next.together = head_group - count;
        }
        taken
    }
}

impl<K> RealPopBatch<K> {
    /// Hands out the next taken delta, calling `process` with it as a one-delta
    /// [`Deltas`]; `None` once all are handed out.
    fn next<T, E>(
        &mut self,
        process: impl FnOnce(&Deltas<K>) -> Result<T, E>,
    ) -> Option<Result<T, PopError<E>>> {
        let Item {
            key,
            delta,
            initial,
            together: _,
        } = self.taken.pop_front()?;
        let mut deltas = Deltas::new(key, 0, delta);
        deltas.initial = initial;
        let result = process(&deltas).map_err(PopError::Failed);
        // Counted once processed, so `has_synced` never turns true while the last item
        // of the initial list is still being applied (client-go's order).
        if initial {
            self.initial_done += 1;
        }
        Some(result)
    }
}

/// Ends a batch taken out, also when its processing panics: counts off what it
/// processed, puts back what it did not hand out (at the front, in order), and lets
/// the next pop and any `replace` waiting for the batch go on.
struct Processing<'a, K> {
    shared: &'a Shared<K>,
    batch: RealPopBatch<K>,
    done: bool,
}

impl<K> Processing<'_, K> {
    /// Ends the batch; whether the queue is empty now.
    fn finish(mut self) -> bool {
        self.done = true;
        self.end()
    }

    fn end(&mut self) -> bool {
        let mut state = self.shared.state.locked();
        state.initial_pending -= std::mem::take(&mut self.batch.initial_done);
        let rest = std::mem::take(&mut self.batch.taken);
        let returned = rest.len();
        for item in rest.into_iter().rev() {
            state.items.push_front(item);
        }
        if returned > 1
            && let Some(first) = state.items.front_mut()
        {
            first.together = returned;
        }
        state.processing = false;
        let drained = state.items.is_empty();
        let waiting = state.waiters > 0;
        drop(state);
        self.shared.idle.notify_all();
        if waiting {
            // Every waiting pop looks again: one pops what is left, or all see the
            // queue closed and empty.
            self.shared.notify.notify_waiters();
        }
        drained
    }
}

impl<K> Drop for Processing<'_, K> {
    fn drop(&mut self) {
        if !self.done {
            self.end();
        }
    }
}

impl<K> DeltaBatch<K> for RealPopBatch<K> {
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
///   whatever its size and never split with what came before or after, so the
///   informer applies it to its cache under one lock: readers see the cache before the
///   relist or after it, never a mix. A one-delta [`pop`] still takes one.
/// - **Pop.** [`pop`] waits asynchronously for a delta, removes it and calls the process
///   function with it, the queue's lock released (client-go's
///   `UnlockWhileProcessingFIFO`, on by default since 1.36): [`add`], [`update`] and
///   [`delete`] are never blocked by processing, while [`replace`], [`resync`],
///   [`delete_stale`](RealFifo::delete_stale) and the next pop wait until it returns,
///   so the consumer updates the known objects before any operation that reads them
///   looks, and batches are processed one at a time, in order. There is no requeue:
///   putting a delta back would reorder it (client-go's `RealFIFO` has none either).
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
/// use informer::fifo::{Delta, RealFifo, RealFifoConfig};
/// use informer::store::Writer;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut store = Writer::<ConfigMap>::new();
/// let fifo = RealFifo::new(RealFifoConfig::default().known_objects(store.indexer()));
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

impl<K: Object + 'static> Default for RealFifo<K> {
    fn default() -> Self {
        Self::new(RealFifoConfig::default())
    }
}

impl<K> RealFifo<K> {
    // A panicking process function poisons the lock; the queue's own state is consistent
    // at every point where user code runs, so carry on (the crate's policy, `lock.rs`).
    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.shared.state.locked()
    }

    /// The lock, once no batch is being processed outside it: what reads the queue
    /// and the known objects together (a relist, a resync, a stale deletion) must not
    /// miss the changes of a batch in between. Waits at most for one batch's
    /// processing, which never awaits: on a single-threaded runtime it never waits.
    fn lock_idle(&self) -> MutexGuard<'_, State<K>> {
        let mut state = self.lock();
        while state.processing {
            #[cfg(test)]
            self.shared
                .idle_waits
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            state = self
                .shared
                .idle
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state
    }
}

impl<K: 'static> RealFifo<K> {
    /// An empty queue with `config`.
    pub fn new(config: RealFifoConfig<K>) -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    items: VecDeque::new(),
                    populated: false,
                    initial_pending: 0,
                    waiters: 0,
                    closed: false,
                    processing: false,
                }),
                notify: Notify::new(),
                idle: Condvar::new(),
                #[cfg(test)]
                idle_waits: std::sync::atomic::AtomicUsize::new(0),
                key_fn: config.key_fn,
                known: config.known_objects,
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
        match self.lock_idle().newest_queued(key.as_key_ref()) {
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
        let mut state = self.lock_idle();
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
        let mut guard = self.lock_idle();
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
        let mut guard = self.lock_idle();
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
    /// [`Deltas`]); returns what `process` returns, a failure as [`PopError::Failed`]
    /// (the delta is dropped: there is no requeue).
    ///
    /// `process` runs with the queue's lock released (client-go's
    /// `UnlockWhileProcessingFIFO`): `add`, `update` and `delete` go on meanwhile,
    /// while `replace`, `resync`, `delete_stale` and the next pop wait for it to
    /// return, so the consumer updates the known objects before any of those looks at
    /// them. It must not call this queue's `replace`, `resync` or `pop`. Cancel-safe:
    /// dropping the future while it waits loses nothing.
    pub async fn pop<T, E, F>(&self, process: F) -> Result<T, PopError<E>>
    where
        F: FnOnce(&Deltas<K>) -> Result<T, E>,
    {
        let popped = self
            .pop_taking(|_| 1, |batch| batch.next(process))
            .await
            .and_then(|(result, _)| result);
        popped.unwrap_or(Err(PopError::Closed))
    }

    /// Like [`pop`](Self::pop) for several deltas at once: waits for a queued delta,
    /// takes up to `max` deltas in queue order, or, when the next delta heads what one
    /// `replace` or `resync` queued, all of those (client-go's AtomicFIFO: a consumer
    /// that applies a batch in one step applies a relist in one step; a group is never
    /// split between batches), and calls `run` once with them, the queue's lock
    /// released. Returns what `run` returns and whether the queue is empty now; `None`
    /// once the queue is closed and empty.
    pub(crate) async fn pop_batch<T>(
        &self,
        max: usize,
        run: impl FnOnce(&mut RealPopBatch<K>) -> T,
    ) -> Option<(T, bool)> {
        self.pop_taking(|state| state.batch_len(max.max(1)), run)
            .await
    }

    /// Waits for a queued delta, takes out as many as `count` says, and calls `run`
    /// with them and the lock released; see [`pop_batch`](Self::pop_batch).
    async fn pop_taking<T>(
        &self,
        count: impl FnOnce(&State<K>) -> usize,
        run: impl FnOnce(&mut RealPopBatch<K>) -> T,
    ) -> Option<(T, bool)> {
        let taken =
            queue_state::when_ready(&self.shared.state, &self.shared.notify, |mut state| {
                let count = count(&state);
                let taken = state.take(count);
                state.processing = true;
                taken
            })
            .await?;
        let mut processing = Processing {
            shared: &self.shared,
            batch: RealPopBatch {
                taken,
                initial_done: 0,
            },
            done: false,
        };
        let value = run(&mut processing.batch);
        let drained = processing.finish();
        Some((value, drained))
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

    /// Whether nothing is queued and no batch taken out is still being processed: every
    /// change queued so far has reached the consumer.
    pub(crate) fn is_settled(&self) -> bool {
        let state = self.lock();
        state.items.is_empty() && !state.processing
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
