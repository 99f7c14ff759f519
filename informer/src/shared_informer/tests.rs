//! The informer's own wiring, driven by a fixed lister-watcher on paused time.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ConfigMap;
use tokio::time::Instant;

use super::processor::RunsOn;
use super::*;
use crate::reflector::source::{ListPage, ListRequest, ListerWatcher, WatchRequest, WatchStream};
use crate::test_support::{config_map, spawn_run};

/// Lists `items`, then watches a stream that never sends anything; counts requests.
#[derive(Default)]
struct FixedList {
    items: Vec<ConfigMap>,
    requests: Arc<std::sync::atomic::AtomicUsize>,
}

impl ListerWatcher<ConfigMap> for FixedList {
    fn list(&self, _: ListRequest) -> BoxFuture<'_, Result<ListPage<ConfigMap>, kube::Error>> {
        self.requests
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let page = ListPage {
            items: self.items.clone(),
            resource_version: "10".into(),
            ..ListPage::default()
        };
        Box::pin(async move { Ok(page) })
    }

    fn watch(&self, _: WatchRequest) -> BoxFuture<'_, Result<WatchStream<ConfigMap>, kube::Error>> {
        self.requests
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async { Ok(futures::stream::pending().boxed()) })
    }
}

/// An informer over `count` ConfigMaps (`default/cm-0`...), with default settings.
fn informer_over(count: u32) -> SharedIndexInformer<ConfigMap> {
    let items = (0..count)
        .map(|i| config_map(&format!("default/cm-{i}"), &[], i + 1))
        .collect();
    let source = FixedList {
        items,
        ..FixedList::default()
    };
    SharedIndexInformer::with_config(source, InformerConfig::default()).expect("no indexes")
}

/// Starts an informer over `count` objects and waits until it (and a handler, if
/// asked) has synced; returns how much (paused) time that took.
async fn time_to_sync(count: u32, with_handler: bool) -> Duration {
    let informer = informer_over(count);
    let registration = with_handler.then(|| {
        informer
            .add_event_handler(ResourceEventHandlerFns::new())
            .expect("added")
    });
    let (stop, running) = spawn_run(&informer);
    let start = Instant::now();
    match &registration {
        Some(registration) => wait_for_cache_sync(&[&informer, registration]).await,
        None => wait_for_cache_sync(&[&informer]).await,
    }
    let took = start.elapsed();
    assert!(informer.has_synced());
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
    took
}

// On paused time a waiter that polls lets the clock jump by its poll interval; one
// that is notified sees the sync at the instant it happens.
#[tokio::test(start_paused = true)]
async fn wait_for_cache_sync_is_notified_not_polled() {
    assert_eq!(time_to_sync(3, false).await, Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn wait_for_cache_sync_is_notified_after_an_empty_first_list() {
    assert_eq!(time_to_sync(0, false).await, Duration::ZERO);
}

// A registration syncs on its handler thread, outside the runtime: on paused time the
// clock would jump to the next timer (a watch deadline, minutes on) while the runtime
// waits for it, so this runs on real time and checks that the notification arrives
// (a missed one would leave the waiter until that deadline).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_wakes_its_waiter_when_its_handler_has_the_initial_list() {
    let synced = tokio::time::timeout(Duration::from_secs(60), time_to_sync(3, true)).await;
    assert!(synced.is_ok(), "the registration's waiter was woken");
}

/// client-go's rule for per-handler resync: a handler whose period equals the check
/// period is resynced at every tick, so 6 times in 6.5 periods (each of the 3 cached
/// objects once per resync).
#[tokio::test(start_paused = true)]
async fn a_handler_whose_period_equals_the_check_period_resyncs_at_every_tick() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    let informer = informer_over(3);
    let resyncs = Arc::new(AtomicUsize::new(0));
    let registration = informer
        .add_event_handler_with_resync(
            ResourceEventHandlerFns::new().on_update({
                let resyncs = Arc::clone(&resyncs);
                move |old: &Arc<ConfigMap>, new: &Arc<ConfigMap>| {
                    if Arc::ptr_eq(old, new) {
                        resyncs.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }),
            Duration::from_secs(1),
        )
        .expect("added");
    let (stop, running) = spawn_run(&informer);
    tokio::time::sleep(Duration::from_millis(6500)).await;
    // The handler runs on its own thread, outside the paused clock: let it catch up.
    while registration.stats().pending > 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(resyncs.load(Ordering::SeqCst), 6 * 3);
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
}

/// The rule behind the test above, where a tick is handled a moment after it fired (on
/// paused time it never is): the next deadline follows the previous deadline.
#[test]
fn resync_plans_each_deadline_from_the_previous_one_not_from_the_tick() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    let _entered = runtime.enter();
    let second = Duration::from_secs(1);
    let start = Instant::now();
    let (listener, _receiver) = super::listener::Listener::<ConfigMap>::new(
        1,
        Some(second),
        Arc::new(super::sync::SyncSignal::default()),
    );
    let late = Duration::from_millis(30);
    assert!(!listener.check_resync(start + second - late));
    assert!(listener.check_resync(start + second + late));
    assert!(listener.check_resync(start + 2 * second + late));
    assert!(listener.check_resync(start + 3 * second));
    // Deadlines missed altogether are skipped, not made up in a burst.
    assert!(listener.check_resync(start + 10 * second + late));
    assert!(!listener.check_resync(start + 10 * second + 2 * late));
    assert!(listener.check_resync(start + 11 * second));
}

/// A shutdown signalled before `run` is honoured before any request goes out (an
/// unbiased choice between the two would send a list about every other time).
#[tokio::test]
async fn shutdown_signalled_before_run_sends_no_list_or_watch() {
    let requests = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for _ in 0..20 {
        let source = FixedList {
            requests: Arc::clone(&requests),
            ..FixedList::default()
        };
        let informer = SharedIndexInformer::with_config(source, InformerConfig::default())
            .expect("no indexes");
        informer.run(std::future::ready(())).await.expect("ran");
    }
    assert_eq!(requests.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// client-go's `minimumResyncPeriod`: a handler asking for less than a second is
/// resynced every second.
#[tokio::test(start_paused = true)]
async fn a_handler_resync_below_one_second_is_raised_to_one_second() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    let informer = informer_over(1);
    let resyncs = Arc::new(AtomicUsize::new(0));
    let registration = informer
        .add_event_handler_with_resync(
            ResourceEventHandlerFns::new().on_update({
                let resyncs = Arc::clone(&resyncs);
                move |_: &Arc<ConfigMap>, _: &Arc<ConfigMap>| {
                    resyncs.fetch_add(1, Ordering::SeqCst);
                }
            }),
            Duration::from_millis(200),
        )
        .expect("added");
    let (stop, running) = spawn_run(&informer);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    while registration.stats().pending > 0 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(resyncs.load(Ordering::SeqCst), 2, "at 1 s and 2 s");
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
}

/// client-go restarts a listener whose handler panicked after a second, so a handler
/// that panics on every notification does not spin: three panics take two pauses.
#[tokio::test]
async fn a_handler_that_panics_waits_a_second_before_its_next_notification() {
    panics_wait_a_second(RunsOn::Thread).await;
}

/// A handler on the runtime is contained like one on a thread: a panic is counted,
/// and the next notification comes a second later.
#[tokio::test]
async fn a_handler_on_the_runtime_that_panics_waits_a_second_before_its_next_notification() {
    panics_wait_a_second(RunsOn::Runtime).await;
}

/// A handler that panics on each of three notifications, registered to run where
/// `runs_on` says: three panics counted, two pauses of a second between them.
async fn panics_wait_a_second(runs_on: RunsOn) {
    let informer = informer_over(3);
    let handler = ResourceEventHandlerFns::new().on_add(|_: &Arc<ConfigMap>, _| panic!("always"));
    let registration = match runs_on {
        RunsOn::Thread => informer.add_event_handler(handler),
        RunsOn::Runtime => informer.add_event_handler_on_runtime(handler),
    }
    .expect("added");
    let started = std::time::Instant::now();
    let (stop, running) = spawn_run(&informer);
    wait_for_cache_sync(&[&registration]).await;
    assert_eq!(registration.stats().panics, 3);
    assert!(started.elapsed() >= std::time::Duration::from_secs(2));
    // Stopping does not wait out a pause.
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
}

/// A handler on the runtime runs on the runtime's threads (here the one thread of a
/// current-thread runtime), in order; added before or after start; and once `run`
/// returned its task has ended and the handler is dropped.
#[tokio::test]
async fn handlers_on_the_runtime_start_no_thread_and_end_with_the_run() {
    let runtime_thread = std::thread::current().id();
    let informer = informer_over(3);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = |seen: &Arc<Mutex<Vec<String>>>| {
        let seen = Arc::clone(seen);
        ResourceEventHandlerFns::new().on_add(move |cm: &Arc<ConfigMap>, _| {
            assert_eq!(std::thread::current().id(), runtime_thread);
            seen.lock().unwrap().push(cm.metadata.name.clone().unwrap());
        })
    };
    let before = informer
        .add_event_handler_on_runtime(handler(&seen))
        .expect("added");
    let (stop, running) = spawn_run(&informer);
    wait_for_cache_sync(&[&informer, &before]).await;
    let after = informer
        .add_event_handler_on_runtime(handler(&seen))
        .expect("added after start");
    wait_for_cache_sync(&[&after]).await;
    assert_eq!(
        *seen.lock().unwrap(),
        ["cm-0", "cm-1", "cm-2", "cm-0", "cm-1", "cm-2"]
    );
    assert_eq!(before.stats().panics + after.stats().panics, 0);
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
    // Both handlers (each holding a clone) are gone with their tasks.
    assert_eq!(Arc::strong_count(&seen), 1);
}

/// client-go's `IsStopped` and the resync period a registration ended up with.
#[tokio::test(start_paused = true)]
async fn is_stopped_after_run_and_registrations_report_their_settled_resync_period() {
    let informer = SharedIndexInformer::with_config(
        FixedList::default(),
        InformerConfig::default().resync(Duration::from_secs(30)),
    )
    .expect("no indexes");
    let defaulted = informer
        .add_event_handler(ResourceEventHandlerFns::new())
        .expect("added");
    let raised = informer
        .add_event_handler_with_resync(ResourceEventHandlerFns::new(), Duration::from_millis(10))
        .expect("added");
    assert_eq!(defaulted.resync_period(), Some(Duration::from_secs(30)));
    assert_eq!(raised.resync_period(), Some(Duration::from_secs(1)));
    assert!(!informer.is_stopped());
    let (stop, running) = spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    assert!(!informer.is_stopped());
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
    assert!(informer.is_stopped());
}

/// A zero resync period is none, whether the setter or the field set it: no handler
/// is given it, and the informer runs, syncs and stops (a zero tick period would
/// panic its reflector).
#[tokio::test]
async fn a_zero_resync_period_is_none_however_it_was_set() {
    let by_field = InformerConfig {
        resync: Some(Duration::ZERO),
        ..InformerConfig::default()
    };
    for config in [InformerConfig::default().resync(Duration::ZERO), by_field] {
        let informer =
            SharedIndexInformer::with_config(FixedList::default(), config).expect("no indexes");
        let registration = informer
            .add_event_handler(ResourceEventHandlerFns::new())
            .expect("added");
        assert_eq!(registration.resync_period(), None);
        let (stop, running) = spawn_run(&informer);
        wait_for_cache_sync(&[&informer]).await;
        stop.send(()).ok();
        running.await.expect("joined").expect("ran");
    }
}

/// `remove_and_wait` returns only once the handler's call under way has returned, and
/// the handler is never called again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remove_and_wait_returns_after_the_call_under_way() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let informer = informer_over(3);
    let (entered_tx, entered_rx) = std::sync::mpsc::channel::<()>();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let returned = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicUsize::new(0));
    let registration = informer
        .add_event_handler(ResourceEventHandlerFns::new().on_add({
            let (returned, calls) = (Arc::clone(&returned), Arc::clone(&calls));
            let (entered_tx, release_rx) = (Mutex::new(entered_tx), Mutex::new(release_rx));
            move |_: &Arc<ConfigMap>, _| {
                if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    entered_tx.lock().unwrap().send(()).unwrap();
                    release_rx.lock().unwrap().recv().unwrap();
                    returned.store(true, Ordering::SeqCst);
                }
            }
        }))
        .expect("added");
    let (stop, running) = spawn_run(&informer);
    tokio::task::spawn_blocking(move || entered_rx.recv().unwrap())
        .await
        .unwrap();
    let removal = tokio::spawn({
        let returned = Arc::clone(&returned);
        async move {
            registration.remove_and_wait().await;
            returned.load(Ordering::SeqCst)
        }
    });
    // The removal waits for the blocked call; release it.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!removal.is_finished());
    release_tx.send(()).unwrap();
    assert!(removal.await.unwrap(), "returned only after the call had");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "never called again");
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
}

/// An informer over one listed object (`default/web`) whose watch sends `events` at
/// once, then nothing; with `queue`. The burst reaches the queue before the first pop.
fn informer_with_burst(
    queue: QueueKind,
    events: Vec<crate::reflector::source::WatchEvent<ConfigMap>>,
) -> SharedIndexInformer<ConfigMap> {
    let events = Mutex::new(Some(events));
    let source = crate::reflector::source::ListWatch::new(
        |_: ListRequest| async {
            Ok(ListPage {
                items: vec![config_map("default/web", &[], 1)],
                resource_version: "1".into(),
                ..ListPage::default()
            })
        },
        move |_: WatchRequest| {
            let events = events.lock().unwrap().take().unwrap_or_default();
            async move {
                let events = futures::stream::iter(events.into_iter().map(Ok));
                Ok(events.chain(futures::stream::pending()))
            }
        },
    );
    SharedIndexInformer::with_config(source, InformerConfig::default().queue(queue))
        .expect("no indexes")
}

/// The first `count` notifications, as "add web", "update web", "delete db".
async fn first_notifications(
    informer: &SharedIndexInformer<ConfigMap>,
    count: usize,
) -> Vec<String> {
    use kube::ResourceExt;
    let mut notifications = informer.subscribe().expect("subscribed");
    let (stop, running) = spawn_run(informer);
    let mut seen = Vec::new();
    for _ in 0..count {
        seen.push(match notifications.next().await.expect("a notification") {
            Notification::Add { object, .. } => format!("add {}", object.name_any()),
            Notification::Update { new, .. } => format!("update {}", new.name_any()),
            Notification::Delete(gone) => format!("delete {}", gone.object().name_any()),
        });
    }
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
    seen
}

fn burst() -> Vec<crate::reflector::source::WatchEvent<ConfigMap>> {
    use crate::reflector::source::WatchEvent::{Added, Deleted, Modified};
    vec![
        Added(config_map("default/db", &[], 2)),
        Modified(config_map("default/web", &[], 3)),
        Deleted(config_map("default/db", &[], 4)),
    ]
}

#[tokio::test(start_paused = true)]
async fn the_default_queue_delivers_every_change_in_the_order_it_happened() {
    let informer = informer_with_burst(QueueKind::default(), burst());
    assert_eq!(
        first_notifications(&informer, 4).await,
        ["add web", "add db", "update web", "delete db"]
    );
}

#[tokio::test(start_paused = true)]
async fn the_delta_fifo_delivers_each_objects_pending_changes_together() {
    let informer = informer_with_burst(QueueKind::DeltaFifo, burst());
    assert_eq!(
        first_notifications(&informer, 4).await,
        ["add web", "update web", "add db", "delete db"]
    );
}

/// The in-order queue queues every deletion (client-go's RealFIFO); the informer tells
/// handlers only of the deletion of objects they were told exist.
#[tokio::test(start_paused = true)]
async fn a_deletion_of_an_object_the_cache_lacks_reaches_no_handler() {
    use crate::reflector::source::WatchEvent::{Added, Deleted};
    for queue in [QueueKind::InOrder, QueueKind::DeltaFifo] {
        let events = vec![
            Deleted(config_map("default/never-seen", &[], 2)),
            Added(config_map("default/db", &[], 3)),
            Deleted(config_map("default/db", &[], 4)),
            Deleted(config_map("default/db", &[], 5)),
            Added(config_map("default/last", &[], 6)),
        ];
        let informer = informer_with_burst(queue, events);
        assert_eq!(
            first_notifications(&informer, 4).await,
            ["add web", "add db", "delete db", "add last"],
            "{queue:?}"
        );
    }
}

/// A relist reaches the cache in one step (client-go's AtomicFIFO, its default since
/// 1.36): a reader listing the cache over and over while a relist of 10,000 objects is
/// applied sees every object of the old list or every object of the new one, never
/// some of each; the handlers still hear of each object, in the relist's order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_sees_a_ten_thousand_object_relist_before_or_after_never_half_applied() {
    use kube::ResourceExt;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    const OBJECTS: usize = 10_000;
    let generation = |generation: &str, version: u32| -> Vec<ConfigMap> {
        (0..OBJECTS)
            .map(|i| {
                config_map(
                    &format!("ns/cm-{i}"),
                    &[("generation", generation)],
                    version,
                )
            })
            .collect()
    };
    let lists = Arc::new(AtomicUsize::new(0));
    let relist_now = Arc::new(tokio::sync::Notify::new());
    let source = crate::reflector::source::ListWatch::new(
        {
            let lists = Arc::clone(&lists);
            move |_: ListRequest| {
                let first = lists.fetch_add(1, Ordering::SeqCst) == 0;
                let page = if first {
                    ListPage::new(generation("old", 10), "10")
                } else {
                    ListPage::new(generation("new", 20), "20")
                };
                async move { Ok(page) }
            }
        },
        {
            let relist_now = Arc::clone(&relist_now);
            move |_: WatchRequest| {
                let relist_now = Arc::clone(&relist_now);
                async move {
                    // The first watch ends with 410 Gone when the test says so; the
                    // relist's watch stays open.
                    relist_now.notified().await;
                    let gone = kube::core::Status::failure("too old", "Expired").with_code(410);
                    let events = futures::stream::iter([Err(kube::Error::Api(gone.boxed()))]);
                    Ok(events.chain(futures::stream::pending()).boxed())
                }
            }
        },
    )
    .streaming_list(false);
    let informer =
        SharedIndexInformer::with_config(source, InformerConfig::default()).expect("no indexes");
    let updates = Arc::new(AtomicUsize::new(0));
    informer
        .add_event_handler(ResourceEventHandlerFns::new().on_update({
            let updates = Arc::clone(&updates);
            move |_old, _new: &Arc<ConfigMap>| {
                updates.fetch_add(1, Ordering::SeqCst);
            }
        }))
        .expect("added");
    let (stop, running) = spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    assert_eq!(informer.indexer().len(), OBJECTS);

    // The reader: every list it reads must be all old or all new.
    let done = Arc::new(AtomicBool::new(false));
    let reader = tokio::task::spawn_blocking({
        let (indexer, done) = (informer.indexer(), Arc::clone(&done));
        move || {
            let (mut reads, mut mixed, mut new_reads) = (0usize, 0usize, 0usize);
            while !done.load(Ordering::SeqCst) {
                let listed = indexer.list();
                let new = listed
                    .iter()
                    .filter(|cm| cm.labels().get("generation").map(String::as_str) == Some("new"))
                    .count();
                reads += 1;
                if new == OBJECTS {
                    new_reads += 1;
                } else if new != 0 {
                    mixed += 1;
                }
            }
            (reads, mixed, new_reads)
        }
    });
    relist_now.notify_one();
    tokio::time::timeout(Duration::from_secs(30), async {
        while updates.load(Ordering::SeqCst) < OBJECTS {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("every object's update told");
    done.store(true, Ordering::SeqCst);
    let (reads, mixed, new_reads) = reader.await.expect("the reader");
    assert_eq!(lists.load(Ordering::SeqCst), 2, "relisted once");
    assert!(
        new_reads > 0,
        "the reader saw the relist applied ({reads} reads)"
    );
    assert!(reads > new_reads, "and the cache before it ({reads} reads)");
    assert_eq!(
        mixed, 0,
        "{mixed} of {reads} reads saw a relist half applied"
    );
    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
}

/// What the queue holds is what the metrics report as queued: every change for the
/// in-order queue, one entry per key for the per-key one (client-go's two counts).
#[cfg(feature = "metrics")]
#[test]
fn queued_items_counts_changes_in_order_and_keys_per_key() {
    for (kind, expected) in [(QueueKind::InOrder, 3), (QueueKind::DeltaFifo, 2)] {
        let informer = SharedIndexInformer::with_config(
            crate::reflector::source::FakeSource::<ConfigMap>::new(),
            InformerConfig::default().queue(kind),
        )
        .expect("no indexes");
        assert_eq!(informer.queued_items(), 0);
        let queue = &informer.inner.queue;
        queue.add(Arc::new(config_map("default/a", &[], 1)));
        queue.update(Arc::new(config_map("default/a", &[("v", "2")], 2)));
        queue.add(Arc::new(config_map("default/b", &[], 1)));
        assert_eq!(informer.queued_items(), expected, "{kind:?}");
        assert_eq!(informer.processing_latency().count, 0, "nothing popped yet");
    }
}
