//! What the process's allocator takes for one allocation: the rounding rule every size
//! estimate of the crate shares (the decoder's, of the objects it decodes, and the
//! store's, of what it adds per object), so neither layer imports the other for it.

/// What an allocation of `bytes` takes from glibc's allocator: its size and an
/// 8-byte header rounded up to 16, and at least 32.
pub(crate) fn allocation(bytes: usize) -> usize {
    (bytes + 8).next_multiple_of(16).max(32)
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
}
