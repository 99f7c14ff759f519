//! `#[derive(Projection)]`: a struct of the fields a controller reads, made a resource
//! of the original's kind (or a part of one), decoded straight from the JSON and
//! checked against the original type at compile time.
//!
//! - `parse`: the attributes and fields into a [`Projection`];
//! - `decode`: the `Deserialize` impl, which skips every key no field wants;
//! - `check`: the never-called function that reads each field on the original type,
//!   so that rustc reports a misspelt field or a wrong type at the projection's field.
//!
//! The resource (the struct with `metadata`) gets `kube::Resource` with the original's
//! group, version, kind, plural and scope when its metadata is an `ObjectMeta`, else
//! (a metadata type of its own, `CompactMeta`) `Object` with the original as its
//! resource; every projection gets
//! `ProjectionOf<Original>`. Everything is named by absolute path, inside an anonymous
//! `const _: () = { ... };` block: kube's and k8s-openapi's items by their own crates'
//! paths (`::kube::Resource`), which a user of projections depends on anyway (the
//! original is a k8s-openapi type or a kube `CustomResource`), so that rustc's
//! messages name them so rather than by a re-export of ours.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::DeriveInput;

use crate::ctxt::Ctxt;

mod check;
mod decode;
mod parse;

use parse::{Metadata, Projection, Role};

/// `#[derive(Projection)]` on `input`: the generated items, or `compile_error!`s for
/// every mistake found.
pub(crate) fn derive(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(error) => return error.to_compile_error(),
    };
    let cx = Ctxt::new();
    let projection = parse::projection(&cx, &input);
    match (cx.finish(), projection) {
        (None, Some(projection)) => expand(&projection),
        (Some(errors), _) => errors,
        (None, None) => {
            syn::Error::new(Span::call_site(), "#[derive(Projection)] failed").to_compile_error()
        }
    }
}

/// The generated items for a valid projection.
fn expand(projection: &Projection<'_>) -> TokenStream {
    let Projection {
        ident,
        krate,
        original,
        ..
    } = projection;
    let resource = match projection.role {
        Role::Resource(Metadata::Own) => object_impl(projection),
        Role::Resource(_) => resource_impl(projection),
        Role::Part => TokenStream::new(),
    };
    let deserialize = decode::deserialize_impl(projection);
    let check = check::check_fn(projection);
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #krate::projection::ProjectionOf<#original> for #ident {}

            #resource

            #deserialize

            #check
        };
    }
}

/// `kube::Resource` of the original's group, version, kind, plural and scope, with
/// the projection's metadata.
fn resource_impl(projection: &Projection<'_>) -> TokenStream {
    let Projection {
        ident, original, ..
    } = projection;
    let resource = quote!(::kube::Resource);
    let meta = quote!(::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta);
    quote! {
        #[automatically_derived]
        impl #resource for #ident {
            type DynamicType = ();
            type Scope = <#original as #resource>::Scope;

            fn kind(dynamic_type: &()) -> ::std::borrow::Cow<'_, str> {
                <#original as #resource>::kind(dynamic_type)
            }

            fn group(dynamic_type: &()) -> ::std::borrow::Cow<'_, str> {
                <#original as #resource>::group(dynamic_type)
            }

            fn version(dynamic_type: &()) -> ::std::borrow::Cow<'_, str> {
                <#original as #resource>::version(dynamic_type)
            }

            fn plural(dynamic_type: &()) -> ::std::borrow::Cow<'_, str> {
                <#original as #resource>::plural(dynamic_type)
            }

            fn meta(&self) -> &#meta {
                &self.metadata
            }

            fn meta_mut(&mut self) -> &mut #meta {
                &mut self.metadata
            }
        }
    }
}

/// `Object` listed and watched as the original, for a resource whose metadata is a
/// type of its own (not an `ObjectMeta`, so not a `kube::Resource`).
fn object_impl(projection: &Projection<'_>) -> TokenStream {
    let Projection {
        ident,
        krate,
        original,
        fields,
        ..
    } = projection;
    let meta = fields
        .iter()
        .find(|field| field.ident == "metadata")
        .map(|field| field.ty)
        .expect("a resource has a `metadata` field");
    let object = quote!(#krate::object::Object);
    quote! {
        #[automatically_derived]
        impl #object for #ident {
            type Resource = #original;
            type Meta = #meta;

            fn metadata(&self) -> &#meta {
                &self.metadata
            }

            fn metadata_mut(&mut self) -> &mut #meta {
                &mut self.metadata
            }
        }
    }
}

#[cfg(test)]
mod tests;
