//! [`InformerError`]: what an informer operation can fail with.

use crate::store::StoreError;

/// Errors of informer operations.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InformerError {
    /// `run` was called a second time.
    #[error("the informer was already started")]
    AlreadyStarted,
    /// The informer has stopped; it takes no more handlers.
    #[error("the informer has stopped")]
    Stopped,
    /// A setting that can only change before start was changed after.
    #[error("{0} can only be set before the informer starts")]
    SetAfterStart(&'static str),
    /// Adding indexes failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[cfg(test)]
mod tests {
    use super::InformerError;
    use crate::store::StoreError;

    #[test]
    fn a_store_error_is_shown_as_it_is() {
        let error = InformerError::from(StoreError::IndexConflict("by-owner".to_owned()));
        assert_eq!(error.to_string(), r#"index "by-owner" already exists"#);
    }
}
