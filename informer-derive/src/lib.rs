//! Procedural macros for the `informer` crate.
//!
//! The `#[derive(Informable)]` macro lands here; until then this crate only reserves
//! its place in the workspace so that the library can re-export it.
#![deny(missing_docs)]
