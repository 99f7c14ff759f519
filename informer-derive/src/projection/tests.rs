//! The projection derive's expansion and its messages, read from the tokens (the
//! generated code compiles in the `informer` crate's tests and the trybuild cases).

use quote::quote;

use crate::ctxt::Ctxt;

use super::parse::{self, JsonKey, Metadata, Role, Shape};

fn messages(input: proc_macro2::TokenStream) -> Vec<String> {
    let input: syn::DeriveInput = syn::parse2(input).unwrap();
    let cx = Ctxt::new();
    let _ = parse::projection(&cx, &input);
    cx.messages()
}

#[test]
fn the_struct_with_metadata_is_the_resource_and_slim_by_default() {
    let input: syn::DeriveInput = syn::parse2(quote! {
        #[projection(of = Pod, annotations)]
        struct PodView { metadata: ObjectMeta, spec: Option<Spec> }
    })
    .unwrap();
    let cx = Ctxt::new();
    let projection = parse::projection(&cx, &input).unwrap();
    assert!(cx.messages().is_empty());
    assert_eq!(
        projection.role,
        Role::Resource(Metadata::Slim { annotations: true })
    );
    let full: syn::DeriveInput = syn::parse2(quote! {
        #[projection(of = Pod, metadata = "full")]
        struct PodView { metadata: ObjectMeta }
    })
    .unwrap();
    let cx = Ctxt::new();
    assert_eq!(
        parse::projection(&cx, &full).unwrap().role,
        Role::Resource(Metadata::Full)
    );
    let nested: syn::DeriveInput = syn::parse2(quote! {
        #[projection(of = PodTemplateSpec, nested)]
        struct Template { metadata: ObjectMeta }
    })
    .unwrap();
    let cx = Ctxt::new();
    assert_eq!(parse::projection(&cx, &nested).unwrap().role, Role::Part);
}

#[test]
fn a_metadata_of_another_type_is_its_own_and_takes_no_metadata_choice() {
    let input: syn::DeriveInput = syn::parse2(quote! {
        #[projection(of = Pod)]
        struct PodView { metadata: informer::projection::CompactMeta }
    })
    .unwrap();
    let cx = Ctxt::new();
    let projection = parse::projection(&cx, &input).unwrap();
    assert!(cx.messages().is_empty());
    assert_eq!(projection.role, Role::Resource(Metadata::Own));
    // However `ObjectMeta` is reached, it is the one that is slim or full.
    let path: syn::DeriveInput = syn::parse2(quote! {
        #[projection(of = Pod)]
        struct PodView { metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta }
    })
    .unwrap();
    let cx = Ctxt::new();
    assert_eq!(
        parse::projection(&cx, &path).unwrap().role,
        Role::Resource(Metadata::Slim { annotations: false })
    );
    let chosen = messages(quote! {
        #[projection(of = Pod, metadata = "full", annotations)]
        struct PodView { metadata: CompactMeta }
    });
    assert_eq!(chosen.len(), 2, "{chosen:?}");
    assert!(
        chosen
            .iter()
            .all(|m| m.contains("decodes what it holds itself"))
    );
}

#[test]
fn json_keys_come_from_the_rust_names_or_a_rename() {
    let input: syn::DeriveInput = syn::parse2(quote! {
        #[projection(of = PodStatus)]
        struct Status {
            pod_ip: Option<String>,
            r#type: Option<String>,
            type_: Option<String>,
            #[projection(rename = "x-kind")]
            kind: Option<String>,
            host_i_ps: Option<String>,
        }
    })
    .unwrap();
    let cx = Ctxt::new();
    let projection = parse::projection(&cx, &input).unwrap();
    let key = |rust: &str, camel: &str, rename: Option<&str>| JsonKey {
        rust: rust.to_owned(),
        camel: camel.to_owned(),
        rename: rename.map(str::to_owned),
    };
    let keys: Vec<&JsonKey> = projection.fields.iter().map(|f| &f.key).collect();
    // serde's camelCase of the Rust name; the original's exact key (`podIP`) is found
    // among the keys its `Deserialize` reads, at run time.
    assert_eq!(
        keys,
        [
            &key("pod_ip", "podIp", None),
            &key("type", "type", None),
            &key("type_", "type", None),
            &key("kind", "kind", Some("x-kind")),
            &key("host_i_ps", "hostIPs", None),
        ]
    );
    let shown: Vec<&str> = keys.iter().map(|k| k.display()).collect();
    assert_eq!(shown, ["podIp", "type", "type", "x-kind", "hostIPs"]);
}

#[test]
fn camel_case_is_serdes() {
    for (rust, camel) in [
        ("node_name", "nodeName"),
        ("pod_ip", "podIp"),
        ("type_", "type"),
        ("_private", "private"),
        ("a__b", "aB"),
        ("x_kubernetes_int_or_string", "xKubernetesIntOrString"),
        ("already", "already"),
        ("", ""),
    ] {
        assert_eq!(parse::serde_camel_case(rust), camel, "{rust}");
    }
}

#[test]
fn shapes_see_through_option_vec_maps_and_shared() {
    let input: syn::DeriveInput = syn::parse2(quote! {
        #[projection(of = X)]
        struct S {
            a: Option<Vec<Image>>,
            b: std::collections::BTreeMap<String, Option<i32>>,
            c: Box<String>,
            d: Option<informer::projection::Shared<Vec<Image>>>,
        }
    })
    .unwrap();
    let cx = Ctxt::new();
    let projection = parse::projection(&cx, &input).unwrap();
    let describe = |shape: &Shape<'_>| -> String {
        fn go(shape: &Shape<'_>) -> String {
            match shape {
                Shape::Option(inner) => format!("Option({})", go(inner)),
                Shape::Vec(inner) => format!("Vec({})", go(inner)),
                Shape::Map(inner) => format!("Map({})", go(inner)),
                Shape::Shared(inner) => format!("Shared({})", go(inner)),
                Shape::Leaf(ty) => quote!(#ty).to_string().replace(' ', ""),
            }
        }
        go(shape)
    };
    let shapes: Vec<String> = projection
        .fields
        .iter()
        .map(|f| describe(&f.shape))
        .collect();
    assert_eq!(
        shapes,
        [
            "Option(Vec(Image))",
            "Map(Option(i32))",
            "Box<String>",
            "Option(Shared(Vec(Image)))"
        ]
    );
}

#[test]
fn every_mistake_is_reported_at_once() {
    let found = messages(quote! {
        #[projection(off = Pod, metadata = "slin", nested = 1)]
        struct PodView {
            metadata: ObjectMeta,
            #[serde(rename = "x")]
            x: Option<String>,
            #[projection(renme = "y")]
            y: Option<String>,
        }
    });
    assert_eq!(
        found,
        [
            "unknown key `off` in `#[projection(...)]`; did you mean `of`?",
            "unknown metadata `slin`; did you mean `slim`?",
            "`nested` takes no value: write it alone",
            "#[derive(Projection)] decodes the fields itself and reads no serde attribute: name a JSON key with `#[projection(rename = \"...\")]`",
            "unknown key `renme` in `a field's #[projection(...)]`; did you mean `rename`?",
            "`metadata` chooses a resource's metadata, and this struct is a part of one (no `metadata` field, or `nested`): remove it",
            "name the type this struct projects: `#[projection(of = Pod)]` (a part names its own type: `#[projection(of = PodSpec)]`)",
        ]
    );
}

#[test]
fn enums_tuples_and_generics_are_refused() {
    assert_eq!(
        messages(quote!(
            enum E {
                A,
            }
        )),
        ["#[derive(Projection)] is for structs: a projection is a struct of the fields you read"]
    );
    assert_eq!(
        messages(quote!(
            #[projection(of = Pod)]
            struct T(String);
        )),
        [
            "a projection has named fields, as the original has: `struct PodView { metadata: ObjectMeta, ... }`"
        ]
    );
    assert_eq!(
        messages(quote!(
            #[projection(of = Pod)]
            struct G<T> {
                metadata: T,
            }
        )),
        ["#[derive(Projection)] does not support generic types"]
    );
}

#[test]
fn annotations_do_not_go_with_full_metadata() {
    assert_eq!(
        messages(quote! {
            #[projection(of = Pod, metadata = "full", annotations)]
            struct PodView { metadata: ObjectMeta }
        }),
        [
            "`annotations` adds annotations to slim metadata; full metadata has them already: remove it"
        ]
    );
}

#[test]
fn the_expansion_names_everything_by_absolute_path() {
    let tokens = super::derive(quote! {
        #[projection(of = Pod)]
        struct PodView { metadata: ObjectMeta, spec: Option<Spec> }
    })
    .to_string();
    for expected in [
        ":: informer :: projection :: ProjectionOf < Pod > for PodView",
        ":: kube :: Resource for PodView",
        ":: informer :: projection :: __private :: SlimMeta :: < false > :: new",
        ":: informer :: projection :: __private :: Layout :: < 2 > :: learn :: < Pod >",
        "fn __informer_projection_check",
    ] {
        assert!(tokens.contains(expected), "{expected} not in {tokens}");
    }
    assert!(
        !tokens.contains("Serialize"),
        "a projection has no Serialize"
    );
}
