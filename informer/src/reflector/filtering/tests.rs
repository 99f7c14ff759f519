//! The key filter in the reflector and the informer: what is kept, what is skipped,
//! and the relist a new generation brings. [`FakeSource`] and the scripted
//! lister-watcher do not filter keys, so these drive the reflector's own filtering;
//! the decoders' (what [`ApiListerWatcher`](crate::reflector::source::ApiListerWatcher) does)
//! have their unit tests beside them, and the integration tests run both against a
//! real server.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;

use super::*;
use crate::key::ObjectKey;
use crate::reflector::source::{FakeSource, ListPage, ListWatch, WatchEvent};
use crate::reflector::tests::{Call, Script, cm, list, page, run};
use crate::reflector::{Config, DecodeError, ReflectorError};
use crate::reflector::{ControlledBy, FnKeyFilter, KeyFilter, ObjectHead};
use crate::shared_informer::{
    InformerConfig, Notification, SharedIndexInformer, wait_for_cache_sync,
};
use crate::test_support::{config_map, names, spawn_run, until};

/// A filter keeping the names listed.
fn keeping(kept: &[&str]) -> Arc<FnKeyFilter> {
    let kept: Vec<String> = kept.iter().map(|name| (*name).to_owned()).collect();
    Arc::new(FnKeyFilter::new(move |_, name| {
        kept.iter().any(|k| k == name)
    }))
}

/// Makes `filter` keep the names listed (and moves its generation on).
fn keep(filter: &FnKeyFilter, kept: &[&str]) {
    let kept: Vec<String> = kept.iter().map(|name| (*name).to_owned()).collect();
    filter.set(move |_, name| kept.iter().any(|k| k == name));
}

fn source_with(names: &[&str]) -> FakeSource<ConfigMap> {
    let source = FakeSource::new();
    for name in names {
        source.add(config_map(&format!("ns/{name}"), &[], 0));
    }
    source
}

fn filtered_informer(
    source: &FakeSource<ConfigMap>,
    filter: Arc<FnKeyFilter>,
    streaming_list: bool,
) -> SharedIndexInformer<ConfigMap> {
    let config = Config::default()
        .key_filter(filter)
        .streaming_list(streaming_list);
    SharedIndexInformer::with_config(source.clone(), InformerConfig::default().reflector(config))
        .expect("no indexes")
}

/// How long a test waits for what it expects.
const WAIT: Duration = Duration::from_secs(5);

fn cached(informer: &SharedIndexInformer<ConfigMap>) -> Vec<String> {
    names(&informer.lister().list_all())
}

/// A first list, by a plain list or a streaming one, fills the cache with the kept
/// objects only, and counts the others.
#[tokio::test]
async fn a_list_keeps_only_what_the_filter_keeps() {
    for streaming_list in [false, true] {
        let source = source_with(&["a", "b", "c", "d"]);
        let informer = filtered_informer(&source, keeping(&["a", "c"]), streaming_list);
        let (stop, running) = spawn_run(&informer);
        wait_for_cache_sync(&[&informer]).await;
        assert_eq!(cached(&informer), ["a", "c"], "streaming: {streaming_list}");
        let stats = informer.reflector_stats().expect("started");
        assert_eq!(stats.filtered_out, 2);
        assert_eq!(stats.streaming_list_requests > 0, streaming_list);
        stop.send(()).ok();
        running.await.expect("joined").expect("ran");
    }
}

/// Watch events about keys not kept, adds, updates and deletes alike, never reach the
/// cache or the handlers; the resourceVersion still moves past them.
#[tokio::test]
async fn watch_events_of_keys_not_kept_are_skipped() {
    let source = source_with(&["a", "b"]);
    let informer = filtered_informer(&source, keeping(&["a", "new-a", "last"]), false);
    let mut notifications = informer.subscribe().expect("subscribed");
    let (stop, running) = spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;

    source.modify(config_map("ns/b", &[("v", "2")], 0));
    source.add(config_map("ns/new-b", &[], 0));
    source.add(config_map("ns/new-a", &[], 0));
    source.delete(config_map("ns/b", &[], 0));
    // The last change is one not kept: the informer's version reaches it anyway.
    let last = source.resource_version();
    until("the last skipped event", WAIT, || {
        informer.last_sync_resource_version() == last
    })
    .await;

    assert_eq!(cached(&informer), ["a", "new-a"]);
    // Notifications come in order: had a skipped change leaked, it would come before
    // the last one.
    source.add(config_map("ns/last", &[], 0));
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(match notifications.next().await.expect("a notification") {
            Notification::Add { object, .. } => format!("add {}", ObjectKey::of(&*object)),
            other => format!("{other:?}"),
        });
    }
    assert_eq!(seen, ["add ns/a", "add ns/new-a", "add ns/last"]);
    let stats = informer.reflector_stats().expect("started");
    assert_eq!(stats.filtered_out, 1 + 3, "one listed, three watched");
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
}

/// A skipped event moves the resourceVersion on as a bookmark would, whether the
/// lister-watcher skipped it ([`WatchEvent::FilteredOut`]) or the reflector did: the
/// next watch starts after it, so nothing is replayed.
#[tokio::test(start_paused = true)]
async fn the_resource_version_moves_past_skipped_events() {
    let script = Script::default();
    script
        .lists
        .lock()
        .unwrap()
        .push_back(page(&["a", "b"], "10", None));
    script.watches.lock().unwrap().push_back(Ok(vec![
        Ok(WatchEvent::Added(cm("c", "11"))),
        Ok(WatchEvent::Modified(cm("a", "12"))),
        Ok(WatchEvent::Deleted(cm("b", "13"))),
        Ok(WatchEvent::filtered_out("14")),
    ]));
    script
        .watches
        .lock()
        .unwrap()
        .push_back(Ok(vec![Ok(WatchEvent::Modified(cm("b", "15")))]));
    let run = run(script, Config::default().key_filter(keeping(&["a"])));
    tokio::time::sleep(Duration::from_secs(10)).await;

    assert_eq!(
        run.calls()[..3],
        [
            list("0", Some(500), None),
            Call::Watch("10".into()),
            Call::Watch("14".into()),
        ]
    );
    assert_eq!(run.log(), ["replace [a] at 10", "update a"]);
    assert_eq!(run.reflector.last_sync_resource_version(), "15");
    assert_eq!(run.reflector.stats().filtered_out, 1 + 3 + 1);
}

fn undecodable(key: &str, rv: &str) -> WatchEvent<ConfigMap> {
    WatchEvent::Undecodable(ReflectorError::Decode(DecodeError {
        kind: "ConfigMap".into(),
        key: key.into(),
        resource_version: Some(rv.into()),
        object_key: ObjectKey::parse(key).ok().map(Arc::new),
        source: serde_json::from_str::<ConfigMap>(r#"{"data":7}"#).unwrap_err(),
    }))
}

/// An object not kept that would not decode is nobody's error here: not reported, and
/// the store is not told to forget it (it never held it); a kept one is reported as
/// ever. Listed ones alike.
#[tokio::test(start_paused = true)]
async fn an_undecodable_object_not_kept_is_not_reported() {
    let script = Script::default();
    let mut listed = page(&["a"], "10", None).unwrap();
    for key in ["ns/bad-b", "ns/bad-a"] {
        let WatchEvent::Undecodable(ReflectorError::Decode(error)) = undecodable(key, "9") else {
            unreachable!()
        };
        listed.undecodable.push(error);
    }
    script.lists.lock().unwrap().push_back(Ok(listed));
    script.watches.lock().unwrap().push_back(Ok(vec![
        Ok(undecodable("ns/b", "11")),
        Ok(undecodable("ns/a", "12")),
        Ok(undecodable("ns/c", "13")),
    ]));
    let run = run(
        script,
        Config::default().key_filter(keeping(&["a", "bad-a"])),
    );
    tokio::time::sleep(Duration::from_secs(10)).await;

    assert_eq!(run.log(), ["replace [a] at 10", "forget ns/a"]);
    assert_eq!(
        *run.errors.lock().unwrap(),
        [
            "could not decode ConfigMap ns/bad-a: invalid type: integer `7`, expected a map at line 1 column 9",
            "could not decode ConfigMap ns/a: invalid type: integer `7`, expected a map at line 1 column 9"
        ]
    );
    assert_eq!(run.calls()[2], Call::Watch("13".into()));
}

/// A new generation ends the watch and relists at once: objects now kept arrive as
/// adds, objects no longer kept leave as tombstones (the relist's deletions), and the
/// cache holds exactly the kept set. By plain lists and by streaming ones.
#[tokio::test]
async fn a_new_generation_relists_and_the_cache_holds_exactly_the_kept_set() {
    for streaming_list in [false, true] {
        let source = source_with(&["a", "b", "c", "d"]);
        let filter = keeping(&["a", "b"]);
        let informer = filtered_informer(&source, filter.clone(), streaming_list);
        let mut notifications = informer.subscribe().expect("subscribed");
        let (stop, running) = spawn_run(&informer);
        wait_for_cache_sync(&[&informer]).await;
        for _ in 0..2 {
            notifications.next().await.expect("an initial add");
        }

        keep(&filter, &["b", "c", "d"]);
        let mut adds = Vec::new();
        let mut deletes = Vec::new();
        while adds.len() < 2 || deletes.is_empty() {
            match notifications.next().await.expect("a notification") {
                Notification::Add {
                    object,
                    is_initial_list,
                } => {
                    assert!(!is_initial_list);
                    adds.push(ObjectKey::of(&*object).to_string());
                }
                Notification::Delete(gone) => {
                    assert!(gone.is_final_state_unknown(), "a tombstone");
                    deletes.push(ObjectKey::of(&**gone.object()).to_string());
                }
                // `b` is relisted unchanged: an update of it to itself.
                Notification::Update { old, new } => {
                    assert_eq!(old.metadata.name.as_deref(), Some("b"));
                    assert_eq!(old, new);
                }
            }
        }
        adds.sort();
        assert_eq!(adds, ["ns/c", "ns/d"], "streaming: {streaming_list}");
        assert_eq!(deletes, ["ns/a"]);
        assert_eq!(cached(&informer), ["b", "c", "d"]);
        let stats = informer.reflector_stats().expect("started");
        assert_eq!(stats.filter_relists, 1);
        assert_eq!(stats.lists, 2);

        // Changes after the relist are filtered by the new generation.
        source.add(config_map("ns/a", &[("again", "yes")], 0));
        source.modify(config_map("ns/c", &[("v", "2")], 0));
        until("the update of c", WAIT, || {
            informer.lister().namespaced("ns").get("c").is_ok_and(|c| {
                c.metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key("v"))
            })
        })
        .await;
        assert_eq!(cached(&informer), ["b", "c", "d"]);
        stop.send(()).ok();
        running.await.expect("joined").expect("ran");
    }
}

/// Generation changes that come together make one relist, at once: at the last
/// version seen (not back in time) and whole, so the watch cache serves it, with the
/// filter as the last change left it.
#[tokio::test(start_paused = true)]
async fn quick_generation_changes_coalesce_into_one_relist() {
    let script = Script::default();
    script.lists.lock().unwrap().extend([
        page(&["a", "b", "c"], "10", None),
        page(&["a", "b", "c"], "12", None),
    ]);
    script
        .watches
        .lock()
        .unwrap()
        .push_back(Ok(vec![Ok(WatchEvent::Added(cm("d", "11")))]));
    let filter = keeping(&["a", "d"]);
    let run = run(script, Config::default().key_filter(filter.clone()));
    tokio::time::sleep(Duration::from_secs(5)).await;
    keep(&filter, &["b"]);
    keep(&filter, &["a", "b"]);
    keep(&filter, &["c"]);
    // At once: no backoff before a relist nothing went wrong to cause.
    tokio::time::sleep(Duration::from_millis(10)).await;

    assert_eq!(
        run.calls(),
        [
            list("0", Some(500), None),
            Call::Watch("10".into()),
            Call::Watch("11".into()),
            list("11", None, None),
            Call::Watch("12".into()),
        ]
    );
    assert_eq!(
        run.log(),
        ["replace [a] at 10", "add d", "replace [c] at 12"]
    );
    assert_eq!(run.reflector.stats().filter_relists, 1);
    assert!(run.errors.lock().unwrap().is_empty());
}

/// A change while a list is in flight: that list was filtered by whatever the filter
/// said as it went, so another relist follows it, and the store ends with what the
/// filter keeps after the last change.
#[tokio::test(start_paused = true)]
async fn a_change_during_a_list_relists_again_after_it() {
    let filter = keeping(&["a"]);
    let lists = Arc::new(AtomicUsize::new(0));
    let source = ListWatch::new(
        {
            let (filter, lists) = (filter.clone(), lists.clone());
            move |_request| {
                // The second list (the first relist) sees the filter change under it.
                if lists.fetch_add(1, Ordering::SeqCst) == 1 {
                    keep(&filter, &["c"]);
                }
                async move {
                    Ok(ListPage {
                        items: ["a", "b", "c"].map(|name| cm(name, "10")).into(),
                        resource_version: "10".into(),
                        ..ListPage::default()
                    })
                }
            }
        },
        |_request| async move { Ok(futures::stream::pending()) },
    );
    let store = Arc::new(crate::reflector::tests::Store::default());
    let reflector = Arc::new(crate::reflector::Reflector::from_parts(
        Arc::new(source),
        store.clone(),
        Config::default().key_filter(filter.clone()),
    ));
    let running = tokio::spawn({
        let reflector = reflector.clone();
        async move { reflector.run(std::future::pending()).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    keep(&filter, &["b"]);
    tokio::time::sleep(Duration::from_secs(1)).await;

    assert_eq!(lists.load(Ordering::SeqCst), 3);
    assert_eq!(
        *store.log.lock().unwrap(),
        [
            "replace [a] at 10",
            "replace [c] at 10",
            "replace [c] at 10"
        ]
    );
    assert_eq!(reflector.stats().filter_relists, 2);
    running.abort();
}

/// Requests carry the filter as the config gives it, compared by identity.
#[tokio::test(start_paused = true)]
async fn requests_carry_the_configured_filter() {
    let filter: Arc<dyn KeyFilter> = keeping(&["a"]);
    let script = Script {
        streaming: true,
        ..Script::default()
    };
    script
        .watches
        .lock()
        .unwrap()
        .push_back(Err(crate::reflector::tests::status(
            422,
            "no streaming lists",
        )));
    script
        .lists
        .lock()
        .unwrap()
        .push_back(page(&[], "10", None));
    let run = run(script, Config::default().key_filter(filter.clone()));
    tokio::time::sleep(Duration::from_secs(5)).await;
    let expected = Some(SharedKeyFilter::new(filter));
    let requests = run.script.watch_requests.lock().unwrap();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert!(requests.iter().all(|r| r.key_filter == expected));
    assert_ne!(expected, Some(SharedKeyFilter::new(keeping(&["a"]))));
}

/// A store that moves the filter's generation on when it is told to add `b`.
struct ChangingOnAdd {
    log: crate::reflector::tests::Store,
    filter: Arc<FnKeyFilter>,
}

impl crate::reflector::ReflectorStore<ConfigMap> for ChangingOnAdd {
    fn add(&self, object: ConfigMap) {
        if object.metadata.name.as_deref() == Some("b") {
            keep(&self.filter, &["a", "b", "c", "d"]);
        }
        self.log.add(object);
    }
    fn update(&self, object: ConfigMap) {
        self.log.update(object);
    }
    fn delete(&self, object: ConfigMap) {
        self.log.delete(object);
    }
    fn replace(&self, objects: Vec<ConfigMap>, unchanged: Vec<Arc<ConfigMap>>, rv: &str) {
        self.log.replace(objects, unchanged, rv);
    }
    fn resync(&self) {}
}

/// A new generation ends the watch at the next event boundary even while events keep
/// coming: the events after the change are not applied, the relist brings their
/// outcome.
#[tokio::test(start_paused = true)]
async fn a_change_ends_a_busy_watch_at_the_next_event() {
    let filter = keeping(&["a", "b", "c", "d"]);
    let lists = Arc::new(AtomicUsize::new(0));
    let source = ListWatch::new(
        {
            let lists = lists.clone();
            move |_request| {
                let names: &[&str] = if lists.fetch_add(1, Ordering::SeqCst) == 0 {
                    &["a"]
                } else {
                    &["a", "b", "c", "d"]
                };
                let listed = page(names, if names.len() == 1 { "10" } else { "13" }, None);
                async move { listed }
            }
        },
        |request: crate::reflector::source::WatchRequest| async move {
            let events = if request.resource_version == "10" {
                vec![
                    Ok(WatchEvent::Added(cm("b", "11"))),
                    Ok(WatchEvent::Added(cm("c", "12"))),
                    Ok(WatchEvent::Added(cm("d", "13"))),
                ]
            } else {
                Vec::new()
            };
            // All ready at once: the stream never waits between them.
            Ok(futures::stream::iter(events).chain(futures::stream::pending()))
        },
    );
    let store = Arc::new(ChangingOnAdd {
        log: crate::reflector::tests::Store::default(),
        filter: filter.clone(),
    });
    let reflector = Arc::new(crate::reflector::Reflector::from_parts(
        Arc::new(source),
        store.clone(),
        Config::default().key_filter(filter),
    ));
    let running = tokio::spawn({
        let reflector = reflector.clone();
        async move { reflector.run(std::future::pending()).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;

    assert_eq!(
        *store.log.log.lock().unwrap(),
        ["replace [a] at 10", "add b", "replace [a,b,c,d] at 13"]
    );
    assert_eq!(reflector.stats().filter_relists, 1);
    running.abort();
}

/// A [`ControlledBy`] filter on a lister-watcher that does not filter: the reflector
/// reads the controller of each decoded object, keeps the children of kept owners,
/// and relists onto the new owners' children when the owners' filter changes.
#[tokio::test]
async fn a_controlled_by_filter_follows_the_owners_filter() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    let source = FakeSource::new();
    let child = |name: &str, owner: &str, controller: bool| {
        let mut cm = config_map(&format!("ns/{name}"), &[], 0);
        cm.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: owner.into(),
            uid: format!("uid-{owner}"),
            controller: Some(controller),
            ..OwnerReference::default()
        }]);
        cm
    };
    source.add(child("web-1", "web", true));
    source.add(child("web-2", "web", true));
    source.add(child("api-1", "api", true));
    source.add(child("web-weak", "web", false));
    source.add(config_map("ns/orphan", &[], 0));
    let owners = keeping(&["web"]);
    let filter = Arc::new(ControlledBy::<Deployment>::new(owners.clone()));
    let config = Config::default().key_filter(filter);
    let informer = SharedIndexInformer::with_config(
        source.clone(),
        InformerConfig::default().reflector(config),
    )
    .expect("no indexes");
    let (stop, running) = spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    assert_eq!(cached(&informer), ["web-1", "web-2"]);
    assert_eq!(informer.reflector_stats().expect("started").filtered_out, 3);

    // A new child of a kept owner arrives by watch; one of another owner does not.
    source.add(child("web-3", "web", true));
    source.add(child("api-2", "api", true));
    until("web-3 to be cached", WAIT, || cached(&informer).len() == 3).await;

    keep(&owners, &["api"]);
    until("the relist onto api's children", WAIT, || {
        cached(&informer) == ["api-1", "api-2"]
    })
    .await;
    assert_eq!(
        informer.reflector_stats().expect("started").filter_relists,
        1
    );
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
}

/// Keeps the objects whose controller is named `mine`.
struct ControlledByMine(tokio::sync::watch::Sender<u64>);

impl KeyFilter for ControlledByMine {
    fn keeps(&self, _: Option<&str>, _: &str) -> bool {
        false
    }
    fn generation(&self) -> tokio::sync::watch::Receiver<u64> {
        self.0.subscribe()
    }
    fn keeps_object(&self, head: &ObjectHead<'_>) -> bool {
        head.controller.is_some_and(|c| c.name == "mine")
    }
}

fn controlled(key: &str, controller: Option<&str>, version: &str) -> ConfigMap {
    let mut cm = config_map(key, &[("v", version)], 0);
    cm.metadata.owner_references = controller.map(|name| {
        vec![
            k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: name.into(),
                uid: format!("{name}-uid"),
                controller: Some(true),
                ..Default::default()
            },
        ]
    });
    cm
}

/// An object the cache holds whose new state the key filter no longer keeps (its
/// controller changed, or went) leaves the cache at that event, the handlers told with
/// its last cached state, as a relist would drop it; a deletion of one that left is
/// nothing more. The filter's generation never moves, so no relist comes.
#[tokio::test]
async fn an_object_whose_new_state_the_filter_does_not_keep_leaves_the_cache() {
    let source = FakeSource::new();
    for name in ["a", "b", "c"] {
        source.add(controlled(&format!("ns/{name}"), Some("mine"), "1"));
    }
    let filter = Arc::new(ControlledByMine(tokio::sync::watch::Sender::new(0)));
    let informer = SharedIndexInformer::with_config(
        source.clone(),
        InformerConfig::default().reflector(Config::default().key_filter(filter)),
    )
    .expect("no indexes");
    let mut notifications = informer.subscribe().expect("subscribed");
    let (stop, running) = spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    assert_eq!(cached(&informer), ["a", "b", "c"]);

    source.modify(controlled("ns/a", Some("theirs"), "2"));
    source.modify(controlled("ns/b", None, "2"));
    source.delete(controlled("ns/a", Some("theirs"), "2"));
    source.modify(controlled("ns/c", Some("mine"), "2"));
    let mut seen = Vec::new();
    for _ in 0..6 {
        seen.push(match notifications.next().await.expect("a notification") {
            Notification::Add { object, .. } => format!("add {}", ObjectKey::of(&*object)),
            Notification::Update { new, .. } => format!("update {}", ObjectKey::of(&*new)),
            Notification::Delete(gone) => {
                let last = gone.object();
                let version = kube::ResourceExt::labels(&**last)
                    .get("v")
                    .cloned()
                    .unwrap_or_default();
                format!("delete {} at v{version}", ObjectKey::of(&**last))
            }
        });
    }
    assert_eq!(
        seen,
        [
            "add ns/a",
            "add ns/b",
            "add ns/c",
            "delete ns/a at v1",
            "delete ns/b at v1",
            "update ns/c"
        ]
    );
    assert_eq!(cached(&informer), ["c"]);
    let stats = informer.reflector_stats().expect("started");
    assert_eq!(stats.lists, 1, "no relist");
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
}
