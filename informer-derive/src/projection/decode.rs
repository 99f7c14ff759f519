//! The projection's `Deserialize` impl, written out rather than left to serde's derive:
//! JSON keys are matched to fields by their Kubernetes names (camelCase, initialisms
//! in capitals) without allocating, every other value is skipped by the parser
//! unread, and fields are filled as k8s-openapi fills them (a missing or `null`
//! field is `None`, or its default when it is not an `Option`).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::Ident;

use super::parse::{JsonKey, Metadata, Projection, Role};

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
    let variants: Vec<Ident> = (0..fields.len())
        .map(|i| format_ident!("__Field{}", i))
        .collect();
    let slots: Vec<Ident> = (0..fields.len())
        .map(|i| Ident::new(&format!("field{i}"), Span::mixed_site()))
        .collect();
    let key = Ident::new("key", Span::mixed_site());
    let map = Ident::new("map", Span::mixed_site());
    let matches = fields.iter().zip(&variants).map(|(field, variant)| {
        let test = match &field.key {
            JsonKey::Canonical(canonical) => quote!(#runtime::key_is(#key, #canonical)),
            JsonKey::Exact(name) => quote!(#key == #name),
        };
        quote! {
            if #test {
                return ::core::result::Result::Ok(__ProjectionField::#variant);
            }
        }
    });
    let declarations = fields.iter().zip(&slots).map(|(field, slot)| {
        let ty = field.ty;
        if field.shape.is_option() {
            quote!(let mut #slot: #ty = ::core::option::Option::None;)
        } else {
            quote!(let mut #slot: ::core::option::Option<#ty> = ::core::option::Option::None;)
        }
    });
    let reads = fields.iter().zip(&variants).zip(&slots).map(|((field, variant), slot)| {
        let read = match role {
            Role::Resource(Metadata::Slim { annotations }) if field.ident == "metadata" => {
                quote!(#serde::de::MapAccess::next_value_seed(&mut #map, #runtime::SlimMeta::<#annotations>)?)
            }
            _ => quote!(#serde::de::MapAccess::next_value(&mut #map)?),
        };
        quote!(__ProjectionField::#variant => #slot = #read,)
    });
    let values = fields.iter().zip(&slots).map(|(field, slot)| {
        let name = field.ident;
        if field.shape.is_option() {
            quote!(#name: #slot)
        } else {
            quote!(#name: #runtime::or_default(#slot))
        }
    });
    let names: Vec<String> = fields.iter().map(|f| f.key.display(f.ident)).collect();
    let struct_name = ident.to_string();
    let expecting = format!(
        "a {} (projected as {ident})",
        quote::ToTokens::to_token_stream(original)
            .to_string()
            .replace(' ', "")
    );
    let formatter = Ident::new("formatter", Span::mixed_site());
    let deserializer = Ident::new("deserializer", Span::mixed_site());
    quote! {
        #[automatically_derived]
        impl<'de> #serde::Deserialize<'de> for #ident {
            fn deserialize<__D: #serde::Deserializer<'de>>(
                #deserializer: __D,
            ) -> ::core::result::Result<Self, __D::Error> {
                #[allow(non_camel_case_types)]
                enum __ProjectionField {
                    #(#variants,)*
                    __Other,
                }

                struct __ProjectionFieldVisitor;

                impl<'de> #serde::de::Visitor<'de> for __ProjectionFieldVisitor {
                    type Value = __ProjectionField;

                    fn expecting(
                        &self,
                        #formatter: &mut ::core::fmt::Formatter<'_>,
                    ) -> ::core::fmt::Result {
                        #formatter.write_str("a field name")
                    }

                    fn visit_str<__E: #serde::de::Error>(
                        self,
                        #key: &str,
                    ) -> ::core::result::Result<__ProjectionField, __E> {
                        #(#matches)*
                        ::core::result::Result::Ok(__ProjectionField::__Other)
                    }
                }

                impl<'de> #serde::Deserialize<'de> for __ProjectionField {
                    fn deserialize<__D: #serde::Deserializer<'de>>(
                        #deserializer: __D,
                    ) -> ::core::result::Result<Self, __D::Error> {
                        #serde::Deserializer::deserialize_identifier(
                            #deserializer,
                            __ProjectionFieldVisitor,
                        )
                    }
                }

                struct __ProjectionVisitor;

                impl<'de> #serde::de::Visitor<'de> for __ProjectionVisitor {
                    type Value = #ident;

                    fn expecting(
                        &self,
                        #formatter: &mut ::core::fmt::Formatter<'_>,
                    ) -> ::core::fmt::Result {
                        #formatter.write_str(#expecting)
                    }

                    fn visit_map<__A: #serde::de::MapAccess<'de>>(
                        self,
                        mut #map: __A,
                    ) -> ::core::result::Result<#ident, __A::Error> {
                        #(#declarations)*
                        while let ::core::option::Option::Some(#key) =
                            #serde::de::MapAccess::next_key::<__ProjectionField>(&mut #map)?
                        {
                            match #key {
                                #(#reads)*
                                __ProjectionField::__Other => {
                                    #serde::de::MapAccess::next_value::<#serde::de::IgnoredAny>(&mut #map)?;
                                }
                            }
                        }
                        ::core::result::Result::Ok(#ident {
                            #(#values,)*
                        })
                    }
                }

                #serde::Deserializer::deserialize_struct(
                    #deserializer,
                    #struct_name,
                    &[#(#names),*],
                    __ProjectionVisitor,
                )
            }
        }
    }
}
