//! Consistency checks against the real API server, for a built-in type (ConfigMaps)
//! and a custom resource. Drift the informer cannot see (a watch event lost, two swapped,
//! made by `testenv::FaultyWatches` between the server's stream and the reflector) is
//! named key by key within two check intervals, counted once by the metrics, and healed
//! by a relist; a clean run under churn, an API server restart and etcd compaction
//! finds nothing. Whether cache and server agree is decided from the server's own list,
//! never from the check itself.
//!
//! The clean runs start control planes of their own (they restart the API server); the
//! rest share one.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::scrape::{scrape, value};
use common::{Running, eventually, spawn_run};
use informer::consistency::{CheckResult, ConsistencyConfig, DifferenceKind, LastCheck};
use informer::key::ObjectKey;
use informer::metrics::Metrics;
use informer::metrics::prometheus_client::registry::Registry;
use informer::reflector::Config;
use informer::reflector::source::ApiListerWatcher;
use informer::shared_informer::{InformerConfig, SharedIndexInformer, wait_for_cache_sync};
use informer::testenv::{FaultyWatches, TestEnv};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{CustomResource, CustomResourceExt, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

const WAIT: Duration = Duration::from_secs(60);

/// A check every two seconds, a probe every half second.
fn every_two_seconds() -> ConsistencyConfig {
    ConsistencyConfig::default()
        .interval(Duration::from_secs(2))
        .jitter(0.0)
        .staleness_interval(Some(Duration::from_millis(500)))
        .request_timeout(Duration::from_secs(10))
}

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "consistency.informer.example.com",
    version = "v1",
    kind = "Gadget",
    namespaced
)]
struct GadgetSpec {
    size: u32,
}

/// What a test changes, whatever the resource: creates, changes and deletes by name.
trait Subject:
    Resource<DynamicType = ()>
    + Clone
    + std::fmt::Debug
    + DeserializeOwned
    + Serialize
    + Send
    + Sync
    + 'static
{
    fn named(name: &str, value: u32) -> Self;
    fn patch(value: u32) -> serde_json::Value;
}

impl Subject for ConfigMap {
    fn named(name: &str, value: u32) -> Self {
        common::config_map(name, &value.to_string(), &[])
    }
    fn patch(value: u32) -> serde_json::Value {
        serde_json::json!({ "data": { "key": value.to_string() } })
    }
}

impl Subject for Gadget {
    fn named(name: &str, value: u32) -> Self {
        Gadget::new(name, GadgetSpec { size: value })
    }
    fn patch(value: u32) -> serde_json::Value {
        serde_json::json!({ "spec": { "size": value } })
    }
}

async fn create<K: Subject>(api: &Api<K>, name: &str) {
    api.create(&PostParams::default(), &K::named(name, 0))
        .await
        .unwrap();
}

async fn change<K: Subject>(api: &Api<K>, name: &str, value: u32) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(&K::patch(value)),
    )
    .await
    .unwrap();
}

async fn delete<K: Subject>(api: &Api<K>, name: &str) {
    api.delete(name, &DeleteParams::default()).await.unwrap();
}

/// `namespace/name` to resourceVersion, from the server's own (consistent) list.
async fn server_versions<K: Subject>(api: &Api<K>) -> BTreeMap<String, String> {
    let list = api.list(&ListParams::default()).await.unwrap();
    list.items
        .iter()
        .map(|o| (ObjectKey::of(o).to_string(), o.resource_version().unwrap()))
        .collect()
}

/// The same of the cache.
fn cache_versions<K: Subject>(informer: &SharedIndexInformer<K>) -> BTreeMap<String, String> {
    informer
        .indexer()
        .list()
        .iter()
        .map(|o| {
            (
                ObjectKey::of(o.as_ref()).to_string(),
                o.resource_version().unwrap(),
            )
        })
        .collect()
}

/// How the cache differs from the server's list, as (key, kind), judged here.
async fn differences_from_the_server<K: Subject>(
    api: &Api<K>,
    informer: &SharedIndexInformer<K>,
) -> Vec<(String, &'static str)> {
    let server = server_versions(api).await;
    let cache = cache_versions(informer);
    let mut found = Vec::new();
    for (key, listed) in &server {
        match cache.get(key) {
            None => found.push((key.clone(), "missing")),
            Some(cached) if cached == listed => {}
            Some(cached) => {
                let older = cached.parse::<u64>().unwrap() < listed.parse::<u64>().unwrap();
                found.push((key.clone(), if older { "older" } else { "newer" }));
            }
        }
    }
    for key in cache.keys().filter(|key| !server.contains_key(*key)) {
        found.push((key.clone(), "extra"));
    }
    found.sort();
    found
}

fn named(check: &LastCheck) -> Vec<(String, &'static str)> {
    let mut named: Vec<_> = check
        .differences
        .iter()
        .map(|d| (d.key.to_string(), d.kind.as_str()))
        .collect();
    named.sort();
    named
}

fn total_checks<K: Subject>(informer: &SharedIndexInformer<K>) -> u64 {
    let stats = informer.consistency_stats();
    stats.checks().iter().map(|(_, count)| count).sum()
}

/// An informer over `api` whose watches lose or swap events on request, checked with
/// `config`, reported to a fresh registry as `name`.
fn faulty_informer<K: Subject>(
    api: &Api<K>,
    config: ConsistencyConfig,
    name: &str,
) -> (
    SharedIndexInformer<K>,
    FaultyWatches<ApiListerWatcher<K>>,
    Registry,
) {
    let faulty = FaultyWatches::new(ApiListerWatcher::new(api.clone()));
    let informer = SharedIndexInformer::with_config(
        faulty.clone(),
        InformerConfig::default().consistency(config),
    )
    .unwrap();
    let mut registry = Registry::default();
    Metrics::new(&mut registry).observe_informer(name, &informer);
    (informer, faulty, registry)
}

/// The drift: two updates of `d` swapped (older), an update of `a` lost (older),
/// `b`'s creation lost (missing), `c`'s deletion lost (extra); then `marker` created,
/// and waited for in the cache, so that every event before it has been through the
/// reflector. The swap goes first: the cache's resourceVersion stops at d's first
/// update until the marker, and the server's state there equals the cache, so no
/// check can see part of the drift (three of the four) before the marker.
async fn make_drift<K: Subject>(
    api: &Api<K>,
    informer: &SharedIndexInformer<K>,
    faulty: &FaultyWatches<ApiListerWatcher<K>>,
    ns: &str,
) -> Vec<(String, &'static str)> {
    let key = |name: &str| ObjectKey::namespaced(ns, name);
    faulty.lose_next(key("a"));
    faulty.lose_next(key("b"));
    faulty.lose_next(key("c"));
    faulty.swap_next(key("d"));
    change(api, "d", 1).await;
    change(api, "d", 2).await;
    change(api, "a", 1).await;
    create(api, "b").await;
    delete(api, "c").await;
    create(api, "marker").await;
    let cached = informer.lister();
    eventually("the marker in the cache", WAIT, || {
        cached
            .indexer()
            .get_by_key(&format!("{ns}/marker"))
            .is_some()
    })
    .await;
    assert_eq!(faulty.faults_done(), 4, "every fault took effect");
    let at = |name: &str| format!("{ns}/{name}");
    vec![
        (at("a"), "older"),
        (at("b"), "missing"),
        (at("c"), "extra"),
        (at("d"), "older"),
    ]
}

/// Waits for the checks after `before` until one names differences; panics unless
/// one of the next two does.
async fn first_inconsistent_check<K: Subject>(
    informer: &SharedIndexInformer<K>,
    before: u64,
) -> (u64, LastCheck) {
    let mut seen = before;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let total = total_checks(informer);
        if total > seen {
            seen = total;
            let last = informer.consistency_stats().last_check.unwrap();
            if last.result == CheckResult::Inconsistent && !last.differences.is_empty() {
                return (total - before, last);
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no check found the drift"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn lost_and_swapped_events_are_named_and_counted<K: Subject>(api: Api<K>, ns: &str) {
    for name in ["a", "c", "d", "e"] {
        create(&api, name).await;
    }
    let (informer, faulty, registry) = faulty_informer(&api, every_two_seconds(), "drift");
    let running = spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    assert!(informer.verify().await.unwrap().consistent);

    let expected = make_drift(&api, &informer, &faulty, ns).await;
    // The server's own list says the same as the faults made.
    assert_eq!(differences_from_the_server(&api, &informer).await, expected);
    let before = total_checks(&informer);
    let (nth, check) = first_inconsistent_check(&informer, before).await;
    assert!(
        nth <= 2,
        "found by check {nth} after the drift, not within two"
    );
    assert_eq!(
        named(&check),
        expected,
        "the check names exactly the differing keys"
    );

    let report = informer.verify().await.unwrap();
    assert!(!report.consistent);
    assert_eq!(report.count(DifferenceKind::Older), 2);
    assert_eq!(report.count(DifferenceKind::Missing), 1);
    assert_eq!(report.count(DifferenceKind::Extra), 1);

    // A difference found again is not counted again.
    eventually("another check of the same drift", WAIT, || {
        total_checks(&informer) > before + nth
    })
    .await;
    let text = scrape(&registry);
    let series =
        |name: &str, labels: &str| value(&text, &format!("{name}{{informer=\"drift\"{labels}}}"));
    assert_eq!(
        series("informer_consistency_differences_total", ""),
        Some(4.0)
    );
    assert!(
        series(
            "informer_consistency_checks_total",
            ",result=\"inconsistent\""
        )
        .unwrap()
            >= 2.0
    );
    assert_eq!(series("informer_consistency_heals_total", ""), Some(0.0));
    assert!(!informer.health().is_healthy(Duration::MAX));
    running.stop().await;
}

async fn a_relist_heals_the_drift<K: Subject>(api: Api<K>, ns: &str) {
    for name in ["a", "c", "d", "e"] {
        create(&api, name).await;
    }
    let (informer, faulty, registry) =
        faulty_informer(&api, every_two_seconds().heal(true), "healed");
    let running = spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    make_drift(&api, &informer, &faulty, ns).await;
    eventually("a heal", WAIT, || informer.consistency_stats().heals >= 1).await;
    let healed_at = total_checks(&informer);
    eventually("a consistent check after the heal", WAIT, || {
        let stats = informer.consistency_stats();
        total_checks(&informer) > healed_at
            && stats
                .last_check
                .is_some_and(|c| c.result == CheckResult::Consistent)
    })
    .await;
    assert_eq!(
        cache_versions(&informer),
        server_versions(&api).await,
        "the cache holds the server's list again"
    );
    assert!(informer.verify().await.unwrap().consistent);
    let stats = informer.consistency_stats();
    assert_eq!(stats.differences, 4);
    assert!(informer.health().is_healthy(Duration::MAX));
    let text = scrape(&registry);
    assert!(
        value(
            &text,
            "informer_consistency_heals_total{informer=\"healed\"}"
        )
        .unwrap()
            >= 1.0
    );
    running.stop().await;
}

/// Creates, changes and deletes objects until stopped, a few a second.
fn churn<K: Subject>(
    api: Api<K>,
) -> (
    tokio::sync::watch::Sender<bool>,
    tokio::task::JoinHandle<usize>,
) {
    let (stop, mut stopped) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(async move {
        let mut changes = 0usize;
        let mut i = 0u32;
        while !*stopped.borrow_and_update() {
            i += 1;
            // Each name is created, changed, then deleted, twelve names in turn.
            let name = format!("churn-{}", (i / 3) % 12);
            // A server restart fails some requests: churn goes on.
            let done = match i % 3 {
                0 => api
                    .create(&PostParams::default(), &K::named(&name, i))
                    .await
                    .is_ok(),
                1 => api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&K::patch(i)))
                    .await
                    .is_ok(),
                _ => api.delete(&name, &DeleteParams::default()).await.is_ok(),
            };
            changes += usize::from(done);
            let pause = tokio::time::sleep(Duration::from_millis(30));
            tokio::select! {
                () = pause => {}
                _ = stopped.changed() => {}
            }
        }
        changes
    });
    (stop, task)
}

/// Checks every second under churn, across an API server restart and two etcd
/// compactions: many consistent checks, no inconsistent one; and at the end the cache
/// holds the server's list.
async fn a_clean_run_finds_nothing<K: Subject>(env: &TestEnv, api: Api<K>) {
    let config = every_two_seconds().interval(Duration::from_secs(1));
    let informer = SharedIndexInformer::with_config(
        ApiListerWatcher::new(api.clone()),
        InformerConfig::default().consistency(config).reflector(
            Config::default().watch_timeout(Duration::from_secs(20)..=Duration::from_secs(30)),
        ),
    )
    .unwrap();
    let running = spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    let (stop_churn, churning) = churn(api.clone());
    let checks_at_least = |n: u64| {
        let informer = informer.clone();
        async move {
            eventually(&format!("{n} consistent checks"), WAIT * 2, || {
                informer.consistency_stats().consistent >= n
            })
            .await;
        }
    };
    checks_at_least(4).await;
    compact(env).await;
    checks_at_least(7).await;
    env.restart_apiserver().await.unwrap();
    checks_at_least(11).await;
    compact(env).await;
    checks_at_least(15).await;
    stop_churn.send(true).unwrap();
    let changes = churning.await.unwrap();
    let stats = informer.consistency_stats();
    eprintln!(
        "{} changes; checks: {:?}; differences {}; staleness {:?}",
        changes,
        stats.checks(),
        stats.differences,
        stats.staleness
    );
    assert_eq!(stats.inconsistent, 0, "no false alarm: {stats:?}");
    assert_eq!(stats.differences, 0);
    assert!(changes > 100, "the churn made {changes} changes");
    assert!(stats.staleness.is_some(), "the probes gave readings");
    eventually_consistent(&api, &informer).await;
    running.stop().await;
}

/// Compacts etcd's history up to now. The API server compacts too (a restarted one
/// at once): a compaction that lost the race to it is tried again.
async fn compact(env: &TestEnv) {
    for _ in 0..3 {
        match env.compact_etcd().await {
            Ok(_) => return,
            Err(error)
                if error
                    .to_string()
                    .contains("required revision has been compacted") => {}
            Err(error) => panic!("compaction failed: {error}"),
        }
    }
    panic!("compaction kept losing the race to the API server's");
}

/// Waits until the cache holds the server's list (the last changes may still be on
/// their way), then checks that a check agrees.
async fn eventually_consistent<K: Subject>(api: &Api<K>, informer: &SharedIndexInformer<K>) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while cache_versions(informer) != server_versions(api).await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cache never caught up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let report = informer.verify().await.unwrap();
    assert!(report.consistent, "{report}");
    assert_eq!(report.listed, server_versions(api).await.len());
}

// --- A built-in type: ConfigMaps ----------------------------------------------------

async fn config_maps(prefix: &str) -> (Api<ConfigMap>, String) {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace(prefix).await.unwrap();
    (Api::namespaced(env.client().unwrap(), &ns), ns)
}

#[tokio::test]
async fn config_maps_lost_and_swapped_events_are_named_within_two_checks_and_counted() {
    let (api, ns) = config_maps("drift").await;
    lost_and_swapped_events_are_named_and_counted(api, &ns).await;
}

#[tokio::test]
async fn config_maps_a_relist_heals_the_drift() {
    let (api, ns) = config_maps("heal").await;
    a_relist_heals_the_drift(api, &ns).await;
}

#[tokio::test]
async fn config_maps_a_clean_run_under_churn_restart_and_compaction_finds_nothing() {
    let env = TestEnv::start().await.unwrap();
    let ns = env.create_namespace("clean").await.unwrap();
    a_clean_run_finds_nothing(
        &env,
        Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns),
    )
    .await;
}

/// While the informer cannot hear the server (its connections silenced), the probes
/// cannot either: the staleness gauge grows and health says stale; once the
/// connection heals and the watch is replaced, the cache catches up and the gauge
/// settles.
#[tokio::test]
async fn config_maps_staleness_grows_while_the_cache_cannot_hear_the_server() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("stale").await.unwrap();
    let proxy = env.fault_proxy().await.unwrap();
    let direct = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    create(&direct, "a").await;
    let config = every_two_seconds().request_timeout(Duration::from_secs(1));
    let informer = SharedIndexInformer::with_config(
        ApiListerWatcher::new(Api::<ConfigMap>::namespaced(proxy.client().unwrap(), &ns)),
        InformerConfig::default().consistency(config).reflector(
            Config::default().watch_timeout(Duration::from_secs(3)..=Duration::from_secs(3)),
        ),
    )
    .unwrap();
    let running = spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    eventually("a staleness reading", WAIT, || {
        informer.consistency_stats().staleness.is_some()
    })
    .await;

    proxy.silence();
    change(&direct, "a", 1).await;
    eventually("staleness past three seconds", WAIT, || {
        informer
            .consistency_stats()
            .staleness
            .is_some_and(|s| s > Duration::from_secs(3))
    })
    .await;
    let problems = informer.health().check(Duration::from_secs(3)).unwrap_err();
    assert!(
        problems
            .iter()
            .any(|p| p.to_string().starts_with("stale: ")),
        "{problems:?}"
    );

    proxy.heal();
    eventually_consistent(&direct, &informer).await;
    eventually("the gauge to settle", WAIT, || {
        informer.health().is_healthy(Duration::from_secs(3))
    })
    .await;
    running.stop().await;
}

// --- A custom resource ---------------------------------------------------------------

async fn gadgets(env: &TestEnv, prefix: &str) -> (Api<Gadget>, String) {
    env.install_crd(&Gadget::crd()).await.unwrap();
    let ns = env.create_namespace(prefix).await.unwrap();
    (Api::namespaced(env.client().unwrap(), &ns), ns)
}

#[tokio::test]
async fn custom_resources_lost_and_swapped_events_are_named_within_two_checks_and_counted() {
    let env = TestEnv::shared().await.unwrap();
    let (api, ns) = gadgets(env, "drift").await;
    lost_and_swapped_events_are_named_and_counted(api, &ns).await;
}

#[tokio::test]
async fn custom_resources_a_relist_heals_the_drift() {
    let env = TestEnv::shared().await.unwrap();
    let (api, ns) = gadgets(env, "heal").await;
    a_relist_heals_the_drift(api, &ns).await;
}

#[tokio::test]
async fn custom_resources_a_clean_run_under_churn_restart_and_compaction_finds_nothing() {
    let env = TestEnv::start().await.unwrap();
    let (api, _) = gadgets(&env, "clean").await;
    a_clean_run_finds_nothing(&env, api).await;
}

/// The server sends bookmarks: a quiet collection's cache gets fresh points from
/// the probes (their watch proves nothing changed up to the server's version), so a
/// check lists at a version the server keeps, even after compaction.
#[tokio::test]
async fn custom_resources_a_quiet_collection_is_checked_at_fresh_points() {
    let env = TestEnv::shared().await.unwrap();
    let (api, _) = gadgets(env, "quiet").await;
    create(&api, "a").await;
    let informer = SharedIndexInformer::with_config(
        ApiListerWatcher::new(api.clone()),
        InformerConfig::default().consistency(every_two_seconds()),
    )
    .unwrap();
    let running: Running = spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    let listed_at: u64 = informer.last_sync_resource_version().parse().unwrap();
    // Other writes move the server on; this collection stays quiet.
    let (other, _) = gadgets(env, "elsewhere").await;
    create(&other, "x").await;
    // The next probe vouches for the quiet stretch: checks then list at its version.
    common::eventually_async("a check at a point newer than the list", WAIT, || async {
        let report = informer.verify().await.unwrap();
        assert!(report.consistent, "{report}");
        report.resource_version.parse::<u64>().unwrap() > listed_at
    })
    .await;
    running.stop().await;
}

// --- A shard member's cache across hand-offs --------------------------------------

/// A shard member's cache, checked back to back and periodically while another member
/// joins and leaves three times (each change moves part of the member's share, and its
/// cache relists to follow): no check says inconsistent, though the shares really
/// moved; then a watch event really lost is still found and named. 300 ConfigMaps that
/// never change, by key (filtered here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_across_shard_hand_offs_raise_no_false_alarm_and_still_find_a_loss() {
    use informer::shard::ShardConfig;
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("handoff-checks").await.unwrap();
    let client = env.client().unwrap();
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    common::create_config_maps(&api, "cm", 300, &[]).await;
    let config = |identity: &str| {
        ShardConfig::new(ns.clone(), "checks")
            .identity(identity)
            .lease_duration(Duration::from_secs(4))
            .renew_deadline(Duration::from_secs(3))
            .retry_period(Duration::from_millis(250))
    };
    let join = |identity: &str| common::RunningMember::join(client.clone(), config(identity));
    let member_a = join("a");
    let a = member_a.handle.clone();
    eventually("a alone", WAIT, || a.members() == ["a"]).await;

    let faulty = FaultyWatches::new(ApiListerWatcher::new(api.clone()));
    let informer = SharedIndexInformer::with_config(
        faulty.clone(),
        InformerConfig::default()
            .consistency(every_two_seconds())
            .reflector(Config::default().key_filter(std::sync::Arc::new(a.clone()))),
    )
    .unwrap();
    let running: Running = spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    assert_eq!(informer.indexer().len(), 300);

    // Checks back to back, as long as the membership moves.
    let checking = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let checks = tokio::spawn({
        let (informer, checking) = (informer.clone(), std::sync::Arc::clone(&checking));
        async move {
            let mut reports = Vec::new();
            while checking.load(std::sync::atomic::Ordering::SeqCst) {
                reports.push(informer.verify().await);
            }
            reports
        }
    });
    let mut sizes = BTreeSet::new();
    let periodic = |informer: &SharedIndexInformer<ConfigMap>| {
        let stats = informer.consistency_stats();
        stats.consistent + stats.inconsistent + stats.skipped + stats.errors
    };
    let mut changes = 0;
    while changes < 6 || periodic(&informer) < 3 {
        assert!(
            changes < 40,
            "periodic checks ran: {:?}",
            informer.consistency_stats()
        );
        changes += 2;
        let member_c = join("c");
        eventually("a to see c", WAIT, || a.members() == ["a", "c"]).await;
        eventually("a's cache to follow its smaller share", WAIT, || {
            let len = informer.indexer().len();
            (1..300).contains(&len)
                && informer
                    .indexer()
                    .list()
                    .iter()
                    .all(|cm| a.in_shard_object(cm.meta()))
        })
        .await;
        sizes.insert(informer.indexer().len());
        member_c.leave().await;
        eventually("a alone again", WAIT, || a.members() == ["a"]).await;
        eventually("a's cache to hold everything again", WAIT, || {
            informer.indexer().len() == 300
        })
        .await;
    }
    checking.store(false, std::sync::atomic::Ordering::SeqCst);
    let reports = checks.await.unwrap();
    let consistent = reports
        .iter()
        .filter(|r| r.as_ref().is_ok_and(|r| r.consistent))
        .count();
    let alarms: Vec<_> = reports
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .filter(|r| !r.consistent)
        .collect();
    eprintln!(
        "{} back-to-back checks across {changes} membership changes (a's share {sizes:?} of 300): {consistent} consistent, {} inconsistent, {} skipped or failed; periodic: {:?}",
        reports.len(),
        alarms.len(),
        reports.iter().filter(|r| r.is_err()).count(),
        informer.consistency_stats()
    );
    assert!(alarms.is_empty(), "false alarms: {alarms:?}");
    assert!(
        consistent >= 6,
        "checks ran through the hand-offs: {consistent}"
    );
    let stats = informer.consistency_stats();
    assert_eq!(
        stats.inconsistent, 0,
        "no periodic check said inconsistent either: {stats:?}"
    );

    // A real loss is still named.
    let lost = ObjectKey::namespaced(&ns, "cm-7");
    faulty.lose_next(lost.clone());
    change(&api, "cm-7", 1).await;
    common::eventually_async("a check naming the lost update", WAIT, || async {
        informer.verify().await.is_ok_and(|report| {
            !report.consistent
                && report
                    .differences
                    .iter()
                    .any(|d| d.key == lost && d.kind == DifferenceKind::Older)
        })
    })
    .await;
    assert_eq!(faulty.faults_done(), 1);
    running.stop().await;
    member_a.leave().await;
}
