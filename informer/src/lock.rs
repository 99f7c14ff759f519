//! The crate's one lock-poisoning policy: a poisoned lock is used as it is.
//!
//! A std lock is poisoned when a thread panics while holding it. Under this crate's
//! locks run two kinds of code: ours, which leaves each structure consistent at every
//! point where it could panic, and the user's (an index or key function under the
//! store's write lock, a metrics hook, a rate limiter), whose panic is the user's bug
//! but must not turn every later read of the cache, every handler registration and
//! every worker into a panic too. So every lock is taken through these methods, which
//! ignore poisoning, as Go (whose client-go we follow) has none. Tests may still
//! `unwrap` their own locks.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// [`Mutex::lock`] under the crate's policy.
pub(crate) trait MutexExt<T: ?Sized> {
    /// Locks, taking over a poisoned lock as it is.
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T: ?Sized> MutexExt<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// [`RwLock::read`] and [`RwLock::write`] under the crate's policy.
pub(crate) trait RwLockExt<T: ?Sized> {
    /// Read-locks, taking over a poisoned lock as it is.
    fn read_locked(&self) -> RwLockReadGuard<'_, T>;
    /// Write-locks, taking over a poisoned lock as it is.
    fn write_locked(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T: ?Sized> RwLockExt<T> for RwLock<T> {
    fn read_locked(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_locked(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Mutex, RwLock};

    use super::{MutexExt, RwLockExt};

    #[test]
    fn a_lock_poisoned_by_a_panic_is_still_usable() {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let mutex = Mutex::new(1);
        let rwlock = RwLock::new(1);
        let _ = std::panic::catch_unwind(|| {
            let _guard = mutex.lock().unwrap();
            panic!("poisons the mutex");
        });
        let _ = std::panic::catch_unwind(|| {
            let _guard = rwlock.write().unwrap();
            panic!("poisons the rwlock");
        });
        std::panic::set_hook(previous);
        assert!(mutex.is_poisoned() && rwlock.is_poisoned());
        *mutex.locked() += 1;
        *rwlock.write_locked() += 1;
        assert_eq!((*mutex.locked(), *rwlock.read_locked()), (2, 2));
    }
}
