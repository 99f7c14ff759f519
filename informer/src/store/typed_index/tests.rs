//! Unit tests of typed indexes on their own: hand-written markers on a built-in type,
//! key encodings, and the `encode` contract. The derive's output is tested in
//! `informable/tests.rs`.

use std::borrow::Cow;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{AsIndexKey, Index, IndexKey};
use crate::lister::Lister;
use crate::store::{Indexers, Writer};
use crate::test_support::names;

// --- A built-in type, indexed by a hand-written marker. ---

struct ByDataKey;

impl Index<ConfigMap> for ByDataKey {
    const NAME: &'static str = "by_data_key";
    type Value = String;
    fn encode(value: &String) -> Cow<'_, str> {
        value.index_key()
    }
    fn index_values(object: &ConfigMap, emit: &mut dyn FnMut(&str)) {
        for key in object.data.iter().flat_map(|d| d.keys()) {
            emit(key);
        }
    }
}

#[test]
fn built_in_types_take_hand_written_indexes() {
    let mut writer = Writer::<ConfigMap>::with_indexers(
        Default::default(),
        Indexers::new().with_index::<ByDataKey>(),
    )
    .unwrap();
    writer.upsert(ConfigMap {
        metadata: ObjectMeta {
            name: Some("settings".into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        data: Some([("color".to_owned(), "red".to_owned())].into()),
        ..ConfigMap::default()
    });
    let lister = Lister::new(writer.indexer());
    assert_eq!(names(&lister.by_index::<ByDataKey>("color")), ["settings"]);
    assert!(lister.by_index::<ByDataKey>("size").is_empty());
}

// --- Keys and their string forms. ---

#[test]
// Encoding through references is part of what is tested.
#[allow(clippy::needless_borrow)]
fn keys_encode_once_and_strings_pass_through() {
    assert_eq!(42u64.index_key(), "42");
    assert_eq!((-1i8).index_key(), "-1");
    assert_eq!(true.index_key(), "true");
    assert_eq!('x'.index_key(), "x");
    assert!(matches!("s".index_key(), Cow::Borrowed("s")));
    assert!(matches!(String::from("s").index_key(), Cow::Borrowed("s")));

    fn by_key(s: &String) -> Cow<'_, str> {
        s.index_key()
    }
    assert_eq!("a".as_index_key(by_key), "a");
    assert_eq!(String::from("b").as_index_key(by_key), "b");
    assert_eq!((&String::from("c")).as_index_key(by_key), "c");
    assert_eq!(Cow::<str>::Borrowed("d").as_index_key(by_key), "d");
    assert_eq!(Arc::<str>::from("e").as_index_key(by_key), "e");
    assert_eq!(Box::<str>::from("f").as_index_key(by_key), "f");
    assert_eq!(7i64.as_index_key(i64::index_key), "7");
    assert_eq!((&7i64).as_index_key(i64::index_key), "7");
}

/// Breaks the `encode` contract for `String` keys.
struct ByLowercaseName;

impl Index<ConfigMap> for ByLowercaseName {
    const NAME: &'static str = "by_lowercase_name";
    type Value = String;
    fn encode(value: &String) -> Cow<'_, str> {
        Cow::Owned(value.to_lowercase())
    }
    fn index_values(object: &ConfigMap, emit: &mut dyn FnMut(&str)) {
        if let Some(name) = &object.metadata.name {
            emit(&name.to_lowercase());
        }
    }
}

#[test]
#[should_panic(expected = "`Index::encode` must return a `String` key unchanged")]
fn debug_builds_catch_a_string_encoding_that_is_not_the_identity() {
    let writer = Writer::<ConfigMap>::new();
    let lister = Lister::new(writer.indexer());
    let _ = lister.by_index::<ByLowercaseName>("Settings");
}
