//! Compile-fail tests of `#[derive(Informable)]` and the typed queries: each
//! `ui/*.rs` is one misuse, named after the mistake, and its `.stderr` holds the
//! diagnostics it must produce.
//!
//! The `.stderr` files are for the toolchain this machine pins, rustc 1.95.0: other
//! compilers word and place diagnostics differently. After a deliberate change to the
//! messages, or on a new toolchain, regenerate them with
//! `TRYBUILD=overwrite cargo test -p informer-tests --test ui` and review the diff.

#[test]
fn misuses_of_the_derive_do_not_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
