//! The recorder's side of publishing, without a server: a client whose every request
//! is refused, and one try per write, so writes fail at once. What reaches the API
//! server is tested against a real one in `tests/tests/events.rs`.

use std::time::Duration;

use super::*;

/// A client for a port nothing listens on.
fn unreachable_client() -> Client {
    let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
    Client::try_from(config).unwrap()
}

fn config() -> RecorderConfig {
    RecorderConfig::default().max_tries(1)
}

fn recorder(config: RecorderConfig) -> Recorder {
    let reporter = Reporter::with_instance("test-controller", "test-1");
    Recorder::with_config(unreachable_client(), reporter, config)
}

fn object(name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        namespace: Some("ns".into()),
        name: Some(name.into()),
        ..ObjectReference::default()
    }
}

fn is_send_sync_clone<T: Send + Sync + Clone + 'static>() {}

#[test]
fn a_recorder_is_a_cheap_shareable_handle() {
    is_send_sync_clone::<Recorder>();
    is_send_sync_clone::<RecorderConfig>();
    is_send_sync_clone::<Reporter>();
    is_send_sync_clone::<EventSpec>();
}

#[tokio::test]
async fn identical_events_fold_and_different_ones_are_new() {
    let recorder = recorder(config());
    let web = object("web");
    let failed = EventSpec::warning("Failed", "Backup").note("bucket gone");
    assert!(matches!(
        recorder.publish(&web, failed.clone()),
        Published::New
    ));
    for _ in 0..4 {
        assert!(matches!(
            recorder.publish(&web, failed.clone()),
            Published::Folded
        ));
    }
    let other_note = failed.clone().note("bucket full");
    assert!(matches!(recorder.publish(&web, other_note), Published::New));
    assert!(matches!(
        recorder.publish(&object("db"), failed),
        Published::New
    ));
    let stats = recorder.stats();
    assert_eq!((stats.published, stats.folded), (7, 4));
    recorder.shutdown().await;
}

#[tokio::test]
async fn the_spam_filter_drops_events_about_a_busy_object_only() {
    let recorder = recorder(config().spam_burst(3));
    let web = object("web");
    let outcomes: Vec<Published> = (0..10)
        .map(|i| recorder.publish(&web, EventSpec::normal(format!("Step{i}"), "Act")))
        .collect();
    let throttled = outcomes
        .iter()
        .filter(|o| matches!(o, Published::Dropped(EventError::Throttled { object }) if object == "ConfigMap ns/web"))
        .count();
    assert_eq!(throttled, 7);
    assert!(matches!(
        recorder.publish(&object("db"), EventSpec::normal("Step0", "Act")),
        Published::New
    ));
    assert_eq!(recorder.stats().throttled, 7);
    recorder.shutdown().await;
}

#[tokio::test]
async fn a_full_queue_drops_new_events_and_counts_them() {
    // On this single-threaded runtime the writer cannot run between these publishes:
    // the first fills the one-slot queue.
    let recorder = recorder(config().queue_capacity(1));
    let first = recorder.publish(&object("a"), EventSpec::normal("R", "A"));
    assert!(matches!(first, Published::New));
    let second = recorder.publish(&object("b"), EventSpec::normal("R", "A"));
    assert!(matches!(
        second,
        Published::Dropped(EventError::QueueFull { capacity: 1 })
    ));
    // The dropped event left nothing behind: once there is room it is new again.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let again = recorder.publish(&object("b"), EventSpec::normal("R", "A"));
    assert!(matches!(again, Published::New), "{again:?}");
    assert_eq!(recorder.stats().queue_full, 1);
    recorder.shutdown().await;
}

#[tokio::test]
async fn invalid_events_are_dropped_at_once() {
    let recorder = recorder(config());
    let outcome = recorder.publish(&object("web"), EventSpec::normal("", "Act"));
    assert!(matches!(
        outcome,
        Published::Dropped(EventError::Invalid {
            field: "reason",
            ..
        })
    ));
    assert_eq!(recorder.stats().invalid, 1);
    recorder.shutdown().await;
}

#[tokio::test]
async fn after_shutdown_nothing_is_recorded_and_the_writer_is_gone() {
    let recorder = recorder(config());
    let clone = recorder.clone();
    recorder.publish(&object("web"), EventSpec::normal("R", "A"));
    recorder.shutdown().await;
    assert!(!recorder.is_running());
    clone.shutdown().await;
    let outcome = clone.publish(&object("web"), EventSpec::normal("R", "A"));
    assert!(matches!(outcome, Published::Dropped(EventError::ShutDown)));
    let stats = clone.stats();
    assert_eq!((stats.after_shutdown, stats.failed), (1, 1), "{stats:?}");
}

#[tokio::test]
async fn dropping_every_handle_ends_the_writer() {
    let recorder = recorder(config());
    let clone = recorder.clone();
    let shared = Arc::clone(&recorder.inner.shared);
    recorder.publish(&object("web"), EventSpec::normal("R", "A"));
    drop(recorder);
    tokio::task::yield_now().await;
    assert!(shared.running.load(Ordering::SeqCst), "a handle is left");
    drop(clone);
    tokio::time::timeout(Duration::from_secs(10), async {
        while shared.running.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the writer ended");
    assert!(shared.state.locked().closed);
}
