//! The reflector's decisions, driven by a scripted lister-watcher on paused time.
//! (The integration tests run the same paths against a real API server; these pin the
//! exact sequence of requests, including paths a real server rarely takes.)
//! The streaming-list tests (`watch_list/tests.rs`) drive the same script.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ConfigMap;

use super::source::{Capabilities, WatchEvent, WatchRequest, WatchStream};
use super::*;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Call {
    List {
        resource_version: String,
        limit: Option<u32>,
        continue_token: Option<String>,
    },
    Watch(String),
    /// A streaming list from this resourceVersion.
    StreamingList(String),
}

pub(super) type ListReply = Result<ListPage<ConfigMap>, kube::Error>;
pub(super) type WatchReply = Result<Vec<Result<WatchEvent<ConfigMap>, kube::Error>>, kube::Error>;

/// Answers from scripts; once a script runs dry, lists fail and watches hang.
/// Watches and streaming lists take their answers from the same script, in order.
#[derive(Default)]
pub(super) struct Script {
    pub(super) calls: Mutex<Vec<Call>>,
    pub(super) lists: Mutex<VecDeque<ListReply>>,
    pub(super) watches: Mutex<VecDeque<WatchReply>>,
    /// Lists that were offered a cache.
    pub(super) lists_reusing: Mutex<usize>,
    /// Says it serves streaming lists.
    pub(super) streaming: bool,
    /// Every watch request, as sent.
    pub(super) watch_requests: Mutex<Vec<WatchRequest>>,
    /// What [`Capabilities::resource`](crate::reflector::source::Capabilities#structfield.resource) says.
    pub(super) resource: Option<&'static str>,
    /// What [`Capabilities::server_url`](crate::reflector::source::Capabilities#structfield.server_url) says.
    pub(super) server_url: Option<&'static str>,
}

impl ListerWatcher<ConfigMap> for Script {
    fn list(&self, request: ListRequest) -> BoxFuture<'_, ListReply> {
        self.calls.lock().unwrap().push(Call::List {
            resource_version: request.resource_version,
            limit: request.limit,
            continue_token: request.continue_token,
        });
        let reply = self.lists.lock().unwrap().pop_front();
        Box::pin(async move { reply.unwrap_or_else(|| Err(status(500, "script ended"))) })
    }

    /// As a real lister-watcher does: items the cache holds at their version come back
    /// as the cache's copies.
    fn list_reusing(
        &self,
        request: ListRequest,
        cache: Arc<dyn CachedObjects<ConfigMap>>,
    ) -> BoxFuture<'_, ListReply> {
        *self.lists_reusing.lock().unwrap() += 1;
        let listed = self.list(request);
        Box::pin(async move {
            let mut page = listed.await?;
            let items = std::mem::take(&mut page.items);
            for item in items {
                let key = crate::key::ObjectKey::of(&item);
                let rv = item.metadata.resource_version.clone().unwrap_or_default();
                match cache.cached(key.as_key_ref(), &rv, None) {
                    Some(cached) => page.unchanged.push(cached),
                    None => page.items.push(item),
                }
            }
            Ok(page)
        })
    }

    fn watch(
        &self,
        request: WatchRequest,
    ) -> BoxFuture<'_, Result<WatchStream<ConfigMap>, kube::Error>> {
        let call = if request.streaming_list {
            Call::StreamingList(request.resource_version.clone())
        } else {
            Call::Watch(request.resource_version.clone())
        };
        self.calls.lock().unwrap().push(call);
        self.watch_requests.lock().unwrap().push(request);
        let reply = self.watches.lock().unwrap().pop_front();
        Box::pin(async move {
            match reply {
                Some(Ok(events)) => {
                    // Events arrive a little apart, so watches are not "very short".
                    let stream = futures::stream::iter(events).then(|e| async {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                        e
                    });
                    Ok(stream.boxed())
                }
                Some(Err(e)) => Err(e),
                None => Ok(futures::stream::pending().boxed()),
            }
        })
    }

    fn capabilities(&self) -> Capabilities {
        let mut capabilities = Capabilities::default().streaming_list(self.streaming);
        capabilities.resource = self.resource.map(str::to_owned);
        capabilities.server_url = self.server_url.map(str::to_owned);
        capabilities
    }
}

#[derive(Default)]
pub(super) struct Store {
    /// What `cached_objects` offers.
    pub(super) cache: Option<Arc<dyn CachedObjects<ConfigMap>>>,
    /// `replace` logs `name@resourceVersion`, not just the name.
    pub(super) versions: bool,
    pub(super) log: Mutex<Vec<String>>,
}

impl ReflectorStore<ConfigMap> for Store {
    fn add(&self, o: ConfigMap) {
        self.log.lock().unwrap().push(format!("add {}", name(&o)));
    }
    fn update(&self, o: ConfigMap) {
        self.log
            .lock()
            .unwrap()
            .push(format!("update {}", name(&o)));
    }
    fn delete(&self, o: ConfigMap) {
        self.log
            .lock()
            .unwrap()
            .push(format!("delete {}", name(&o)));
    }
    fn replace(&self, objects: Vec<ConfigMap>, unchanged: Vec<Arc<ConfigMap>>, rv: &str) {
        let name = |o: &ConfigMap| {
            let name = name(o);
            match &o.metadata.resource_version {
                Some(version) if self.versions => format!("{name}@{version}"),
                _ => name,
            }
        };
        let names: Vec<_> = objects.iter().map(name).collect();
        let mut line = format!("replace [{}]", names.join(","));
        if !unchanged.is_empty() {
            let names: Vec<_> = unchanged.iter().map(|o| name(o)).collect();
            line += &format!(" unchanged [{}]", names.join(","));
        }
        self.log.lock().unwrap().push(format!("{line} at {rv}"));
    }
    fn resync(&self) {
        self.log.lock().unwrap().push("resync".into());
    }
    fn cached_objects(&self) -> Option<Arc<dyn CachedObjects<ConfigMap>>> {
        self.cache.clone()
    }
    fn forget(&self, key: &crate::key::ObjectKey) {
        self.log.lock().unwrap().push(format!("forget {key}"));
    }
}

fn name(o: &ConfigMap) -> String {
    o.metadata.name.clone().unwrap_or_default()
}

pub(super) fn cm(name: &str, rv: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.resource_version = Some(rv.into());
    cm
}

pub(super) fn page(names: &[&str], rv: &str, next: Option<&str>) -> ListReply {
    Ok(ListPage {
        items: names.iter().map(|n| cm(n, rv)).collect(),
        resource_version: rv.into(),
        continue_token: next.map(Into::into),
        ..ListPage::default()
    })
}

pub(super) fn status(code: u16, message: &str) -> kube::Error {
    kube::Error::Api(
        kube::core::Status::failure(message, "Test")
            .with_code(code)
            .boxed(),
    )
}

pub(super) fn refused() -> kube::Error {
    kube::Error::Service(Box::new(std::io::Error::new(
        std::io::ErrorKind::ConnectionRefused,
        "connection refused",
    )))
}

pub(super) fn list(rv: &str, limit: Option<u32>, token: Option<&str>) -> Call {
    Call::List {
        resource_version: rv.into(),
        limit,
        continue_token: token.map(Into::into),
    }
}

pub(super) struct Run {
    pub(super) script: Arc<Script>,
    pub(super) store: Arc<Store>,
    pub(super) reflector: Arc<Reflector<ConfigMap>>,
    pub(super) errors: Arc<Mutex<Vec<String>>>,
}

pub(super) fn run(script: Script, config: Config) -> Run {
    run_with(script, Store::default(), config)
}

pub(super) fn run_with(script: Script, store: Store, config: Config) -> Run {
    let script = Arc::new(script);
    let store = Arc::new(store);
    let errors = Arc::new(Mutex::new(Vec::new()));
    let seen = errors.clone();
    let config = config.error_handler(move |e: &ReflectorError| {
        seen.lock().unwrap().push(e.to_string());
    });
    let reflector = Arc::new(Reflector::from_parts(script.clone(), store.clone(), config));
    let running = reflector.clone();
    tokio::spawn(async move { running.run(std::future::pending()).await });
    Run {
        script,
        store,
        reflector,
        errors,
    }
}

impl Run {
    pub(super) fn calls(&self) -> Vec<Call> {
        self.script.calls.lock().unwrap().clone()
    }
    pub(super) fn log(&self) -> Vec<String> {
        self.store.log.lock().unwrap().clone()
    }
}

#[tokio::test(start_paused = true)]
async fn first_list_is_at_rv_0_in_pages_then_watch_from_the_list_rv() {
    let script = Script::default();
    script.lists.lock().unwrap().extend([
        page(&["a", "b"], "10", Some("t1")),
        page(&["c"], "10", None),
    ]);
    script.watches.lock().unwrap().push_back(Ok(vec![
        Ok(WatchEvent::Added(cm("d", "11"))),
        Ok(WatchEvent::Modified(cm("a", "12"))),
        Ok(WatchEvent::Bookmark {
            resource_version: "15".into(),
            initial_events_end: false,
        }),
        Ok(WatchEvent::Deleted(cm("b", "16"))),
    ]));
    let run = run(script, Config::default());
    tokio::time::sleep(Duration::from_secs(10)).await;

    assert_eq!(
        run.calls()[..4],
        [
            list("0", Some(500), None),
            list("0", Some(500), Some("t1")),
            Call::Watch("10".into()),
            // The watch ended normally: resume from the last version, no relist.
            Call::Watch("16".into()),
        ]
    );
    assert_eq!(
        run.log(),
        ["replace [a,b,c] at 10", "add d", "update a", "delete b"]
    );
    assert_eq!(run.reflector.last_sync_resource_version(), "16");
}

#[tokio::test(start_paused = true)]
async fn expired_continue_token_falls_back_to_a_full_list() {
    let script = Script::default();
    script.lists.lock().unwrap().extend([
        page(&["a"], "10", Some("t1")),
        Err(status(410, "continue token expired")),
        page(&["a", "b"], "12", None),
    ]);
    let run = run(script, Config::default());
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        run.calls()[..4],
        [
            list("0", Some(500), None),
            list("0", Some(500), Some("t1")),
            list("0", None, None),
            Call::Watch("12".into()),
        ]
    );
    assert_eq!(run.log(), ["replace [a,b] at 12"]);
}

#[tokio::test(start_paused = true)]
async fn watch_410_relists_at_the_last_rv_and_a_410_there_falls_back_to_a_consistent_list() {
    let run = relist_refused_with(status(410, "too old resource version")).await;
    assert_eq!(
        run.log(),
        ["replace [a] at 10", "add b", "replace [a,b] at 30"]
    );
}

/// Lists at "10", watches until a 410 after one event, then answers the relist at
/// that event's version with `refusal`; checks the reflector falls back to a
/// consistent read and watches from it.
async fn relist_refused_with(refusal: kube::Error) -> Run {
    let script = Script::default();
    script.lists.lock().unwrap().extend([
        page(&["a"], "10", None),
        Err(refusal),
        page(&["a", "b"], "30", None),
    ]);
    script.watches.lock().unwrap().extend([Ok(vec![
        Ok(WatchEvent::Added(cm("b", "11"))),
        Err(status(410, "too old resource version")),
    ])]);
    let run = run(script, Config::default());
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(
        run.calls()[..5],
        [
            list("0", Some(500), None),
            Call::Watch("10".into()),
            // Relist at the last version seen: a specific version is not paged...
            list("11", None, None),
            // ...and when that is refused, a consistent read (paged again).
            list("", Some(500), None),
            Call::Watch("30".into()),
        ]
    );
    run
}

#[tokio::test(start_paused = true)]
async fn connection_refused_retries_the_watch_with_backoff_without_relisting() {
    let script = Script::default();
    script
        .lists
        .lock()
        .unwrap()
        .push_back(page(&["a"], "10", None));
    script
        .watches
        .lock()
        .unwrap()
        .extend([Err(refused()), Err(refused()), Err(refused())]);
    let run = run(
        script,
        Config::default().backoff(BackoffConfig::default().jitter(0.0)),
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(run.calls().len(), 2, "one list, one watch so far");
    // Always listing, watching or backing off; here, waiting to watch again.
    assert_eq!(run.reflector.stats().phase, Phase::BackingOff);
    // Backoff: 800 ms, then 1.6 s, then 3.2 s.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(run.calls().len(), 3);
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert_eq!(run.calls().len(), 4);
    tokio::time::sleep(Duration::from_millis(3200)).await;
    assert_eq!(
        run.calls(),
        [
            list("0", Some(500), None),
            Call::Watch("10".into()),
            Call::Watch("10".into()),
            Call::Watch("10".into()),
            Call::Watch("10".into()),
        ]
    );
    assert_eq!(run.errors.lock().unwrap().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_watch_that_closes_at_once_is_an_error_and_leads_to_a_relist() {
    let script = Script::default();
    script
        .lists
        .lock()
        .unwrap()
        .extend([page(&["a"], "10", None), page(&["a"], "10", None)]);
    script.watches.lock().unwrap().push_back(Ok(Vec::new()));
    let run = run(script, Config::default());
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        run.calls()[..4],
        [
            list("0", Some(500), None),
            Call::Watch("10".into()),
            list("10", None, None),
            Call::Watch("10".into()),
        ]
    );
    assert!(run.errors.lock().unwrap()[0].contains("very short watch"));
    assert_eq!(run.reflector.stats().short_watches, 1);
}

#[tokio::test(start_paused = true)]
async fn a_broken_watch_resumes_where_it_was_and_an_error_event_relists() {
    let script = Script::default();
    script
        .lists
        .lock()
        .unwrap()
        .extend([page(&["a"], "10", None), page(&["a", "b", "c"], "40", None)]);
    script.watches.lock().unwrap().extend([
        // The connection breaks after one event: resume at that event's version.
        Ok(vec![Ok(WatchEvent::Added(cm("b", "11"))), Err(refused())]),
        // The server ends the watch (its timeout) after one event: resume too.
        Ok(vec![Ok(WatchEvent::Added(cm("c", "12")))]),
        // An error event from the server: relist.
        Ok(vec![
            Ok(WatchEvent::Modified(cm("c", "13"))),
            Err(status(500, "internal error")),
        ]),
    ]);
    let run = run(script, Config::default());
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(
        run.calls()[..6],
        [
            list("0", Some(500), None),
            Call::Watch("10".into()),
            Call::Watch("11".into()),
            Call::Watch("12".into()),
            list("13", None, None),
            Call::Watch("40".into()),
        ]
    );
    assert_eq!(
        run.log(),
        [
            "replace [a] at 10",
            "add b",
            "add c",
            "update c",
            "replace [a,b,c] at 40"
        ]
    );
    // Both failures are reported; the server's closing is not a failure.
    assert_eq!(
        *run.errors.lock().unwrap(),
        [
            "watch failed: connection refused",
            "watch failed: 500 Test: internal error"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn undecodable_events_are_reported_and_skipped() {
    let script = Script::default();
    script
        .lists
        .lock()
        .unwrap()
        .push_back(page(&[], "10", None));
    let bad = serde_json::from_str::<ConfigMap>(r#"{"data":7}"#).unwrap_err();
    script.watches.lock().unwrap().push_back(Ok(vec![
        Ok(WatchEvent::Undecodable(ReflectorError::Decode(
            DecodeError {
                kind: "ConfigMap".into(),
                key: "ns/bad".into(),
                resource_version: Some("11".into()),
                object_key: crate::key::ObjectKey::parse("ns/bad").ok().map(Arc::new),
                source: bad,
            },
        ))),
        Ok(WatchEvent::Added(cm("good", "12"))),
    ]));
    let run = run(script, Config::default());
    tokio::time::sleep(Duration::from_secs(5)).await;
    // The store is told to drop whatever it held under the undecodable name.
    assert_eq!(run.log(), ["replace [] at 10", "forget ns/bad", "add good"]);
    assert_eq!(
        *run.errors.lock().unwrap(),
        [
            "could not decode ConfigMap ns/bad: invalid type: integer `7`, expected a map at line 1 column 9"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn resync_ticks_only_after_the_first_list() {
    let script = Script::default();
    script
        .lists
        .lock()
        .unwrap()
        .push_back(Err(status(500, "boom")));
    script
        .lists
        .lock()
        .unwrap()
        .push_back(page(&["a"], "10", None));
    let run = run(
        script,
        Config::default()
            .resync_period(Duration::from_millis(300))
            .backoff(BackoffConfig::default().jitter(0.0)),
    );
    // The first list fails; the second comes after an 800 ms backoff.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(run.log().is_empty());
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let log = run.log();
    assert_eq!(log[0], "replace [a] at 10");
    assert!(
        log[1..].iter().all(|l| l == "resync") && log.len() >= 3,
        "{log:?}"
    );
}

/// A zero resync period set on the field (the setter was never called) is none: the
/// reflector lists, never resyncs, and keeps running (a zero tick period would panic it).
#[tokio::test(start_paused = true)]
async fn a_zero_resync_period_set_on_the_field_is_none() {
    let script = Arc::new(Script::default());
    script
        .lists
        .lock()
        .unwrap()
        .push_back(page(&["a"], "10", None));
    let store = Arc::new(Store::default());
    let config = Config {
        resync_period: Some(Duration::ZERO),
        ..Config::default()
    };
    let reflector = Arc::new(Reflector::from_parts(script.clone(), store.clone(), config));
    let running = tokio::spawn(async move { reflector.run(std::future::pending()).await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!running.is_finished(), "the reflector stopped");
    assert_eq!(*store.log.lock().unwrap(), ["replace [a] at 10"]);
    running.abort();
}

/// Cached objects by name and resourceVersion.
pub(super) struct Cached(pub(super) Vec<Arc<ConfigMap>>);

impl CachedObjects<ConfigMap> for Cached {
    fn cached(
        &self,
        key: crate::key::ObjectKeyRef<'_>,
        resource_version: &str,
        _uid: Option<&str>,
    ) -> Option<Arc<ConfigMap>> {
        self.0
            .iter()
            .find(|o| {
                o.metadata.name.as_deref() == Some(key.name)
                    && o.metadata.resource_version.as_deref() == Some(resource_version)
            })
            .cloned()
    }
}

#[tokio::test(start_paused = true)]
async fn a_store_that_offers_its_cache_gets_unchanged_objects_back_as_its_own() {
    let script = Script::default();
    script.lists.lock().unwrap().extend([
        page(&["a", "b"], "10", Some("t1")),
        page(&["c"], "10", None),
    ]);
    let a = Arc::new(cm("a", "10"));
    let c = Arc::new(cm("c", "9"));
    let store = Store {
        cache: Some(Arc::new(Cached(vec![a, c]))),
        ..Store::default()
    };
    let run = run_with(script, store, Config::default());
    tokio::time::sleep(Duration::from_secs(10)).await;

    assert_eq!(*run.script.lists_reusing.lock().unwrap(), 2, "both pages");
    // `a` is cached at the listed version; `c` only at an older one.
    assert_eq!(run.log(), ["replace [b,c] unchanged [a] at 10"]);
}

/// client-go's watch loop: a 429 (too many requests), as an error at the start of a
/// watch or inside its stream, backs off and watches again from the last
/// resourceVersion; the cache is still good, so there is no relist.
#[tokio::test(start_paused = true)]
async fn a_429_inside_a_watch_backs_off_and_watches_again_without_relisting() {
    let script = Script::default();
    script
        .lists
        .lock()
        .unwrap()
        .push_back(page(&["a"], "10", None));
    script.watches.lock().unwrap().extend([
        // At once, with no event: not a "very short watch" either.
        Ok(vec![Err(status(429, "too many requests"))]),
        Ok(vec![
            Ok(WatchEvent::Added(cm("b", "11"))),
            Err(status(429, "too many requests")),
        ]),
    ]);
    let run = run(
        script,
        Config::default().backoff(BackoffConfig::default().jitter(0.0)),
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(run.calls().len(), 2, "no second watch before the backoff");
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(
        run.calls(),
        [
            list("0", Some(500), None),
            Call::Watch("10".into()),
            Call::Watch("10".into()),
            Call::Watch("11".into()),
        ]
    );
    assert_eq!(run.log(), ["replace [a] at 10", "add b"]);
    assert_eq!(
        *run.errors.lock().unwrap(),
        [
            "watch failed: 429 Test: too many requests",
            "watch failed: 429 Test: too many requests"
        ]
    );
    assert_eq!(run.reflector.stats().short_watches, 0);
}

/// API servers 1.17.0 to 1.18.5 say "too large resource version" as a timeout whose
/// cause's message (not its reason) names it; client-go recognises that form, as it
/// does the `ResourceVersionTooLarge` cause of later servers, and lists consistently.
#[tokio::test(start_paused = true)]
async fn a_too_large_resource_version_from_servers_1_17_to_1_18_5_falls_back_to_a_consistent_list()
{
    // The status such a server sends, as it sends it.
    let too_large: kube::core::Status = serde_json::from_value(serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": "Timeout: request did not complete within the allotted timeout",
        "reason": "Timeout",
        "details": {"causes": [{"message": "Too large resource version"}], "retryAfterSeconds": 1},
        "code": 504
    }))
    .expect("a Status");
    relist_refused_with(kube::Error::Api(too_large.boxed())).await;
}

/// client-go's pager rule for relists at a specific resourceVersion: whole by
/// default (the watch cache serves them), but paged when the first list came back in
/// pages (no watch cache: paging spares etcd) or when a page size was set explicitly.
#[tokio::test(start_paused = true)]
async fn a_relist_at_a_version_is_paged_when_the_server_paged_the_first_list() {
    let script = Script::default();
    script.lists.lock().unwrap().extend([
        page(&["a"], "10", Some("more")),
        page(&["b"], "10", None),
        page(&["a", "b"], "20", None),
    ]);
    script.watches.lock().unwrap().extend([Ok(vec![
        Ok(WatchEvent::Added(cm("c", "11"))),
        Err(status(410, "too old resource version")),
    ])]);
    let run = run(script, Config::default());
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(
        run.calls()[..5],
        [
            list("0", Some(500), None),
            list("0", Some(500), Some("more")),
            Call::Watch("10".into()),
            list("11", Some(500), None),
            Call::Watch("20".into()),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_relist_at_a_version_is_paged_when_a_page_size_was_set() {
    let script = Script::default();
    script
        .lists
        .lock()
        .unwrap()
        .extend([page(&["a"], "10", None), page(&["a", "b"], "20", None)]);
    script.watches.lock().unwrap().extend([Ok(vec![
        Ok(WatchEvent::Added(cm("b", "11"))),
        Err(status(410, "too old resource version")),
    ])]);
    let run = run(script, Config::default().page_size(Some(50)));
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(
        run.calls()[..4],
        [
            list("0", Some(50), None),
            Call::Watch("10".into()),
            list("11", Some(50), None),
            Call::Watch("20".into()),
        ]
    );
}

/// A watch that neither sends nor ends sits on a connection that died silently: the
/// server ends every watch at the timeout asked for, so once that has passed by a
/// tenth plus 5 s the reflector watches again from the same version (no relist).
#[tokio::test(start_paused = true)]
async fn a_watch_still_open_well_past_its_timeout_is_dead_and_watched_again() {
    let script = Script::default();
    script
        .lists
        .lock()
        .unwrap()
        .push_back(page(&["a"], "10", None));
    // No scripted watch: each one stays open and silent.
    let run = run(
        script,
        Config::default().watch_timeout(Duration::from_secs(10)..=Duration::from_secs(10)),
    );
    tokio::time::sleep(Duration::from_secs(15)).await;
    assert_eq!(
        run.calls().len(),
        2,
        "still within the timeout and its grace"
    );
    assert_eq!(run.reflector.stats().phase, Phase::Watching);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        run.calls(),
        [
            list("0", Some(500), None),
            Call::Watch("10".into()),
            Call::Watch("10".into()),
        ]
    );
    assert_eq!(
        *run.errors.lock().unwrap(),
        ["dead watch: no end from the server after 16s; watching again"]
    );
}

/// A reflector whose `run` future is dropped (as an informer does at shutdown) says it
/// stopped, and can run again.
#[tokio::test(start_paused = true)]
async fn a_dropped_run_leaves_the_reflector_stopped_and_free_to_run_again() {
    let script = Script::default();
    script
        .lists
        .lock()
        .unwrap()
        .push_back(page(&["a"], "10", None));
    let reflector = Reflector::from_parts(
        Arc::new(script),
        Arc::new(Store::default()),
        Config::default(),
    );
    let running = tokio::time::timeout(
        Duration::from_secs(1),
        reflector.run(std::future::pending()),
    );
    assert!(running.await.is_err(), "still running when dropped");
    assert_eq!(reflector.stats().phase, Phase::Stopped);
    assert!(reflector.run(std::future::ready(())).await.is_ok());
}

/// A list that keeps failing is remembered, described for people, until one succeeds.
#[tokio::test(start_paused = true)]
async fn a_failed_sync_is_remembered_until_a_list_succeeds() {
    let script = Script {
        resource: Some("backups.ops.example.com"),
        ..Script::default()
    };
    script.lists.lock().unwrap().extend([
        Err(status(
            404,
            "the server could not find the requested resource",
        )),
        Err(status(
            404,
            "the server could not find the requested resource",
        )),
        page(&["a"], "10", None),
    ]);
    let run = run(script, Config::default());
    assert!(
        run.reflector.last_sync_error().is_none(),
        "not before a list"
    );
    tokio::time::sleep(Duration::from_millis(1)).await;

    let error = run
        .reflector
        .last_sync_error()
        .expect("the first list failed");
    assert!(matches!(error, SyncError::NotServed { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "backups.ops.example.com is not served by the API server"
    );
    assert_eq!(run.reflector.stats().sync_failures, 1);
    assert_eq!(run.reflector.stats().phase, Phase::BackingOff);

    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(run.log(), ["replace [a] at 10"]);
    assert!(
        run.reflector.last_sync_error().is_none(),
        "cleared by the list"
    );
    assert_eq!(run.reflector.stats().sync_failures, 0);
    // The error handler saw every failure, not one per streak.
    assert_eq!(
        *run.errors.lock().unwrap(),
        [
            "list failed: 404 Test: the server could not find the requested resource",
            "list failed: 404 Test: the server could not find the requested resource"
        ]
    );
}

/// A streaming list refused a connection retries inside the sync: still a failed
/// sync, naming the server.
#[tokio::test(start_paused = true)]
async fn a_refused_streaming_list_is_a_failed_sync_naming_the_server() {
    let script = Script {
        streaming: true,
        resource: Some("configmaps"),
        server_url: Some("https://127.0.0.1:6443"),
        ..Script::default()
    };
    script
        .watches
        .lock()
        .unwrap()
        .extend([Err(refused()), Err(refused())]);
    let run = run(script, Config::default());
    tokio::time::sleep(Duration::from_millis(1)).await;

    let error = run
        .reflector
        .last_sync_error()
        .expect("the streaming list failed");
    assert!(matches!(error, SyncError::Unreachable { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "cannot reach the API server at https://127.0.0.1:6443 to list configmaps: connection refused"
    );
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(run.reflector.stats().sync_failures, 2);
}

/// Errors of a lister-watcher that does not name its resource name the Rust type.
#[tokio::test(start_paused = true)]
async fn an_unnamed_resource_is_named_by_its_type() {
    let script = Script::default();
    script
        .lists
        .lock()
        .unwrap()
        .push_back(Err(status(403, "configmaps is forbidden")));
    let run = run(script, Config::default());
    tokio::time::sleep(Duration::from_millis(1)).await;
    let error = run.reflector.last_sync_error().expect("the list failed");
    assert_eq!(
        error.to_string(),
        "listing ConfigMap failed: 403 Test: configmaps is forbidden"
    );
    assert!(error.reflector_error().is_access_denied());
}
