//! What a scrape shows after known work: each family's value checked against what
//! was done.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

use super::*;
use crate::reflector::source::FakeSource;
use crate::shared_informer::{InformerConfig, ResourceEventHandlerFns, wait_for_cache_sync};
use crate::test_support::{config_map, spawn_run};
use crate::workqueue::{QueueConfig, WorkQueue, default_controller_rate_limiter};

fn scrape(registry: &Registry) -> String {
    let mut text = String::new();
    encode(&mut text, registry).expect("encodes");
    text
}

/// The value of the sample `series` (name and labels, as the text format writes
/// them), if the scrape has it.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(series)?.strip_prefix(' ')?;
        rest.split(' ').next()?.parse().ok()
    })
}

fn must(text: &str, series: &str) -> f64 {
    value(text, series).unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

#[tokio::test]
async fn workqueue_series_have_client_go_names_and_count_what_the_queue_did() {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let queue: WorkQueue<&str> = WorkQueue::with_config(
        QueueConfig::default()
            .name("pods")
            .metrics(metrics.workqueue("pods")),
        default_controller_rate_limiter(),
    );
    queue.add("a");
    queue.add("a"); // deduplicated: no add
    queue.add("b");
    let text = scrape(&registry);
    assert_eq!(must(&text, r#"workqueue_adds_total{name="pods"}"#), 2.0);
    assert_eq!(must(&text, r#"workqueue_depth{name="pods"}"#), 2.0);

    let item = queue.get().await.expect("queued");
    queue.add_rate_limited(item);
    queue.done(&item);
    let text = scrape(&registry);
    assert_eq!(must(&text, r#"workqueue_retries_total{name="pods"}"#), 1.0);
    assert_eq!(
        must(
            &text,
            r#"workqueue_queue_duration_seconds_count{name="pods"}"#
        ),
        1.0
    );
    assert_eq!(
        must(
            &text,
            r#"workqueue_work_duration_seconds_count{name="pods"}"#
        ),
        1.0
    );
    assert_eq!(
        must(&text, r#"workqueue_depth{name="pods"}"#),
        1.0,
        "b waits"
    );
    assert_eq!(
        must(&text, r#"workqueue_unfinished_work_seconds{name="pods"}"#),
        0.0
    );
    let buckets: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("workqueue_work_duration_seconds_bucket{"))
        .collect();
    assert_eq!(
        buckets.len(),
        11,
        "client-go's 10 buckets and +Inf: {buckets:?}"
    );
}

#[test]
fn a_reconcile_is_counted_by_result_and_a_panic_as_an_error_and_a_panic() {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let controller = metrics.controller("backup-controller");
    controller.set_max_concurrent(4);
    controller.start().finish(Outcome::Success);
    controller.start().finish(Outcome::Success);
    controller.start().finish(Outcome::RequeueAfter);
    controller.start().finish(Outcome::Error);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _timer = controller.start();
        panic!("reconcile blew up");
    }));
    assert!(panicked.is_err());
    drop(controller.start()); // abandoned at shutdown: not a reconcile
    controller.waited_for_own_writes(true);
    controller.waited_for_own_writes(true);
    controller.waited_for_own_writes(false);

    let text = scrape(&registry);
    let reconciles = |result: &str| {
        let labels = format!(r#"{{controller="backup-controller",result="{result}"}}"#);
        must(
            &text,
            &format!("controller_runtime_reconcile_total{labels}"),
        )
    };
    assert_eq!(reconciles("success"), 2.0);
    assert_eq!(reconciles("requeue_after"), 1.0);
    assert_eq!(reconciles("error"), 2.0, "the error and the panic");
    let waits = |result: &str| {
        let labels = format!(r#"{{controller="backup-controller",result="{result}"}}"#);
        must(
            &text,
            &format!("informer_controller_read_your_writes_waits_total{labels}"),
        )
    };
    assert_eq!(
        waits("caught_up"),
        2.0,
        "a wait with nothing pending is none"
    );
    assert_eq!(waits("timed_out"), 1.0);
    let label = r#"{controller="backup-controller"}"#;
    assert_eq!(
        must(
            &text,
            &format!("controller_runtime_reconcile_errors_total{label}")
        ),
        2.0
    );
    assert_eq!(
        must(
            &text,
            &format!("controller_runtime_reconcile_panics_total{label}")
        ),
        1.0
    );
    assert_eq!(
        must(
            &text,
            &format!("controller_runtime_reconcile_time_seconds_count{label}")
        ),
        5.0
    );
    assert_eq!(
        must(&text, &format!("controller_runtime_active_workers{label}")),
        0.0
    );
    assert_eq!(
        must(
            &text,
            &format!("controller_runtime_max_concurrent_reconciles{label}")
        ),
        4.0
    );
}

#[tokio::test]
async fn an_observed_informer_reports_its_cache_handlers_and_reflector_until_dropped() {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let source = FakeSource::new();
    source.add(config_map("default/web", &[], 1));
    source.add(config_map("default/db", &[], 1));
    let informer = SharedIndexInformer::with_config(source.clone(), InformerConfig::default())
        .expect("no indexes");
    metrics.observe_informer("configmaps", &informer);
    let registration = informer
        .add_event_handler(ResourceEventHandlerFns::new().on_update(
            |_: &std::sync::Arc<ConfigMap>, _: &std::sync::Arc<ConfigMap>| panic!("handler bug"),
        ))
        .expect("added");

    let text = scrape(&registry);
    let label = r#"{informer="configmaps"}"#;
    assert_eq!(must(&text, &format!("informer_synced{label}")), 0.0);
    assert_eq!(must(&text, &format!("informer_queued_items{label}")), 0.0);
    assert_eq!(
        must(
            &text,
            &format!("informer_processing_latency_seconds_count{label}")
        ),
        0.0
    );
    assert_eq!(
        value(&text, &format!("informer_reflector_lists_total{label}")),
        None,
        "no reflector before the informer runs"
    );

    let (stop, running) = spawn_run(&informer);
    wait_for_cache_sync(&[&informer, &registration]).await;
    source.modify(config_map("default/web", &[("v", "2")], 1));
    // A missed deletion: the watch ends with 410 Gone and the reflector relists.
    source.delete_missed(&config_map("default/db", &[], 1));
    let relisted = async {
        while informer.reflector_stats().is_none_or(|s| s.lists < 2)
            || informer.handler_panics() < 1
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), relisted)
        .await
        .expect("relisted and the handler ran");

    let text = scrape(&registry);
    assert_eq!(must(&text, &format!("informer_synced{label}")), 1.0);
    assert_eq!(must(&text, &format!("informer_cached_objects{label}")), 1.0);
    assert_eq!(must(&text, &format!("informer_handlers{label}")), 1.0);
    assert_eq!(
        must(&text, &format!("informer_handler_panics_total{label}")),
        1.0
    );
    assert_eq!(
        must(&text, &format!("informer_reflector_lists_total{label}")),
        2.0
    );
    assert_eq!(
        must(
            &text,
            &format!("informer_reflector_list_items_total{label}")
        ),
        3.0,
        "two objects, then one"
    );
    assert_eq!(
        must(
            &text,
            &format!("informer_reflector_relists_after_expired_total{label}")
        ),
        1.0
    );
    // No key filter: nothing skipped, no relist for one.
    assert_eq!(
        must(
            &text,
            &format!("informer_reflector_filtered_out_total{label}")
        ),
        0.0
    );
    assert_eq!(
        must(
            &text,
            &format!("informer_reflector_relists_after_filter_change_total{label}")
        ),
        0.0
    );
    assert!(must(&text, &format!("informer_reflector_watches_total{label}")) >= 2.0);
    assert!(must(&text, &format!("informer_reflector_errors_total{label}")) >= 1.0);
    assert_eq!(
        must(&text, &format!("informer_reflector_sync_failures{label}")),
        0.0
    );
    let age = must(
        &text,
        &format!("informer_reflector_last_resource_version_age_seconds{label}"),
    );
    assert!((0.0..10.0).contains(&age), "age {age}");
    // Every batch the process loop popped is one observation, in client-go's buckets,
    // counted cumulatively up to +Inf.
    let batches = must(
        &text,
        &format!("informer_processing_latency_seconds_count{label}"),
    );
    assert!(
        batches >= 2.0,
        "the list, then the update at least: {batches}"
    );
    let bucket = |le: &str| {
        must(
            &text,
            &format!(
                r#"informer_processing_latency_seconds_bucket{{le="{le}",informer="configmaps"}}"#
            ),
        )
    };
    assert_eq!(bucket("+Inf"), batches);
    assert!(bucket("0.001") <= bucket("10.0") && bucket("10.0") <= batches);
    let seconds = must(
        &text,
        &format!("informer_processing_latency_seconds_sum{label}"),
    );
    assert!((0.0..10.0).contains(&seconds), "{seconds}");

    // A removed handler's panics stay counted.
    registration.remove();
    let text = scrape(&registry);
    assert_eq!(must(&text, &format!("informer_handlers{label}")), 0.0);
    assert_eq!(
        must(&text, &format!("informer_handler_panics_total{label}")),
        1.0
    );

    stop.send(()).ok();
    running.await.expect("joined").expect("ran");
    drop((informer, registration));
    let text = scrape(&registry);
    assert_eq!(
        value(&text, &format!("informer_cached_objects{label}")),
        None,
        "a dropped informer is forgotten"
    );
}

/// A fleet member's handle labels its series with the cluster, beside the same
/// series of another member and of no member: three series, not one.
#[tokio::test]
async fn a_clusters_handle_labels_its_series_with_the_cluster() {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let alpha = metrics.for_cluster("alpha");
    assert_eq!(alpha.cluster(), Some("alpha"));
    let queues: Vec<WorkQueue<&str>> = [&metrics, &alpha, &metrics.for_cluster("beta")]
        .iter()
        .map(|m| {
            WorkQueue::with_config(
                QueueConfig::default()
                    .name("pods")
                    .metrics(m.workqueue("pods")),
                default_controller_rate_limiter(),
            )
        })
        .collect();
    queues[1].add("a");
    queues[1].add("b");
    queues[2].add("a");
    let controller = alpha.controller("pods-controller");
    controller.start().finish(Outcome::Success);

    let source = FakeSource::new();
    source.add(config_map("default/web", &[], 1));
    let informer =
        SharedIndexInformer::with_config(source, InformerConfig::default()).expect("no indexes");
    alpha.observe_informer("ConfigMap", &informer);
    let (stop, running) = spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;

    let text = scrape(&registry);
    assert_eq!(must(&text, r#"workqueue_adds_total{name="pods"}"#), 0.0);
    assert_eq!(
        must(
            &text,
            r#"workqueue_adds_total{cluster="alpha",name="pods"}"#
        ),
        2.0
    );
    assert_eq!(
        must(&text, r#"workqueue_adds_total{cluster="beta",name="pods"}"#),
        1.0
    );
    assert_eq!(
        must(
            &text,
            r#"controller_runtime_reconcile_total{cluster="alpha",controller="pods-controller",result="success"}"#
        ),
        1.0
    );
    assert_eq!(
        must(
            &text,
            r#"informer_cached_objects{cluster="alpha",informer="ConfigMap"}"#
        ),
        1.0
    );
    stop.send(()).ok();
    running.await.unwrap().unwrap();
}

/// An informer with consistency checks reports them: checks by result, differences,
/// heals and the staleness gauge; one without reports none of them.
#[tokio::test(start_paused = true)]
async fn consistency_series_count_the_checks() {
    use crate::consistency::ConsistencyConfig;

    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let source = FakeSource::new();
    source.add(config_map("ns/a", &[], 0));
    let config = ConsistencyConfig::default()
        .interval(Duration::from_secs(60))
        .staleness_interval(Some(Duration::from_secs(10)));
    let checked = SharedIndexInformer::with_config(
        source.clone(),
        InformerConfig::default().consistency(config),
    )
    .expect("no indexes");
    let unchecked = SharedIndexInformer::with_config(source.clone(), InformerConfig::default())
        .expect("no indexes");
    metrics.observe_informer("checked", &checked);
    metrics.observe_informer("unchecked", &unchecked);
    let (stop, running) = spawn_run(&checked);
    wait_for_cache_sync(&[&checked]).await;
    while checked.consistency_stats().consistent < 2 {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let text = scrape(&registry);
    let checks = |result: &str| {
        must(
            &text,
            &format!(
                r#"informer_consistency_checks_total{{informer="checked",result="{result}"}}"#
            ),
        )
    };
    assert_eq!(checks("consistent"), 2.0);
    assert_eq!(
        checks("inconsistent") + checks("skipped") + checks("error"),
        0.0
    );
    assert_eq!(
        must(
            &text,
            r#"informer_consistency_differences_total{informer="checked"}"#
        ),
        0.0
    );
    assert_eq!(
        must(
            &text,
            r#"informer_consistency_heals_total{informer="checked"}"#
        ),
        0.0
    );
    assert_eq!(
        must(&text, r#"informer_staleness_seconds{informer="checked"}"#),
        0.0,
        "a cache that follows the source lags by nothing"
    );
    assert!(!text.contains(r#"informer_consistency_checks_total{informer="unchecked""#));
    stop.send(()).ok();
    running.await.unwrap().unwrap();
}

#[test]
fn shared_values_are_reported_once_for_the_process() {
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let informer =
        SharedIndexInformer::with_config(FakeSource::<ConfigMap>::new(), InformerConfig::default())
            .expect("no indexes");
    metrics.observe_informer("configmaps", &informer);
    let held = crate::projection::Shared::new("a value of this test".to_owned());
    let text = scrape(&registry);
    // Other tests of this binary share values too: the process's count holds ours.
    assert!(must(&text, "informer_shared_values") >= 1.0, "{text}");
    assert!(
        must(&text, "informer_shared_values_bytes") >= 80.0,
        "{text}"
    );
    drop(held);
}
