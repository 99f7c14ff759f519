//! Read-your-own-writes: remembering a reconcile's writes and waiting, bounded, for the
//! cache to show them; the rule is described in the [controller docs](super#read-your-writes).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio::sync::Notify;

use crate::key::ObjectKey;
use crate::lock::MutexExt;
use crate::object::{Meta, Object};
use crate::reflector::{KeyFilter, ObjectHead};
use crate::store::Indexer;

/// What the cache must show once a tracked write has reached it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Written {
    /// The object exists at this resourceVersion or a newer one.
    AtLeast(String),
    /// The object is gone, or (deletion pending on finalizers) at this version or newer.
    Deleted(Option<String>),
}

/// A cache that can say where one of its objects is.
pub(crate) trait CacheProbe: Send + Sync {
    /// The cached object's resourceVersion, `None` when the key is not cached.
    fn cached_version(&self, key: &ObjectKey) -> Option<String>;

    /// Whether the cache holds objects like the one with metadata `meta` at all: a
    /// write of one it filters out is never waited for.
    fn holds(&self, _meta: &ObjectMeta) -> bool {
        true
    }
}

impl<C: Object + Send + Sync + 'static> CacheProbe for Indexer<C> {
    fn cached_version(&self, key: &ObjectKey) -> Option<String> {
        self.get(key).map(|object| {
            object
                .metadata()
                .resource_version()
                .unwrap_or_default()
                .to_owned()
        })
    }
}

/// The cache of an informer with a key filter (a sharded controller's): it holds only
/// what the filter keeps.
pub(crate) struct FilteredCache<C> {
    pub(crate) indexer: Indexer<C>,
    pub(crate) filter: Arc<dyn KeyFilter>,
}

impl<C: Object + Send + Sync + 'static> CacheProbe for FilteredCache<C> {
    fn cached_version(&self, key: &ObjectKey) -> Option<String> {
        self.indexer.cached_version(key)
    }

    fn holds(&self, meta: &ObjectMeta) -> bool {
        ObjectHead::of(meta).is_none_or(|head| self.filter.keeps_object(&head))
    }
}

/// One write the next reconcile of a key waits for.
#[derive(Clone)]
pub(crate) struct Expectation {
    /// The cache holding the written object.
    pub(crate) cache: Arc<dyn CacheProbe>,
    /// The written object's key.
    pub(crate) key: ObjectKey,
    /// What the cache must show.
    pub(crate) written: Written,
}

impl std::fmt::Debug for Expectation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expectation")
            .field("key", &self.key)
            .field("written", &self.written)
            .finish_non_exhaustive()
    }
}

impl Expectation {
    /// Whether the cache has caught up with this write.
    pub(crate) fn is_met(&self) -> bool {
        let cached = self.cache.cached_version(&self.key);
        match (&self.written, cached) {
            (Written::AtLeast(_), None) => false,
            (Written::AtLeast(written), Some(cached)) => at_least(&cached, written),
            (Written::Deleted(_), None) => true,
            (Written::Deleted(None), Some(_)) => false,
            (Written::Deleted(Some(written)), Some(cached)) => at_least(&cached, written),
        }
    }
}

/// Whether resourceVersion `cached` is `written` or newer.
fn at_least(cached: &str, written: &str) -> bool {
    match (cached.parse::<u64>(), written.parse::<u64>()) {
        (Ok(cached), Ok(written)) => cached >= written,
        _ => cached == written,
    }
}

/// How a wait for a key's writes ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitOutcome {
    /// Nothing was pending for the key.
    NothingPending,
    /// Every write reached the cache.
    CaughtUp,
    /// The bound passed first; the writes still missing were dropped.
    TimedOut,
}

/// The writes pending per reconciled key, and the signal that caches changed.
#[derive(Debug)]
pub(crate) struct ReadYourWrites {
    pending: Mutex<HashMap<ObjectKey, Vec<Expectation>>>,
    cache_changed: Arc<Notify>,
    timeout: Duration,
}

impl ReadYourWrites {
    /// Waits at most `timeout` per reconcile; `cache_changed` is notified (to all
    /// waiters) whenever a watched cache changes.
    pub(crate) fn new(timeout: Duration, cache_changed: Arc<Notify>) -> Self {
        Self {
            pending: Mutex::new(HashMap::new()),
            cache_changed,
            timeout,
        }
    }

    /// Remembers a write made while reconciling `reconciled`.
    pub(crate) fn record(&self, reconciled: &ObjectKey, expectation: Expectation) {
        self.pending
            .locked()
            .entry(reconciled.clone())
            .or_default()
            .push(expectation);
    }

    /// How many writes are pending for `reconciled`.
    #[cfg(test)]
    pub(crate) fn pending_for(&self, reconciled: &ObjectKey) -> usize {
        self.pending.locked().get(reconciled).map_or(0, Vec::len)
    }

    /// Waits until every write recorded for `reconciled` is in its cache, or the bound
    /// passes; either way nothing stays pending for the key afterwards.
    pub(crate) async fn wait(&self, reconciled: &ObjectKey) -> WaitOutcome {
        if !self.pending.locked().contains_key(reconciled) {
            return WaitOutcome::NothingPending;
        }
        let deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            // Registered before the check, so a change between check and sleep wakes us.
            let changed = self.cache_changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            if self.settle(reconciled) {
                return WaitOutcome::CaughtUp;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                let missing = self.pending.locked().remove(reconciled).unwrap_or_default();
                tracing::warn!(
                    key = %reconciled,
                    ?missing,
                    timeout = ?self.timeout,
                    "the cache did not show this controller's own writes in time; reconciling anyway"
                );
                return WaitOutcome::TimedOut;
            }
        }
    }

    /// Drops the writes of `reconciled` the cache has caught up with; true when none
    /// are left.
    fn settle(&self, reconciled: &ObjectKey) -> bool {
        let mut pending = self.pending.locked();
        let Some(writes) = pending.get_mut(reconciled) else {
            return true;
        };
        writes.retain(|write| !write.is_met());
        if writes.is_empty() {
            pending.remove(reconciled);
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache whose versions the test sets, notifying like an informer would.
    #[derive(Default)]
    struct Versions(Mutex<HashMap<ObjectKey, String>>);

    impl CacheProbe for Versions {
        fn cached_version(&self, key: &ObjectKey) -> Option<String> {
            self.0.locked().get(key).cloned()
        }
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::namespaced("ns", name)
    }

    fn expect(cache: &Arc<Versions>, name: &str, written: Written) -> Expectation {
        Expectation {
            cache: Arc::clone(cache) as Arc<dyn CacheProbe>,
            key: key(name),
            written,
        }
    }

    /// A cache filtered by the controller's key holds the children of kept owners
    /// only: a write of any other object is not waited for.
    #[test]
    fn a_filtered_cache_holds_only_what_its_filter_keeps() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

        use crate::reflector::{ControlledBy, FnKeyFilter};

        let owners = Arc::new(FnKeyFilter::new(|_, name| name == "mine"));
        let cache = FilteredCache {
            indexer: crate::store::Writer::<ConfigMap>::new().indexer(),
            filter: Arc::new(ControlledBy::<ConfigMap>::new(owners)),
        };
        let child_of = |owner: &str| ObjectMeta {
            name: Some("child".into()),
            namespace: Some("ns".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: owner.into(),
                controller: Some(true),
                ..OwnerReference::default()
            }]),
            ..ObjectMeta::default()
        };
        assert!(cache.holds(&child_of("mine")));
        assert!(!cache.holds(&child_of("theirs")));
        assert!(!cache.holds(&ObjectMeta {
            owner_references: None,
            ..child_of("mine")
        }));
        assert!(Versions::default().holds(&child_of("theirs")));
    }

    #[test]
    fn versions_compare_as_integers_and_other_strings_only_exactly() {
        assert!(at_least("10", "9"));
        assert!(at_least("10", "10"));
        assert!(!at_least("9", "10"));
        assert!(at_least("abc", "abc"));
        assert!(!at_least("abd", "abc"));
    }

    #[test]
    fn a_deletion_is_met_when_the_object_is_gone_or_at_the_pending_deletion() {
        let cache = Arc::new(Versions::default());
        cache.0.locked().insert(key("child"), "5".into());
        assert!(!expect(&cache, "child", Written::Deleted(None)).is_met());
        assert!(!expect(&cache, "child", Written::Deleted(Some("6".into()))).is_met());
        cache.0.locked().insert(key("child"), "6".into());
        assert!(expect(&cache, "child", Written::Deleted(Some("6".into()))).is_met());
        cache.0.locked().remove(&key("child"));
        assert!(expect(&cache, "child", Written::Deleted(None)).is_met());
    }

    #[tokio::test(start_paused = true)]
    async fn the_next_reconcile_waits_until_the_cache_shows_the_write() {
        let cache = Arc::new(Versions::default());
        let changed = Arc::new(Notify::new());
        let ryw = Arc::new(ReadYourWrites::new(
            Duration::from_secs(10),
            Arc::clone(&changed),
        ));
        ryw.record(
            &key("parent"),
            expect(&cache, "child", Written::AtLeast("7".into())),
        );
        let waiter = tokio::spawn({
            let ryw = Arc::clone(&ryw);
            async move { ryw.wait(&key("parent")).await }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!waiter.is_finished(), "the child is not cached yet");

        // An older version of the child (someone else's write) is not enough.
        cache.0.locked().insert(key("child"), "6".into());
        changed.notify_waiters();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!waiter.is_finished());

        cache.0.locked().insert(key("child"), "7".into());
        changed.notify_waiters();
        assert_eq!(waiter.await.unwrap(), WaitOutcome::CaughtUp);
        assert_eq!(ryw.pending_for(&key("parent")), 0);
        assert_eq!(ryw.wait(&key("parent")).await, WaitOutcome::NothingPending);
    }

    #[tokio::test(start_paused = true)]
    async fn the_wait_is_bounded_and_forgets_what_never_arrived() {
        let cache = Arc::new(Versions::default());
        let ryw = ReadYourWrites::new(Duration::from_secs(3), Arc::new(Notify::new()));
        ryw.record(
            &key("parent"),
            expect(&cache, "child", Written::AtLeast("7".into())),
        );
        let started = tokio::time::Instant::now();
        assert_eq!(ryw.wait(&key("parent")).await, WaitOutcome::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(3));
        assert_eq!(ryw.pending_for(&key("parent")), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn writes_of_other_keys_do_not_hold_a_reconcile_back() {
        let cache = Arc::new(Versions::default());
        let ryw = ReadYourWrites::new(Duration::from_secs(3), Arc::new(Notify::new()));
        ryw.record(
            &key("other"),
            expect(&cache, "child", Written::AtLeast("7".into())),
        );
        assert_eq!(ryw.wait(&key("parent")).await, WaitOutcome::NothingPending);
        assert_eq!(ryw.pending_for(&key("other")), 1);
    }
}
