//! [`ApiListerWatcher`]: the [`ListerWatcher`] that lists and watches through the API
//! server.
//!
//! It talks to the API server through a [`kube::Client`] but decodes responses itself
//! (see [`decode`](super::decode)): each list item and each watch event is decoded on
//! its own, so an object that does not fit the Rust type (say a CRD object that
//! violates its schema) becomes one [`WatchEvent::Undecodable`](super::WatchEvent::Undecodable) or one entry in
//! [`ListPage::undecodable`], never an error that fails the whole list or stream.
//!
//! # Metadata only
//! For a type whose [`Resource::metadata_api`] says so, such as
//! [`PartialObjectMeta<K>`](kube::core::PartialObjectMeta), it asks the server for
//! `meta.k8s.io/v1` `PartialObjectMetadata` through content negotiation (client-go's
//! metadata informer, kube-runtime's `metadata_watcher`): lists send
//! `Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` and
//! watches `as=PartialObjectMetadata`, so the server leaves out everything but
//! `metadata` (and `kind`/`apiVersion`, which then say `PartialObjectMetadata` and
//! `meta.k8s.io/v1`) and the client decodes only that.
//!
//! # Known at run time
//! A type whose kind is known only at run time ([`kube::core::DynamicObject`] with its
//! [`ApiResource`](kube::core::ApiResource)) is listed and watched the same way, made
//! with [`new_with`](ApiListerWatcher::new_with) or
//! [`in_namespace_with`](ApiListerWatcher::in_namespace_with).

use educe::Educe;
use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{AsyncBufReadExt, StreamExt};
use kube::Resource;

use kube::core::{DynamicObject, TypeMeta};
use serde::de::DeserializeOwned;

use super::api_versions::{ApiVersions, METADATA_ACCEPT, METADATA_LIST_ACCEPT};
use super::capabilities::Capabilities;
use super::decode::{
    ListDecoder, ManagedFields, decode_event, decode_list_stream, last_decoded_size,
};
use super::decoded_sizes::DecodedSizes;
use super::lister_watcher::ListerWatcher;
use super::managed_fields_opt_out::ManagedFieldsOptOut;
use super::query::{Match, collection_url, list_params, watch_params};
use super::requests::{ListOptions, ListPage, ListRequest, WatchEvent, WatchRequest, WatchStream};
use super::server_shards::{InitialEvents, ServerShards, Step};
use super::versions::VersionSource;
use crate::cached::CachedObjects;
use crate::object::{DynamicTypeOf, Object, ResourceOf};
use crate::reflector::key_filter::ShardSelector;

/// The kind of the objects the server sends for a metadata-only request.
const METADATA_KIND: &str = "PartialObjectMetadata";

/// A [`ListerWatcher`] backed by the API server, built from a [`kube::Api`] (which
/// decides namespaced or all namespaces).
///
/// Objects are decoded without `metadata.managedFields` unless
/// [`managed_fields`](Self::managed_fields) says [`ManagedFields::Keep`].
///
/// Errors name the resource (`deployments.apps`) and, when the API server cannot be
/// reached, its address: the one given to [`server_url`](Self::server_url) (a
/// [`kube::Client`] does not tell its own), else the socket address the connection
/// failed at, when the error says.
#[derive(Educe)]
#[educe(Clone)]
pub struct ApiListerWatcher<K> {
    client: kube::Client,
    url: String,
    /// The kind the server sends: `K`'s, or `PartialObjectMetadata` for metadata only.
    kind: String,
    /// Whether `K` asks for metadata only ([`Resource::metadata_api`]).
    metadata_only: bool,
    /// `K`'s kind and apiVersion, for list items of a [`DynamicObject`] (see
    /// [`fill_types`]).
    types: TypeMeta,
    /// `plural.group`, or `plural` for the core group.
    resource: String,
    server_url: Option<String>,
    options: ListOptions,
    managed_fields: ManagedFields,
    /// What the decoded objects weigh (shared by clones).
    sizes: Arc<DecodedSizes>,
    /// Whether the server filters by shard selector (shared by clones).
    shards: Arc<ServerShards>,
    /// Whether to ask the server to leave managedFields out (shared by clones).
    opt_out: Arc<ManagedFieldsOptOut>,
    _type: PhantomData<fn() -> K>,
}

impl<K> fmt::Debug for ApiListerWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiListerWatcher")
            .field("url", &self.url)
            .field("kind", &self.kind)
            .field("metadata_only", &self.metadata_only)
            .field("resource", &self.resource)
            .field("server_url", &self.server_url)
            .field("options", &self.options)
            .field("managed_fields", &self.managed_fields)
            .finish()
    }
}

impl<K> ApiListerWatcher<K>
where
    K: Resource,
    K::DynamicType: Default,
{
    /// Lists and watches what `api` addresses: `Api::all` for every namespace,
    /// `Api::namespaced` for one.
    pub fn new(api: kube::Api<K>) -> Self {
        Self::new_with(api, &K::DynamicType::default())
    }
}

impl<K> ApiListerWatcher<K>
where
    K: Object,
    DynamicTypeOf<K>: Default,
{
    /// Lists and watches `K` in `namespace`, or in all namespaces (and for
    /// cluster-scoped types) with `None`.
    pub fn in_namespace(client: kube::Client, namespace: Option<&str>) -> Self {
        Self::in_namespace_with(client, &DynamicTypeOf::<K>::default(), namespace)
    }
}

impl<K: Resource> ApiListerWatcher<K> {
    /// Like [`ApiListerWatcher::new`], for types whose kind is known at run time.
    pub fn new_with(api: kube::Api<K>, dynamic_type: &K::DynamicType) -> Self {
        let url = api.resource_url().to_owned();
        Self::at_url(api.into_client(), url, dynamic_type)
    }
}

impl<K: Object> ApiListerWatcher<K> {
    /// Like [`ApiListerWatcher::in_namespace`], for types whose kind is known at run
    /// time: lists and watches the resource `dynamic_type` describes (a
    /// [`DynamicObject`](kube::core::DynamicObject)'s
    /// [`ApiResource`](kube::core::ApiResource)) in `namespace`, or in all namespaces
    /// (and for cluster-scoped resources) with `None`.
    pub fn in_namespace_with(
        client: kube::Client,
        dynamic_type: &DynamicTypeOf<K>,
        namespace: Option<&str>,
    ) -> Self {
        let url = ResourceOf::<K>::url_path(dynamic_type, namespace);
        Self::at_url(client, url, dynamic_type)
    }

    fn at_url(client: kube::Client, url: String, dynamic_type: &DynamicTypeOf<K>) -> Self {
        let metadata_only = ResourceOf::<K>::metadata_api();
        let kind = if metadata_only {
            METADATA_KIND.to_owned()
        } else {
            ResourceOf::<K>::kind(dynamic_type).into_owned()
        };
        let types = TypeMeta {
            api_version: ResourceOf::<K>::api_version(dynamic_type).into_owned(),
            kind: ResourceOf::<K>::kind(dynamic_type).into_owned(),
        };
        Self {
            client,
            url,
            kind,
            metadata_only,
            types,
            resource: resource_name::<ResourceOf<K>>(dynamic_type),
            server_url: None,
            options: ListOptions::default(),
            managed_fields: ManagedFields::default(),
            sizes: Arc::default(),
            shards: Arc::default(),
            opt_out: Arc::new(ManagedFieldsOptOut::new(true)),
            _type: PhantomData,
        }
    }

    /// Whether this asks the server for metadata only (`PartialObjectMetadata`):
    /// `K`'s [`Resource::metadata_api`], true for
    /// [`PartialObjectMeta`](kube::core::PartialObjectMeta).
    pub fn is_metadata_only(&self) -> bool {
        self.metadata_only
    }

    /// The API server's address (the `cluster_url` of the [`kube::Config`] the client
    /// was made from), for errors to name when the server cannot be reached.
    #[must_use]
    pub fn server_url(mut self, url: impl Into<String>) -> Self {
        self.server_url = Some(url.into());
        self
    }

    /// Only objects matching this label selector.
    #[must_use]
    pub fn labels(mut self, selector: impl Into<String>) -> Self {
        self.options.label_selector = Some(selector.into());
        self
    }

    /// Only objects matching this field selector.
    #[must_use]
    pub fn fields(mut self, selector: impl Into<String>) -> Self {
        self.options.field_selector = Some(selector.into());
        self
    }

    /// Lets `tweak` change the options once, here (the options are then sent with
    /// every list and watch).
    #[must_use]
    pub fn tweak(mut self, tweak: impl FnOnce(&mut ListOptions)) -> Self {
        tweak(&mut self.options);
        self
    }

    /// The options sent with every list and watch.
    pub fn options(&self) -> &ListOptions {
        &self.options
    }

    /// Whether decoded objects keep `metadata.managedFields`; by default they are
    /// dropped while decoding (see [`ManagedFields`]), and the server is asked to leave
    /// them out where it can (Kubernetes 1.37's KEP-5958; a server without it ignores
    /// the request).
    #[must_use]
    pub fn managed_fields(mut self, managed_fields: ManagedFields) -> Self {
        self.managed_fields = managed_fields;
        self.opt_out = Arc::new(ManagedFieldsOptOut::new(
            managed_fields == ManagedFields::Drop,
        ));
        self
    }

    fn url(&self, params: &[(&str, String)], shard_selector: Option<&str>) -> String {
        collection_url(&self.url, params, shard_selector, &self.options)
    }
}

impl<K> ApiListerWatcher<K>
where
    K: Object + DeserializeOwned + Send + Sync + 'static,
{
    /// The body of one list request with `params` (and `shard_selector`).
    async fn list_body(
        &self,
        params: &[(&str, String)],
        shard_selector: Option<&str>,
    ) -> Result<impl futures::AsyncBufRead + Unpin + use<K>, kube::Error> {
        let base = self.metadata_only.then_some(METADATA_LIST_ACCEPT);
        self.without_managed_fields(|| {
            let mut http = http::Request::get(self.url(params, shard_selector));
            if let Some(accept) = self.opt_out.accept(base) {
                http = http.header(http::header::ACCEPT, accept);
            }
            let http = http.body(Vec::new()).map_err(kube::Error::HttpError)?;
            Ok(self.client.request_stream(http))
        })
        .await
    }

    /// One list request, decoded as it streams in; objects that `cache` holds at the
    /// listed resourceVersion are taken from it instead of decoded.
    async fn list_page(
        &self,
        request: ListRequest,
        cache: Option<Arc<dyn CachedObjects<K>>>,
    ) -> Result<ListPage<K>, kube::Error> {
        let params = list_params(&request, Match::NotOlderThan);
        let step = if request.continue_token.is_none() {
            Step::Starts
        } else {
            Step::Continues
        };
        let selector = self.shards.selector(request.key_filter.as_ref(), step);
        let query = selector.as_ref().map(ShardSelector::to_query);
        let body = self
            .with_selector(query.as_deref(), |selector| {
                self.list_body(&params, selector)
            })
            .await?;
        if request.continue_token.is_none() {
            self.sizes.list_started();
        }
        let first_item = |item: &[u8]| self.opt_out.first_listed(&self.resource, item);
        let decoder = ListDecoder::new(&self.kind, self.managed_fields, cache.as_deref())
            .key_filter(request.key_filter.as_ref())
            .sizes(Some(&self.sizes))
            .first_item(&first_item);
        let mut page = decode_list_stream(body, decoder).await?;
        if let Some(selector) = &self.shards.still_sent(selector) {
            let kept = page.items.len() + page.unchanged.len() + page.undecodable.len();
            self.shards.listed(
                &self.resource,
                selector,
                page.served_shard,
                kept,
                page.filtered_out,
            );
        }
        fill_types(&mut page.items, &self.types);
        self.sizes
            .list_page(page.items.len() + page.unchanged.len());
        if page.continue_token.is_none() {
            self.sizes.list_finished();
        }
        Ok(page)
    }
}

impl<K: Object> ApiListerWatcher<K> {
    /// `send`'s answer with the shard `selector`; where the answer says the request
    /// cannot carry it (a 414, a refusal), its answer without it (see
    /// [`ServerShards::send`]).
    async fn with_selector<'s, T, F>(
        &self,
        selector: Option<&'s str>,
        send: impl Fn(Option<&'s str>) -> F,
    ) -> Result<T, kube::Error>
    where
        F: std::future::Future<Output = Result<T, kube::Error>>,
    {
        self.shards.send(&self.resource, selector, send).await
    }

    /// `send`'s answer, asking the server to leave managedFields out where that is
    /// asked for; if the server refuses to (406), `send`'s answer without, and it is
    /// not asked again.
    async fn without_managed_fields<T, F>(
        &self,
        send: impl Fn() -> Result<F, kube::Error>,
    ) -> Result<T, kube::Error>
    where
        F: std::future::Future<Output = Result<T, kube::Error>>,
    {
        let asked = self.opt_out.asked();
        match send()?.await {
            Err(e) if asked && self.opt_out.refused(&self.resource, &e) => send()?.await,
            answer => answer,
        }
    }

    /// The body of one watch request with `params` (and `shard_selector`).
    async fn watch_body(
        &self,
        params: &[(&str, String)],
        shard_selector: Option<&str>,
    ) -> Result<impl futures::AsyncBufRead + Unpin + use<K>, kube::Error> {
        let base = self.metadata_only.then_some(METADATA_ACCEPT);
        self.without_managed_fields(|| {
            let mut http = http::Request::get(self.url(params, shard_selector))
                // Watch streams must not be compressed: each event is read as it comes.
                .header(http::header::ACCEPT_ENCODING, "identity");
            if let Some(accept) = self.opt_out.accept(base) {
                http = http.header(http::header::ACCEPT, accept);
            }
            let http = http.body(Vec::new()).map_err(kube::Error::HttpError)?;
            Ok(self.client.request_stream(http))
        })
        .await
    }
}

impl<K> ListerWatcher<K> for ApiListerWatcher<K>
where
    K: Object + DeserializeOwned + Send + Sync + 'static,
{
    fn list(&self, request: ListRequest) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>> {
        Box::pin(self.list_page(request, None))
    }

    fn list_reusing(
        &self,
        request: ListRequest,
        cache: Arc<dyn CachedObjects<K>>,
    ) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>> {
        Box::pin(self.list_page(request, Some(cache)))
    }

    /// Streaming lists: the API server serves them from 1.27 on (a beta feature on
    /// by default from 1.32); older servers, or ones with the feature off, refuse them
    /// with an error status, and the reflector falls back to list and watch. Key
    /// filters: objects a request's filter does not keep are skipped before they are
    /// decoded (only their namespace and name are read). Versions: metadata-only
    /// requests to the same collection, with the same selectors.
    fn capabilities(&self) -> Capabilities {
        let versions: Arc<dyn VersionSource> = Arc::new(ApiVersions {
            client: self.client.clone(),
            url: self.url.clone(),
            options: self.options.clone(),
        });
        let capabilities = Capabilities::default()
            .streaming_list(true)
            .filters_keys(true)
            .resource(self.resource.as_str())
            .decoded_sizes(Arc::clone(&self.sizes))
            .versions(Some(versions));
        match &self.server_url {
            Some(url) => capabilities.server_url(url.as_str()),
            None => capabilities,
        }
    }

    fn server_filters_shards(&self) -> Option<bool> {
        self.shards.said()
    }

    fn watch(&self, request: WatchRequest) -> BoxFuture<'_, Result<WatchStream<K>, kube::Error>> {
        Box::pin(async move {
            let params = watch_params(&request);
            // A streaming list starts a list; a watch goes on from one.
            let step = if request.streaming_list {
                Step::Starts
            } else {
                Step::Continues
            };
            let selector = self.shards.selector(request.key_filter.as_ref(), step);
            let query = selector.as_ref().map(ShardSelector::to_query);
            let body = self
                .with_selector(query.as_deref(), |selector| {
                    self.watch_body(&params, selector)
                })
                .await?;
            if request.streaming_list {
                self.sizes.list_started();
            }
            // A streaming list's initial events tell whether the server filtered.
            let sent = self.shards.still_sent(selector);
            let evidence = sent.filter(|_| request.streaming_list).map(|selector| {
                InitialEvents::new(Arc::clone(&self.shards), &self.resource, selector)
            });
            let decoding = (
                self.kind.clone(),
                request.key_filter,
                Arc::clone(&self.sizes),
                // The first object of a watch tells whether managedFields were left out.
                Some((Arc::clone(&self.opt_out), self.resource.clone())),
            );
            let managed_fields = self.managed_fields;
            // One event per line, read into a buffer reused from line to line.
            let events = futures::stream::unfold(
                (body, Vec::new(), decoding, evidence),
                move |(mut body, mut line, mut decoding, mut evidence)| async move {
                    let (kind, key_filter, sizes, opt_out) = &mut decoding;
                    loop {
                        line.clear();
                        let event = match body.read_until(b'\n', &mut line).await {
                            Ok(0) => return None,
                            Ok(_) if line.trim_ascii().is_empty() => continue,
                            Ok(_) => {
                                let event =
                                    decode_event(&line, kind, managed_fields, key_filter.as_ref());
                                count(sizes, &event);
                                if matches!(
                                    event,
                                    Ok(WatchEvent::Added(_) | WatchEvent::Modified(_))
                                ) && let Some((opt_out, resource)) = opt_out.take()
                                {
                                    opt_out.first_listed(&resource, &line);
                                }
                                if evidence.as_mut().is_some_and(|e| e.ended_by(&event)) {
                                    evidence = None;
                                }
                                event
                            }
                            // A cut or timed-out connection ends the watch like a server
                            // close: the reflector resumes from the last resourceVersion
                            // it saw.
                            Err(e) if is_disconnect(&e) => {
                                tracing::debug!(error = ?e, "watch connection closed");
                                return None;
                            }
                            Err(e) => Err(kube::Error::ReadEvents(e)),
                        };
                        return Some((event, (body, line, decoding, evidence)));
                    }
                },
            );
            Ok(events.boxed())
        })
    }
}

/// Counts a decoded watch event into `sizes`: the object's size (measured while
/// it was decoded, just now on this thread), and the collection's change.
fn count<K>(sizes: &DecodedSizes, event: &Result<WatchEvent<K>, kube::Error>) {
    match event {
        Ok(WatchEvent::Added(_)) => {
            sizes.record(last_decoded_size());
            sizes.watch_added();
        }
        Ok(WatchEvent::Modified(_)) => sizes.record(last_decoded_size()),
        Ok(WatchEvent::Deleted(_)) => {
            sizes.record(last_decoded_size());
            sizes.watch_deleted();
        }
        Ok(WatchEvent::Bookmark {
            initial_events_end: true,
            ..
        }) => sizes.list_finished(),
        _ => {}
    }
}

/// Gives each [`DynamicObject`] of a list its `kind` and `apiVersion`, as client-go does
/// for unstructured lists. The server writes them once for the whole list, not per
/// item; a typed object does not need them (its type knows them), but a
/// `DynamicObject` is its JSON, and one sent back to the server as cached (an
/// `Api::replace`) without them is refused. Objects of other types are left as they
/// are, and looked at no further than the first.
fn fill_types<K: 'static>(items: &mut [K], types: &TypeMeta) {
    for item in items {
        let Some(object) = (item as &mut dyn Any).downcast_mut::<DynamicObject>() else {
            return;
        };
        object.types.get_or_insert_with(|| types.clone());
    }
}

/// `plural.group` (`deployments.apps`), or `plural` for the core group (`configmaps`):
/// the resource as `kubectl` names it.
fn resource_name<K: Resource>(dynamic_type: &K::DynamicType) -> String {
    let plural = K::plural(dynamic_type);
    let group = K::group(dynamic_type);
    if group.is_empty() {
        plural.into_owned()
    } else {
        format!("{plural}.{group}")
    }
}

/// Whether a read error means the connection went away (rather than, say, a broken
/// response). hyper and rustls nest the cause a few levels deep.
fn is_disconnect(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{
        BrokenPipe, ConnectionAborted, ConnectionReset, TimedOut, UnexpectedEof,
    };
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cause {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                UnexpectedEof | ConnectionReset | ConnectionAborted | BrokenPipe | TimedOut
            ) {
                return true;
            }
            // io::Error::other(inner) hides `inner` from `source()`.
            if let Some(inner) = io.get_ref() {
                cause = Some(inner);
                continue;
            }
        }
        cause = err.source();
    }
    let text = format!("{e:?}");
    text.contains("UnexpectedEof") || text.contains("unexpected EOF")
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn resources_are_named_plural_dot_group_and_core_ones_plural() {
        use k8s_openapi::api::apps::v1::Deployment;
        use k8s_openapi::api::core::v1::ConfigMap;
        assert_eq!(resource_name::<Deployment>(&()), "deployments.apps");
        assert_eq!(resource_name::<ConfigMap>(&()), "configmaps");
    }

    /// List items of a `DynamicObject` get the kind the list is of (kept when they have
    /// one); other types are left alone.
    #[test]
    fn dynamic_list_items_get_their_kind_and_api_version() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let types = TypeMeta {
            api_version: "example.com/v1".into(),
            kind: "Backup".into(),
        };
        let own = TypeMeta {
            api_version: "v1".into(),
            kind: "Other".into(),
        };
        let mut items = vec![DynamicObject::new(
            "a",
            &kube::core::ApiResource::erase::<ConfigMap>(&()),
        )];
        items[0].types = None;
        items.push(items[0].clone());
        items[1].types = Some(own.clone());
        fill_types(&mut items, &types);
        assert_eq!(items[0].types.as_ref(), Some(&types));
        assert_eq!(items[1].types.as_ref(), Some(&own));
        let mut typed = vec![ConfigMap::default()];
        fill_types(&mut typed, &types);
        assert_eq!(typed[0], ConfigMap::default());
    }
}
