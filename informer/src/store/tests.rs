//! One test per store rule, a randomised model test and a concurrency test.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering},
        mpsc,
    },
    time::Duration,
};

use k8s_openapi::{
    api::core::v1::{ConfigMap, Namespace},
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use rand::{Rng, SeedableRng, rngs::StdRng};

use super::*;
use crate::key::{KeyFn, ObjectKey, ObjectKeyRef};
use crate::test_support::{self, version};

/// A ConfigMap `ns/name` with `labels` and resourceVersion `version`.
fn cm(key: &str, labels: &[(&str, &str)], version: u32) -> ConfigMap {
    test_support::config_map(key, labels, version)
}

fn names(objects: &[Arc<ConfigMap>]) -> BTreeSet<String> {
    objects
        .iter()
        .map(|o| ObjectKey::of(o.as_ref()).to_string())
        .collect()
}

fn set(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|s| s.to_string()).collect()
}

fn values(indexer: &Indexer<ConfigMap>, index: &str) -> BTreeSet<String> {
    indexer
        .index_values(index)
        .unwrap()
        .iter()
        .map(|v| v.to_string())
        .collect()
}

#[test]
fn objects_are_stored_once_by_key_and_read_back_as_shared_arcs() {
    let mut writer = Writer::new();
    let indexer = writer.indexer();
    assert!(indexer.is_empty());
    let a = Arc::new(cm("ns/a", &[], 1));
    assert!(writer.upsert(Arc::clone(&a)).is_none());
    writer.upsert(cm("ns/b", &[], 2));
    let old = writer
        .upsert(cm("ns/a", &[], 3))
        .expect("update returns the old object");
    assert!(Arc::ptr_eq(&old, &a));
    assert_eq!(indexer.len(), 2);
    let got = indexer.get(&ObjectKey::namespaced("ns", "a")).unwrap();
    assert_eq!(version(&got), 3);
    assert!(
        Arc::ptr_eq(&got, &indexer.get_by_key("ns/a").unwrap()),
        "no copies"
    );
    assert_eq!(names(&indexer.list()), set(&["ns/a", "ns/b"]));
    let keys: BTreeSet<String> = indexer.list_keys().iter().map(|k| k.to_string()).collect();
    assert_eq!(keys, set(&["ns/a", "ns/b"]));
    assert!(indexer.contains_key(ObjectKeyRef::new(Some("ns"), "b")));
    assert_eq!(version(&writer.delete(&cm("ns/b", &[], 0)).unwrap()), 2);
    assert!(
        writer
            .delete_key(&ObjectKey::namespaced("ns", "b"))
            .is_none()
    );
    assert_eq!(indexer.len(), 1);
    writer.clear();
    assert!(indexer.is_empty());
}

#[test]
fn get_by_key_takes_client_go_string_keys() {
    let mut writer = Writer::<Namespace>::new();
    writer.upsert(Namespace {
        metadata: ObjectMeta {
            name: Some("default".into()),
            ..Default::default()
        },
        ..Default::default()
    });
    let indexer = writer.indexer();
    assert!(indexer.get_by_key("default").is_some());
    assert!(indexer.get_by_key("x/default").is_none());
    assert!(
        indexer.get_by_key("a/b/c").is_none(),
        "malformed keys find nothing"
    );
    assert!(indexer.get_by_key("").is_none());
    assert_eq!(
        values(&Writer::<ConfigMap>::new().indexer(), NAMESPACE_INDEX),
        BTreeSet::new()
    );
    assert!(
        indexer.index_values(NAMESPACE_INDEX).unwrap().is_empty(),
        "cluster-scoped objects have no namespace value"
    );
}

#[test]
fn the_namespace_index_is_built_in() {
    let mut writer = Writer::new();
    writer.upsert(cm("a/x", &[], 1));
    writer.upsert(cm("a/y", &[], 1));
    writer.upsert(cm("b/x", &[], 1));
    let indexer = writer.indexer();
    assert_eq!(indexer.index_names(), [NAMESPACE_INDEX]);
    assert_eq!(
        names(&indexer.by_index(NAMESPACE_INDEX, "a").unwrap()),
        set(&["a/x", "a/y"])
    );
    assert!(indexer.by_index(NAMESPACE_INDEX, "c").unwrap().is_empty());
    assert_eq!(values(&indexer, NAMESPACE_INDEX), set(&["a", "b"]));
    let keys = indexer.index_keys(NAMESPACE_INDEX, "b").unwrap();
    assert_eq!(
        keys.iter().map(|k| k.to_string()).collect::<Vec<_>>(),
        ["b/x"]
    );
}

#[test]
fn indexes_are_updated_incrementally_on_update_and_delete() {
    let mut writer = Writer::with_indexers(
        KeyFn::meta_namespace(),
        Indexers::new()
            .with_label_index("app")
            .with_fn("tiers", |cm: &ConfigMap| {
                cm.metadata
                    .labels
                    .iter()
                    .flatten()
                    .filter(|(k, _)| k.starts_with("tier"))
                    .map(|(_, v)| v.clone())
                    .collect::<Vec<_>>()
            }),
    )
    .unwrap();
    let indexer = writer.indexer();
    let app = label_index_name("app");
    writer.upsert(cm(
        "ns/a",
        &[("app", "web"), ("tier1", "fe"), ("tier2", "be")],
        1,
    ));
    writer.upsert(cm("ns/b", &[("app", "web")], 1));
    assert_eq!(
        names(&indexer.by_index(&app, "web").unwrap()),
        set(&["ns/a", "ns/b"])
    );
    assert_eq!(values(&indexer, "tiers"), set(&["be", "fe"]));
    writer.upsert(cm("ns/a", &[("app", "db"), ("tier1", "fe")], 2));
    assert_eq!(
        names(&indexer.by_index(&app, "web").unwrap()),
        set(&["ns/b"])
    );
    assert_eq!(
        names(&indexer.by_index(&app, "db").unwrap()),
        set(&["ns/a"])
    );
    assert_eq!(values(&indexer, "tiers"), set(&["fe"]));
    writer.delete_key(&ObjectKey::namespaced("ns", "b"));
    assert_eq!(values(&indexer, &app), set(&["db"]));
    let by_a = indexer
        .by_index_of(&app, &cm("x/y", &[("app", "db")], 0))
        .unwrap();
    assert_eq!(names(&by_a), set(&["ns/a"]));
}

/// The namespace index skips updates (and reads no old object) while an object stays
/// filed under its key's namespace; it must still move objects whose namespace is not
/// their key's, in either direction, and remove them from the right set.
#[test]
fn the_namespace_index_stays_exact_when_the_key_namespace_is_not_the_objects() {
    // Keys in namespace "k" whatever the object's namespace.
    let key_fn = KeyFn::owned(|cm: &ConfigMap| {
        ObjectKey::namespaced("k", cm.metadata.name.clone().unwrap_or_default())
    });
    let indexers = Indexers::new().with_namespace_index();
    let mut writer = Writer::with_indexers(key_fn, indexers).unwrap();
    let indexer = writer.indexer();
    let ids = |ns: &str| names(&indexer.by_index(NAMESPACE_INDEX, ns).unwrap());

    writer.upsert(cm("k/a", &[], 1)); // under its key's namespace
    writer.upsert(cm("x/b", &[], 1)); // not
    assert_eq!(ids("k"), set(&["k/a"]));
    assert_eq!(ids("x"), set(&["x/b"]));
    // Unchanged namespaces, both kinds.
    writer.upsert(cm("k/a", &[], 2));
    writer.upsert(cm("x/b", &[], 2));
    assert_eq!(ids("k"), set(&["k/a"]));
    assert_eq!(ids("x"), set(&["x/b"]));
    // Away from the key's namespace, and back to it.
    writer.upsert(cm("y/a", &[], 3));
    writer.upsert(cm("k/b", &[], 3));
    assert_eq!(ids("k"), set(&["k/b"]));
    assert_eq!(ids("y"), set(&["y/a"]));
    assert_eq!(values(&indexer, NAMESPACE_INDEX), set(&["k", "y"]));
    writer.upsert(cm("k/a", &[], 4));
    assert_eq!(ids("k"), set(&["k/a", "k/b"]));
    assert_eq!(values(&indexer, NAMESPACE_INDEX), set(&["k"]));
    // Deleting uses what is known about each object.
    writer.upsert(cm("z/b", &[], 5));
    writer.delete_key(&ObjectKey::namespaced("k", "a"));
    assert_eq!(ids("k"), BTreeSet::new());
    writer.delete_key(&ObjectKey::namespaced("k", "b"));
    assert!(values(&indexer, NAMESPACE_INDEX).is_empty());
}

/// A cluster-scoped key files nothing in the namespace index; a namespaced object under
/// such a key must still be indexed, moved and removed.
#[test]
fn the_namespace_index_handles_namespaced_objects_under_cluster_scoped_keys() {
    let key_fn =
        KeyFn::owned(|cm: &ConfigMap| ObjectKey::cluster_scoped(cm.metadata.name.clone().unwrap()));
    let mut writer = Writer::with_indexers(key_fn, Indexers::new().with_namespace_index()).unwrap();
    let indexer = writer.indexer();
    let ids = |ns: &str| indexer.index_keys(NAMESPACE_INDEX, ns).unwrap().len();
    writer.upsert(cm("a/x", &[], 1));
    assert_eq!(ids("a"), 1);
    writer.upsert(cm("b/x", &[], 2));
    assert_eq!((ids("a"), ids("b")), (0, 1));
    writer.delete_key(&ObjectKey::cluster_scoped("x"));
    assert!(values(&indexer, NAMESPACE_INDEX).is_empty());
}

/// An index function that claims to index the namespace but does not: the store must
/// not trust the claim.
#[test]
fn a_namespace_index_that_breaks_its_contract_is_still_kept_exact() {
    struct Liar;
    impl IndexFunc<ConfigMap> for Liar {
        fn index_values(&self, obj: &ConfigMap, emit: &mut dyn FnMut(&str)) {
            if let Some(app) = obj.metadata.labels.as_ref().and_then(|l| l.get("app")) {
                emit(app);
            }
        }
        fn indexed_field(&self) -> IndexedField<'_> {
            IndexedField::Namespace
        }
    }
    let mut writer =
        Writer::with_indexers(KeyFn::meta_namespace(), Indexers::new().with("liar", Liar)).unwrap();
    let indexer = writer.indexer();
    writer.upsert(cm("ns/a", &[("app", "ns")], 1)); // happens to equal the namespace
    writer.upsert(cm("ns/a", &[("app", "web")], 2));
    assert_eq!(values(&indexer, "liar"), set(&["web"]));
    writer.upsert(cm("ns/a", &[("app", "ns")], 3));
    writer.upsert(cm("ns/a", &[("app", "ns")], 4));
    assert_eq!(values(&indexer, "liar"), set(&["ns"]));
    writer.delete_key(&ObjectKey::namespaced("ns", "a"));
    assert!(values(&indexer, "liar").is_empty());
}

#[test]
fn empty_index_sets_are_removed_so_churn_does_not_leak() {
    let mut writer = Writer::with_indexers(
        KeyFn::meta_namespace(),
        Indexers::new()
            .with_namespace_index()
            .with_label_index("id"),
    )
    .unwrap();
    let indexer = writer.indexer();
    let id = label_index_name("id");
    for round in 0..20 {
        for i in 0..50 {
            let value = format!("v{round}-{i}");
            writer.upsert(cm(&format!("ns{i}/o{i}"), &[("id", &value)], round));
        }
        for i in 0..50 {
            writer.upsert(cm(&format!("ns{i}/o{i}"), &[("id", "moved")], round));
        }
        for i in 0..50 {
            writer.delete_key(&ObjectKey::namespaced(format!("ns{i}"), format!("o{i}")));
        }
        assert!(
            indexer.index_values(&id).unwrap().is_empty(),
            "round {round}"
        );
        assert!(indexer.index_values(NAMESPACE_INDEX).unwrap().is_empty());
    }
    assert!(indexer.is_empty());
}

#[test]
fn add_indexers_after_objects_exist_builds_the_index_over_them() {
    let mut writer = Writer::new();
    writer.upsert(cm("ns/a", &[("app", "web")], 1));
    writer.upsert(cm("ns/b", &[("app", "db")], 1));
    let indexer = writer.indexer();
    let app = label_index_name("app");
    assert!(matches!(
        indexer.by_index(&app, "web"),
        Err(StoreError::IndexNotFound(_))
    ));
    indexer
        .add_indexers(Indexers::new().with_label_index("app"))
        .unwrap();
    assert_eq!(
        names(&indexer.by_index(&app, "web").unwrap()),
        set(&["ns/a"])
    );
    writer.upsert(cm("ns/c", &[("app", "web")], 1));
    assert_eq!(
        names(&indexer.by_index(&app, "web").unwrap()),
        set(&["ns/a", "ns/c"])
    );
}

#[test]
fn add_indexers_rejects_conflicting_names_all_or_nothing() {
    let writer = Writer::<ConfigMap>::new();
    let indexer = writer.indexer();
    let clash = Indexers::new()
        .with("fresh", |_: &ConfigMap| ["x"])
        .with_namespace_index();
    assert_eq!(
        indexer.add_indexers(clash),
        Err(StoreError::IndexConflict(NAMESPACE_INDEX.into()))
    );
    assert_eq!(
        indexer.index_names(),
        [NAMESPACE_INDEX],
        "nothing was added"
    );
    let twice = Indexers::new()
        .with_fn("dup", |_: &ConfigMap| None::<String>)
        .with_fn("dup", |_: &ConfigMap| None::<String>);
    assert!(matches!(
        indexer.add_indexers(twice),
        Err(StoreError::IndexConflict(_))
    ));
    assert!(
        Writer::with_indexers(
            KeyFn::meta_namespace(),
            Indexers::<ConfigMap>::new()
                .with_namespace_index()
                .with_namespace_index()
        )
        .is_err()
    );
}

#[test]
fn queries_on_an_unknown_index_are_errors() {
    let indexer = Writer::<ConfigMap>::new().indexer();
    let missing = StoreError::IndexNotFound("nope".into());
    assert_eq!(indexer.by_index("nope", "x"), Err(missing.clone()));
    assert_eq!(indexer.index_keys("nope", "x"), Err(missing.clone()));
    assert_eq!(indexer.index_values("nope"), Err(missing.clone()));
    assert_eq!(
        indexer.by_index_of("nope", &cm("a/b", &[], 0)),
        Err(missing)
    );
}

#[test]
fn replace_swaps_the_content_and_keeps_indexes_exact() {
    let mut writer = Writer::new();
    let indexer = writer.indexer();
    indexer
        .add_indexers(Indexers::new().with_label_index("app"))
        .unwrap();
    let app = label_index_name("app");
    writer.upsert(cm("a/keep", &[("app", "web")], 1));
    writer.upsert(cm("a/gone", &[("app", "db")], 1));
    writer.upsert(cm("b/gone", &[("app", "web")], 1));
    writer.replace([
        cm("a/keep", &[("app", "cache")], 2),
        cm("c/new", &[("app", "web")], 2),
        cm("c/twice", &[("app", "db")], 2),
        cm("c/twice", &[("app", "web")], 3),
    ]);
    assert_eq!(names(&indexer.list()), set(&["a/keep", "c/new", "c/twice"]));
    assert_eq!(
        version(&indexer.get_by_key("c/twice").unwrap()),
        3,
        "the later one wins"
    );
    assert_eq!(values(&indexer, NAMESPACE_INDEX), set(&["a", "c"]));
    assert_eq!(values(&indexer, &app), set(&["cache", "web"]));
    assert_eq!(
        names(&indexer.by_index(&app, "web").unwrap()),
        set(&["c/new", "c/twice"])
    );
    writer.replace(Vec::<ConfigMap>::new());
    assert!(indexer.is_empty());
    assert!(indexer.index_values(&app).unwrap().is_empty());
}

/// An object that counts how many instances are alive.
struct Tracked {
    name: String,
    live: Arc<AtomicIsize>,
}

impl Tracked {
    fn new(name: String, live: &Arc<AtomicIsize>) -> Self {
        live.fetch_add(1, Ordering::SeqCst);
        Self {
            name,
            live: Arc::clone(live),
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn replace_never_holds_two_copies_of_the_content() {
    fn key(t: &Tracked) -> ObjectKeyRef<'_> {
        ObjectKeyRef::new(None, &t.name)
    }
    const N: usize = 200;
    let live = Arc::new(AtomicIsize::new(0));
    let mut writer = Writer::with_key_fn(KeyFn::borrowed(key));
    for i in 0..N {
        writer.upsert(Tracked::new(format!("o{i}"), &live));
    }
    assert_eq!(live.load(Ordering::SeqCst), N as isize);
    let mut peak = 0;
    // The new list is produced lazily: each object exists only once it is handed over.
    let relist = (0..N).map(|i| {
        let now = live.load(Ordering::SeqCst);
        peak = peak.max(now);
        Tracked::new(format!("o{i}"), &live)
    });
    writer.replace(relist);
    assert!(
        peak <= N as isize,
        "old objects are released as they are replaced (peak {peak})"
    );
    assert_eq!(live.load(Ordering::SeqCst), N as isize);
    writer.replace(std::iter::empty::<Tracked>());
    assert_eq!(live.load(Ordering::SeqCst), 0);
}

#[test]
fn keys_are_shared_between_the_map_and_the_indexes() {
    let mut writer = Writer::new();
    let key = Arc::new(ObjectKey::namespaced("ns", "a"));
    writer.upsert_keyed(&key, Arc::new(cm("ns/a", &[], 1)));
    writer.upsert_keyed(
        &Arc::new(ObjectKey::namespaced("ns", "a")),
        Arc::new(cm("ns/a", &[], 2)),
    );
    let indexer = writer.indexer();
    assert!(
        Arc::ptr_eq(&indexer.list_keys()[0], &key),
        "the first key allocation is kept"
    );
    assert!(Arc::ptr_eq(
        &indexer.index_keys(NAMESPACE_INDEX, "ns").unwrap()[0],
        &key
    ));
    assert_eq!(version(&indexer.get(&key).unwrap()), 2);
}

#[test]
fn a_borrowed_key_finds_the_object_stored_under_a_shared_key() {
    let mut writer = Writer::new();
    let key = Arc::new(ObjectKey::namespaced("ns", "a"));
    writer.upsert_keyed(&key, Arc::new(cm("ns/a", &[], 1)));
    let indexer = writer.indexer();
    let borrowed = ObjectKeyRef::parse("ns/a").unwrap();
    assert_eq!(version(&indexer.get_ref(borrowed).unwrap()), 1);
    assert!(indexer.contains_key(borrowed));
    assert!(Arc::ptr_eq(&indexer.stored_key(borrowed).unwrap(), &key));
    assert!(
        indexer
            .get_ref(ObjectKeyRef::parse("ns/b").unwrap())
            .is_none()
    );
    // `upsert` looks the object's own borrowed key up: same slot, same key.
    writer.upsert(cm("ns/a", &[], 2));
    assert_eq!(indexer.len(), 1);
    assert_eq!(version(&indexer.get_ref(borrowed).unwrap()), 2);
    assert!(Arc::ptr_eq(&indexer.list_keys()[0], &key));
    let removed = writer.delete_key(&ObjectKey::namespaced("ns", "a"));
    assert_eq!(version(&removed.unwrap()), 2);
    assert!(indexer.is_empty());
}

#[test]
fn selectors_on_an_indexed_label_are_answered_from_the_index() {
    let mut writer = Writer::new();
    let indexer = writer.indexer();
    indexer
        .add_indexers(Indexers::new().with_label_index("app"))
        .unwrap();
    for i in 0..1000 {
        let app = format!("app{}", i % 100);
        writer.upsert(cm(
            &format!("ns{}/o{i}", i % 10),
            &[("app", &app), ("tier", "fe")],
            1,
        ));
    }
    let eq = Selector::parse("app=app7,tier=fe").unwrap();
    assert_eq!(indexer.candidates_for_tests(None, &eq), Some(10));
    assert_eq!(indexer.select(&eq).len(), 10);
    let set_based = Selector::parse("app in (app1,app2,nope)").unwrap();
    assert_eq!(indexer.candidates_for_tests(None, &set_based), Some(20));
    assert_eq!(indexer.select(&set_based).len(), 20);
    // Namespaced: the smaller of the namespace set (100) and the label set (10).
    assert_eq!(indexer.candidates_for_tests(Some("ns7"), &eq), Some(10));
    assert_eq!(names(&indexer.select_in_namespace("ns7", &eq)).len(), 10);
    assert_eq!(indexer.select_in_namespace("ns3", &eq).len(), 0);
    // Without a usable index requirement: the namespace index, or a scan.
    let unindexed = Selector::parse("tier=fe").unwrap();
    assert_eq!(
        indexer.candidates_for_tests(Some("ns1"), &unindexed),
        Some(100)
    );
    assert_eq!(indexer.candidates_for_tests(None, &unindexed), None);
    assert_eq!(indexer.select(&unindexed).len(), 1000);
    let negative = Selector::parse("app!=app7").unwrap();
    assert_eq!(indexer.candidates_for_tests(None, &negative), None);
    assert_eq!(indexer.select(&negative).len(), 990);
    assert_eq!(
        indexer
            .select_in_namespace("ns0", &Selector::everything())
            .len(),
        100
    );
}

#[test]
fn reads_never_block_on_other_reads() {
    let mut writer = Writer::new();
    writer.upsert(cm("ns/a", &[], 1));
    let indexer = writer.indexer();
    let mut visited = 0;
    indexer.for_each(|_, _| {
        // A read lock is held here; another thread's read must still go through.
        let (tx, rx) = mpsc::channel();
        let other = indexer.clone();
        std::thread::spawn(move || tx.send(other.get_by_key("ns/a").is_some()).unwrap());
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(true));
        visited += 1;
    });
    assert_eq!(visited, 1);
}

#[test]
fn closures_and_custom_index_functions_work() {
    struct ByDataKeys;
    impl IndexFunc<ConfigMap> for ByDataKeys {
        fn index_values(&self, obj: &ConfigMap, emit: &mut dyn FnMut(&str)) {
            obj.data.iter().flatten().for_each(|(k, _)| emit(k));
        }
    }
    let mut writer = Writer::new();
    let indexer = writer.indexer();
    indexer
        .add_indexers(
            Indexers::new()
                .with("data-keys", ByDataKeys)
                .with_fn("name-len", |cm: &ConfigMap| {
                    cm.metadata.name.as_ref().map(|n| n.len().to_string())
                }),
        )
        .unwrap();
    let mut obj = cm("ns/abc", &[], 1);
    obj.data = Some(
        [
            ("x".to_owned(), String::new()),
            ("y".to_owned(), String::new()),
        ]
        .into(),
    );
    writer.upsert(obj);
    assert_eq!(values(&indexer, "data-keys"), set(&["x", "y"]));
    assert_eq!(indexer.by_index("name-len", "3").unwrap().len(), 1);
}

// ---------------------------------------------------------------------------------------
// Randomised model test

const NAMESPACES: [&str; 3] = ["a", "b", "c"];
const APPS: [&str; 3] = ["web", "db", "cache"];

fn random_object(rng: &mut StdRng, version: u32) -> ConfigMap {
    let ns = NAMESPACES[rng.random_range(0..NAMESPACES.len())];
    let name = format!("o{}", rng.random_range(0..8));
    let mut labels = Vec::new();
    if rng.random_bool(0.8) {
        labels.push(("app", APPS[rng.random_range(0..APPS.len())]));
    }
    if rng.random_bool(0.5) {
        labels.push(("tier", if rng.random_bool(0.5) { "fe" } else { "be" }));
    }
    cm(&format!("{ns}/{name}"), &labels, version)
}

fn check_against_model(
    indexer: &Indexer<ConfigMap>,
    model: &BTreeMap<String, Arc<ConfigMap>>,
    tier_indexed: bool,
    ctx: &str,
) {
    assert_eq!(indexer.len(), model.len(), "{ctx}: len");
    for (key, obj) in model {
        let got = indexer
            .get_by_key(key)
            .unwrap_or_else(|| panic!("{ctx}: {key} missing"));
        assert!(Arc::ptr_eq(&got, obj), "{ctx}: {key} differs");
    }
    let by = |f: &dyn Fn(&ConfigMap) -> bool| -> BTreeSet<String> {
        model
            .iter()
            .filter(|(_, o)| f(o))
            .map(|(k, _)| k.clone())
            .collect()
    };
    for ns in NAMESPACES {
        assert_eq!(
            names(&indexer.by_index(NAMESPACE_INDEX, ns).unwrap()),
            by(&|o| o.metadata.namespace.as_deref() == Some(ns)),
            "{ctx}: namespace {ns}"
        );
    }
    let label_values = |label: &str| -> BTreeSet<String> {
        model
            .values()
            .filter_map(|o| o.metadata.labels.as_ref()?.get(label).cloned())
            .collect()
    };
    let app = label_index_name("app");
    assert_eq!(
        values(indexer, &app),
        label_values("app"),
        "{ctx}: app values"
    );
    assert_eq!(
        values(indexer, NAMESPACE_INDEX),
        model
            .values()
            .filter_map(|o| o.metadata.namespace.clone())
            .collect(),
        "{ctx}: namespaces"
    );
    for v in APPS {
        assert_eq!(
            names(&indexer.by_index(&app, v).unwrap()),
            by(&|o| o
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app"))
                .map(String::as_str)
                == Some(v)),
            "{ctx}: app={v}"
        );
    }
    if tier_indexed {
        assert_eq!(
            values(indexer, &label_index_name("tier")),
            label_values("tier"),
            "{ctx}: tier"
        );
    }
    for s in [
        "app=web",
        "app in (db,cache),tier",
        "tier=fe,app!=db",
        "!app",
        "app=web,tier in (be)",
    ] {
        let sel = Selector::parse(s).unwrap();
        assert_eq!(
            names(&indexer.select(&sel)),
            by(&|o| sel.matches_object(o)),
            "{ctx}: {s}"
        );
        for ns in NAMESPACES {
            assert_eq!(
                names(&indexer.select_in_namespace(ns, &sel)),
                by(&|o| o.metadata.namespace.as_deref() == Some(ns) && sel.matches_object(o)),
                "{ctx}: {s} in {ns}"
            );
        }
    }
}

#[test]
fn randomised_operations_agree_with_a_reference_model() {
    for seed in 0..40u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut writer = Writer::new();
        let indexer = writer.indexer();
        indexer
            .add_indexers(Indexers::new().with_label_index("app"))
            .unwrap();
        let mut model: BTreeMap<String, Arc<ConfigMap>> = BTreeMap::new();
        let mut tier_indexed = false;
        for step in 0..200u32 {
            match rng.random_range(0..100) {
                0..55 => {
                    let obj = Arc::new(random_object(&mut rng, step));
                    let key = ObjectKey::of(obj.as_ref()).to_string();
                    let old = writer.upsert(Arc::clone(&obj));
                    let expected = model.insert(key, obj);
                    assert_eq!(old.is_some(), expected.is_some());
                }
                55..85 => {
                    let obj = random_object(&mut rng, step);
                    let key = ObjectKey::of(&obj);
                    let removed = writer.delete_key(&key);
                    assert_eq!(removed.is_some(), model.remove(&key.to_string()).is_some());
                }
                85..95 => {
                    let list: Vec<Arc<ConfigMap>> = (0..rng.random_range(0..20))
                        .map(|_| Arc::new(random_object(&mut rng, step)))
                        .collect();
                    writer.replace(list.iter().cloned());
                    model = list
                        .into_iter()
                        .map(|o| (ObjectKey::of(o.as_ref()).to_string(), o))
                        .collect();
                }
                _ => {
                    if !tier_indexed {
                        indexer
                            .add_indexers(Indexers::new().with_label_index("tier"))
                            .unwrap();
                        tier_indexed = true;
                    }
                }
            }
            check_against_model(
                &indexer,
                &model,
                tier_indexed,
                &format!("seed {seed} step {step}"),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Concurrency

#[test]
fn many_readers_during_writes_see_consistent_results() {
    const READERS: usize = 4;
    let mut writer = Writer::<ConfigMap>::new();
    let indexer = writer.indexer();
    indexer
        .add_indexers(Indexers::new().with_label_index("app"))
        .unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let readers: Vec<_> = (0..READERS)
        .map(|r| {
            let indexer = indexer.clone();
            let done = Arc::clone(&done);
            let reads = Arc::clone(&reads);
            std::thread::spawn(move || {
                let web = Selector::parse("app=web").unwrap();
                let app = label_index_name("app");
                while !done.load(Ordering::Relaxed) {
                    let ns = NAMESPACES[r % NAMESPACES.len()];
                    for o in indexer.by_index(NAMESPACE_INDEX, ns).unwrap() {
                        assert_eq!(o.metadata.namespace.as_deref(), Some(ns));
                    }
                    for o in indexer.select(&web) {
                        assert_eq!(o.metadata.labels.as_ref().unwrap()["app"], "web");
                    }
                    for o in indexer.by_index(&app, "db").unwrap() {
                        assert_eq!(o.metadata.labels.as_ref().unwrap()["app"], "db");
                    }
                    for o in indexer.select_in_namespace(ns, &web) {
                        assert_eq!(o.metadata.namespace.as_deref(), Some(ns));
                    }
                    let list = indexer.list();
                    assert!(list.len() <= NAMESPACES.len() * 8);
                    if let Some(first) = list.first() {
                        let key = ObjectKey::of(first.as_ref());
                        // Either the same object, a newer one, or deleted meanwhile.
                        if let Some(now) = indexer.get(&key) {
                            assert!(version(&now) >= version(first));
                        }
                    }
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let mut rng = StdRng::seed_from_u64(7);
    let mut model: BTreeMap<String, Arc<ConfigMap>> = BTreeMap::new();
    for step in 0..20_000u32 {
        match rng.random_range(0..100) {
            0..70 => {
                let obj = Arc::new(random_object(&mut rng, step));
                model.insert(ObjectKey::of(obj.as_ref()).to_string(), Arc::clone(&obj));
                writer.upsert(obj);
            }
            70..98 => {
                let key = ObjectKey::of(&random_object(&mut rng, step));
                model.remove(&key.to_string());
                writer.delete_key(&key);
            }
            _ => {
                let list: Vec<Arc<ConfigMap>> = (0..10)
                    .map(|_| Arc::new(random_object(&mut rng, step)))
                    .collect();
                model = list
                    .iter()
                    .map(|o| (ObjectKey::of(o.as_ref()).to_string(), Arc::clone(o)))
                    .collect();
                writer.replace(list);
            }
        }
    }
    // Let the readers run against the final state too.
    std::thread::sleep(Duration::from_millis(20));
    done.store(true, Ordering::Relaxed);
    for reader in readers {
        reader.join().unwrap();
    }
    assert!(reads.load(Ordering::Relaxed) > 0);
    check_against_model(&indexer, &model, false, "after concurrent writes");
}
