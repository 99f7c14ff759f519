//! `#[derive(Informable)]`: typed keys and named, typed indexes.
//!
//! - [`parse`]: attribute syntax into a plain description of what was asked
//!   ([`ast`]);
//! - [`validate`]: checks it (names, [paths](path), sources) and resolves the resource
//!   type, the field paths and the key types;
//! - [`expand`]: generates the code.

pub(crate) mod ast;
pub(crate) mod expand;
pub(crate) mod parse;
pub(crate) mod path;
pub(crate) mod validate;

#[cfg(test)]
mod tests;

pub(crate) use expand::derive;
