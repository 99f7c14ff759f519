//! client-go: tools/cache/reflector_test.go (a scripted lister-watcher and a recording
//! store stand in for client-go's fake ListWatch and store; paused time for backoff)

use std::sync::{Arc, Mutex};
use std::time::Duration;

use informer::key::ObjectKey;
use informer::reflector::{Config, Reflector, ReflectorStore, RunError};
use k8s_openapi::api::core::v1::ConfigMap;

use crate::common::eventually;
use crate::support::{Scripted, name_of, object};

/// Records every write as a line: `add NAME@RV`, `update NAME@RV`, `delete NAME@RV`,
/// `replace [NAMES]@RV`, `resync`.
#[derive(Clone, Default)]
struct Recording(Arc<Mutex<Vec<String>>>);

impl Recording {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    fn count(&self, prefix: &str) -> usize {
        self.lines()
            .iter()
            .filter(|l| l.starts_with(prefix))
            .count()
    }

    fn push(&self, what: &str, obj: &ConfigMap) {
        let rv = obj.metadata.resource_version.clone().unwrap_or_default();
        self.0
            .lock()
            .unwrap()
            .push(format!("{what} {}@{rv}", name_of(obj)));
    }
}

impl ReflectorStore<ConfigMap> for Recording {
    fn add(&self, object: ConfigMap) {
        self.push("add", &object);
    }

    fn update(&self, object: ConfigMap) {
        self.push("update", &object);
    }

    fn delete(&self, object: ConfigMap) {
        self.push("delete", &object);
    }

    fn replace(&self, objects: Vec<ConfigMap>, unchanged: Vec<Arc<ConfigMap>>, rv: &str) {
        let mut names: Vec<&str> = objects.iter().map(name_of).collect();
        names.extend(unchanged.iter().map(|o| name_of(o)));
        names.sort_unstable();
        self.0
            .lock()
            .unwrap()
            .push(format!("replace [{}]@{rv}", names.join(",")));
    }

    fn resync(&self) {
        self.0.lock().unwrap().push("resync".into());
    }

    fn forget(&self, key: &ObjectKey) {
        self.0.lock().unwrap().push(format!("forget {key}"));
    }
}

/// A reflector over `script` into a new recording store, running until the returned
/// sender is used.
struct Running {
    reflector: Arc<Reflector<ConfigMap>>,
    store: Recording,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), RunError>>,
}

fn run(script: &Scripted, config: Config) -> Running {
    let store = Recording::default();
    let reflector = Arc::new(Reflector::new(
        script.source(),
        Arc::new(store.clone()),
        config,
    ));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn({
        let reflector = Arc::clone(&reflector);
        async move {
            reflector
                .run(async {
                    stopped.await.ok();
                })
                .await
        }
    });
    Running {
        reflector,
        store,
        stop,
        task,
    }
}

impl Running {
    async fn stop(self) {
        self.stop.send(()).ok();
        self.task.await.unwrap().unwrap();
    }
}

const LIMIT: Duration = Duration::from_secs(60);

async fn watching(script: &Scripted, watches: usize) {
    eventually("the watch", LIMIT, || script.watches().len() >= watches).await;
    eventually("an open watch", LIMIT, || script.watcher_count() == 1).await;
}

fn pod(name: &str) -> ConfigMap {
    object(None, name, &[])
}

// client-go: reflector_test.go TestRunUntil
#[tokio::test(start_paused = true)]
async fn run_until() {
    let script = Scripted::new();
    let running = run(&script, Config::default());
    watching(&script, 1).await;
    // Stopping ends run and closes the watch.
    running.stop().await;
    assert_eq!(script.watcher_count(), 0);
}

// client-go: reflector_test.go TestReflectorStopWatch
// client-go: reflector_test.go TestReflectorWatchStoppedBefore
#[tokio::test(start_paused = true)]
async fn stopped_before_start_lists_nothing() {
    let script = Scripted::new();
    let reflector = Reflector::new(
        script.source(),
        Arc::new(Recording::default()),
        Config::default(),
    );
    // A shutdown that has already happened wins before the first request.
    reflector.run(async {}).await.unwrap();
    assert!(script.lists().is_empty());
    assert!(script.watches().is_empty());
}

// client-go: reflector_test.go TestReflectorWatchStoppedAfter
#[tokio::test(start_paused = true)]
async fn stopped_after_watch_started_closes_it() {
    let script = Scripted::new();
    let running = run(&script, Config::default());
    watching(&script, 1).await;
    let lists = script.lists().len();
    running.stop().await;
    assert_eq!(script.watcher_count(), 0, "the watch was closed");
    assert_eq!(
        script.lists().len(),
        lists,
        "no more requests after the stop"
    );
}

// client-go: reflector_test.go TestReflectorWatchHandler
#[tokio::test(start_paused = true)]
async fn watch_handler() {
    let script = Scripted::new();
    script.add(pod("foo")); // rv 1
    script.add(pod("bar")); // rv 2
    let running = run(&script, Config::default());
    watching(&script, 1).await;
    script.add(pod("rejected")); // rv 3
    script.delete(pod("foo")); // rv 4
    script.modify(object(None, "bar", &[("v", "2")])); // rv 5
    script.add(pod("baz")); // rv 6
    eventually("the events", LIMIT, || running.store.lines().len() == 5).await;
    assert_eq!(
        running.store.lines(),
        [
            "replace [bar,foo]@2",
            "add rejected@3",
            "delete foo@4",
            "update bar@5",
            "add baz@6"
        ]
    );
    // The reflector resumes from the last event it applied.
    assert_eq!(running.reflector.last_sync_resource_version(), "6");
    running.stop().await;
}

// client-go: reflector_test.go TestReflectorListAndWatch
#[tokio::test(start_paused = true)]
async fn list_and_watch() {
    let script = Scripted::new();
    script.add(pod("foo")); // rv 1
    let running = run(&script, Config::default());
    watching(&script, 1).await;
    // The first list asks the watch cache (resourceVersion "0"); the watch starts at
    // the list's resourceVersion.
    assert_eq!(script.lists()[0].resource_version, "0");
    assert_eq!(script.watches()[0].resource_version, "1");
    for (i, name) in ["bar", "baz", "qux"].into_iter().enumerate() {
        script.add(pod(name));
        eventually("the event", LIMIT, || running.store.count("add") == i + 1).await;
        // The server ends the watch: the reflector watches again from the last
        // event, without listing.
        script.close_watches();
        watching(&script, i + 2).await;
        assert_eq!(
            script.watches()[i + 1].resource_version,
            (i + 2).to_string()
        );
    }
    assert_eq!(script.lists().len(), 1, "no relist");
    running.stop().await;
}

// client-go: reflector_test.go TestReflectorListAndWatchWithErrors
#[tokio::test(start_paused = true)]
async fn list_and_watch_with_errors() {
    let script = Scripted::new();
    script.add(pod("foo"));
    script.fail_lists(2, 500, "a list error");
    let running = run(&script, Config::default());
    // Failed lists are retried (with backoff) until one succeeds; then it watches.
    watching(&script, 1).await;
    assert_eq!(script.lists().len(), 3);
    assert_eq!(running.store.lines(), ["replace [foo]@1"]);
    // A failed watch is retried too.
    script.fail_watches(500, "a watch error");
    eventually("a new watch", LIMIT, || script.watches().len() >= 2).await;
    running.stop().await;
}

// client-go: reflector_test.go TestReflectorResync
#[tokio::test(start_paused = true)]
async fn resync() {
    let script = Scripted::new();
    script.add(pod("foo"));
    let running = run(
        &script,
        Config::default().resync_period(Duration::from_secs(1)),
    );
    watching(&script, 1).await;
    eventually("a resync", LIMIT, || running.store.count("resync") >= 1).await;
    running.stop().await;
}

// client-go: reflector_test.go TestReflectorResyncChan
#[tokio::test(start_paused = true)]
async fn resync_after_its_period() {
    let script = Scripted::new();
    let running = run(
        &script,
        Config::default().resync_period(Duration::from_secs(10)),
    );
    watching(&script, 1).await;
    let started = tokio::time::Instant::now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(running.store.count("resync"), 0, "not before the period");
    eventually("a resync", LIMIT, || running.store.count("resync") == 1).await;
    assert!(started.elapsed() >= Duration::from_secs(5));
    running.stop().await;
}

// client-go: reflector_test.go TestReflectorExpiredExactResourceVersion
#[tokio::test(start_paused = true)]
async fn expired_exact_resource_version() {
    let script = Scripted::new();
    script.add(pod("foo"));
    script.add(pod("bar"));
    let running = run(&script, Config::default());
    watching(&script, 1).await;
    // The watch expires; the relist at the last resourceVersion is expired too: the
    // reflector falls back to a consistent list ("").
    script.fail_lists(1, 410, "too old resource version");
    script.expire_watches();
    watching(&script, 2).await;
    let lists: Vec<String> = script
        .lists()
        .into_iter()
        .map(|l| l.resource_version)
        .collect();
    assert_eq!(lists, ["0", "2", ""]);
    running.stop().await;
}

// client-go: reflector_test.go TestBackoffOnTooManyRequests
// client-go: reflector_test.go TestNoRelistOnTooManyRequests
#[tokio::test(start_paused = true)]
async fn too_many_requests_backs_off_without_relisting() {
    let script = Scripted::new();
    script.add(pod("foo"));
    let running = run(&script, Config::default());
    watching(&script, 1).await;
    let before = tokio::time::Instant::now();
    script.fail_watches(429, "too many requests");
    watching(&script, 2).await;
    assert!(
        before.elapsed() > Duration::ZERO,
        "it backed off before watching again"
    );
    assert_eq!(script.lists().len(), 1, "no relist");
    assert_eq!(script.watches()[1].resource_version, "1");
    running.stop().await;
}

// client-go: reflector_test.go TestWatchTimeout
#[tokio::test(start_paused = true)]
async fn watch_timeout() {
    let script = Scripted::new();
    let running = run(&script, Config::default());
    watching(&script, 1).await;
    // By default each watch asks the server to end it after 5 to 10 minutes.
    let timeout = script.watches()[0].timeout;
    assert!(timeout >= Duration::from_secs(300) && timeout <= Duration::from_secs(600));
    assert!(script.watches()[0].allow_bookmarks);
    running.stop().await;
}

// client-go: reflector_test.go TestReflectorResourceVersionUpdate
#[tokio::test(start_paused = true)]
async fn resource_version_update() {
    let script = Scripted::new();
    script.add(pod("foo")); // rv 1
    let running = run(&script, Config::default());
    watching(&script, 1).await;
    assert_eq!(running.reflector.last_sync_resource_version(), "1");
    script.add(pod("bar")); // rv 2
    eventually("rv 2", LIMIT, || {
        running.reflector.last_sync_resource_version() == "2"
    })
    .await;
    // A bookmark moves the resourceVersion without a write.
    script.put_silently(pod("baz")); // rv 3, unseen
    script.bookmark();
    eventually("rv 3", LIMIT, || {
        running.reflector.last_sync_resource_version() == "3"
    })
    .await;
    assert_eq!(running.store.lines(), ["replace [foo]@1", "add bar@2"]);
    running.stop().await;
}

// client-go: reflector_test.go TestCloseWatchChannelOnError
#[tokio::test(start_paused = true)]
async fn close_watch_channel_on_error() {
    let script = Scripted::new();
    let running = run(&script, Config::default());
    watching(&script, 1).await;
    // An error ends the watch: the reflector lets go of it and starts another.
    script.fail_watches(500, "internal error");
    watching(&script, 2).await;
    assert_eq!(script.watcher_count(), 1);
    running.stop().await;
    assert_eq!(script.watcher_count(), 0);
}
