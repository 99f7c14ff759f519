//! client-go's `DeltaFIFO`: one entry per key, each key's changes popped together.

mod batch;
mod state;
#[cfg(test)]
mod tests;

use std::{
    collections::VecDeque,
    fmt,
    sync::{Arc, Mutex, MutexGuard},
};

use educe::Educe;
use hashbrown::{Equivalent, HashTable};
use tokio::sync::Notify;

use super::queue_state::{self, QueueState, release_and_wake};
use super::{
    DeletedFinalStateUnknown, DeletedObject, Delta, Deltas, KnownObjects, PopError, ProcessError,
};
use crate::key::{KeyFn, ObjectKey};
use crate::lock::MutexExt;
use crate::object::Object;
use crate::store::FastState;
pub(crate) use batch::PopBatch;
use state::{Shared, State};

/// Settings of a [`DeltaFifo`] (client-go's `DeltaFIFOOptions`): each a public field
/// to read, set with the builder methods.
#[non_exhaustive]
#[must_use]
pub struct DeltaFifoConfig<K> {
    /// The key function ([`key_fn`](Self::key_fn)).
    pub key_fn: KeyFn<K>,
    /// The objects the consumer knows ([`known_objects`](Self::known_objects)).
    pub known_objects: Option<Arc<dyn KnownObjects<K>>>,
    /// Whether `replace` queues `Replaced` ([`emit_replaced`](Self::emit_replaced)).
    pub emit_replaced: bool,
}

impl<K: Object> Default for DeltaFifoConfig<K> {
    /// [`KeyFn::meta_namespace`], no known objects, `Replaced` deltas on replace.
    fn default() -> Self {
        Self::new(KeyFn::meta_namespace())
    }
}

impl<K> DeltaFifoConfig<K> {
    /// Settings with the key function `key_fn`, no known objects, `Replaced` on replace.
    pub fn new(key_fn: KeyFn<K>) -> Self {
        Self {
            key_fn,
            known_objects: None,
            emit_replaced: true,
        }
    }

    /// Sets the key function; it must agree with the known objects' key function.
    pub fn key_fn(mut self, key_fn: KeyFn<K>) -> Self {
        self.key_fn = key_fn;
        self
    }

    /// The objects the consumer knows (normally the informer's
    /// [`Indexer`](crate::store::Indexer)); see [`KnownObjects`].
    pub fn known_objects(mut self, known: impl KnownObjects<K> + 'static) -> Self {
        self.known_objects = Some(Arc::new(known));
        self
    }

    /// Whether `replace` queues [`Delta::Replaced`] (the default) or, as client-go does
    /// unless `EmitDeltaTypeReplaced` is set, [`Delta::Sync`].
    pub fn emit_replaced(mut self, emit_replaced: bool) -> Self {
        self.emit_replaced = emit_replaced;
        self
    }
}

impl<K> fmt::Debug for DeltaFifoConfig<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeltaFifoConfig")
            .field("key_fn", &self.key_fn)
            .field("known_objects", &self.known_objects.is_some())
            .field("emit_replaced", &self.emit_replaced)
            .finish()
    }
}

/// client-go's `DeltaFIFO`: a queue of per-object [`Deltas`], typed. Cheap to clone
/// (clones share the queue); `Send + Sync`.
///
/// The reflector is the producer: it turns list and watch results into [`add`],
/// [`update`], [`delete`] and [`replace`] calls, and the resync timer into [`resync`]
/// calls. The informer's process loop is the consumer: each [`pop`] hands it every change
/// to one object since that object was last popped, as [`Deltas`], so it sees everything
/// that happened to the object, at most once, in order.
///
/// # Rules (client-go's `DeltaFIFO` is the reference)
/// - **One entry per key.** Changes to a key accumulate in its [`Deltas`], oldest first;
///   the key is queued once, at the position of its first pending change.
/// - **Deletions collapse.** Two [`Delta::Deleted`] in a row become one; the one with the
///   object's final state wins over a tombstone, otherwise the earlier one stays.
/// - **Deleting the unknown is a no-op.** [`delete`] of a key that is neither queued nor
///   in the [known objects](KnownObjects) is ignored (a relist already reported it).
/// - **Replace.** [`replace`] (a relist) queues [`Delta::Replaced`] for every listed
///   object ([`Delta::Sync`] instead with
///   [`emit_replaced(false)`](DeltaFifoConfig::emit_replaced)), then a deletion
///   carrying a typed tombstone, [`DeletedFinalStateUnknown`], for every key that is
///   known (queued, or in the known objects) but absent from the list. The tombstone
///   holds the newest queued state, else the known one.
/// - **Resync.** [`resync`] queues [`Delta::Sync`] for each known object whose key is
///   not already queued, so a resync never overtakes (and reverts) a pending change.
/// - **Pop.** [`pop`] waits asynchronously for a key, removes it with all its deltas and
///   calls the process function with them, under the queue's lock, so the consumer can
///   update the known objects before any other operation looks at them (this closes the
///   races client-go's lock closes). Returning [`ProcessError::Requeue`] puts the
///   deltas back at the end of the queue (client-go's `ErrRequeue`).
/// - **Close.** [`close`] wakes every waiting [`pop`]; from then on `pop` hands out
///   what is still queued and then returns [`PopError::Closed`] instead of waiting
///   (client-go's rule: nothing queued is lost to a close).
/// - **Synced.** [`has_synced`] turns true once every key queued by the first
///   [`replace`] has been popped and processed without requeue; it is true at once if an
///   `add`, `update` or `delete` came first. Keys of that first list report
///   [`Deltas::is_initial_list`].
/// - **Bounded work.** `add`, `update`, `delete` and `pop` do O(1) work (hash lookups, a
///   queue push or pop); only `replace` and `resync` walk the content.
///
/// Objects are shared as `Arc<K>`: a delta, the store and every handler hold the same
/// allocation. Keys come from the FIFO's [`KeyFn`], which must be the one the known
/// objects use; a key the known objects already hold is shared rather than allocated
/// again.
///
/// ```
/// use std::sync::Arc;
/// use informer::fifo::{Delta, DeltaFifo, DeltaFifoConfig, ProcessError};
/// use informer::store::Writer;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut store = Writer::<ConfigMap>::new();
/// let fifo = DeltaFifo::new(DeltaFifoConfig::default().known_objects(store.indexer()));
/// let cm = |name: &str| ConfigMap {
///     metadata: ObjectMeta { name: Some(name.into()), namespace: Some("default".into()), ..Default::default() },
///     ..Default::default()
/// };
/// fifo.replace([cm("demo"), cm("demo2")], "1");
/// assert!(!fifo.has_synced());
/// for _ in 0..2 {
///     fifo.pop(|deltas| {
///         for delta in deltas {
///             match delta {
///                 Delta::Deleted(_) => { store.delete_key(deltas.key()); }
///                 other => { store.upsert_keyed(deltas.key(), Arc::clone(other.object())); }
///             }
///         }
///         Ok::<_, ProcessError<()>>(())
///     })
///     .await
///     .unwrap();
/// }
/// assert!(fifo.has_synced());
/// assert_eq!(store.indexer().len(), 2);
/// # });
/// ```
///
/// [`add`]: DeltaFifo::add
/// [`update`]: DeltaFifo::update
/// [`delete`]: DeltaFifo::delete
/// [`replace`]: DeltaFifo::replace
/// [`resync`]: DeltaFifo::resync
/// [`pop`]: DeltaFifo::pop
/// [`close`]: DeltaFifo::close
/// [`has_synced`]: DeltaFifo::has_synced
#[doc(alias = "DeltaFIFO")]
#[derive(Educe)]
#[educe(Clone)]
pub struct DeltaFifo<K> {
    shared: Arc<Shared<K>>,
}

// By hand: it shows the queue's live length and state, read under the lock.
impl<K> fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        f.debug_struct("DeltaFifo")
            .field("queued", &state.queue.len())
            .field("closed", &state.closed)
            .finish_non_exhaustive()
    }
}

impl<K: Object + 'static> Default for DeltaFifo<K> {
    fn default() -> Self {
        Self::new(DeltaFifoConfig::default())
    }
}

impl<K> DeltaFifo<K> {
    // A panicking process function poisons the lock; the queue's own state is consistent
    // at every point where user code runs, so carry on (the crate's policy, `lock.rs`).
    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.shared.state.locked()
    }
}

impl<K: 'static> DeltaFifo<K> {
    /// An empty queue with `config`.
    pub fn new(config: DeltaFifoConfig<K>) -> Self {
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    items: HashTable::new(),
                    hasher: FastState::default(),
                    queue: VecDeque::new(),
                    populated: false,
                    initial_pending: 0,
                    waiters: 0,
                    closed: false,
                    replaces: 0,
                }),
                notify: Notify::new(),
                key_fn: config.key_fn,
                known: config.known_objects,
                emit_replaced: config.emit_replaced,
            }),
        }
    }

    /// The key function.
    pub fn key_fn(&self) -> &KeyFn<K> {
        &self.shared.key_fn
    }

    fn queue_object(&self, obj: Arc<K>, make: fn(Arc<K>) -> Delta<K>) {
        let mut state = self.lock();
        state.populated = true;
        state.push_object(&self.shared, obj, make);
        self.wake(state);
    }

    /// Releases the lock and wakes a waiting pop if there is one and something to pop.
    fn wake(&self, state: MutexGuard<'_, State<K>>) {
        release_and_wake(state, &self.shared.notify);
    }

    /// Queues [`Delta::Added`] for `obj` (a watch `ADDED` event).
    pub fn add(&self, obj: impl Into<Arc<K>>) {
        self.queue_object(obj.into(), Delta::Added);
    }

    /// Queues [`Delta::Updated`] for `obj` (a watch `MODIFIED` event).
    pub fn update(&self, obj: impl Into<Arc<K>>) {
        self.queue_object(obj.into(), Delta::Updated);
    }

    /// Queues [`Delta::Deleted`] with `obj` as the final state (a watch `DELETED` event),
    /// unless the key is neither queued nor known: then nothing happens.
    pub fn delete(&self, obj: impl Into<Arc<K>>) {
        let obj = obj.into();
        let mut state = self.lock();
        state.populated = true;
        let Some((hash, key, _)) = self.queued_or_known(&state, &obj) else {
            return;
        };
        state.push(hash, key, Delta::Deleted(DeletedObject::Final(obj)), false);
        self.wake(state);
    }

    /// The hash and shared key of `obj`'s key when it is queued (with its newest
    /// queued object) or known; `None` when neither, where a deletion is a no-op.
    fn queued_or_known(
        &self,
        state: &State<K>,
        obj: &K,
    ) -> Option<(u64, Arc<ObjectKey>, Option<Arc<K>>)> {
        let candidate = self.shared.key_fn.candidate(obj);
        let key = candidate.key_ref();
        let hash = state.hash(key);
        match state.find(hash, &key) {
            Some(queued) => Some((
                hash,
                Arc::clone(&queued.key),
                Some(Arc::clone(queued.newest().object())),
            )),
            None => self
                .shared
                .known
                .as_ref()?
                .get_key(key)
                .map(|known| (hash, known, None)),
        }
    }

    /// The newest queued state of `key`, unless that is a deletion: an object a watch
    /// brought that the process loop has not stored yet.
    pub(crate) fn newest_queued(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let state = self.lock();
        let key = key.as_key_ref();
        let newest = state.find(state.hash(key), &key)?.newest();
        (!matches!(newest, Delta::Deleted(_))).then(|| Arc::clone(newest.object()))
    }

    /// Queues a tombstone ([`DeletedObject::Unknown`]) for the key of `last_known`:
    /// the object is no longer what the server would list for this cache (a later
    /// state of it could not be decoded), and its final state is unknown. The
    /// tombstone carries the newest queued state of the key, or `last_known`. Like
    /// [`delete`](Self::delete), a no-op when the key is neither queued nor known.
    pub fn delete_stale(&self, last_known: impl Into<Arc<K>>) {
        let last_known = last_known.into();
        let mut state = self.lock();
        state.populated = true;
        let Some((hash, key, newest_queued)) = self.queued_or_known(&state, &last_known) else {
            return;
        };
        let last_known = newest_queued.unwrap_or(last_known);
        state.push_tombstone(hash, key, last_known, false);
        self.wake(state);
    }

    /// A relist: queues [`Delta::Replaced`] (or [`Delta::Sync`]) for every object of
    /// `list`, then a tombstoned [`Delta::Deleted`] for every queued or known key that
    /// `list` lacks. The first `replace` defines the initial list (see
    /// [`has_synced`](Self::has_synced)).
    ///
    /// The resource version is accepted for the reflector's sake and otherwise unused,
    /// as in client-go.
    pub fn replace<I>(&self, list: I, _resource_version: &str)
    where
        I: IntoIterator,
        I::Item: Into<Arc<K>>,
    {
        let list = list.into_iter();
        let listed_kind = if self.shared.emit_replaced {
            Delta::Replaced
        } else {
            Delta::Sync
        };
        let mut guard = self.lock();
        let state = &mut *guard;
        let initial = !state.populated;
        state.populated = true;

        let known = self.shared.known.as_deref();
        state.replaces += 1;
        let this_replace = state.replaces;
        // Distinct keys of the list: each gets `listed_by = this_replace`.
        let mut listed = 0usize;
        state.items.reserve(list.size_hint().0, |d| d.hash);
        for obj in list {
            let obj = obj.into();
            let candidate = self.shared.key_fn.candidate(&obj);
            let hash = state.hash(candidate.key_ref());
            let key_ref = candidate.key_ref();
            let queued = state.items.find_mut(hash, |d| key_ref.equivalent(&d.key));
            let deltas = match queued {
                Some(deltas) => {
                    deltas.push(listed_kind(Arc::clone(&obj)));
                    if initial && !deltas.initial {
                        deltas.initial = true;
                        state.initial_pending += 1;
                    }
                    deltas
                }
                None => {
                    let key = State::new_key(candidate, known);
                    state.push(hash, key, listed_kind(obj), initial)
                }
            };
            if deltas.listed_by != this_replace {
                deltas.listed_by = this_replace;
                listed += 1;
            }
        }

        // Queued keys missing from the list: tombstone with the newest queued state.
        if state.items.len() > listed {
            let missing: Vec<(u64, Arc<ObjectKey>, Arc<K>)> = state
                .items
                .iter()
                .filter(|deltas| deltas.listed_by != this_replace)
                .map(|deltas| {
                    let last_known = Arc::clone(deltas.newest().object());
                    (deltas.hash, Arc::clone(&deltas.key), last_known)
                })
                .collect();
            for (hash, key, last_known) in missing {
                state.push_tombstone(hash, key, last_known, initial);
            }
        }

        // Known keys missing from the list and not queued: tombstone with the known
        // state. (Every listed key is queued now.)
        if let Some(known) = known {
            known.for_each_known(&mut |key, obj| {
                let hash = state.hash(key.as_key_ref());
                if state.find(hash, key).is_some() {
                    return;
                }
                let tombstone = DeletedFinalStateUnknown {
                    key: Arc::clone(key),
                    last_known: Arc::clone(obj),
                };
                let delta = Delta::Deleted(DeletedObject::Unknown(tombstone));
                state.push(hash, Arc::clone(key), delta, initial);
            });
        }
        self.wake(guard);
    }

    /// Queues [`Delta::Sync`] for every known object whose key is not queued (a periodic
    /// resync). Without known objects, does nothing.
    pub fn resync(&self) {
        let Some(known) = &self.shared.known else {
            return;
        };
        let mut state = self.lock();
        known.for_each_known(&mut |key, obj| {
            let hash = state.hash(key.as_key_ref());
            if state.find(hash, key).is_none() {
                state.push(hash, Arc::clone(key), Delta::Sync(Arc::clone(obj)), false);
            }
        });
        self.wake(state);
    }

    /// Waits for a queued key, removes it and calls `process` with all its deltas while
    /// holding the queue's lock; returns what `process` returns.
    ///
    /// `process` runs synchronously under the lock, as in client-go, so it must be quick
    /// and must not call this queue. [`ProcessError::Requeue`] puts the deltas back at the
    /// end of the queue. Cancel-safe: dropping the future while it waits loses nothing.
    pub async fn pop<T, E, F>(&self, process: F) -> Result<T, PopError<E>>
    where
        F: FnOnce(&Deltas<K>) -> Result<T, ProcessError<E>>,
    {
        let mut process = Some(process);
        loop {
            let popped = self
                .pop_batch(1, |batch| {
                    batch.next(|deltas| (process.take().expect("called once"))(deltas))
                })
                .await;
            match popped {
                None => return Err(PopError::Closed),
                Some((Some(result), _)) => return result,
                // The queue held only keys without deltas (an invariant broken and
                // logged): wait for the next key.
                Some((None, _)) => {}
            }
        }
    }

    /// Like [`pop`](Self::pop) for several keys under one lock: waits for a queued key,
    /// then calls `run` once, under the queue's lock, with a [`PopBatch`] that hands out
    /// the deltas of up to `max` queued keys, one key at a time, in queue order, each
    /// exactly as `pop` would (`pop` is a batch of one). Lets the consumer take its own
    /// locks once per batch rather than once per key. Returns what `run` returns and whether the queue is empty now;
    /// `None` once the queue is closed and empty.
    pub(crate) async fn pop_batch<T>(
        &self,
        max: usize,
        run: impl FnOnce(&mut PopBatch<'_, K>) -> T,
    ) -> Option<(T, bool)> {
        queue_state::pop_batch(&self.shared.state, &self.shared.notify, |state| {
            run(&mut PopBatch {
                fifo: self,
                state,
                left: max.max(1),
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

    /// Whether the initial list has been delivered: every key queued by the first
    /// [`replace`](Self::replace) was popped and processed (without requeue), or an
    /// `add`, `update` or `delete` came before any `replace`.
    pub fn has_synced(&self) -> bool {
        self.lock().has_synced()
    }

    /// How many keys are queued.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no key is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The queued keys, in pop order.
    pub fn list_keys(&self) -> Vec<Arc<ObjectKey>> {
        self.lock()
            .queue
            .iter()
            .map(|queued| Arc::clone(&queued.key))
            .collect()
    }

    /// A copy of the deltas queued for `key` (the objects are shared, not copied).
    pub fn get(&self, key: &ObjectKey) -> Option<Deltas<K>> {
        let state = self.lock();
        let key = key.as_key_ref();
        state.find(state.hash(key), &key).cloned()
    }
}
