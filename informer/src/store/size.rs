//! What the store itself adds to each cached object, beside the object: its slot,
//! its entry in the key map, its key (an `Arc<ObjectKey>` with a namespace and a
//! name) and its id in the namespace index. Added to the decoded objects' estimate
//! ([`DecodedSizes`](crate::reflector::source::DecodedSizes)) for an informer's cache size.

use std::sync::Arc;

use super::state::Slot;
use crate::allocator::allocation;
use crate::key::ObjectKey;

/// The store's bytes per object: the slot in the slab, the key map's entry (at
/// hashbrown's 7/8 load, with its control byte), the key's `Arc` and its two
/// strings (namespace and name, each under 24 bytes as most are), and a 4-byte id in
/// the namespace index (its sets grown by doubling: 8 bytes on average).
pub(crate) fn per_object_overhead() -> u64 {
    let slot = size_of::<Option<Slot<()>>>();
    let map_entry = (size_of::<(Arc<ObjectKey>, u32)>() + 1) * 8 / 7;
    let key = allocation(2 * size_of::<usize>() + size_of::<ObjectKey>()) + 2 * allocation(24);
    let namespace_index = 8;
    (slot + map_entry + key + namespace_index) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overhead_counts_slot_entry_key_and_index() {
        // 24 (slot) + 19 (entry) + 80 + 2 x 32 (key) + 8 (index).
        assert_eq!(per_object_overhead(), 24 + 19 + 80 + 64 + 8);
    }
}
