//! Decoding the API server's JSON into objects, one object at a time.
//!
//! The reflector does not let `kube` decode its responses: each list item and each
//! watch event is decoded on its own, so that an object that does not fit the Rust type
//! becomes one reported error, never one that fails the whole list or stream.
//!
//! - [`managed_fields`]: the serde adapter every object goes through, which drops
//!   `metadata.managedFields` ([`ManagedFields`]) and sizes vectors exactly;
//! - [`object`]: one object, or the [`DecodeError`](crate::reflector::DecodeError) naming it;
//! - [`list`]: a list response, decoded as it streams in;
//! - [`event`]: one event of a watch stream;
//! - [`size`]: what a decoded object holds in memory, estimated as it is decoded.

mod event;
mod list;
mod managed_fields;
mod object;
mod size;

pub use managed_fields::ManagedFields;
pub use object::decode_measured;

pub(super) use event::decode_event;
pub(super) use list::{ListDecoder, decode_list_stream};
pub(crate) use managed_fields::KeyText;
pub(super) use object::RawHeader;
pub(super) use size::last as last_decoded_size;
