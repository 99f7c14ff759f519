//! Listing and watching one resource type: the reflector's only view of the server.
//!
//! [`ListerWatcher`] is the seam client-go calls `ListerWatcher`: the reflector asks
//! for list pages and watch streams, and anything that can answer (the API server
//! through [`ApiListerWatcher`], or a test double) can serve it.
//!
//! [`ApiListerWatcher`] talks to the API server through a [`kube::Client`] but decodes
//! responses itself: each list item and each watch event is decoded on its own, so an
//! object that does not fit the Rust type (say a CRD object that violates its schema)
//! becomes one [`WatchEvent::Undecodable`] or one entry in
//! [`ListPage::undecodable`], never an error that fails the whole list or stream.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
use kube::Resource;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::error::{DecodeError, ReflectorError};

/// What to list: one page, or the whole collection when `limit` is `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListRequest {
    /// `resourceVersion`: `"0"` lets the server answer from its watch cache, `""` asks
    /// for a consistent read from etcd, anything else means "at least this recent".
    pub resource_version: String,
    /// Page size (`limit`); `None` lists everything at once.
    pub limit: Option<u32>,
    /// The `continue` token of the previous page.
    pub continue_token: Option<String>,
}

/// One page of a list.
#[derive(Debug)]
pub struct ListPage<K> {
    /// The objects that decoded.
    pub items: Vec<K>,
    /// The objects that did not decode, skipped.
    pub undecodable: Vec<DecodeError>,
    /// The list's resourceVersion.
    pub resource_version: String,
    /// The token for the next page, when there is one.
    pub continue_token: Option<String>,
}

/// What to watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchRequest {
    /// Watch changes after this resourceVersion.
    pub resource_version: String,
    /// The server ends the watch after this long (`timeoutSeconds`).
    pub timeout: Duration,
    /// Ask for BOOKMARK events (`allowWatchBookmarks`).
    pub allow_bookmarks: bool,
}

/// One event of a watch stream.
#[derive(Debug)]
pub enum WatchEvent<K> {
    /// The object was created (or first seen).
    Added(K),
    /// The object changed.
    Modified(K),
    /// The object was deleted; this is its last state.
    Deleted(K),
    /// Nothing changed, but the collection reached this resourceVersion.
    Bookmark {
        /// The resourceVersion to resume from.
        resource_version: String,
    },
    /// An event whose object did not decode (or was of another kind); the reflector
    /// reports it and goes on.
    Undecodable(ReflectorError),
}

/// A stream of watch events; it ends when the server closes the watch.
pub type WatchStream<K> = BoxStream<'static, Result<WatchEvent<K>, kube::Error>>;

/// Lists and watches one resource type; see the [module docs](crate::reflector).
pub trait ListerWatcher<K>: Send + Sync {
    /// Lists one page (or all) of the collection.
    fn list(&self, request: ListRequest) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>>;

    /// Starts a watch. An error here (or an error item in the stream) with status 410
    /// means the resourceVersion is too old.
    fn watch(&self, request: WatchRequest) -> BoxFuture<'_, Result<WatchStream<K>, kube::Error>>;
}

/// Changes the selectors of every list and watch, like client-go's
/// `TweakListOptionsFunc`.
pub type TweakListOptions = Arc<dyn Fn(&mut ListOptions) + Send + Sync>;

/// Options sent with every list and watch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// `labelSelector`, in the API server's grammar, e.g. `app=web,tier!=db`.
    pub label_selector: Option<String>,
    /// `fieldSelector`, e.g. `metadata.name=demo`.
    pub field_selector: Option<String>,
}

/// A [`ListerWatcher`] backed by the API server, built from a [`kube::Api`] (which
/// decides namespaced or all namespaces).
pub struct ApiListerWatcher<K> {
    client: kube::Client,
    url: String,
    kind: String,
    options: ListOptions,
    _type: PhantomData<fn() -> K>,
}

impl<K> Clone for ApiListerWatcher<K> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            url: self.url.clone(),
            kind: self.kind.clone(),
            options: self.options.clone(),
            _type: PhantomData,
        }
    }
}

impl<K> fmt::Debug for ApiListerWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiListerWatcher")
            .field("url", &self.url)
            .field("kind", &self.kind)
            .field("options", &self.options)
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

    /// Lists and watches `K` in `namespace`, or in all namespaces (and for
    /// cluster-scoped types) with `None`.
    pub fn in_namespace(client: kube::Client, namespace: Option<&str>) -> Self {
        let dynamic_type = K::DynamicType::default();
        Self {
            client,
            url: K::url_path(&dynamic_type, namespace),
            kind: K::kind(&dynamic_type).into_owned(),
            options: ListOptions::default(),
            _type: PhantomData,
        }
    }
}

impl<K: Resource> ApiListerWatcher<K> {
    /// Like [`ApiListerWatcher::new`], for types whose kind is known at run time.
    pub fn new_with(api: kube::Api<K>, dynamic_type: &K::DynamicType) -> Self {
        let url = api.resource_url().to_owned();
        Self {
            client: api.into_client(),
            url,
            kind: K::kind(dynamic_type).into_owned(),
            options: ListOptions::default(),
            _type: PhantomData,
        }
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

    fn url(&self, params: &[(&str, &str)]) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (key, value) in params {
            query.append_pair(key, value);
        }
        if let Some(labels) = &self.options.label_selector {
            query.append_pair("labelSelector", labels);
        }
        if let Some(fields) = &self.options.field_selector {
            query.append_pair("fieldSelector", fields);
        }
        format!("{}?{}", self.url, query.finish())
    }
}

impl<K> ListerWatcher<K> for ApiListerWatcher<K>
where
    K: Resource + DeserializeOwned + Send + 'static,
{
    fn list(&self, request: ListRequest) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>> {
        Box::pin(async move {
            let limit = request.limit.map(|l| l.to_string());
            let mut params = Vec::with_capacity(3);
            if let Some(token) = &request.continue_token {
                // A continue token carries the list's resourceVersion itself.
                params.push(("continue", token.as_str()));
            } else {
                params.push(("resourceVersion", request.resource_version.as_str()));
            }
            if let Some(limit) = &limit {
                params.push(("limit", limit));
            }
            let http = http::Request::get(self.url(&params))
                .body(Vec::new())
                .map_err(kube::Error::HttpError)?;
            let text = self.client.request_text(http).await?;
            decode_list(&text, &self.kind)
        })
    }

    fn watch(&self, request: WatchRequest) -> BoxFuture<'_, Result<WatchStream<K>, kube::Error>> {
        Box::pin(async move {
            let timeout = request.timeout.as_secs().max(1).to_string();
            let mut params = vec![
                ("watch", "true"),
                ("resourceVersion", request.resource_version.as_str()),
                ("timeoutSeconds", timeout.as_str()),
            ];
            if request.allow_bookmarks {
                params.push(("allowWatchBookmarks", "true"));
            }
            let http = http::Request::get(self.url(&params))
                // Watch streams must not be compressed: each event is read as it comes.
                .header(http::header::ACCEPT_ENCODING, "identity")
                .body(Vec::new())
                .map_err(kube::Error::HttpError)?;
            let body = self.client.request_stream(http).await?;
            let kind = self.kind.clone();
            let events = body
                .lines()
                // A cut or timed-out connection ends the watch like a server close:
                // the reflector resumes from the last resourceVersion it saw.
                .take_while(|line| {
                    let disconnected = matches!(line, Err(e) if is_disconnect(e));
                    if disconnected {
                        tracing::debug!(error = ?line.as_ref().err(), "watch connection closed");
                    }
                    futures::future::ready(!disconnected)
                })
                .map_err(kube::Error::ReadEvents)
                .try_filter_map(move |line| {
                    let event = if line.trim().is_empty() {
                        Ok(None)
                    } else {
                        decode_event(&line, &kind).map(Some)
                    };
                    futures::future::ready(event)
                });
            Ok(events.boxed())
        })
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

#[derive(Deserialize)]
struct RawList<'a> {
    #[serde(default)]
    metadata: RawListMeta,
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawListMeta {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(borrow)]
    object: &'a RawValue,
}

/// Just enough of an object to name it in an error.
#[derive(Deserialize, Default)]
struct RawHeader {
    #[serde(default)]
    metadata: RawObjectMeta,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct RawObjectMeta {
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    resource_version: Option<String>,
}

impl RawHeader {
    fn read(raw: &RawValue) -> Self {
        serde_json::from_str(raw.get()).unwrap_or_default()
    }

    fn key(&self) -> String {
        let name = self.metadata.name.as_deref().unwrap_or("<unnamed>");
        match &self.metadata.namespace {
            Some(ns) => format!("{ns}/{name}"),
            None => name.to_owned(),
        }
    }
}

fn decode_object<K: DeserializeOwned>(raw: &RawValue, kind: &str) -> Result<K, DecodeError> {
    serde_json::from_str(raw.get()).map_err(|source| {
        let header = RawHeader::read(raw);
        DecodeError {
            kind: kind.to_owned(),
            key: header.key(),
            resource_version: header.metadata.resource_version,
            source,
        }
    })
}

fn decode_list<K: DeserializeOwned>(text: &str, kind: &str) -> Result<ListPage<K>, kube::Error> {
    let list: RawList<'_> = serde_json::from_str(text).map_err(kube::Error::SerdeError)?;
    let raw_items = list.items.unwrap_or_default();
    let mut items = Vec::with_capacity(raw_items.len());
    let mut undecodable = Vec::new();
    for raw in raw_items {
        match decode_object(raw, kind) {
            Ok(object) => items.push(object),
            Err(e) => undecodable.push(e),
        }
    }
    Ok(ListPage {
        items,
        undecodable,
        resource_version: list.metadata.resource_version.unwrap_or_default(),
        continue_token: list.metadata.continue_token.filter(|t| !t.is_empty()),
    })
}

fn decode_event<K: DeserializeOwned>(line: &str, kind: &str) -> Result<WatchEvent<K>, kube::Error> {
    let event: RawEvent<'_> = serde_json::from_str(line).map_err(kube::Error::SerdeError)?;
    let wrap: fn(K) -> WatchEvent<K> = match event.kind {
        "ADDED" => WatchEvent::Added,
        "MODIFIED" => WatchEvent::Modified,
        "DELETED" => WatchEvent::Deleted,
        "BOOKMARK" => {
            let header = RawHeader::read(event.object);
            return Ok(WatchEvent::Bookmark {
                resource_version: header.metadata.resource_version.unwrap_or_default(),
            });
        }
        "ERROR" => {
            let status: kube::core::Status =
                serde_json::from_str(event.object.get()).map_err(kube::Error::SerdeError)?;
            return Err(kube::Error::Api(Box::new(status)));
        }
        other => {
            return Ok(WatchEvent::Undecodable(ReflectorError::Malformed(format!(
                "unknown watch event type {other:?}"
            ))));
        }
    };
    // Events carry the object's kind: an object of another kind is skipped, not
    // forced into the wrong type.
    let header_kind = kind_of(event.object);
    if let Some(found) = header_kind
        && found != kind
    {
        let header = RawHeader::read(event.object);
        return Ok(WatchEvent::Undecodable(ReflectorError::UnexpectedKind {
            expected: kind.to_owned(),
            found,
            key: header.key(),
        }));
    }
    Ok(match decode_object(event.object, kind) {
        Ok(object) => wrap(object),
        Err(e) => WatchEvent::Undecodable(e.into()),
    })
}

/// The object's `kind`, read without decoding the rest of it.
fn kind_of(raw: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    struct KindOnly<'a> {
        #[serde(borrow, default)]
        kind: Option<std::borrow::Cow<'a, str>>,
    }
    serde_json::from_str::<KindOnly<'_>>(raw.get())
        .ok()
        .and_then(|k| k.kind)
        .map(|k| k.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn list_decodes_each_item_and_skips_the_bad_one() {
        let text = r#"{"kind":"ConfigMapList","metadata":{"resourceVersion":"42","continue":"abc"},
            "items":[
              {"metadata":{"name":"good","namespace":"ns","resourceVersion":"40"},"data":{"a":"b"}},
              {"metadata":{"name":"bad","namespace":"ns","resourceVersion":"41"},"data":{"a":7}}
            ]}"#;
        let page: ListPage<ConfigMap> = decode_list(text, "ConfigMap").unwrap();
        assert_eq!(page.items.len(), 1);
        assert_eq!(page.items[0].metadata.name.as_deref(), Some("good"));
        assert_eq!(page.resource_version, "42");
        assert_eq!(page.continue_token.as_deref(), Some("abc"));
        assert_eq!(page.undecodable.len(), 1);
        assert_eq!(page.undecodable[0].key, "ns/bad");
        assert_eq!(page.undecodable[0].resource_version.as_deref(), Some("41"));
    }

    #[test]
    fn list_with_null_items_is_empty() {
        let page: ListPage<ConfigMap> = decode_list(
            r#"{"metadata":{"resourceVersion":"1"},"items":null}"#,
            "ConfigMap",
        )
        .unwrap();
        assert!(page.items.is_empty());
        assert_eq!(page.continue_token, None);
    }

    #[test]
    fn watch_events_decode_by_type() {
        let added: WatchEvent<ConfigMap> = decode_event(
            r#"{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"5"}}}"#,
            "ConfigMap",
        )
        .unwrap();
        assert!(matches!(added, WatchEvent::Added(cm) if cm.metadata.name.as_deref() == Some("a")));

        let bookmark: WatchEvent<ConfigMap> = decode_event(
            r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"9"}}}"#,
            "ConfigMap",
        )
        .unwrap();
        assert!(
            matches!(bookmark, WatchEvent::Bookmark { resource_version } if resource_version == "9")
        );
    }

    #[test]
    fn watch_error_event_is_an_api_error_with_its_code() {
        let err = decode_event::<ConfigMap>(
            r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}"#,
            "ConfigMap",
        )
        .unwrap_err();
        assert!(super::super::error::is_expired(&err), "{err:?}");
    }

    #[test]
    fn undecodable_and_foreign_objects_are_reported_not_fatal() {
        let bad: WatchEvent<ConfigMap> = decode_event(
            r#"{"type":"MODIFIED","object":{"kind":"ConfigMap","metadata":{"name":"x","namespace":"n"},"data":[]}}"#,
            "ConfigMap",
        )
        .unwrap();
        assert!(
            matches!(&bad, WatchEvent::Undecodable(ReflectorError::Decode(e)) if e.key == "n/x"),
            "{bad:?}"
        );

        let foreign: WatchEvent<ConfigMap> = decode_event(
            r#"{"type":"ADDED","object":{"kind":"Secret","metadata":{"name":"s","namespace":"n"}}}"#,
            "ConfigMap",
        )
        .unwrap();
        assert!(
            matches!(&foreign, WatchEvent::Undecodable(ReflectorError::UnexpectedKind { found, .. }) if found == "Secret"),
            "{foreign:?}"
        );
    }
}
