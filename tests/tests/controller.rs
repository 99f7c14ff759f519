//! The typed controller against the real API server: owned and watched mappings,
//! finalizers (including a deletion made while the controller was stopped),
//! read-your-writes, error policies, clean shutdown.

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{eventually, eventually_async, spawn_until_stopped as spawn};
use informer::controller::Action;
use informer::controller::{Context, Controller, Retry, backoff};
use informer::events::EventSpec;
use informer::factory::{FactoryConfig, SharedInformerFactory};
use informer::informable::Informable;
use informer::lister::Lister;
use informer::shared_informer::ResourceEventHandlerFns;
use informer::testenv::TestEnv;
use informer::workqueue::{ItemExponentialFailureRateLimiter, QueueConfig, WorkQueue};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{CustomResource, CustomResourceExt, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A backup of a ConfigMap: the controller keeps an owned copy `{name}-copy` of the
/// target's data.
#[derive(CustomResource, Informable, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "controller.informer.example.com",
    version = "v1",
    kind = "Backup",
    namespaced
)]
#[informable(index(name = "by_target", path = "spec.target"))]
struct BackupSpec {
    target: String,
}

const FINALIZER: &str = "controller.informer.example.com/cleanup";

async fn setup(prefix: &str) -> (&'static TestEnv, String, SharedInformerFactory) {
    let env = TestEnv::shared().await.unwrap();
    env.install_crd(&Backup::crd()).await.unwrap();
    let ns = env.create_namespace(prefix).await.unwrap();
    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryConfig::default().namespace(ns.clone()),
    );
    (env, ns, factory)
}

fn backup(name: &str, target: &str) -> Backup {
    Backup::new(
        name,
        BackupSpec {
            target: target.into(),
        },
    )
}

fn data(cm: &ConfigMap) -> BTreeMap<String, String> {
    cm.data.clone().unwrap_or_default()
}

/// The Backup operator's reconcile: copy the target's data into the owned copy.
async fn copy_target(backup: Arc<Backup>, ctx: Context<Backup>) -> Result<Action, kube::Error> {
    let ns = backup.namespace().unwrap_or_default();
    let Ok(target) = ctx
        .lister::<ConfigMap>()
        .namespaced(&ns)
        .get(&backup.spec.target)
    else {
        return Ok(Action::Done); // the target's creation will bring us back
    };
    let wanted = data(&target);
    let owned = ctx.owned::<ConfigMap>(&backup);
    if owned.iter().any(|copy| data(copy) == wanted) {
        return Ok(Action::Done);
    }
    let copy = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": format!("{}-copy", backup.name_any()),
            "ownerReferences": [backup.controller_owner_ref(&())],
        },
        "data": wanted,
    });
    ctx.api::<ConfigMap>()
        .patch(
            &format!("{}-copy", backup.name_any()),
            &PatchParams::apply("backup-operator").force(),
            &Patch::Apply(&copy),
        )
        .await?;
    Ok(Action::Done)
}

async fn wait_for_copy(cms: &Api<ConfigMap>, name: &str, value: &str) {
    eventually_async(
        &format!("{name} to hold {value}"),
        Duration::from_secs(20),
        || async {
            cms.get_opt(name)
                .await
                .unwrap()
                .is_some_and(|cm| data(&cm).get("key").map(String::as_str) == Some(value))
        },
    )
    .await;
}

#[tokio::test]
async fn owned_and_watched_changes_reconcile_the_primary_through_owner_refs_and_an_index() {
    let (env, ns, factory) = setup("controller-map").await;
    let client = env.client().unwrap();
    let cms = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    let backups = Api::<Backup>::namespaced(client, &ns);
    cms.create(
        &PostParams::default(),
        &common::config_map("source", "v1", &[]),
    )
    .await
    .unwrap();
    backups
        .create(&PostParams::default(), &backup("nightly", "source"))
        .await
        .unwrap();

    factory.informable::<Backup>();
    let controller = Controller::<Backup>::new(&factory)
        .owns::<ConfigMap>()
        .watches(|cm: &ConfigMap, backups: &Lister<Backup>| {
            backups
                .namespaced(&cm.namespace().unwrap_or_default())
                .by_target(cm.name_any())
        });
    let running = spawn(|stop| controller.run(copy_target, backoff, stop));
    wait_for_copy(&cms, "nightly-copy", "v1").await;

    // The owned copy drifts: its controller reference brings the Backup back.
    let drift = serde_json::json!({ "data": { "key": "tampered" } });
    cms.patch(
        "nightly-copy",
        &PatchParams::default(),
        &Patch::Merge(&drift),
    )
    .await
    .unwrap();
    wait_for_copy(&cms, "nightly-copy", "v1").await;

    // The target changes: the `by_target` index maps it to the Backup.
    let change = serde_json::json!({ "data": { "key": "v2" } });
    cms.patch("source", &PatchParams::default(), &Patch::Merge(&change))
        .await
        .unwrap();
    wait_for_copy(&cms, "nightly-copy", "v2").await;

    running.stop().await;
    factory.shutdown().await;
    env.delete_namespace(&ns).await.unwrap();
}

#[tokio::test]
async fn the_finalizer_runs_the_cleanup_even_for_a_deletion_made_while_the_controller_was_stopped()
{
    let (env, ns, factory) = setup("controller-finalizer").await;
    let backups = Api::<Backup>::namespaced(env.client().unwrap(), &ns);
    let cleaned: Arc<Mutex<Vec<String>>> = Arc::default();
    let run = |factory: &SharedInformerFactory| {
        let cleaned = Arc::clone(&cleaned);
        let controller = Controller::<Backup>::new(factory)
            .finalizer(FINALIZER)
            .cleanup(move |backup: Arc<Backup>, _ctx| {
                let cleaned = Arc::clone(&cleaned);
                async move {
                    cleaned.lock().unwrap().push(backup.name_any());
                    Ok::<_, kube::Error>(())
                }
            });
        spawn(|stop| {
            controller.run(
                |_, _| async { Ok::<_, kube::Error>(Action::Done) },
                backoff,
                stop,
            )
        })
    };
    let has_finalizer = |backups: Api<Backup>, name: &'static str| async move {
        backups
            .get_opt(name)
            .await
            .unwrap()
            .is_some_and(|b| b.finalizers().iter().any(|f| f == FINALIZER))
    };

    let running = run(&factory);
    for name in ["live", "offline"] {
        backups
            .create(&PostParams::default(), &backup(name, "anything"))
            .await
            .unwrap();
        eventually_async("the finalizer to be added", Duration::from_secs(20), || {
            has_finalizer(backups.clone(), name)
        })
        .await;
    }

    // Deleted while running: cleaned up, then the object is gone.
    backups
        .delete("live", &DeleteParams::default())
        .await
        .unwrap();
    eventually_async("live to be gone", Duration::from_secs(20), || async {
        backups.get_opt("live").await.unwrap().is_none()
    })
    .await;
    assert_eq!(*cleaned.lock().unwrap(), ["live"]);

    // Deleted while no controller runs: the finalizer holds the object...
    running.stop().await;
    factory.shutdown().await;
    backups
        .delete("offline", &DeleteParams::default())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let offline = backups.get("offline").await.unwrap();
    assert!(offline.metadata.deletion_timestamp.is_some());
    assert_eq!(*cleaned.lock().unwrap(), ["live"]);

    // ...until the next controller starts, cleans up and lets it go.
    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryConfig::default().namespace(ns.clone()),
    );
    let running = run(&factory);
    eventually_async("offline to be gone", Duration::from_secs(20), || async {
        backups.get_opt("offline").await.unwrap().is_none()
    })
    .await;
    assert_eq!(*cleaned.lock().unwrap(), ["live", "offline"]);
    running.stop().await;
    factory.shutdown().await;
    env.delete_namespace(&ns).await.unwrap();
}

#[tokio::test]
async fn a_reconcile_requeued_at_once_never_creates_a_second_child() {
    let (env, ns, factory) = setup("controller-ryw").await;
    let backups = Api::<Backup>::namespaced(env.client().unwrap(), &ns);
    let cms = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    for i in 0..5 {
        backups
            .create(&PostParams::default(), &backup(&format!("b{i}"), "t"))
            .await
            .unwrap();
    }
    let reconciles: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
    let reconcile = {
        let reconciles = Arc::clone(&reconciles);
        move |backup: Arc<Backup>, ctx: Context<Backup>| {
            let reconciles = Arc::clone(&reconciles);
            async move {
                let round = {
                    let mut reconciles = reconciles.lock().unwrap();
                    let round = reconciles.entry(backup.name_any()).or_default();
                    *round += 1;
                    *round
                };
                // A child with a generated name: nothing but our own view of the cache
                // stops a second one being created.
                if ctx.owned::<ConfigMap>(&backup).is_empty() {
                    let child = serde_json::json!({
                        "apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {
                            "generateName": format!("{}-", backup.name_any()),
                            "ownerReferences": [ctx.controller_reference(&backup)],
                        },
                    });
                    let child: ConfigMap = serde_json::from_value(child).unwrap();
                    ctx.api::<ConfigMap>()
                        .create(&PostParams::default(), &child)
                        .await?;
                }
                // Asks to be reconciled again at once, 20 times per Backup.
                Ok::<_, kube::Error>(if round < 20 {
                    Action::RequeueAfter(Duration::ZERO)
                } else {
                    Action::Done
                })
            }
        }
    };
    let controller = Controller::<Backup>::new(&factory)
        .owns::<ConfigMap>()
        .workers(4);
    let running = spawn(|stop| controller.run(reconcile, backoff, stop));
    eventually(
        "20 reconciles of every Backup",
        Duration::from_secs(30),
        || {
            let reconciles = reconciles.lock().unwrap();
            reconciles.len() == 5 && reconciles.values().all(|n| *n >= 20)
        },
    )
    .await;
    running.stop().await;

    let children = cms.list(&ListParams::default()).await.unwrap();
    let mut per_backup: BTreeMap<String, usize> = BTreeMap::new();
    for child in &children {
        let owner = &child.owner_references()[0];
        assert_eq!(
            (owner.controller, owner.block_owner_deletion),
            (Some(true), Some(true)),
            "a controller reference that blocks the owner's foreground deletion"
        );
        *per_backup.entry(owner.name.clone()).or_default() += 1;
    }
    assert_eq!(
        per_backup,
        (0..5).map(|i| (format!("b{i}"), 1)).collect(),
        "exactly one child per Backup"
    );
    factory.shutdown().await;
    env.delete_namespace(&ns).await.unwrap();
}

#[tokio::test]
async fn the_error_policy_chooses_backoff_a_fixed_delay_or_giving_up() {
    let (env, ns, factory) = setup("controller-errors").await;
    let backups = Api::<Backup>::namespaced(env.client().unwrap(), &ns);
    // The target names the policy the failing reconcile asks for.
    for (name, policy) in [
        ("backoff", "backoff"),
        ("fixed", "fixed"),
        ("never", "never"),
    ] {
        backups
            .create(&PostParams::default(), &backup(name, policy))
            .await
            .unwrap();
    }
    let attempts: Arc<Mutex<BTreeMap<String, Vec<tokio::time::Instant>>>> = Arc::default();
    let reconcile = {
        let attempts = Arc::clone(&attempts);
        move |backup: Arc<Backup>, _ctx: Context<Backup>| {
            let attempts = Arc::clone(&attempts);
            async move {
                attempts
                    .lock()
                    .unwrap()
                    .entry(backup.name_any())
                    .or_default()
                    .push(tokio::time::Instant::now());
                Err::<Action, _>(format!("{} always fails", backup.name_any()))
            }
        }
    };
    let policy = |backup: &Backup, error: &String, _ctx: &Context<Backup>| {
        assert!(error.ends_with("always fails"));
        match backup.spec.target.as_str() {
            "backoff" => Retry::Backoff,
            "fixed" => Retry::After(Duration::from_millis(200)),
            _ => Retry::Never,
        }
    };
    let queue = WorkQueue::with_config(
        QueueConfig::default().name("errors"),
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(20), Duration::from_secs(10)),
    );
    let controller = Controller::<Backup>::new(&factory).queue(queue);
    let running = spawn(|stop| controller.run(reconcile, policy, stop));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    running.stop().await;

    let attempts = attempts.lock().unwrap().clone();
    let gaps =
        |name: &str| -> Vec<Duration> { attempts[name].windows(2).map(|w| w[1] - w[0]).collect() };
    // Backoff: 20, 40, 80, 160, 320, 640 ms: 6 or 7 attempts, each gap about twice
    // the one before.
    let backoff_gaps = gaps("backoff");
    assert!(
        (5..=8).contains(&attempts["backoff"].len()),
        "{backoff_gaps:?}"
    );
    for pair in backoff_gaps.windows(2) {
        assert!(
            pair[1] > pair[0] + pair[0] / 2,
            "gaps grow: {backoff_gaps:?}"
        );
    }
    // Fixed: every 200 ms, not growing.
    let fixed_gaps = gaps("fixed");
    assert!((5..=8).contains(&attempts["fixed"].len()), "{fixed_gaps:?}");
    assert!(
        fixed_gaps
            .iter()
            .all(|gap| *gap >= Duration::from_millis(190) && *gap < Duration::from_millis(600)),
        "{fixed_gaps:?}"
    );
    // Never: one attempt.
    assert_eq!(attempts["never"].len(), 1);
    factory.shutdown().await;
    env.delete_namespace(&ns).await.unwrap();
}

#[tokio::test]
async fn shutdown_removes_the_controllers_handlers_and_ends_its_workers() {
    let (env, ns, factory) = setup("controller-shutdown").await;
    let backups_informer = factory.informable::<Backup>();
    let cms_informer = factory.informer::<ConfigMap>();
    let controller = Controller::<Backup>::new(&factory)
        .owns::<ConfigMap>()
        .reads::<ConfigMap>();
    let running = spawn(|stop| controller.run(copy_target, backoff, stop));
    eventually("the controller's handlers", Duration::from_secs(20), || {
        backups_informer.handler_count() == 1 && cms_informer.handler_count() == 2
    })
    .await;
    eventually("the caches to sync", Duration::from_secs(20), || {
        backups_informer.has_synced() && cms_informer.has_synced()
    })
    .await;
    running.stop().await;
    // The informers keep running for whoever else shares them, without our handlers.
    assert_eq!(backups_informer.handler_count(), 0);
    assert_eq!(cms_informer.handler_count(), 0);
    assert!(!backups_informer.is_stopped());
    factory.shutdown().await;
    assert!(backups_informer.is_stopped());
    env.delete_namespace(&ns).await.unwrap();
}

#[tokio::test]
async fn a_controller_on_a_shut_down_factory_says_which_informer_stopped() {
    let (env, ns, factory) = setup("controller-stopped").await;
    factory.informer::<Backup>();
    factory.start();
    factory.shutdown().await;
    let error = Controller::<Backup>::new(&factory)
        .run(
            |_, _| async { Ok::<_, kube::Error>(Action::Done) },
            backoff,
            std::future::pending(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the backup-controller cannot run: the Backup informer has been shut down"
    );
    env.delete_namespace(&ns).await.unwrap();
}

#[tokio::test]
async fn events_published_by_reconciles_fold_into_one_series() {
    let (env, ns, factory) = setup("controller-events").await;
    let backups = Api::<Backup>::namespaced(env.client().unwrap(), &ns);
    backups
        .create(&PostParams::default(), &backup("noisy", "t"))
        .await
        .unwrap();
    let rounds = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let reconcile = {
        let rounds = Arc::clone(&rounds);
        move |backup: Arc<Backup>, ctx: Context<Backup>| {
            let round = rounds.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            async move {
                ctx.publish(
                    &backup,
                    EventSpec::normal("Copied", "Reconcile").note("copied the target"),
                );
                Ok::<_, kube::Error>(if round < 10 {
                    Action::RequeueAfter(Duration::from_millis(10))
                } else {
                    Action::Done
                })
            }
        }
    };
    let controller = Controller::<Backup>::new(&factory);
    let running = spawn(|stop| controller.run(reconcile, backoff, stop));
    eventually("10 reconciles", Duration::from_secs(20), || {
        rounds.load(std::sync::atomic::Ordering::SeqCst) >= 10
    })
    .await;
    // Stopping flushes the pending series count.
    running.stop().await;

    let events = Api::<Event>::namespaced(env.client().unwrap(), &ns)
        .list(&ListParams::default())
        .await
        .unwrap();
    let about_noisy: Vec<&Event> = events
        .items
        .iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("noisy"))
        .collect();
    assert_eq!(about_noisy.len(), 1, "{about_noisy:#?}");
    let event = about_noisy[0];
    assert_eq!(event.series.as_ref().map(|s| s.count), Some(10));
    assert_eq!(event.reason.as_deref(), Some("Copied"));
    assert_eq!(
        event.reporting_controller.as_deref(),
        Some("backup-controller")
    );
    factory.shutdown().await;
    env.delete_namespace(&ns).await.unwrap();
}

/// What one reconcile's conditional write came to: the status code the server
/// answered (200 or 409), by ConfigMap name.
type Outcomes = Arc<Mutex<BTreeMap<String, u16>>>;

#[tokio::test]
async fn a_write_made_if_unchanged_is_refused_by_the_server_once_someone_else_wrote() {
    let (env, ns, factory) = setup("controller-if-unchanged").await;
    let cms = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    for name in ["untouched", "raced"] {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        cm.data = Some([("owner".to_owned(), "nobody".to_owned())].into());
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let outcomes: Outcomes = Arc::default();
    // Each reconcile reads its ConfigMap from the cache, lets the test write
    // "raced" meanwhile (a replica that took over, say), then writes what it
    // computed from its read: conditional on that read.
    let (read_tx, mut read_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let (go_tx, go_rx) = tokio::sync::watch::channel(false);
    let reconcile = {
        let outcomes = Arc::clone(&outcomes);
        move |cm: Arc<ConfigMap>, ctx: Context<ConfigMap>| {
            let outcomes = Arc::clone(&outcomes);
            let read_tx = read_tx.clone();
            let mut go_rx = go_rx.clone();
            async move {
                let name = cm.name_any();
                if outcomes.lock().unwrap().contains_key(&name) {
                    return Ok(Action::Done);
                }
                read_tx.send(name.clone()).ok();
                go_rx.wait_for(|go| *go).await.ok();
                let patch = serde_json::json!({ "data": { "owner": "controller" } });
                let written = ctx
                    .api::<ConfigMap>()
                    .if_unchanged(&cm)
                    .patch(&PatchParams::default(), &Patch::Merge(&patch))
                    .await;
                let code = match &written {
                    Ok(_) => 200,
                    Err(kube::Error::Api(status)) => status.code,
                    Err(other) => panic!("unexpected error: {other}"),
                };
                outcomes.lock().unwrap().insert(name, code);
                Ok::<_, kube::Error>(Action::Done)
            }
        }
    };
    let controller = Controller::<ConfigMap>::new(&factory).workers(2);
    let running = spawn(|stop| controller.run(reconcile, backoff, stop));
    let mut read = Vec::new();
    while read.len() < 2 {
        read.push(read_rx.recv().await.unwrap());
    }
    cms.patch(
        "raced",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "data": { "owner": "another replica" } })),
    )
    .await
    .unwrap();
    go_tx.send_replace(true);
    eventually("both writes answered", Duration::from_secs(10), || {
        outcomes.lock().unwrap().len() == 2
    })
    .await;
    running.stop().await;
    assert_eq!(
        *outcomes.lock().unwrap(),
        [("raced".to_owned(), 409), ("untouched".to_owned(), 200)].into(),
        "the write computed from a stale view was refused with 409 Conflict"
    );
    assert_eq!(
        data(&cms.get("raced").await.unwrap())["owner"],
        "another replica"
    );
    assert_eq!(
        data(&cms.get("untouched").await.unwrap())["owner"],
        "controller"
    );
    factory.shutdown().await;
    env.delete_namespace(&ns).await.unwrap();
}

/// The reconciles a test's controller ran, in order: name and `data.key`.
#[derive(Clone, Default)]
struct Reconciles(Arc<Mutex<Vec<(String, String)>>>);

impl Reconciles {
    fn snapshot(&self) -> Vec<(String, String)> {
        self.0.lock().unwrap().clone()
    }
}

/// ConfigMaps `listed-{i}` in every controller start of the priority tests.
const BACKLOG: usize = 80;

/// A controller started over a backlog, with its edit reconciled.
struct Backlog {
    env: &'static TestEnv,
    ns: String,
    cms: Api<ConfigMap>,
    reconciles: Reconciles,
    running: common::Running<informer::controller::ControllerError>,
    /// The reconciles up to and including the edit's.
    until_edit: Vec<(String, String)>,
}

/// Starts a controller over a backlog: [`BACKLOG`] ConfigMaps `listed-{i}` and four
/// `hot-{i}`, all in its initial list, reconciled one at a time (10 ms each). Once
/// the first reconcile ran, the listed object last in the initial list (the server's
/// order: its watch cache's lists are unsorted) is edited; returns once the edit was
/// reconciled.
async fn start_over_a_backlog_and_edit(prefix: &str, priority_queue: bool) -> Backlog {
    let (env, ns, factory) = setup(prefix).await;
    let cms = Api::<ConfigMap>::namespaced(env.client().unwrap(), &ns);
    common::create_config_maps(&cms, "listed", BACKLOG, &[]).await;
    common::create_config_maps(&cms, "hot", 4, &[]).await;
    common::wait_for_watch_cache(&cms, BACKLOG + 4).await;

    // The initial list's order, as the controller's handler receives it.
    let listed_order = Arc::new(Mutex::new(Vec::new()));
    factory
        .informer::<ConfigMap>()
        .add_event_handler(ResourceEventHandlerFns::new().on_add({
            let listed_order = Arc::clone(&listed_order);
            move |cm: &Arc<ConfigMap>, initial| {
                if initial && cm.name_any().starts_with("listed-") {
                    listed_order.lock().unwrap().push(cm.name_any());
                }
            }
        }))
        .unwrap();
    let reconciles = Reconciles::default();
    let log = reconciles.clone();
    let controller = Controller::<ConfigMap>::new(&factory)
        .priority_queue(priority_queue)
        .workers(1);
    let running = spawn(|stop| {
        controller.run(
            move |cm: Arc<ConfigMap>, _ctx| {
                let log = log.clone();
                async move {
                    let value = data(&cm).get("key").cloned().unwrap_or_default();
                    log.0.lock().unwrap().push((cm.name_any(), value));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    Ok::<_, kube::Error>(Action::Done)
                }
            },
            backoff,
            stop,
        )
    });
    eventually("the first reconcile", Duration::from_secs(20), || {
        !reconciles.snapshot().is_empty()
    })
    .await;
    eventually("the initial list", Duration::from_secs(20), || {
        listed_order.lock().unwrap().len() == BACKLOG
    })
    .await;
    let edited = listed_order.lock().unwrap().last().cloned().unwrap();
    cms.patch(
        &edited,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "data": { "key": "edited" } })),
    )
    .await
    .unwrap();
    let seen = (edited, "edited".to_owned());
    eventually("the edit to be reconciled", Duration::from_secs(30), || {
        reconciles.snapshot().contains(&seen)
    })
    .await;
    let log = reconciles.snapshot();
    let until_edit = log[..=log.iter().position(|r| *r == seen).unwrap()].to_vec();
    Backlog {
        env,
        ns,
        cms,
        reconciles,
        running,
        until_edit,
    }
}

/// How many distinct listed objects `reconciles` name.
fn listed_reconciled(reconciles: &[(String, String)]) -> usize {
    let names: std::collections::HashSet<&str> = reconciles
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|name| name.starts_with("listed-"))
        .collect();
    names.len()
}

/// After a start over a backlog (every object in the initial list), a real change is
/// reconciled before the backlog; and the backlog still drains while changes keep
/// coming faster than the controller reconciles.
#[tokio::test]
async fn an_edit_made_during_the_startup_backlog_goes_first_and_the_backlog_still_drains() {
    let backlog = start_over_a_backlog_and_edit("controller-priority", true).await;
    let before_edit = listed_reconciled(&backlog.until_edit);
    assert!(
        before_edit < BACKLOG / 2,
        "the edit waited behind {before_edit} of {BACKLOG} listed objects: {:?}",
        backlog.until_edit
    );

    // A steady stream of changes, two writers on the four hot objects.
    let streaming = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let writers: Vec<_> = (0..2)
        .map(|writer| {
            let (cms, streaming) = (backlog.cms.clone(), Arc::clone(&streaming));
            tokio::spawn(async move {
                let mut round = 0u64;
                while streaming.load(std::sync::atomic::Ordering::SeqCst) {
                    let name = format!("hot-{}", writer * 2 + round % 2);
                    let value = serde_json::json!({ "data": { "key": round.to_string() } });
                    cms.patch(&name, &PatchParams::default(), &Patch::Merge(value))
                        .await
                        .unwrap();
                    round += 1;
                }
            })
        })
        .collect();
    let drain_start = backlog.reconciles.snapshot().len();
    eventually("the backlog to drain", Duration::from_secs(60), || {
        listed_reconciled(&backlog.reconciles.snapshot()) == BACKLOG
    })
    .await;
    streaming.store(false, std::sync::atomic::Ordering::SeqCst);
    for writer in writers {
        writer.await.unwrap();
    }
    let during_drain = backlog.reconciles.snapshot()[drain_start..].to_vec();
    let hot = during_drain
        .iter()
        .filter(|(name, _)| name.starts_with("hot-"))
        .count();
    println!(
        "while the backlog drained: {hot} reconciles of changes, {} of the backlog",
        during_drain.len() - hot
    );
    assert!(hot > 0, "the changes kept coming while the backlog drained");
    backlog.running.stop().await;
    backlog.env.delete_namespace(&backlog.ns).await.unwrap();
}

/// The same start without priorities: client-go's FIFO, the edit waits its turn.
#[tokio::test]
async fn without_priorities_an_edit_waits_behind_the_startup_backlog() {
    let backlog = start_over_a_backlog_and_edit("controller-fifo", false).await;
    let before_edit = listed_reconciled(&backlog.until_edit);
    assert!(
        before_edit >= BACKLOG / 2,
        "FIFO, yet the edit went ahead of the backlog: {before_edit} of {BACKLOG} before it"
    );
    backlog.running.stop().await;
    backlog.env.delete_namespace(&backlog.ns).await.unwrap();
}
