//! [`ServerShards`]: whether the API server filters a collection by the key filter's
//! shard selector, as far as one [`ApiListerWatcher`](super::ApiListerWatcher) has
//! seen, and when to send the selector.
//!
//! A [`KeyFilter`](crate::reflector::KeyFilter) may offer a shard selector
//! ([`server_selector`](crate::reflector::KeyFilter::server_selector)); the lister-watcher sends
//! it with every list, watch and streaming list. A server with sharded list and watch
//! (Kubernetes 1.36 and later, feature gate `ShardedListAndWatch`) then sends only
//! the objects the selector matches; any other server ignores the parameter and sends
//! everything. Either way the key filter still runs on what arrives, so the cache
//! holds exactly what it keeps: the selector only saves the bytes and the reading.
//!
//! # When the selector is not sent
//!
//! Some answers to a request carrying the selector mean the request cannot carry it:
//!
//! - **414 URI Too Long or 431 Request Header Fields Too Large**, from whatever sits
//!   on the way (a proxy or load balancer with a limit on the request line), or the
//!   server;
//! - **an error naming the shard selector**, whatever its status (the 1.36.4 server
//!   answers a selector it cannot parse with a 500 "invalid shard selector");
//! - **400 Bad Request to the first request carrying it** (the first since it was
//!   last tried again): a server or a proxy that refuses the parameter. A 400 once a
//!   request with the selector has been answered is about something else, and goes
//!   back to the reflector as any other error.
//!
//! Then the same request goes again at once without the selector (everything
//! arrives, and the key filter keeps the share), and the selector is not sent again
//! until the next list starts: a relist's first page, or a streaming list. That
//! request tries it again; once it is answered, the selector stays on. So a fallback
//! costs one refused request per relist, and a proxy fixed (or a server upgraded)
//! under a running informer is found at the next relist. Every other error is
//! returned as it is, the selector still on.
//!
//! # Whether the server filtered
//!
//! Read from what a list brings: it did if the list says so (`metadata.shardInfo`;
//! the 1.36.4 server filters custom resources without saying so), or, for a
//! selector by uid, if a list (or a streaming list's initial events) brought at
//! least [`EVIDENCE`] objects the filter kept and none it dropped, the selector not
//! asking for everything; it did not if the filter dropped any, or if the selector
//! could not be sent. It is said once per lister-watcher at INFO, and again only if
//! it changes (a server upgraded, a feature gate turned, a proxy in the way fixed,
//! under a running informer), and an informer's
//! [`StatsSnapshot::server_filters_shards`](crate::reflector::StatsSnapshot::server_filters_shards)
//! reads it.

use std::future::Future;
use std::sync::{Arc, Mutex};

use super::requests::WatchEvent;
use crate::cause::kube_cause;
use crate::lock::MutexExt;
use crate::reflector::key_filter::{ShardField, ShardSelector, SharedKeyFilter};

/// How many kept objects, none dropped here, show that the server filtered by uid.
/// Were it sending everything, each object would fall in this member's share with the
/// share's probability, independently of the others: at most one half with two
/// members or more (a lone member's selector asks for everything, and counts for
/// nothing), so 32 in a row would happen about once in 4 billion lists. (By
/// namespace, objects are not independent: nothing but `shardInfo` or a drop tells.)
const EVIDENCE: usize = 32;

/// Why the selector is not sent until the next list starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fallback {
    /// 414 or 431: the request was too long for something on the way.
    TooLong,
    /// An error naming the selector, or a 400 to the first request carrying it.
    Refused,
}

/// Where a request stands in a list or watch: what decides whether a selector left
/// off since a fallback is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// A list's first page, or a streaming list: the selector is tried again.
    Starts,
    /// A later page, or a watch from a list's resourceVersion: as the list went.
    Continues,
}

/// What one lister-watcher knows of the selector's way to the server.
#[derive(Debug, Default)]
struct Sending {
    /// Left off until the next list starts, and why.
    fallback: Option<Fallback>,
    /// A request carrying the selector was answered since it was last tried again.
    answered: bool,
    /// The fallback last said at INFO (one seen again at each relist is said at
    /// DEBUG), until the selector goes through again.
    told: Option<Fallback>,
}

/// What one lister-watcher has seen the server do with shard selectors.
#[derive(Debug, Default)]
pub(super) struct ServerShards {
    sending: Mutex<Sending>,
    /// What was last said: whether the server filtered.
    said: Mutex<Option<bool>>,
}

impl ServerShards {
    /// The selector to send with a request filtered by `filter` at `step` of a list
    /// or watch, if any: none after a fallback until a list starts.
    pub(super) fn selector(
        &self,
        filter: Option<&SharedKeyFilter>,
        step: Step,
    ) -> Option<ShardSelector> {
        let selector = filter.and_then(|filter| filter.filter().server_selector())?;
        let mut sending = self.sending.locked();
        if sending.fallback.is_some() {
            if step == Step::Continues {
                return None;
            }
            // Tried again: its next answer is a first answer again.
            sending.fallback = None;
            sending.answered = false;
        }
        Some(selector)
    }

    /// `selector`, if the request it went with was answered with it (not sent again
    /// without it): what the answer can tell about.
    pub(super) fn still_sent(&self, selector: Option<ShardSelector>) -> Option<ShardSelector> {
        selector.filter(|_| self.sending.locked().fallback.is_none())
    }

    /// `send`'s answer with `selector`; where the answer says the request cannot carry
    /// it (see the [module documentation](self)), `send`'s answer without it, the
    /// selector then left off until the next list starts.
    pub(super) async fn send<'s, T, F>(
        &self,
        resource: &str,
        selector: Option<&'s str>,
        send: impl Fn(Option<&'s str>) -> F,
    ) -> Result<T, kube::Error>
    where
        F: Future<Output = Result<T, kube::Error>>,
    {
        if selector.is_none() {
            return send(None).await;
        }
        match send(selector).await {
            Ok(answer) => {
                self.answered(resource);
                Ok(answer)
            }
            Err(error) => match self.fallback_for(&error) {
                Some(fallback) => {
                    self.fall_back(resource, fallback, &error);
                    send(None).await
                }
                None => Err(error),
            },
        }
    }

    /// Whether `error`, the answer to a request carrying the selector, means the
    /// request cannot carry it, and why.
    fn fallback_for(&self, error: &kube::Error) -> Option<Fallback> {
        let kube::Error::Api(status) = error else {
            return None;
        };
        if matches!(status.code, 414 | 431) {
            return Some(Fallback::TooLong);
        }
        let names = |text: &str| {
            let text = text.to_ascii_lowercase();
            text.contains("shard selector") || text.contains("shardselector")
        };
        let mut causes = status.details.iter().flat_map(|details| &details.causes);
        let named = names(&status.message) || causes.any(|c| names(&c.field) || names(&c.message));
        if named || (status.code == 400 && !self.sending.locked().answered) {
            return Some(Fallback::Refused);
        }
        None
    }

    /// A request carrying the selector was answered.
    fn answered(&self, resource: &str) {
        let mut sending = self.sending.locked();
        sending.answered = true;
        if sending.told.take().is_some() {
            tracing::info!(
                resource,
                "the shard selector goes through again: it is sent with every request"
            );
        }
    }

    /// Leaves the selector off until the next list starts, and says so.
    fn fall_back(&self, resource: &str, fallback: Fallback, error: &kube::Error) {
        *self.said.locked() = Some(false);
        let mut sending = self.sending.locked();
        sending.fallback = Some(fallback);
        sending.answered = false;
        let error = kube_cause(error);
        if sending.told == Some(fallback) {
            tracing::debug!(resource, %error, "the shard selector was refused again: requesting without it");
            return;
        }
        sending.told = Some(fallback);
        match fallback {
            Fallback::TooLong => tracing::info!(
                resource,
                %error,
                "a request with the shard selector was too long for the way to the API server (a proxy's limit?): requesting without it, every object is received until the next relist tries it again, and this replica keeps its share"
            ),
            Fallback::Refused => tracing::info!(
                resource,
                %error,
                "the API server refused the shard selector: requesting without it, every object is received until the next relist tries it again, and this replica keeps its share"
            ),
        }
    }

    /// Records a list page answered to a request that sent `selector`: whether the
    /// page said it was served by shard (`shardInfo`), how many objects it held that
    /// the filter kept, and how many the filter dropped.
    pub(super) fn listed(
        &self,
        resource: &str,
        selector: &ShardSelector,
        said_served: bool,
        kept: usize,
        dropped: usize,
    ) {
        // Objects fall in or out of a share independently only when the hashed field is
        // their own: by namespace, a whole collection may sit in one namespace.
        let by_uid = selector.field() == ShardField::Uid;
        let served = if said_served {
            true
        } else if dropped > 0 {
            false
        } else if kept >= EVIDENCE && by_uid && !selector.asks_everything() {
            true
        } else {
            return;
        };
        let mut said = self.said.locked();
        if *said == Some(served) {
            return;
        }
        *said = Some(served);
        if served {
            tracing::info!(
                resource,
                "the API server filters this collection by shard: each replica receives only its share"
            );
        } else {
            tracing::info!(
                resource,
                "the API server does not filter by shard (sharded list and watch needs Kubernetes 1.36+ with the ShardedListAndWatch feature gate): every object is received and this replica keeps its share"
            );
        }
    }

    /// What was last said: whether the server filters (`None`: nothing yet).
    pub(super) fn said(&self) -> Option<bool> {
        *self.said.locked()
    }
}

/// What a streaming list's initial events show of the server: how many the filter
/// kept and dropped before the bookmark that ends them, then told to [`ServerShards`].
pub(super) struct InitialEvents {
    shards: Arc<ServerShards>,
    resource: String,
    selector: ShardSelector,
    kept: usize,
    dropped: usize,
}

impl InitialEvents {
    /// Counting the initial events of a streaming list sent with `selector`.
    pub(super) fn new(shards: Arc<ServerShards>, resource: &str, selector: ShardSelector) -> Self {
        Self {
            shards,
            resource: resource.to_owned(),
            selector,
            kept: 0,
            dropped: 0,
        }
    }

    /// Counts `event`; `true` once it ended the initial events (and the count was
    /// told).
    pub(super) fn ended_by<K>(&mut self, event: &Result<WatchEvent<K>, kube::Error>) -> bool {
        match event {
            Ok(WatchEvent::FilteredOut { .. }) => self.dropped += 1,
            Ok(WatchEvent::Bookmark {
                initial_events_end: true,
                ..
            }) => {
                let (kept, dropped) = (self.kept, self.dropped);
                self.shards
                    .listed(&self.resource, &self.selector, false, kept, dropped);
                return true;
            }
            Ok(WatchEvent::Bookmark { .. }) => {}
            Ok(_) => self.kept += 1,
            Err(_) => {}
        }
        false
    }
}

#[cfg(test)]
mod tests;
