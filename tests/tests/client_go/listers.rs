//! client-go: tools/cache/listers_test.go (with a tenth of the objects: the rule is
//! the same, the run shorter).

use informer::lister::Lister;
use informer::store::{Selector, Writer};
use k8s_openapi::api::core::v1::ConfigMap;

use crate::support::object;

/// client-go's `mustCreateStore`: `objects` objects, the first `matching` of them
/// with `labels`.
fn lister(objects: usize, matching: usize, labels: &[(&str, &str)]) -> Lister<ConfigMap> {
    let mut store = Writer::new();
    for i in 0..objects {
        let labels = if i < matching { labels } else { &[] };
        store.upsert(object(None, &format!("obj-{i}"), labels));
    }
    Lister::new(store.indexer())
}

// client-go: listers_test.go TestListAll "subset match"
#[test]
fn list_all_subset_match() {
    let lister = lister(10_000, 1_000, &[("match", "true")]);
    let selector = Selector::from_labels([("match", "true")]).unwrap();
    assert_eq!(lister.list(&selector).len(), 1_000);
}

// client-go: listers_test.go TestListAll "all match"
#[test]
fn list_all_all_match() {
    let lister = lister(100_000, 0, &[]);
    assert_eq!(lister.list(&Selector::everything()).len(), 100_000);
}

// client-go: listers_test.go TestListAll "no match"
#[test]
fn list_all_no_match() {
    let lister = lister(100_000, 100_000, &[("nomatch", "true")]);
    let selector = Selector::from_labels([("match", "true")]).unwrap();
    assert!(lister.list(&selector).is_empty());
}
