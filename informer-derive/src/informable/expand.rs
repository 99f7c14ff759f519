//! [`Model`] -> tokens, and the entry point that runs parse, validate and expand.
//!
//! The output names everything by absolute path (`::informer::...`, `::std::...`,
//! `::core::...`) and binds its own variables with mixed-site hygiene, so nothing in
//! the user's scope (a type named `Option`, a function named `emit`) can change what
//! it means. Trait impls sit in an anonymous `const _: () = { ... };` block; only the
//! marker types and the query trait, which the user names, are placed beside the type.
//!
//! With `foreign` the resource type (another crate's) gets no `impl Informable`: the
//! marker types, the query trait and its blanket impl are the same, and the annotated
//! struct carries the index set instead (inherent items and `IndexSet<Kind>`), all
//! impls the orphan rule allows because a local type or trait is in each.
//!
//! An index whose keys come from `metadata` (a `metadata.*` path, `owner`) is an index
//! of the metadata-only `PartialObjectMeta<Kind>` (kube's) too: its marker type gets a second
//! `Index` impl, and a second query trait (`{Kind}MetadataIndexes`) has those indexes'
//! methods for the listers of metadata-only informers. Paths into `spec` and functions
//! of `&Kind` need the whole object and stay with `Kind`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::{DeriveInput, Ident, Path};

use crate::ctxt::Ctxt;
use crate::informable::ast::Format;
use crate::informable::parse;
use crate::informable::validate::{self, Index, Keys, Model, OwnerOf, Root, Step};

/// `#[derive(Informable)]` on `input`: the generated items, or `compile_error!`s for
/// every mistake found.
pub(crate) fn derive(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(error) => return error.to_compile_error(),
    };
    let cx = Ctxt::new();
    let model =
        parse::container(&cx, &input).and_then(|container| validate::model(&cx, &container));
    match (cx.finish(), model) {
        (None, Some(model)) => expand(&model),
        (Some(errors), _) => errors,
        (None, None) => {
            syn::Error::new(Span::call_site(), "#[derive(Informable)] failed").to_compile_error()
        }
    }
}

/// The generated items for a valid model.
pub(crate) fn expand(model: &Model) -> TokenStream {
    let markers = model.indexes.iter().map(|index| marker(model, index));
    let index_impls = model.indexes.iter().map(|index| index_impl(model, index));
    let index_set = match &model.index_set {
        None => informable_impl(model),
        Some(set) => index_set_impls(model, set),
    };
    let krate = &model.krate;
    let kind = &model.kind;
    let lister = (!model.indexes.is_empty()).then(|| {
        let all: Vec<&Index> = model.indexes.iter().collect();
        lister_trait_items(
            model,
            &model.lister_trait,
            &quote!(#kind),
            &model.kind_link,
            &all,
        )
    });
    let metadata_indexes: Vec<&Index> = model
        .indexes
        .iter()
        .filter(|index| reads_only_metadata(index))
        .collect();
    let metadata_lister = (!metadata_indexes.is_empty()).then(|| {
        let partial = metadata_only(krate, kind);
        let link = format!(
            "the metadata-only `PartialObjectMeta` of {}",
            model.kind_link
        );
        lister_trait_items(
            model,
            &metadata_trait_name(&model.lister_trait),
            &partial,
            &link,
            &metadata_indexes,
        )
    });
    let (trait_decl, trait_impls) = lister.unzip();
    let (metadata_trait_decl, metadata_trait_impls) = metadata_lister.unzip();
    quote! {
        #(#markers)*
        #trait_decl
        #metadata_trait_decl
        const _: () = {
            #(#index_impls)*

            #index_set

            #trait_impls

            #metadata_trait_impls
        };
    }
}

/// `impl Informable for Kind`: its key function and indexes.
fn informable_impl(model: &Model) -> TokenStream {
    let Model {
        krate,
        kind,
        key,
        indexes,
        ..
    } = model;
    let names = indexes.iter().map(|index| &index.name);
    let marker_types = indexes.iter().map(|index| &index.marker);
    let metadata_markers = indexes
        .iter()
        .filter(|index| reads_only_metadata(index))
        .map(|index| &index.marker);
    let metadata_only = metadata_only(krate, kind);
    let key_fn = key.as_ref().map(|path| {
        let owned = quote_spanned!(path_span(path)=> #krate::key::KeyFn::owned(#path));
        quote! {
            fn key_fn() -> #krate::key::KeyFn<Self> {
                #owned
            }
        }
    });
    quote! {
        #[automatically_derived]
        impl #krate::informable::Informable for #kind {
            const INDEX_NAMES: &'static [&'static str] = &[#(#names),*];

            #key_fn

            fn indexers() -> #krate::store::Indexers<Self> {
                #krate::store::Indexers::new() #(.with_index::<#marker_types>())*
            }

            fn metadata_indexers() -> #krate::store::Indexers<#metadata_only> {
                #krate::store::Indexers::new() #(.with_index::<#metadata_markers>())*
            }
        }
    }
}

/// For `foreign`: the index set on the annotated struct, as inherent items (usable
/// without an import) and as `IndexSet<Kind>` (for generic code).
fn index_set_impls(model: &Model, set: &Ident) -> TokenStream {
    let Model {
        krate,
        kind,
        kind_link,
        vis,
        indexes,
        ..
    } = model;
    let names: Vec<_> = indexes.iter().map(|index| &index.name).collect();
    let marker_types = indexes.iter().map(|index| &index.marker);
    let indexer = Ident::new("indexer", Span::mixed_site());
    let names_doc = format!(" The names of the indexes of {kind_link} declared here, in order.");
    let indexers_doc = format!(
        " The indexes of {kind_link} declared here, for `Indexer::add_indexers` or \
         `InformerConfig::indexers`."
    );
    let krate_path = quote::ToTokens::to_token_stream(krate)
        .to_string()
        .replace(' ', "");
    let add_doc = format!(
        " Adds the indexes of {kind_link} declared here to `indexer`, skipping those it \
         already has (by name): [`IndexSet::add_to`]({krate_path}::informable::IndexSet::add_to)."
    );
    quote! {
        #[automatically_derived]
        impl #set {
            #[doc = #names_doc]
            #vis const INDEX_NAMES: &'static [&'static str] = &[#(#names),*];

            #[doc = #indexers_doc]
            #vis fn indexers() -> #krate::store::Indexers<#kind> {
                #krate::store::Indexers::new() #(.with_index::<#marker_types>())*
            }

            #[doc = #add_doc]
            #vis fn add_to(#indexer: &#krate::store::Indexer<#kind>) {
                <Self as #krate::informable::IndexSet<#kind>>::add_to(#indexer);
            }
        }

        #[automatically_derived]
        impl #krate::informable::IndexSet<#kind> for #set {
            const INDEX_NAMES: &'static [&'static str] = &[#(#names),*];

            fn indexers() -> #krate::store::Indexers<#kind> {
                #set::indexers()
            }
        }
    }
}

/// The metadata-only type of `kind`: `PartialObjectMeta` of the resource it is listed
/// as (`Kind` itself for a `kube::Resource`; the original for a projection with a
/// metadata of its own).
fn metadata_only(krate: &syn::Path, kind: &impl quote::ToTokens) -> TokenStream {
    quote!(#krate::informable::__private::PartialObjectMeta<<#kind as #krate::object::Object>::Resource>)
}

/// Whether an index reads nothing but the object's metadata, so that it indexes the
/// metadata-only `PartialObjectMeta<Kind>` as well.
fn reads_only_metadata(index: &Index) -> bool {
    matches!(
        index.keys,
        Keys::Path {
            root: Root::Meta,
            ..
        } | Keys::Owner(_)
    )
}

/// The query trait of the metadata-only type: `WidgetIndexes` -> `WidgetMetadataIndexes`,
/// `ConfigMapIndexesExt` -> `ConfigMapIndexesMetadataExt`, any other name + `Metadata`.
fn metadata_trait_name(lister_trait: &Ident) -> Ident {
    let name = lister_trait.to_string();
    let renamed = if let Some(stem) = name.strip_suffix("Indexes") {
        format!("{stem}MetadataIndexes")
    } else if let Some(stem) = name.strip_suffix("Ext") {
        format!("{stem}MetadataExt")
    } else {
        format!("{name}Metadata")
    };
    Ident::new(&renamed, lister_trait.span())
}

fn path_span(path: &Path) -> Span {
    syn::spanned::Spanned::span(path)
}

/// The marker type of an index.
fn marker(model: &Model, index: &Index) -> TokenStream {
    let vis = &model.vis;
    let marker = &index.marker;
    let doc = format!(
        " Index `{}` of {}: {}. Query it with `lister.by_index::<{}>(key)` or `lister.{}(key)`.",
        index.name.value(),
        model.kind_link,
        index.describe,
        marker,
        index.method,
    );
    quote! {
        #[doc = #doc]
        #[derive(
            ::core::fmt::Debug,
            ::core::clone::Clone,
            ::core::marker::Copy,
            ::core::default::Default
        )]
        #vis struct #marker;
    }
}

/// `impl Index<Kind> for Marker`.
fn index_impl(model: &Model, index: &Index) -> TokenStream {
    let Model { krate, kind, .. } = model;
    let store = quote!(#krate::store);
    let runtime = quote!(#krate::informable::__private);
    let marker = &index.marker;
    let name = &index.name;
    let value_ty = &index.value;
    let value = Ident::new("value", Span::mixed_site());
    let object = Ident::new("object", Span::mixed_site());
    let emit = Ident::new("emit", Span::mixed_site());
    let encode = match index.format {
        Format::Key => quote_spanned! {index.span=>
            <Self::Value as #store::IndexKey>::index_key(#value)
        },
        Format::Display => quote_spanned! {index.span=>
            ::std::borrow::Cow::Owned(::std::string::ToString::to_string(#value))
        },
        Format::Serde => quote_spanned! {index.span=>
            #runtime::serde_key(#value)
        },
    };
    // The index of one target type: with two (`Kind` and its metadata-only form) the
    // marker's `Self::encode` would be ambiguous, so the body names its impl.
    let body_for = |this: &TokenStream| {
        let walk = Walk {
            runtime: &runtime,
            this,
            span: index.span,
            emit: &emit,
            counter: std::cell::Cell::new(0),
        };
        match &index.keys {
            Keys::Path { root, steps } => {
                let start = walk.fresh();
                let root = match root {
                    Root::Object => quote!(let #start = #object;),
                    Root::Meta => quote!(let #start = #runtime::meta(#object);),
                };
                let steps = walk.steps(steps, &start);
                quote! {
                    #root
                    #steps
                }
            }
            Keys::Fn(func) => {
                let keys = walk.fresh();
                // The argument is located at the function, so a signature mismatch is
                // reported there.
                let argument = Ident::new("object", Span::mixed_site().located_at(index.span));
                let call = quote_spanned!(index.span=> #func(#argument));
                let leaves = walk.unwrap(&quote!(&#keys), &mut |leaf| walk.leaf(leaf));
                quote! {
                    let #keys = #call;
                    #leaves
                }
            }
            Keys::Owner(owner) => {
                let reference = Ident::new("reference", Span::mixed_site());
                let references = Ident::new("references", Span::mixed_site());
                let mut conditions = Vec::new();
                match &owner.of {
                    None => {}
                    // Located at the type, so a type that cannot name an owner is
                    // reported there.
                    Some(OwnerOf::Type(ty)) => {
                        conditions.push(quote_spanned! {syn::spanned::Spanned::span(ty)=>
                            #runtime::owned_by::<#ty>(#reference)
                        })
                    }
                    Some(OwnerOf::Named { group, kind }) => conditions.push(quote! {
                        #runtime::owner_is(#reference, #group, #kind)
                    }),
                }
                if owner.controller {
                    conditions
                        .push(quote!(#reference.controller == ::core::option::Option::Some(true)));
                }
                let key = if owner.by_name {
                    quote!(name)
                } else {
                    quote!(uid)
                };
                let emit_key = quote!(#emit(&#reference.#key););
                let emit_key = if conditions.is_empty() {
                    emit_key
                } else {
                    quote!(if #(#conditions)&&* { #emit_key })
                };
                quote! {
                    let #references = #krate::object::Meta::owner_references(
                        #krate::object::Object::metadata(#object),
                    );
                    for #reference in #references {
                        #emit_key
                    }
                }
            }
        }
    };
    let indexed_field = index.label.as_ref().map(|label| {
        quote! {
            fn indexed_field() -> #krate::store::IndexedField<'static> {
                #krate::store::IndexedField::Label(#label)
            }
        }
    });
    let impl_for = |target: &TokenStream| {
        let body = body_for(&quote!(<Self as #store::Index<#target>>));
        quote! {
            #[automatically_derived]
            impl #store::Index<#target> for #marker {
                const NAME: &'static str = #name;
                type Value = #value_ty;

                fn encode(#value: &Self::Value) -> ::std::borrow::Cow<'_, str> {
                    #encode
                }

                #[allow(unused_imports)]
                fn index_values(#object: &#target, #emit: &mut dyn ::core::ops::FnMut(&str)) {
                    use #runtime::{StepInto as _, StepStay as _};
                    #body
                }

                #indexed_field
            }
        }
    };
    let full = impl_for(&quote!(#kind));
    let metadata = reads_only_metadata(index).then(|| impl_for(&metadata_only(krate, kind)));
    quote! {
        #full
        #metadata
    }
}

/// Generates the walk from an object to its keys: field accesses and map lookups, each
/// followed by two unwrapping steps (`Option`, `Vec`, sets: into their elements; any
/// other value: itself), then the key emission.
struct Walk<'a> {
    /// `informer::informable::__private`, the derive's runtime.
    runtime: &'a TokenStream,
    /// The `Index` impl being written: `<Self as Index<Kind>>`.
    this: &'a TokenStream,
    span: Span,
    emit: &'a Ident,
    counter: std::cell::Cell<usize>,
}

impl Walk<'_> {
    fn fresh(&self) -> Ident {
        let n = self.counter.get();
        self.counter.set(n + 1);
        Ident::new(&format!("v{n}"), Span::mixed_site())
    }

    fn steps(&self, steps: &[Step], current: &Ident) -> TokenStream {
        let runtime = self.runtime;
        match steps.split_first() {
            None => self.leaf(current),
            Some((Step::Field(field), rest)) => {
                let next = self.fresh();
                let access = quote_spanned!(self.span=> &#current.#field);
                let after = self.unwrap(&quote!(#next), &mut |value| self.steps(rest, value));
                quote! {
                    let #next = #access;
                    #after
                }
            }
            Some((Step::Key(key), rest)) => {
                let next = self.fresh();
                let lookup = quote_spanned!(self.span=> #runtime::map_get(#current, #key));
                let after = self.unwrap(&quote!(#next), &mut |value| self.steps(rest, value));
                quote! {
                    if let ::core::option::Option::Some(#next) = #lookup {
                        #after
                    }
                }
            }
        }
    }

    /// Two unwrapping steps around `inner`.
    fn unwrap(
        &self,
        value: &TokenStream,
        inner: &mut dyn FnMut(&Ident) -> TokenStream,
    ) -> TokenStream {
        let runtime = self.runtime;
        let outer = self.fresh();
        let element = self.fresh();
        let body = inner(&element);
        quote! {
            (&#runtime::Step(#value, #runtime::Keys)).step(&mut |#outer| {
                (&#runtime::Step(#outer, #runtime::Keys)).step(&mut |#element| {
                    #body
                });
            });
        }
    }

    fn leaf(&self, value: &Ident) -> TokenStream {
        let runtime = self.runtime;
        let emit = self.emit;
        let this = self.this;
        quote_spanned! {self.span=>
            #runtime::emit::<#this::Value, _>(#value, #this::encode, #emit);
        }
    }
}

/// The query trait, and its blanket impl for every `IndexQuery<Kind>` (`Lister`,
/// `NamespaceLister`, `Indexer`).
fn lister_trait_items(
    model: &Model,
    lister_trait: &Ident,
    kind: &TokenStream,
    kind_link: &str,
    indexes: &[&Index],
) -> (TokenStream, TokenStream) {
    let Model { krate, vis, .. } = model;
    let store = quote!(#krate::store);
    let doc = format!(
        " Typed index queries of {kind_link}, one method per index, for its `Lister`, \
         `NamespaceLister` and `Indexer`; generated by `#[derive(Informable)]`."
    );
    let value = format_ident!("value");
    let lister = Ident::new("L", Span::mixed_site());
    let signatures: Vec<TokenStream> = indexes
        .iter()
        .map(|index| {
            let method = &index.method;
            let marker = &index.marker;
            quote! {
                fn #method(
                    &self,
                    #value: impl #store::AsIndexKey<<#marker as #store::Index<#kind>>::Value>,
                ) -> ::std::vec::Vec<::std::sync::Arc<#kind>>
            }
        })
        .collect();
    let docs = indexes.iter().map(|index| {
        format!(
            " The objects with the key `value` in index `{}`: {}.",
            index.name.value(),
            index.describe
        )
    });
    let markers = indexes.iter().map(|index| &index.marker);
    let declaration = quote! {
        #[doc = #doc]
        #vis trait #lister_trait {
            #(
                #[doc = #docs]
                #signatures;
            )*
        }
    };
    let implementation = quote! {
        #[automatically_derived]
        impl<#lister: ?::core::marker::Sized + #store::IndexQuery<#kind>> #lister_trait for #lister {
            #(
                #signatures {
                    #store::IndexQuery::<#kind>::by_index::<#markers>(self, #value)
                }
            )*
        }
    };
    (declaration, implementation)
}
