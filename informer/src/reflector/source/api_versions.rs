//! [`ApiVersions`]: the [`VersionSource`] of an [`ApiListerWatcher`](super::ApiListerWatcher),
//! which asks the API server for metadata only and reads of it only names, uids and
//! resourceVersions.
//!
//! Every request sends `Accept: ...;as=PartialObjectMetadataList` (or
//! `PartialObjectMetadata` for the watch), so the server leaves out everything but
//! `metadata`; the response is read into a few strings per object, everything else in
//! it skipped unread (labels, annotations, managed fields).

use std::time::Duration;

use futures::future::BoxFuture;
use futures::{AsyncBufReadExt, StreamExt};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::decode::RawHeader;
use super::query::{Match, collection_url, list_params, watch_params};
use super::requests::{ListOptions, ListPage, ListRequest, WatchEvent, WatchRequest, WatchStream};
use super::versions::{ObjectVersion, VersionSource};

/// The `Accept` of a list of metadata only, as kube-client and client-go send it (also
/// the metadata-only lists of an [`ApiListerWatcher`](super::ApiListerWatcher)).
pub(super) const METADATA_LIST_ACCEPT: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// The `Accept` of a watch of metadata only: each event's object is one
/// `PartialObjectMetadata` (also the metadata-only watches of an `ApiListerWatcher`).
pub(super) const METADATA_ACCEPT: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/// Lists and watches the versions of one collection through the API server, with the
/// namespace (in its URL) and selectors its lister-watcher lists with.
#[derive(Clone)]
pub(super) struct ApiVersions {
    pub(super) client: kube::Client,
    /// The collection's URL path (namespaced or not).
    pub(super) url: String,
    pub(super) options: ListOptions,
}

impl ApiVersions {
    fn url<V: AsRef<str>>(&self, params: &[(&str, V)], selectors: bool) -> String {
        let no_selectors = ListOptions::default();
        let options = if selectors {
            &self.options
        } else {
            &no_selectors
        };
        collection_url(&self.url, params, None, options)
    }

    fn get(url: String, accept: &str) -> Result<http::Request<Vec<u8>>, kube::Error> {
        http::Request::get(url)
            .header(http::header::ACCEPT, accept)
            .body(Vec::new())
            .map_err(kube::Error::HttpError)
    }

    async fn page(&self, request: ListRequest) -> Result<ListPage<ObjectVersion>, kube::Error> {
        let params = list_params(&request, Match::Exact);
        let http = Self::get(self.url(&params, true), METADATA_LIST_ACCEPT)?;
        let text = self.client.request_text(http).await?;
        let list: MetadataList<'_> =
            serde_json::from_str(&text).map_err(kube::Error::SerdeError)?;
        let filter = request.key_filter.as_ref();
        let versions = list
            .items
            .iter()
            .filter(|item| filter.is_none_or(|filter| item.kept_by(filter)))
            .map(RawHeader::version)
            .collect();
        let page = ListPage::new(versions, list.metadata.resource_version.unwrap_or_default());
        Ok(
            match list.metadata.continue_token.filter(|t| !t.is_empty()) {
                Some(token) => page.continue_token(token),
                None => page,
            },
        )
    }

    async fn current(&self) -> Result<String, kube::Error> {
        // No selectors: the version is the collection's, and a selector that matches
        // few objects would make the server read many to fill a page of one.
        let http = Self::get(self.url(&[("limit", "1")], false), METADATA_LIST_ACCEPT)?;
        let text = self.client.request_text(http).await?;
        let list: MetadataList<'_> =
            serde_json::from_str(&text).map_err(kube::Error::SerdeError)?;
        Ok(list.metadata.resource_version.unwrap_or_default())
    }

    async fn watch(
        &self,
        resource_version: String,
        timeout: Duration,
    ) -> Result<WatchStream<ObjectVersion>, kube::Error> {
        let request = WatchRequest::new(resource_version, timeout).allow_bookmarks(true);
        let params = watch_params(&request);
        let http = http::Request::get(self.url(&params, true))
            .header(http::header::ACCEPT, METADATA_ACCEPT)
            .header(http::header::ACCEPT_ENCODING, "identity")
            .body(Vec::new())
            .map_err(kube::Error::HttpError)?;
        let body = self.client.request_stream(http).await?;
        let events = futures::stream::unfold(body.lines(), |mut lines| async move {
            loop {
                let line = match lines.next().await? {
                    Ok(line) => line,
                    // A cut connection ends the watch as a close by the server would.
                    Err(_) => return None,
                };
                if line.trim().is_empty() {
                    continue;
                }
                return Some((version_event(&line), lines));
            }
        });
        Ok(events.boxed())
    }
}

impl VersionSource for ApiVersions {
    fn list_versions(
        &self,
        request: ListRequest,
    ) -> BoxFuture<'_, Result<ListPage<ObjectVersion>, kube::Error>> {
        Box::pin(self.page(request))
    }

    fn current_resource_version(&self) -> BoxFuture<'_, Result<String, kube::Error>> {
        Box::pin(self.current())
    }

    fn watch_versions(
        &self,
        resource_version: String,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<WatchStream<ObjectVersion>, kube::Error>> {
        Box::pin(self.watch(resource_version, timeout))
    }
}

/// One watch event's line, read for its type and its object's version; an ERROR
/// event is the server's status.
fn version_event(line: &str) -> Result<WatchEvent<ObjectVersion>, kube::Error> {
    let event: MetadataEvent<'_> = serde_json::from_str(line).map_err(kube::Error::SerdeError)?;
    let object = event.object.get();
    if event.kind == "ERROR" {
        let status: kube::core::Status =
            serde_json::from_str(object).map_err(kube::Error::SerdeError)?;
        return Err(kube::Error::Api(status.boxed()));
    }
    let header: RawHeader<'_> = serde_json::from_str(object).map_err(kube::Error::SerdeError)?;
    let version = header.version();
    Ok(match event.kind.as_str() {
        "BOOKMARK" => WatchEvent::bookmark(version.resource_version.unwrap_or_default()),
        "ADDED" => WatchEvent::Added(version),
        "DELETED" => WatchEvent::Deleted(version),
        _ => WatchEvent::Modified(version),
    })
}

#[derive(Deserialize)]
struct MetadataEvent<'a> {
    #[serde(rename = "type")]
    kind: String,
    #[serde(borrow)]
    object: &'a RawValue,
}

/// A list of metadata: each item read as the informer's decoder reads an object's
/// head (names, uid, resourceVersion and controller, borrowed from the response;
/// labels, annotations and managed fields skipped unread).
#[derive(Deserialize)]
struct MetadataList<'a> {
    metadata: ListMeta,
    #[serde(borrow, default, deserialize_with = "null_as_empty")]
    items: Vec<RawHeader<'a>>,
}

#[derive(Deserialize)]
struct ListMeta {
    #[serde(rename = "resourceVersion")]
    resource_version: Option<String>,
    #[serde(rename = "continue")]
    continue_token: Option<String>,
}

/// An empty list is sent as `"items": null` by some servers (1.20 for metadata lists).
fn null_as_empty<'de: 'a, 'a, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<RawHeader<'a>>, D::Error> {
    Ok(Option::<Vec<RawHeader<'a>>>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::key::ObjectKey;
    use crate::reflector::key_filter::{KeyFilter, ObjectHead, SharedKeyFilter};

    /// Keeps the objects a Pod controls, by the controller reference alone.
    struct ControlledByAPod;

    impl KeyFilter for ControlledByAPod {
        fn keeps(&self, _namespace: Option<&str>, _name: &str) -> bool {
            false
        }

        fn generation(&self) -> tokio::sync::watch::Receiver<u64> {
            tokio::sync::watch::channel(0).1
        }

        fn keeps_object(&self, head: &ObjectHead<'_>) -> bool {
            head.controller.is_some_and(|owner| owner.kind == "Pod")
        }
    }

    #[test]
    fn a_metadata_list_is_read_for_names_uids_versions_and_controllers_only() {
        let json = r#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1",
            "metadata":{"resourceVersion":"196","continue":"abc"},
            "items":[{"kind":"PartialObjectMetadata","metadata":{"name":"a0","namespace":"ns",
              "uid":"u-1","resourceVersion":"194","labels":{"x":"y"},
              "managedFields":[{"manager":"m","time":"2026-11-28T01:40:54Z"}],
              "ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":"p","uid":"u","controller":true}]}},
              {"metadata":{"name":"a1","namespace":"ns","resourceVersion":"195",
              "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"r","controller":true}]}}]}"#;
        let list: MetadataList<'_> = serde_json::from_str(json).unwrap();
        assert_eq!(list.metadata.resource_version.as_deref(), Some("196"));
        assert_eq!(list.metadata.continue_token.as_deref(), Some("abc"));
        assert_eq!(
            list.items[0].version(),
            ObjectVersion {
                key: ObjectKey::namespaced("ns", "a0"),
                uid: Some("u-1".into()),
                resource_version: Some("194".into()),
            }
        );
        // The filter reads the controller reference the informer's decoder reads.
        let filter = SharedKeyFilter::new(Arc::new(ControlledByAPod));
        let kept: Vec<_> = list
            .items
            .iter()
            .filter(|item| item.kept_by(&filter))
            .collect();
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].version().key, ObjectKey::namespaced("ns", "a0"));
    }

    #[test]
    fn an_empty_list_may_say_null() {
        let json = r#"{"metadata":{"resourceVersion":"191"},"items":null}"#;
        let list: MetadataList<'_> = serde_json::from_str(json).unwrap();
        assert!(list.items.is_empty());
    }

    #[test]
    fn watch_lines_give_versions_bookmarks_and_errors() {
        let changed = r#"{"type":"MODIFIED","object":{"metadata":{"name":"a","namespace":"ns","uid":"u-a","resourceVersion":"12"}}}"#;
        let deleted =
            r#"{"type":"DELETED","object":{"metadata":{"name":"b","resourceVersion":"14"}}}"#;
        let bookmark = r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"15"}}}"#;
        let error = r#"{"type":"ERROR","object":{"kind":"Status","status":"Failure","code":410,"reason":"Expired","message":"too old"}}"#;
        let Ok(WatchEvent::Modified(version)) = version_event(changed) else {
            panic!("a modification")
        };
        assert_eq!(
            version,
            ObjectVersion {
                key: ObjectKey::namespaced("ns", "a"),
                uid: Some("u-a".into()),
                resource_version: Some("12".into()),
            }
        );
        let Ok(WatchEvent::Deleted(version)) = version_event(deleted) else {
            panic!("a deletion")
        };
        assert_eq!(version.resource_version.as_deref(), Some("14"));
        let Ok(WatchEvent::Bookmark {
            resource_version, ..
        }) = version_event(bookmark)
        else {
            panic!("a bookmark")
        };
        assert_eq!(resource_version, "15");
        let Err(kube::Error::Api(status)) = version_event(error) else {
            panic!("an error status")
        };
        assert_eq!(status.code, 410);
    }
}
