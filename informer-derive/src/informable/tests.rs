//! Expansion tests: token input through parse, validate and expand, without a
//! compiler in the loop (the trybuild and integration tests cover that).

use proc_macro2::{TokenStream, TokenTree};
use quote::quote;
use syn::{DeriveInput, parse_quote};

use crate::ctxt::Ctxt;
use crate::informable::ast::Format;
use crate::informable::validate::{Keys, Model, OwnerOf, Root, Step};
use crate::informable::{expand, parse, validate};

/// Parses and validates; the model (if any) and every error message.
fn check(input: &DeriveInput) -> (Option<Model>, Vec<String>) {
    let cx = Ctxt::new();
    let model = parse::container(&cx, input).and_then(|c| validate::model(&cx, &c));
    let messages = cx.messages();
    (model, messages)
}

fn model(input: &DeriveInput) -> Model {
    let (model, errors) = check(input);
    assert!(errors.is_empty(), "unexpected errors: {errors:#?}");
    model.expect("a model")
}

fn errors(input: &DeriveInput) -> Vec<String> {
    let (_, errors) = check(input);
    assert!(!errors.is_empty(), "expected errors");
    errors
}

fn tokens(tokens: impl quote::ToTokens) -> String {
    tokens.to_token_stream().to_string()
}

fn widget(attrs: TokenStream) -> DeriveInput {
    parse_quote! {
        #[derive(CustomResource, Informable, Deserialize, Serialize, Clone, Debug)]
        #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced,
               status = "WidgetStatus", printcolumn = r#"{"name":"Color"}"#, scale(spec_replicas_path = ".spec.size"))]
        #[serde(rename_all = "camelCase")]
        #[informable(#attrs)]
        pub struct WidgetSpec {
            color: String,
            replica_count: Option<i32>,
            tags: Option<Vec<String>>,
            #[serde(rename = "zone")]
            placement_zone: String,
            selector: std::collections::BTreeMap<String, u16>,
            size: Size,
        }
    }
}

#[test]
fn finds_the_crd_kind_and_resolves_spec_paths_with_serde_names() {
    let model = model(&widget(quote! {
        index(name = "by_color", path = "spec.color"),
        index(name = "by_replicas", path = "spec.replicaCount"),
        index(name = "by_tag", path = "spec.tags"),
        index(name = "by_zone", path = "spec.zone"),
        index(name = "by_selector", path = "spec.selector['app']"),
        index(name = "by_phase", path = "status.phaseName", value = Phase, format = "serde"),
    }));
    assert_eq!(tokens(&model.kind), "Widget");
    assert_eq!(model.lister_trait, "WidgetIndexes");
    assert_eq!(tokens(&model.krate), ":: informer");
    let by = |name: &str| {
        model
            .indexes
            .iter()
            .find(|i| i.name.value() == name)
            .unwrap_or_else(|| panic!("no index {name}"))
    };
    // Key types come from the fields, through Option / Vec and map values.
    assert_eq!(tokens(&by("by_color").value), "String");
    assert_eq!(tokens(&by("by_replicas").value), "i32");
    assert_eq!(tokens(&by("by_tag").value), "String");
    assert_eq!(tokens(&by("by_selector").value), "u16");
    assert_eq!(tokens(&by("by_phase").value), "Phase");
    assert_eq!(by("by_phase").format, Format::Serde);
    assert_eq!(by("by_color").marker, "ByColor");
    assert_eq!(by("by_color").method, "by_color");
    // JSON names map to Rust fields (`rename_all`, `rename`); unknown types get snake_case.
    let steps = |name: &str| match &by(name).keys {
        Keys::Path { root, steps } => {
            assert_eq!(*root, Root::Object);
            steps
                .iter()
                .map(|s| match s {
                    Step::Field(f) => f.to_string(),
                    Step::Key(k) => format!("[{k}]"),
                })
                .collect::<Vec<_>>()
        }
        _ => panic!("not a path index"),
    };
    assert_eq!(steps("by_replicas"), ["spec", "replica_count"]);
    assert_eq!(steps("by_zone"), ["spec", "placement_zone"]);
    assert_eq!(steps("by_selector"), ["spec", "selector", "[app]"]);
    assert_eq!(steps("by_phase"), ["status", "phase_name"]);
}

#[test]
fn kube_root_and_explicit_kind_name_the_resource_type() {
    let input: DeriveInput = parse_quote! {
        #[kube(group = "g", version = "v1", kind = "Widget", root = "WidgetResource")]
        #[informable(index(name = "by_color", path = "spec.color"))]
        struct WidgetSpec { color: String }
    };
    let m = model(&input);
    assert_eq!(tokens(&m.kind), "WidgetResource");
    assert_eq!(m.lister_trait, "WidgetResourceIndexes");

    let input: DeriveInput = parse_quote! {
        #[informable(kind = crate::api::Gadget, lister_trait = GadgetQueries,
                     index(name = "by_color", path = "spec.color"),
                     index(name = "by_other", path = "extra.thing"))]
        struct GadgetSpec { color: String }
    };
    let m = model(&input);
    assert_eq!(tokens(&m.kind), "crate :: api :: Gadget");
    assert_eq!(m.lister_trait, "GadgetQueries");
    // Without #[kube], the resource's other fields are left to the compiler.
    assert!(matches!(&m.indexes[1].keys, Keys::Path { steps, .. } if steps.len() == 2));
}

#[test]
fn a_resource_struct_indexes_its_own_fields_metadata_functions_and_owners() {
    let input: DeriveInput = parse_quote! {
        #[informable(
            crate = my::informer,
            key = crate::keys::by_uid,
            index(name = "by_node", path = "spec.nodeName"),
            index(name = "by_app", path = "metadata.labels['app.kubernetes.io/name']"),
            index(name = "by_generation", path = "metadata.generation"),
            index(name = "by_finalizer", path = "metadata.finalizers"),
            index(name = "by_team", fn = crate::teams::team_of, value = u8),
            index(name = "by_owner", owner(api_version = "apps/v1", kind = "ReplicaSet", controller, name)),
        )]
        struct SlimPod {
            metadata: ObjectMeta,
            spec: Option<SlimPodSpec>,
        }
    };
    let m = model(&input);
    assert_eq!(tokens(&m.kind), "SlimPod");
    assert_eq!(tokens(&m.krate), "my :: informer");
    assert_eq!(tokens(m.key.as_ref().unwrap()), "crate :: keys :: by_uid");
    let [node, app, generation, finalizer, team, owner] = m.indexes.as_slice() else {
        panic!("six indexes");
    };
    assert_eq!(tokens(&node.value), ":: std :: string :: String");
    assert!(
        matches!(&node.keys, Keys::Path { root: Root::Object, steps } if steps == &[
            Step::Field(syn::parse_quote!(spec)),
            Step::Field(syn::parse_quote!(node_name)),
        ])
    );
    assert_eq!(app.label.as_deref(), Some("app.kubernetes.io/name"));
    assert!(matches!(
        &app.keys,
        Keys::Path {
            root: Root::Meta,
            ..
        }
    ));
    assert_eq!(tokens(&generation.value), "i64");
    assert_eq!(generation.label, None);
    assert_eq!(tokens(&finalizer.value), ":: std :: string :: String");
    assert!(matches!(&team.keys, Keys::Fn(path) if tokens(path) == "crate :: teams :: team_of"));
    assert_eq!(tokens(&team.value), "u8");
    match &owner.keys {
        Keys::Owner(o) => {
            assert!(
                matches!(&o.of, Some(OwnerOf::Named { group, kind }) if group == "apps" && kind == "ReplicaSet")
            );
            assert!(o.controller && o.by_name);
        }
        _ => panic!("not an owner index"),
    }
}

#[test]
fn every_mistake_is_reported_at_once() {
    let messages = errors(&widget(quote! {
        indx(name = "x"),
        index(name = "by_color", pth = "spec.color"),
        index(name = "by_colour", path = "spec.colour"),
        index(name = "by_size", path = "spec.size", format = "jsn"),
        index(name = "by_dup", path = "spec.color"),
        index(name = "by_dup", path = "spec.color"),
        index(name = "ByCamel", path = "spec.color"),
        index(name = "get", path = "spec.color"),
        index(name = "namespace", path = "spec.color"),
        index(name = "by_two", path = "spec.color", owner),
        index(name = "by_none"),
        index(path = "spec.color"),
        index(name = "by_bad_path", path = "spec..color"),
        index(name = "by_spec", path = "spec"),
        index(name = "by_labels", path = "metadata.labels"),
        index(name = "by_owners", path = "metadata.ownerReferences"),
        index(name = "by_metadata", path = "metadata.nme"),
        index(name = "by_root", path = "sepc.color"),
        index(name = "by_key", path = "spec['x']"),
        index(name = "by_owner_value", owner(knd = "X"), value = u32),
    }));
    let expected = [
        "unknown key `indx` in `#[informable(...)]`; did you mean `index`?",
        "unknown key `pth` in `index(...)`; did you mean `path`?",
        "unknown format `jsn`; expected `key`, `display` or `serde`",
        "unknown key `knd` in `owner(...)`; did you mean `kind`?",
        "`WidgetSpec` has no field `colour`; did you mean `color`?",
        "duplicate index name `by_dup`: each index needs its own name",
        "index name `ByCamel` must be a snake_case identifier (it names the generated query method), e.g. `by_camel`",
        "index name `get` is reserved: `Lister` already has a method `get`",
        "index name `namespace` is reserved: it is the built-in namespace index",
        "an index takes its keys from one of `path`, `fn` or `owner`, not several",
        "index `by_none` needs a source: `path = \"spec.field\"`, `fn = path::to::function` or `owner`",
        "an index needs a name: `index(name = \"by_node\", ...)`",
        "in path `spec..color`: expected a field name at `.color`",
        "`spec` is the struct `WidgetSpec`: index one of its fields, e.g. `spec.color`",
        "`metadata.labels` is a map: index the value of one key, e.g. `metadata.labels['app']`",
        "`metadata.ownerReferences` cannot be indexed: index owner references with `owner` instead of a path",
        "`metadata` has no indexable field `nme`; did you mean `name`?",
        "`Widget` has no field `sepc` (it has `metadata`, `spec`, `status`); did you mean `spec`?",
        "in path `spec['x']`: `[...]` looks up a key in a map, not in a struct",
        "owner indexes are keyed by strings: remove `value`",
    ];
    for message in expected {
        assert!(
            messages.iter().any(|m| m == message),
            "missing {message:?} in {messages:#?}"
        );
    }
    assert_eq!(messages.len(), expected.len(), "{messages:#?}");
}

#[test]
fn rejects_enums_unions_generics_and_kubeless_kinds() {
    let enum_input: DeriveInput = parse_quote! { enum Phase { A, B } };
    assert!(errors(&enum_input)[0].contains("an enum is not a Kubernetes resource"));
    let union_input: DeriveInput = parse_quote! { union Bits { a: u32, b: f32 } };
    assert!(errors(&union_input)[0].contains("a union is not a Kubernetes resource"));
    let generic: DeriveInput = parse_quote! { struct Wrapper<T> { metadata: T } };
    assert_eq!(
        errors(&generic),
        ["#[derive(Informable)] does not support generic types"]
    );
    let no_kind: DeriveInput = parse_quote! {
        #[kube(group = "g", version = "v1")]
        struct ThingSpec { a: String }
    };
    assert!(errors(&no_kind)[0].contains("#[kube(...)] has no `kind`"));
}

#[test]
fn field_attributes_and_arrays() {
    let input: DeriveInput = parse_quote! {
        #[informable(index(name = "by_slot", path = "slots"))]
        struct Thing {
            metadata: ObjectMeta,
            #[informable(index(name = "by_x"))]
            x: String,
            slots: Option<[u8; 4]>,
        }
    };
    let (model, errors) = check(&input);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].starts_with("#[informable(...)] goes on the struct, not on a field"));
    assert_eq!(tokens(&model.unwrap().indexes[0].value), "u8");
}

#[test]
fn a_crd_without_status_has_no_status_paths() {
    let input: DeriveInput = parse_quote! {
        #[kube(group = "g", version = "v1", kind = "Thing")]
        #[informable(index(name = "by_s", path = "status.phase"))]
        struct ThingSpec { a: String }
    };
    assert_eq!(
        errors(&input),
        [
            "`Thing` has no field `status` (it has `metadata`, `spec`); declare it with `status = \"...\"` in #[kube(...)]"
        ]
    );
}

/// Every identifier that names a std item must be reached by an absolute path.
#[test]
fn output_names_std_items_by_absolute_paths_only() {
    let input: DeriveInput = parse_quote! {
        #[informable(
            key = keys::by_uid,
            index(name = "by_node", path = "spec.nodeName"),
            index(name = "by_app", path = "metadata.labels['app']"),
            index(name = "by_owner", owner(type = Widget, controller)),
            index(name = "by_cron_job", owner(kind = "CronJob", group = "batch", name)),
            index(name = "by_team", fn = teams::team_of),
            index(name = "by_phase", path = "status.phase", value = Phase, format = "display"),
            index(name = "by_state", path = "status.state", value = Phase, format = "serde"),
        )]
        struct SlimPod { metadata: ObjectMeta, spec: Option<SlimPodSpec>, status: Option<SlimStatus> }
    };
    let output = expand::expand(&model(&input));
    assert_std_items_by_absolute_paths(&output);
    let text = output.to_string();
    for expected in [
        "impl :: informer :: informable :: Informable for SlimPod",
        "impl :: informer :: store :: Index < SlimPod > for ByNode",
        "const NAME : & 'static str = \"by_node\"",
        "type Value = :: std :: string :: String",
        ":: informer :: key :: KeyFn :: owned (keys :: by_uid)",
        ":: informer :: store :: IndexedField :: Label (\"app\")",
        "trait SlimPodIndexes",
        ". with_index :: < ByNode > ()",
        "teams :: team_of (object)",
        ":: informer :: informable :: __private :: owned_by :: < Widget > (reference)",
        ":: informer :: informable :: __private :: owner_is (reference , \"batch\" , \"CronJob\")",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    // The output parses as items.
    syn::parse2::<syn::File>(output).expect("the expansion is valid Rust");
}

/// Panics unless every identifier in `output` that names a std item follows `::`.
fn assert_std_items_by_absolute_paths(output: &TokenStream) {
    let flat = flatten(output.clone());
    let std_names = [
        "Option", "Some", "None", "Vec", "Arc", "Cow", "String", "FnMut", "Sized", "Debug",
        "Clone", "Copy", "Default", "Iterator", "ToString",
    ];
    for (i, token) in flat.iter().enumerate() {
        if let TokenTree::Ident(ident) = token
            && std_names.contains(&ident.to_string().as_str())
        {
            let qualified = i >= 2
                && matches!(&flat[i - 1], TokenTree::Punct(p) if p.as_char() == ':')
                && matches!(&flat[i - 2], TokenTree::Punct(p) if p.as_char() == ':');
            assert!(
                qualified,
                "`{ident}` is not reached by a path in:\n{output}"
            );
        }
    }
}

fn config_map_indexes(attrs: TokenStream) -> DeriveInput {
    parse_quote! {
        /// Typed indexes of ConfigMaps.
        #[derive(Informable)]
        #[informable(#attrs)]
        pub struct ConfigMapIndexes;
    }
}

#[test]
fn a_foreign_kind_leaves_paths_below_metadata_to_the_compiler() {
    let m = model(&config_map_indexes(quote! {
        kind = k8s_openapi::api::core::v1::ConfigMap,
        foreign,
        index(name = "by_backup", owner(kind = "Backup", group = "backup.example.com", controller, name)),
        index(name = "by_app", path = "metadata.labels['app']"),
        index(name = "by_data", path = "data['owner']"),
        index(name = "by_node", path = "spec.nodeName"),
        index(name = "by_port", path = "spec.containers.ports.containerPort", value = i32),
        index(name = "by_type", path = "spec.type_"),
    }));
    assert_eq!(
        tokens(&m.kind),
        "k8s_openapi :: api :: core :: v1 :: ConfigMap"
    );
    assert_eq!(m.index_set.as_ref().unwrap(), "ConfigMapIndexes");
    // Named after the struct, so that it never takes the struct's name.
    assert_eq!(m.lister_trait, "ConfigMapIndexesExt");
    assert_eq!(
        m.kind_link,
        "[`ConfigMap`](k8s_openapi::api::core::v1::ConfigMap)"
    );
    let [backup, app, data, node, port, ty] = m.indexes.as_slice() else {
        panic!("six indexes");
    };
    assert!(matches!(&backup.keys, Keys::Owner(o) if o.by_name && o.controller));
    assert_eq!(app.label.as_deref(), Some("app"));
    let path = |index: &validate::Index| match &index.keys {
        Keys::Path { root, steps } => (
            *root,
            steps
                .iter()
                .map(|s| match s {
                    Step::Field(f) => f.to_string(),
                    Step::Key(k) => format!("[{k}]"),
                })
                .collect::<Vec<_>>(),
        ),
        _ => panic!("not a path index"),
    };
    assert_eq!(
        path(data),
        (Root::Object, vec!["data".into(), "[owner]".into()])
    );
    // JSON names become k8s-openapi's snake_case field names; `type_` stays.
    assert_eq!(path(node).1, ["spec", "node_name"]);
    assert_eq!(
        path(port).1,
        ["spec", "containers", "ports", "container_port"]
    );
    assert_eq!(path(ty).1, ["spec", "type_"]);
    // Key types the derive cannot see are `String` unless given.
    assert_eq!(tokens(&node.value), ":: std :: string :: String");
    assert_eq!(tokens(&port.value), "i32");

    let named = model(&config_map_indexes(quote! {
        kind = ConfigMap, foreign, lister_trait = BackupQueries,
        index(name = "by_app", path = "metadata.labels['app']"),
    }));
    assert_eq!(named.lister_trait, "BackupQueries");
}

#[test]
fn a_foreign_set_implements_index_set_for_the_struct_and_not_informable() {
    let output = expand::expand(&model(&config_map_indexes(quote! {
        kind = ConfigMap,
        foreign,
        index(name = "by_backup", owner(kind = "Backup", group = "backup.example.com", controller, name)),
        index(name = "by_app", path = "metadata.labels['app']"),
        index(name = "by_node", path = "spec.nodeName"),
        index(name = "by_team", fn = teams::team_of),
    })));
    assert_std_items_by_absolute_paths(&output);
    let text = output.to_string();
    for expected in [
        "pub struct ByBackup",
        "impl :: informer :: store :: Index < ConfigMap > for ByBackup",
        "pub trait ConfigMapIndexesExt",
        "> ConfigMapIndexesExt for L",
        "impl ConfigMapIndexes {",
        "pub const INDEX_NAMES : & 'static [& 'static str] = & [\"by_backup\" , \"by_app\" , \"by_node\" , \"by_team\"]",
        "pub fn indexers () -> :: informer :: store :: Indexers < ConfigMap >",
        "pub fn add_to (indexer : & :: informer :: store :: Indexer < ConfigMap >)",
        "impl :: informer :: informable :: IndexSet < ConfigMap > for ConfigMapIndexes",
        "[`IndexSet::add_to`](::informer::informable::IndexSet::add_to)",
        ". with_index :: < ByNode > ()",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(!text.contains("Informable for"), "{text}");
    assert!(!text.contains("key_fn"), "{text}");
    syn::parse2::<syn::File>(output).expect("the expansion is valid Rust");
}

#[test]
fn foreign_misuses_are_reported_at_once() {
    let messages = errors(&config_map_indexes(quote! {
        foreign = true,
        key = keys::by_uid,
        lister_trait = ConfigMapIndexes,
        index(name = "by_app", path = "metadata.labels['ap']", fromat = "display"),
    }));
    let expected = [
        "`foreign` takes no value: write `foreign` alone, beside `kind = ...`",
        "unknown key `fromat` in `index(...)`; did you mean `format`?",
        "`foreign` declares indexes of a resource type of another crate: name the type with `kind = ...`, e.g. `kind = ConfigMap`",
        "`key` cannot go with `foreign`: a key function belongs to `impl Informable`, which only the crate of the resource type can write; give it to the informer (`InformerConfig::key_fn`) instead",
        "`lister_trait` names the generated query trait, and `ConfigMapIndexes` is already this struct's name: pick another",
    ];
    assert_eq!(messages, expected);

    let empty = errors(&config_map_indexes(quote!(kind = ConfigMap, foreign)));
    assert_eq!(
        empty,
        [
            "`foreign` declares indexes of another crate's type, but there is no `index(...)`: add one, e.g. `index(name = \"by_app\", path = \"metadata.labels['app']\")`"
        ]
    );

    let own_kind: DeriveInput = parse_quote! {
        #[informable(kind = SlimPod, foreign, index(name = "by_node", path = "spec.nodeName"))]
        struct SlimPod { metadata: ObjectMeta, spec: SlimPodSpec }
    };
    assert_eq!(
        errors(&own_kind),
        [
            "`foreign` is for a resource type of another crate, and `kind` is this struct `SlimPod`: remove `foreign`"
        ]
    );

    let crd = errors(&widget(quote! {
        kind = Widget, foreign, index(name = "by_color", path = "spec.color"),
    }));
    assert_eq!(
        crd,
        [
            "`foreign` is for a resource type of another crate, and a CRD's resource type is generated in this crate by `#[derive(CustomResource)]`: remove `foreign`"
        ]
    );
}

#[test]
fn a_query_trait_named_like_the_struct_is_reported() {
    // The trait and the struct would share a name: said at the attribute, not by rustc.
    let input: DeriveInput = parse_quote! {
        #[informable(lister_trait = Thing, index(name = "by_color", path = "color"))]
        struct Thing { metadata: ObjectMeta, color: String }
    };
    assert_eq!(
        errors(&input),
        [
            "`lister_trait` names the generated query trait, and `Thing` is already this struct's name: pick another"
        ]
    );
    // A unit struct with a `kind` and no `foreign`: what is missing is `foreign`,
    // whatever the struct's name (rustc's orphan-rule error never comes).
    let forgot_foreign = errors(&config_map_indexes(quote! {
        kind = ConfigMap, index(name = "by_app", path = "metadata.labels['app']"),
    }));
    assert_eq!(
        forgot_foreign,
        [
            "`ConfigMapIndexes` has no fields, so it is not the spec of `ConfigMap`: if `ConfigMap` is a type of another crate (a k8s-openapi type), add `foreign` to declare its indexes on this struct (`#[informable(kind = ConfigMap, foreign, ...)]`)"
        ]
    );
    // With fields, named `{Kind}Indexes`: the trait's name is what is said.
    let with_fields: DeriveInput = parse_quote! {
        #[informable(kind = ConfigMap, index(name = "by_app", path = "metadata.labels['app']"))]
        struct ConfigMapIndexes { x: String }
    };
    assert_eq!(
        errors(&with_fields),
        [
            "the query trait would be named `ConfigMapIndexes`, like this struct; if `ConfigMap` is a type of another crate (a k8s-openapi type), add `foreign` to declare its indexes on this struct, else name the trait with `lister_trait = ...`"
        ]
    );
    let crd: DeriveInput = parse_quote! {
        #[kube(group = "g", version = "v1", kind = "Widget")]
        #[informable(index(name = "by_color", path = "spec.color"))]
        struct WidgetIndexes { color: String }
    };
    assert_eq!(
        errors(&crd),
        [
            "the query trait would be named `WidgetIndexes`, like this struct: name it with `lister_trait = ...`"
        ]
    );
}

#[test]
fn derive_entry_point_reports_errors_as_compile_errors() {
    let good = expand::derive(quote! {
        #[informable(index(name = "by_color", path = "color"))]
        struct Thing { metadata: ObjectMeta, color: String }
    });
    let good = syn::parse2::<syn::File>(good).expect("items");
    assert!(
        good.items
            .iter()
            .any(|item| matches!(item, syn::Item::Struct(s) if s.ident == "ByColor"))
    );
    assert!(
        good.items
            .iter()
            .any(|item| matches!(item, syn::Item::Trait(t) if t.ident == "ThingIndexes"))
    );

    let bad = expand::derive(quote! {
        #[informable(index(name = "by_color", path = "colr"), index(name = "by_color", path = "color"))]
        struct Thing { metadata: ObjectMeta, color: String }
    })
    .to_string();
    assert_eq!(bad.matches("compile_error").count(), 2, "{bad}");
    assert!(bad.contains("did you mean `color`?"));
    assert!(bad.contains("duplicate index name"));

    let no_indexes = expand::derive(quote!(
        struct Plain {
            metadata: ObjectMeta,
        }
    ))
    .to_string();
    assert!(no_indexes.contains("INDEX_NAMES : & 'static [& 'static str] = & []"));
    assert!(
        !no_indexes.contains("trait"),
        "no query trait without indexes"
    );
}

fn flatten(tokens: TokenStream) -> Vec<TokenTree> {
    let mut out = Vec::new();
    for token in tokens {
        match token {
            TokenTree::Group(group) => {
                // A separator, so that `::` never pairs across a group boundary.
                out.push(TokenTree::Punct(proc_macro2::Punct::new(
                    '#',
                    proc_macro2::Spacing::Alone,
                )));
                out.extend(flatten(group.stream()));
            }
            other => out.push(other),
        }
    }
    out
}

fn owner_keys(index: &validate::Index) -> &validate::OwnerKeys {
    match &index.keys {
        Keys::Owner(keys) => keys,
        _ => panic!("not an owner index"),
    }
}

#[test]
fn owners_are_named_by_type_or_by_group_and_kind() {
    let m = model(&widget(quote! {
        index(name = "by_widget", owner(type = Widget, controller, name)),
        index(name = "by_cron_job", owner(type = "k8s_openapi::api::batch::v1::CronJob")),
        index(name = "by_batch", owner(kind = "CronJob", group = "batch", name)),
        index(name = "by_core", owner(kind = "Namespace", group = "", name)),
        index(name = "by_version", owner(kind = "Namespace", api_version = "v1")),
        index(name = "by_apps", owner(kind = "Deployment", api_version = "apps/v1beta2", controller)),
        index(name = "by_any", owner(controller)),
    }));
    let named = |i: usize| match &owner_keys(&m.indexes[i]).of {
        Some(OwnerOf::Named { group, kind }) => (group.as_str(), kind.as_str()),
        _ => panic!("not a named owner"),
    };
    let typed = |i: usize| match &owner_keys(&m.indexes[i]).of {
        Some(OwnerOf::Type(ty)) => tokens(ty),
        _ => panic!("not a typed owner"),
    };
    assert_eq!(typed(0), "Widget");
    assert_eq!(typed(1), "k8s_openapi :: api :: batch :: v1 :: CronJob");
    assert_eq!(named(2), ("batch", "CronJob"));
    assert_eq!(named(3), ("", "Namespace"));
    // The version only tells the group: `v1` is the core group's.
    assert_eq!(named(4), ("", "Namespace"));
    assert_eq!(named(5), ("apps", "Deployment"));
    assert!(owner_keys(&m.indexes[6]).of.is_none());
    let describe: Vec<&str> = m.indexes.iter().map(|i| i.describe.as_str()).collect();
    assert_eq!(
        describe,
        [
            "the controller owner references to a `Widget` (API group and kind of that type) (by owner name)",
            "the owner references to a `k8s_openapi::api::batch::v1::CronJob` (API group and kind of that type) (by owner UID)",
            "the owner references to a `CronJob` of API group `batch` (by owner name)",
            "the owner references to a `Namespace` of the core API group (by owner name)",
            "the owner references to a `Namespace` of the core API group (by owner UID)",
            "the controller owner references to a `Deployment` of API group `apps` (by owner UID)",
            "the controller owner references (by owner UID)",
        ]
    );
    let text = expand::expand(&m).to_string();
    for expected in [
        "owned_by :: < k8s_openapi :: api :: batch :: v1 :: CronJob > (reference)",
        "owner_is (reference , \"\" , \"Namespace\")",
        "owner_is (reference , \"apps\" , \"Deployment\") && reference . controller == :: core :: option :: Option :: Some (true)",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

/// What `owner(kind = "...")` without a group says: both ways to name the group.
fn kind_without_group(kind: &str, flags: &str, group: &str) -> String {
    format!(
        "`owner(kind = \"{kind}\")` would match a `{kind}` of any API group, and another \
         group's `{kind}` (a built-in one, another operator's) is another owner whose \
         children would be indexed as yours: name the group too. Did you mean \
         `owner(type = {kind}{flags})` (the owner's Rust type, in scope here), or \
         `owner(kind = \"{kind}\", group = \"{group}\"{flags})` (`group = \"\"` for the core group)?"
    )
}

#[test]
fn an_owner_without_its_group_and_other_owner_mistakes_are_reported_at_once() {
    let messages = errors(&widget(quote! {
        index(name = "by_cron_job", owner(kind = "CronJob", controller, name)),
        index(name = "by_parent", owner(kind = "Widget")),
        index(name = "by_both", owner(type = Widget, kind = "Widget", group = "example.com")),
        index(name = "by_two_groups", owner(kind = "X", group = "a", api_version = "a/v1")),
        index(name = "by_slash", owner(kind = "X", group = "a/v1")),
        index(name = "by_group_alone", owner(group = "batch")),
        index(name = "by_bad_version", owner(kind = "X", api_version = "batch")),
        index(name = "by_no_version", owner(kind = "X", api_version = "/v1")),
        index(name = "by_empty_kind", owner(kind = "", group = "a")),
        index(name = "by_name_alone", owner(controller, name)),
        index(name = "by_positional", owner(CronJob, controller)),
        index(name = "by_camel", owner(type = Widget, apiVersion = "a/v1")),
    }));
    let expected = [
        kind_without_group("CronJob", ", controller, name", "..."),
        // The annotated CRD's own kind: its group is known.
        kind_without_group("Widget", "", "example.com"),
        "`type = Widget` gives the owner's group and kind already: remove `kind`".into(),
        "`type = Widget` gives the owner's group and kind already: remove `group`".into(),
        "`group` and `api_version` both give the owner's API group: keep one (the version never matters)".into(),
        "`group` is the API group alone: write `group = \"a\"` (or `api_version = \"a/v1\"`)".into(),
        "`group` needs the owner's kind beside it: `owner(kind = \"...\", group = \"batch\")`".into(),
        "`batch` is not an apiVersion: write `group/version` (`batch/v1`), or the version alone for the core group (`v1`); did you mean `group = \"batch\"`?".into(),
        "`/v1` is not an apiVersion: write `group/version` (`batch/v1`), or the version alone for the core group (`v1`)".into(),
        "the owner's kind is empty".into(),
        "keying by the owner's name (`name`) needs the owner's group and kind, as names are unique only within a kind: add `type = Owner` or `kind = \"...\", group = \"...\"` to `owner(...)`".into(),
        "to name the owner by its Rust type, write `type = CronJob`".into(),
        "unknown key `apiVersion` in `owner(...)`; did you mean `api_version`?".into(),
    ];
    for message in &expected {
        assert!(
            messages.iter().any(|m| m == message),
            "missing {message:?} in {messages:#?}"
        );
    }
    assert_eq!(messages.len(), expected.len(), "{messages:#?}");
}
