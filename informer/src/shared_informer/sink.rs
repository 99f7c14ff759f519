//! The informer's side of the reflector: a [`ReflectorStore`] that transforms each
//! decoded object, puts it in its one `Arc`, and queues it in the informer's queue.

use std::sync::Arc;

use crate::object::{Meta, Object};

use super::config::Transform;
use super::queue::Queue;
use super::sync::SyncSignal;
use crate::consistency::Tracker;
use crate::key::ObjectKey;
use crate::reflector::{CachedObjects, ReflectorStore};
use crate::store::{Indexer, NAMESPACE_INDEX};

/// The reflector's store: applies the transform, then queues deltas.
pub(super) struct QueueSink<K> {
    pub(super) queue: Queue<K>,
    pub(super) transform: Option<Transform<K>>,
    /// The cache, offered to relists: objects listed unchanged are taken from it.
    pub(super) indexer: Indexer<K>,
    /// Announces a sync that needs no pop: a first list with no objects.
    pub(super) sync_signal: Arc<SyncSignal>,
    /// Notes the version of everything queued, for the cache's points.
    pub(super) tracker: Arc<Tracker>,
}

impl<K: Object + Send + Sync + 'static> QueueSink<K> {
    /// The object as it will be stored: transformed, in an `Arc`. A transform that
    /// panics is contained: the object is reported and skipped, the informer goes on.
    fn prepare(&self, object: K) -> Option<Arc<K>> {
        let Some(transform) = &self.transform else {
            return Some(Arc::new(object));
        };
        // Named before the object moves into the transform, for the report.
        let key = ObjectKey::of(&object);
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| transform(object))) {
            Ok(object) => Some(Arc::new(object)),
            Err(panic) => {
                tracing::error!(
                    %key,
                    panic = crate::panic::message(panic.as_ref()),
                    "transform panicked; the object is skipped"
                );
                None
            }
        }
    }
}

impl<K: Object + Send + Sync + 'static> QueueSink<K> {
    /// Queues a tombstone for the object named `key` if the cache holds it, or a watch
    /// brought it and it waits in the queue (with its newest state either way), as a
    /// relist would for an object it no longer lists; whether there was one.
    fn evict(&self, key: &ObjectKey) -> bool {
        // The cache is keyed by the informer's key function, which need not be
        // `namespace/name`: look the name up, and check that what was found is it.
        let named = |object: &Arc<K>| {
            let meta = object.metadata();
            meta.name() == Some(key.name.as_str()) && meta.namespace() == key.namespace.as_deref()
        };
        // The queue first, then the cache: a change this sink queued for the key is
        // either still queued, or applied (the queue waits for a batch being applied),
        // and nothing else queues, so an object moving from one to the other between
        // the two looks is found in the second. (The other order could miss it.)
        let queued = self.queue.newest_queued(key).filter(named);
        let by_name = self.indexer.keyed_by_name();
        let cached = || {
            self.indexer.get(key).filter(named).or_else(|| {
                if by_name {
                    // Keyed by name: what the key does not find is not there.
                    return None;
                }
                let namespace = key.namespace.as_deref().unwrap_or_default();
                let candidates = match self.indexer.by_index(NAMESPACE_INDEX, namespace) {
                    Ok(in_namespace) if key.namespace.is_some() => in_namespace,
                    _ => self.indexer.list(),
                };
                candidates.into_iter().find(named)
            })
        };
        // Queued is found by key where the key function is `namespace/name`, the
        // default.
        let Some(last_known) = queued.or_else(cached) else {
            return false;
        };
        self.queue.delete_stale(last_known);
        true
    }

    /// Queues a watch event's object with `queue`, noting its version.
    fn queue_event(&self, object: K, queue: impl FnOnce(&Queue<K>, Arc<K>)) {
        if let Some(object) = self.prepare(object) {
            let mut marking = self.tracker.marking();
            marking.note(object.metadata().resource_version());
            queue(&self.queue, object);
        }
    }
}

impl<K: Object + Send + Sync + 'static> ReflectorStore<K> for QueueSink<K> {
    fn add(&self, object: K) {
        self.queue_event(object, Queue::add);
    }
    fn update(&self, object: K) {
        self.queue_event(object, Queue::update);
    }
    fn delete(&self, object: K) {
        self.queue_event(object, Queue::delete);
    }
    fn replace(&self, mut objects: Vec<K>, unchanged: Vec<Arc<K>>, resource_version: &str) {
        // Each object moves into its `Arc` in list order (popped from the end of the
        // reversed list), and the list hands its memory back as it empties, so a large
        // list is never held both as the decoded `Vec<K>` and as the `Arc`s. Unchanged
        // objects are the cache's own, already transformed.
        objects.reverse();
        let mut prepared = Vec::with_capacity(objects.len() + unchanged.len());
        while let Some(object) = objects.pop() {
            prepared.extend(self.prepare(object));
            if objects.capacity() > 1024 && objects.len() < objects.capacity() / 2 {
                objects.shrink_to_fit();
            }
        }
        prepared.extend(unchanged);
        let mut marking = self.tracker.marking();
        marking.note(Some(resource_version));
        self.queue.replace(prepared, resource_version);
        drop(marking);
        if self.queue.has_synced() {
            self.sync_signal.announce();
        }
    }
    fn resync(&self) {
        self.queue.resync();
    }
    fn forget(&self, key: &ObjectKey) {
        if self.evict(key) {
            tracing::warn!(
                %key,
                "a newer state of this object does not decode: it leaves the cache until it does"
            );
        }
    }
    fn left_filter(&self, key: &ObjectKey) {
        if self.evict(key) {
            tracing::debug!(%key, "this object's new state is not this cache's to keep: it leaves the cache");
        }
    }
    fn progressed(&self, resource_version: &str) {
        self.tracker.progressed(resource_version);
    }
    fn cached_objects(&self) -> Option<Arc<dyn CachedObjects<K>>> {
        // Nothing to reuse on the first list: decode it directly.
        (!self.indexer.is_empty()).then(|| Arc::new(self.indexer.clone()) as _)
    }
}
