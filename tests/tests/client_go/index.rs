//! client-go: tools/cache/index_test.go

use informer::key::KeyFn;
use informer::store::{Indexers, Writer};
use k8s_openapi::api::core::v1::ConfigMap;

use crate::support::{object, sorted_names};

/// An object named `name` with the `users` annotation.
fn with_users(name: &str, users: &str) -> ConfigMap {
    let mut obj = object(None, name, &[]);
    obj.metadata.annotations = Some([("users".to_owned(), users.to_owned())].into());
    obj
}

// client-go: index_test.go TestGetIndexFuncValues
#[test]
fn get_index_func_values() {
    let indexers = Indexers::new().with_fn("testmodes", |o: &ConfigMap| {
        o.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("foo").cloned())
    });
    let mut store = Writer::with_indexers(KeyFn::meta_namespace(), indexers).unwrap();
    store.upsert(object(None, "one", &[("foo", "bar")]));
    store.upsert(object(None, "two", &[("foo", "bar")]));
    store.upsert(object(None, "tre", &[("foo", "biz")]));
    let mut values: Vec<String> = store
        .indexer()
        .index_values("testmodes")
        .unwrap()
        .iter()
        .map(|v| v.to_string())
        .collect();
    values.sort();
    assert_eq!(values, ["bar", "biz"]);
}

// client-go: index_test.go TestMultiIndexKeys
#[test]
fn multi_index_keys() {
    let indexers = Indexers::new().with_fn("byUser", |o: &ConfigMap| {
        let users = o.metadata.annotations.as_ref().map(|a| a["users"].clone());
        users
            .unwrap_or_default()
            .split(',')
            .map(str::to_owned)
            .collect::<Vec<_>>()
    });
    let mut store = Writer::with_indexers(KeyFn::meta_namespace(), indexers).unwrap();
    let reader = store.indexer();
    store.upsert(with_users("one", "ernie,bert"));
    store.upsert(with_users("two", "bert,oscar"));
    store.upsert(with_users("tre", "ernie,elmo"));
    let by_user = |user: &str| sorted_names(&reader.by_index("byUser", user).unwrap());
    assert_eq!(by_user("ernie"), ["one", "tre"]);
    assert_eq!(by_user("bert"), ["one", "two"]);
    assert_eq!(by_user("elmo"), ["tre"]);
    assert_eq!(by_user("oscar"), ["two"]);
    assert!(by_user("elmo1").is_empty());

    store.delete(&with_users("tre", "ernie,elmo"));
    assert_eq!(by_user("ernie"), ["one"]);
    assert!(by_user("elmo").is_empty());

    // An update re-indexes: two no longer has bert.
    store.upsert(with_users("two", "oscar"));
    assert_eq!(by_user("bert"), ["one"]);
}
