//! What an informer's cache holds: [`SharedIndexInformer::cache_size`], and the
//! budget that warns when it grows past a limit ([`SharedIndexInformer::set_cache_budget`]).

use crate::reflector::source::Budget;
use crate::store::per_object_overhead;

use super::SharedIndexInformer;

/// An informer's cache: its objects, and an estimate of the bytes they hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheSize {
    /// Objects in the cache.
    pub objects: usize,
    /// Estimated bytes: the objects times the mean estimated size of the objects the
    /// informer decoded lately (each measured while it was decoded: its strings,
    /// vectors and maps, rounded as glibc's allocator rounds them, and its `Arc`),
    /// plus the store's own cost per object (key, slot, namespace index). `None` when
    /// the informer's source does not measure what it decodes (a `FakeSource`, a
    /// `ListWatch`), or before it decoded anything.
    pub bytes: Option<u64>,
}

impl<K: 'static> SharedIndexInformer<K> {
    /// What the cache holds now: objects, and an estimate of their bytes (see
    /// [`CacheSize::bytes`]; benchmark scenario 15 compares it with the process's
    /// resident memory). Also the metrics `informer_cache_objects` and
    /// `informer_cache_bytes`.
    pub fn cache_size(&self) -> CacheSize {
        let objects = self.inner.indexer.len();
        let mean = self
            .inner
            .capabilities
            .decoded_sizes
            .as_ref()
            .and_then(|sizes| sizes.mean_bytes());
        CacheSize {
            objects,
            bytes: mean.map(|mean| objects as u64 * (mean + per_object_overhead())),
        }
    }

    /// Warns (once, at warn level, until the cache falls back below 90% of it) when
    /// the cache is estimated to hold more than `bytes`, naming `informer` and
    /// suggesting a projection or a metadata-only informer. Nothing is ever dropped:
    /// the cache must hold what the server has. `None` removes the budget. Checked
    /// as objects are decoded; without a source that measures them (see
    /// [`CacheSize::bytes`]) there is nothing to check.
    pub fn set_cache_budget(&self, informer: impl Into<String>, bytes: Option<u64>) {
        if let Some(sizes) = &self.inner.capabilities.decoded_sizes {
            sizes.set_budget(bytes.map(|bytes| Budget {
                bytes,
                informer: informer.into(),
                per_object: per_object_overhead(),
                warned: false,
            }));
        }
    }
}
