//! client-go: tools/cache/shared_informer_test.go (FakeSource is client-go's
//! FakeControllerSource; handlers run on their own threads, so these tests use real
//! time with generous bounds)

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use informer::reflector::source::FakeSource;
use informer::shared_informer::{
    InformerConfig, InformerError, Notification, ResourceEventHandler, ResourceEventHandlerFns,
    SharedIndexInformer,
};
use informer::store::Indexers;
use k8s_openapi::api::core::v1::ConfigMap;

use crate::common::eventually;
use crate::support::{Recorder, Scripted, WAIT, object, sorted_names, spawn_run, synced_informer};

fn pod(name: &str) -> ConfigMap {
    object(None, name, &[])
}

/// An informer on `source` with a default resync period of `resync` (zero: none).
fn informer_on(
    source: impl informer::reflector::source::ListerWatcher<ConfigMap> + 'static,
    resync: Duration,
) -> SharedIndexInformer<ConfigMap> {
    SharedIndexInformer::with_config(source, InformerConfig::default().resync(resync)).unwrap()
}

/// Index values: the label keys of an object.
fn label_keys(obj: &ConfigMap) -> Vec<String> {
    obj.metadata
        .labels
        .iter()
        .flat_map(|labels| labels.keys().cloned())
        .collect()
}

/// The number of updates in `recorder` (resyncs are updates).
fn updates(recorder: &Recorder) -> usize {
    recorder
        .notifications()
        .iter()
        .filter(|n| matches!(n, Notification::Update { .. }))
        .count()
}

// client-go: shared_informer_test.go TestIndexer
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexer() {
    let source = FakeSource::new();
    source.add(object(None, "pod1", &[("a", "a-val"), ("b", "b-val1")]));
    source.add(object(None, "pod2", &[("b", "b-val2")]));
    let informer = informer_on(source.clone(), Duration::from_secs(1));
    let indexer = informer.indexer();
    indexer
        .add_indexers(Indexers::new().with_fn("labels", label_keys))
        .unwrap();
    let running = spawn_run(&informer);
    synced_informer(&informer).await;
    let by = |index: &str| sorted_names(&indexer.by_index(index, "a").unwrap());
    assert_eq!(by("labels"), ["pod1"]);

    // An object added later is indexed too.
    source.add(object(None, "pod3", &[("a", "a-val2")]));
    eventually("pod3 indexed", WAIT, || by("labels") == ["pod1", "pod3"]).await;

    // An index added while running is built over the cache at once.
    indexer
        .add_indexers(Indexers::new().with_fn("labels-again", label_keys))
        .unwrap();
    assert_eq!(by("labels-again"), ["pod1", "pod3"]);
    for index in ["labels", "labels-again"] {
        let mut values: Vec<String> = indexer
            .index_values(index)
            .unwrap()
            .iter()
            .map(|v| v.to_string())
            .collect();
        values.sort();
        assert_eq!(values, ["a", "b"]);
    }
    running.stop().await;
}

// client-go: shared_informer_test.go TestListenerResyncPeriods
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listener_resync_periods() {
    let source = FakeSource::new();
    source.add(pod("pod1"));
    source.add(pod("pod2"));
    let informer = informer_on(source, Duration::from_secs(1));
    let never = Recorder::default();
    let every_2s = Recorder::default();
    let every_3s = Recorder::default();
    informer
        .add_event_handler_with_resync(never.clone(), Duration::ZERO)
        .unwrap();
    informer
        .add_event_handler_with_resync(every_2s.clone(), Duration::from_secs(2))
        .unwrap();
    informer
        .add_event_handler_with_resync(every_3s.clone(), Duration::from_secs(3))
        .unwrap();
    let running = spawn_run(&informer);
    // Everybody gets the initial list.
    for recorder in [&never, &every_2s, &every_3s] {
        recorder.wait_for(2).await;
        assert_eq!(recorder.lines(), ["add pod1", "add pod2"]);
    }
    tokio::time::sleep(Duration::from_millis(6500)).await;
    running.stop().await;
    // Each handler is resynced on its own period: never, every 2 s (at least twice in
    // 6.5 s), every 3 s (at least once, and no more often than the 2 s one).
    assert_eq!(updates(&never), 0);
    assert!(updates(&every_2s) >= 4, "{:?}", every_2s.lines());
    assert!(updates(&every_3s) >= 2, "{:?}", every_3s.lines());
    assert!(updates(&every_3s) <= updates(&every_2s));
    // A resync delivers both objects each time.
    assert_eq!(updates(&every_2s) % 2, 0);
}

// client-go: shared_informer_test.go TestResyncCheckPeriod
#[tokio::test]
async fn resync_check_period() {
    let informer = informer_on(FakeSource::new(), Duration::from_secs(12 * 3600));
    let periods = [0, 60, 55, 5].map(Duration::from_secs);
    let registrations: Vec<_> = periods
        .iter()
        .map(|&period| {
            informer
                .add_event_handler_with_resync(Recorder::default(), period)
                .unwrap()
        })
        .collect();
    // Before start, each handler keeps the period it asked for; later, smaller ones
    // do not change the earlier ones.
    let settled: Vec<_> = registrations.iter().map(|r| r.resync_period()).collect();
    assert_eq!(
        settled,
        [None, Some(periods[1]), Some(periods[2]), Some(periods[3])]
    );
}

// client-go: shared_informer_test.go TestSharedInformerInitializationRace
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialization_race() {
    let informer = informer_on(FakeSource::new(), Duration::from_secs(1));
    let adding = std::thread::spawn({
        let informer = informer.clone();
        move || informer.add_event_handler(Recorder::default()).map(|_| ())
    });
    let running = spawn_run(&informer);
    adding.join().unwrap().unwrap();
    assert_eq!(informer.handler_count(), 1);
    running.stop().await;
}

// client-go: shared_informer_test.go TestSharedInformerWatchDisruption
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_disruption() {
    let script = Scripted::new();
    script.add(pod("pod1"));
    script.add(pod("pod2"));
    let informer = informer_on(script.source(), Duration::from_secs(1));
    let no_resync = Recorder::default();
    let resync = Recorder::default();
    informer
        .add_event_handler_with_resync(no_resync.clone(), Duration::ZERO)
        .unwrap();
    informer
        .add_event_handler_with_resync(resync.clone(), Duration::from_secs(1))
        .unwrap();
    let running = spawn_run(&informer);
    no_resync.wait_for(2).await;
    resync.wait_for(2).await;
    eventually("the watch", WAIT, || script.watcher_count() == 1).await;

    // pod3 added and pod2 changed while nobody hears of it: only a relist sees them.
    script.put_silently(pod("pod3"));
    script.put_silently(object(None, "pod2", &[("v", "2")]));
    no_resync.clear();
    resync.clear();
    script.expire_watches();

    // The handler without resync is told of the changes only; the one with resync
    // may also see the unchanged pod1 when its period is due.
    no_resync.wait_for(2).await;
    eventually("pod1 resynced", WAIT, || {
        resync.names().contains(&"pod1".to_owned())
    })
    .await;
    running.stop().await;
    let mut changes = no_resync.lines();
    changes.sort();
    assert_eq!(changes, ["add pod3", "update pod2"]);
    let names = resync.names();
    for name in ["pod1", "pod2", "pod3"] {
        assert!(
            names.contains(&name.to_owned()),
            "{name} missing from {names:?}"
        );
    }
}

// client-go: shared_informer_test.go TestSharedInformerErrorHandling
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_handling() {
    let script = Scripted::new();
    script.add(pod("pod1"));
    script.fail_lists(1, 403, "Access Denied");
    let informer = informer_on(script.source(), Duration::from_secs(1));
    let errors = Arc::new(Mutex::new(Vec::new()));
    informer
        .set_watch_error_handler({
            let errors = Arc::clone(&errors);
            move |error| {
                let source = error.kube_error().map(ToString::to_string);
                errors
                    .lock()
                    .unwrap()
                    .push((error.is_access_denied(), source));
            }
        })
        .unwrap();
    let running = spawn_run(&informer);
    eventually("the error handler called", WAIT, || {
        !errors.lock().unwrap().is_empty()
    })
    .await;
    running.stop().await;
    let (denied, source) = errors.lock().unwrap()[0].clone();
    assert!(denied);
    assert!(source.unwrap().contains("Access Denied"));
}

// client-go: shared_informer_test.go TestSharedInformerStartRace
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_race() {
    let informer = informer_on(FakeSource::new(), Duration::from_secs(1));
    let stop = Arc::new(AtomicBool::new(false));
    let setter = std::thread::spawn({
        let informer = informer.clone();
        let stop = Arc::clone(&stop);
        move || {
            let mut refused = 0;
            while !stop.load(Ordering::SeqCst) {
                // Settings race with the start: before it they apply, after it they are
                // refused (by design: they can only change before start).
                let transform = informer.set_transform(|obj| obj);
                let handler = informer.set_watch_error_handler(|_| {});
                for result in [transform, handler] {
                    match result {
                        Ok(()) => {}
                        Err(InformerError::SetAfterStart(_)) => refused += 1,
                        Err(other) => panic!("unexpected error: {other}"),
                    }
                }
            }
            refused
        }
    });
    let running = spawn_run(&informer);
    synced_informer(&informer).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    stop.store(true, Ordering::SeqCst);
    assert!(
        setter.join().unwrap() > 0,
        "settings are refused once started"
    );
    running.stop().await;
}

// client-go: shared_informer_test.go TestSharedInformerTransformer
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transformer() {
    let source = FakeSource::new();
    source.add(pod("pod1"));
    source.add(pod("pod2"));
    let informer = informer_on(source, Duration::from_secs(1));
    informer
        .set_transform(|mut obj: ConfigMap| {
            obj.metadata.name = obj.metadata.name.map(|n| n.to_uppercase());
            obj
        })
        .unwrap();
    let recorder = Recorder::default();
    informer.add_event_handler(recorder.clone()).unwrap();
    let running = spawn_run(&informer);
    recorder.wait_for(2).await;
    running.stop().await;
    assert_eq!(recorder.names(), ["POD1", "POD2"]);
}

// client-go: shared_informer_test.go TestSharedInformerRemoveHandler
#[tokio::test]
async fn remove_handler() {
    let source = FakeSource::new();
    source.add(pod("pod1"));
    let informer = informer_on(source, Duration::from_secs(1));
    let first = informer.add_event_handler(Recorder::default()).unwrap();
    let second = informer.add_event_handler(Recorder::default()).unwrap();
    assert_eq!(informer.handler_count(), 2);
    second.remove();
    assert_eq!(informer.handler_count(), 1);
    first.remove();
    assert_eq!(informer.handler_count(), 0);
}

// client-go: shared_informer_test.go TestSharedInformerMultipleRegistration
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multiple_registration() {
    let source = FakeSource::new();
    source.add(pod("pod1"));
    let informer = informer_on(source.clone(), Duration::from_secs(1));
    // One handler (two handles on the same record) registered twice.
    let recorder = Recorder::default();
    let first = informer.add_event_handler(recorder.clone()).unwrap();
    let second = informer.add_event_handler(recorder.clone()).unwrap();
    assert_eq!(informer.handler_count(), 2);
    first.remove();
    assert_eq!(informer.handler_count(), 1, "removing one leaves the other");
    // The remaining registration still delivers.
    let running = spawn_run(&informer);
    recorder.wait_for(1).await;
    eventually("the remaining handler synced", WAIT, || second.has_synced()).await;
    assert_eq!(recorder.lines(), ["add pod1"]);
    second.remove();
    assert_eq!(informer.handler_count(), 0);
    running.stop().await;
}

// client-go: shared_informer_test.go TestRemovingRemovedSharedInformer
#[tokio::test]
async fn removing_removed() {
    let informer = informer_on(FakeSource::new(), Duration::from_secs(1));
    let registration = informer.add_event_handler(Recorder::default()).unwrap();
    registration.remove();
    assert_eq!(informer.handler_count(), 0);
    // A second removal is harmless.
    registration.remove();
    assert_eq!(informer.handler_count(), 0);
}

// client-go: shared_informer_test.go TestSharedInformerHandlerAbuse
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_abuse() {
    let source = FakeSource::new();
    let informer = informer_on(source.clone(), Duration::from_secs(1));
    let running = spawn_run(&informer);
    let done = Arc::new(AtomicBool::new(false));
    // Workers keep adding and removing handlers while objects churn.
    let workers: Vec<_> = (0..8u64)
        .map(|seed| {
            let informer = informer.clone();
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let mut state = seed + 1;
                let mut registrations = Vec::new();
                while !done.load(Ordering::SeqCst) {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    if state >> 63 == 0 || registrations.is_empty() {
                        match informer.add_event_handler_with_resync(
                            Recorder::default(),
                            Duration::from_secs(1),
                        ) {
                            Ok(registration) => registrations.push(registration),
                            Err(InformerError::Stopped) => return,
                            Err(other) => panic!("unexpected error: {other}"),
                        }
                    } else {
                        let index = (state as usize >> 8) % registrations.len();
                        registrations.swap_remove(index).remove();
                    }
                }
            })
        })
        .collect();
    let mut live = Vec::new();
    for i in 0..2000u64 {
        match i % 3 {
            0 => {
                live.push(format!("pod{i}"));
                source.add(pod(&format!("pod{i}")));
            }
            1 if !live.is_empty() => {
                source.modify(pod(&live[(i as usize) % live.len()]));
            }
            _ if !live.is_empty() => {
                let name = live.swap_remove((i as usize) % live.len());
                source.delete(pod(&name));
            }
            _ => {}
        }
    }
    // Stop the informer first, so workers meet a stopping informer.
    running.stop().await;
    done.store(true, Ordering::SeqCst);
    for worker in workers {
        worker.join().expect("no worker panicked");
    }
    assert!(matches!(
        informer.add_event_handler(Recorder::default()),
        Err(InformerError::Stopped)
    ));
}

// client-go: shared_informer_test.go TestStateSharedInformer
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state() {
    let source = FakeSource::new();
    source.add(pod("pod1"));
    let informer = informer_on(source, Duration::from_secs(1));
    let recorder = Recorder::default();
    informer.add_event_handler(recorder.clone()).unwrap();
    assert!(!informer.is_stopped());
    let running = spawn_run(&informer);
    recorder.wait_for(1).await;
    assert!(!informer.is_stopped());
    running.stop().await;
    assert!(informer.is_stopped());
}

// client-go: shared_informer_test.go TestAddOnStoppedSharedInformer
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_on_stopped() {
    let source = FakeSource::new();
    source.add(pod("pod1"));
    let informer = informer_on(source, Duration::from_secs(1));
    spawn_run(&informer).stop().await;
    assert!(informer.is_stopped());
    let added = informer.add_event_handler_with_resync(Recorder::default(), Duration::ZERO);
    assert!(matches!(added, Err(InformerError::Stopped)));
}

// client-go: shared_informer_test.go TestRemoveOnStoppedSharedInformer
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remove_on_stopped() {
    let source = FakeSource::new();
    source.add(pod("pod1"));
    let informer = informer_on(source, Duration::from_secs(1));
    let registration = informer.add_event_handler(Recorder::default()).unwrap();
    spawn_run(&informer).stop().await;
    assert!(informer.is_stopped());
    registration.remove();
    assert_eq!(informer.handler_count(), 0);
}

// client-go: shared_informer_test.go TestRemoveWhileActive
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remove_while_active() {
    let source = FakeSource::new();
    let informer = informer_on(source.clone(), Duration::ZERO);
    let removed = Recorder::default();
    let witness = Recorder::default();
    let registration = informer.add_event_handler(removed.clone()).unwrap();
    informer.add_event_handler(witness.clone()).unwrap();
    let running = spawn_run(&informer);
    source.add(pod("pod1"));
    removed.wait_for(1).await;
    registration.remove();
    assert_eq!(informer.handler_count(), 1);
    source.add(pod("pod2"));
    // Once the remaining handler saw pod2, the removed one would have too.
    witness.wait_for(2).await;
    running.stop().await;
    assert_eq!(removed.lines(), ["add pod1"]);
}

/// A recorder whose calls wait while a test holds its gate.
#[derive(Clone, Default)]
struct Gated {
    gate: Arc<Mutex<()>>,
    recorder: Recorder,
}

impl ResourceEventHandler<ConfigMap> for Gated {
    fn on_add(&mut self, object: &Arc<ConfigMap>, is_initial_list: bool) {
        let _open = self.gate.lock().unwrap();
        self.recorder.on_add(object, is_initial_list);
    }
}

// client-go: shared_informer_test.go TestAddWhileActive
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_while_active() {
    let source = FakeSource::new();
    let informer = informer_on(source.clone(), Duration::ZERO);
    let first = Recorder::default();
    let first_registration = informer.add_event_handler(first.clone()).unwrap();
    assert!(!first_registration.has_synced());
    let running = spawn_run(&informer);
    source.add(pod("pod1"));
    first.wait_for(1).await;
    eventually("the first handler synced", WAIT, || {
        first_registration.has_synced()
    })
    .await;

    // A handler added late has not synced until it has handled the replay of the cache.
    let second = Gated::default();
    let gate = second.gate.lock().unwrap();
    let second_registration = informer.add_event_handler(second.clone()).unwrap();
    assert!(!second_registration.has_synced());
    drop(gate);
    source.add(pod("pod2"));
    second.recorder.wait_for(2).await;
    eventually("the second handler synced", WAIT, || {
        second_registration.has_synced()
    })
    .await;
    assert_eq!(informer.handler_count(), 2);
    first.wait_for(2).await;
    running.stop().await;
    assert_eq!(second.recorder.lines(), ["add pod1", "add pod2"]);
    assert_eq!(first.lines(), second.recorder.lines());
}

// client-go: shared_informer_test.go TestShutdown "no-context"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_with_handler() {
    let informer = informer_on(FakeSource::new(), Duration::from_secs(1));
    let registration = informer.add_event_handler(Recorder::default()).unwrap();
    let running = spawn_run(&informer);
    synced_informer(&informer).await;
    running.stop().await;
    assert!(informer.is_stopped());
    registration.remove();
    assert_eq!(informer.handler_count(), 0);
}

// client-go: shared_informer_test.go TestShutdown "no-context-later"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_with_handler_added_later() {
    let informer = informer_on(FakeSource::new(), Duration::from_secs(1));
    let running = spawn_run(&informer);
    synced_informer(&informer).await;
    let registration = informer.add_event_handler(Recorder::default()).unwrap();
    registration.remove();
    running.stop().await;
    assert!(informer.is_stopped());
}

/// A handler that records when it is dropped.
struct DropFlag(Arc<AtomicBool>);

impl ResourceEventHandler<ConfigMap> for DropFlag {}

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

// client-go: shared_informer_test.go TestShutdown "no-run"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_never_run() {
    let informer = informer_on(FakeSource::new(), Duration::from_secs(1));
    let dropped = Arc::new(AtomicBool::new(false));
    let registration = informer
        .add_event_handler(DropFlag(Arc::clone(&dropped)))
        .unwrap();
    // Never started: nothing runs, and nothing keeps the handler alive once the
    // informer and its registration are gone.
    drop(registration);
    drop(informer);
    eventually("the handler released", WAIT, || {
        dropped.load(Ordering::SeqCst)
    })
    .await;
}

/// A handler that counts its adds and then panics.
fn panicking(calls: Arc<AtomicUsize>) -> ResourceEventHandlerFns<ConfigMap> {
    ResourceEventHandlerFns::new().on_add(move |_, _| {
        calls.fetch_add(1, Ordering::SeqCst);
        panic!("fake panic");
    })
}

// client-go: shared_informer_test.go TestEventPanics "simple"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_panics_simple() {
    let source = FakeSource::new();
    source.add(pod("pod1"));
    let informer = informer_on(source, Duration::from_secs(1));
    let calls = Arc::new(AtomicUsize::new(0));
    let registration = informer
        .add_event_handler(panicking(Arc::clone(&calls)))
        .unwrap();
    let running = spawn_run(&informer);
    synced_informer(&informer).await;
    eventually("the handler panicked", WAIT, || {
        registration.stats().panics == 1
    })
    .await;
    // The panic is contained: the informer keeps running.
    assert!(!informer.is_stopped());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    running.stop().await;
}

// client-go: shared_informer_test.go TestEventPanics "many"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_panics_many() {
    const PODS: usize = 5;
    let source = FakeSource::new();
    for i in 1..=PODS {
        source.add(pod(&format!("pod{i}")));
    }
    let informer = informer_on(source, Duration::from_secs(1));
    let calls = [Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0))];
    let registrations: Vec<_> = calls
        .iter()
        .map(|c| {
            informer
                .add_event_handler(panicking(Arc::clone(c)))
                .unwrap()
        })
        .collect();
    let start = tokio::time::Instant::now();
    let running = spawn_run(&informer);
    // Each handler goes on with the next notification after each panic (pausing a
    // second after each, as client-go does).
    eventually("every add handled", Duration::from_secs(30), || {
        registrations
            .iter()
            .all(|r| r.stats().panics == PODS as u64)
    })
    .await;
    assert!(start.elapsed() >= Duration::from_secs(PODS as u64 - 1));
    for count in &calls {
        assert_eq!(count.load(Ordering::SeqCst), PODS);
    }
    running.stop().await;
}

/// A handler blocked in `on_add` until released: `started` then waits on `release`.
#[derive(Clone)]
struct Blocking {
    started: Arc<AtomicBool>,
    release: Arc<(Mutex<bool>, std::sync::Condvar)>,
    finished: Arc<AtomicUsize>,
}

impl Blocking {
    fn new() -> Self {
        Self {
            started: Arc::default(),
            release: Arc::default(),
            finished: Arc::default(),
        }
    }

    fn release(&self) {
        *self.release.0.lock().unwrap() = true;
        self.release.1.notify_all();
    }
}

impl ResourceEventHandler<ConfigMap> for Blocking {
    fn on_add(&mut self, _: &Arc<ConfigMap>, _: bool) {
        self.started.store(true, Ordering::SeqCst);
        let (released, wake) = &*self.release;
        let mut released = released.lock().unwrap();
        while !*released {
            released = wake.wait(released).unwrap();
        }
        self.finished.fetch_add(1, Ordering::SeqCst);
    }
}

// client-go: shared_informer_test.go TestRemoveEventHandler_AsynchronousPanic
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remove_returns_while_handler_runs() {
    let source = FakeSource::new();
    let informer = informer_on(source.clone(), Duration::ZERO);
    let running = spawn_run(&informer);
    let handler = Blocking::new();
    let registration = informer.add_event_handler(handler.clone()).unwrap();
    source.add(pod("pod1"));
    source.add(pod("pod2"));
    eventually("the handler started", WAIT, || {
        handler.started.load(Ordering::SeqCst)
    })
    .await;
    // remove does not wait for the call under way...
    registration.remove();
    assert_eq!(handler.finished.load(Ordering::SeqCst), 0);
    // ...which runs to its end afterwards; nothing after it is delivered.
    handler.release();
    eventually("the call finished", WAIT, || {
        handler.finished.load(Ordering::SeqCst) == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        handler.finished.load(Ordering::SeqCst),
        1,
        "pod2 was not delivered"
    );
    running.stop().await;
}

// client-go: shared_informer_test.go TestRemoveEventHandler_SynchronousShutdown
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remove_and_wait_waits_for_the_running_call() {
    let source = FakeSource::new();
    let informer = informer_on(source.clone(), Duration::ZERO);
    let running = spawn_run(&informer);
    let handler = Blocking::new();
    let registration = Arc::new(informer.add_event_handler(handler.clone()).unwrap());
    source.add(pod("pod1"));
    eventually("the handler started", WAIT, || {
        handler.started.load(Ordering::SeqCst)
    })
    .await;
    let removing = tokio::spawn({
        let registration = Arc::clone(&registration);
        async move { registration.remove_and_wait().await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!removing.is_finished(), "waits while the handler runs");
    handler.release();
    tokio::time::timeout(WAIT, removing).await.unwrap().unwrap();
    // Once it returned, the handler is done and never runs again: what it shares can go.
    assert_eq!(handler.finished.load(Ordering::SeqCst), 1);
    source.add(pod("pod2"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(handler.finished.load(Ordering::SeqCst), 1);
    running.stop().await;
}

/// `remove_and_wait` on `registration` returns in time.
async fn shut_down_handler(registration: &informer::shared_informer::Registration<ConfigMap>) {
    tokio::time::timeout(WAIT, registration.remove_and_wait())
        .await
        .expect("the handler shut down in time");
}

// client-go: shared_informer_test.go TestShutDownEventHandler_Lifecycles "InformerNeverStarted"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shut_down_handler_never_started() {
    let informer = informer_on(FakeSource::new(), Duration::ZERO);
    let registration = informer.add_event_handler(Recorder::default()).unwrap();
    shut_down_handler(&registration).await;
    assert_eq!(informer.handler_count(), 0);
}

// client-go: shared_informer_test.go TestShutDownEventHandler_Lifecycles "StartedThenAddedThenShutDown"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shut_down_handler_started_then_added() {
    let informer = informer_on(FakeSource::new(), Duration::ZERO);
    let running = spawn_run(&informer);
    synced_informer(&informer).await;
    let registration = informer.add_event_handler(Recorder::default()).unwrap();
    shut_down_handler(&registration).await;
    assert_eq!(informer.handler_count(), 0);
    running.stop().await;
}

// client-go: shared_informer_test.go TestShutDownEventHandler_Lifecycles "AddedThenStartedThenShutDown"
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shut_down_handler_added_then_started() {
    let source = FakeSource::new();
    source.add(pod("pod1"));
    let informer = informer_on(source, Duration::ZERO);
    let recorder = Recorder::default();
    let registration = informer.add_event_handler(recorder.clone()).unwrap();
    let running = spawn_run(&informer);
    recorder.wait_for(1).await;
    shut_down_handler(&registration).await;
    assert_eq!(informer.handler_count(), 0);
    running.stop().await;
    assert_eq!(recorder.lines(), ["add pod1"]);
}
