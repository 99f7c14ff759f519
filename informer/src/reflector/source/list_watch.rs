//! [`ListWatch`]: a [`ListerWatcher`] made from two closures, client-go's
//! `cache.ListWatch{ListFunc, WatchFunc}`.
//!
//! Implementing [`ListerWatcher`] by hand means naming boxed futures and a struct to
//! hang them on. Most ad hoc sources (a filtered view of another client, a scripted
//! test double, a bridge from another event feed) are two functions; this type lets
//! them stay two `async move` closures.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use educe::Educe;
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};

use super::capabilities::Capabilities;
use super::lister_watcher::ListerWatcher;
use super::requests::{ListPage, ListRequest, WatchEvent, WatchRequest, WatchStream};
use super::versions::VersionSource;

type ListFn<K> =
    dyn Fn(ListRequest) -> BoxFuture<'static, Result<ListPage<K>, kube::Error>> + Send + Sync;
type WatchFn<K> =
    dyn Fn(WatchRequest) -> BoxFuture<'static, Result<WatchStream<K>, kube::Error>> + Send + Sync;

/// A [`ListerWatcher`] made from a list closure and a watch closure.
///
/// Each closure takes the request and returns any future (an `async move` block);
/// the watch future yields any `Stream` of events. Both are boxed here, so callers
/// never write `Box::pin`. The futures own what they use (`'static`): clone what a
/// closure captures into its `async move` block. Cloning a `ListWatch` shares the
/// closures.
///
/// ```
/// use futures::StreamExt;
/// use informer::reflector::source::{ListPage, ListWatch, WatchEvent};
/// use informer::shared_informer::{InformerConfig, SharedIndexInformer, wait_for_cache_sync};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// fn config_map(name: &str, version: &str) -> ConfigMap {
///     ConfigMap {
///         metadata: ObjectMeta {
///             name: Some(name.into()),
///             namespace: Some("default".into()),
///             resource_version: Some(version.into()),
///             ..ObjectMeta::default()
///         },
///         ..ConfigMap::default()
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap()
/// #     .block_on(async {
/// let source = ListWatch::new(
///     |_request| async move {
///         Ok(ListPage::new(vec![config_map("web", "1")], "1"))
///     },
///     // One change, then a watch that stays open (the server would end it at
///     // `request.timeout`).
///     |_request| async move {
///         let added = Ok(WatchEvent::Added(config_map("db", "2")));
///         Ok(futures::stream::iter([added]).chain(futures::stream::pending()))
///     },
/// );
///
/// let informer = SharedIndexInformer::with_config(source, InformerConfig::default())?;
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// let running = tokio::spawn({
///     let informer = informer.clone();
///     async move { informer.run(async { stopped.await.ok(); }).await }
/// });
/// wait_for_cache_sync(&[&informer]).await;
/// while informer.indexer().len() < 2 {
///     tokio::task::yield_now().await; // the watched "db" arrives just after the sync
/// }
/// stop.send(()).ok();
/// running.await??;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Educe)]
#[educe(Clone)]
pub struct ListWatch<K> {
    list: Arc<ListFn<K>>,
    watch: Arc<WatchFn<K>>,
    capabilities: Capabilities,
}

impl<K> fmt::Debug for ListWatch<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListWatch")
            .field("capabilities", &self.capabilities)
            .finish_non_exhaustive()
    }
}

impl<K: Send + 'static> ListWatch<K> {
    /// A lister-watcher that answers lists with `list` and watches with `watch`.
    pub fn new<L, LF, W, WF, S>(list: L, watch: W) -> Self
    where
        L: Fn(ListRequest) -> LF + Send + Sync + 'static,
        LF: Future<Output = Result<ListPage<K>, kube::Error>> + Send + 'static,
        W: Fn(WatchRequest) -> WF + Send + Sync + 'static,
        WF: Future<Output = Result<S, kube::Error>> + Send + 'static,
        S: Stream<Item = Result<WatchEvent<K>, kube::Error>> + Send + 'static,
    {
        Self {
            list: Arc::new(move |request| Box::pin(list(request))),
            watch: Arc::new(move |request| {
                let started = watch(request);
                Box::pin(async move { started.await.map(StreamExt::boxed) })
            }),
            capabilities: Capabilities::default(),
        }
    }
}

impl<K> ListWatch<K> {
    /// Says whether the watch closure serves streaming lists
    /// ([`WatchRequest::streaming_list`]): passes them on to something that does, or
    /// answers them with the initial events and the bookmark that ends them. Off by
    /// default; see [`Capabilities::streaming_list`](Capabilities#structfield.streaming_list).
    #[must_use]
    pub fn streaming_list(mut self, supported: bool) -> Self {
        self.capabilities.streaming_list = supported;
        self
    }

    /// Says whether the closures honour the requests' key filter
    /// ([`ListRequest::key_filter`], [`WatchRequest::key_filter`]): pass it on to
    /// something that does (an [`ApiListerWatcher`](super::ApiListerWatcher)'s
    /// `list` and `watch`), or leave out what it does not keep. Then the reflector
    /// does not filter again. Off by default: the reflector filters what the closures
    /// answer. See [`Capabilities::filters_keys`](Capabilities#structfield.filters_keys).
    #[must_use]
    pub fn filters_keys(mut self, honoured: bool) -> Self {
        self.capabilities.filters_keys = honoured;
        self
    }
}

impl<K> ListWatch<K> {
    /// Where consistency checks read what the server holds (none by default): the
    /// [`versions`](Capabilities#structfield.versions) of what the closures wrap, say, so that an
    /// informer over a wrapped lister-watcher can be checked against the real
    /// collection.
    #[must_use]
    pub fn versions(mut self, source: Option<Arc<dyn VersionSource>>) -> Self {
        self.capabilities.versions = source;
        self
    }
}

impl<K> ListerWatcher<K> for ListWatch<K> {
    fn list(&self, request: ListRequest) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>> {
        (self.list)(request)
    }

    fn watch(&self, request: WatchRequest) -> BoxFuture<'_, Result<WatchStream<K>, kube::Error>> {
        (self.watch)(request)
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities.clone()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::ResourceExt;

    use super::*;
    use crate::reflector::source::FakeSource;
    use crate::shared_informer::{
        InformerConfig, Notification, SharedIndexInformer, wait_for_cache_sync,
    };
    use crate::test_support::{config_map, spawn_run, version};

    /// The closures get the reflector's requests as they are, and what they answer
    /// reaches the informer's handlers.
    #[tokio::test(start_paused = true)]
    async fn closures_drive_an_informer_and_see_the_reflector_requests() {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let source = ListWatch::new(
            {
                let requests = Arc::clone(&requests);
                move |request: ListRequest| {
                    let line = format!("list {:?} {:?}", request.resource_version, request.limit);
                    requests.lock().unwrap().push(line);
                    async move {
                        Ok(ListPage {
                            items: vec![config_map("default/web", &[], 1)],
                            resource_version: "1".into(),
                            ..ListPage::default()
                        })
                    }
                }
            },
            {
                let requests = Arc::clone(&requests);
                move |request: WatchRequest| {
                    let line = format!("watch {:?}", request.resource_version);
                    requests.lock().unwrap().push(line);
                    async move {
                        let events = [
                            WatchEvent::Added(config_map("default/db", &[], 2)),
                            WatchEvent::Modified(config_map("default/web", &[], 3)),
                            WatchEvent::Deleted(config_map("default/db", &[], 4)),
                        ];
                        let events = futures::stream::iter(events.map(Ok));
                        Ok(events.chain(futures::stream::pending()))
                    }
                }
            },
        );
        let informer = SharedIndexInformer::with_config(source, InformerConfig::default())
            .expect("no indexes");
        let mut notifications = informer.subscribe().expect("subscribed");
        let (stop, running) = spawn_run(&informer);
        let mut seen = Vec::new();
        for _ in 0..4 {
            let line = match notifications.next().await.expect("a notification") {
                Notification::Add { object, .. } => format!("add {}", object.name_any()),
                Notification::Update { new, .. } => format!("update {}", new.name_any()),
                Notification::Delete(gone) => format!("delete {}", gone.object().name_any()),
            };
            seen.push(line);
        }
        // The informer's in-order queue delivers every change as it happened, across
        // objects.
        assert_eq!(seen, ["add web", "add db", "update web", "delete db"]);
        assert_eq!(
            *requests.lock().unwrap(),
            ["list \"0\" Some(500)", "watch \"1\""]
        );
        assert_eq!(informer.last_sync_resource_version(), "4");
        stop.send(()).ok();
        running.await.expect("joined").expect("ran");
    }

    /// client-go's other common use: a lister-watcher wrapped to change what it
    /// answers, here one namespace kept out of a fake source's collection.
    #[tokio::test]
    async fn closures_can_wrap_another_lister_watcher() {
        let source = FakeSource::new();
        source.add(config_map("kept/web", &[], 0));
        source.add(config_map("dropped/web", &[], 0));
        let kept = |obj: &ConfigMap| obj.namespace().as_deref() == Some("kept");
        let filtered = ListWatch::new(
            {
                let source = source.clone();
                move |request| {
                    let source = source.clone();
                    async move {
                        let mut page = source.list(request).await?;
                        page.items.retain(kept);
                        Ok(page)
                    }
                }
            },
            {
                let source = source.clone();
                move |request| {
                    let source = source.clone();
                    async move {
                        let events = source.watch(request).await?;
                        Ok(events.filter(move |event| {
                            let keep = match event {
                                Ok(
                                    WatchEvent::Added(obj)
                                    | WatchEvent::Modified(obj)
                                    | WatchEvent::Deleted(obj),
                                ) => kept(obj),
                                _ => true,
                            };
                            std::future::ready(keep)
                        }))
                    }
                }
            },
        );
        let informer = SharedIndexInformer::with_config(filtered, InformerConfig::default())
            .expect("no indexes");
        let (stop, running) = spawn_run(&informer);
        wait_for_cache_sync(&[&informer]).await;
        source.add(config_map("dropped/db", &[], 0));
        source.add(config_map("kept/db", &[], 0));
        while informer.last_sync_resource_version() != "4" {
            tokio::task::yield_now().await;
        }
        let mut cached: Vec<_> = informer
            .lister()
            .list_all()
            .iter()
            .map(|obj| {
                format!(
                    "{}@{}",
                    crate::key::ObjectKey::of(obj.as_ref()),
                    version(obj)
                )
            })
            .collect();
        cached.sort();
        assert_eq!(cached, ["kept/db@4", "kept/web@1"]);
        stop.send(()).ok();
        running.await.expect("joined").expect("ran");
    }

    /// A key filter is applied by the reflector unless the closures say they honour
    /// it: then what they answer is trusted as filtered. (These closures pass
    /// everything through, so the cache shows who filtered.)
    #[tokio::test]
    async fn the_reflector_filters_unless_the_closures_honour_the_key_filter() {
        use crate::reflector::{Config, FnKeyFilter};

        for honoured in [false, true] {
            let source = FakeSource::new();
            source.add(config_map("ns/kept", &[], 0));
            source.add(config_map("ns/other", &[], 0));
            let passing_all = ListWatch::new(
                {
                    let source = source.clone();
                    move |request| {
                        let source = source.clone();
                        async move { source.list(request).await }
                    }
                },
                {
                    let source = source.clone();
                    move |request| {
                        let source = source.clone();
                        async move { source.watch(request).await }
                    }
                },
            )
            .filters_keys(honoured);
            assert_eq!(passing_all.capabilities().filters_keys, honoured);
            let filter = Arc::new(FnKeyFilter::new(|_, name| name == "kept"));
            let options = InformerConfig::default().reflector(Config::default().key_filter(filter));
            let informer =
                SharedIndexInformer::with_config(passing_all, options).expect("no indexes");
            let (stop, running) = spawn_run(&informer);
            wait_for_cache_sync(&[&informer]).await;
            let mut cached: Vec<String> = informer
                .lister()
                .list_all()
                .iter()
                .map(|obj| obj.name_any())
                .collect();
            cached.sort();
            let expected: &[&str] = if honoured {
                &["kept", "other"]
            } else {
                &["kept"]
            };
            assert_eq!(cached, expected, "honoured: {honoured}");
            stop.send(()).ok();
            running.await.expect("joined").expect("ran");
        }
    }
}
