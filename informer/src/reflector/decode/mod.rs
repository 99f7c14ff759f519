//! Decoding the API server's JSON into objects.

mod managed_fields;

pub use managed_fields::ManagedFields;

pub(super) use managed_fields::{Decoded, from_str};
