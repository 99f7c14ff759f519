//! The query rule of a collection's requests, one for every request an API source
//! sends: the informer's lists and watches ([`ApiListerWatcher`](super::ApiListerWatcher))
//! and a consistency check's version lists and watches (`ApiVersions`), so both ask
//! for the same collection with the same selectors.

use super::requests::{ListOptions, ListRequest, WatchRequest};

/// How a list's resourceVersion is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Match {
    /// The server's default: `"0"` any version (its watch cache), `""` the latest,
    /// anything else at least as recent.
    NotOlderThan,
    /// Exactly the version asked for (`resourceVersionMatch=Exact`), `""` the latest.
    Exact,
}

/// `base` (the collection's path) with `params`, the shard selector if any, and the
/// selectors of `options`.
pub(super) fn collection_url<V: AsRef<str>>(
    base: &str,
    params: &[(&str, V)],
    shard_selector: Option<&str>,
    options: &ListOptions,
) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (key, value) in params {
        query.append_pair(key, value.as_ref());
    }
    if let Some(selector) = shard_selector {
        query.append_pair("shardSelector", selector);
    }
    if let Some(labels) = &options.label_selector {
        query.append_pair("labelSelector", labels);
    }
    if let Some(fields) = &options.field_selector {
        query.append_pair("fieldSelector", fields);
    }
    format!("{base}?{}", query.finish())
}

/// The query of one list page (selectors aside): the continue token, which carries
/// the list's resourceVersion (the server refuses either beside it), or the
/// resourceVersion as `matching` matches it; the page size.
pub(super) fn list_params(request: &ListRequest, matching: Match) -> Vec<(&'static str, String)> {
    let mut params = Vec::with_capacity(3);
    match (&request.continue_token, matching) {
        (Some(token), _) => params.push(("continue", token.clone())),
        (None, Match::NotOlderThan) => {
            params.push(("resourceVersion", request.resource_version.clone()));
        }
        // The latest: a consistent read, which takes no match.
        (None, Match::Exact) if request.resource_version.is_empty() => {}
        (None, Match::Exact) => {
            params.push(("resourceVersion", request.resource_version.clone()));
            params.push(("resourceVersionMatch", "Exact".to_owned()));
        }
    }
    if let Some(limit) = request.limit {
        params.push(("limit", limit.to_string()));
    }
    params
}

/// The query of a watch (selectors aside), as kube-core's `WatchParams` writes it.
pub(super) fn watch_params(request: &WatchRequest) -> Vec<(&'static str, String)> {
    let mut params = vec![
        ("watch", "true".to_owned()),
        ("resourceVersion", request.resource_version.clone()),
        (
            "timeoutSeconds",
            request.timeout.as_secs().max(1).to_string(),
        ),
    ];
    // A streaming list needs bookmarks (its initial events end with one) and the
    // NotOlderThan match, as `WatchParams::send_initial_events` has them.
    if request.allow_bookmarks || request.streaming_list {
        params.push(("allowWatchBookmarks", "true".to_owned()));
    }
    if request.streaming_list {
        params.push(("sendInitialEvents", "true".to_owned()));
        params.push(("resourceVersionMatch", "NotOlderThan".to_owned()));
    }
    params
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn query(request: &WatchRequest) -> Vec<String> {
        let params = watch_params(request);
        params.iter().map(|(k, v)| format!("{k}={v}")).collect()
    }

    /// client-go: TestWatchList/"the reflector uses the old LIST/WATCH semantics if the
    /// UseWatchList is turned off" (the watch half of its expected request options)
    #[test]
    fn a_plain_watch_asks_for_bookmarks_and_nothing_streaming() {
        let request = WatchRequest {
            resource_version: "7".into(),
            timeout: Duration::from_secs(300),
            allow_bookmarks: true,
            streaming_list: false,
            key_filter: None,
        };
        assert_eq!(
            query(&request),
            [
                "watch=true",
                "resourceVersion=7",
                "timeoutSeconds=300",
                "allowWatchBookmarks=true"
            ]
        );
    }

    /// client-go: TestWatchList/"prove that the reflector is synced after receiving a
    /// bookmark event" (its expected request options)
    #[test]
    fn a_streaming_list_sends_initial_events_not_older_than_with_bookmarks() {
        let request = WatchRequest {
            resource_version: String::new(),
            timeout: Duration::from_secs(300),
            allow_bookmarks: false,
            streaming_list: true,
            key_filter: None,
        };
        assert_eq!(
            query(&request),
            [
                "watch=true",
                "resourceVersion=",
                "timeoutSeconds=300",
                "allowWatchBookmarks=true",
                "sendInitialEvents=true",
                "resourceVersionMatch=NotOlderThan"
            ]
        );
    }

    fn list_query(request: &ListRequest, matching: Match) -> Vec<String> {
        let params = list_params(request, matching);
        params.iter().map(|(k, v)| format!("{k}={v}")).collect()
    }

    /// An informer's list asks for its version as the server matches by default; a
    /// version list asks for exactly its version, or the latest without a match; a
    /// continue token stands alone for both.
    #[test]
    fn lists_ask_for_their_version_as_they_match_it() {
        let first = ListRequest::default().resource_version("0").limit(500);
        assert_eq!(
            list_query(&first, Match::NotOlderThan),
            ["resourceVersion=0", "limit=500"]
        );
        let exact = ListRequest::default().resource_version("42").limit(500);
        assert_eq!(
            list_query(&exact, Match::Exact),
            [
                "resourceVersion=42",
                "resourceVersionMatch=Exact",
                "limit=500"
            ]
        );
        assert_eq!(
            list_query(&ListRequest::default(), Match::Exact),
            Vec::<String>::new()
        );
        let next = exact.continue_token("abc");
        for matching in [Match::NotOlderThan, Match::Exact] {
            assert_eq!(list_query(&next, matching), ["continue=abc", "limit=500"]);
        }
    }

    #[test]
    fn the_url_carries_the_shard_selector_and_the_selectors() {
        let options = ListOptions {
            label_selector: Some("app=web".into()),
            field_selector: Some("metadata.name=a b".into()),
        };
        assert_eq!(
            collection_url("/api/v1/pods", &[("limit", "1")], Some("x"), &options),
            "/api/v1/pods?limit=1&shardSelector=x&labelSelector=app%3Dweb&fieldSelector=metadata.name%3Da+b"
        );
        assert_eq!(
            collection_url::<&str>("/api/v1/pods", &[], None, &ListOptions::default()),
            "/api/v1/pods?"
        );
    }
}
