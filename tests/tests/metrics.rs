//! Prometheus metrics against the real API server: a controller runs, and a scrape
//! of the registry shows what happened (adds, retries, reconciles by result, the
//! cache) with the names client-go and controller-runtime use.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{config_map, eventually, spawn_until_stopped as spawn};
use informer::controller::{Context, Controller, backoff};
use informer::factory::{FactoryOptions, SharedInformerFactory};
use informer::metrics::Metrics;
use informer::metrics::prometheus_client::{encoding::text::encode, registry::Registry};
use informer::testenv::TestEnv;
use informer::workqueue::Action;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, PostParams};

fn scrape(registry: &Registry) -> String {
    let mut text = String::new();
    encode(&mut text, registry).expect("encodes");
    text
}

/// The value of the sample `series` (name and labels as the text format writes
/// them), if the scrape has it.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(series)?.strip_prefix(' ')?;
        rest.split(' ').next()?.parse().ok()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_shows_what_a_controller_did_against_the_real_server() {
    let env = TestEnv::shared().await.unwrap();
    let ns = env.create_namespace("metrics").await.unwrap();
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryOptions::default()
            .namespace(ns.clone())
            .metrics(&metrics),
    );
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
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
    assert!(get(format!("informer_reflector_watches_total{informer}")) >= 1.0);
    assert_eq!(
        get(format!("informer_reflector_sync_failures{informer}")),
        0.0
    );

    // A change reaches the cache, the queue and a reconcile, and the scrape shows it.
    api.create(&PostParams::default(), &config_map("cm-6", "v", &[]))
        .await
        .unwrap();
    eventually("the new ConfigMap counted", Duration::from_secs(10), || {
        let text = scrape(&registry);
        value(&text, &format!("informer_cached_objects{informer}")) == Some(7.0)
            && value(&text, &format!("workqueue_adds_total{queue}")) == Some(9.0)
            && value(
                &text,
                r#"controller_runtime_reconcile_total{controller="cm-metrics",result="success"}"#,
            ) == Some(7.0)
    })
    .await;

    running.stop().await;
    let text = scrape(&registry);
    assert_eq!(
        value(&text, &format!("informer_handlers{informer}")),
        Some(0.0),
        "the stopped controller's handler is removed"
    );
    factory.shutdown().await;
}
