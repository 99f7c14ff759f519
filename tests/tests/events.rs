//! The event recorder against a real API server: the Event a publish creates, series
//! folding and their flushes, the spam filter, re-creation of a deleted series, and
//! shutdown. Timings are shortened through `RecorderConfig` so each test takes
//! seconds.

mod common;

use std::time::Duration;

use common::{config_map, eventually_async};
use informer::events::{
    EventError, EventSpec, Published, Recorder, RecorderConfig, Reporter, object_reference,
};
use informer::testenv::TestEnv;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ObjectReference};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};

const WAIT: Duration = Duration::from_secs(20);

/// client-go's limits, with a flush every 100 ms and quick retries.
fn fast() -> RecorderConfig {
    RecorderConfig::default()
        .flush_interval(Duration::from_millis(100))
        .retry_backoff(Duration::from_millis(100))
}

fn reporter() -> Reporter {
    Reporter::with_instance("example.com/backup-operator", "backup-operator-0")
}

/// A fresh namespace with the ConfigMaps `names` in it, and a client.
async fn setup(prefix: &str, names: &[&str]) -> (Client, String, Vec<ConfigMap>) {
    let env = TestEnv::shared().await.unwrap();
    let namespace = env.create_namespace(prefix).await.unwrap();
    let client = env.client().unwrap();
    let api = Api::<ConfigMap>::namespaced(client.clone(), &namespace);
    let mut objects = Vec::new();
    for name in names {
        let created = api
            .create(&PostParams::default(), &config_map(name, "1", &[]))
            .await
            .unwrap();
        objects.push(created);
    }
    (client, namespace, objects)
}

/// The `events.k8s.io/v1` Events in `namespace` regarding an object named `name`.
async fn events_about(client: &Client, namespace: &str, name: &str) -> Vec<Event> {
    let api = Api::<Event>::namespaced(client.clone(), namespace);
    let mut events: Vec<Event> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .collect();
    events.sort_by_key(|e| e.metadata.name.clone());
    events
}

fn series_count(event: &Event) -> Option<i32> {
    event.series.as_ref().map(|s| s.count)
}

/// Waits until the only Event about `name` has a series of `count`.
async fn wait_for_series(client: &Client, namespace: &str, name: &str, count: i32) -> Event {
    let mut last = Vec::new();
    let found = tokio::time::timeout(WAIT, async {
        loop {
            last = events_about(client, namespace, name).await;
            if let [event] = last.as_slice()
                && series_count(event) == Some(count)
            {
                return event.clone();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("no single Event with series.count {count}: {last:#?}"))
}

#[tokio::test]
async fn one_publish_creates_one_event_with_every_field_set() {
    let (client, ns, objects) = setup("events-one", &["web", "job"]).await;
    let (web, job) = (&objects[0], &objects[1]);
    let recorder = Recorder::with_config(client.clone(), reporter(), fast());
    let spec = EventSpec::warning("BackupFailed", "Backup")
        .note("bucket unreachable")
        .related(object_reference(job));
    let before = k8s_openapi::jiff::Timestamp::now();
    assert!(matches!(
        recorder.publish(&object_reference(web), spec),
        Published::New
    ));
    recorder.shutdown().await;

    let events = events_about(&client, &ns, "web").await;
    let [listed] = events.as_slice() else {
        panic!("expected one Event, got {events:#?}")
    };
    let name = listed.name_any();
    let event = Api::<Event>::namespaced(client, &ns)
        .get(&name)
        .await
        .unwrap();
    let suffix = name
        .strip_prefix("web.")
        .expect("named {regarding.name}.{hex}");
    assert!(u64::from_str_radix(suffix, 16).is_ok(), "{name}");
    assert_eq!(event.metadata.namespace.as_deref(), Some(ns.as_str()));
    assert_eq!(event.regarding, Some(object_reference(web)));
    assert_eq!(event.related, Some(object_reference(job)));
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.reason.as_deref(), Some("BackupFailed"));
    assert_eq!(event.action.as_deref(), Some("Backup"));
    assert_eq!(event.note.as_deref(), Some("bucket unreachable"));
    assert_eq!(
        event.reporting_controller.as_deref(),
        Some("example.com/backup-operator")
    );
    assert_eq!(
        event.reporting_instance.as_deref(),
        Some("backup-operator-0")
    );
    let event_time = event.event_time.expect("eventTime is set").0;
    let skew = k8s_openapi::jiff::SignedDuration::from_secs(5);
    assert!(event_time >= before - skew && event_time <= before + skew * 2);
    assert_eq!(event.series, None);
    let stats = recorder.stats();
    assert_eq!((stats.created, stats.patched, stats.failed), (1, 0, 0));
}

#[tokio::test]
async fn ten_identical_events_are_one_event_with_a_series_of_ten() {
    let (client, ns, objects) = setup("events-series", &["web"]).await;
    let recorder = Recorder::with_config(client.clone(), reporter(), fast());
    let web = object_reference(&objects[0]);
    let spec = EventSpec::warning("BackupFailed", "Backup").note("bucket unreachable");
    for _ in 0..10 {
        recorder.publish(&web, spec.clone());
    }
    recorder.shutdown().await;

    let event = wait_for_series(&client, &ns, "web", 10).await;
    let series = event.series.unwrap();
    assert!(series.last_observed_time >= event.event_time.unwrap());
    let stats = recorder.stats();
    assert_eq!((stats.created, stats.folded, stats.failed), (1, 9, 0));
    assert!(stats.patched <= 2, "{stats:?}");
}

#[tokio::test]
async fn later_repeats_are_written_by_the_periodic_flush() {
    let (client, ns, objects) = setup("events-flush", &["web"]).await;
    let config = fast().flush_interval(Duration::from_millis(300));
    let recorder = Recorder::with_config(client.clone(), reporter(), config);
    let web = object_reference(&objects[0]);
    let spec = EventSpec::normal("Synced", "Sync");
    recorder.publish(&web, spec.clone());
    eventually_async("the Event", WAIT, || async {
        events_about(&client, &ns, "web").await.len() == 1
    })
    .await;
    // The first repeat makes the Event a series at once...
    assert!(matches!(
        recorder.publish(&web, spec.clone()),
        Published::Folded
    ));
    let first = wait_for_series(&client, &ns, "web", 2).await;
    // ...later ones are counted and written by the flush, without a shutdown.
    for _ in 0..3 {
        recorder.publish(&web, spec.clone());
    }
    let flushed = wait_for_series(&client, &ns, "web", 5).await;
    assert_eq!(flushed.name_any(), first.name_any());
    let stats = recorder.stats();
    assert_eq!(stats.created, 1);
    assert!((2..=4).contains(&stats.patched), "{stats:?}");
    recorder.shutdown().await;
}

#[tokio::test]
async fn a_hot_loop_about_one_object_is_held_to_the_spam_burst() {
    let (client, ns, objects) = setup("events-spam", &["hot", "same", "calm"]).await;
    let recorder = Recorder::with_config(client.clone(), reporter(), fast());
    let [hot, same, calm] = [0, 1, 2].map(|i| object_reference(&objects[i]));
    // 1000 different events about one object: 25 get through.
    for i in 0..1000 {
        recorder.publish(&hot, EventSpec::normal(format!("Step{i}"), "Loop"));
    }
    // 1000 identical ones: a series, counting the 25 that got through.
    for _ in 0..1000 {
        recorder.publish(&same, EventSpec::normal("Tick", "Loop"));
    }
    // Another object is not affected.
    let outcome = recorder.publish(&calm, EventSpec::normal("Fine", "Check"));
    assert!(matches!(outcome, Published::New), "{outcome:?}");
    let throttled = recorder.publish(&hot, EventSpec::normal("More", "Loop"));
    assert!(matches!(
        throttled,
        Published::Dropped(EventError::Throttled { .. })
    ));
    recorder.shutdown().await;

    assert_eq!(events_about(&client, &ns, "hot").await.len(), 25);
    wait_for_series(&client, &ns, "same", 25).await;
    assert_eq!(events_about(&client, &ns, "calm").await.len(), 1);
    let stats = recorder.stats();
    assert_eq!(stats.throttled, 975 + 975 + 1);
    // 25 + 1 + 1 creates, the series' patches, nothing else.
    assert_eq!(stats.created, 27);
    assert!(stats.patched <= 2, "{stats:?}");
}

#[tokio::test]
async fn a_series_whose_event_was_deleted_is_created_again() {
    let (client, ns, objects) = setup("events-recreate", &["web"]).await;
    let recorder = Recorder::with_config(client.clone(), reporter(), fast());
    let web = object_reference(&objects[0]);
    let spec = EventSpec::warning("Unreachable", "Probe");
    recorder.publish(&web, spec.clone());
    recorder.publish(&web, spec.clone());
    let event = wait_for_series(&client, &ns, "web", 2).await;
    // As if its TTL had run out.
    Api::<Event>::namespaced(client.clone(), &ns)
        .delete(&event.name_any(), &DeleteParams::default())
        .await
        .unwrap();
    eventually_async("the Event to be gone", WAIT, || async {
        events_about(&client, &ns, "web").await.is_empty()
    })
    .await;
    recorder.publish(&web, spec.clone());
    recorder.publish(&web, spec);
    let again = wait_for_series(&client, &ns, "web", 4).await;
    assert_eq!(
        again.name_any(),
        event.name_any(),
        "created again under its name"
    );
    // Counted once the writer has the server's answer, which may come a moment after
    // the Event shows: read after the writer has ended.
    recorder.shutdown().await;
    assert_eq!(recorder.stats().recreated, 1);
}

/// `default` as client-go does, where the server accepts it (1.21 and later,
/// kubernetes#100125; older servers take only `kube-system`), or the configured
/// namespace.
#[tokio::test]
async fn events_about_a_cluster_scoped_object_go_to_the_cluster_namespace() {
    let env = TestEnv::shared().await.unwrap();
    let namespace = env.create_namespace("events-cluster").await.unwrap();
    let client = env.client().unwrap();
    let object = Api::<Namespace>::all(client.clone())
        .get(&namespace)
        .await
        .unwrap();
    let regarding = object_reference(&object);
    assert_eq!(regarding.namespace, None);
    let spec = EventSpec::normal("Observed", "Watch");

    let recorder = Recorder::with_config(client.clone(), reporter(), fast());
    recorder.publish(&regarding, spec.clone());
    recorder.shutdown().await;
    let version = client.apiserver_version().await.unwrap();
    let minor: u32 = version.minor.trim_end_matches('+').parse().unwrap();
    let in_default = events_about(&client, "default", &namespace).await;
    if (version.major.as_str(), minor) >= ("1", 21) {
        assert_eq!(in_default.len(), 1, "{in_default:#?}");
    } else {
        assert!(in_default.is_empty());
        assert_eq!(
            recorder.stats().failed,
            1,
            "refused by a {version:?} server"
        );
    }

    let config = fast().cluster_scoped_namespace("kube-system");
    let recorder = Recorder::with_config(client.clone(), reporter(), config);
    recorder.publish(&regarding, spec);
    recorder.shutdown().await;
    let events = events_about(&client, "kube-system", &namespace).await;
    assert_eq!(events.len(), 1, "{events:#?}");
    let event_regarding = events[0].regarding.clone().unwrap();
    assert_eq!(event_regarding.kind.as_deref(), Some("Namespace"));
    assert_eq!(event_regarding.namespace, None);
}

#[tokio::test]
async fn shutdown_flushes_pending_counts_and_ends_the_writer() {
    let (client, ns, objects) = setup("events-shutdown", &["web", "db"]).await;
    // A flush interval longer than the test: only shutdown writes the later counts.
    let config = fast().flush_interval(Duration::from_secs(3600));
    let recorder = Recorder::with_config(client.clone(), reporter(), config);
    let handle = recorder.clone();
    let web = object_reference(&objects[0]);
    let spec = EventSpec::normal("Synced", "Sync");
    recorder.publish(&web, spec.clone());
    recorder.publish(&web, spec.clone());
    wait_for_series(&client, &ns, "web", 2).await;
    for _ in 0..5 {
        recorder.publish(&web, spec.clone());
    }
    assert!(recorder.is_running());
    tokio::time::timeout(WAIT, recorder.shutdown())
        .await
        .expect("shutdown returns");
    assert!(!recorder.is_running() && !handle.is_running());
    wait_for_series(&client, &ns, "web", 7).await;
    let late = handle.publish(&object_reference(&objects[1]), spec);
    assert!(matches!(late, Published::Dropped(EventError::ShutDown)));
    handle.shutdown().await;
    assert!(events_about(&client, &ns, "db").await.is_empty());
}

#[tokio::test]
async fn dropping_the_last_handle_writes_pending_counts() {
    let (client, ns, objects) = setup("events-drop", &["web"]).await;
    let config = fast().flush_interval(Duration::from_secs(3600));
    let recorder = Recorder::with_config(client.clone(), reporter(), config);
    let web: ObjectReference = object_reference(&objects[0]);
    let spec = EventSpec::normal("Synced", "Sync");
    recorder.publish(&web, spec.clone());
    recorder.publish(&web, spec.clone());
    wait_for_series(&client, &ns, "web", 2).await;
    recorder.publish(&web, spec.clone());
    recorder.publish(&web, spec);
    drop(recorder);
    wait_for_series(&client, &ns, "web", 4).await;
}
