//! One consistency check: the cache's digest at a point against the server's list at
//! exactly that version, and, when they differ, which keys differ.
//!
//! 1. A staleness probe first when the newest point is older than a minute: on a
//!    quiet collection it may vouch for a fresh point (the server compacts what is
//!    older than a few minutes).
//! 2. The newest point; its version listed (metadata only, in pages) and summed into
//!    a digest. 410 Gone (compacted): wait for the cache to pass a newer point and
//!    list that (three times at most); none in time: list the latest version instead, and count the cache
//!    consistent only if its point equals it (a cache that holds the server's present
//!    collection held it at its point too); otherwise the check is skipped. A version
//!    the server has not reached (a lagging server behind a load balancer): an older
//!    point.
//! 3. Digests equal: consistent. Otherwise the cache is read into a map of keys at its
//!    point then (waiting for the queue to be empty), and the server's list at that
//!    version compared key by key: every difference named (missing, extra, older,
//!    newer).

use std::sync::Arc;
use std::time::Duration;

use crate::object::Object;

use super::VerifyError;
use super::compare::{KeyedComparison, snapshot};
use super::digest::{Digest, hash_version};
use super::points::Point;
use super::probe::probe;
use super::report::ConsistencyReport;
use super::tracker::Tracker;
use crate::reflector::source::{ListPage, ListRequest, ObjectVersion, VersionSource};
use crate::reflector::{SharedKeyFilter, is_expired, is_too_large_resource_version};
use crate::store::Indexer;

/// A point younger than this is checked without a probe first: the server keeps its
/// version (API servers compact every five minutes by default).
const FRESH: Duration = Duration::from_secs(60);

/// How many newer points a check tries after 410 Gone before it compares with the
/// latest version.
const COMPACTED_RETRIES: usize = 3;

/// Checks one informer's cache; see the [module docs](self).
pub(crate) struct Checker<K> {
    pub(crate) resource: String,
    pub(crate) tracker: Arc<Tracker>,
    pub(crate) source: Option<Arc<dyn VersionSource>>,
    pub(crate) indexer: Indexer<K>,
    pub(crate) key_filter: Option<SharedKeyFilter>,
    pub(crate) page_size: u32,
    pub(crate) timeout: Duration,
}

/// What listing one version summed to.
struct Listed {
    resource_version: String,
    digest: Digest,
    objects: usize,
}

/// Why listing one version failed.
enum ListFailure {
    /// The server no longer keeps it.
    Gone,
    /// The server has not reached it.
    TooNew,
    Failed(kube::Error),
    TimedOut,
}

impl<K: Object + 'static> Checker<K> {
    /// Checks once; `synced` is whether the informer's first list is in its cache.
    pub(crate) async fn check(&self, synced: bool) -> Result<ConsistencyReport, VerifyError> {
        if !synced {
            return Err(VerifyError::NotSynced {
                resource: self.resource.clone(),
            });
        }
        let source = self
            .source
            .as_deref()
            .ok_or_else(|| VerifyError::Unsupported {
                resource: self.resource.clone(),
            })?;
        let fresh = self
            .tracker
            .newest_point()
            .is_some_and(|point| point.at.elapsed() < FRESH);
        if !fresh {
            probe(&self.tracker, source, self.timeout).await;
        }
        // A cache is compared with the server only under the key filter's generation
        // its objects were filtered with: after a filter change (a shard hand-off) the
        // newest point may still be the old share's, until the relist the change brings
        // is applied.
        let generation = self.filter_generation();
        let mut point = self.newest_point()?;
        if point.filter_generation != generation {
            point = self
                .tracker
                .point_after(None, generation, self.timeout)
                .await
                .ok_or_else(|| self.filter_changed())?;
        }
        let mut requests = 0;
        let mut compacted = 0;
        let listed = loop {
            let listed = self
                .list(source, &point.resource_version, &mut requests, |_| ())
                .await;
            match listed {
                Ok(listed) => break listed,
                Err(ListFailure::Gone) => {
                    compacted += 1;
                    let newer = match compacted {
                        ..=COMPACTED_RETRIES => {
                            self.tracker
                                .point_after(Some(&point), generation, self.timeout)
                                .await
                        }
                        _ => None,
                    };
                    match newer {
                        Some(newer) => point = newer,
                        None => return self.against_latest(source, &point, requests).await,
                    }
                }
                Err(ListFailure::TooNew) => match self.tracker.older_point(&point) {
                    Some(older) => point = older,
                    None => return Err(self.failed(&point, ListFailure::TooNew)),
                },
                Err(failure) => return Err(self.failed(&point, failure)),
            }
        };
        // What was listed was filtered as the point was, unless the filter moved meanwhile.
        if self.filter_generation() != generation {
            return Err(self.filter_changed());
        }
        let mut report = ConsistencyReport {
            resource: self.resource.clone(),
            resource_version: point.resource_version.clone(),
            consistent: listed.digest == point.digest,
            cached: point.objects,
            listed: listed.objects,
            differences: Vec::new(),
            keyed_at: None,
            requests,
        };
        if !report.consistent {
            self.name_differences(source, generation, &mut report)
                .await?;
        }
        Ok(report)
    }

    /// The key filter's generation now (0 without one).
    fn filter_generation(&self) -> u64 {
        self.key_filter
            .as_ref()
            .map_or(0, |filter| *filter.filter().generation().borrow())
    }

    fn filter_changed(&self) -> VerifyError {
        VerifyError::FilterChanged {
            resource: self.resource.clone(),
        }
    }

    fn newest_point(&self) -> Result<Point, VerifyError> {
        self.tracker
            .newest_point()
            .ok_or_else(|| VerifyError::NoPoint {
                resource: self.resource.clone(),
            })
    }

    /// The server no longer keeps `point`'s version and the cache passed no newer
    /// one: the cache is consistent if its point equals the server's collection now.
    async fn against_latest(
        &self,
        source: &dyn VersionSource,
        point: &Point,
        mut requests: usize,
    ) -> Result<ConsistencyReport, VerifyError> {
        let compacted = || VerifyError::Compacted {
            resource: self.resource.clone(),
            resource_version: point.resource_version.clone(),
        };
        let latest = match self.list(source, "", &mut requests, |_| ()).await {
            Ok(latest) => latest,
            Err(ListFailure::Gone | ListFailure::TooNew) => return Err(compacted()),
            Err(failure) => return Err(self.failed(point, failure)),
        };
        if latest.digest != point.digest {
            return Err(compacted());
        }
        Ok(ConsistencyReport {
            resource: self.resource.clone(),
            resource_version: latest.resource_version,
            consistent: true,
            cached: point.objects,
            listed: latest.objects,
            differences: Vec::new(),
            keyed_at: None,
            requests,
        })
    }

    /// Compares again key by key, at the cache's point now (under the key filter's
    /// `generation`): names every difference, or, when there is none, says the cache is
    /// consistent at that point (it differed at the first one, and no longer does). A
    /// report never says inconsistent while naming nothing: a comparison that cannot be
    /// made is an error instead (a skipped check).
    async fn name_differences(
        &self,
        source: &dyn VersionSource,
        generation: u64,
        report: &mut ConsistencyReport,
    ) -> Result<(), VerifyError> {
        let at_point = self
            .tracker
            .at_a_point(self.timeout, || snapshot(&self.indexer))
            .await;
        let Some((point, cached)) = at_point else {
            return Err(VerifyError::NoPoint {
                resource: self.resource.clone(),
            });
        };
        if point.filter_generation != generation {
            return Err(self.filter_changed());
        }
        let mut comparison = KeyedComparison::new(cached);
        let listed = self
            .list(
                source,
                &point.resource_version,
                &mut report.requests,
                |page| {
                    comparison.page(std::mem::take(&mut page.items));
                },
            )
            .await;
        match listed {
            Ok(_) if self.filter_generation() != generation => Err(self.filter_changed()),
            Ok(listed) => {
                let (differences, _, _) = comparison.finish();
                if differences.is_empty() {
                    tracing::info!(
                        resource = %self.resource,
                        differed_at = %report.resource_version,
                        consistent_at = %point.resource_version,
                        "the cache differed from the server and no longer does"
                    );
                    report.consistent = true;
                    report.resource_version = point.resource_version.clone();
                    report.cached = point.objects;
                    report.listed = listed.objects;
                }
                report.differences = differences;
                report.keyed_at = Some(point.resource_version);
                Ok(())
            }
            Err(failure) => Err(self.failed(&point, failure)),
        }
    }

    /// Lists the versions at exactly `resource_version` ("": the latest, read
    /// consistently), page by page, summing them; `page` sees each page first.
    async fn list(
        &self,
        source: &dyn VersionSource,
        resource_version: &str,
        requests: &mut usize,
        mut page: impl FnMut(&mut ListPage<ObjectVersion>),
    ) -> Result<Listed, ListFailure> {
        let mut request = ListRequest::default()
            .resource_version(resource_version)
            .limit(self.page_size);
        request.key_filter = self.key_filter.clone();
        let mut listed = Listed {
            resource_version: String::new(),
            digest: Digest::default(),
            objects: 0,
        };
        loop {
            *requests += 1;
            let answer = tokio::time::timeout(self.timeout, source.list_versions(request.clone()))
                .await
                .map_err(|_| ListFailure::TimedOut)?;
            let mut versions = answer.map_err(|error| {
                if is_expired(&error) {
                    ListFailure::Gone
                } else if is_too_new(&error) {
                    ListFailure::TooNew
                } else {
                    ListFailure::Failed(error)
                }
            })?;
            for version in &versions.items {
                listed.digest.add(hash_version(version));
            }
            listed.objects += versions.items.len();
            page(&mut versions);
            match versions.continue_token {
                Some(token) => request.continue_token = Some(token),
                None => {
                    listed.resource_version = versions.resource_version;
                    return Ok(listed);
                }
            }
        }
    }

    fn failed(&self, point: &Point, failure: ListFailure) -> VerifyError {
        let resource = self.resource.clone();
        let resource_version = point.resource_version.clone();
        match failure {
            ListFailure::Gone => VerifyError::Compacted {
                resource,
                resource_version,
            },
            ListFailure::TimedOut => VerifyError::TimedOut {
                resource,
                timeout: self.timeout,
            },
            ListFailure::TooNew => VerifyError::NotReached {
                resource,
                resource_version,
            },
            ListFailure::Failed(source) => VerifyError::List {
                resource,
                resource_version,
                source,
            },
        }
    }
}

/// A version the server has not reached: "too large resource version" from the watch
/// cache, or, from etcd itself (servers that list exact versions from etcd, 1.20), a
/// 500 "required revision is a future revision".
fn is_too_new(error: &kube::Error) -> bool {
    is_too_large_resource_version(error)
        || matches!(error, kube::Error::Api(status) if status.message.contains("future revision"))
}
