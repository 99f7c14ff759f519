//! client-go: tools/cache/store_test.go

use std::collections::BTreeSet;

use informer::key::{KeyFn, ObjectKey};
use informer::store::{Indexers, Writer};
use k8s_openapi::api::core::v1::ConfigMap;

use crate::support::{name_of, value_of, valued};

// client-go: store_test.go TestCache (doTestStore)
#[test]
fn cache() {
    let mut store = Writer::<ConfigMap>::new();
    let reader = store.indexer();
    let foo = ObjectKey::cluster_scoped("foo");

    store.upsert(valued("foo", "bar"));
    assert_eq!(value_of(&reader.get(&foo).expect("added")), "bar");
    store.upsert(valued("foo", "baz"));
    assert_eq!(value_of(&reader.get(&foo).expect("updated")), "baz");
    store.delete(&valued("foo", ""));
    assert!(reader.get(&foo).is_none(), "deleted");

    // List.
    store.upsert(valued("a", "b"));
    store.upsert(valued("c", "d"));
    store.upsert(valued("e", "e"));
    let values = |r: &informer::store::Indexer<ConfigMap>| -> BTreeSet<String> {
        r.list().iter().map(|o| value_of(o).to_owned()).collect()
    };
    assert_eq!(
        values(&reader),
        BTreeSet::from(["b".into(), "d".into(), "e".into()])
    );

    // Replace: exactly the new content afterwards.
    store.replace([valued("foo", "foo"), valued("bar", "bar")]);
    assert_eq!(
        values(&reader),
        BTreeSet::from(["foo".into(), "bar".into()])
    );
    assert_eq!(reader.len(), 2);
}

// client-go: store_test.go TestIndex (doTestIndex)
#[test]
fn index() {
    let indexers = Indexers::new().with_fn("by_val", |o: &ConfigMap| [value_of(o).to_owned()]);
    let mut store = Writer::with_indexers(KeyFn::meta_namespace(), indexers).unwrap();
    let reader = store.indexer();
    store.upsert(valued("a", "b"));
    store.upsert(valued("c", "b"));
    store.upsert(valued("e", "f"));
    store.upsert(valued("g", "h"));
    for (value, expected) in [("b", vec!["a", "c"]), ("f", vec!["e"]), ("h", vec!["g"])] {
        // The objects sharing an index value with a given object.
        let found = reader.by_index_of("by_val", &valued("", value)).unwrap();
        let mut names: Vec<&str> = found.iter().map(|o| name_of(o)).collect();
        names.sort_unstable();
        assert_eq!(names, expected, "index value {value}");
    }
}
