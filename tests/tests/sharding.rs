//! Controllers sharded across replicas, against the real API server: replicas are
//! separate OS processes (`shard_replica`, a controller of ConfigMaps built with
//! `Controller::sharded`), coordinating through one Lease each.
//!
//! What is asserted is the protocol's promise, read from the replicas' shared log:
//! no key is ever reconciled by two replicas at overlapping times, through joins,
//! a SIGKILL and a partition; every change is reconciled; and a killed member's keys
//! are taken over within the bounds its timings give (see `common/replicas.rs`).

mod common;
#[path = "common/replicas.rs"]
mod replicas;
#[path = "common/server_history.rs"]
mod server_history;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use informer::factory::Selection;
use informer::key::ObjectKey;
use informer::shard::{GROUP_LABEL, ShardConfig, ShardHandle, ShardMember, VIEW_ANNOTATION};
use informer::testenv::TestEnv;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams};
use replicas::{LEASE, RENEW, RETRY, Replicas, SLACK, micros, now_micros};
use server_history::ServerHistory;

/// How many objects the replicas share.
const OBJECTS: usize = 3000;

/// Workers per replica: enough that a replica given keys starts them all at once.
const WORKERS: usize = 64;

/// How long one reconcile takes in the replicas.
const RECONCILE: Duration = Duration::from_millis(20);

/// How many objects are nearly always being reconciled (a long reconcile, requeued
/// at once), so that every hand-off meets reconciles in flight.
const BUSY: usize = 60;

/// How long a busy object's reconcile takes: under the hand-off timeout, so hand-offs
/// wait for it rather than drop it.
const BUSY_RECONCILE: Duration = Duration::from_secs(3);

/// How long reconciles of keys that moved away may run before they are dropped.
const HANDOFF: Duration = Duration::from_secs(5);

/// How long starting, syncing and reconciling everything may take on a loaded
/// machine.
const SETTLE: Duration = Duration::from_secs(90);

/// The longest a survivor needs to take a killed member's keys: it saw the last
/// renewal at most a retry period after it was made (it reads every retry period),
/// and reads again the moment a lease duration has passed since, fencing it.
fn takeover_bound() -> Duration {
    LEASE + RETRY + SLACK
}

/// Updates random objects until told to stop, remembering the last value written to
/// each.
struct Churn {
    stop: Arc<AtomicBool>,
    written: Arc<Mutex<HashMap<String, String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Churn {
    fn start(api: Api<ConfigMap>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(Mutex::new(HashMap::new()));
        let task = tokio::spawn({
            let stop = Arc::clone(&stop);
            let written = Arc::clone(&written);
            async move {
                let mut n = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    // A fixed stride walks over every object, a few per tick.
                    n += 1;
                    let name = format!("obj-{}", (n * 7919) % OBJECTS as u64);
                    let value = format!("u{n}");
                    let patch = serde_json::json!({ "data": { "key": value } });
                    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .unwrap();
                    written.lock().unwrap().insert(name, value);
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
            }
        });
        Self {
            stop,
            written,
            task,
        }
    }

    /// Stops and returns the last value written to each object it touched.
    async fn stop(self) -> HashMap<String, String> {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.unwrap();
        Arc::try_unwrap(self.written).unwrap().into_inner().unwrap()
    }
}

/// Waits until each of `identities` printed `members <expected>` after `after`.
async fn wait_for_members(
    replicas: &Replicas,
    identities: &[&str],
    expected: &str,
    after: u128,
) -> u128 {
    let mut last = 0;
    for identity in identities {
        let line = replicas
            .wait_for(
                &format!("{identity} to read members {expected}"),
                after,
                SETTLE,
                |l| l.identity == *identity && l.event == "members" && l.detail == expected,
            )
            .await;
        last = last.max(line.at);
    }
    last
}

/// The keys reconciled with each value: `"obj-1 u42"` and so on.
fn reconciled_values(replicas: &Replicas) -> BTreeSet<String> {
    replicas
        .lines()
        .into_iter()
        .filter(|l| l.event == "reconcile-start")
        .map(|l| l.detail)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_joining_killed_and_cut_off_never_reconcile_a_key_twice_at_once() {
    joining_killed_and_cut_off("key").await;
}

/// The same, the members deciding by uid (`ShardBy::Uid`): the keys follow their
/// objects' uids, decided through each member's cache (the server sends each member
/// only its share where it filters by uid; elsewhere each member drops the others'
/// itself), with the same exclusivity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_by_uid_joining_killed_and_cut_off_never_reconcile_a_key_twice_at_once() {
    joining_killed_and_cut_off("uid").await;
}

/// Replicas deciding by `shard_by` through a join, a SIGKILL and a cut network, under
/// churn; see the first test above. One at a time: each runs four replica processes
/// with timing bounds, on two cores.
async fn joining_killed_and_cut_off(shard_by: &str) {
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _alone = ONE_AT_A_TIME.lock().await;
    let env = TestEnv::shared().await.unwrap();
    let namespace = env.create_namespace("shards").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &namespace);
    common::create_config_maps(&api, "obj", OBJECTS, &[]).await;
    for i in 0..BUSY {
        let busy = serde_json::json!({ "data": {
            "sleep-ms": BUSY_RECONCILE.as_millis().to_string(),
            "requeue": "yes",
        }});
        api.patch(
            &format!("obj-{}", i * (OBJECTS / BUSY)),
            &PatchParams::default(),
            &Patch::Merge(&busy),
        )
        .await
        .unwrap();
    }
    let proxy = env.fault_proxy().await.unwrap();
    let through_proxy = proxy.config().cluster_url.to_string();

    let mut replicas = Replicas::sharded(
        &namespace,
        env.kubeconfig_path(),
        WORKERS,
        RECONCILE,
        HANDOFF,
    )
    .with_arg(&format!("shard-by={shard_by}"));
    replicas.spawn("a", None);
    replicas.spawn("b", None);
    replicas.spawn("c", Some(&through_proxy));
    wait_for_members(&replicas, &["a", "b", "c"], "a,b,c", 0).await;
    common::eventually("every object reconciled once", SETTLE, || {
        let keys: BTreeSet<String> = replicas
            .lines()
            .into_iter()
            .filter(|l| l.event == "reconcile-start")
            .map(|l| l.detail.split(' ').next().unwrap_or_default().to_owned())
            .collect();
        keys.len() == OBJECTS
    })
    .await;
    for identity in ["a", "b", "c"] {
        let share = replicas.reconciles_of(identity, 0);
        assert!(
            share > OBJECTS / 6,
            "{identity} reconciled {share} of {OBJECTS}"
        );
    }

    let churn = Churn::start(api.clone());
    tokio::time::sleep(RETRY * 4).await;

    // A fourth member joins: a quarter of the keys move to it, each only once its
    // old owner has let go of it.
    let joined_at = now_micros();
    replicas.spawn("d", None);
    wait_for_members(&replicas, &["a", "b", "c", "d"], "a,b,c,d", joined_at).await;
    common::eventually("d to reconcile", SETTLE, || {
        replicas.reconciles_of("d", joined_at) > 0
    })
    .await;
    tokio::time::sleep(RETRY * 4).await;

    // SIGKILL: b's keys are taken over once its lease expired.
    let killed_at = replicas.kill("b");
    let fenced_at = wait_for_members(&replicas, &["a", "c", "d"], "a,c,d", killed_at).await;
    let took = Duration::from_micros((fenced_at - killed_at) as u64);
    assert!(
        took <= takeover_bound(),
        "b's keys were taken over {took:?} after the kill; the timings allow {:?}\n{}",
        takeover_bound(),
        replicas.describe()
    );
    tokio::time::sleep(RETRY * 4).await;

    // c is cut off (its requests hang): it stops by its renew deadline, the others
    // fence it a lease duration after its last renewal they saw.
    let cut_at = now_micros();
    proxy.silence();
    wait_for_members(&replicas, &["a", "d"], "a,d", cut_at).await;
    let late = replicas
        .lines()
        .into_iter()
        .filter(|l| {
            l.identity == "c"
                && l.event == "reconcile-start"
                && l.at > cut_at + micros(RENEW + SLACK)
        })
        .count();
    assert_eq!(
        late,
        0,
        "c reconciled after its renew deadline\n{}",
        replicas.describe()
    );
    tokio::time::sleep(RETRY * 4).await;

    // Back in touch, c finds its Lease fenced and joins again as a new member (its
    // own reading of the members never changed: it could not read while cut off).
    let healed_at = now_micros();
    proxy.heal();
    proxy.disconnect().await;
    proxy.reconnect().await.unwrap();
    wait_for_members(&replicas, &["a", "d"], "a,c,d", healed_at).await;
    common::eventually("c to reconcile again", SETTLE, || {
        replicas.reconciles_of("c", healed_at) > 0
    })
    .await;

    // Every object's last state is reconciled by somebody.
    let written = churn.stop().await;
    assert!(
        written.len() > 100,
        "the churn touched {} objects",
        written.len()
    );
    let expected: Vec<String> = (0..OBJECTS)
        .map(|i| {
            let name = format!("obj-{i}");
            let value = written.get(&name).cloned().unwrap_or_else(|| i.to_string());
            format!("{name} {value}")
        })
        .collect();
    common::eventually("every object's last state reconciled", SETTLE, || {
        let seen = reconciled_values(&replicas);
        expected.iter().all(|state| seen.contains(state))
    })
    .await;

    replicas.assert_no_key_reconciled_twice_at_once();
    // The test is only as sharp as its hand-offs are tight: some key must have been
    // started by its new owner soon after its old owner's reconcile ended.
    let gaps = replicas.handoff_gaps();
    let tightest = gaps.iter().min().copied().unwrap_or(i128::MAX);
    assert!(
        tightest < micros(Duration::from_secs(2)) as i128,
        "{} hand-offs, the tightest {tightest} µs apart",
        gaps.len()
    );
}

/// The member lists a handle showed, in order.
type MemberHistory = Arc<Mutex<Vec<Vec<String>>>>;

/// Every member list `handle` shows from now on, the empty one before the first read
/// included, until the returned task is aborted.
fn member_history(mut handle: ShardHandle) -> (MemberHistory, tokio::task::JoinHandle<()>) {
    let history = Arc::new(Mutex::new(vec![handle.members()]));
    let recorder = Arc::clone(&history);
    let task = tokio::spawn(async move {
        while handle.changed().await {
            let members = handle.members();
            let mut history = recorder.lock().unwrap();
            if history.last() != Some(&members) {
                history.push(members);
            }
        }
    });
    (history, task)
}

/// Two members in this process, started together: each finds the other at its first
/// read (neither owns every key for a moment), their Leases (label, published view),
/// how they split the keys, and a clean shutdown handing the keys over at once.
#[tokio::test]
async fn members_publish_their_view_split_the_keys_and_leave_cleanly() {
    let env = TestEnv::shared().await.unwrap();
    let namespace = env.create_namespace("members").await.unwrap();
    // The default retry period, and b starting a fifth of it after a: members started
    // together, as a rollout starts them, whose Leases are created moments apart.
    let (lease_duration, renew_deadline, retry) = (
        Duration::from_secs(8),
        Duration::from_secs(6),
        Duration::from_secs(2),
    );
    let config = |identity: &str| {
        ShardConfig::new(namespace.clone(), "pair")
            .identity(identity)
            .lease_duration(lease_duration)
            .renew_deadline(renew_deadline)
            .retry_period(retry)
    };
    let a = ShardMember::new(env.client().unwrap(), config("a")).unwrap();
    let b = ShardMember::new(env.client().unwrap(), config("b")).unwrap();
    let (a_handle, b_handle) = (a.handle(), b.handle());
    let (a_history, a_recorder) = member_history(a.handle());
    let (b_history, b_recorder) = member_history(b.handle());
    let (stop_a, a_stopped) = tokio::sync::oneshot::channel::<()>();
    let a_run = tokio::spawn(a.run(async {
        a_stopped.await.ok();
    }));
    let b_run = tokio::spawn(async move {
        tokio::time::sleep(retry / 5).await;
        b.run(std::future::pending()).await
    });

    let keys: Vec<ObjectKey> = (0..600)
        .map(|i| ObjectKey::new(Some("default".into()), format!("k{i}")))
        .collect();
    common::eventually("both members to settle", SETTLE, || {
        a_handle.members() == ["a", "b"]
            && b_handle.members() == ["a", "b"]
            && keys
                .iter()
                .all(|key| a_handle.may_reconcile(key) != b_handle.may_reconcile(key))
    })
    .await;
    a_recorder.abort();
    b_recorder.abort();
    // Joining members wait a retry period after creating their Leases before reading
    // the group, so that members started together do not each take every key first.
    for history in [&a_history, &b_history] {
        let history = history.lock().unwrap().clone();
        assert_eq!(history, [vec![], vec!["a", "b"]], "members seen over time");
    }
    let mine = keys
        .iter()
        .filter(|key| a_handle.may_reconcile(key))
        .count();
    assert!((200..400).contains(&mine), "a has {mine} of 600");
    for key in &keys {
        assert_eq!(a_handle.in_shard(key), a_handle.may_reconcile(key));
    }

    let leases = Api::<Lease>::namespaced(env.client().unwrap(), &namespace);
    let listed = leases
        .list(&ListParams::default().labels(&format!("{GROUP_LABEL}=pair")))
        .await
        .unwrap();
    let mut names: Vec<String> = listed
        .items
        .iter()
        .map(|l| l.metadata.name.clone().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["pair-a", "pair-b"]);
    for lease in &listed.items {
        let annotations = lease.metadata.annotations.clone().unwrap();
        assert_eq!(annotations[VIEW_ANNOTATION], "a,b");
        let spec = lease.spec.clone().unwrap();
        assert_eq!(
            spec.lease_duration_seconds,
            Some(lease_duration.as_secs() as i32)
        );
    }

    // a leaves: its Lease is deleted, and b takes every key at its next read.
    let left_at = tokio::time::Instant::now();
    stop_a.send(()).unwrap();
    tokio::time::timeout(renew_deadline, a_run)
        .await
        .unwrap()
        .unwrap();
    assert!(a_handle.is_stopped());
    assert!(keys.iter().all(|key| !a_handle.may_reconcile(key)));
    assert!(leases.get_opt("pair-a").await.unwrap().is_none());
    common::eventually("b to take every key", retry * 3 + SLACK, || {
        keys.iter().all(|key| b_handle.may_reconcile(key))
    })
    .await;
    assert!(
        left_at.elapsed() < lease_duration,
        "handed over without waiting for the lease"
    );
    assert_eq!(b_handle.members(), ["b"]);
    b_run.abort();
}

/// A reconcile that never ends holds its key only until the hand-off timeout: when a
/// second member joins, the first drops the reconciles of the keys that moved, and
/// the newcomer starts each of them only after it was dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_reconcile_is_dropped_at_the_handoff_timeout_before_the_new_owner_starts() {
    use informer::controller::Action;
    use informer::controller::{Context, Controller, backoff};
    use informer::factory::{FactoryConfig, SharedInformerFactory};
    use kube::ResourceExt;
    use tokio::sync::mpsc;
    use tokio::time::Instant;

    const KEYS: usize = 20;
    let handoff = Duration::from_secs(2);
    let env = TestEnv::shared().await.unwrap();
    let namespace = env.create_namespace("stuck").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &namespace);
    common::create_config_maps(&api, "stuck", KEYS, &[]).await;

    /// What happened to a reconcile: who, which key, started or dropped, when.
    type Event = (&'static str, String, &'static str, Instant);
    struct Dropped(Option<(&'static str, String, mpsc::UnboundedSender<Event>)>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            if let Some((who, key, events)) = self.0.take() {
                let _ = events.send((who, key, "dropped", Instant::now()));
            }
        }
    }
    let (events, mut received) = mpsc::unbounded_channel::<Event>();
    let start = |identity: &'static str, stuck: bool| {
        let member = ShardMember::new(
            env.client().unwrap(),
            ShardConfig::new(namespace.clone(), "stuck")
                .identity(identity)
                .lease_duration(LEASE)
                .renew_deadline(RENEW)
                .retry_period(RETRY)
                .handoff_timeout(handoff),
        )
        .unwrap();
        let shard = member.handle();
        let factory = SharedInformerFactory::new(
            env.client().unwrap(),
            FactoryConfig::default().namespace(namespace.clone()),
        );
        let events = events.clone();
        let reconcile = move |cm: Arc<ConfigMap>, _: Context<ConfigMap>| {
            let events = events.clone();
            async move {
                let key = cm.name_any();
                events
                    .send((identity, key.clone(), "started", Instant::now()))
                    .unwrap();
                if stuck {
                    let _guard = Dropped(Some((identity, key, events)));
                    std::future::pending::<()>().await;
                }
                Ok::<_, std::convert::Infallible>(Action::Done)
            }
        };
        let controller = Controller::<ConfigMap>::sharded(&factory, &shard)
            .workers(KEYS)
            .run(reconcile, backoff, std::future::pending());
        (
            shard,
            tokio::spawn(member.run(std::future::pending())),
            tokio::spawn(controller),
            factory,
        )
    };

    // a alone: every key's reconcile starts and never ends.
    let (a_shard, a_member, a_controller, a_factory) = start("a", true);
    let mut started_on_a = BTreeSet::new();
    while started_on_a.len() < KEYS {
        let (who, key, what, _) = tokio::time::timeout(SETTLE, received.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!((who, what), ("a", "started"));
        started_on_a.insert(key);
    }

    // b joins: the keys that move to it are dropped on a after the hand-off timeout,
    // then started on b.
    let joined = Instant::now();
    let (b_shard, b_member, b_controller, b_factory) = start("b", false);
    let mut dropped_on_a: HashMap<String, Instant> = HashMap::new();
    let mut started_on_b: HashMap<String, Instant> = HashMap::new();
    common::eventually_async("the hand-off to settle", SETTLE, || {
        while let Ok((who, key, what, at)) = received.try_recv() {
            match (who, what) {
                ("a", "dropped") => assert!(dropped_on_a.insert(key, at).is_none()),
                ("b", "started") => {
                    started_on_b.entry(key).or_insert(at);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        let settled = b_shard.members() == ["a", "b"]
            && !started_on_b.is_empty()
            && started_on_b.len() == dropped_on_a.len();
        async move { settled }
    })
    .await;
    for (key, started) in &started_on_b {
        let dropped = dropped_on_a[key];
        assert!(
            dropped >= joined + handoff,
            "{key} dropped before the hand-off timeout"
        );
        assert!(*started >= dropped, "b started {key} before a dropped it");
        assert!(b_shard.in_shard(&ObjectKey::new(Some(namespace.clone()), key.clone())));
        assert!(!a_shard.in_shard(&ObjectKey::new(Some(namespace.clone()), key.clone())));
    }
    // Each replica's cache of ConfigMaps holds its shard only.
    for (identity, shard, factory) in [("a", &a_shard, &a_factory), ("b", &b_shard, &b_factory)] {
        let selection = Selection::default()
            .namespace(namespace.clone())
            .filtered(format!("shard stuck/{identity}"), Arc::new(shard.clone()));
        let informer = factory.informer_for::<ConfigMap>(selection);
        let cache = informer.indexer();
        common::eventually(
            &format!("{identity}'s cache to hold its shard"),
            SETTLE,
            || {
                let mut cached: Vec<String> =
                    cache.list_keys().iter().map(|k| k.name.clone()).collect();
                cached.sort();
                let mut owned: Vec<String> = (0..KEYS)
                    .map(|i| format!("stuck-{i}"))
                    .filter(|name| {
                        shard.in_shard(&ObjectKey::new(Some(namespace.clone()), name.clone()))
                    })
                    .collect();
                owned.sort();
                !owned.is_empty() && cached == owned
            },
        )
        .await;
        // The controller started its informers after the member's first read, so
        // each list kept a known shard: a listed alone, then again when b joined; b
        // listed once, skipping exactly a's keys.
        let stats = informer.reflector_stats().unwrap();
        let expected_lists = if identity == "a" { 2 } else { 1 };
        assert_eq!(stats.lists, expected_lists, "{identity}'s lists");
        if identity == "b" {
            assert_eq!(stats.filtered_out as usize, KEYS - cache.list_keys().len());
        }
    }
    // a counted each reconcile it dropped once.
    assert_eq!(
        a_shard.stats().dropped_reconciles as usize,
        dropped_on_a.len()
    );

    // a crashes (its member task ends without deleting its Lease): b fences it once
    // the lease has expired as b times it, and takes every key.
    a_member.abort();
    a_controller.abort();
    common::eventually("b to fence a", takeover_bound(), || {
        b_shard.members() == ["b"]
    })
    .await;
    let b_stats = b_shard.stats();
    assert_eq!(b_stats.members, 1);
    assert!(b_stats.active);
    assert_eq!(b_stats.fenced_members, 1, "{b_stats:?}");
    assert_eq!(b_stats.rejoins, 0, "{b_stats:?}");
    assert_eq!(b_stats.dropped_reconciles, 0, "{b_stats:?}");
    // Its first read (a and b), then b alone.
    assert_eq!(b_stats.membership_changes, 2, "{b_stats:?}");
    b_member.abort();
    b_controller.abort();
}

/// A deletion seen while the member may not reconcile (cut off from the API server,
/// its lease lapsed) is not cleaned up then, and is once the member is back: the
/// due cleanup is queued with the keys that become its own again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deletion_seen_while_the_lease_lapsed_is_cleaned_up_once_the_member_is_back() {
    use informer::controller::Action;
    use informer::controller::{Context, Controller, backoff};
    use informer::factory::{FactoryConfig, SharedInformerFactory};
    use kube::ResourceExt;
    use kube::api::DeleteParams;

    let env = TestEnv::shared().await.unwrap();
    let namespace = env.create_namespace("lapse").await.unwrap();
    let api = Api::<ConfigMap>::namespaced(env.client().unwrap(), &namespace);
    common::create_config_maps(&api, "lapse", 3, &[]).await;
    // Only the member talks through the proxy: the informer keeps watching.
    let proxy = env.fault_proxy().await.unwrap();
    let member = ShardMember::new(
        proxy.client().unwrap(),
        ShardConfig::new(namespace.clone(), "lapse")
            .identity("only")
            .lease_duration(LEASE)
            .renew_deadline(RENEW)
            .retry_period(RETRY),
    )
    .unwrap();
    let shard = member.handle();
    let membership = tokio::spawn(member.run(std::future::pending()));
    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryConfig::default().namespace(namespace.clone()),
    );
    let reconciled: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let cleaned: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let controller = Controller::<ConfigMap>::sharded(&factory, &shard)
        .cleanup({
            let cleaned = Arc::clone(&cleaned);
            move |cm: Arc<ConfigMap>, _: Context<ConfigMap>| {
                cleaned.lock().unwrap().insert(cm.name_any());
                async { Ok::<_, std::convert::Infallible>(()) }
            }
        })
        .run(
            {
                let reconciled = Arc::clone(&reconciled);
                move |cm: Arc<ConfigMap>, _: Context<ConfigMap>| {
                    reconciled.lock().unwrap().insert(cm.name_any());
                    async { Ok::<_, std::convert::Infallible>(Action::Done) }
                }
            },
            backoff,
            std::future::pending(),
        );
    let controller = tokio::spawn(controller);
    common::eventually("every ConfigMap reconciled", SETTLE, || {
        reconciled.lock().unwrap().len() == 3
    })
    .await;

    // Cut off, the member stops renewing; alone in its group, nobody fences it.
    proxy.disconnect().await;
    common::eventually("the member's lease to lapse", RENEW + SLACK, || {
        !shard.is_active()
    })
    .await;
    api.delete("lapse-0", &DeleteParams::default())
        .await
        .unwrap();
    let selection = Selection::default()
        .namespace(namespace.clone())
        .filtered("shard lapse/only", Arc::new(shard.clone()));
    let cache = factory.informer_for::<ConfigMap>(selection).indexer();
    common::eventually("the deletion to reach the cache", SETTLE, || {
        cache.len() == 2
    })
    .await;
    // The worker takes the key at once, and drops it: the member may not reconcile.
    tokio::time::sleep(SLACK).await;
    assert!(
        cleaned.lock().unwrap().is_empty(),
        "no cleanup while lapsed"
    );

    proxy.reconnect().await.unwrap();
    common::eventually(
        "the cleanup once the member is back",
        LEASE + SLACK * 5,
        || shard.is_active() && cleaned.lock().unwrap().contains("lapse-0"),
    )
    .await;
    assert_eq!(
        *cleaned.lock().unwrap(),
        BTreeSet::from(["lapse-0".to_owned()])
    );
    membership.abort();
    controller.abort();
}

/// A sharded controller's owned cache holds the children of its own primaries only:
/// ConfigMaps each get a child Secret, controlled by them; each member's Secret cache
/// holds the children of its shard (never a Secret without such a controller), shrinks
/// when a member joins, and a child's deletion still reaches its parent's owner, who
/// re-creates it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owned_cache_holds_only_the_children_of_the_members_primaries() {
    use informer::controller::Action;
    use informer::controller::{Context, Controller, backoff};
    use informer::factory::{FactoryConfig, SharedInformerFactory};
    use k8s_openapi::api::core::v1::Secret;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
    use kube::ResourceExt;
    use kube::api::{DeleteParams, PostParams};

    const PARENTS: usize = 12;
    let env = TestEnv::shared().await.unwrap();
    let namespace = env.create_namespace("owned").await.unwrap();
    let parents = Api::<ConfigMap>::namespaced(env.client().unwrap(), &namespace);
    let secrets = Api::<Secret>::namespaced(env.client().unwrap(), &namespace);
    common::create_config_maps(&parents, "parent", PARENTS, &[]).await;
    // A Secret no ConfigMap controls: no member caches it.
    let stranger = Secret {
        metadata: ObjectMeta {
            name: Some("stranger".into()),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    };
    secrets
        .create(&PostParams::default(), &stranger)
        .await
        .unwrap();

    // Each reconcile makes sure its ConfigMap has a child; counts the children made.
    let created: Arc<Mutex<Vec<String>>> = Arc::default();
    let start = |identity: &'static str| {
        let member = ShardMember::new(
            env.client().unwrap(),
            ShardConfig::new(namespace.clone(), "owned")
                .identity(identity)
                .lease_duration(LEASE)
                .renew_deadline(RENEW)
                .retry_period(RETRY),
        )
        .unwrap();
        let shard = member.handle();
        let factory = SharedInformerFactory::new(
            env.client().unwrap(),
            FactoryConfig::default().namespace(namespace.clone()),
        );
        let created = Arc::clone(&created);
        let reconcile = move |cm: Arc<ConfigMap>, ctx: Context<ConfigMap>| {
            let created = Arc::clone(&created);
            async move {
                if !ctx.owned::<Secret>(&cm).is_empty() {
                    return Ok(Action::Done);
                }
                let child = Secret {
                    metadata: ObjectMeta {
                        name: Some(format!("child-of-{}", cm.name_any())),
                        owner_references: Some(vec![OwnerReference {
                            api_version: "v1".into(),
                            kind: "ConfigMap".into(),
                            name: cm.name_any(),
                            uid: cm.uid().unwrap(),
                            controller: Some(true),
                            ..OwnerReference::default()
                        }]),
                        ..ObjectMeta::default()
                    },
                    ..Secret::default()
                };
                ctx.api::<Secret>()
                    .create(&PostParams::default(), &child)
                    .await?;
                created.lock().unwrap().push(child.name_any());
                Ok::<_, kube::Error>(Action::Done)
            }
        };
        let controller = Controller::<ConfigMap>::sharded(&factory, &shard)
            .owns::<Secret>()
            .run(reconcile, backoff, std::future::pending());
        (
            shard,
            tokio::spawn(member.run(std::future::pending())),
            tokio::spawn(controller),
            factory,
        )
    };
    // The member's cache of Secrets: the factory entry its controller made when it
    // started running (its primary's entry and this one), and filled.
    let owned_cache = async |factory: &SharedInformerFactory, identity: &str| {
        common::eventually("the controller to make its informers", SETTLE, || {
            factory.len() == 2
        })
        .await;
        let selection = Selection::default().namespace(namespace.clone()).filtered(
            format!("controlled by ConfigMap of shard owned/{identity}"),
            Arc::new(informer::reflector::FnKeyFilter::new(|_, _| {
                unreachable!("the controller made this selection's informer, with its own filter")
            })),
        );
        factory.informer_for::<Secret>(selection)
    };
    let children_of = |shard: &ShardHandle| {
        let mut children: Vec<String> = (0..PARENTS)
            .map(|i| format!("parent-{i}"))
            .filter(|parent| {
                shard.in_shard(&ObjectKey::new(Some(namespace.clone()), parent.clone()))
            })
            .map(|parent| format!("child-of-{parent}"))
            .collect();
        children.sort();
        children
    };
    let cached = |informer: &informer::shared_informer::SharedIndexInformer<Secret>| {
        let mut names: Vec<String> = informer
            .indexer()
            .list_keys()
            .iter()
            .map(|key| key.name.clone())
            .collect();
        names.sort();
        names
    };

    // a alone: it creates every child, and caches them all, but not the stranger.
    let (a_shard, a_member, a_controller, a_factory) = start("a");
    let a_owned = owned_cache(&a_factory, "a").await;
    common::eventually("a to create and cache every child", SETTLE, || {
        created.lock().unwrap().len() == PARENTS && cached(&a_owned).len() == PARENTS
    })
    .await;
    assert_eq!(cached(&a_owned), children_of(&a_shard));

    // b joins: each member's cache holds the children of its own shard.
    let (b_shard, b_member, b_controller, b_factory) = start("b");
    let b_owned = owned_cache(&b_factory, "b").await;
    for (identity, shard, owned) in [("a", &a_shard, &a_owned), ("b", &b_shard, &b_owned)] {
        // Polled by hand, so that a timeout says what each side held.
        let deadline = tokio::time::Instant::now() + SETTLE;
        loop {
            let children = children_of(shard);
            let members = shard.members();
            let held = cached(owned);
            if members == ["a", "b"]
                && !children.is_empty()
                && children.len() < PARENTS
                && held == children
            {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{identity}'s owned cache did not follow its shard in {SETTLE:?}: members \
                 {members:?}, its children {children:?}, cached {held:?}, reflector {:?}",
                owned.reflector_stats()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(owned.reflector_stats().unwrap().filtered_out > 0);
    }
    assert_eq!(
        created.lock().unwrap().len(),
        PARENTS,
        "no child made twice"
    );

    // A child of one of b's ConfigMaps is deleted: b hears of it through its owned
    // cache and makes it again.
    let child = children_of(&b_shard)[0].clone();
    let uid = secrets.get(&child).await.unwrap().uid();
    secrets
        .delete(&child, &DeleteParams::default())
        .await
        .unwrap();
    common::eventually_async("b to re-create the deleted child", SETTLE, || {
        let secrets = secrets.clone();
        let child = child.clone();
        let uid = uid.clone();
        async move {
            matches!(secrets.get_opt(&child).await, Ok(Some(again)) if again.uid() != uid)
        }
    })
    .await;
    assert_eq!(created.lock().unwrap().len(), PARENTS + 1);
    assert!(!cached(&a_owned).contains(&child));
    a_member.abort();
    b_member.abort();
    a_controller.abort();
    b_controller.abort();
}

/// A pause longer than the lease: the others fence the member while its clocks run on.
const LONG_PAUSE: Duration = Duration::from_secs(6);

/// A pause past the renew deadline but shorter than the lease, even counted from a
/// renewal a retry period before it: nobody may fence the member.
const SHORT_PAUSE: Duration = Duration::from_millis(3050);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_member_sends_no_write_once_its_keys_may_be_anothers() {
    let env = TestEnv::shared().await.unwrap();
    let namespace = env.create_namespace("paused-member").await.unwrap();
    let client = env.client().unwrap();
    // From before the first Lease write, so that every membership is seen.
    let history = ServerHistory::record(&client, &namespace).await;
    common::create_config_maps(&Api::namespaced(client, &namespace), "work", 30, &[]).await;
    // Eight reconciles in flight per member, each waiting 300 ms between its read and
    // its write (the ConfigMap it patches); the write changes the object, which
    // queues it again, so every key is nearly always being reconciled.
    let mut replicas = Replicas::sharded(
        &namespace,
        env.kubeconfig_path(),
        8,
        Duration::from_millis(300),
        Duration::from_secs(2),
    )
    .with_arg("write=1")
    .with_arg("events=1");
    let members = ["a", "b", "c"];
    for identity in members {
        replicas.spawn(identity, None);
    }
    wait_for_members(&replicas, &members, "a,b,c", 0).await;
    for identity in members {
        common::eventually(&format!("writes by {identity}"), SETTLE, || {
            history.writes_by(identity) >= 10
        })
        .await;
    }

    // Two members in turn freeze with writes in flight; the others fence them and
    // take their keys; they resume, find themselves fenced and join again.
    let mut takeovers = Vec::new();
    for (paused, others) in [("a", ["b", "c"]), ("b", ["a", "c"])] {
        let paused_at = replicas.pause(paused);
        let fenced_at = wait_for_members(&replicas, &others, &others.join(","), paused_at).await;
        takeovers.push(Duration::from_micros((fenced_at - paused_at) as u64));
        let resume_at = paused_at + micros(LONG_PAUSE);
        tokio::time::sleep(Duration::from_micros(
            resume_at.saturating_sub(now_micros()) as u64,
        ))
        .await;
        let resumed_at = replicas.resume(paused);
        // (The resumed one never saw itself gone: it says nothing new.)
        wait_for_members(&replicas, &others, "a,b,c", resumed_at).await;
        let before = history.writes_by(paused);
        common::eventually(&format!("{paused} to write again"), SETTLE, || {
            history.writes_by(paused) >= before + 10
        })
        .await;
    }

    // A pause past the renew deadline but within the lease: nobody fences c.
    let paused_at = replicas.pause("c");
    tokio::time::sleep(SHORT_PAUSE).await;
    let resumed_at = replicas.resume("c");
    let before = history.writes_by("c");
    common::eventually("c to write again", SETTLE, || {
        history.writes_by("c") >= before + 10
    })
    .await;
    assert_eq!(
        replicas
            .find(paused_at, |l| l.event == "members" && l.detail != "a,b,c")
            .map(|l| format!("{} {}", l.identity, l.detail)),
        None,
        "nobody fences a member whose lease has not expired; {}",
        replicas.describe()
    );
    let _ = resumed_at;

    let stopping = replicas.stop_all(&members).await;
    // Decided from the server: no member's write landed while it had no Lease, nor
    // on a key another member wrote since its last write of it unless it had joined
    // again in between.
    let outside = history.writes_outside_the_writers_membership("replicas");
    assert!(
        outside.is_empty(),
        "writes that landed when the key may have been another's: {outside:?}; {}",
        replicas.describe()
    );
    // The fault happened: each member frozen past its lease resumed with reconciles
    // in hand, and dropped them or had their writes refused.
    for paused in ["a", "b"] {
        replicas.assert_fenced_after_pause(stopping, paused);
    }
    let stats = replicas.exit_stats(stopping);
    let refused = replicas.count("refused");
    eprintln!(
        "paused members: 2 x {LONG_PAUSE:?} (fenced after {takeovers:?}) and 1 x {SHORT_PAUSE:?}; \
         writes refused before sending: {refused}; dropped/refused per member: {stats:?}; \
         writes that landed when the key may have been another's: {}",
        outside.len()
    );
    assert!(
        takeovers.iter().all(|took| *took <= takeover_bound()),
        "fenced after {takeovers:?}, bound {:?}",
        takeover_bound()
    );
}

/// A context a task kept after its reconcile returned (a task the user spawned)
/// writes only while the membership it was made in lasts: not once its member was
/// fenced and joined again (the keys may have been another's meanwhile), not after
/// the member stepped down and deleted its Lease. Decided from the server's order of
/// events; the member processes linger after stepping down, their kept contexts
/// still trying.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_kept_past_its_membership_writes_nothing_more() {
    let env = TestEnv::shared().await.unwrap();
    let namespace = env.create_namespace("kept-context").await.unwrap();
    let client = env.client().unwrap();
    let history = ServerHistory::record(&client, &namespace).await;
    common::create_config_maps(&Api::namespaced(client, &namespace), "work", 12, &[]).await;
    // Each member reconciles and writes; the first reconcile of each key also
    // leaves a task writing through its context every 500 ms for a minute.
    let mut replicas = Replicas::sharded(
        &namespace,
        env.kubeconfig_path(),
        2,
        Duration::from_millis(300),
        Duration::from_secs(2),
    )
    .with_arg("write=1")
    .with_arg("leak=1")
    .with_arg("leak-ms=60000")
    .with_arg("linger-ms=4000");
    let members = ["a", "b"];
    for identity in members {
        replicas.spawn(identity, None);
    }
    wait_for_members(&replicas, &members, "a,b", 0).await;
    for identity in members {
        common::eventually(&format!("writes by {identity}"), SETTLE, || {
            history.writes_by(identity) >= 10
        })
        .await;
    }

    // a freezes past its lease: b fences it and takes every key; a resumes, finds
    // itself fenced and joins again, its old contexts still trying.
    let paused_at = replicas.pause("a");
    wait_for_members(&replicas, &["b"], "b", paused_at).await;
    let resume_at = paused_at + micros(LONG_PAUSE);
    tokio::time::sleep(Duration::from_micros(
        resume_at.saturating_sub(now_micros()) as u64,
    ))
    .await;
    let resumed_at = replicas.resume("a");
    wait_for_members(&replicas, &["b"], "a,b", resumed_at).await;
    let before = history.writes_by("a");
    common::eventually("a to write again", SETTLE, || {
        history.writes_by("a") >= before + 10
    })
    .await;
    // Give the old contexts time to try on keys b works now.
    tokio::time::sleep(Duration::from_secs(3)).await;

    // b steps down and lingers four seconds, its contexts still trying.
    let stepped_at = replicas.terminate("b");
    let status = replicas.wait_exit("b", Duration::from_secs(30)).await;
    assert!(status.success(), "b exited with {status}");
    let stopping = replicas.stop_all(&["a"]).await;

    let outside = history.writes_outside_the_writers_membership("replicas");
    assert!(
        outside.is_empty(),
        "writes through kept contexts that landed when the key may have been another's: {outside:?}; {}",
        replicas.describe()
    );
    // The fault happened: the kept contexts tried, and were refused before sending.
    let refused_a = replicas.exit_count(paused_at, "a", "refused");
    let refused_b = replicas.exit_count(stepped_at, "b", "refused");
    assert!(
        refused_a > 0,
        "a's contexts of its first membership never tried to write after it was fenced; {}",
        replicas.describe()
    );
    assert!(
        refused_b > 0,
        "b's contexts never tried to write after it stepped down; {}",
        replicas.describe()
    );
    eprintln!(
        "writes refused through kept contexts: a (fenced, joined again) {refused_a}, \
         b (stepped down, lingered 4 s) {refused_b}; landed outside the membership: {}; \
         stats: {:?}",
        outside.len(),
        replicas.exit_stats(stopping.min(stepped_at))
    );
}
