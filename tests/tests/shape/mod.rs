//! Reading the library's module tree and checking its shape.
#![allow(unreachable_pub)]

pub mod layers;
pub mod paths;
pub mod tree;
