//! The compatibility subset on the oldest release our k8s-openapi supports, Kubernetes
//! 1.33 (kube-apiserver 1.33.13 on etcd 3.5.24, kube-controller-manager 1.33.13): list
//! and watch, the relist after 410 Gone, the fallback from streaming lists (1.33's
//! `WatchList` gate is off by default, so it refuses them), leader election on its
//! Leases, and a controller whose owned objects the garbage collector removes. Every
//! other integration test runs on 1.37, the default.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{eventually_async, spawn_until_stopped as spawn};
use informer::controller::Action;
use informer::controller::{Context, Controller, backoff};
use informer::factory::{FactoryConfig, SharedInformerFactory};
use informer::leader::{LeaderElectionConfig, LeaderElector, Leadership};
use informer::testenv::{Kubernetes, TestEnv};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use tokio::sync::OnceCell;

const WAIT: Duration = Duration::from_secs(30);

/// The shared 1.33 control plane, with its controller manager (garbage collector and
/// namespace controller).
async fn oldest() -> &'static TestEnv {
    static ENV: OnceCell<TestEnv> = OnceCell::const_new();
    ENV.get_or_init(|| async {
        TestEnv::builder()
            .kubernetes(Kubernetes::V1_33)
            .controller_manager(true)
            .start()
            .await
            .unwrap()
    })
    .await
}

#[tokio::test]
async fn the_control_plane_is_the_oldest_supported_release() {
    let env = oldest().await;
    assert_eq!(env.kubernetes(), Kubernetes::V1_33);
    let version = env.client().unwrap().apiserver_version().await.unwrap();
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", "33")
    );
    assert_eq!(version.git_version, "v1.33.13");
}

/// 1.33 refuses streaming lists: the informer lists, watches, relists after a 410 by a
/// plain list and never asks again (the body 1.37 runs with its gate off, in
/// `reflector.rs`), on a 1.33 control plane without the watch cache.
#[tokio::test]
async fn an_informer_lists_watches_and_relists_after_410_without_streaming_lists() {
    let env = TestEnv::builder()
        .kubernetes(Kubernetes::V1_33)
        .watch_cache(false)
        .start()
        .await
        .unwrap();
    common::refused_streaming_lists_are_listed_and_watched(&env).await;
}

/// Leader election on 1.33's Leases: two electors in this process elect one leader, the other follows it, and a shutdown releases the lease so the
/// follower leads at its next look, with the client-go record
/// (holderIdentity, leaseTransitions) in the Lease.
#[tokio::test]
async fn two_electors_elect_one_leader_and_hand_over_on_shutdown() {
    let env = oldest().await;
    let ns = env.create_namespace("oldest-leader").await.unwrap();
    let (lease, renew, retry) = (
        Duration::from_secs(4),
        Duration::from_secs(3),
        Duration::from_millis(500),
    );
    let config = |identity: &str| {
        LeaderElectionConfig::default()
            .lease(ns.clone(), "record")
            .identity(identity)
            .lease_duration(lease)
            .renew_deadline(renew)
            .retry_period(retry)
    };
    let leases = Api::<Lease>::namespaced(env.client().unwrap(), &ns);
    let first = LeaderElector::new(env.client().unwrap(), config("first")).unwrap();
    let first_handle = first.handle();
    let (stop_first, first_stopped) = tokio::sync::oneshot::channel::<()>();
    let first_run = tokio::spawn(first.run(async {
        first_stopped.await.ok();
    }));
    let term = tokio::time::timeout(WAIT, first_handle.leading())
        .await
        .unwrap()
        .expect("first leads");
    assert!(term.is_leading());

    let second = LeaderElector::new(env.client().unwrap(), config("second")).unwrap();
    let mut second_handle = second.handle();
    let second_run = tokio::spawn(second.run(std::future::pending()));
    assert_eq!(
        tokio::time::timeout(WAIT, second_handle.changed())
            .await
            .unwrap(),
        Some(Leadership::Following {
            leader: Some("first".into())
        })
    );
    let record = leases.get("record").await.unwrap();
    let spec = record.spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("first"));
    assert_eq!(spec.lease_transitions, Some(0));
    assert_eq!(spec.lease_duration_seconds, Some(4));
    assert!(spec.renew_time.is_some());

    // Shutting down ends the term at once and releases the lease once it is dropped.
    let stopped_at = tokio::time::Instant::now();
    stop_first.send(()).unwrap();
    tokio::time::timeout(renew, term.lost()).await.unwrap();
    drop(term);
    tokio::time::timeout(renew, first_run)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first_handle.leadership(), Leadership::Stopped);
    let second_term = tokio::time::timeout(lease, second_handle.leading())
        .await
        .unwrap()
        .expect("second leads after the release");
    assert!(
        stopped_at.elapsed() < lease,
        "handed over without waiting for the lease to expire"
    );
    let spec = leases.get("record").await.unwrap().spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("second"));
    assert_eq!(spec.lease_transitions, Some(1));
    drop(second_term);
    second_run.abort();
}

/// Keeps a Secret `{name}-copy` owned by each ConfigMap labelled `app=source`.
async fn copy_source(
    source: Arc<ConfigMap>,
    ctx: Context<ConfigMap>,
) -> Result<Action, kube::Error> {
    if source.labels().get("app").map(String::as_str) != Some("source") {
        return Ok(Action::Done);
    }
    if !ctx.owned::<Secret>(&source).is_empty() {
        return Ok(Action::Done);
    }
    let name = format!("{}-copy", source.name_any());
    let copy = serde_json::json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": { "name": name, "ownerReferences": [source.controller_owner_ref(&())] },
        "stringData": source.data.clone().unwrap_or_default(),
    });
    ctx.api::<Secret>()
        .patch(
            &name,
            &PatchParams::apply("oldest-release").force(),
            &Patch::Apply(&copy),
        )
        .await?;
    Ok(Action::Done)
}

/// A controller owning Secrets on 1.33: it makes the child, makes it again when it is
/// deleted (the owned cache maps the deletion to its owner), and once the owner is
/// deleted, 1.33's garbage collector removes the child, which the controller's cache
/// follows, and nothing makes it again.
#[tokio::test]
async fn the_garbage_collector_removes_a_deleted_owner_s_child_and_the_controller_follows() {
    let env = oldest().await;
    let ns = env.create_namespace("oldest-gc").await.unwrap();
    let client = env.client().unwrap();
    let sources = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    let secrets = Api::<Secret>::namespaced(client.clone(), &ns);
    sources
        .create(
            &PostParams::default(),
            &common::config_map("src", "v1", &[("app", "source")]),
        )
        .await
        .unwrap();
    let factory =
        SharedInformerFactory::new(client, FactoryConfig::default().namespace(ns.clone()));
    let controller = Controller::<ConfigMap>::new(&factory).owns::<Secret>();
    let running = spawn(|stop| controller.run(copy_source, backoff, stop));
    let uid_of_copy = || async {
        secrets
            .get_opt("src-copy")
            .await
            .unwrap()
            .and_then(|s| s.metadata.uid)
    };
    eventually_async("the copy", WAIT, || async { uid_of_copy().await.is_some() }).await;
    let first = uid_of_copy().await.unwrap();

    secrets
        .delete("src-copy", &DeleteParams::default())
        .await
        .unwrap();
    eventually_async("a new copy", WAIT, || async {
        uid_of_copy().await.is_some_and(|uid| uid != first)
    })
    .await;

    sources
        .delete("src", &DeleteParams::background())
        .await
        .unwrap();
    eventually_async("the collector to remove the copy", WAIT, || async {
        uid_of_copy().await.is_none()
    })
    .await;
    let cached = factory.informer::<Secret>();
    common::eventually("the owned cache to follow", WAIT, || {
        cached
            .indexer()
            .list()
            .iter()
            .all(|s| s.name_any() != "src-copy")
    })
    .await;
    // The owner is gone from the primary cache too, so no reconcile can make the copy
    // again.
    let primaries = factory.informer::<ConfigMap>();
    common::eventually("the owner to leave the primary cache", WAIT, || {
        primaries
            .indexer()
            .list()
            .iter()
            .all(|s| s.name_any() != "src")
    })
    .await;
    assert!(uid_of_copy().await.is_none());
    running.stop().await;
    factory.shutdown().await;
}

/// 1.33 has no sharded list and watch: shard members by uid send their selector, the
/// server answers with every Pod (the parameter is ignored, nothing fails), and each
/// member's cache still holds exactly its share, the others' Pods dropped here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_members_by_uid_keep_their_share_of_pods_the_server_does_not_filter() {
    use informer::factory::Selection;
    use informer::key::ObjectKey;
    use informer::shard::{ShardBy, ShardConfig};
    use k8s_openapi::api::core::v1::Pod;
    use std::collections::BTreeSet;

    let env = oldest().await;
    let ns = env.create_namespace("oldest-shards").await.unwrap();
    let client = env.client().unwrap();
    let pods = Api::<Pod>::namespaced(client.clone(), &ns);
    for i in 0..40 {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": { "name": format!("pod-{i}") },
            "spec": { "containers": [{ "name": "app", "image": "registry.k8s.io/pause:3.10" }] },
        }))
        .unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    let listed = pods.list(&Default::default()).await.unwrap().items;
    let members: Vec<common::RunningMember> = ["a", "b"]
        .into_iter()
        .map(|id| {
            let config = ShardConfig::new(ns.clone(), "oldest-pods")
                .identity(id)
                .lease_duration(Duration::from_secs(8))
                .renew_deadline(Duration::from_secs(6))
                .retry_period(Duration::from_millis(500))
                .shard_by(ShardBy::Uid);
            common::RunningMember::join(client.clone(), config)
        })
        .collect();
    common::eventually("a and b to read each other", WAIT, || {
        members.iter().all(|m| m.handle.members() == ["a", "b"])
    })
    .await;
    let mut factories = Vec::new();
    for member in &members {
        let factory =
            SharedInformerFactory::new(client.clone(), FactoryConfig::default().namespace(&ns));
        let scope = Selection::default().filtered(
            format!("shard {}", member.handle.identity()),
            Arc::new(member.handle.clone()),
        );
        let informer = factory.informer_for::<Pod>(scope);
        factory.start();
        let share: BTreeSet<ObjectKey> = listed
            .iter()
            .filter(|pod| member.handle.in_shard_object(pod.meta()))
            .map(ObjectKey::of)
            .collect();
        common::eventually("the member's cache to hold its share", WAIT, || {
            let cached: BTreeSet<ObjectKey> = informer
                .indexer()
                .list()
                .iter()
                .map(|pod| ObjectKey::of(pod.as_ref()))
                .collect();
            cached == share
        })
        .await;
        let stats = informer.reflector_stats().unwrap();
        assert_eq!(
            stats.filtered_out as usize,
            listed.len() - share.len(),
            "every Pod arrived, the others' were dropped: {stats:?}"
        );
        factories.push(factory);
    }
    for factory in factories {
        factory.shutdown().await;
    }
    for member in members {
        member.leave().await;
    }
}
