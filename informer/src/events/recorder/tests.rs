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

fn is_clone<T: Clone + 'static>() {}

/// Clones share one recorder (that they cross threads is checked with every public
/// type in `tests/tests/send_sync.rs`).
#[test]
fn a_recorder_is_a_cheap_shareable_handle() {
    is_clone::<Recorder>();
    is_clone::<RecorderConfig>();
    is_clone::<Reporter>();
    is_clone::<EventSpec>();
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

/// A client that records the requests it was asked to send and answers 201 with an
/// empty body (the writer then fails to decode it and gives the write up: what
/// matters here is whether a request went out).
fn recording_client() -> (Client, Arc<Mutex<Vec<String>>>) {
    #[derive(Clone)]
    struct Recording(Arc<Mutex<Vec<String>>>);
    impl tower_service::Service<http::Request<kube::client::Body>> for Recording {
        type Response = http::Response<kube::client::Body>;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<Self::Response, Self::Error>>;
        fn poll_ready(
            &mut self,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), Self::Error>> {
            std::task::Poll::Ready(Ok(()))
        }
        fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
            self.0
                .lock()
                .unwrap()
                .push(format!("{} {}", request.method(), request.uri().path()));
            let response = http::Response::builder()
                .status(201)
                .body(kube::client::Body::empty())
                .unwrap();
            std::future::ready(Ok(response))
        }
    }
    let sent = Arc::new(Mutex::new(Vec::new()));
    (Client::new(Recording(Arc::clone(&sent)), "ns"), sent)
}

/// An event recorded while its publisher's claim held, whose claim ended before the
/// writer got to it (a term that ended with events queued, a shutdown flushing after
/// the Lease went), is not sent: dropped and counted, on the recorder and the claim.
#[tokio::test]
async fn an_event_whose_claim_ended_before_it_was_written_is_not_sent() {
    let (client, sent) = recording_client();
    let reporter = Reporter::with_instance("test-controller", "test-1");
    let recorder = Recorder::with_config(client, reporter, config());
    let claim = Arc::new(crate::claim::TestClaim::default());
    let claimed = recorder.fenced(crate::claim::Fence::claimed(Arc::clone(&claim)));
    // The writer task has not run yet (one thread): the events wait in its queue.
    assert!(matches!(
        claimed.publish(&object("web"), EventSpec::normal("Synced", "Sync")),
        Published::New
    ));
    assert!(matches!(
        recorder.publish(&object("db"), EventSpec::normal("Synced", "Sync")),
        Published::New
    ));
    claim.lost.store(true, Ordering::SeqCst);
    // Refused at once while the claim has ended.
    assert!(matches!(
        claimed.publish(&object("web"), EventSpec::normal("Again", "Sync")),
        Published::Dropped(EventError::Fenced { .. })
    ));
    recorder.shutdown().await;
    assert_eq!(
        *sent.lock().unwrap(),
        ["POST /apis/events.k8s.io/v1/namespaces/ns/events"],
        "only the unclaimed event went out"
    );
    let stats = recorder.stats();
    assert_eq!(stats.fenced, 2, "{stats:?}");
    assert_eq!(claim.refused.load(Ordering::SeqCst), 2);
}
