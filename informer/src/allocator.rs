//! What the process's allocator takes: the rounding rule every size estimate of the
//! crate shares (the decoder's, of the objects it decodes; the store's, of what it
//! adds per object; the shared values', of each value stored once), and the count of
//! what one decode allocates, which the decoder opens per object and a shared value
//! opens apart for itself (its bytes belong to no one object). Both live here, on the
//! ground floor, so that neither layer imports the other for them.

use std::cell::Cell;

/// What an allocation of `bytes` takes from glibc's allocator: its size and an
/// 8-byte header rounded up to 16, and at least 32.
pub(crate) fn allocation(bytes: usize) -> usize {
    (bytes + 8).next_multiple_of(16).max(32)
}

thread_local! {
    /// The bytes counted for the value being measured on this thread, or `None` when
    /// no measurement is open (values decoded outside [`measured`] count nowhere).
    static OPEN: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Runs `build`, counting what it allocates (as [`count`] is told) apart from any
/// measurement already open on this thread, which counts none of it: the value and
/// the bytes it was counted.
pub(crate) fn measured<T>(build: impl FnOnce() -> T) -> (T, usize) {
    let outer = OPEN.replace(Some(0));
    let built = build();
    let counted = OPEN.replace(outer).unwrap_or(0);
    (built, counted)
}

/// Counts an allocation of `bytes` into the open measurement, if any.
pub(crate) fn count(bytes: usize) {
    if bytes == 0 {
        return;
    }
    OPEN.with(|open| {
        if let Some(total) = open.get() {
            open.set(Some(total + allocation(bytes)));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_round_as_glibc_does() {
        assert_eq!(allocation(1), 32);
        assert_eq!(allocation(24), 32);
        assert_eq!(allocation(25), 48);
        assert_eq!(allocation(100), 112);
    }

    #[test]
    fn a_measurement_apart_leaves_the_outer_one_untouched() {
        count(100); // no measurement open: counted nowhere
        let (((), inner), outer) = measured(|| {
            count(24);
            let inner = measured(|| count(100));
            count(24);
            inner
        });
        assert_eq!(inner, allocation(100));
        assert_eq!(outer, 2 * allocation(24));
    }
}
