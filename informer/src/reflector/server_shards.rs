//! [`ServerShards`]: whether the API server filters a collection by the key filter's
//! shard selector, as far as one [`ApiListerWatcher`](super::ApiListerWatcher) has
//! seen.
//!
//! A [`KeyFilter`](super::KeyFilter) may offer a shard selector
//! ([`server_selector`](super::KeyFilter::server_selector)); the lister-watcher sends
//! it with every list, watch and streaming list. A server with sharded list and watch
//! (Kubernetes 1.36 and later, feature gate `ShardedListAndWatch`) then sends only
//! the objects the selector matches; any other server ignores the parameter and sends
//! everything. Either way the key filter still runs on what arrives, so the cache
//! holds exactly what it keeps: the selector only saves the bytes and the reading. A
//! server that refuses the selector (400 Bad Request, or an error naming the shard
//! selector) is not sent one again, and gets today's full stream.
//!
//! Whether the server filtered is read from what a list brings: it did if the list
//! says so (`metadata.shardInfo`; the 1.36.4 server filters custom resources without
//! saying so), or, for a selector by uid, if a list (or a streaming list's initial
//! events) brought at least [`EVIDENCE`] objects the filter kept and none it dropped,
//! the selector not asking for everything; it did not if the filter dropped any. It is said once per
//! lister-watcher at INFO, and again only if it changes (a server upgraded, or a
//! feature gate turned, under a running informer), and an informer's
//! [`StatsSnapshot::server_filters_shards`](super::StatsSnapshot::server_filters_shards)
//! reads it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::key_filter::SharedKeyFilter;
use super::lister_watcher::WatchEvent;
use crate::lock::MutexExt;

/// How many kept objects, none dropped here, show that the server filtered by uid.
/// Were it sending everything, each object would fall in this member's share with the
/// share's probability, independently of the others: at most about 0.55 with two
/// members or more (a lone member's selector asks for everything, and counts for
/// nothing), so 32 in a row would happen about once in 200 million lists. (By
/// namespace, objects are not independent: nothing but `shardInfo` or a drop tells.)
const EVIDENCE: usize = 32;

/// The selector of the whole hash space: a server that filters by it sends what one
/// that does not would.
const WHOLE_SPACE_END: &str = "'0x10000000000000000')";

/// What one lister-watcher has seen the server do with shard selectors.
#[derive(Debug, Default)]
pub(super) struct ServerShards {
    /// The server refused a shard selector: none is sent again.
    refused: AtomicBool,
    /// What was last said: whether the server filtered.
    said: Mutex<Option<bool>>,
}

impl ServerShards {
    /// The selector to send with a request filtered by `filter`, if any.
    pub(super) fn selector(&self, filter: Option<&SharedKeyFilter>) -> Option<String> {
        if self.refused.load(Ordering::Relaxed) {
            return None;
        }
        filter.and_then(|filter| filter.filter().server_selector())
    }

    /// `selector`, if it was sent and the server did not refuse it: what an answer
    /// can tell about.
    pub(super) fn still_sent(&self, selector: Option<String>) -> Option<String> {
        selector.filter(|_| !self.refused.load(Ordering::Relaxed))
    }

    /// Records a list page answered to a request that sent `selector`: whether the
    /// page said it was served by shard (`shardInfo`), how many objects it held that
    /// the filter kept, and how many the filter dropped.
    pub(super) fn listed(
        &self,
        resource: &str,
        selector: &str,
        said_served: bool,
        kept: usize,
        dropped: usize,
    ) {
        let asks_everything =
            selector.starts_with("shardRange(") && !selector.contains(" || ") && {
                selector.contains("'0x0000000000000000', ") && selector.ends_with(WHOLE_SPACE_END)
            };
        // Objects fall in or out of a share independently only when the hashed field is
        // their own: by namespace, a whole collection may sit in one namespace.
        let by_uid_only = selector
            .split(" || ")
            .all(|range| range.starts_with("shardRange(object.metadata.uid,"));
        let served = if said_served {
            true
        } else if dropped > 0 {
            false
        } else if kept >= EVIDENCE && by_uid_only && !asks_everything {
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

    /// Records that the server refused a selector (`error`): none is sent again.
    pub(super) fn refused(&self, resource: &str, error: &kube::Error) {
        *self.said.locked() = Some(false);
        if !self.refused.swap(true, Ordering::Relaxed) {
            tracing::info!(
                resource,
                error = %error,
                "the API server refused the shard selector: every object is received from now on and this replica keeps its share"
            );
        }
    }
}

/// What a streaming list's initial events show of the server: how many the filter
/// kept and dropped before the bookmark that ends them, then told to [`ServerShards`].
pub(super) struct InitialEvents {
    shards: Arc<ServerShards>,
    resource: String,
    selector: String,
    kept: usize,
    dropped: usize,
}

impl InitialEvents {
    /// Counting the initial events of a streaming list sent with `selector`.
    pub(super) fn new(shards: Arc<ServerShards>, resource: &str, selector: String) -> Self {
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

/// Whether `error` is the server refusing a shard selector: 400 Bad Request, or any
/// error naming it (the 1.36.4 server answers a selector it cannot parse with a 500
/// "invalid shard selector").
pub(super) fn is_refusal(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status)
        if status.code == 400 || status.message.to_ascii_lowercase().contains("shard selector"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reflector::{FnKeyFilter, KeyFilter};

    const WHOLE: &str =
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')";
    const HALF: &str =
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";

    /// A server's refusal of the shard selector parameter.
    fn refusal() -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("unknown parameter", "BadRequest")
                .with_code(400)
                .boxed(),
        )
    }

    struct Selecting;

    impl KeyFilter for Selecting {
        fn keeps(&self, _namespace: Option<&str>, _name: &str) -> bool {
            true
        }
        fn generation(&self) -> tokio::sync::watch::Receiver<u64> {
            tokio::sync::watch::Sender::new(0).subscribe()
        }
        fn server_selector(&self) -> Option<String> {
            Some(WHOLE.into())
        }
    }

    #[test]
    fn a_selector_is_sent_until_the_server_refuses_one() {
        let shards = ServerShards::default();
        let selecting = SharedKeyFilter::new(Arc::new(Selecting));
        let plain = SharedKeyFilter::new(Arc::new(FnKeyFilter::new(|_, _| true)));
        assert!(shards.selector(None).is_none());
        assert!(shards.selector(Some(&plain)).is_none());
        assert!(shards.selector(Some(&selecting)).is_some());
        let error = refusal();
        assert!(is_refusal(&error));
        let invalid = kube::Error::Api(
            kube::core::Status::failure("invalid shard selector: hexStart must be …", "")
                .with_code(500)
                .boxed(),
        );
        assert!(is_refusal(&invalid));
        let other = kube::Error::Api(
            kube::core::Status::failure("etcd", "")
                .with_code(500)
                .boxed(),
        );
        assert!(!is_refusal(&other));
        shards.refused("configmaps", &error);
        assert!(shards.selector(Some(&selecting)).is_none());
    }

    #[test]
    fn a_streaming_lists_initial_events_tell_whether_the_server_filtered() {
        let shards = Arc::new(ServerShards::default());
        let mut initial = InitialEvents::new(Arc::clone(&shards), "widgets", HALF.into());
        let added = || Ok::<_, kube::Error>(WatchEvent::Added(()));
        for _ in 0..40 {
            assert!(!initial.ended_by(&added()));
        }
        assert_eq!(
            shards.said(),
            None,
            "nothing said before the initial events end"
        );
        assert!(initial.ended_by(&Ok(WatchEvent::<()>::initial_events_end("7"))));
        assert_eq!(shards.said(), Some(true));

        let mut initial = InitialEvents::new(Arc::clone(&shards), "widgets", HALF.into());
        assert!(!initial.ended_by(&added()));
        assert!(!initial.ended_by(&Ok(WatchEvent::<()>::filtered_out("8"))));
        assert!(initial.ended_by(&Ok(WatchEvent::<()>::initial_events_end("9"))));
        assert_eq!(shards.said(), Some(false));
    }

    #[test]
    fn the_server_filtered_if_it_says_so_or_nothing_arrived_to_drop() {
        let said = |shards: &ServerShards| *shards.said.locked();
        let shards = ServerShards::default();
        shards.listed("widgets", HALF, false, 10, 0);
        assert_eq!(said(&shards), None, "too few objects to tell");
        shards.listed("widgets", WHOLE, false, 1000, 0);
        assert_eq!(said(&shards), None, "everything asked for: nothing to tell");
        let by_namespace = HALF.replace("metadata.uid", "metadata.namespace");
        shards.listed("widgets", &by_namespace, false, 1000, 0);
        assert_eq!(said(&shards), None, "by namespace, only a drop tells");
        shards.listed("widgets", HALF, false, 1000, 0);
        assert_eq!(said(&shards), Some(true));
        shards.listed("widgets", HALF, false, 10, 3);
        assert_eq!(said(&shards), Some(false));
        shards.listed("widgets", HALF, true, 0, 0);
        assert_eq!(said(&shards), Some(true));
    }

    /// The lines logged on this thread while `run` runs, without time or colour.
    fn logged(run: impl FnOnce()) -> Vec<String> {
        #[derive(Clone, Default)]
        struct Lines(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.locked().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_max_level(tracing::Level::DEBUG)
            .without_time()
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, run);
        let text = String::from_utf8(lines.0.locked().clone()).unwrap();
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn what_the_server_does_is_said_once_at_info_and_again_only_when_it_changes() {
        let refusal = refusal();
        let shards = ServerShards::default();
        let lines = logged(|| {
            shards.listed("widgets", HALF, false, 10, 0);
            shards.listed("widgets", HALF, false, 1000, 0);
            shards.listed("widgets", HALF, false, 1000, 0);
            shards.listed("widgets", HALF, true, 0, 0);
            shards.listed("widgets", HALF, false, 10, 3);
            shards.listed("widgets", HALF, false, 1000, 1);
            shards.listed("widgets", HALF, true, 5, 0);
            shards.refused("widgets", &refusal);
            shards.refused("widgets", &refusal);
        });
        let expected = [
            "filters this collection by shard",
            "does not filter by shard (sharded list and watch needs Kubernetes 1.36+ with the ShardedListAndWatch feature gate)",
            "filters this collection by shard",
            "refused the shard selector",
        ];
        assert_eq!(lines.len(), expected.len(), "{lines:#?}");
        for (line, says) in lines.iter().zip(expected) {
            assert!(line.starts_with(" INFO "), "{line}");
            assert!(line.contains(says), "{line} should say {says}");
            assert!(line.contains(r#"resource="widgets""#), "{line}");
        }
        assert!(lines[3].contains("unknown parameter"), "{}", lines[3]);
    }
}
