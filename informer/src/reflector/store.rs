//! Where a reflector writes what it learns: client-go's `Store` interface, typed.
//!
//! The DeltaFIFO implements it (queueing deltas for an informer), and so can anything
//! else that wants to mirror the server: a plain cache, a test recorder.

use std::sync::Arc;

use crate::cached::CachedObjects;
use crate::key::ObjectKey;

/// The writes a reflector makes. Objects arrive owned, fresh from decoding, so the
/// store decides how to hold them (usually in an `Arc`) without a copy.
pub trait ReflectorStore<K>: Send + Sync {
    /// A watch reported the object as created.
    fn add(&self, object: K);
    /// A watch reported the object as changed.
    fn update(&self, object: K);
    /// A watch reported the object as deleted; this is its last state.
    fn delete(&self, object: K);
    /// A (re)list: the complete current collection at `resource_version`, `objects`
    /// as decoded and `unchanged` as the store's own copies (see
    /// [`cached_objects`](Self::cached_objects)). Objects the store knows but the list
    /// lacks were deleted while nobody watched.
    fn replace(&self, objects: Vec<K>, unchanged: Vec<Arc<K>>, resource_version: &str);
    /// The resync timer fired: re-deliver what is known, so handlers can reconcile.
    fn resync(&self);
    /// What the store holds, for a relist to reuse: objects listed at the same
    /// resourceVersion come back in `replace`'s `unchanged` instead of decoded again.
    /// `None` (the default) when the store offers nothing, or holds nothing yet.
    fn cached_objects(&self) -> Option<Arc<dyn CachedObjects<K>>> {
        None
    }
    /// A watch event for the object named `key` (`namespace/name`) did not decode (its
    /// schema drifted from `K`, say): the store must stop holding what it holds under
    /// that name, so that it keeps agreeing with what a fresh list would give, which
    /// skips the object. It comes back as an add once it decodes again. The default
    /// does nothing.
    fn forget(&self, key: &ObjectKey) {
        let _ = key;
    }
    /// A watch event says the object named `key` (`namespace/name`) now is, or was when
    /// deleted, in a state the key filter does not keep (say its controller reference
    /// moved to an owner in another member's shard): the store must stop holding what
    /// it holds under that name, as a relist would drop it. Only watches whose events
    /// carry the key say so (an [`ApiListerWatcher`](super::source::ApiListerWatcher)'s do).
    /// The default does nothing.
    fn left_filter(&self, key: &ObjectKey) {
        let _ = key;
    }
    /// The watch reached `resource_version` without a change for the store: a
    /// bookmark, or an event about an object the key filter does not keep. What the
    /// store holds is now the collection as of that version (once it has applied what
    /// came before). The default does nothing; an informer notes it for its
    /// consistency checks.
    fn progressed(&self, resource_version: &str) {
        let _ = resource_version;
    }
}
