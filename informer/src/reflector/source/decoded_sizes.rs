//! What the objects an [`ApiListerWatcher`](super::ApiListerWatcher) decodes weigh in
//! memory, and how many the collection holds: the figures behind an informer's
//! [`cache_size`](crate::shared_informer::SharedIndexInformer::cache_size), and its
//! optional budget.
//!
//! Each object is measured while it is decoded (see `decode/size.rs`: the strings,
//! vectors and maps serde builds for it, each rounded as glibc's allocator rounds it,
//! and the `Arc` the cache holds it in). A running mean of those sizes, over every
//! object decoded up to the first [`WINDOW`] and then weighted towards the last
//! [`WINDOW`] or so, times the objects in the cache, is the cache's estimate: exact for
//! a cache of one list of alike objects, and following a cache whose objects change
//! shape within a few thousand decodes. The per-object cost of the store itself is
//! added by the informer.

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::lock::MutexExt;

/// How many recent decodes the mean weighs, once there were that many.
const WINDOW: u64 = 10_000;

/// The decoded objects' sizes, and the collection's size as the lists and watches
/// tell it; shared by a lister-watcher and the informer that reads it
/// ([`Capabilities::decoded_sizes`](super::Capabilities#structfield.decoded_sizes)).
#[derive(Debug, Default)]
pub struct DecodedSizes {
    decoded: AtomicU64,
    /// The mean size in bytes, as `f64` bits.
    mean: AtomicU64,
    /// Objects in the collection: the last complete list's, plus the watches' adds
    /// and minus their deletes.
    objects: AtomicI64,
    /// Objects of the list being read, page by page.
    listing: AtomicI64,
    budget: Mutex<Option<Budget>>,
}

/// A limit on the bytes one informer's cache should hold.
#[derive(Debug, Clone)]
pub(crate) struct Budget {
    /// The limit in bytes.
    pub(crate) bytes: u64,
    /// The informer, as the warning names it.
    pub(crate) informer: String,
    /// What the store adds to each object (its key, its slot, its namespace index).
    pub(crate) per_object: u64,
    /// Whether the warning was given and the cache has not gone below 90% since.
    pub(crate) warned: bool,
}

impl DecodedSizes {
    /// The mean estimated size of a decoded object in bytes; `None` before any.
    pub fn mean_bytes(&self) -> Option<u64> {
        (self.decoded.load(Ordering::Relaxed) > 0)
            .then(|| f64::from_bits(self.mean.load(Ordering::Relaxed)).round() as u64)
    }

    /// How many objects were decoded and measured.
    pub fn decoded(&self) -> u64 {
        self.decoded.load(Ordering::Relaxed)
    }

    /// Adds one decoded object of `bytes`. Called by the one task that decodes.
    pub(crate) fn record(&self, bytes: usize) {
        let decoded = self.decoded.fetch_add(1, Ordering::Relaxed) + 1;
        let mean = f64::from_bits(self.mean.load(Ordering::Relaxed));
        let weight = decoded.min(WINDOW) as f64;
        let mean = mean + (bytes as f64 - mean) / weight;
        self.mean.store(mean.to_bits(), Ordering::Relaxed);
        if decoded.is_multiple_of(256) {
            self.check_budget();
        }
    }

    /// A list starts (its first page is asked for, or a streaming list begins).
    pub(crate) fn list_started(&self) {
        self.listing.store(0, Ordering::Relaxed);
    }

    /// A page of a list held `objects` objects (decoded or reused).
    pub(crate) fn list_page(&self, objects: usize) {
        self.listing.fetch_add(objects as i64, Ordering::Relaxed);
    }

    /// The list is complete: its objects are the collection.
    pub(crate) fn list_finished(&self) {
        let listed = self.listing.load(Ordering::Relaxed);
        self.objects.store(listed, Ordering::Relaxed);
        self.check_budget();
    }

    /// A watch added an object (a streaming list's initial objects come so too).
    pub(crate) fn watch_added(&self) {
        self.objects.fetch_add(1, Ordering::Relaxed);
        self.listing.fetch_add(1, Ordering::Relaxed);
    }

    /// A watch deleted an object.
    pub(crate) fn watch_deleted(&self) {
        self.objects.fetch_sub(1, Ordering::Relaxed);
    }

    /// The collection as the lists and watches told it.
    fn objects(&self) -> u64 {
        self.objects.load(Ordering::Relaxed).max(0) as u64
    }

    /// Sets (or with `None` clears) the cache's budget, checked at once.
    pub(crate) fn set_budget(&self, budget: Option<Budget>) {
        *self.budget.locked() = budget;
        self.check_budget();
    }

    /// Warns once when the cache is estimated past its budget, again only after it
    /// went back below 90% of it. Nothing is dropped: the cache must hold what the
    /// server has.
    fn check_budget(&self) {
        let mut budget = self.budget.locked();
        let Some(budget) = budget.as_mut() else {
            return;
        };
        let Some(mean) = self.mean_bytes() else {
            return;
        };
        let objects = self.objects();
        let per_object = mean + budget.per_object;
        let bytes = objects * per_object;
        if bytes > budget.bytes && !budget.warned {
            budget.warned = true;
            tracing::warn!(
                informer = %budget.informer,
                objects,
                estimated_bytes = bytes,
                budget_bytes = budget.bytes,
                "informer {} caches about {} ({objects} objects at about {} each), past its \
                 budget of {}: cache only the fields its controllers read with a projection \
                 (#[derive(Projection)], informer::projection), or only metadata with a \
                 metadata-only informer (SharedInformerFactory::metadata_informer); nothing \
                 is dropped from the cache",
                budget.informer,
                human(bytes),
                human(per_object),
                human(budget.bytes),
            );
        } else if bytes * 10 < budget.bytes * 9 {
            budget.warned = false;
        }
    }
}

/// `bytes` for people: `45.2 KB`, `1.3 GiB`.
fn human(bytes: u64) -> String {
    const UNITS: [(&str, f64); 3] = [
        ("GiB", 1024.0 * 1024.0 * 1024.0),
        ("MiB", 1024.0 * 1024.0),
        ("KB", 1000.0),
    ];
    let value = bytes as f64;
    UNITS
        .iter()
        .find(|(_, size)| value >= *size)
        .map(|(unit, size)| format!("{:.1} {unit}", value / size))
        .unwrap_or_else(|| format!("{bytes} bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_is_exact_up_to_the_window_then_follows_recent_objects() {
        let sizes = DecodedSizes::default();
        assert_eq!(sizes.mean_bytes(), None);
        for bytes in [100, 200, 300] {
            sizes.record(bytes);
        }
        assert_eq!(sizes.mean_bytes(), Some(200));
        for _ in 0..WINDOW * 5 {
            sizes.record(1000);
        }
        // Five windows of 1000-byte objects later, the old ones weigh almost nothing.
        assert!(sizes.mean_bytes().unwrap() > 990);
        assert_eq!(sizes.decoded(), WINDOW * 5 + 3);
    }

    #[test]
    fn the_collection_is_the_last_list_plus_adds_minus_deletes() {
        let sizes = DecodedSizes::default();
        sizes.list_started();
        sizes.list_page(500);
        sizes.list_page(200);
        // Not complete yet: the previous count stands.
        assert_eq!(sizes.objects(), 0);
        sizes.list_finished();
        assert_eq!(sizes.objects(), 700);
        sizes.watch_added();
        sizes.watch_deleted();
        sizes.watch_deleted();
        assert_eq!(sizes.objects(), 699);
        // A streaming list counts its initial objects as adds.
        sizes.list_started();
        sizes.watch_added();
        sizes.list_finished();
        assert_eq!(sizes.objects(), 1);
    }

    #[test]
    fn the_budget_warns_once_until_the_cache_shrinks_below_ninety_percent() {
        let sizes = DecodedSizes::default();
        sizes.record(1000);
        sizes.list_started();
        sizes.list_page(10);
        sizes.list_finished();
        let budget = |bytes| Budget {
            bytes,
            informer: "Pod".into(),
            per_object: 0,
            warned: false,
        };
        let warned = |sizes: &DecodedSizes| sizes.budget.locked().as_ref().unwrap().warned;
        sizes.set_budget(Some(budget(20_000)));
        assert!(!warned(&sizes));
        sizes.set_budget(Some(budget(5_000)));
        assert!(warned(&sizes));
        // Still past it: no second warning, the flag stays.
        sizes.list_finished();
        assert!(warned(&sizes));
        for _ in 0..6 {
            sizes.watch_deleted();
        }
        sizes.list_started();
        sizes.list_page(4);
        sizes.list_finished();
        assert!(
            !warned(&sizes),
            "4 objects of 1000 bytes are below 90% of 5000"
        );
        assert_eq!(human(45_218), "45.2 KB");
        assert_eq!(human(3 * 1024 * 1024 * 1024), "3.0 GiB");
        assert_eq!(human(12), "12 bytes");
    }
}
