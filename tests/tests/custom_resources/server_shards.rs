//! Server-side sharded list and watch (KEP-5866, gate `ShardedListAndWatch`), on the
//! real 1.37 server with the gate on (the shared control plane) and off (one of its
//! own): what the server does with a shard selector, decided from its own answers,
//! and shard members that decide by namespace receiving only their share where the
//! server filters, and the same share, filtered here, where it does not.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use informer::factory::{FactoryOptions, InformerScope, SharedInformerFactory};
use informer::key::ObjectKey;
use informer::reflector::KeyFilter;
use informer::shard::{ShardBy, ShardConfig, ShardHandle, ShardMember};
use informer::testenv::TestEnv;
use kube::api::{Api, ListParams, PostParams};
use kube::{Resource, ResourceExt};
use tokio::sync::OnceCell;

use super::{Widget, common, install_crds, own_env, widget};

/// FNV-1a, 64 bits: written out here, not taken from the library, so that the test
/// checks the library's hash against the server's rather than against itself.
fn fnv1a(value: &str) -> u64 {
    value.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A control plane with the gate off.
async fn gate_off_env() -> &'static TestEnv {
    static ENV: OnceCell<TestEnv> = OnceCell::const_new();
    own_env(&ENV, TestEnv::builder().sharded_list_and_watch(false)).await
}

async fn gate_on_env() -> &'static TestEnv {
    let env = TestEnv::shared().await.unwrap();
    install_crds(env).await;
    env
}

/// `count` namespaces with two Widgets each.
async fn widgets_in_namespaces(env: &TestEnv, prefix: &str, count: usize) -> Vec<ObjectKey> {
    let client = env.client().unwrap();
    let mut keys = Vec::new();
    for _ in 0..count {
        let ns = env.create_namespace(prefix).await.unwrap();
        let api = Api::<Widget>::namespaced(client.clone(), &ns);
        for name in ["w1", "w2"] {
            api.create(&PostParams::default(), &widget(name, "plain", 1))
                .await
                .unwrap();
            keys.push(ObjectKey::new(Some(ns.clone()), name));
        }
    }
    keys
}

/// The Widgets of `namespaces` that a raw list with `selector` returns, and whether the
/// list carried `metadata.shardInfo`.
async fn raw_list(
    env: &TestEnv,
    selector: &str,
    namespaces: &BTreeSet<String>,
) -> (BTreeSet<String>, bool) {
    let client = env.client().unwrap();
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("shardSelector", selector)
        .finish();
    let url = format!("{}?{query}", Widget::url_path(&(), None));
    let request = http::Request::get(url).body(Vec::new()).unwrap();
    let list: serde_json::Value = client.request(request).await.unwrap();
    let names = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["metadata"]["namespace"].as_str().unwrap().to_owned())
        .filter(|ns| namespaces.contains(ns))
        .collect();
    (names, list["metadata"].get("shardInfo").is_some())
}

/// With the gate on, a list with a shard selector returns exactly the objects whose
/// namespace's FNV-1a hash falls in `[start, end)` (end excluded, `0x1` followed by 16
/// zeros for the top of the space); with the gate off, the parameter is ignored.
#[tokio::test]
async fn the_server_keeps_the_objects_whose_field_hashes_into_the_ranges() {
    for (env, filters) in [(gate_on_env().await, true), (gate_off_env().await, false)] {
        let keys = widgets_in_namespaces(env, "raw-shards", 12).await;
        let namespaces: BTreeSet<String> =
            keys.iter().map(|k| k.namespace.clone().unwrap()).collect();
        let lower_half: BTreeSet<String> = namespaces
            .iter()
            .filter(|ns| fnv1a(ns) < 1 << 63)
            .cloned()
            .collect();
        let half =
            "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')";
        let (listed, said) = raw_list(env, half, &namespaces).await;
        // The gate off, nothing is said; the gate on, the server filters custom
        // resources without (always) saying so in `shardInfo` on their lists.
        assert!(filters || !said);
        assert_eq!(
            listed,
            if filters {
                lower_half
            } else {
                namespaces.clone()
            }
        );

        // One namespace's own hash: its range holds it, the range ending there does not.
        let one = namespaces.first().unwrap();
        let hash = fnv1a(one);
        let only = format!(
            "shardRange(object.metadata.namespace, '{:#018x}', '{:#018x}')",
            hash,
            u128::from(hash) + 1
        );
        let (listed, _) = raw_list(env, &only, &namespaces).await;
        let expected = if filters {
            BTreeSet::from([one.clone()])
        } else {
            namespaces.clone()
        };
        assert_eq!(listed, expected);
        let below = format!(
            "shardRange(object.metadata.namespace, '0x0000000000000000', '{hash:#018x}') || \
             shardRange(object.metadata.namespace, '{:#018x}', '0x10000000000000000')",
            u128::from(hash) + 1
        );
        let (listed, _) = raw_list(env, &below, &namespaces).await;
        assert_eq!(listed.contains(one), !filters);
        assert_eq!(listed.len(), namespaces.len() - usize::from(filters));
    }
}

fn config(lease_namespace: &str, group: &str, identity: &str, by: ShardBy) -> ShardConfig {
    ShardConfig::new(lease_namespace, group)
        .identity(identity)
        .lease_duration(Duration::from_secs(8))
        .renew_deadline(Duration::from_secs(6))
        .retry_period(Duration::from_millis(500))
        .shard_by(by)
}

/// One member with an informer of every namespace's Widgets, filtered by its shard.
struct Replica {
    handle: ShardHandle,
    stop: tokio::sync::oneshot::Sender<()>,
    run: tokio::task::JoinHandle<()>,
    factory: Option<SharedInformerFactory>,
}

impl Replica {
    fn join(
        env: &TestEnv,
        lease_namespace: &str,
        group: &str,
        identity: &str,
        by: ShardBy,
    ) -> Self {
        let member = ShardMember::new(
            env.client().unwrap(),
            config(lease_namespace, group, identity, by),
        )
        .unwrap();
        let handle = member.handle();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let run = tokio::spawn(member.run(async {
            stopped.await.ok();
        }));
        Self {
            handle,
            stop,
            run,
            factory: None,
        }
    }

    /// Starts the informer, filtered by the member's shard.
    fn start_informer(&mut self, env: &TestEnv) {
        let factory = SharedInformerFactory::new(env.client().unwrap(), FactoryOptions::default());
        let scope = InformerScope::default().filtered(
            format!("shard {}", self.handle.identity()),
            Arc::new(self.handle.clone()),
        );
        factory.informer_for::<Widget>(scope);
        factory.start();
        self.factory = Some(factory);
    }

    /// The keys among `keys` its cache holds.
    fn cached(&self, keys: &[ObjectKey]) -> BTreeSet<ObjectKey> {
        let informer = self.informer();
        let cached: BTreeSet<ObjectKey> = informer
            .indexer()
            .list_keys()
            .iter()
            .map(|key| ObjectKey::clone(key))
            .collect();
        keys.iter()
            .filter(|k| cached.contains(k))
            .cloned()
            .collect()
    }

    /// The keys of `objects` (the server's) in its shard.
    fn share(&self, objects: &[Widget]) -> BTreeSet<ObjectKey> {
        objects
            .iter()
            .filter(|o| self.handle.in_shard_object(o.meta()))
            .map(|o| ObjectKey::new(o.namespace(), o.name_any()))
            .collect()
    }

    fn informer(&self) -> informer::shared_informer::SharedIndexInformer<Widget> {
        let scope = InformerScope::default().filtered(
            format!("shard {}", self.handle.identity()),
            Arc::new(self.handle.clone()),
        );
        self.factory.as_ref().unwrap().informer_for::<Widget>(scope)
    }

    async fn leave(self) {
        if let Some(factory) = self.factory {
            factory.shutdown().await;
        }
        self.stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(30), self.run)
            .await
            .unwrap()
            .unwrap();
    }
}

/// Members deciding by `by` each cache exactly their share of every namespace's
/// Widgets (the shares split the objects, decided from the server's full list and
/// each member's published ranges); where the server filters, nothing outside the
/// share ever arrives (no object filtered out here), where it does not, the others'
/// objects arrive and are dropped. A member joining moves the shares, and each cache
/// follows its new share.
async fn members_cache_their_share(env: &TestEnv, prefix: &str, filters: bool, by: ShardBy) {
    let keys = widgets_in_namespaces(env, prefix, 60).await;
    let lease_namespace = keys[0].namespace.clone().unwrap();
    let namespaces: BTreeSet<String> = keys.iter().map(|k| k.namespace.clone().unwrap()).collect();
    let objects: Vec<Widget> = Api::<Widget>::all(env.client().unwrap())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|o| o.namespace().is_some_and(|ns| namespaces.contains(&ns)))
        .collect();
    assert_eq!(objects.len(), keys.len());
    let group = format!("{prefix}-g");
    let mut replicas: Vec<Replica> = ["a", "b"]
        .into_iter()
        .map(|id| Replica::join(env, &lease_namespace, &group, id, by))
        .collect();
    common::eventually(
        "a and b to read each other",
        Duration::from_secs(60),
        || replicas.iter().all(|r| r.handle.members() == ["a", "b"]),
    )
    .await;
    for replica in &mut replicas {
        replica.start_informer(env);
    }
    let settled = |replicas: &[Replica]| {
        let mut union = BTreeSet::new();
        for replica in replicas {
            let share = replica.share(&objects);
            if replica.cached(&keys) != share || union.intersection(&share).next().is_some() {
                return false;
            }
            union.extend(share);
        }
        union.len() == keys.len()
    };
    common::eventually(
        "a and b to cache their shares",
        Duration::from_secs(60),
        || settled(&replicas),
    )
    .await;
    for replica in &replicas {
        assert!(
            !replica.share(&objects).is_empty(),
            "120 objects split in two"
        );
        let stats = replica.informer().reflector_stats().unwrap();
        if filters {
            assert_eq!(stats.filtered_out, 0, "the server sent only the share");
        } else {
            assert!(stats.filtered_out > 0, "every object arrived: {stats:?}");
        }
        // And the informer tells which, from what arrived (some 60 objects each): by
        // uid, either way; by namespace, only when objects arrive to be dropped (the
        // server does not say so on custom resources' lists, and objects of one
        // namespace fall in or out of a share together).
        let told = match by {
            ShardBy::Uid => Some(filters),
            _ => (!filters).then_some(false),
        };
        assert_eq!(stats.server_filters_shards, told, "{stats:?}");
        let selector = replica.handle.server_selector().unwrap();
        let field = match by {
            ShardBy::Uid => "uid",
            _ => "namespace",
        };
        assert!(selector.starts_with(&format!("shardRange(object.metadata.{field}, '0x")));
    }

    replicas.push(Replica::join(env, &lease_namespace, &group, "c", by));
    common::eventually(
        "all three to read each other",
        Duration::from_secs(60),
        || {
            replicas
                .iter()
                .all(|r| r.handle.members() == ["a", "b", "c"])
        },
    )
    .await;
    replicas[2].start_informer(env);
    common::eventually("three shares cached", Duration::from_secs(60), || {
        settled(&replicas)
    })
    .await;
    let stats = replicas[2].informer().reflector_stats().unwrap();
    assert_eq!(stats.filtered_out == 0, filters, "{stats:?}");
    for replica in replicas {
        replica.leave().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_by_namespace_receive_only_their_share_where_the_server_filters() {
    let env = gate_on_env().await;
    members_cache_their_share(env, "ns-shards-on", true, ShardBy::Namespace).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_by_namespace_filter_their_share_themselves_where_the_server_does_not() {
    let env = gate_off_env().await;
    members_cache_their_share(env, "ns-shards-off", false, ShardBy::Namespace).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_by_uid_receive_only_their_share_where_the_server_filters() {
    members_cache_their_share(gate_on_env().await, "uid-shards-on", true, ShardBy::Uid).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_by_uid_filter_their_share_themselves_where_the_server_does_not() {
    members_cache_their_share(gate_off_env().await, "uid-shards-off", false, ShardBy::Uid).await;
}
