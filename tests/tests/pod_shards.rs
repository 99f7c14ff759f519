//! Server-side sharded list and watch of a built-in type (KEP-5866, gate
//! `ShardedListAndWatch`, which the 1.37 test control plane turns on): it applies to every
//! resource kube-apiserver's generic registry serves, so shard members of a Pod
//! controller each receive only their share of the Pods. Decided from the server's own
//! answers: each member's share from the server's full list and the member's published
//! ranges, the bytes it received from its own `FaultProxy`.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use informer::factory::{FactoryConfig, Selection, SharedInformerFactory};
use informer::key::ObjectKey;
use informer::shard::{ShardBy, ShardConfig, ShardHandle};
use informer::shared_informer::SharedIndexInformer;
use informer::testenv::{FaultProxy, TestEnv};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use kube::{Resource, ResourceExt};
use tokio::sync::OnceCell;

const WAIT: Duration = Duration::from_secs(60);

/// The Pods of one test: `namespaces` namespaces of `per_namespace` Pods each, labelled
/// `run=<prefix>`; returns their keys as the server lists them.
async fn pods(env: &TestEnv, prefix: &str, namespaces: usize, per_namespace: usize) -> Vec<Pod> {
    let client = env.client().unwrap();
    let mut created = Vec::new();
    for _ in 0..namespaces {
        created.push(env.create_namespace(prefix).await.unwrap());
    }
    let requests = created.iter().flat_map(|ns| {
        (0..per_namespace).map(move |i| {
            let pod: Pod = serde_json::from_value(serde_json::json!({
                "metadata": { "name": format!("pod-{i}"), "labels": { "run": prefix } },
                "spec": { "containers": [{ "name": "app", "image": "registry.k8s.io/pause:3.10" }] },
            }))
            .unwrap();
            (ns.clone(), pod)
        })
    });
    futures::stream::iter(requests)
        .map(|(ns, pod)| {
            let api = Api::<Pod>::namespaced(client.clone(), &ns);
            async move { api.create(&PostParams::default(), &pod).await.unwrap() }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    let listed = Api::<Pod>::all(client)
        .list(&ListParams::default().labels(&format!("run={prefix}")))
        .await
        .unwrap()
        .items;
    assert_eq!(listed.len(), namespaces * per_namespace);
    listed
}

/// One shard member whose Pod informer (of every namespace, `run=<prefix>` only) talks
/// to the API server through a `FaultProxy` of its own, which counts the bytes it
/// receives; its Lease traffic goes directly.
struct Member {
    handle: ShardHandle,
    member: common::RunningMember,
    proxy: FaultProxy,
    factory: Option<SharedInformerFactory>,
}

impl Member {
    async fn join(
        env: &TestEnv,
        lease_namespace: &str,
        group: &str,
        id: &str,
        by: ShardBy,
    ) -> Self {
        let config = ShardConfig::new(lease_namespace, group)
            .identity(id)
            .lease_duration(Duration::from_secs(8))
            .renew_deadline(Duration::from_secs(6))
            .retry_period(Duration::from_millis(500))
            .shard_by(by);
        let member = common::RunningMember::join(env.client().unwrap(), config);
        Self {
            handle: member.handle.clone(),
            member,
            proxy: env.fault_proxy().await.unwrap(),
            factory: None,
        }
    }

    fn selection(&self) -> Selection {
        Selection::default().filtered(
            format!("shard {}", self.handle.identity()),
            Arc::new(self.handle.clone()),
        )
    }

    fn start_informer(&mut self, prefix: &str) {
        let selector = format!("run={prefix}");
        let factory = SharedInformerFactory::new(
            self.proxy.client().unwrap(),
            FactoryConfig::default().tweak_list_options(move |options| {
                options.label_selector = Some(selector.clone());
            }),
        );
        factory.informer_for::<Pod>(self.selection());
        factory.start();
        self.factory = Some(factory);
    }

    fn informer(&self) -> SharedIndexInformer<Pod> {
        self.factory
            .as_ref()
            .unwrap()
            .informer_for::<Pod>(self.selection())
    }

    fn cached(&self) -> BTreeSet<ObjectKey> {
        self.informer()
            .indexer()
            .list_keys()
            .iter()
            .map(|key| ObjectKey::clone(key))
            .collect()
    }

    /// The keys of `pods` in its shard, by its published ranges.
    fn share(&self, pods: &[Pod]) -> BTreeSet<ObjectKey> {
        pods.iter()
            .filter(|pod| self.handle.in_shard_object(pod.meta()))
            .map(|pod| ObjectKey::new(pod.namespace(), pod.name_any()))
            .collect()
    }

    async fn leave(self) {
        if let Some(factory) = self.factory {
            factory.shutdown().await;
        }
        self.member.leave().await;
    }
}

/// `ids` join one shard group, read each other, start their informers and cache
/// exactly their shares of `pods`, which split them; returns the members.
async fn settled_members(
    env: &TestEnv,
    prefix: &str,
    ids: &[&str],
    by: ShardBy,
    pods: &[Pod],
) -> Vec<Member> {
    let lease_namespace = pods[0].namespace().unwrap();
    let group = format!("{prefix}-{}", ids.len());
    let mut members = Vec::new();
    for id in ids {
        members.push(Member::join(env, &lease_namespace, &group, id, by).await);
    }
    let sorted: Vec<String> = ids.iter().map(|id| (*id).to_owned()).collect();
    common::eventually("the members to read each other", WAIT, || {
        members.iter().all(|m| m.handle.members() == sorted)
    })
    .await;
    for member in &mut members {
        member.start_informer(prefix);
    }
    common::eventually("each member to cache its share", WAIT, || {
        let mut union = BTreeSet::new();
        for member in &members {
            let share = member.share(pods);
            if member.cached() != share || union.intersection(&share).next().is_some() {
                return false;
            }
            union.extend(share);
        }
        union.len() == pods.len()
    })
    .await;
    members
}

/// With the gate on, each of three members by `by` receives only its share: none of
/// the others' Pods arrives to be dropped, and the bytes it received are its share's
/// fraction of what one member alone received, within 10% (plus a little for the
/// connection itself). With the gate off, the same members receive every Pod and drop
/// the others' (filtered here), and about all the bytes.
async fn members_receive_only_their_share(by: ShardBy, prefix: &str) {
    for (env, gate) in [
        (TestEnv::shared().await.unwrap(), true),
        (gate_off().await, false),
    ] {
        let prefix = format!("{prefix}-{}", if gate { "on" } else { "off" });
        let pods = pods(env, &prefix, 30, 10).await;
        let alone = settled_members(env, &prefix, &["solo"], by, &pods).await;
        let solo_bytes = alone[0].proxy.bytes_to_clients();
        for member in alone {
            member.leave().await;
        }
        let members = settled_members(env, &prefix, &["a", "b", "c"], by, &pods).await;
        for member in &members {
            let share = member.share(&pods).len();
            let bytes = member.proxy.bytes_to_clients();
            let stats = member.informer().reflector_stats().unwrap();
            let fraction = bytes as f64 / solo_bytes as f64;
            let expected = share as f64 / pods.len() as f64;
            eprintln!(
                "{by:?}, gate {gate}: member {} holds {share} of {} Pods and received {bytes} \
                 bytes, {fraction:.3} of one member alone ({solo_bytes}); dropped here: {}",
                member.handle.identity(),
                pods.len(),
                stats.filtered_out
            );
            if gate {
                assert_eq!(stats.filtered_out, 0, "the server sent only the share");
                assert!(
                    fraction <= 1.1 * expected + 0.02,
                    "{fraction:.3} of the bytes for {expected:.3} of the Pods"
                );
            } else {
                assert_eq!(
                    stats.filtered_out as usize,
                    pods.len() - share,
                    "every Pod arrived, the others' were dropped"
                );
                assert!(fraction > 0.9, "{fraction:.3}: about everything arrived");
            }
        }
        for member in members {
            member.leave().await;
        }
    }
}

/// A control plane with the gate off, for the comparison.
async fn gate_off() -> &'static TestEnv {
    static ENV: OnceCell<TestEnv> = OnceCell::const_new();
    ENV.get_or_init(|| async {
        TestEnv::builder()
            .sharded_list_and_watch(false)
            .start()
            .await
            .unwrap()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_sharded_by_uid_reach_each_member_only_as_its_share() {
    members_receive_only_their_share(ShardBy::Uid, "pods-by-uid").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_sharded_by_namespace_reach_each_member_only_as_its_share() {
    members_receive_only_their_share(ShardBy::Namespace, "pods-by-ns").await;
}
