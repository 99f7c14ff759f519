//! Streaming lists, driven by the reflector tests' scripted lister-watcher on paused
//! time: the script serves the protocol exactly (initial ADDED events, then the
//! bookmark that ends them, then the watch goes on) or breaks it where a test says.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;

use crate::reflector::source::WatchEvent;
use crate::reflector::tests::{
    Cached, Call, Script, Store, WatchReply, cm, list, page, refused, run, run_with, status,
};
use crate::reflector::{Config, DecodeError, Phase, Reflector, ReflectorError, ReflectorStore};

type Event = Result<WatchEvent<ConfigMap>, kube::Error>;

fn added(name: &str, rv: &str) -> Event {
    Ok(WatchEvent::Added(cm(name, rv)))
}

/// The bookmark that ends the initial events.
fn end(rv: &str) -> Event {
    Ok(WatchEvent::Bookmark {
        resource_version: rv.into(),
        initial_events_end: true,
    })
}

/// A bookmark without the annotation.
fn bookmark(rv: &str) -> Event {
    Ok(WatchEvent::Bookmark {
        resource_version: rv.into(),
        initial_events_end: false,
    })
}

/// A script that serves streaming lists and answers the watches in `watches`.
fn streaming(watches: impl IntoIterator<Item = WatchReply>) -> Script {
    let script = Script {
        streaming: true,
        ..Script::default()
    };
    script.watches.lock().unwrap().extend(watches);
    script
}

fn stream(name: &str) -> Call {
    Call::StreamingList(name.into())
}

fn watch(rv: &str) -> Call {
    Call::Watch(rv.into())
}

/// Runs long enough (paused time) for every scripted answer and its backoffs.
async fn settle() {
    tokio::time::sleep(Duration::from_secs(60)).await;
}

// client-go: TestWatchList/"prove that the reflector is synced after receiving a bookmark event"
// client-go: TestWatchList/"stopping a watcher after synchronization results in creating a new watch request"
#[tokio::test(start_paused = true)]
async fn the_initial_events_replace_the_store_at_the_bookmark_and_the_same_stream_goes_on_as_the_watch()
 {
    let run = run(
        streaming([Ok(vec![
            added("a", "5"),
            added("b", "7"),
            end("10"),
            Ok(WatchEvent::Modified(cm("a", "11"))),
            Ok(WatchEvent::Deleted(cm("b", "12"))),
        ])]),
        Config::default(),
    );
    settle().await;

    // One request synced the store and watched; when it ended, a plain watch resumed
    // from the last event. No list at all.
    assert_eq!(run.calls(), [stream(""), watch("12")]);
    assert_eq!(run.log(), ["replace [a,b] at 10", "update a", "delete b"]);
    assert_eq!(run.reflector.last_sync_resource_version(), "12");
    let stats = run.reflector.stats();
    assert_eq!((stats.lists, stats.list_items), (1, 2), "counted as a list");
    assert_eq!(stats.streaming_list_requests, 1);
    assert_eq!(stats.watches, 2);
    assert!(!stats.streaming_list_refused);
    assert_eq!(stats.phase, Phase::Watching);
    assert!(run.reflector.uses_streaming_list());
    assert!(run.errors.lock().unwrap().is_empty());
}

// client-go: TestWatchList/"the reflector won't be synced if the bookmark event has been received"
// client-go: TestWatchList/"check if stopping a watcher before sync results in creating a new watch-list request"
#[tokio::test(start_paused = true)]
async fn a_stream_that_ends_before_the_bookmark_leaves_the_store_untouched_and_the_sync_is_retried()
{
    let run = run(
        streaming([
            Ok(vec![added("a", "5"), added("b", "6")]),
            Ok(vec![added("a", "5"), added("c", "8"), end("9")]),
        ]),
        Config::default(),
    );
    settle().await;

    assert_eq!(run.calls(), [stream(""), stream(""), watch("9")]);
    // `b` never reached the store: the only write is the second stream's.
    assert_eq!(run.log(), ["replace [a,c] at 9"]);
    assert_eq!(
        *run.errors.lock().unwrap(),
        [ReflectorError::InitialEventsIncomplete { events: 2 }.to_string()]
    );
    assert_eq!(run.reflector.stats().lists, 1);
}

// client-go: none of its own; Reflector.watchList's isErrorRetriableWithSideEffectsFn
// (410 or too large: "reset the RV and try to get a consistent snapshot")
#[tokio::test(start_paused = true)]
async fn a_410_during_the_initial_events_streams_again_from_the_most_recent_version() {
    let run = run(
        streaming([
            // Synced at 10; then an error event ends the watch: sync again.
            Ok(vec![added("a", "5"), end("10"), Err(status(500, "boom"))]),
            // From 10, the server has forgotten 10 halfway through.
            Ok(vec![added("a", "5"), Err(status(410, "too old"))]),
            Ok(vec![added("a", "5"), added("c", "12"), end("13")]),
        ]),
        Config::default(),
    );
    settle().await;

    assert_eq!(
        run.calls(),
        [stream(""), stream("10"), stream(""), watch("13")]
    );
    assert_eq!(run.log(), ["replace [a] at 10", "replace [a,c] at 13"]);
    assert_eq!(run.reflector.stats().streaming_list_requests, 3);
}

// client-go: TestWatchList/"checks if the reflector retries 429"
#[tokio::test(start_paused = true)]
async fn a_429_or_a_refused_connection_asks_for_the_streaming_list_again_after_a_backoff() {
    let run = run(
        streaming([
            Err(status(429, "busy")),
            Err(refused()),
            Ok(vec![added("a", "1"), end("2")]),
        ]),
        Config::default(),
    );
    settle().await;

    assert_eq!(
        run.calls(),
        [stream(""), stream(""), stream(""), watch("2")]
    );
    assert_eq!(run.log(), ["replace [a] at 2"]);
    assert!(!run.reflector.stats().streaming_list_refused);
}

// client-go: TestWatchList/"the reflector can fall back to old LIST/WATCH semantics when a server doesn't support streaming"
#[tokio::test(start_paused = true)]
async fn a_server_that_refuses_streaming_lists_is_listed_and_watched_for_the_reflectors_life() {
    let script = streaming([
        Err(status(422, "resourceVersionMatch is forbidden for watch")),
        // The fallback's watch, cut by a 410: relist.
        Ok(vec![added("c", "11"), Err(status(410, "too old"))]),
        // Then an error event: sync again after a backoff.
        Ok(vec![Err(status(500, "boom"))]),
    ]);
    script.lists.lock().unwrap().extend([
        page(&["a", "b"], "10", None),
        page(&["a", "c"], "12", None),
        page(&["a", "c"], "13", None),
    ]);
    let run = run(script, Config::default());
    settle().await;

    assert_eq!(
        run.calls(),
        [
            stream(""),
            list("0", Some(500), None),
            watch("10"),
            list("11", None, None),
            watch("12"),
            list("12", None, None),
            watch("13"),
        ]
    );
    assert_eq!(
        run.log(),
        [
            "replace [a,b] at 10",
            "add c",
            "replace [a,c] at 12",
            "replace [a,c] at 13"
        ]
    );
    let stats = run.reflector.stats();
    assert!(stats.streaming_list_refused);
    assert_eq!(stats.streaming_list_requests, 1);
    assert!(!run.reflector.uses_streaming_list());
    // A warning in the log, but nothing wrong for the error handler: it sees the 410
    // and the error event only.
    assert_eq!(
        *run.errors.lock().unwrap(),
        [
            "watch expired (resourceVersion too old): relisting: 410 Test: too old",
            "watch failed: 500 Test: boom"
        ]
    );
}

// client-go: TestWatchList/"returning any other error than apierrors.NewInvalid forces fallback"
#[tokio::test(start_paused = true)]
async fn any_other_error_answer_lists_instead_this_once_and_the_next_sync_streams_again() {
    let script = streaming([
        Err(status(500, "boom")),
        Ok(vec![Err(status(500, "boom again"))]),
        Ok(vec![added("a", "10"), end("11")]),
    ]);
    script
        .lists
        .lock()
        .unwrap()
        .push_back(page(&["a"], "10", None));
    let run = run(script, Config::default());
    settle().await;

    assert_eq!(
        run.calls(),
        [
            stream(""),
            list("0", Some(500), None),
            watch("10"),
            stream("10"),
            watch("11"),
        ]
    );
    assert_eq!(run.log(), ["replace [a] at 10", "replace [a] at 11"]);
    assert!(!run.reflector.stats().streaming_list_refused);
    assert_eq!(
        *run.errors.lock().unwrap(),
        [
            "watch failed: 500 Test: boom",
            "watch failed: 500 Test: boom again"
        ]
    );
}

// client-go: none (ours): client-go lists at once after a 403 and is denied again
#[tokio::test(start_paused = true)]
async fn access_denied_fails_the_sync_once_and_after_a_backoff_streams_again() {
    let run = run(
        streaming([
            Err(status(403, "forbidden")),
            Ok(vec![added("a", "1"), end("2")]),
        ]),
        Config::default(),
    );
    settle().await;

    assert_eq!(run.calls(), [stream(""), stream(""), watch("2")]);
    assert_eq!(run.log(), ["replace [a] at 2"]);
    assert_eq!(
        *run.errors.lock().unwrap(),
        ["watch failed: 403 Test: forbidden"]
    );
    assert!(!run.reflector.stats().streaming_list_refused);
}

// client-go: TestWatchList/"prove that the reflector is checking the value of the initialEventsEnd annotation"
// client-go: TestWatchListResourceVersion/"empty resource version without bookmark event"
#[tokio::test(start_paused = true)]
async fn a_bookmark_without_the_annotation_is_not_the_end_of_the_initial_events() {
    let run = run(
        streaming([
            Ok(vec![added("a", "1"), bookmark("2")]),
            Ok(vec![
                added("a", "1"),
                bookmark("2"),
                added("b", "3"),
                end("3"),
            ]),
        ]),
        Config::default(),
    );
    settle().await;

    assert_eq!(run.calls(), [stream(""), stream(""), watch("3")]);
    assert_eq!(run.log(), ["replace [a,b] at 3"]);
}

// client-go: TestWatchList/"check if Updates and Deletes events are propagated during streaming (until the bookmark is received)"
#[tokio::test(start_paused = true)]
async fn modified_and_deleted_events_before_the_bookmark_change_what_the_store_is_given() {
    let script = streaming([Ok(vec![
        added("p1", "1"),
        added("p2", "2"),
        Ok(WatchEvent::Modified(cm("p1", "3"))),
        added("p3", "4"),
        Ok(WatchEvent::Deleted(cm("p3", "5"))),
        end("5"),
    ])]);
    let store = Store {
        versions: true,
        ..Store::default()
    };
    let run = run_with(script, store, Config::default());
    settle().await;

    assert_eq!(run.log(), ["replace [p2@2,p1@3] at 5"]);
}

// client-go: none (its decoder fails the whole watch); ours, as for a list: an object
// that does not decode is reported and left out of the store
#[tokio::test(start_paused = true)]
async fn an_undecodable_initial_object_is_reported_and_left_out() {
    let undecodable = |name: &str| {
        let source = serde_json::from_str::<ConfigMap>(r#"{"data":7}"#).unwrap_err();
        Ok(WatchEvent::Undecodable(ReflectorError::Decode(
            DecodeError {
                kind: "ConfigMap".into(),
                key: format!("ns/{name}"),
                resource_version: Some("4".into()),
                object_key: crate::key::ObjectKey::parse(&format!("ns/{name}"))
                    .ok()
                    .map(Arc::new),
                source,
            },
        )))
    };
    let run = run(
        streaming([Ok(vec![
            added("a", "1"),
            undecodable("b"),
            added("c", "3"),
            // A change to `a` that does not decode: its older version goes too.
            undecodable("a"),
            end("4"),
        ])]),
        Config::default(),
    );
    settle().await;

    assert_eq!(run.log(), ["replace [c] at 4"]);
    assert_eq!(
        *run.errors.lock().unwrap(),
        [
            "could not decode ConfigMap ns/b: invalid type: integer `7`, expected a map at line 1 column 9",
            "could not decode ConfigMap ns/a: invalid type: integer `7`, expected a map at line 1 column 9"
        ]
    );
}

// client-go: TestWatchList (the request options each scenario expects: sendInitialEvents,
// allowWatchBookmarks, resourceVersionMatch=NotOlderThan, resourceVersion "" first)
#[tokio::test(start_paused = true)]
async fn the_first_streaming_list_asks_from_the_most_recent_version_and_a_resync_from_the_last_synced_one()
 {
    let run = run(
        streaming([
            Ok(vec![added("a", "5"), end("10"), Err(status(500, "boom"))]),
            Ok(vec![added("a", "5"), end("11")]),
        ]),
        // Bookmarks off for watches; a streaming list needs its bookmark anyway.
        Config::default().allow_bookmarks(false),
    );
    settle().await;

    let requests = run.script.watch_requests.lock().unwrap().clone();
    let asked: Vec<_> = requests
        .iter()
        .map(|r| {
            let kind = if r.streaming_list { "stream" } else { "watch" };
            format!(
                "{kind} {:?} bookmarks={}",
                r.resource_version, r.allow_bookmarks
            )
        })
        .collect();
    assert_eq!(
        asked,
        [
            r#"stream "" bookmarks=true"#,
            r#"stream "10" bookmarks=true"#,
            r#"watch "11" bookmarks=false"#,
        ]
    );
}

// client-go: TestNewReflectorWithDisablementWatchList
// client-go: TestWatchList/"the reflector uses the old LIST/WATCH semantics if the UseWatchList is turned off"
#[tokio::test(start_paused = true)]
async fn turned_off_or_not_served_by_the_lister_watcher_the_reflector_lists_and_watches() {
    for (serves, config) in [
        (true, Config::default().streaming_list(false)),
        (false, Config::default()),
    ] {
        let script = Script {
            streaming: serves,
            ..Script::default()
        };
        script
            .lists
            .lock()
            .unwrap()
            .push_back(page(&["a"], "10", None));
        let run = run(script, config);
        settle().await;

        assert_eq!(run.calls(), [list("0", Some(500), None), watch("10")]);
        assert_eq!(run.reflector.stats().streaming_list_requests, 0);
        assert!(!run.reflector.uses_streaming_list());
    }
}

// client-go: none of its own; ours: a relist does not hold the collection twice, and
// neither does a streaming one
#[tokio::test(start_paused = true)]
async fn objects_the_store_holds_at_the_streamed_version_come_back_as_its_own() {
    let store = Store {
        cache: Some(Arc::new(Cached(vec![
            Arc::new(cm("a", "5")),
            Arc::new(cm("b", "4")),
        ]))),
        ..Store::default()
    };
    let script = streaming([Ok(vec![added("a", "5"), added("b", "6"), end("6")])]);
    let run = run_with(script, store, Config::default());
    settle().await;

    // `a` is held at the streamed version; `b` only at an older one.
    assert_eq!(run.log(), ["replace [b] unchanged [a] at 6"]);
}

// client-go: Reflector.watchList returns at once when its stop channel closes (no test
// of its own)
#[tokio::test(start_paused = true)]
async fn shutdown_during_the_initial_events_stops_cleanly_and_leaves_the_store_untouched() {
    // The script's answer never ends: the initial events are still coming.
    let script = Arc::new(streaming([]));
    let store = Arc::new(Store::default());
    let reflector = Arc::new(Reflector::from_parts(
        script.clone(),
        store.clone() as Arc<dyn ReflectorStore<ConfigMap>>,
        Config::default(),
    ));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn({
        let reflector = reflector.clone();
        async move {
            reflector
                .run(async {
                    stopped.await.ok();
                })
                .await
        }
    });
    while script.calls.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(reflector.stats().phase, Phase::Listing, "receiving");

    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
    assert_eq!(reflector.stats().phase, Phase::Stopped);
    assert_eq!(*script.calls.lock().unwrap(), [stream("")]);
    assert!(store.log.lock().unwrap().is_empty());
}
