//! Prometheus metrics against the real API server: a controller runs, and a scrape
//! of the registry shows what happened (adds, retries, reconciles by result, the
//! cache) with the names client-go and controller-runtime use.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::scrape::{scrape, value};
use common::{config_map, eventually, eventually_async, spawn_until_stopped as spawn};
use informer::controller::Action;
use informer::controller::{Context, Controller, backoff};
use informer::factory::{FactoryConfig, SharedInformerFactory};
use informer::metrics::Metrics;
use informer::metrics::prometheus_client::registry::Registry;
use informer::testenv::TestEnv;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, PostParams};

/// A fresh namespace of the shared control plane, a factory confined to it reporting to
/// a registry of its own, and the namespace's ConfigMaps.
async fn metered(prefix: &str) -> (Registry, SharedInformerFactory, Api<ConfigMap>) {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace(prefix).await.unwrap();
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryConfig::default()
            .namespace(ns.clone())
            .metrics(&metrics),
    );
    (
        registry,
        factory,
        Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_shows_what_a_controller_did_against_the_real_server() {
    let (registry, factory, api) = metered("metrics").await;
    let ns = api.namespace().unwrap().to_owned();
    // Six ConfigMaps; the two labelled `fail=once` fail their first reconcile.
    for i in 0..6 {
        let labels: &[(&str, &str)] = if i < 2 { &[("fail", "once")] } else { &[] };
        api.create(
            &PostParams::default(),
            &config_map(&format!("cm-{i}"), "v", labels),
        )
        .await
        .unwrap();
    }

    let attempts: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
    let reconcile = {
        let attempts = Arc::clone(&attempts);
        move |cm: Arc<ConfigMap>, _ctx: Context<ConfigMap>| {
            let attempts = Arc::clone(&attempts);
            async move {
                let attempt = {
                    let mut attempts = attempts.lock().unwrap();
                    let count = attempts.entry(cm.name_any()).or_default();
                    *count += 1;
                    *count
                };
                let fails = cm.labels().get("fail").is_some_and(|v| v == "once");
                if fails && attempt == 1 {
                    return Err(format!("{} fails once", cm.name_any()));
                }
                Ok(Action::Done)
            }
        }
    };
    let controller = Controller::<ConfigMap>::new(&factory)
        .name("cm-metrics")
        .workers(2);
    let running = spawn(|stop| controller.run(reconcile, backoff, stop));

    let done = |attempts: &BTreeMap<String, u32>| {
        attempts.len() == 6
            && attempts.iter().all(|(name, n)| {
                *n == if name == "cm-0" || name == "cm-1" {
                    2
                } else {
                    1
                }
            })
    };
    eventually(
        "every ConfigMap reconciled",
        Duration::from_secs(20),
        || done(&attempts.lock().unwrap()),
    )
    .await;
    // `done` and the gauges follow the reconcile's return by a moment.
    let queue = r#"{name="cm-metrics"}"#;
    let controller_label = r#"{controller="cm-metrics"}"#;
    eventually(
        "the queue drained and the workers idle",
        Duration::from_secs(10),
        || {
            let text = scrape(&registry);
            value(&text, &format!("workqueue_depth{queue}")) == Some(0.0)
                && value(
                    &text,
                    &format!("controller_runtime_active_workers{controller_label}"),
                ) == Some(0.0)
                && value(
                    &text,
                    &format!("workqueue_work_duration_seconds_count{queue}"),
                ) == Some(8.0)
        },
    )
    .await;

    let text = scrape(&registry);
    let get = |series: String| {
        value(&text, &series).unwrap_or_else(|| panic!("no {series} in the scrape:\n{text}"))
    };
    // Six adds from the informer's initial list, two more when the retries came due.
    assert_eq!(get(format!("workqueue_adds_total{queue}")), 8.0);
    assert_eq!(get(format!("workqueue_retries_total{queue}")), 2.0);
    assert_eq!(
        get(format!("workqueue_queue_duration_seconds_count{queue}")),
        8.0
    );
    assert_eq!(
        get(format!("workqueue_unfinished_work_seconds{queue}")),
        0.0
    );
    assert_eq!(
        get(format!(
            "workqueue_longest_running_processor_seconds{queue}"
        )),
        0.0
    );
    let result = |result: &str| {
        get(format!(
            r#"controller_runtime_reconcile_total{{controller="cm-metrics",result="{result}"}}"#
        ))
    };
    assert_eq!(result("success"), 6.0);
    assert_eq!(result("error"), 2.0);
    assert_eq!(result("requeue_after"), 0.0);
    assert_eq!(
        get(format!(
            "controller_runtime_reconcile_errors_total{controller_label}"
        )),
        2.0
    );
    assert_eq!(
        get(format!(
            "controller_runtime_reconcile_panics_total{controller_label}"
        )),
        0.0
    );
    assert_eq!(
        get(format!(
            "controller_runtime_reconcile_time_seconds_count{controller_label}"
        )),
        8.0
    );
    assert_eq!(
        get(format!(
            "controller_runtime_max_concurrent_reconciles{controller_label}"
        )),
        2.0
    );

    let informer = format!(r#"{{informer="ConfigMap in {ns}"}}"#);
    assert_eq!(get(format!("informer_cached_objects{informer}")), 6.0);
    assert_eq!(get(format!("informer_synced{informer}")), 1.0);
    assert_eq!(
        get(format!("informer_handlers{informer}")),
        1.0,
        "the controller's"
    );
    assert_eq!(get(format!("informer_handler_panics_total{informer}")), 0.0);
    assert!(get(format!("informer_reflector_lists_total{informer}")) >= 1.0);
    assert!(get(format!("informer_reflector_list_items_total{informer}")) >= 6.0);
    assert_eq!(
        get(format!("informer_reflector_sync_failures{informer}")),
        0.0
    );
    assert!(get(format!("informer_store_resource_version{informer}")) > 0.0);

    // A change reaches the cache, the queue and a reconcile, and the scrape shows it.
    let written: f64 = api
        .create(&PostParams::default(), &config_map("cm-6", "v", &[]))
        .await
        .unwrap()
        .resource_version()
        .unwrap()
        .parse()
        .unwrap();
    eventually("the new ConfigMap counted", Duration::from_secs(10), || {
        let text = scrape(&registry);
        value(&text, &format!("informer_cached_objects{informer}")) == Some(7.0)
            && value(&text, &format!("informer_store_resource_version{informer}"))
                .is_some_and(|version| version >= written)
            && value(&text, &format!("workqueue_adds_total{queue}")) == Some(9.0)
            && value(
                &text,
                r#"controller_runtime_reconcile_total{controller="cm-metrics",result="success"}"#,
            ) == Some(7.0)
    })
    .await;
    // The change came through the watch. (After the initial list, the watch opens when
    // the server answers it: the watch cache may hold that answer until it has caught
    // up with the list's version, so it is not asserted earlier.)
    assert!(
        value(
            &scrape(&registry),
            &format!("informer_reflector_watches_total{informer}")
        )
        .is_some_and(|watches| watches >= 1.0)
    );

    running.stop().await;
    let text = scrape(&registry);
    assert_eq!(
        value(&text, &format!("informer_handlers{informer}")),
        Some(0.0),
        "the stopped controller's handler is removed"
    );
    factory.shutdown().await;
}

/// A leader elector observed by hand and a sharded controller observing its member
/// itself: the scrape shows who leads, a renewal forced onto the slow path, the
/// group's members, and both series gone once the elector and the member stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_shows_leader_election_and_shard_membership() {
    use informer::leader::{LeaderElectionConfig, LeaderElector};
    use informer::shard::{ShardConfig, ShardMember};
    use k8s_openapi::api::coordination::v1::Lease;
    use kube::api::{Patch, PatchParams};

    let (lease, renew, retry) = (
        Duration::from_secs(4),
        Duration::from_secs(3),
        Duration::from_millis(500),
    );
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("metrics-coord").await.unwrap();
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);

    let elector = LeaderElector::new(
        env.client().unwrap(),
        LeaderElectionConfig::default()
            .lease(ns.clone(), "metrics-leader")
            .lease_duration(lease)
            .renew_deadline(renew)
            .retry_period(retry),
    )
    .unwrap();
    let leadership = elector.handle();
    metrics.observe_leader_election(&leadership);
    let status = r#"leader_election_master_status{name="metrics-leader"}"#;
    let slow_path = r#"leader_election_slowpath_total{name="metrics-leader"}"#;
    assert_eq!(value(&scrape(&registry), status), Some(0.0), "not run yet");
    let election = spawn(|stop| async move {
        elector.run(stop).await;
        Ok::<_, std::convert::Infallible>(())
    });
    eventually("the elector to lead", Duration::from_secs(10), || {
        value(&scrape(&registry), status) == Some(1.0)
    })
    .await;
    assert_eq!(value(&scrape(&registry), slow_path), Some(0.0));
    // Another writer touches the Lease: the leader's next renewal, made against the
    // resourceVersion it wrote, conflicts, and it reads the Lease before renewing.
    let leases = Api::<Lease>::namespaced(env.client().unwrap(), &ns);
    leases
        .patch(
            "metrics-leader",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"metadata": {"labels": {"touched": "yes"}}})),
        )
        .await
        .unwrap();
    eventually("a slow-path renewal", Duration::from_secs(10), || {
        let text = scrape(&registry);
        value(&text, slow_path) == Some(1.0) && value(&text, status) == Some(1.0)
    })
    .await;

    let member = ShardMember::new(
        env.client().unwrap(),
        ShardConfig::new(ns.clone(), "metrics-shard")
            .identity("only")
            .lease_duration(lease)
            .renew_deadline(renew)
            .retry_period(retry),
    )
    .unwrap();
    let shard = member.handle();
    let membership = spawn(|stop| async move {
        member.run(stop).await;
        Ok::<_, std::convert::Infallible>(())
    });
    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryConfig::default()
            .namespace(ns.clone())
            .metrics(&metrics),
    );
    let controller = Controller::<ConfigMap>::sharded(&factory, &shard).name("cm-sharded");
    let controlling = spawn(|stop| {
        controller.run(
            |_: Arc<ConfigMap>, _: Context<ConfigMap>| async {
                Ok::<_, std::convert::Infallible>(Action::Done)
            },
            backoff,
            stop,
        )
    });
    let group = r#"{group="metrics-shard"}"#;
    // The member publishes its assignment (active) a moment before it counts the
    // membership change that came with it: wait for both.
    eventually("the member to be active", Duration::from_secs(10), || {
        let text = scrape(&registry);
        value(&text, &format!("informer_shard_active{group}")) == Some(1.0)
            && value(
                &text,
                &format!("informer_shard_membership_changes_total{group}"),
            ) == Some(1.0)
    })
    .await;
    let text = scrape(&registry);
    let get = |family: &str| {
        value(&text, &format!("{family}{group}"))
            .unwrap_or_else(|| panic!("no {family}{group} in the scrape:\n{text}"))
    };
    assert_eq!(get("informer_shard_members"), 1.0);
    assert_eq!(get("informer_shard_membership_changes_total"), 1.0);
    for family in [
        "informer_shard_fenced_members_total",
        "informer_shard_rejoins_total",
        "informer_shard_dropped_reconciles_total",
        "informer_shard_refused_writes_total",
        "informer_shard_request_errors_total",
    ] {
        assert_eq!(get(family), 0.0, "{family}");
    }
    assert_eq!(value(&text, status), Some(1.0), "still leading");
    for family in [
        "informer_leader_dropped_reconciles_total",
        "informer_leader_refused_writes_total",
    ] {
        let line = format!(r#"{family}{{name="metrics-leader"}}"#);
        assert_eq!(value(&text, &line), Some(0.0), "{line}");
    }

    controlling.stop().await;
    membership.stop().await;
    election.stop().await;
    let text = scrape(&registry);
    let coordination: Vec<&str> = text
        .lines()
        .filter(|line| {
            ["leader_election_", "informer_leader_", "informer_shard_"]
                .iter()
                .any(|prefix| line.starts_with(prefix))
        })
        .collect();
    assert!(
        coordination.is_empty(),
        "stopped elector and member are forgotten: {coordination:?}"
    );
    factory.shutdown().await;
}

/// A reconcile that runs past the controller's `reconcile_timeout` is cancelled where
/// it stands, so the write it makes after its wait never reaches the server; its key is
/// retried with backoff, the quick second attempt writes, and the timeout is counted
/// (`controller_runtime_reconcile_timeouts_total`) with the error it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconcile_past_its_timeout_is_cancelled_retried_and_counted() {
    use kube::api::{Patch, PatchParams};
    let (registry, factory, api) = metered("reconcile-timeout").await;
    api.create(&PostParams::default(), &config_map("slow", "v", &[]))
        .await
        .unwrap();
    let attempts = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let reconcile = {
        let attempts = Arc::clone(&attempts);
        move |cm: Arc<ConfigMap>, ctx: Context<ConfigMap>| {
            let attempt = attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            async move {
                if attempt == 1 {
                    // Far past the timeout: this attempt is dropped in this sleep.
                    tokio::time::sleep(Duration::from_secs(300)).await;
                }
                if cm.annotations().contains_key("attempt") {
                    return Ok::<_, kube::Error>(Action::Done);
                }
                let patch = serde_json::json!({
                    "metadata": { "annotations": { "attempt": attempt.to_string() } }
                });
                ctx.api::<ConfigMap>()
                    .patch(
                        &cm.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await?;
                Ok(Action::Done)
            }
        }
    };
    // The timeout is far above a patch's round trip on a loaded machine: at 500 ms
    // a CI run saw the second and third attempts' patches time out too, so the
    // fourth wrote. Only the first attempt's sleep may reach it.
    let controller = Controller::<ConfigMap>::new(&factory)
        .name("timeouts")
        .reconcile_timeout(Duration::from_secs(5));
    let running = spawn(|stop| controller.run(reconcile, backoff, stop));
    eventually_async("the retry's write", Duration::from_secs(30), || async {
        api.get("slow")
            .await
            .unwrap()
            .annotations()
            .get("attempt")
            .is_some()
    })
    .await;
    let written = api.get("slow").await.unwrap();
    assert_eq!(
        written.annotations()["attempt"],
        "2",
        "the first attempt was cancelled before its write"
    );
    let text = scrape(&registry);
    assert_eq!(
        value(
            &text,
            r#"controller_runtime_reconcile_timeouts_total{controller="timeouts"}"#
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(
            &text,
            r#"controller_runtime_reconcile_errors_total{controller="timeouts"}"#
        ),
        Some(1.0),
        "{text}"
    );
    running.stop().await;
    factory.shutdown().await;
    assert!(attempts.load(std::sync::atomic::Ordering::SeqCst) >= 2);
}
