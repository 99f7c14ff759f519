//! The compile-time check: a function that is never called, reading each projected
//! field's path on the original type and asking that the projected type can hold
//! what it finds there.
//!
//! The field access is spanned at the projection's field, so rustc reports a field the
//! original lacks there (`no field `nod_name` on type `&PodSpec``, with its "a field
//! with a similar name exists" suggestion), for k8s-openapi types and CRDs' Rust types
//! alike. The type check walks the projection's `Option`, `Vec` and map layers into
//! the original's (an `Option` of the projection steps into the original's only where
//! the original has one; a `Shared` layer is the value it holds, so the walk stays
//! where it is) and ends in `leaf(value).holds::<Projected>()`, whose
//! `ProjectionOf` bound is spanned at the field's type.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use super::parse::{Projection, Shape};

/// The never-called check function.
pub(super) fn check_fn(projection: &Projection<'_>) -> TokenStream {
    let Projection {
        krate,
        original,
        fields,
        ..
    } = projection;
    let runtime = Runtime {
        check: quote!(#krate::projection::__private),
        walk: quote!(#krate::informable::__private),
    };
    let from = Ident::new("original", Span::mixed_site());
    let counter = std::cell::Cell::new(0);
    let fresh = || {
        let n = counter.get();
        counter.set(n + 1);
        Ident::new(&format!("v{n}"), Span::mixed_site())
    };
    let checks = fields.iter().map(|field| {
        let name = field.ident;
        let value = fresh();
        let access = quote_spanned!(name.span()=> &#from.#name);
        let walk = walk(&runtime, &field.shape, &value, &fresh, field.ty.span());
        quote! {
            let #value = #access;
            #walk
        }
    });
    let steps = &runtime.walk;
    quote! {
        #[allow(dead_code, unused_variables, clippy::all)]
        fn __informer_projection_check(#from: &#original) {
            use #steps::{StepInto as _, StepStay as _};
            #(#checks)*
        }
    }
}

/// Where the generated check's names live: the projection derive's runtime, and the
/// step-by-step walk both derives share (named at the informable derive's runtime).
struct Runtime {
    check: TokenStream,
    walk: TokenStream,
}

/// The check of `value` (a reference into the original) against `shape`.
/// Every step is spanned at the field's type (`span`), so that rustc reports a
/// mismatch there.
fn walk(
    runtime: &Runtime,
    shape: &Shape<'_>,
    value: &Ident,
    fresh: &dyn Fn() -> Ident,
    span: Span,
) -> TokenStream {
    // The same variable, located at the field's type: an error about it (not a list,
    // not a map) points there.
    let value = &Ident::new(&value.to_string(), Span::mixed_site().located_at(span));
    match shape {
        Shape::Option(inner) => {
            let next = fresh();
            let body = walk(runtime, inner, &next, fresh, span);
            let steps = &runtime.walk;
            quote_spanned!(span=> (&#steps::Step(#value, #steps::Check)).step(&mut |#next| { #body });)
        }
        Shape::Vec(inner) => {
            let next = fresh();
            let body = walk(runtime, inner, &next, fresh, span);
            let check = &runtime.check;
            quote_spanned!(span=> #check::each(#value, |#next| { #body });)
        }
        Shape::Map(inner) => {
            let next = fresh();
            let body = walk(runtime, inner, &next, fresh, span);
            let check = &runtime.check;
            quote_spanned!(span=> #check::values(#value, |#next| { #body });)
        }
        // The value a `Shared` holds stands where the original's is: the walk goes on
        // with the same value of the original.
        Shape::Shared(inner) => walk(runtime, inner, value, fresh, span),
        Shape::Leaf(ty) => {
            let check = &runtime.check;
            quote_spanned!(ty.span()=> #check::leaf(#value).holds::<#ty>();)
        }
    }
}
