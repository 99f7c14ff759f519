//! The tables behind [`Shared`](super::Shared): one per value type, each value in it
//! once, held by its handles and gone with the last of them.
//!
//! A table holds a `Weak` to each value's entry (beside its hash, which a dead `Weak`
//! can no longer give), in 16 shards picked by the hash, each a hashbrown table under
//! its own mutex. Interning looks the value up under its shard's lock and hands out
//! a strong reference to the entry found, or inserts a new one. When the last handle
//! goes, the entry's own `Drop` (the value still in place, its strong count already
//! zero) takes the shard's lock and removes a dead `Weak` of that hash; an intern
//! racing with it sees the `Weak` dead (it cannot be upgraded) and inserts anew, so a
//! value is never handed out after its last handle went, and no dead slot outlives
//! its entry's `Drop`.
//!
//! One rule keeps the locks free of deadlock: an entry is never dropped with its own
//! shard's lock held (its `Drop` takes that lock). The strong references that
//! interning takes to compare a candidate are dropped after the lock is released.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock, Weak};

use hashbrown::HashTable;

use crate::allocator::allocation;
use crate::lock::{MutexExt, RwLockExt};

/// How many shards a table has: enough that two decoding threads rarely meet.
const SHARDS: usize = 16;

/// One stored value and what its last handle needs to remove it.
pub(super) struct Entry<T: Eq + Hash + Send + Sync + 'static> {
    pub(super) value: T,
    hash: u64,
    /// The bytes counted for this entry in [`usage`].
    pub(super) bytes: u64,
}

impl<T: Eq + Hash + Send + Sync + 'static> Drop for Entry<T> {
    fn drop(&mut self) {
        // Our strong count is zero, so our `Weak` in the table is dead; a dead one of
        // the same hash is ours or another's whose `Drop` is on its way (and will
        // remove ours): either way one goes per dropped entry.
        //
        // The table is found again rather than pointed to: a pointer to its mutexes
        // would make every `Shared` look mutable to clippy's `mutable_key_type`, in
        // users' maps and sets too.
        let dead = Table::<T>::get().shard(self.hash).remove_dead(self.hash);
        debug_assert!(dead.is_some(), "a shared value's slot was removed twice");
        VALUES.fetch_sub(1, Ordering::Relaxed);
        BYTES.fetch_sub(self.bytes, Ordering::Relaxed);
        drop(dead);
    }
}

/// The values of one type.
pub(super) struct Table<T: Eq + Hash + Send + Sync + 'static> {
    hasher: foldhash::fast::RandomState,
    shards: [Mutex<Shard<T>>; SHARDS],
}

/// One shard: `(hash, entry)` pairs.
struct Shard<T: Eq + Hash + Send + Sync + 'static> {
    slots: HashTable<(u64, Weak<Entry<T>>)>,
}

impl<T: Eq + Hash + Send + Sync + 'static> Shard<T> {
    fn remove_dead(&mut self, hash: u64) -> Option<Weak<Entry<T>>> {
        let found = self
            .slots
            .find_entry(hash, |(h, weak)| *h == hash && weak.strong_count() == 0)
            .ok()?;
        Some(found.remove().0.1)
    }
}

/// Distinct values stored, of every type, and the bytes counted for them.
static VALUES: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

/// The number of distinct shared values alive in the process, and their bytes.
pub(super) fn usage() -> (u64, u64) {
    (
        VALUES.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed),
    )
}

impl<T: Eq + Hash + Send + Sync + 'static> Table<T> {
    /// The table of `T`, made on first use and kept for the process.
    pub(super) fn get() -> &'static Self {
        let any = registered(TypeId::of::<T>(), || {
            let table: &'static Table<T> = Box::leak(Box::new(Table {
                hasher: foldhash::fast::RandomState::default(),
                shards: std::array::from_fn(|_| {
                    Mutex::new(Shard {
                        slots: HashTable::new(),
                    })
                }),
            }));
            table
        });
        any.downcast_ref::<Table<T>>()
            .expect("the registry holds the table of the type it is keyed by")
    }

    fn shard(&self, hash: u64) -> MutexGuard<'_, Shard<T>> {
        // The middle bits: hashbrown reads the top 7 and the low ones.
        let index = (hash >> 32) as usize % SHARDS;
        self.shards[index].locked()
    }

    /// The entry of `value`: the one stored, or a new one holding `value`, which
    /// decoding counted `measured` bytes for (its own allocations).
    pub(super) fn intern(&self, value: T, measured: usize) -> Arc<Entry<T>> {
        let hash = self.hasher.hash_one(&value);
        // Candidates of the same hash that are another value: dropped after the lock
        // (see the module's rule).
        let mut others: Vec<Arc<Entry<T>>> = Vec::new();
        let mut found = None;
        let mut shard = self.shard(hash);
        shard.slots.find(hash, |(h, weak)| {
            if *h != hash || found.is_some() {
                return false;
            }
            match weak.upgrade() {
                Some(entry) if entry.value == value => {
                    found = Some(entry);
                    true
                }
                Some(entry) => {
                    others.push(entry);
                    false
                }
                None => false,
            }
        });
        if let Some(entry) = found {
            drop(shard);
            drop(others);
            return entry;
        }
        let bytes = entry_bytes::<T>() + measured as u64;
        let entry = Arc::new(Entry { value, hash, bytes });
        let hasher = |(h, _): &(u64, Weak<Entry<T>>)| *h;
        shard
            .slots
            .insert_unique(hash, (hash, Arc::downgrade(&entry)), hasher);
        VALUES.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(bytes, Ordering::Relaxed);
        drop(shard);
        drop(others);
        entry
    }

    /// The distinct values of `T` stored now (for tests).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.locked().slots.len())
            .sum()
    }
}

/// What an entry takes beside its value's own allocations: the `Arc`'s allocation
/// (two counters, the entry) and its table slot at hashbrown's 7/8 load, with its
/// control byte.
fn entry_bytes<T: Eq + Hash + Send + Sync + 'static>() -> u64 {
    let arc = allocation(2 * size_of::<usize>() + size_of::<Entry<T>>());
    let slot = (size_of::<(u64, Weak<Entry<T>>)>() + 1) * 8 / 7;
    (arc + slot) as u64
}

type Registered = &'static (dyn Any + Send + Sync);

/// The tables by value type: a process-wide map, with a per-thread copy in front of
/// it so that a decode finds its table without taking a lock.
fn registered(id: TypeId, make: impl FnOnce() -> Registered) -> Registered {
    thread_local! {
        static SEEN: RefCell<HashMap<TypeId, Registered>> = RefCell::new(HashMap::new());
    }
    static ALL: OnceLock<RwLock<HashMap<TypeId, Registered>>> = OnceLock::new();
    let lookup = || {
        let all = ALL.get_or_init(Default::default);
        let known = all.read_locked().get(&id).copied();
        known.unwrap_or_else(|| *all.write_locked().entry(id).or_insert_with(make))
    };
    // A thread whose locals are gone (a value dropped as it exits) asks the map.
    match SEEN.try_with(|seen| seen.borrow().get(&id).copied()) {
        Ok(Some(table)) => table,
        Ok(None) => {
            let table = lookup();
            let _ = SEEN.try_with(|seen| seen.borrow_mut().insert(id, table));
            table
        }
        Err(_) => lookup(),
    }
}
