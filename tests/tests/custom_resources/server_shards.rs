//! Server-side sharded list and watch (KEP-5866, gate `ShardedListAndWatch`), on the
//! real 1.37 server with the gate on (the shared control plane) and off (one of its
//! own): what the server does with a shard selector, decided from its own answers,
//! and shard members that decide by namespace receiving only their share where the
//! server filters, and the same share, filtered here, where it does not.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use informer::factory::{FactoryConfig, Selection, SharedInformerFactory};
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
        let factory = SharedInformerFactory::new(env.client().unwrap(), FactoryConfig::default());
        let selection = Selection::default().filtered(
            format!("shard {}", self.handle.identity()),
            Arc::new(self.handle.clone()),
        );
        factory.informer_for::<Widget>(selection);
        factory.start();
        self.factory = Some(factory);
    }

    /// The keys among `keys` its cache holds.
    fn cached(&self, keys: &[ObjectKey]) -> BTreeSet<ObjectKey> {
        cached_of(&self.informer(), keys)
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
        let selection = Selection::default().filtered(
            format!("shard {}", self.handle.identity()),
            Arc::new(self.handle.clone()),
        );
        self.factory
            .as_ref()
            .unwrap()
            .informer_for::<Widget>(selection)
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

/// The keys among `keys` that `informer`'s cache holds.
fn cached_of(
    informer: &informer::shared_informer::SharedIndexInformer<Widget>,
    keys: &[ObjectKey],
) -> BTreeSet<ObjectKey> {
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

/// 60 Widgets over a few namespaces (see [`widgets_in_namespaces`]): their keys, the
/// namespace the members' Leases go in, and the Widgets as the server lists them.
async fn sixty_widgets(env: &TestEnv, prefix: &str) -> (Vec<ObjectKey>, String, Vec<Widget>) {
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
    (keys, lease_namespace, objects)
}

/// Members deciding by `by` each cache exactly their share of every namespace's
/// Widgets (the shares split the objects, decided from the server's full list and
/// each member's published ranges); where the server filters, nothing outside the
/// share ever arrives (no object filtered out here), where it does not, the others'
/// objects arrive and are dropped. A member joining moves the shares, and each cache
/// follows its new share.
async fn members_cache_their_share(env: &TestEnv, prefix: &str, filters: bool, by: ShardBy) {
    let (keys, lease_namespace, objects) = sixty_widgets(env, prefix).await;
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
        let selector = replica.handle.server_selector().unwrap().to_query();
        let field = match by {
            ShardBy::Uid => "uid",
            _ => "namespace",
        };
        assert!(selector.starts_with(&format!("shardRange(object.metadata.{field}, '0x")));
        // A few contiguous ranges (at most 32), not the hundreds of a scattered share.
        let ranges = selector.split(" || ").count();
        assert!(ranges <= 32, "{ranges} ranges");
        let shard = replica.handle.stats();
        assert_eq!(shard.server_selector_ranges, Some(ranges));
        assert_eq!(shard.server_selector_bytes, Some(selector.len()));
        assert!(selector.len() < 3_000, "{} bytes", selector.len());
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

/// A proxy in front of the API server that answers 414 to a request line longer
/// than its limit, as nginx does past `large_client_header_buffers` (8 KB by
/// default), and passes every other request on through a client of its own (the
/// informer talks plain HTTP to it; it talks TLS, with credentials, to the server).
/// Only GETs, which is all an informer sends.
struct LineLimitProxy {
    url: String,
    limit: Arc<std::sync::atomic::AtomicUsize>,
    /// Requests answered 414.
    refused: Arc<std::sync::atomic::AtomicUsize>,
    /// Requests carrying a shard selector that were passed on.
    passed_with_selector: Arc<std::sync::atomic::AtomicUsize>,
    accepting: tokio::task::JoinHandle<()>,
}

impl LineLimitProxy {
    async fn start(upstream: kube::Client, limit: usize) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let limit = Arc::new(std::sync::atomic::AtomicUsize::new(limit));
        let refused = Arc::<std::sync::atomic::AtomicUsize>::default();
        let passed_with_selector = Arc::<std::sync::atomic::AtomicUsize>::default();
        let counters = (
            Arc::clone(&limit),
            Arc::clone(&refused),
            Arc::clone(&passed_with_selector),
        );
        let accepting = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (limit, refused, passed) = counters.clone();
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    proxy_one(socket, &upstream, &limit, &refused, &passed).await;
                });
            }
        });
        Self {
            url,
            limit,
            refused,
            passed_with_selector,
            accepting,
        }
    }

    /// A client that goes through the proxy.
    fn client(&self) -> kube::Client {
        kube::Client::try_from(kube::Config::new(self.url.parse().unwrap())).unwrap()
    }

    fn set_limit(&self, limit: usize) {
        self.limit.store(limit, std::sync::atomic::Ordering::SeqCst);
    }

    fn refused(&self) -> usize {
        self.refused.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn passed_with_selector(&self) -> usize {
        self.passed_with_selector
            .load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for LineLimitProxy {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

/// One request on `socket`: refused if its line is longer than `limit`, else sent on
/// through `upstream` and its answer streamed back (chunked), then the connection
/// closed.
async fn proxy_one(
    socket: tokio::net::TcpStream,
    upstream: &kube::Client,
    limit: &std::sync::atomic::AtomicUsize,
    refused: &std::sync::atomic::AtomicUsize,
    passed_with_selector: &std::sync::atomic::AtomicUsize,
) {
    use futures::AsyncBufReadExt as _;
    use std::sync::atomic::Ordering::SeqCst;
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

    let (read, mut write) = socket.into_split();
    let mut read = tokio::io::BufReader::new(read);
    let mut line = String::new();
    if read.read_line(&mut line).await.unwrap_or(0) == 0 {
        return;
    }
    let mut accept = None;
    loop {
        let mut header = String::new();
        if read.read_line(&mut header).await.unwrap_or(0) == 0 {
            return;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("accept")
        {
            accept = Some(value.trim().to_owned());
        }
    }
    let line = line.trim_end();
    if line.len() > limit.load(SeqCst) {
        refused.fetch_add(1, SeqCst);
        let page = "<html>\r\n<head><title>414 Request-URI Too Large</title></head>\r\n<body>\r\n\
                    <center><h1>414 Request-URI Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n\
                    </body>\r\n</html>\r\n";
        let answer = format!(
            "HTTP/1.1 414 Request-URI Too Large\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = write.write_all(answer.as_bytes()).await;
        return;
    }
    let target = line.split(' ').nth(1).unwrap_or("/").to_owned();
    if target.contains("shardSelector=") {
        passed_with_selector.fetch_add(1, SeqCst);
    }
    let mut request = http::Request::get(target);
    if let Some(accept) = accept {
        request = request.header(http::header::ACCEPT, accept);
    }
    match upstream
        .request_stream(request.body(Vec::new()).unwrap())
        .await
    {
        Ok(body) => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                        Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
            if write.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let mut body = Box::pin(body);
            loop {
                let chunk = match body.fill_buf().await {
                    Ok(chunk) if !chunk.is_empty() => chunk.to_vec(),
                    _ => break,
                };
                body.consume_unpin(chunk.len());
                let framed = [
                    format!("{:x}\r\n", chunk.len()).into_bytes(),
                    chunk,
                    b"\r\n".to_vec(),
                ]
                .concat();
                if write.write_all(&framed).await.is_err() || write.flush().await.is_err() {
                    return;
                }
            }
            let _ = write.write_all(b"0\r\n\r\n").await;
        }
        Err(error) => {
            let (code, body) = match error {
                kube::Error::Api(status) => (status.code, serde_json::to_vec(&*status).unwrap()),
                other => (502, other.to_string().into_bytes()),
            };
            let phrase = http::StatusCode::from_u16(code)
                .ok()
                .and_then(|code| code.canonical_reason())
                .unwrap_or("Error");
            let head = format!(
                "HTTP/1.1 {code} {phrase}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n",
                body.len()
            );
            let _ = write.write_all(&[head.into_bytes(), body].concat()).await;
        }
    }
}

/// A label selector every Widget matches (`proxy-test notin (v0, v1, ...)`), about
/// `bytes` long once in a URL: what brings every request near a proxy's limit.
fn long_label_selector(bytes: usize) -> String {
    let mut values = Vec::new();
    loop {
        let selector = format!("proxy-test notin ({})", values.join(","));
        let encoded = form_urlencoded::Serializer::new(String::new())
            .append_pair("labelSelector", &selector)
            .finish();
        if encoded.len() >= bytes {
            return selector;
        }
        values.push(format!("v{}", values.len()));
    }
}

/// Behind a proxy that refuses request lines over 8 KB, requests that carry the
/// shard selector are refused (414) while the same requests without it pass: the
/// informer asks again without the selector, receives every object and keeps its
/// share, and syncs. Once the proxy takes long lines again, the next relist (a member
/// joins) sends the selector again, and the server filters: nothing arrives to be
/// dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_proxy_refusing_long_request_lines_members_fall_back_and_sync() {
    let env = gate_on_env().await;
    let (keys, lease_namespace, objects) = sixty_widgets(env, "proxy-shards").await;
    let group = "proxy-shards-g";
    let by = ShardBy::Uid;
    let a = Replica::join(env, &lease_namespace, group, "a", by);
    let b = Replica::join(env, &lease_namespace, group, "b", by);
    common::eventually(
        "a and b to read each other",
        Duration::from_secs(60),
        || [&a, &b].iter().all(|r| r.handle.members() == ["a", "b"]),
    )
    .await;
    // Every request line without the selector fits in 8 KB (the longest, a
    // streaming list's, has some 250 bytes besides the label selector); with a's
    // selector (several ranges of some 100 bytes each in the URL) none does.
    let selector = a.handle.server_selector().unwrap().to_query();
    let in_url = form_urlencoded::Serializer::new(String::new())
        .append_pair("shardSelector", &selector)
        .finish()
        .len();
    assert!(in_url > 500, "a's selector: {in_url} bytes in the URL");
    let labels = long_label_selector(7_700);
    let proxy = LineLimitProxy::start(env.client().unwrap(), 8_192).await;

    let factory = SharedInformerFactory::new(proxy.client(), FactoryConfig::default());
    let selection = Selection::default()
        .label_selector(labels)
        .filtered("shard a", Arc::new(a.handle.clone()));
    let informer = factory.informer_for::<Widget>(selection);
    factory.start();
    let cached = |informer: &informer::shared_informer::SharedIndexInformer<Widget>| {
        cached_of(informer, &keys)
    };
    common::eventually(
        "a to sync its share through the proxy",
        Duration::from_secs(60),
        || informer.has_synced() && cached(&informer) == a.share(&objects),
    )
    .await;
    assert!(!a.share(&objects).is_empty());
    assert!(proxy.refused() > 0, "the selector's requests were refused");
    assert_eq!(proxy.passed_with_selector(), 0);
    let stats = informer.reflector_stats().unwrap();
    assert!(stats.filtered_out > 0, "every object arrived: {stats:?}");
    assert_eq!(stats.server_filters_shards, Some(false), "{stats:?}");

    // The proxy takes long lines again; c joins, a relists with the selector.
    proxy.set_limit(usize::MAX);
    let refused = proxy.refused();
    let c = Replica::join(env, &lease_namespace, group, "c", by);
    common::eventually(
        "all three to read each other",
        Duration::from_secs(60),
        || {
            [&a, &b, &c]
                .iter()
                .all(|r| r.handle.members() == ["a", "b", "c"])
        },
    )
    .await;
    // The streaming list of the relist brings the share of every Widget of the
    // cluster (other tests' too: hundreds), with nothing to drop.
    common::eventually(
        "a to cache its new share, asked of the server with its selector",
        Duration::from_secs(60),
        || {
            let stats = informer.reflector_stats().unwrap();
            proxy.passed_with_selector() > 0
                && stats.server_filters_shards == Some(true)
                && cached(&informer) == a.share(&objects)
        },
    )
    .await;
    assert_eq!(proxy.refused(), refused);
    // And what is created now arrives only if it is a's: Widgets created until the
    // last is a's (its event comes after every earlier one's, had they come).
    let dropped = informer.reflector_stats().unwrap().filtered_out;
    let ns = env.create_namespace("proxy-shards-more").await.unwrap();
    let api = Api::<Widget>::namespaced(env.client().unwrap(), &ns);
    let mut created = Vec::new();
    loop {
        let name = format!("m{}", created.len());
        let made = api
            .create(&PostParams::default(), &widget(&name, "plain", 1))
            .await
            .unwrap();
        let last_is_mine = a.handle.in_shard_object(made.meta());
        created.push(made);
        if created.len() >= 10 && last_is_mine {
            break;
        }
    }
    let mine = a.share(&created);
    assert!(mine.len() < created.len(), "some new Widgets are not a's");
    let created_keys: Vec<ObjectKey> = created
        .iter()
        .map(|o| ObjectKey::new(o.namespace(), o.name_any()))
        .collect();
    common::eventually(
        "a to cache its share of the new Widgets",
        Duration::from_secs(60),
        || cached_of(&informer, &created_keys) == mine,
    )
    .await;
    let stats = informer.reflector_stats().unwrap();
    assert_eq!(
        stats.filtered_out, dropped,
        "the server sent only a's share: {stats:?}"
    );
    factory.shutdown().await;
    for replica in [a, b, c] {
        replica.leave().await;
    }
}
