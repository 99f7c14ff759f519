//! A staleness probe: where the server is, and whether the cache is there.
//!
//! 1. A consistent read of one object gives the server's resourceVersion now.
//! 2. If the cache's newest point is at or past it, the cache lags by nothing.
//! 3. Otherwise a short watch from the cache's point reads the versions of the changes
//!    since: the last one up to the server's version is the *target*, what the cache
//!    must apply to hold what the server held at step 1. The watch ends at the first
//!    change past the server's version or a bookmark at or past it (proof that every
//!    change up to there has been seen), or when the server ends it after a few
//!    seconds. A server that sends no such bookmark (1.20) leaves the probe to trust
//!    that the changes came within those seconds, as a watch's replay from the watch
//!    cache does.
//! 4. With proof, a cache settled between the target and the server's version is also
//!    the server's collection at that version: a fresh point for checks, which a quiet
//!    collection would otherwise not get until its next change.
//!
//! `staleness.rs` turns the targets into the gauge.

use std::time::Duration;

use futures::StreamExt;

use super::tracker::Tracker;
use crate::reflector::source::{VersionSource, WatchEvent};

/// How long the probe's watch lasts at most (the server ends it then). A server that
/// sends bookmarks sends one two seconds before a watch's end, so this brings one
/// after about a second.
const WATCH: Duration = Duration::from_secs(3);

/// What a probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Probe {
    /// The cache has no point yet (not synced): nothing to compare.
    NotReady,
    /// The server could not be read.
    Failed(String),
    /// The server's versions do not compare as integers: no reading.
    Incomparable,
    /// The server was at `server`; the cache must reach `target` to hold what the
    /// server held; `proven` says whether the watch proved it saw every change.
    Found {
        server: u64,
        target: u64,
        proven: bool,
    },
}

/// Probes once; see the [module docs](self).
pub(crate) async fn probe(
    tracker: &Tracker,
    source: &dyn VersionSource,
    timeout: Duration,
) -> Probe {
    let (id, from) = tracker.probe_started();
    let Some(from) = from else {
        tracker.probe_abandoned(id);
        return Probe::NotReady;
    };
    let server = match tokio::time::timeout(timeout, source.current_resource_version()).await {
        Ok(Ok(server)) => server,
        Ok(Err(error)) => {
            tracker.probe_finished(id, None);
            return Probe::Failed(crate::cause::Chain(&error).to_string());
        }
        Err(_) => {
            tracker.probe_finished(id, None);
            return Probe::Failed(format!("no answer within {timeout:?}"));
        }
    };
    let (Ok(server_number), Ok(from_number)) =
        (server.parse::<u64>(), from.resource_version.parse::<u64>())
    else {
        tracker.probe_abandoned(id);
        return Probe::Incomparable;
    };
    if from_number >= server_number {
        tracker.probe_finished(id, Some(server_number));
        return Probe::Found {
            server: server_number,
            target: server_number,
            proven: true,
        };
    }
    let watched = tokio::time::timeout(
        timeout.max(WATCH + Duration::from_secs(2)),
        last_change_up_to(
            source,
            from.resource_version.clone(),
            from_number,
            server_number,
        ),
    )
    .await;
    let Ok(Some((target, proven))) = watched else {
        // The watch was refused (the cache's version is older than the watch cache
        // keeps) or hung: no reading this time.
        tracker.probe_abandoned(id);
        return Probe::Failed("the watch of versions did not answer".into());
    };
    tracker.probe_finished(id, Some(target));
    if proven {
        tracker.vouch(target, &server);
    }
    Probe::Found {
        server: server_number,
        target,
        proven,
    }
}

/// Watches versions from `from` and returns the last change up to `server`, and
/// whether the watch proved it saw every change up to there; `None` when the watch
/// could not start.
async fn last_change_up_to(
    source: &dyn VersionSource,
    from_version: String,
    from: u64,
    server: u64,
) -> Option<(u64, bool)> {
    let mut events = source.watch_versions(from_version, WATCH).await.ok()?;
    let mut target = from;
    while let Some(event) = events.next().await {
        match event {
            Ok(
                WatchEvent::Added(changed)
                | WatchEvent::Modified(changed)
                | WatchEvent::Deleted(changed),
            ) => match changed.resource_version.as_deref().map(str::parse::<u64>) {
                Some(Ok(version)) if version <= server => target = target.max(version),
                Some(Ok(_)) => return Some((target, true)),
                _ => return None,
            },
            Ok(WatchEvent::Bookmark {
                resource_version, ..
            }) => {
                if resource_version
                    .parse::<u64>()
                    .is_ok_and(|version| version >= server)
                {
                    return Some((target, true));
                }
            }
            // A version source sends no others.
            Ok(WatchEvent::FilteredOut { .. } | WatchEvent::Undecodable(_)) => {}
            // An error ends the watch: what came before stands, unproven.
            Err(_) => break,
        }
    }
    Some((target, false))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::reflector::source::{FakeSource, ObjectVersion};
    use crate::test_support::config_map;

    fn tracker_at(version: &str) -> Tracker {
        let tracker = Tracker::new(Box::new(|| true));
        tracker.progressed(version);
        tracker
    }

    /// A cache at the server's version lags by nothing; one behind finds the last
    /// change it lacks, with proof (the fake source bookmarks its version after the
    /// changes it replays).
    #[tokio::test]
    async fn finds_the_last_change_the_cache_lacks() {
        let source = FakeSource::<ConfigMap>::new();
        for name in ["ns/a", "ns/b", "ns/c"] {
            source.add(config_map(name, &[], 0));
        }
        let timeout = Duration::from_secs(5);
        let current = probe(&tracker_at("3"), &source, timeout).await;
        assert_eq!(
            current,
            Probe::Found {
                server: 3,
                target: 3,
                proven: true
            }
        );

        let behind = tracker_at("1");
        let found = probe(&behind, &source, timeout).await;
        assert_eq!(
            found,
            Probe::Found {
                server: 3,
                target: 3,
                proven: true
            }
        );
        assert!(behind.is_behind());
        assert_eq!(behind.newest_point().unwrap().resource_version, "1");
        behind.progressed("3");
        assert!(!behind.is_behind());
    }

    /// A server ahead of the collection's last change (other collections moved it):
    /// the versions the probe's watch sees.
    struct Ahead;

    impl VersionSource for Ahead {
        fn list_versions(
            &self,
            _: crate::reflector::source::ListRequest,
        ) -> futures::future::BoxFuture<
            '_,
            Result<crate::reflector::source::ListPage<ObjectVersion>, kube::Error>,
        > {
            unreachable!("a probe lists nothing")
        }
        fn current_resource_version(
            &self,
        ) -> futures::future::BoxFuture<'_, Result<String, kube::Error>> {
            Box::pin(async { Ok("20".to_owned()) })
        }
        fn watch_versions(
            &self,
            from: String,
            _: Duration,
        ) -> futures::future::BoxFuture<
            '_,
            Result<crate::reflector::source::WatchStream<ObjectVersion>, kube::Error>,
        > {
            assert_eq!(from, "12");
            let events = [WatchEvent::bookmark("20")].map(Ok);
            Box::pin(async move { Ok(futures::stream::iter(events).boxed()) })
        }
    }

    /// Nothing changed in the collection between the cache's point and the server's
    /// version, and the watch proved it: the cache is a point at the server's version.
    #[tokio::test]
    async fn a_proven_quiet_stretch_makes_a_fresh_point() {
        let tracker = tracker_at("12");
        let found = probe(&tracker, &Ahead, Duration::from_secs(5)).await;
        assert_eq!(
            found,
            Probe::Found {
                server: 20,
                target: 12,
                proven: true
            }
        );
        assert!(!tracker.is_behind());
        assert_eq!(tracker.newest_point().unwrap().resource_version, "20");
        assert_eq!(
            tracker.staleness(),
            (Some(Duration::ZERO), Some(Duration::ZERO))
        );
    }

    #[tokio::test]
    async fn a_cache_without_a_point_is_not_probed() {
        let source = FakeSource::<ConfigMap>::new();
        let tracker = Tracker::new(Box::new(|| true));
        assert_eq!(
            probe(&tracker, &source, Duration::from_secs(1)).await,
            Probe::NotReady
        );
    }
}
