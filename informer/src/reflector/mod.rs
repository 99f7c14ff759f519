//! The Reflector: keeps a store in step with the API server by list-and-watch.
//!
//! This is client-go's `Reflector`, typed. It lists the collection, hands the whole
//! list to the store as one [`ReflectorStore::replace`], then watches from the list's
//! resourceVersion and forwards every event as add, update or delete. It never loses
//! or invents state:
//!
//! - The first list asks for resourceVersion "0" (served from the API server's watch
//!   cache) in pages of 500 where the server pages; a continue token that expired
//!   mid-list falls back to a full list.
//! - Watches start from the last resourceVersion seen, ask for bookmarks, and end
//!   after a random 5 to 10 minutes; a watch that ends normally is simply restarted
//!   from where it was, without relisting.
//! - 410 Gone (the resourceVersion is older than the server keeps) means relist. If
//!   the relist at that resourceVersion is itself Gone, the reflector lists again at
//!   "" (a consistent read from etcd), so it always makes progress.
//!   A relist offers the store's objects to the lister-watcher
//!   ([`ReflectorStore::cached_objects`], [`ListerWatcher::list_reusing`]): an object
//!   listed at the resourceVersion the store holds is the store's copy, not decoded
//!   again, so a relist of a mostly unchanged collection does not hold it twice.
//! - Errors back off exponentially (800 ms up to 30 s, with jitter, reset after two
//!   quiet minutes). A refused connection retries the watch, not the list. A watch
//!   that closes at once without events counts as an error.
//! - A (re)sync (list or streaming list) that fails is kept, until one succeeds, as a
//!   [`SyncError`] that names the resource (`backups.example.com is not served by the
//!   API server`) or the server that cannot be reached
//!   ([`Reflector::last_sync_error`]), and logged at warn level once per streak of
//!   the same failure.
//! - An object that does not decode is reported (with its key) and skipped.
//!   `metadata.managedFields` are dropped while decoding unless asked for
//!   ([`ManagedFields`](source::ManagedFields)).
//! - A resync timer asks the store to resync (re-deliver what it knows).
//! - A [`KeyFilter`] ([`Config::key_filter`](Config#structfield.key_filter)) keeps only
//!   the objects it names, skipped before they are decoded; when its generation moves
//!   the reflector ends its watch and relists at once, so the store holds exactly what
//!   it keeps (see [`KeyFilter`] for the rules).
//! - By default ([`Config::streaming_list`](Config#structfield.streaming_list)) each
//!   (re)sync is first tried as a streaming list (client-go's WatchList): one watch
//!   that sends every object, then a bookmark, then goes on as the watch; the objects
//!   replace the store's at the bookmark, as a list's would. A server that refuses
//!   streaming lists (one before 1.27, or with them off) gets one warning and plain
//!   lists and watches from then on. See [below](self#streaming-lists).
//!
//! # Streaming lists
//!
//! The reflector sends streaming lists only to lister-watchers that serve them
//! ([`Capabilities::streaming_list`](source::Capabilities#structfield.streaming_list):
//! [`ApiListerWatcher`](source::ApiListerWatcher) and
//! [`FakeSource`](source::FakeSource) do). Nothing partial reaches the store: a
//! stream that ends before its initial events do is dropped and the sync tried again
//! after a backoff. A 410 asks again from "" (the most recent state), a 429 or a
//! refused connection after a backoff; 401 or 403 fails the sync as a denied list
//! does; 400 or 422 is the server refusing, remembered for the reflector's life
//! ([`StatsSnapshot::streaming_list_refused`],
//! [`Reflector::uses_streaming_list`]); any other error lists instead, this once.
//!
//! [`Reflector::run`] runs until its shutdown future completes; everything it does
//! happens inside that one future, so when it returns nothing is left running.
//!
//! The reflector reads through a [`ListerWatcher`]; [`source`] holds that seam and
//! what serves it: the API server, two closures (client-go's `cache.ListWatch`), and
//! an in-memory collection for unit tests (client-go's `FakeControllerSource`).

mod backoff;
mod config;
mod error;
mod filtering;
mod key_filter;
mod metrics;
mod progress;
mod relist;
pub mod source;
mod store;
mod watch;
mod watch_list;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;
use tracing::Instrument;

pub use crate::cached::CachedObjects;
pub use backoff::BackoffConfig;
pub use config::{Config, ShouldResync, WatchErrorHandler};
pub use error::{DecodeError, ReflectorError, SyncError};
pub use key_filter::{
    ControlledBy, FnKeyFilter, KeyFilter, ObjectHead, OwnerHead, ShardField, ShardSelector,
    SharedKeyFilter,
};
pub(crate) use metrics::ReflectorStats;
pub use metrics::{Phase, ReflectorMetrics, StatsSnapshot};
pub use store::ReflectorStore;

use source::{ListPage, ListRequest, ListerWatcher};

use crate::cause::Chain;
use crate::object::Object;
use backoff::Backoff;
use config::DEFAULT_PAGE_SIZE;
pub(crate) use error::{is_expired, is_too_large_resource_version};
use progress::{FilterGeneration, OpenWatch, Progress, Relist, StreamingList};
pub(crate) use relist::RelistTrigger;

/// A watch shorter than this that brought no events is treated as an error.
const SHORT_WATCH: Duration = Duration::from_secs(1);

/// How long past its own timeout a watch may stay open before the reflector treats
/// its connection as dead: the server ends every watch at the timeout the reflector
/// asked for, so a watch still open `timeout + dead_watch_grace(timeout)` after it
/// was asked for sits on a connection that died silently (a network partition drops
/// packets without a FIN or RST). client-go notices through HTTP/2 pings; a kube
/// client's connections are not ours to ping, so the watch's own deadline is the
/// watchdog. The bound is 5-10 minutes plus this grace with the default timeouts;
/// a shorter [`Config::watch_timeout`] tightens it.
fn dead_watch_grace(timeout: Duration) -> Duration {
    Duration::from_secs(5) + timeout / 10
}

/// Error from [`Reflector::run`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunError {
    /// `run` was called while the reflector was already running.
    #[error("the reflector is already running")]
    AlreadyRunning,
}

/// Lists and watches one resource type into a [`ReflectorStore`]; see the
/// [module docs](self).
pub struct Reflector<K> {
    name: &'static str,
    /// The resource as errors name it (see [`Capabilities::resource`](source::Capabilities#structfield.resource)).
    resource: String,
    /// The server as errors name it, when the lister-watcher says.
    server_url: Option<String>,
    /// The lister-watcher serves streaming lists.
    streams: bool,
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    store: Arc<dyn ReflectorStore<K>>,
    config: Config,
    /// The key filter, when the reflector applies it itself: the lister-watcher does
    /// not ([`Capabilities::filters_keys`](source::Capabilities#structfield.filters_keys)).
    own_key_filter: Option<Arc<dyn KeyFilter>>,
    stats: Arc<ReflectorStats>,
    running: AtomicBool,
    /// A server refused a streaming list: list and watch for good.
    streaming_list_refused: AtomicBool,
    /// Relists asked for from outside (a consistency check healing the store).
    relist: RelistTrigger,
    /// The key filter's generation the store's objects were filtered with (see
    /// [`filter_generation_of_store`](Self::filter_generation_of_store)).
    store_filter_generation: Arc<AtomicU64>,
}

impl<K> std::fmt::Debug for Reflector<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reflector")
            .field("name", &self.name)
            .field("resource", &self.resource)
            .field("config", &self.config)
            .field("stats", &self.stats.snapshot())
            .finish()
    }
}

impl<K> Reflector<K>
where
    K: Object + Send + 'static,
{
    /// A reflector that lists and watches with `lister_watcher` into `store`.
    pub fn new(
        lister_watcher: impl ListerWatcher<K> + 'static,
        store: Arc<dyn ReflectorStore<K>>,
        config: Config,
    ) -> Self {
        Self::from_parts(Arc::new(lister_watcher), store, config)
    }

    /// Like [`Reflector::new`], with a shared lister-watcher.
    pub fn from_parts(
        lister_watcher: Arc<dyn ListerWatcher<K>>,
        store: Arc<dyn ReflectorStore<K>>,
        config: Config,
    ) -> Self {
        let name = crate::key::short_type_name::<K>();
        let capabilities = lister_watcher.capabilities();
        let own_key_filter = config
            .key_filter
            .clone()
            .filter(|_| !capabilities.filters_keys);
        Self {
            name,
            resource: capabilities.resource.unwrap_or_else(|| name.to_owned()),
            server_url: capabilities.server_url,
            streams: capabilities.streaming_list,
            lister_watcher,
            store,
            config,
            own_key_filter,
            stats: Arc::default(),
            running: AtomicBool::new(false),
            streaming_list_refused: AtomicBool::new(false),
            relist: RelistTrigger::new(),
            store_filter_generation: Arc::default(),
        }
    }

    /// The key filter's generation the store's objects were filtered with: that of the
    /// sync whose list last replaced them, set just before the replace is written (0
    /// without a key filter). A consistency check compares a cache with the server only
    /// under the generation the cache follows.
    pub(crate) fn filter_generation_of_store(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.store_filter_generation)
    }

    /// A handle that makes this reflector relist at once, whenever it is running
    /// (see [`RelistTrigger`]).
    pub(crate) fn relist_trigger(&self) -> RelistTrigger {
        self.relist.clone()
    }

    /// The resourceVersion of the last list or event applied to the store ("" before
    /// the first list).
    pub fn last_sync_resource_version(&self) -> String {
        self.stats.last_resource_version()
    }

    /// The reflector's counters.
    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }

    /// Why the last (re)sync failed, until one succeeds: what to tell a user whose
    /// cache never fills (a CRD that is not installed, a server that cannot be
    /// reached, access denied). Each failure is also logged, at warn level, once per
    /// streak of the same failure.
    pub fn last_sync_error(&self) -> Option<SyncError> {
        self.stats.last_sync_error()
    }

    /// A handle to the counters that stays valid while the reflector runs (the
    /// informer reads its snapshot through it).
    pub(crate) fn stats_handle(&self) -> Arc<ReflectorStats> {
        self.stats.clone()
    }

    /// Lists and watches until `shutdown` completes. Errors never end it: they are
    /// reported (tracing, metrics, the error handler) and retried with backoff.
    pub async fn run(&self, shutdown: impl Future<Output = ()>) -> Result<(), RunError> {
        if self.running.swap(true, Ordering::SeqCst) {
            return Err(RunError::AlreadyRunning);
        }
        // However `run` ends, returned or dropped (an informer drops it at shutdown).
        let _stopping = Stopping(self);
        let span = tracing::info_span!("reflector", kind = self.name, resource = %self.resource);
        // Biased: a shutdown that has already happened wins before the first request.
        tokio::select! {
            biased;
            () = shutdown => {}
            () = self.run_forever().instrument(span) => {}
        }
        Ok(())
    }

    async fn run_forever(&self) {
        let listed = AtomicBool::new(false);
        let list_and_watch = async {
            let mut progress = Progress {
                last_resource_version: String::new(),
                event_resource_version: String::new(),
                resource_version_unavailable: false,
                paginated_result: false,
                key_filter_generation: self.config.key_filter.as_deref().map(FilterGeneration::of),
                relist_requests: self.relist.requests(),
            };
            let mut backoff = Backoff::new(self.config.backoff.clone());
            loop {
                match self.sync(&mut progress).await {
                    Ok(streamed) => {
                        self.synced();
                        listed.store(true, Ordering::Relaxed);
                        match self.watch(&mut progress, streamed).await {
                            Ok(Relist::AtOnce) => continue,
                            Ok(Relist::AfterBackoff) => {}
                            Err(e) => self.report(&e),
                        }
                    }
                    Err(e) => self.sync_failed(e),
                }
                let delay = backoff.next_delay();
                tracing::debug!(?delay, "backing off before the next list and watch");
                self.stats.set_phase(Phase::BackingOff);
                tokio::time::sleep(delay).await;
            }
        };
        tokio::select! {
            () = list_and_watch => {}
            () = self.resync_loop(&listed) => {}
        }
    }

    async fn resync_loop(&self, listed: &AtomicBool) {
        // A zero period is none, however the field was set (a zero tick would panic).
        let Some(period) = self.config.resync_period.filter(|period| !period.is_zero()) else {
            return std::future::pending().await;
        };
        let mut ticks = tokio::time::interval_at(Instant::now() + period, period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let wanted = self.config.should_resync.as_ref().is_none_or(|f| f());
            if wanted && listed.load(Ordering::Relaxed) {
                tracing::trace!("resync");
                self.store.resync();
            }
        }
    }

    /// Fills the store: by a streaming list when it can (returning its watch, to go on
    /// reading), else by a list.
    async fn sync(&self, progress: &mut Progress) -> Result<Option<OpenWatch<K>>, ReflectorError> {
        progress.key_filter_syncing();
        if self.uses_streaming_list()
            && let StreamingList::Synced(watch) = self.streaming_list(progress).await?
        {
            return Ok(Some(watch));
        }
        self.list(progress).await?;
        Ok(None)
    }

    /// client-go's `relistResourceVersion`.
    fn relist_resource_version(progress: &Progress) -> &str {
        if progress.resource_version_unavailable {
            ""
        } else if progress.last_resource_version.is_empty() {
            "0"
        } else {
            &progress.last_resource_version
        }
    }

    async fn list(&self, progress: &mut Progress) -> Result<(), ReflectorError> {
        self.stats.set_phase(Phase::Listing);
        let started = Instant::now();
        let resource_version = Self::relist_resource_version(progress).to_owned();
        let listed = match self.list_all(&resource_version, progress).await {
            Ok(listed) => listed,
            Err(e)
                if (is_expired(&e) || is_too_large_resource_version(&e))
                    && !resource_version.is_empty() =>
            {
                // The version we asked for is gone (or not there yet): fall back to
                // a consistent read, so the reflector always makes progress.
                self.report(&ReflectorError::Expired(e));
                progress.resource_version_unavailable = true;
                self.list_all("", progress)
                    .await
                    .map_err(ReflectorError::List)?
            }
            Err(e) => return Err(ReflectorError::List(e)),
        };
        progress.resource_version_unavailable = false;
        let count = listed.items.len() + listed.unchanged.len();
        self.replacing(progress);
        self.store
            .replace(listed.items, listed.unchanged, &listed.resource_version);
        self.set_resource_version(progress, listed.resource_version);
        let elapsed = started.elapsed();
        tracing::debug!(items = count, resource_version = %progress.last_resource_version, ?elapsed, "listed");
        self.record(|metrics| metrics.list_completed(count, elapsed));
        Ok(())
    }

    /// Lists every page at `resource_version`, into one page. Objects the store holds
    /// unchanged are taken from it (see [`ReflectorStore::cached_objects`]).
    async fn list_all(
        &self,
        resource_version: &str,
        progress: &mut Progress,
    ) -> Result<ListPage<K>, kube::Error> {
        let cache = self.store.cached_objects();
        let list = |request: ListRequest| match &cache {
            Some(cache) => self.lister_watcher.list_reusing(request, Arc::clone(cache)),
            None => self.lister_watcher.list(request),
        };
        // client-go's rule: an explicit page size pages every list; otherwise "" and
        // "0" are paged by default, and a specific version is asked for whole, so that
        // the watch cache serves it, unless the server paged the first list (then there
        // is no watch cache, and paging spares etcd).
        let limit = match (self.config.page_size, resource_version) {
            (Some(size), _) => Some(size),
            (None, "" | "0") => Some(DEFAULT_PAGE_SIZE),
            (None, _) => progress.paginated_result.then_some(DEFAULT_PAGE_SIZE),
        };
        let mut listed = ListPage::default();
        let mut request = ListRequest {
            resource_version: resource_version.to_owned(),
            limit,
            continue_token: None,
            key_filter: self.request_key_filter(),
        };
        loop {
            let mut page = match list(request.clone()).await {
                Ok(page) => page,
                Err(e) if is_expired(&e) && request.continue_token.is_some() => {
                    // The continue token expired mid-list: start over, unpaged.
                    tracing::debug!("continue token expired; listing everything at once");
                    listed = ListPage::default();
                    request.continue_token = None;
                    request.limit = None;
                    list(request.clone()).await?
                }
                Err(e) => return Err(e),
            };
            self.filter_page(&mut page);
            for error in page.undecodable {
                self.report(&ReflectorError::Decode(error));
            }
            append(&mut listed.items, page.items);
            append(&mut listed.unchanged, page.unchanged);
            match page.continue_token {
                Some(token) => {
                    if resource_version == "0" {
                        progress.paginated_result = true;
                    }
                    request.continue_token = Some(token);
                }
                None => {
                    listed.resource_version = page.resource_version;
                    return Ok(listed);
                }
            }
        }
    }

    fn set_resource_version(&self, progress: &mut Progress, resource_version: String) {
        self.record(|metrics| metrics.resource_version(&resource_version));
        progress.last_resource_version = resource_version;
    }

    /// Feeds an observation to the built-in counters and to the configured hooks.
    fn record(&self, observe: impl Fn(&dyn ReflectorMetrics)) {
        observe(self.stats.as_ref());
        if let Some(metrics) = &self.config.metrics {
            observe(metrics.as_ref());
        }
    }

    /// A (re)sync failed: remembers why (see [`Reflector::last_sync_error`]), tells
    /// the metrics and the error handler, and logs it at warn level when it starts a
    /// streak of failures or differs from the one before; repeats go to debug.
    fn sync_failed(&self, error: ReflectorError) {
        self.notify(&error);
        let error = SyncError::new(error, &self.resource, self.server_url.as_deref());
        let (failures, previous) = self.stats.sync_failed(error.clone());
        let repeated = previous.is_some_and(|previous| previous.to_string() == error.to_string());
        if !repeated {
            tracing::warn!(failures, "{error}; retrying with backoff");
        }
        tracing::debug!(failures, "sync failed: {}", Chain(error.reflector_error()));
    }

    /// A (re)sync filled the store: forgets the last failure, and says so if there were
    /// any.
    fn synced(&self) {
        let failures = self.stats.sync_succeeded();
        if failures > 0 {
            tracing::info!(
                failures,
                "synced {} after {failures} failed attempts",
                self.resource
            );
        }
    }

    /// Logs an error and tells the metrics and the error handler.
    fn report(&self, error: &ReflectorError) {
        if error.is_access_denied() {
            tracing::warn!("access denied: {}", Chain(error));
        } else {
            tracing::warn!("{}", Chain(error));
        }
        self.notify(error);
    }

    fn notify(&self, error: &ReflectorError) {
        self.record(|metrics| metrics.error(error));
        if let Some(handler) = &self.config.error_handler {
            handler(error);
        }
    }
}

/// Marks a reflector stopped, and free to run again, when its `run` ends.
struct Stopping<'a, K>(&'a Reflector<K>);

impl<K> Drop for Stopping<'_, K> {
    fn drop(&mut self) {
        self.0.stats.set_phase(Phase::Stopped);
        self.0.running.store(false, Ordering::SeqCst);
    }
}

/// Appends `more` to `all`, taking `more`'s allocation when `all` is empty.
fn append<T>(all: &mut Vec<T>, more: Vec<T>) {
    if all.is_empty() {
        *all = more;
    } else {
        all.extend(more);
    }
}

fn random_in(range: &std::ops::RangeInclusive<Duration>) -> Duration {
    let (low, high) = (*range.start(), *range.end());
    if high <= low {
        return low;
    }
    rand::rng().random_range(low..=high)
}

#[cfg(test)]
mod tests;
