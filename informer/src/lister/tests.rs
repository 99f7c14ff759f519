//! A miss before sync is not a NotFound.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

use super::*;
use crate::store::Writer;

/// A cache's synced flag, set by hand.
#[derive(Default)]
struct Flag(AtomicBool);

impl HasSynced for Flag {
    fn has_synced(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

fn config_map(namespace: &str, name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some(namespace.into());
    cm.metadata.name = Some(name.into());
    cm
}

fn namespace(name: &str) -> Namespace {
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.into());
    ns
}

#[test]
fn a_miss_is_not_synced_until_the_cache_syncs_then_not_found() {
    let mut writer = Writer::<ConfigMap>::new();
    writer.upsert(config_map("ns", "there"));
    let flag = Arc::new(Flag::default());
    let lister = Lister::with_synced(writer.indexer(), Arc::clone(&flag));
    let in_ns = lister.namespaced("ns");
    assert!(!lister.has_synced());
    assert!(!in_ns.has_synced());

    // What the cache holds is returned, synced or not.
    assert!(in_ns.get("there").is_ok());
    let early = in_ns.get("missing").unwrap_err();
    assert_eq!(
        early,
        LookupError::NotSynced {
            kind: "ConfigMap",
            key: ObjectKey::namespaced("ns", "missing"),
        }
    );
    assert!(early.is_not_synced() && !early.is_not_found());
    assert_eq!(
        early.to_string(),
        "ConfigMap ns/missing not in the cache, which has not synced yet"
    );

    flag.0.store(true, Ordering::SeqCst);
    assert!(in_ns.has_synced());
    let late = in_ns.get("missing").unwrap_err();
    assert!(late.is_not_found(), "{late:?}");
    assert_eq!(late.key(), &ObjectKey::namespaced("ns", "missing"));
    assert_eq!(
        late.to_string(),
        "ConfigMap ns/missing not found in the cache"
    );
}

#[test]
fn cluster_scoped_gets_tell_the_two_apart_too() {
    let writer = Writer::<Namespace>::new();
    let flag = Arc::new(Flag::default());
    let lister = Lister::with_synced(writer.indexer(), Arc::clone(&flag));
    assert!(lister.get("kube-system").unwrap_err().is_not_synced());
    flag.0.store(true, Ordering::SeqCst);
    assert!(lister.get("kube-system").unwrap_err().is_not_found());
}

#[test]
fn a_lister_over_a_bare_indexer_counts_as_synced() {
    let mut writer = Writer::<Namespace>::new();
    writer.upsert(namespace("default"));
    let lister = Lister::new(writer.indexer());
    assert!(lister.has_synced());
    assert_eq!(
        lister.store_resource_version(),
        "",
        "no informer, no version"
    );
    assert!(lister.get("default").is_ok());
    assert_eq!(
        lister.get("other").unwrap_err(),
        LookupError::NotFound {
            kind: "Namespace",
            key: ObjectKey::cluster_scoped("other"),
        }
    );
}
