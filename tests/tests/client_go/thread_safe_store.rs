//! client-go: tools/cache/thread_safe_store_test.go

use informer::key::{KeyFn, ObjectKey};
use informer::store::{Indexer, Indexers, Writer};
use k8s_openapi::api::core::v1::ConfigMap;

use crate::support::{value_of, valued};

/// A store with index `testIndexer` over the comma-separated values of each object.
fn store() -> Writer<ConfigMap> {
    let indexers = Indexers::new().with_fn("testIndexer", |o: &ConfigMap| {
        value_of(o)
            .split(',')
            .map(str::to_owned)
            .collect::<Vec<_>>()
    });
    Writer::with_indexers(KeyFn::meta_namespace(), indexers).unwrap()
}

/// The keys under `value` in `testIndexer`, sorted.
fn keys(reader: &Indexer<ConfigMap>, value: &str) -> Vec<String> {
    let mut keys: Vec<String> = reader
        .index_keys("testIndexer", value)
        .unwrap()
        .iter()
        .map(|k| k.to_string())
        .collect();
    keys.sort();
    keys
}

fn values(reader: &Indexer<ConfigMap>) -> Vec<String> {
    let mut values: Vec<String> = reader
        .index_values("testIndexer")
        .unwrap()
        .iter()
        .map(|v| v.to_string())
        .collect();
    values.sort();
    values
}

// client-go: thread_safe_store_test.go TestThreadSafeStoreDeleteRemovesEmptySetsFromIndex
#[test]
fn delete_removes_empty_sets_from_index() {
    let mut store = store();
    let reader = store.indexer();
    store.upsert(valued("testKey", "testKey"));
    assert_eq!(keys(&reader, "testKey"), ["testKey"]);
    store.delete_key(&ObjectKey::cluster_scoped("testKey"));
    // The value whose last object went away is gone from the index.
    assert!(values(&reader).is_empty());
    assert!(keys(&reader, "testKey").is_empty());
}

// client-go: thread_safe_store_test.go TestThreadSafeStoreAddKeepsNonEmptySetPostDeleteFromIndex
#[test]
fn delete_keeps_non_empty_set_in_index() {
    let mut store = store();
    let reader = store.indexer();
    store.upsert(valued("retain", "testIndex"));
    store.upsert(valued("delete", "testIndex"));
    assert_eq!(keys(&reader, "testIndex"), ["delete", "retain"]);
    store.delete_key(&ObjectKey::cluster_scoped("delete"));
    assert_eq!(values(&reader), ["testIndex"]);
    assert_eq!(keys(&reader, "testIndex"), ["retain"]);
}

// client-go: thread_safe_store_test.go TestThreadSafeStoreIndexingFunctionsWithMultipleValues
#[test]
fn indexing_functions_with_multiple_values() {
    let mut store = store();
    let r = store.indexer();
    store.upsert(valued("key1", "foo"));
    store.upsert(valued("key2", "bar"));
    assert_eq!(keys(&r, "foo"), ["key1"]);
    assert_eq!(keys(&r, "bar"), ["key2"]);

    store.upsert(valued("key2", "foo,bar"));
    assert_eq!(keys(&r, "foo"), ["key1", "key2"]);
    assert_eq!(keys(&r, "bar"), ["key2"]);

    store.upsert(valued("key1", "foo,bar"));
    assert_eq!(keys(&r, "foo"), ["key1", "key2"]);
    assert_eq!(keys(&r, "bar"), ["key1", "key2"]);

    store.upsert(valued("key3", "foo,bar,baz"));
    assert_eq!(keys(&r, "foo"), ["key1", "key2", "key3"]);
    assert_eq!(keys(&r, "bar"), ["key1", "key2", "key3"]);
    assert_eq!(keys(&r, "baz"), ["key3"]);

    store.upsert(valued("key1", "foo"));
    assert_eq!(keys(&r, "foo"), ["key1", "key2", "key3"]);
    assert_eq!(keys(&r, "bar"), ["key2", "key3"]);
    assert_eq!(keys(&r, "baz"), ["key3"]);

    store.upsert(valued("key2", "bar"));
    assert_eq!(keys(&r, "foo"), ["key1", "key3"]);
    assert_eq!(keys(&r, "bar"), ["key2", "key3"]);
    assert_eq!(keys(&r, "baz"), ["key3"]);

    store.delete_key(&ObjectKey::cluster_scoped("key1"));
    assert_eq!(keys(&r, "foo"), ["key3"]);
    assert_eq!(keys(&r, "bar"), ["key2", "key3"]);
    assert_eq!(keys(&r, "baz"), ["key3"]);

    store.delete_key(&ObjectKey::cluster_scoped("key3"));
    assert!(keys(&r, "foo").is_empty());
    assert_eq!(keys(&r, "bar"), ["key2"]);
    assert!(keys(&r, "baz").is_empty());
    assert_eq!(values(&r), ["bar"]);
}
