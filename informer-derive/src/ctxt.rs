//! The error accumulator: every attribute mistake is recorded with its span and
//! reported at once, instead of stopping at the first.

use std::cell::RefCell;
use std::fmt::Display;

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

/// Collects errors while the input is parsed and validated.
///
/// Parsing and validation keep going after a mistake (dropping only the part that is
/// wrong), so one compilation shows every error. [`Ctxt::finish`] hands the errors out.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Records `message` at `span`.
    pub(crate) fn error(&self, span: Span, message: impl Display) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new(span, message));
    }

    /// Records `message` spanning all of `tokens`.
    pub(crate) fn error_spanned(&self, tokens: impl ToTokens, message: impl Display) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new_spanned(tokens, message));
    }

    /// Records a parse error.
    pub(crate) fn syn_error(&self, error: syn::Error) {
        self.errors.borrow_mut().push(error);
    }

    /// The errors as `compile_error!` invocations, or `None` when there were none.
    pub(crate) fn finish(self) -> Option<TokenStream> {
        let errors = self.errors.into_inner();
        if errors.is_empty() {
            return None;
        }
        Some(errors.iter().map(syn::Error::to_compile_error).collect())
    }

    /// The recorded messages (for tests).
    #[cfg(test)]
    pub(crate) fn messages(&self) -> Vec<String> {
        self.errors
            .borrow()
            .iter()
            .map(ToString::to_string)
            .collect()
    }
}
