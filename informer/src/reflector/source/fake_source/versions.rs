//! [`FakeSource`] as a [`VersionSource`]: the collection as it was at any version
//! since the last compaction, rebuilt from the state at compaction and the change log.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use kube::Resource;

use super::{ChangeKind, FakeSource, expired, status, too_large_resource_version, unavailable};
use crate::key::ObjectKey;
use crate::lock::MutexExt;
use crate::reflector::key_filter::ObjectHead;
use crate::reflector::source::requests::{ListPage, ListRequest, WatchRequest, WatchStream};
use crate::reflector::source::versions::{ObjectVersion, VersionSource};

impl<K> FakeSource<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    fn versions_at(&self, request: &ListRequest) -> Result<ListPage<ObjectVersion>, kube::Error> {
        let state = self.state.locked();
        if state.shut_down {
            return Err(unavailable());
        }
        let at: u64 = match request.resource_version.as_str() {
            "" => state.resource_version,
            version => version.parse().map_err(|_| {
                status(
                    400,
                    "BadRequest",
                    format!("invalid resourceVersion {version:?}"),
                )
            })?,
        };
        if at > state.resource_version {
            return Err(too_large_resource_version(at, state.resource_version));
        }
        if at < state.compacted {
            return Err(expired(at, state.compacted));
        }
        let mut objects: BTreeMap<ObjectKey, &K> = state
            .base
            .iter()
            .map(|(key, object)| (key.clone(), object))
            .collect();
        for change in state.log.iter().take_while(|c| c.resource_version <= at) {
            let key = ObjectKey::of(&change.object);
            match change.kind {
                ChangeKind::Added | ChangeKind::Modified => objects.insert(key, &change.object),
                ChangeKind::Deleted => objects.remove(&key),
            };
        }
        let filter = request.key_filter.as_ref();
        let versions = objects
            .into_values()
            .filter(|object| {
                let head = ObjectHead::of(object.meta());
                filter.is_none_or(|f| head.is_none_or(|head| f.keeps_object(&head)))
            })
            .map(ObjectVersion::of)
            .collect();
        Ok(ListPage::new(versions, at.to_string()))
    }
}

impl<K> VersionSource for FakeSource<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// One page, whatever the limit.
    fn list_versions(
        &self,
        request: ListRequest,
    ) -> BoxFuture<'_, Result<ListPage<ObjectVersion>, kube::Error>> {
        Box::pin(std::future::ready(self.versions_at(&request)))
    }

    fn current_resource_version(&self) -> BoxFuture<'_, Result<String, kube::Error>> {
        let state = self.state.locked();
        let version = if state.shut_down {
            Err(unavailable())
        } else {
            Ok(state.resource_version.to_string())
        };
        Box::pin(std::future::ready(version))
    }

    /// The logged changes after `resource_version`, a bookmark at the current version,
    /// then every new change, until `timeout`.
    fn watch_versions(
        &self,
        resource_version: String,
        timeout: Duration,
    ) -> BoxFuture<'_, Result<WatchStream<ObjectVersion>, kube::Error>> {
        let request = WatchRequest::new(resource_version, timeout).allow_bookmarks(true);
        let events = self.start_watch(&request, true).map(|events| {
            events
                .map(|event| event.map(|event| event.map(|object| ObjectVersion::of(&object))))
                .boxed()
        });
        Box::pin(std::future::ready(events))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::reflector::source::requests::WatchEvent;
    use crate::test_support::config_map;

    fn names_and_versions(page: &ListPage<ObjectVersion>) -> Vec<String> {
        let version = |v: &ObjectVersion| v.resource_version.clone().unwrap_or_default();
        page.items
            .iter()
            .map(|v| format!("{}@{}", v.key, version(v)))
            .collect()
    }

    /// A version list answers the collection as it was, before or after a compaction,
    /// and 410 or "too large" outside what the source keeps.
    #[tokio::test]
    async fn lists_the_collection_as_it_was_at_any_kept_version() {
        let source = FakeSource::<ConfigMap>::new();
        source.add(config_map("ns/a", &[], 0));
        source.add(config_map("ns/b", &[], 0));
        source.modify(config_map("ns/a", &[], 0));
        source.compact();
        source.delete(config_map("ns/b", &[], 0));
        source.add(config_map("ns/c", &[], 0));
        let at =
            |version: &str| source.list_versions(ListRequest::default().resource_version(version));
        assert_eq!(
            names_and_versions(&at("3").await.unwrap()),
            ["ns/a@3", "ns/b@2"]
        );
        assert_eq!(names_and_versions(&at("4").await.unwrap()), ["ns/a@3"]);
        assert_eq!(
            names_and_versions(&at("5").await.unwrap()),
            ["ns/a@3", "ns/c@5"]
        );
        assert_eq!(
            names_and_versions(&at("").await.unwrap()),
            ["ns/a@3", "ns/c@5"]
        );
        let Err(kube::Error::Api(gone)) = at("2").await else {
            panic!("compacted")
        };
        assert_eq!(gone.code, 410);
        let Err(kube::Error::Api(ahead)) = at("6").await else {
            panic!("not reached")
        };
        assert_eq!(ahead.code, 504);
        assert_eq!(source.current_resource_version().await.unwrap(), "5");
    }

    fn said(event: WatchEvent<ObjectVersion>) -> String {
        let at = |v: &ObjectVersion| {
            format!("{}@{}", v.key, v.resource_version.as_deref().unwrap_or(""))
        };
        match event {
            WatchEvent::Added(v) => format!("added {}", at(&v)),
            WatchEvent::Modified(v) => format!("modified {}", at(&v)),
            WatchEvent::Deleted(v) => format!("deleted {}", at(&v)),
            WatchEvent::Bookmark {
                resource_version, ..
            } => format!("bookmark {resource_version}"),
            other => format!("{other:?}"),
        }
    }

    /// A version watch replays the changes after its version, then says with a
    /// bookmark that it has sent everything up to the current one.
    #[tokio::test]
    async fn a_version_watch_replays_then_bookmarks_the_current_version() {
        let source = FakeSource::<ConfigMap>::new();
        source.add(config_map("ns/a", &[], 0));
        source.add(config_map("ns/b", &[], 0));
        source.delete(config_map("ns/a", &[], 0));
        let mut events = source
            .watch_versions("1".into(), Duration::from_secs(5))
            .await
            .unwrap();
        let mut seen = Vec::new();
        for _ in 0..3 {
            seen.push(said(events.next().await.unwrap().unwrap()));
        }
        assert_eq!(seen, ["added ns/b@2", "deleted ns/a@3", "bookmark 3"]);
        source.add(config_map("ns/c", &[], 0));
        assert_eq!(said(events.next().await.unwrap().unwrap()), "added ns/c@4");
    }

    #[test]
    fn the_source_offers_its_versions() {
        let source = FakeSource::<ConfigMap>::new();
        assert!(
            crate::reflector::source::ListerWatcher::capabilities(&source)
                .versions
                .is_some()
        );
    }
}
