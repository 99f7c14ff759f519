//! The suites that matter, on custom resources (CRDs), on the default control plane
//! (Kubernetes 1.37): streaming lists, 410 Gone, paging, the factory's typed,
//! metadata-only and dynamic informers, the controller, leader election's and
//! sharding's Leases, Events and projections, with custom resources as primaries,
//! owned children and watched objects.
//!
//! What the server does, as these tests rely on it:
//! - Streaming lists (client-go's WatchList, the reflector's default): 1.37 serves them
//!   (ADDED events, then a bookmark annotated `k8s.io/initial-events-end`), so the
//!   initial sync and every relist, also after 410 Gone, go through one, and no plain
//!   list is made. A server that refuses them (1.37 with the `WatchList` gate off,
//!   1.33 by default) is listed and watched (`reflector.rs`, `oldest_release.rs`).
//! - 410 Gone: only a server without the watch cache answers an old resourceVersion
//!   with 410 right after an etcd compaction; with the cache, it answers from the cache
//!   until it restarts.
//! - Paging: a list served by etcd (watch cache off, or an exact resourceVersion) is
//!   paged; a resourceVersion "0" list is served whole from the watch cache.
//!
//! One control plane for the binary ([`TestEnv::shared`]), and one without the watch
//! cache for the tests that compact etcd or page lists (those faults would reach every
//! other test on the shared one).

mod common;
#[path = "custom_resources/owned_shards.rs"]
mod owned_shards;
#[path = "custom_resources/server_shards.rs"]
mod server_shards;
#[path = "custom_resources/shard_handoffs.rs"]
mod shard_handoffs;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{eventually, eventually_async, spawn_until_stopped as spawn};
use futures::StreamExt;
use futures::future::BoxFuture;
use informer::controller::Action;
use informer::controller::{Context, Controller, backoff};
use informer::dynamic::DynamicResource;
use informer::events::EventSpec;
use informer::factory::{FactoryConfig, SharedInformerFactory};
use informer::fifo::DeletedObject;
use informer::informable::Informable;
use informer::lister::Lister;
use informer::projection::Projection;
use informer::reflector::source::{
    ApiListerWatcher, Capabilities, ListPage, ListRequest, ListerWatcher, WatchEvent, WatchRequest,
    WatchStream,
};
use informer::reflector::{CachedObjects, Config};
use informer::shard::{ShardBy, ShardConfig, ShardMember};
use informer::shared_informer::{
    InformerConfig, ResourceEventHandler, SharedIndexInformer, wait_for_cache_sync,
};
use informer::testenv::{TestEnv, TestEnvBuilder};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::{DynamicObject, GroupVersionKind, PartialObjectMeta};
use kube::{CustomResource, CustomResourceExt, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

const WAIT: Duration = Duration::from_secs(20);

/// The primary resource: a widget painted from a palette, indexed by it.
#[derive(CustomResource, Informable, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "modern.informer.example.com",
    version = "v1",
    kind = "Widget",
    namespaced
)]
#[informable(index(name = "by_palette", path = "spec.palette"))]
struct WidgetSpec {
    palette: String,
    size: u32,
}

/// A widget's child, owned through its controller reference.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "modern.informer.example.com",
    version = "v1",
    kind = "Gear",
    namespaced
)]
struct GearSpec {
    color: String,
    size: u32,
}

/// What widgets are painted from: watched, mapped to widgets by the `by_palette` index.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "modern.informer.example.com",
    version = "v1",
    kind = "Palette",
    namespaced
)]
struct PaletteSpec {
    color: String,
}

/// What a controller reads of a Widget: its palette (the spec is required in the
/// Rust type; the projection may still make it an `Option`).
#[derive(Projection, Clone, Debug)]
#[projection(of = Widget)]
struct WidgetView {
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    spec: Option<WidgetViewSpec>,
}

#[derive(Projection, Clone, Debug, Default, PartialEq)]
#[projection(of = WidgetSpec)]
struct WidgetViewSpec {
    palette: String,
}

/// A CRD this control plane never installs.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "modern.informer.example.com",
    version = "v1",
    kind = "Sprocket",
    namespaced
)]
struct SprocketSpec {
    teeth: u32,
}

/// A projection of it.
#[derive(Projection, Clone, Debug)]
#[projection(of = Sprocket)]
struct SprocketView {
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
}

fn widget(name: &str, palette: &str, size: u32) -> Widget {
    Widget::new(
        name,
        WidgetSpec {
            palette: palette.into(),
            size,
        },
    )
}

/// The shared control plane with the CRDs installed, and a fresh namespace.
async fn setup(prefix: &str) -> (&'static TestEnv, String) {
    let env = TestEnv::shared().await.unwrap();
    install_crds(env).await;
    (env, env.create_namespace(prefix).await.unwrap())
}

async fn install_crds(env: &TestEnv) {
    for crd in [Widget::crd(), Gear::crd(), Palette::crd()] {
        env.install_crd(&crd).await.unwrap();
    }
}

/// A control plane without the watch cache, for this binary's tests that compact
/// etcd (a 410 at once, no restart needed) or need lists to page (the watch cache
/// serves resourceVersion "0" lists whole).
async fn uncached_env() -> &'static TestEnv {
    static ENV: OnceCell<TestEnv> = OnceCell::const_new();
    own_env(&ENV, TestEnv::builder().watch_cache(false)).await
}

/// A control plane of this binary's own in `cell`, started once with `builder`'s
/// options, the CRDs installed.
async fn own_env(cell: &'static OnceCell<TestEnv>, builder: TestEnvBuilder) -> &'static TestEnv {
    cell.get_or_init(|| async {
        let env = builder.start().await.unwrap();
        install_crds(&env).await;
        env
    })
    .await
}

async fn create_widgets(api: &Api<Widget>, names: impl IntoIterator<Item = String>) {
    futures::stream::iter(names)
        .map(|name| async move {
            api.create(&PostParams::default(), &widget(&name, "plain", 1))
                .await
                .unwrap()
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
}

fn sorted_names<K: Resource>(objects: &[Arc<K>]) -> Vec<String> {
    let mut names: Vec<String> = objects.iter().map(|o| o.name_any()).collect();
    names.sort();
    names
}

/// What went through a lister-watcher: plain list requests (pages), and the watch
/// events that are bookmarks, apart from those ending a streaming list's initial
/// events.
#[derive(Default)]
struct Traffic {
    lists: AtomicUsize,
    initial_events_ends: AtomicUsize,
    bookmarks: AtomicUsize,
}

/// Passes everything to the [`ApiListerWatcher`] it wraps, counting [`Traffic`].
struct Counting<K> {
    inner: ApiListerWatcher<K>,
    traffic: Arc<Traffic>,
}

impl<K> ListerWatcher<K> for Counting<K>
where
    ApiListerWatcher<K>: ListerWatcher<K>,
    K: Send + 'static,
{
    fn list(&self, request: ListRequest) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>> {
        self.traffic.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list(request)
    }
    fn list_reusing(
        &self,
        request: ListRequest,
        cache: Arc<dyn CachedObjects<K>>,
    ) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>> {
        self.traffic.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list_reusing(request, cache)
    }
    fn watch(&self, request: WatchRequest) -> BoxFuture<'_, Result<WatchStream<K>, kube::Error>> {
        let traffic = Arc::clone(&self.traffic);
        let watch = self.inner.watch(request);
        Box::pin(async move {
            let stream = watch.await?.inspect(move |event| {
                if let Ok(WatchEvent::Bookmark {
                    initial_events_end, ..
                }) = event
                {
                    let counter = if *initial_events_end {
                        &traffic.initial_events_ends
                    } else {
                        &traffic.bookmarks
                    };
                    counter.fetch_add(1, Ordering::SeqCst);
                }
            });
            Ok(stream.boxed())
        })
    }
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
}

/// Records every notification as a line: `add x`, `add x (initial)`, `update x`,
/// `delete x`, `tombstone x`.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl<K: Resource + Send + Sync + 'static> ResourceEventHandler<K> for Log {
    fn on_add(&mut self, object: &Arc<K>, is_initial_list: bool) {
        let suffix = if is_initial_list { " (initial)" } else { "" };
        let line = format!("add {}{suffix}", object.name_any());
        self.0.lock().unwrap().push(line);
    }
    fn on_update(&mut self, _old: &Arc<K>, new: &Arc<K>) {
        let line = format!("update {}", new.name_any());
        self.0.lock().unwrap().push(line);
    }
    fn on_delete(&mut self, deleted: DeletedObject<K>) {
        let what = match &deleted {
            DeletedObject::Final(_) => "delete",
            DeletedObject::Unknown(_) => "tombstone",
        };
        let line = format!("{what} {}", deleted.object().name_any());
        self.0.lock().unwrap().push(line);
    }
}

/// The reflector's default path on a modern server: the initial sync is one streaming
/// list (requested, not refused, no plain list), ended by the annotated bookmark;
/// then the watch goes on and the server's periodic bookmarks arrive (the watch cache
/// sends one 2 s before the watch's timeout, which is 5 s here). Handlers see the
/// initial objects as initial adds, then adds, updates and deletes in order.
#[tokio::test]
async fn the_initial_sync_is_a_streaming_list_and_the_watch_goes_on_with_bookmarks() {
    let (env, ns) = setup("modern-streaming").await;
    let api = Api::<Widget>::namespaced(env.client().unwrap(), &ns);
    create_widgets(&api, (0..50).map(|i| format!("w{i}"))).await;

    let traffic = Arc::new(Traffic::default());
    let informer = SharedIndexInformer::with_config(
        Counting {
            inner: ApiListerWatcher::new(api.clone()),
            traffic: Arc::clone(&traffic),
        },
        InformerConfig::default().reflector(
            Config::default().watch_timeout(Duration::from_secs(5)..=Duration::from_secs(5)),
        ),
    )
    .unwrap();
    let log = Log::default();
    let registration = informer.add_event_handler(log.clone()).unwrap();
    let started = std::time::Instant::now();
    let running = common::spawn_run(&informer);
    wait_for_cache_sync(&[&informer, &registration]).await;
    let synced_in = started.elapsed();

    let stats = informer.reflector_stats().unwrap();
    eprintln!(
        "initial sync of 50 Widgets in {synced_in:?}: streaming_list_requests={} \
         streaming_list_refused={} lists={} list_items={} plain list requests={} \
         initial-events-end bookmarks={} watches={} errors={} last_resource_version={}",
        stats.streaming_list_requests,
        stats.streaming_list_refused,
        stats.lists,
        stats.list_items,
        traffic.lists.load(Ordering::SeqCst),
        traffic.initial_events_ends.load(Ordering::SeqCst),
        stats.watches,
        stats.errors,
        stats.last_resource_version,
    );
    assert_eq!(stats.streaming_list_requests, 1);
    assert!(!stats.streaming_list_refused, "1.37 serves streaming lists");
    assert_eq!(stats.lists, 1, "the streaming list counts as the one list");
    assert_eq!(stats.list_items, 50);
    assert_eq!(
        traffic.lists.load(Ordering::SeqCst),
        0,
        "no plain list for the initial sync"
    );
    assert_eq!(traffic.initial_events_ends.load(Ordering::SeqCst), 1);
    assert_eq!(stats.errors, 0);
    assert_eq!(informer.indexer().len(), 50);
    let mut initial = log.lines();
    initial.sort();
    let mut expected: Vec<String> = (0..50).map(|i| format!("add w{i} (initial)")).collect();
    expected.sort();
    assert_eq!(initial, expected);

    // The same stream goes on as the watch.
    api.create(&PostParams::default(), &widget("late", "plain", 1))
        .await
        .unwrap();
    let patch = serde_json::json!({ "spec": { "size": 2 } });
    api.patch("w0", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    api.delete("w1", &DeleteParams::default()).await.unwrap();
    eventually("the add, update and delete", WAIT, || {
        log.lines().len() == 53
    })
    .await;
    assert_eq!(log.lines()[50..], ["add late", "update w0", "delete w1"]);
    assert_eq!(
        informer
            .lister()
            .namespaced(&ns)
            .get("w0")
            .unwrap()
            .spec
            .size,
        2
    );

    eventually("a periodic bookmark", WAIT, || {
        traffic.bookmarks.load(Ordering::SeqCst) >= 1
    })
    .await;
    // A watch that timed out is followed by a plain watch from where it was, not a
    // second streaming list.
    eventually("a second watch", WAIT, || {
        informer.reflector_stats().unwrap().watches >= 2
    })
    .await;
    let stats = informer.reflector_stats().unwrap();
    assert_eq!(stats.streaming_list_requests, 1);
    assert_eq!(traffic.lists.load(Ordering::SeqCst), 0);
    running.stop().await;
}

/// After 410 Gone the informer relists through a streaming list again (a server that
/// refuses them is relisted with a plain list), and nothing is lost: a change made
/// while it was cut off arrives, a deletion arrives as a tombstone. With the watch
/// cache, compaction alone would not expire the watch (the cache still
/// serves the old version until the server restarts): this server runs without it.
#[tokio::test]
async fn a_relist_after_410_goes_through_a_streaming_list_again() {
    let env = uncached_env().await;
    let proxy = env.fault_proxy().await.unwrap();
    let ns = env.create_namespace("modern-410").await.unwrap();
    let api = Api::<Widget>::namespaced(env.client().unwrap(), &ns);
    create_widgets(&api, ["a", "b", "noise"].map(String::from)).await;

    let traffic = Arc::new(Traffic::default());
    let informer = SharedIndexInformer::with_config(
        Counting {
            inner: ApiListerWatcher::new(Api::<Widget>::namespaced(proxy.client().unwrap(), &ns))
                .fields("metadata.name!=noise"),
            traffic: Arc::clone(&traffic),
        },
        InformerConfig::default(),
    )
    .unwrap();
    let log = Log::default();
    informer.add_event_handler(log.clone()).unwrap();
    let running = common::spawn_run(&informer);
    wait_for_cache_sync(&[&informer]).await;
    eventually("the watch", WAIT, || {
        informer.reflector_stats().unwrap().watches >= 1
    })
    .await;
    assert_eq!(sorted_names(&informer.indexer().list()), ["a", "b"]);

    // Cut off while `a` changes, `b` goes and etcd moves on (writes to `noise`, which
    // the informer's field selector leaves out) and is compacted.
    proxy.disconnect().await;
    let patch = serde_json::json!({ "spec": { "size": 7 } });
    api.patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    for size in 2..7 {
        let patch = serde_json::json!({ "spec": { "size": size } });
        api.patch("noise", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }
    env.compact_etcd().await.unwrap();
    proxy.reconnect().await.unwrap();

    eventually("the relist", WAIT, || {
        informer.reflector_stats().unwrap().expired >= 1
            && sorted_names(&informer.indexer().list()) == ["a"]
    })
    .await;
    let stats = informer.reflector_stats().unwrap();
    eprintln!(
        "relist after 410: streaming_list_requests={} expired={} lists={} plain list requests={}",
        stats.streaming_list_requests,
        stats.expired,
        stats.lists,
        traffic.lists.load(Ordering::SeqCst)
    );
    assert_eq!(stats.streaming_list_requests, 2, "the relist streamed too");
    assert!(!stats.streaming_list_refused);
    assert_eq!(traffic.lists.load(Ordering::SeqCst), 0, "no plain list");
    assert_eq!(traffic.initial_events_ends.load(Ordering::SeqCst), 2);
    assert_eq!(
        informer
            .lister()
            .namespaced(&ns)
            .get("a")
            .unwrap()
            .spec
            .size,
        7
    );
    // The cache is updated before its handlers hear of it (they are notified from
    // their own queue), so the relist's notifications are waited for, not read at once.
    eventually(
        "the relist's update and deletion notifications",
        WAIT,
        || {
            let lines = log.lines();
            lines.contains(&"update a".to_owned())
                && (lines.contains(&"tombstone b".to_owned())
                    || lines.contains(&"delete b".to_owned()))
        },
    )
    .await;
    running.stop().await;
}

/// With streaming lists turned off, the reflector lists in pages from etcd (no watch
/// cache here): 120 Widgets in pages of 50 are 3 list requests; the metadata-only
/// informer pages the same way, with `PartialObjectMetadata` items.
#[tokio::test]
async fn plain_lists_page_for_full_and_metadata_only_objects() {
    let env = uncached_env().await;
    let ns = env.create_namespace("modern-pages").await.unwrap();
    let api = Api::<Widget>::namespaced(env.client().unwrap(), &ns);
    create_widgets(&api, (0..120).map(|i| format!("p{i}"))).await;
    let paged = || Config::default().streaming_list(false).page_size(Some(50));

    let full_traffic = Arc::new(Traffic::default());
    let full = SharedIndexInformer::with_config(
        Counting {
            inner: ApiListerWatcher::<Widget>::in_namespace(env.client().unwrap(), Some(&ns)),
            traffic: Arc::clone(&full_traffic),
        },
        InformerConfig::default().reflector(paged()),
    )
    .unwrap();
    let meta_traffic = Arc::new(Traffic::default());
    let meta_lister_watcher = ApiListerWatcher::<PartialObjectMeta<Widget>>::in_namespace(
        env.client().unwrap(),
        Some(&ns),
    );
    assert!(meta_lister_watcher.is_metadata_only());
    let meta = SharedIndexInformer::with_config(
        Counting {
            inner: meta_lister_watcher,
            traffic: Arc::clone(&meta_traffic),
        },
        InformerConfig::default().reflector(paged()),
    )
    .unwrap();
    let running = [common::spawn_run(&full), common::spawn_run(&meta)];
    wait_for_cache_sync(&[&full, &meta]).await;

    for (traffic, stats) in [
        (&full_traffic, full.reflector_stats().unwrap()),
        (&meta_traffic, meta.reflector_stats().unwrap()),
    ] {
        assert_eq!(
            traffic.lists.load(Ordering::SeqCst),
            3,
            "120 in pages of 50"
        );
        assert_eq!(stats.streaming_list_requests, 0);
        assert_eq!((stats.lists, stats.list_items), (1, 120));
    }
    assert_eq!(full.indexer().len(), 120);
    assert_eq!(meta.indexer().len(), 120);
    let object = meta.lister().namespaced(&ns).get("p7").unwrap();
    let types = object.types.clone().unwrap();
    assert_eq!(
        (types.api_version.as_str(), types.kind.as_str()),
        ("meta.k8s.io/v1", "PartialObjectMetadata")
    );
    for running in running {
        running.stop().await;
    }
}

/// The factory on custom resources: one informer per type, shared; the typed index
/// of the derive answers through the lister; a metadata-only informer and a dynamic
/// one (the resource found by discovery) of the same CRD agree with it, each synced
/// by streaming list.
#[tokio::test]
async fn factory_typed_metadata_and_dynamic_informers_of_a_crd_agree() {
    let (env, ns) = setup("modern-factory").await;
    let client = env.client().unwrap();
    let api = Api::<Widget>::namespaced(client.clone(), &ns);
    for (name, palette) in [("a", "red"), ("b", "blue"), ("c", "red")] {
        api.create(&PostParams::default(), &widget(name, palette, 1))
            .await
            .unwrap();
    }
    let gvk = GroupVersionKind::gvk("modern.informer.example.com", "v1", "Widget");
    let resource = DynamicResource::discover(&client, &gvk).await.unwrap();
    assert!(resource.namespaced);
    assert_eq!(resource.api_resource.plural, "widgets");

    let factory = SharedInformerFactory::new(client, FactoryConfig::default().namespace(&ns));
    let typed = factory.informable::<Widget>();
    assert_eq!(
        typed,
        factory.informable::<Widget>(),
        "one informer per type"
    );
    let metadata = factory.metadata_informer::<Widget>();
    let dynamic = factory.dynamic_informer(&resource);
    factory.start();
    factory.wait_for_cache_sync_within(WAIT).await.unwrap();
    for stats in [
        typed.reflector_stats().unwrap(),
        metadata.reflector_stats().unwrap(),
        dynamic.reflector_stats().unwrap(),
    ] {
        assert_eq!((stats.streaming_list_requests, stats.lists), (1, 1));
        assert!(!stats.streaming_list_refused);
    }
    let lister: Lister<Widget> = typed.lister();
    assert_eq!(
        sorted_names(&lister.namespaced(&ns).by_palette("red")),
        ["a", "c"]
    );

    // Changes reach all three caches.
    api.create(&PostParams::default(), &widget("d", "red", 1))
        .await
        .unwrap();
    let patch = serde_json::json!({ "spec": { "palette": "blue" } });
    api.patch("a", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    let expected = ["a", "c", "d"];
    eventually("every cache to follow", WAIT, || {
        sorted_names(&typed.indexer().list()) == expected
            && sorted_names(&metadata.indexer().list()) == expected
            && sorted_names(&dynamic.indexer().list()) == expected
            && sorted_names(&lister.namespaced(&ns).by_palette("red")) == ["c", "d"]
    })
    .await;
    let a: Arc<DynamicObject> = dynamic.lister().namespaced(&ns).get("a").unwrap();
    assert_eq!(a.data["spec"]["palette"], "blue");
    factory.shutdown().await;
}

/// The widget controller's reconcile: keep one Gear `{name}-gear` with the widget's
/// size and its palette's color, and say so in an Event.
async fn paint_gear(widget: Arc<Widget>, ctx: Context<Widget>) -> Result<Action, kube::Error> {
    let ns = widget.namespace().unwrap_or_default();
    let Ok(palette) = ctx
        .lister::<Palette>()
        .namespaced(&ns)
        .get(&widget.spec.palette)
    else {
        return Ok(Action::Done); // the palette's creation will bring us back
    };
    let wanted = GearSpec {
        color: palette.spec.color.clone(),
        size: widget.spec.size,
    };
    let owned = ctx.owned::<Gear>(&widget);
    if owned
        .iter()
        .any(|gear| gear.spec.color == wanted.color && gear.spec.size == wanted.size)
    {
        return Ok(Action::Done);
    }
    let name = format!("{}-gear", widget.name_any());
    let gear = serde_json::json!({
        "apiVersion": "modern.informer.example.com/v1", "kind": "Gear",
        "metadata": { "name": name, "ownerReferences": [widget.controller_owner_ref(&())] },
        "spec": wanted,
    });
    ctx.api::<Gear>()
        .patch(
            &name,
            &PatchParams::apply("widget-controller").force(),
            &Patch::Apply(&gear),
        )
        .await?;
    ctx.publish(
        &widget,
        EventSpec::normal("Painted", "Reconcile").note(format!("painted {name}")),
    );
    Ok(Action::Done)
}

async fn wait_for_gear(gears: &Api<Gear>, name: &str, color: &str) {
    eventually_async(&format!("{name} to be {color}"), WAIT, || async {
        gears
            .get_opt(name)
            .await
            .unwrap()
            .is_some_and(|gear| gear.spec.color == color)
    })
    .await;
}

/// The controller on custom resources: a drifted owned Gear brings its Widget back
/// (owner reference), a changed Palette reaches the Widgets that use it (the typed
/// index), and the Event its reconcile publishes lands in the Events CRD.
#[tokio::test]
async fn the_controller_owns_and_watches_custom_resources() {
    let (env, ns) = setup("modern-controller").await;
    let client = env.client().unwrap();
    let palettes = Api::<Palette>::namespaced(client.clone(), &ns);
    let gears = Api::<Gear>::namespaced(client.clone(), &ns);
    let widgets = Api::<Widget>::namespaced(client.clone(), &ns);
    let palette = Palette::new(
        "warm",
        PaletteSpec {
            color: "red".into(),
        },
    );
    palettes
        .create(&PostParams::default(), &palette)
        .await
        .unwrap();
    widgets
        .create(&PostParams::default(), &widget("cog", "warm", 3))
        .await
        .unwrap();

    let factory =
        SharedInformerFactory::new(client.clone(), FactoryConfig::default().namespace(&ns));
    factory.informable::<Widget>();
    let controller = Controller::<Widget>::new(&factory).owns::<Gear>().watches(
        |palette: &Palette, widgets: &Lister<Widget>| {
            widgets
                .namespaced(&palette.namespace().unwrap_or_default())
                .by_palette(palette.name_any())
        },
    );
    let running = spawn(|stop| controller.run(paint_gear, backoff, stop));
    wait_for_gear(&gears, "cog-gear", "red").await;

    // The owned Gear drifts: its controller reference brings the Widget back.
    let drift = serde_json::json!({ "spec": { "color": "tampered" } });
    gears
        .patch("cog-gear", &PatchParams::default(), &Patch::Merge(&drift))
        .await
        .unwrap();
    wait_for_gear(&gears, "cog-gear", "red").await;

    // The palette changes: the `by_palette` index maps it to the Widget.
    let change = serde_json::json!({ "spec": { "color": "orange" } });
    palettes
        .patch("warm", &PatchParams::default(), &Patch::Merge(&change))
        .await
        .unwrap();
    wait_for_gear(&gears, "cog-gear", "orange").await;
    running.stop().await;
    factory.shutdown().await;

    // The server took the reconciles' Events.
    let events = Api::<Event>::namespaced(client, &ns)
        .list(&ListParams::default())
        .await
        .unwrap();
    let painted: Vec<&Event> = events
        .items
        .iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("cog"))
        .collect();
    assert!(!painted.is_empty(), "{events:#?}");
    assert!(
        painted
            .iter()
            .all(|e| e.reason.as_deref() == Some("Painted"))
    );
    assert_eq!(
        painted[0].reporting_controller.as_deref(),
        Some("widget-controller")
    );
}

/// Read-your-writes on custom resources: a reconcile that creates a child with a
/// generated name and asks to run again at once, 20 times per Widget on 4 workers,
/// never creates a second child (it waits until its cache has seen its own write).
/// And a finalizer's cleanup runs before a deleted Widget goes.
#[tokio::test]
async fn read_your_writes_and_finalizer_cleanup_on_custom_resources() {
    const FINALIZER: &str = "modern.informer.example.com/cleanup";
    let (env, ns) = setup("modern-ryw").await;
    let client = env.client().unwrap();
    let widgets = Api::<Widget>::namespaced(client.clone(), &ns);
    let gears = Api::<Gear>::namespaced(client.clone(), &ns);
    create_widgets(&widgets, (0..5).map(|i| format!("w{i}"))).await;

    let reconciles: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
    let reconcile = {
        let reconciles = Arc::clone(&reconciles);
        move |widget: Arc<Widget>, ctx: Context<Widget>| {
            let reconciles = Arc::clone(&reconciles);
            async move {
                let round = {
                    let mut reconciles = reconciles.lock().unwrap();
                    let round = reconciles.entry(widget.name_any()).or_default();
                    *round += 1;
                    *round
                };
                if ctx.owned::<Gear>(&widget).is_empty() {
                    let child = serde_json::json!({
                        "apiVersion": "modern.informer.example.com/v1", "kind": "Gear",
                        "metadata": {
                            "generateName": format!("{}-", widget.name_any()),
                            "ownerReferences": [widget.controller_owner_ref(&())],
                        },
                        "spec": { "color": "grey", "size": widget.spec.size },
                    });
                    let child: Gear = serde_json::from_value(child).unwrap();
                    ctx.api::<Gear>()
                        .create(&PostParams::default(), &child)
                        .await?;
                }
                Ok::<_, kube::Error>(if round < 20 {
                    Action::RequeueAfter(Duration::ZERO)
                } else {
                    Action::Done
                })
            }
        }
    };
    let cleaned: Arc<Mutex<Vec<String>>> = Arc::default();
    let factory =
        SharedInformerFactory::new(client.clone(), FactoryConfig::default().namespace(&ns));
    let controller = Controller::<Widget>::new(&factory)
        .owns::<Gear>()
        .workers(4)
        .finalizer(FINALIZER)
        .cleanup({
            let cleaned = Arc::clone(&cleaned);
            move |widget: Arc<Widget>, _ctx| {
                let cleaned = Arc::clone(&cleaned);
                async move {
                    cleaned.lock().unwrap().push(widget.name_any());
                    Ok::<_, kube::Error>(())
                }
            }
        });
    let running = spawn(|stop| controller.run(reconcile, backoff, stop));
    eventually(
        "20 reconciles of every Widget",
        Duration::from_secs(60),
        || {
            let reconciles = reconciles.lock().unwrap();
            reconciles.len() == 5 && reconciles.values().all(|n| *n >= 20)
        },
    )
    .await;
    let mut per_widget: BTreeMap<String, usize> = BTreeMap::new();
    for gear in gears.list(&ListParams::default()).await.unwrap() {
        *per_widget
            .entry(gear.owner_references()[0].name.clone())
            .or_default() += 1;
    }
    assert_eq!(
        per_widget,
        (0..5).map(|i| (format!("w{i}"), 1)).collect(),
        "exactly one child per Widget"
    );

    // Every Widget carries the finalizer; deleting one runs the cleanup, then it goes.
    let w0 = widgets.get("w0").await.unwrap();
    assert!(w0.finalizers().iter().any(|f| f == FINALIZER));
    widgets
        .delete("w0", &DeleteParams::default())
        .await
        .unwrap();
    eventually_async("w0 to be gone", WAIT, || async {
        widgets.get_opt("w0").await.unwrap().is_none()
    })
    .await;
    assert_eq!(*cleaned.lock().unwrap(), ["w0"]);
    running.stop().await;
    factory.shutdown().await;
}

/// Sharding with custom resources as primaries: two members in this process find each
/// other and split the keys; a sharded controller on each reconciles every Widget
/// created after they settled on exactly one member, the one that owns its key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shard_members_split_the_keys_and_each_widget_is_reconciled_on_one() {
    two_shard_members_reconcile_each_widget_on_one(ShardBy::Key).await;
}

/// The same by uid: the server sends each member only its share (the gate is on), and
/// each Widget is reconciled by the member its uid belongs to, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_shard_members_by_uid_reconcile_each_widget_on_the_member_of_its_uid() {
    two_shard_members_reconcile_each_widget_on_one(ShardBy::Uid).await;
}

async fn two_shard_members_reconcile_each_widget_on_one(by: ShardBy) {
    let (env, ns) = setup("modern-shard").await;
    let client = env.client().unwrap();
    let config = |identity: &str| {
        ShardConfig::new(ns.clone(), "widgets")
            .identity(identity)
            .lease_duration(Duration::from_secs(8))
            .renew_deadline(Duration::from_secs(6))
            .retry_period(Duration::from_millis(500))
            .shard_by(by)
    };
    let reconciled: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let mut handles = Vec::new();
    let mut members = Vec::new();
    let mut controllers = Vec::new();
    let mut factories = Vec::new();
    for identity in ["a", "b"] {
        let member = ShardMember::new(client.clone(), config(identity)).unwrap();
        let handle = member.handle();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        members.push((
            stop,
            tokio::spawn(member.run(async {
                stopped.await.ok();
            })),
        ));
        let factory =
            SharedInformerFactory::new(client.clone(), FactoryConfig::default().namespace(&ns));
        let reconcile = {
            let reconciled = Arc::clone(&reconciled);
            move |widget: Arc<Widget>, _ctx: Context<Widget>| {
                reconciled
                    .lock()
                    .unwrap()
                    .push((widget.name_any(), identity.to_owned()));
                async { Ok::<_, kube::Error>(Action::Done) }
            }
        };
        let controller = Controller::<Widget>::sharded(&factory, &handle);
        controllers.push(spawn(|stop| controller.run(reconcile, backoff, stop)));
        factories.push(factory);
        handles.push(handle);
    }
    // Settled once every one of 40 would-be objects is a's or b's, not both: both
    // published the view of two.
    let probes: Vec<ObjectMeta> = (0..40)
        .map(|i| ObjectMeta {
            namespace: Some(ns.clone()),
            name: Some(format!("s{i}")),
            uid: Some(format!("00000000-0000-4000-8000-{i:012}")),
            ..ObjectMeta::default()
        })
        .collect();
    eventually("both members to settle", Duration::from_secs(60), || {
        handles.iter().all(|h| h.members() == ["a", "b"])
            && probes.iter().all(|meta| {
                handles[0].may_reconcile_object(meta) != handles[1].may_reconcile_object(meta)
            })
    })
    .await;

    let widgets = Api::<Widget>::namespaced(client, &ns);
    create_widgets(&widgets, (0..40).map(|i| format!("s{i}"))).await;
    // Whose each Widget is, decided from the server's objects.
    let owners: BTreeMap<String, &str> = widgets
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|w| {
            let owner = if handles[0].in_shard_object(w.meta()) {
                "a"
            } else {
                "b"
            };
            (w.name_any(), owner)
        })
        .collect();
    let owned_by_a = owners.values().filter(|owner| **owner == "a").count();
    assert!((5..35).contains(&owned_by_a), "a owns {owned_by_a} of 40");
    eventually("every Widget reconciled", Duration::from_secs(60), || {
        let reconciled = reconciled.lock().unwrap();
        reconciled
            .iter()
            .map(|(name, _)| name)
            .collect::<BTreeSet<_>>()
            .len()
            == 40
    })
    .await;
    // A moment more for any second reconcile to show up.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let reconciled = reconciled.lock().unwrap().clone();
    let mut by_key: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, identity) in &reconciled {
        by_key
            .entry(name.clone())
            .or_default()
            .insert(identity.clone());
    }
    for (name, owner) in &owners {
        assert_eq!(
            by_key[name],
            BTreeSet::from([(*owner).to_owned()]),
            "{name} reconciled by its owner only"
        );
    }
    for running in controllers {
        running.stop().await;
    }
    for factory in factories {
        factory.shutdown().await;
    }
    for (stop, run) in members {
        stop.send(()).unwrap();
        tokio::time::timeout(WAIT, run).await.unwrap().unwrap();
    }
}

/// The palettes of the Widgets a cache holds, by name, read through a projection or
/// the full type.
fn palettes<K: Resource>(
    objects: &[Arc<K>],
    palette: impl Fn(&K) -> String,
) -> BTreeMap<String, (String, Option<String>)> {
    objects
        .iter()
        .map(|o| {
            (
                o.name_any(),
                (palette(o), o.meta().resource_version.clone()),
            )
        })
        .collect()
}

fn agree(full: &SharedIndexInformer<Widget>, view: &SharedIndexInformer<WidgetView>) -> bool {
    palettes(&full.indexer().list(), |w| w.spec.palette.clone())
        == palettes(&view.indexer().list(), |w| {
            w.spec
                .as_ref()
                .map(|s| s.palette.clone())
                .unwrap_or_default()
        })
}

/// A projection of a CRD and the full type agree, through a streaming list,
/// changes, a relist after 410 Gone (streamed too) and a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_projection_and_the_full_type_agree_through_streaming_lists_and_a_relist() {
    let env = uncached_env().await;
    let proxy = env.fault_proxy().await.unwrap();
    let ns = env.create_namespace("modern-projection").await.unwrap();
    let api = Api::<Widget>::namespaced(env.client().unwrap(), &ns);
    create_widgets(&api, (0..5).map(|i| format!("w-{i}"))).await;
    let informers = |client: kube::Client| {
        (
            SharedIndexInformer::new(Api::<Widget>::namespaced(client.clone(), &ns)),
            SharedIndexInformer::new(Api::<WidgetView>::namespaced(client, &ns)),
        )
    };
    let (full, view) = informers(proxy.client().unwrap());
    let running = (common::spawn_run(&full), common::spawn_run(&view));
    wait_for_cache_sync(&[&full, &view]).await;
    assert!(agree(&full, &view));
    assert_eq!(view.indexer().len(), 5);
    assert!(view.reflector_stats().unwrap().streaming_list_requests >= 1);

    let repaint = serde_json::json!({ "spec": { "palette": "red" } });
    api.patch("w-1", &PatchParams::default(), &Patch::Merge(&repaint))
        .await
        .unwrap();
    let resize = serde_json::json!({ "spec": { "size": 9 } });
    api.patch("w-2", &PatchParams::default(), &Patch::Merge(&resize))
        .await
        .unwrap();
    api.delete("w-3", &DeleteParams::default()).await.unwrap();
    eventually("the changes in both caches", WAIT, || {
        view.indexer().len() == 4 && agree(&full, &view)
    })
    .await;

    proxy.disconnect().await;
    api.patch("w-0", &PatchParams::default(), &Patch::Merge(&repaint))
        .await
        .unwrap();
    api.delete("w-4", &DeleteParams::default()).await.unwrap();
    create_widgets(&api, ["w-5".to_owned()]).await;
    env.compact_etcd().await.unwrap();
    proxy.reconnect().await.unwrap();
    eventually("the relists after 410", WAIT, || {
        full.reflector_stats().unwrap().expired >= 1
            && view.reflector_stats().unwrap().expired >= 1
            && sorted_names(&view.indexer().list()) == ["w-0", "w-1", "w-2", "w-5"]
            && agree(&full, &view)
    })
    .await;
    assert!(view.reflector_stats().unwrap().streaming_list_requests >= 2);
    running.0.stop().await;
    running.1.stop().await;

    let (full, view) = informers(env.client().unwrap());
    let running = (common::spawn_run(&full), common::spawn_run(&view));
    wait_for_cache_sync(&[&full, &view]).await;
    assert!(agree(&full, &view));
    assert_eq!(
        view.lister()
            .namespaced(&ns)
            .get("w-0")
            .unwrap()
            .spec
            .as_ref()
            .unwrap()
            .palette,
        "red"
    );
    running.0.stop().await;
    running.1.stop().await;
}

/// A projection of a resource the server does not serve fails to sync as the full
/// type does: the same error, naming the resource.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projection_of_an_unserved_resource_says_so_as_the_full_type_does() {
    let (env, ns) = setup("modern-unserved").await;
    let factory = SharedInformerFactory::new(
        env.client().unwrap(),
        FactoryConfig::default().namespace(ns.clone()),
    );
    let full = factory.informer::<Sprocket>();
    let view = factory.informer::<SprocketView>();
    factory.start();
    // Both failed their first list before the wait gives up, so that its error has a
    // reason to name (on a loaded machine the first list may take a while).
    eventually("both failed to list", WAIT, || {
        full.last_sync_error().is_some() && view.last_sync_error().is_some()
    })
    .await;
    let error = factory
        .wait_for_cache_sync_within(Duration::from_secs(3))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("sprockets.modern.informer.example.com is not served by the API server"),
        "{error}"
    );
    assert_eq!(
        view.last_sync_error().unwrap().to_string(),
        full.last_sync_error().unwrap().to_string()
    );
    assert_eq!(
        view.last_sync_error().unwrap().to_string(),
        "sprockets.modern.informer.example.com is not served by the API server"
    );
    factory.shutdown().await;
}
