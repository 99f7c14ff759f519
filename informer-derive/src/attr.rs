//! What both derives' attribute parsers share: the key of a nested item, a setting
//! given once, an unknown key reported with a suggestion, an unknown value skipped.

use proc_macro2::TokenStream;
use syn::Token;
use syn::meta::ParseNestedMeta;

use crate::ctxt::Ctxt;
use crate::suggest;

/// The key of a nested meta item as a string (keywords such as `fn` and `crate` too).
pub(crate) fn meta_key(meta: &ParseNestedMeta<'_>) -> String {
    let path = &meta.path;
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// Reports an unknown key of `what`, with the closest of `known` or the list of them.
pub(crate) fn unknown_key(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
    key: &str,
    what: &str,
    known: &[&str],
) {
    let hint = suggest::hint(key, known.iter().copied());
    let expected = if hint.is_empty() {
        format!(
            "; expected one of {}",
            known
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else {
        hint
    };
    cx.error_spanned(
        &meta.path,
        format!("unknown key `{key}` in `{what}`{expected}"),
    );
}

/// Stores a setting, reporting a repeated one.
pub(crate) fn set_once<T>(cx: &Ctxt, meta: &ParseNestedMeta<'_>, slot: &mut Option<T>, value: T) {
    if slot.is_some() {
        cx.error_spanned(&meta.path, format!("`{}` is given twice", meta_key(meta)));
    } else {
        *slot = Some(value);
    }
}

/// Consumes `= value` or `(...)` of an item we do not understand.
pub(crate) fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}
