//! The projection's `Deserialize` impl, written out rather than left to serde's derive:
//! each JSON key is compared exactly with the one key of each projected field, every
//! other value is skipped by the parser unread, and `null`, missing and repeated keys
//! are read as the original type reads them.
//!
//! What the original reads is learnt from its own `Deserialize` once, on the first
//! decode (`__private::Layout::learn`, kept in a `static` of the impl): the key of each
//! field (its `rename`, or the original's key that is the Rust name: `podIP` for
//! `pod_ip`), whether a `null` is `None` there, whether a missing key is an error,
//! whether a repeated one is. The derive passes what it knows of each field: its Rust
//! name, serde's camelCase of it, its `rename`, whether its type is an `Option`.

use proc_macro2::{Literal, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::Ident;
use syn::spanned::Spanned;

use super::parse::{Metadata, Projection, Role, option_inner};

/// `impl Deserialize for Projection`.
pub(super) fn deserialize_impl(projection: &Projection<'_>) -> TokenStream {
    let Projection {
        ident,
        krate,
        original,
        fields,
        role,
        ..
    } = projection;
    let runtime = quote!(#krate::projection::__private);
    let serde = quote!(#runtime::serde);
    let count = Literal::usize_unsuffixed(fields.len());
    let slots: Vec<Ident> = (0..fields.len())
        .map(|i| Ident::new(&format!("field{i}"), Span::mixed_site()))
        .collect();
    let seen: Vec<Ident> = (0..fields.len())
        .map(|i| Ident::new(&format!("seen{i}"), Span::mixed_site()))
        .collect();
    let indexes: Vec<Literal> = (0..fields.len()).map(Literal::usize_unsuffixed).collect();
    let map = Ident::new("map", Span::mixed_site());
    let layout = Ident::new("layout", Span::mixed_site());
    let specs = fields.iter().map(|field| {
        let rust = &field.key.rust;
        let camel = &field.key.camel;
        let rename = match &field.key.rename {
            Some(rename) => quote!(::core::option::Option::Some(#rename)),
            None => quote!(::core::option::Option::None),
        };
        let optional = option_inner(field.ty).is_some();
        quote! {
            #runtime::FieldSpec {
                rust: #rust,
                camel: #camel,
                rename: #rename,
                optional: #optional,
            }
        }
    });
    // Each field is read into an `Option` of the projected type (of the type in the
    // projected `Option`), with whether its key came.
    let declarations = fields
        .iter()
        .zip(&slots)
        .zip(&seen)
        .map(|((field, slot), seen)| {
            let read = option_inner(field.ty).unwrap_or(field.ty);
            quote! {
                let mut #slot: ::core::option::Option<#read> = ::core::option::Option::None;
                let mut #seen = false;
            }
        });
    let reads = fields.iter().zip(&slots).zip(&seen).zip(&indexes).map(
        |(((field, slot), seen), index)| {
            let null_is_none = quote!(#layout.null_is_none(#index));
            let read = match role {
                Role::Resource(Metadata::Slim { annotations }) if field.ident == "metadata" => {
                    quote!(#runtime::SlimMeta::<#annotations>::new(#null_is_none))
                }
                _ => {
                    let read = option_inner(field.ty).unwrap_or(field.ty);
                    quote!(#runtime::Read::<#read>::new(#null_is_none))
                }
            };
            quote! {
                #index => {
                    if #seen && #layout.repeats_refused() {
                        return ::core::result::Result::Err(
                            <__A::Error as #serde::de::Error>::duplicate_field(#layout.key(#index)),
                        );
                    }
                    #seen = true;
                    #slot = #serde::de::MapAccess::next_value_seed(&mut #map, #read)?;
                }
            }
        },
    );
    let values = fields
        .iter()
        .zip(&slots)
        .zip(&seen)
        .zip(&indexes)
        .map(|(((field, slot), seen), index)| {
            let name = field.ident;
            let finish = if option_inner(field.ty).is_some() {
                quote!(optional)
            } else {
                quote!(filled)
            };
            quote!(#name: #runtime::#finish::<_, __A::Error, #count>(#slot, #seen, #layout, #index)?)
        });
    let names: Vec<&str> = fields.iter().map(|f| f.key.display()).collect();
    let struct_name = ident.to_string();
    let original_name = quote::ToTokens::to_token_stream(original)
        .to_string()
        .replace(' ', "");
    let expecting = format!("a {original_name} (projected as {ident})");
    let formatter = Ident::new("formatter", Span::mixed_site());
    let deserializer = Ident::new("deserializer", Span::mixed_site());
    let cell = Ident::new("LAYOUT", Span::mixed_site());
    // Spanned at `of = ...`: an original that is not `Deserialize` is reported there.
    let learn = quote_spanned! {original.span()=>
        #runtime::Layout::<#count>::learn::<#original>
    };
    quote! {
        #[automatically_derived]
        impl<'de> #serde::Deserialize<'de> for #ident {
            fn deserialize<__D: #serde::Deserializer<'de>>(
                #deserializer: __D,
            ) -> ::core::result::Result<Self, __D::Error> {
                static #cell: ::std::sync::OnceLock<#runtime::Layout<#count>> =
                    ::std::sync::OnceLock::new();

                struct __ProjectionVisitor(&'static #runtime::Layout<#count>);

                impl<'de> #serde::de::Visitor<'de> for __ProjectionVisitor {
                    type Value = #ident;

                    fn expecting(
                        &self,
                        #formatter: &mut ::core::fmt::Formatter<'_>,
                    ) -> ::core::fmt::Result {
                        self.0.expecting(#formatter, #expecting)
                    }

                    fn visit_map<__A: #serde::de::MapAccess<'de>>(
                        self,
                        mut #map: __A,
                    ) -> ::core::result::Result<#ident, __A::Error> {
                        let #layout = self.0;
                        #(#declarations)*
                        while let ::core::option::Option::Some(key) =
                            #serde::de::MapAccess::next_key_seed(&mut #map, #runtime::FieldKey(#layout))?
                        {
                            match key {
                                #(#reads)*
                                _ => {
                                    #serde::de::MapAccess::next_value::<#serde::de::IgnoredAny>(&mut #map)?;
                                }
                            }
                        }
                        ::core::result::Result::Ok(#ident {
                            #(#values,)*
                        })
                    }
                }

                let #layout: &'static #runtime::Layout<#count> = #cell.get_or_init(|| {
                    #learn(&[#(#specs),*], #struct_name, #original_name)
                });
                if let ::core::option::Option::Some(problem) = #layout.problem() {
                    return ::core::result::Result::Err(
                        <__D::Error as #serde::de::Error>::custom(problem),
                    );
                }
                #serde::Deserializer::deserialize_struct(
                    #deserializer,
                    #struct_name,
                    &[#(#names),*],
                    __ProjectionVisitor(#layout),
                )
            }
        }
    }
}
