//! client-go: tools/cache/controller_test.go (NewInformer is our SharedIndexInformer)

use std::sync::Arc;
use std::time::Duration;

use informer::fifo::{DeletedFinalStateUnknown, DeletedObject};
use informer::key::ObjectKey;
use informer::reflector::source::FakeSource;
use informer::shared_informer::{InformerConfig, ResourceEventHandlerFns, SharedIndexInformer};
use k8s_openapi::api::core::v1::ConfigMap;

use crate::common::eventually;
use crate::support::{Recorder, Scripted, WAIT, object, spawn_run, synced_informer};

// client-go: controller_test.go TestDeletionHandlingObjectToName
// client-go: controller_test.go TestDeletedObjectGetObjectName
// client-go: controller_test.go TestDeletedObjectGetKey
#[test]
fn deleted_object_key() {
    let cm = object(Some("testnamespace"), "testname", &[]);
    let expected = ObjectKey::namespaced("testnamespace", "testname");
    // The final state and a tombstone name the same object.
    assert_eq!(DeletedObject::Final(Arc::new(cm.clone())).key(), expected);
    let tombstone = DeletedObject::Unknown(DeletedFinalStateUnknown {
        key: Arc::new(expected.clone()),
        last_known: Arc::new(cm),
    });
    assert_eq!(tombstone.key(), expected);
    assert_eq!(tombstone.key().to_string(), "testnamespace/testname");
}

// client-go: controller_test.go TestUpdate
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update() {
    const THREADS: usize = 3;
    let source = FakeSource::new();
    let informer =
        SharedIndexInformer::with_config(source.clone(), InformerConfig::default()).unwrap();
    let check = |obj: &ConfigMap, key: &str| {
        obj.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(key).cloned())
    };
    let transitions = Arc::new(std::sync::Mutex::new(Vec::new()));
    let deletions = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    informer
        .add_event_handler(
            ResourceEventHandlerFns::new()
                .on_update({
                    let source = source.clone();
                    let transitions = Arc::clone(&transitions);
                    move |old: &Arc<ConfigMap>, new: &Arc<ConfigMap>| {
                        transitions
                            .lock()
                            .unwrap()
                            .push((check(old, "check"), check(new, "check")));
                        // Delete what reached its final state.
                        if check(new, "final").is_some() {
                            source.delete((**new).clone());
                        }
                    }
                })
                .on_delete({
                    let deletions = Arc::clone(&deletions);
                    move |_| {
                        deletions.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                }),
        )
        .unwrap();
    let running = spawn_run(&informer);
    synced_informer(&informer).await;
    let writers: Vec<_> = (0..THREADS)
        .map(|i| {
            let source = source.clone();
            std::thread::spawn(move || {
                let name = format!("a-{i}");
                source.add(object(None, &name, &[("check", "from")]));
                source.modify(object(None, &name, &[("check", "to"), ("final", "true")]));
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let deleted = || deletions.load(std::sync::atomic::Ordering::SeqCst) == THREADS;
    let deadline = tokio::time::Instant::now() + WAIT;
    while !deleted() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        deleted(),
        "deletions {deletions:?}, transitions {:?}, cache {:?}, source {:?}",
        transitions.lock().unwrap(),
        informer.indexer().list_keys(),
        source.objects().len()
    );
    running.stop().await;
    let from = Some("from".to_owned());
    let to = Some("to".to_owned());
    for transition in transitions.lock().unwrap().iter() {
        assert!(
            [
                (from.clone(), to.clone()),
                (to.clone(), to.clone()),
                (from.clone(), from.clone())
            ]
            .contains(transition),
            "unexpected transition {transition:?}"
        );
    }
}

// client-go: controller_test.go TestTransformingInformer
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transforming_informer() {
    let source = FakeSource::new();
    source.add(object(None, "pod1", &[("generation", "1")]));
    let options = InformerConfig::default().transform(|mut obj: ConfigMap| {
        // Drop a label nobody reads, and mark the object transformed.
        if let Some(labels) = obj.metadata.labels.as_mut() {
            labels.remove("generation");
            labels.insert("transformed".into(), "true".into());
        }
        obj
    });
    let informer = SharedIndexInformer::with_config(source.clone(), options).unwrap();
    let recorder = Recorder::default();
    informer.add_event_handler(recorder.clone()).unwrap();
    let running = spawn_run(&informer);
    synced_informer(&informer).await;
    source.modify(object(None, "pod1", &[("generation", "2")]));
    source.add(object(None, "pod2", &[("generation", "1")]));
    source.delete(object(None, "pod2", &[("generation", "1")]));
    recorder.wait_for(4).await;
    running.stop().await;
    assert_eq!(
        recorder.lines(),
        ["add pod1", "update pod1", "add pod2", "delete pod2"]
    );
    // Handlers and the cache only ever see transformed objects.
    for notification in recorder.notifications() {
        let labels = notification.object().metadata.labels.clone().unwrap();
        assert!(!labels.contains_key("generation"), "{labels:?}");
        assert_eq!(labels["transformed"], "true");
    }
}

/// Runs one row of client-go's TestReplaceEvents: the informer holds `initial`; a
/// relist then finds `listed`. Returns the sorted notifications of the relist and
/// the cache's names afterwards.
async fn replace_events(
    initial: &[(&str, &str)],
    listed: &[(&str, &str)],
) -> (Vec<String>, Vec<String>) {
    let script = Scripted::new();
    let informer =
        SharedIndexInformer::with_config(script.source(), InformerConfig::default()).unwrap();
    let recorder = Recorder::default();
    informer.add_event_handler(recorder.clone()).unwrap();
    let running = spawn_run(&informer);
    synced_informer(&informer).await;
    eventually("the watch", WAIT, || script.watcher_count() == 1).await;
    for (name, version) in initial {
        script.add(object(Some("default"), name, &[("ver", version)]));
    }
    recorder.wait_for(initial.len()).await;
    recorder.clear();

    // The server's collection changes while the watch misses it; a relist finds it.
    for (name, _) in initial {
        script.remove_silently(name);
    }
    for (name, version) in listed {
        script.put_silently(object(Some("default"), name, &[("ver", version)]));
    }
    let expected_events = listed.len()
        + initial
            .iter()
            .filter(|(name, _)| !listed.iter().any(|(n, _)| n == name))
            .count();
    script.expire_watches();
    recorder.wait_for(expected_events).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    running.stop().await;
    let mut lines = recorder.lines();
    lines.sort();
    let mut cached: Vec<String> = informer
        .indexer()
        .list_keys()
        .iter()
        .map(|k| k.to_string())
        .collect();
    cached.sort();
    (lines, cached)
}

// client-go: controller_test.go TestReplaceEvents "Create with no initial objects"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_events_create() {
    let (events, cached) = replace_events(&[], &[("pod-1", "1")]).await;
    assert_eq!(events, ["add pod-1"]);
    assert_eq!(cached, ["default/pod-1"]);
}

// client-go: controller_test.go TestReplaceEvents "Delete all objects"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_events_delete_all() {
    let (events, cached) = replace_events(&[("pod-1", "1"), ("pod-3", "1")], &[]).await;
    assert_eq!(events, ["tombstone pod-1", "tombstone pod-3"]);
    assert!(cached.is_empty());
}

// client-go: controller_test.go TestReplaceEvents "Create, update, delete"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_events_create_update_delete() {
    let (events, cached) = replace_events(
        &[("pod-1", "1"), ("pod-2", "1"), ("pod-3", "1")],
        &[("pod-1", "1"), ("pod-2", "2"), ("pod-4", "1")],
    )
    .await;
    assert_eq!(
        events,
        [
            "add pod-4",
            "tombstone pod-3",
            "update pod-1",
            "update pod-2"
        ]
    );
    assert_eq!(cached, ["default/pod-1", "default/pod-2", "default/pod-4"]);
}

// client-go: controller_test.go TestResetWatch
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_watch() {
    let source = FakeSource::new();
    source.add(object(Some("default"), "pod-1", &[]));
    let informer =
        SharedIndexInformer::with_config(source.clone(), InformerConfig::default()).unwrap();
    let recorder = Recorder::default();
    informer.add_event_handler(recorder.clone()).unwrap();
    let running = spawn_run(&informer);
    recorder.wait_for(1).await;
    assert!(matches!(
        recorder.notifications()[0],
        informer::shared_informer::Notification::Add {
            is_initial_list: true,
            ..
        }
    ));
    // The watch ends; the reflector resumes where it was: nothing is re-delivered, and
    // later changes arrive.
    source.disconnect();
    source.modify(object(Some("default"), "pod-1", &[("v", "2")]));
    recorder.wait_for(2).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    running.stop().await;
    assert_eq!(recorder.lines(), ["add pod-1", "update pod-1"]);
}
