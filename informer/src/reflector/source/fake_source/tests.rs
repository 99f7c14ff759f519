//! The fake source on its own (what it lists, replays, streams and refuses), then
//! driving a [`SharedIndexInformer`] as a user's unit test would.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;

use super::*;
use crate::fifo::DeletedObject;
use crate::reflector::ReflectorError;
use crate::shared_informer::{
    InformerConfig, Notification, ResourceEventHandlerFns, SharedIndexInformer, wait_for_cache_sync,
};
use crate::test_support::{config_map, spawn_run, version};

/// `ns/name` with one label, `state=<state>`, to tell an object's states apart (its
/// resourceVersion is the source's to set).
fn object(key: &str, state: &str) -> ConfigMap {
    config_map(key, &[("state", state)], 0)
}

fn state(obj: &ConfigMap) -> &str {
    obj.labels().get("state").map_or("", String::as_str)
}

fn watch_from(resource_version: &str) -> WatchRequest {
    WatchRequest {
        resource_version: resource_version.into(),
        timeout: Duration::from_secs(300),
        allow_bookmarks: true,
        streaming_list: false,
        key_filter: None,
    }
}

fn streaming_list_from(resource_version: &str) -> WatchRequest {
    WatchRequest {
        streaming_list: true,
        ..watch_from(resource_version)
    }
}

/// An event as `ADDED ns/name@rv`, or the error's status code.
fn describe(event: Result<WatchEvent<ConfigMap>, kube::Error>) -> String {
    let (kind, obj) = match event {
        Ok(WatchEvent::Added(obj)) => ("ADDED", obj),
        Ok(WatchEvent::Modified(obj)) => ("MODIFIED", obj),
        Ok(WatchEvent::Deleted(obj)) => ("DELETED", obj),
        Ok(other) => return format!("{other:?}"),
        Err(e) => return format!("error {:?}", crate::reflector::error::api_status_code(&e)),
    };
    format!("{kind} {}@{}", ObjectKey::of(&obj), version(&obj))
}

/// The next `n` events of `stream`.
async fn next(stream: &mut WatchStream<ConfigMap>, n: usize) -> Vec<String> {
    let mut events = Vec::new();
    for _ in 0..n {
        events.push(describe(stream.next().await.expect("an event")));
    }
    events
}

fn status_code(result: Result<impl Sized, kube::Error>) -> Option<u16> {
    crate::reflector::error::api_status_code(&result.err().expect("an error"))
}

#[tokio::test]
async fn each_change_stamps_the_next_resource_version_and_a_list_returns_the_collection_in_key_order()
 {
    let source = FakeSource::new();
    assert_eq!(source.resource_version(), "0");
    assert_eq!(version(&source.add(object("default/web", "v1"))), 1);
    source.add(object("default/db", "v1"));
    source.add(object("default/cache", "v1"));
    source.modify(object("default/web", "v2"));
    assert_eq!(version(&source.delete(object("default/cache", "v1"))), 5);

    let page = source
        .list(ListRequest {
            resource_version: "0".into(),
            limit: Some(1),
            continue_token: None,
            key_filter: None,
        })
        .await
        .expect("listed");
    assert_eq!(page.resource_version, "5");
    assert_eq!(page.continue_token, None, "no paging");
    let listed: Vec<_> = page
        .items
        .iter()
        .map(|o| format!("{}@{} {}", ObjectKey::of(o), version(o), state(o)))
        .collect();
    assert_eq!(listed, ["default/db@2 v1", "default/web@4 v2"]);
    assert_eq!(source.objects().len(), 2);
}

#[tokio::test]
async fn a_watch_replays_the_changes_after_its_version_then_streams_new_ones() {
    let source = FakeSource::new();
    source.add(object("default/web", "v1"));
    source.add(object("default/db", "v1"));
    source.modify(object("default/web", "v2"));

    let mut stream = source.watch(watch_from("1")).await.expect("watching");
    assert_eq!(
        next(&mut stream, 2).await,
        ["ADDED default/db@2", "MODIFIED default/web@3"]
    );
    source.delete(object("default/db", "v1"));
    assert_eq!(next(&mut stream, 1).await, ["DELETED default/db@4"]);
    assert_eq!(source.watcher_count(), 1);
}

/// As the API server does for a watch without a version: the current objects as
/// ADDED first.
#[tokio::test]
async fn a_watch_from_zero_starts_with_an_add_for_every_object() {
    let source = FakeSource::new();
    source.add(object("default/web", "v1"));
    source.add(object("default/db", "v1"));
    source.modify(object("default/web", "v2"));
    for from in ["0", ""] {
        let mut stream = source.watch(watch_from(from)).await.expect("watching");
        assert_eq!(
            next(&mut stream, 2).await,
            ["ADDED default/db@2", "ADDED default/web@3"]
        );
    }
}

/// The streaming-list protocol, as the API server serves it: every object as ADDED,
/// the bookmark that ends the initial events at the current version, then changes.
#[tokio::test]
async fn a_streaming_list_sends_every_object_then_the_end_bookmark_then_new_changes() {
    let source = FakeSource::new();
    source.add(object("default/web", "v1"));
    source.add(object("default/db", "v1"));
    source.modify(object("default/web", "v2"));
    source.compact();
    // NotOlderThan: any version reached so far, however old, is served from now.
    let mut streams = Vec::new();
    for from in ["", "1", "3"] {
        let mut stream = source
            .watch(streaming_list_from(from))
            .await
            .expect("streaming");
        assert_eq!(
            next(&mut stream, 3).await,
            [
                "ADDED default/db@2",
                "ADDED default/web@3",
                r#"Bookmark { resource_version: "3", initial_events_end: true }"#
            ]
        );
        streams.push(stream);
    }
    source.delete(object("default/db", "v1"));
    for stream in &mut streams {
        assert_eq!(next(stream, 1).await, ["DELETED default/db@4"]);
    }
    assert_eq!(source.streaming_list_requests(), 3);
}

/// A version the source has not reached is "too large" (a 504 the reflector reads as
/// such); a refusing source answers as a 1.20 server does, and still serves the rest.
#[tokio::test]
async fn a_streaming_list_from_ahead_is_too_large_and_a_refusing_source_answers_422() {
    let source = FakeSource::new();
    source.add(object("default/web", "v1"));
    let ahead = source.watch(streaming_list_from("2")).await;
    let error = ahead.err().expect("too large");
    assert!(crate::reflector::error::is_too_large_resource_version(
        &error
    ));

    source.refuse_streaming_lists();
    assert_eq!(
        status_code(source.watch(streaming_list_from("")).await),
        Some(422)
    );
    let mut stream = source.watch(watch_from("0")).await.expect("watching");
    assert_eq!(next(&mut stream, 1).await, ["ADDED default/web@1"]);
    assert_eq!(source.streaming_list_requests(), 2);
}

#[tokio::test]
async fn after_compaction_a_watch_from_an_older_version_is_gone_and_one_from_now_goes_on() {
    let source = FakeSource::new();
    source.add(object("default/web", "v1"));
    source.add(object("default/db", "v1"));
    source.compact();
    assert_eq!(status_code(source.watch(watch_from("1")).await), Some(410));
    let mut stream = source.watch(watch_from("2")).await.expect("watching");
    source.modify(object("default/web", "v2"));
    assert_eq!(next(&mut stream, 1).await, ["MODIFIED default/web@3"]);
    assert_eq!(status_code(source.watch(watch_from("x")).await), Some(400));
}

#[tokio::test]
async fn a_missed_deletion_sends_no_event_and_ends_open_watches_with_gone() {
    let source = FakeSource::new();
    let web = source.add(object("default/web", "v1"));
    source.add(object("default/db", "v1"));
    let mut stream = source.watch(watch_from("2")).await.expect("watching");
    source.delete_missed(&web);
    assert_eq!(next(&mut stream, 1).await, ["error Some(410)"]);
    assert!(stream.next().await.is_none());
    assert_eq!(source.resource_version(), "3");
    assert_eq!(status_code(source.watch(watch_from("2")).await), Some(410));
    let names: Vec<_> = source.objects().iter().map(ResourceExt::name_any).collect();
    assert_eq!(names, ["db"]);
}

#[tokio::test]
async fn disconnect_ends_open_watches_and_shutdown_refuses_what_follows() {
    let source = FakeSource::<ConfigMap>::new();
    let mut stream = source.watch(watch_from("0")).await.expect("watching");
    source.disconnect();
    assert!(stream.next().await.is_none());
    assert_eq!(source.watcher_count(), 0);

    let mut stream = source.watch(watch_from("0")).await.expect("watching again");
    source.shutdown();
    assert!(stream.next().await.is_none());
    assert_eq!(status_code(source.watch(watch_from("0")).await), Some(503));
    assert_eq!(
        status_code(source.list(ListRequest::default()).await),
        Some(503)
    );
}

#[tokio::test]
async fn dropping_the_last_clone_ends_open_watches() {
    let source = FakeSource::<ConfigMap>::new();
    let mut stream = source.watch(watch_from("0")).await.expect("watching");
    drop(source);
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn a_watch_whose_reader_left_is_forgotten_at_the_next_change() {
    let source = FakeSource::new();
    let stream = source.watch(watch_from("0")).await.expect("watching");
    drop(stream);
    assert_eq!(source.watcher_count(), 1);
    source.add(object("default/web", "v1"));
    assert_eq!(source.watcher_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_watch_ends_at_its_timeout_as_the_server_ends_it() {
    let source = FakeSource::<ConfigMap>::new();
    let mut stream = source.watch(watch_from("0")).await.expect("watching");
    let started = tokio::time::Instant::now();
    assert!(stream.next().await.is_none());
    assert_eq!(started.elapsed(), Duration::from_secs(300));
}

// ---- Driving an informer, as a user's unit test would. ----

fn informer_over(source: &FakeSource<ConfigMap>) -> SharedIndexInformer<ConfigMap> {
    SharedIndexInformer::with_config(source.clone(), InformerConfig::default()).expect("no indexes")
}

/// A handler that reports each call as a line (`add web@1 v1 initial`, `update
/// web@1->4`, `delete db@6 final`), over a channel: handlers run on their own threads.
fn recording_handler() -> (
    ResourceEventHandlerFns<ConfigMap>,
    tokio::sync::mpsc::UnboundedReceiver<String>,
) {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    let (on_update, on_delete) = (sender.clone(), sender.clone());
    let handler = ResourceEventHandlerFns::new()
        .on_add(move |obj: &Arc<ConfigMap>, initial| {
            let initial = if initial { " initial" } else { "" };
            let line = format!(
                "add {}@{} {}{initial}",
                obj.name_any(),
                version(obj),
                state(obj)
            );
            sender.send(line).ok();
        })
        .on_update(move |old: &Arc<ConfigMap>, new: &Arc<ConfigMap>| {
            let line = format!(
                "update {}@{}->{} {}",
                new.name_any(),
                version(old),
                version(new),
                state(new)
            );
            on_update.send(line).ok();
        })
        .on_delete(move |deleted: DeletedObject<ConfigMap>| {
            let how = if deleted.is_final_state_unknown() {
                "tombstone"
            } else {
                "final"
            };
            let obj = deleted.object();
            let line = format!(
                "delete {}@{} {} {how}",
                obj.name_any(),
                version(obj),
                state(obj)
            );
            on_delete.send(line).ok();
        });
    (handler, receiver)
}

async fn lines(
    receiver: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    n: usize,
) -> Vec<String> {
    let mut lines = Vec::new();
    for _ in 0..n {
        lines.push(receiver.recv().await.expect("a notification"));
    }
    lines
}

#[tokio::test(start_paused = true)]
async fn the_initial_list_then_each_add_modify_and_delete_reach_a_handler_in_order() {
    let source = FakeSource::new();
    source.add(object("default/web", "v1"));
    source.add(object("default/db", "v1"));
    let informer = informer_over(&source);
    let (handler, mut seen) = recording_handler();
    let registration = informer.add_event_handler(handler).expect("added");
    let (stop, running) = spawn_run(&informer);
    wait_for_cache_sync(&[&informer, &registration]).await;

    source.add(object("default/cache", "v1"));
    source.modify(object("default/web", "v2"));
    source.delete(object("default/db", "v1"));
    assert_eq!(
        lines(&mut seen, 5).await,
        [
            "add db@2 v1 initial",
            "add web@1 v1 initial",
            "add cache@3 v1",
            "update web@1->4 v2",
            "delete db@5 v1 final",
        ]
    );
    assert_eq!(informer.last_sync_resource_version(), "5");
    let names: Vec<_> = informer
        .lister()
        .list_all()
        .iter()
        .map(|o| o.name_any())
        .collect();
    assert_eq!(names.len(), 2);
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
}

/// The DELETED event carries the object's last state (here changed on its way out, as
/// a finalizer's removal would), and that is what the handler gets, not the cached one.
#[tokio::test(start_paused = true)]
async fn a_handler_sees_a_delete_with_the_final_state() {
    let source = FakeSource::new();
    source.add(object("default/web", "v1"));
    let informer = informer_over(&source);
    let mut notifications = informer.subscribe().expect("subscribed");
    let (stop, running) = spawn_run(&informer);
    // (The subscription syncs only once its initial list has been read.)
    wait_for_cache_sync(&[&informer]).await;
    assert!(matches!(
        notifications.next().await,
        Some(Notification::Add {
            is_initial_list: true,
            ..
        })
    ));

    source.delete(object("default/web", "finalized"));
    let Some(Notification::Delete(DeletedObject::Final(last))) = notifications.next().await else {
        panic!("a delete with its final state");
    };
    assert_eq!((state(&last), version(&last)), ("finalized", 2));
    assert!(informer.lister().list_all().is_empty());
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
}

/// client-go's `DeletedFinalStateUnknown`: a deletion the watch never reported shows
/// up at the relist that follows 410 Gone, as a tombstone with the last known state.
#[tokio::test(start_paused = true)]
async fn a_deletion_missed_while_disconnected_reaches_a_handler_as_a_tombstone() {
    let source = FakeSource::new();
    source.add(object("default/web", "v1"));
    source.add(object("default/db", "v1"));
    let informer = informer_over(&source);
    let (handler, mut seen) = recording_handler();
    let registration = informer.add_event_handler(handler).expect("added");
    let errors = Arc::new(std::sync::Mutex::new(Vec::new()));
    informer
        .set_watch_error_handler({
            let errors = Arc::clone(&errors);
            move |e: &ReflectorError| errors.lock().unwrap().push(e.status_code())
        })
        .expect("before start");
    let (stop, running) = spawn_run(&informer);
    wait_for_cache_sync(&[&informer, &registration]).await;
    source.modify(object("default/web", "v2"));
    assert_eq!(lines(&mut seen, 3).await[2], "update web@1->3 v2");

    source.delete_missed(&object("default/web", "v2"));
    source.modify(object("default/db", "v2"));
    // The relist brings both: as client-go's in-order `Replace`, a tombstone for each
    // known object the list no longer has first, then the listed objects.
    assert_eq!(
        lines(&mut seen, 2).await,
        ["delete web@3 v2 tombstone", "update db@2->5 v2"]
    );
    assert_eq!(*errors.lock().unwrap(), [Some(410)]);
    let stats = informer.reflector_stats().expect("running");
    assert_eq!(stats.lists, 2, "the 410 made it relist");
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
}

/// Changes made while the watch is down are replayed from the log when it resumes:
/// none is lost, none repeated.
#[tokio::test(start_paused = true)]
async fn changes_made_while_disconnected_arrive_once_when_the_watch_resumes() {
    let source = FakeSource::new();
    let informer = informer_over(&source);
    let mut notifications = informer.subscribe().expect("subscribed");
    let (stop, running) = spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    for round in 0..3 {
        source.add(object(&format!("default/cm-{round}"), "v1"));
        source.disconnect();
        source.modify(object(&format!("default/cm-{round}"), "v2"));
        // Past the reflector's short-watch rule, so each resume is a plain resume.
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let mut got = Vec::new();
    for _ in 0..6 {
        match notifications.next().await.expect("a notification") {
            Notification::Add { object, .. } => got.push(format!("add {}", object.name_any())),
            Notification::Update { new, .. } => {
                got.push(format!("update {} {}", new.name_any(), state(&new)));
            }
            Notification::Delete(gone) => got.push(format!("delete {}", gone.object().name_any())),
        }
    }
    assert_eq!(
        got,
        [
            "add cm-0",
            "update cm-0 v2",
            "add cm-1",
            "update cm-1 v2",
            "add cm-2",
            "update cm-2 v2"
        ]
    );
    assert_eq!(informer.reflector_stats().expect("running").lists, 1);
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
}

/// An informer over a source that refuses streaming lists syncs by list and watch,
/// and asks for a streaming list once only, however often it relists.
#[tokio::test(start_paused = true)]
async fn an_informer_over_a_refusing_source_lists_and_watches_and_never_streams_again() {
    let source = FakeSource::new();
    source.refuse_streaming_lists();
    source.add(object("default/web", "v1"));
    let informer = informer_over(&source);
    let (stop, running) = spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    source.delete_missed(&object("default/web", "v1"));
    source.add(object("default/db", "v1"));
    while informer.indexer().len() != 1 || informer.last_sync_resource_version() != "3" {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stats = informer.reflector_stats().expect("running");
    assert_eq!(stats.lists, 2, "the 410 made it relist");
    assert!(stats.streaming_list_refused);
    assert_eq!(stats.streaming_list_requests, 1);
    assert_eq!(source.streaming_list_requests(), 1);
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
}
