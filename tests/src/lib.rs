//! Integration tests live in `tests/`; they run against a real local control plane.
//!
//! The library holds what the replica binaries of the multi-process tests share
//! ([`replica`]).

pub mod replica;
