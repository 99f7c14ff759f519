//! Reflector settings: a `Default` struct with `#[must_use]` builder methods.

use std::fmt;
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::Duration;

use super::backoff::BackoffConfig;
use super::error::ReflectorError;
use super::key_filter::KeyFilter;
use super::metrics::ReflectorMetrics;

/// Decides at each resync tick whether to resync (client-go's `ShouldResync`); the
/// informer uses it to honour per-handler resync periods.
pub type ShouldResync = Arc<dyn Fn() -> bool + Send + Sync>;

/// Sees every error a reflector meets (client-go's `WatchErrorHandler`).
pub type WatchErrorHandler = Arc<dyn Fn(&ReflectorError) + Send + Sync>;

/// The page size of lists when none is set (client-go's pager default).
pub(crate) const DEFAULT_PAGE_SIZE: u32 = 500;

/// How a [`super::Reflector`] lists and watches. The defaults are client-go's.
#[derive(Clone)]
#[must_use]
#[non_exhaustive]
pub struct Config {
    /// Objects per list page (client-go's `WatchListPageSize`). `None`, the default,
    /// is client-go's default: lists at resourceVersion "" or "0" ask for pages of
    /// 500 objects (client-go's pager default), and a relist at a specific resourceVersion is asked for
    /// whole (so the watch cache can serve it) unless the first list came back in pages
    /// (the watch cache is off: paging spares etcd). `Some(n)` pages every list by `n`.
    /// A list at resourceVersion "0" is served whole from the watch cache whatever the
    /// page size, as for client-go.
    pub page_size: Option<u32>,
    /// How often to ask the store to resync (`None`, the default, or zero: never).
    pub resync_period: Option<Duration>,
    /// Consulted at each resync tick; resync happens when it returns true.
    pub should_resync: Option<ShouldResync>,
    /// Each watch asks the server to end it after a random time in this range
    /// (default 5 to 10 minutes, client-go's), so that watches spread their
    /// reconnects. It also bounds how long a connection that died silently (a network
    /// partition) goes unnoticed: a watch still open a tenth past its timeout plus 5 s
    /// is given up for dead and started again. Shorter ranges are allowed (client-go
    /// has a 5-minute floor; tests and tight liveness bounds want less).
    pub watch_timeout: RangeInclusive<Duration>,
    /// Ask for bookmark events (default true).
    pub allow_bookmarks: bool,
    /// Sync with streaming lists (client-go's WatchList; default true): each
    /// (re)sync is one watch that first sends every object, then goes on as the
    /// watch, instead of a list followed by a watch. Used only with lister-watchers
    /// that serve it ([`Capabilities::streaming_list`]). The first time a server
    /// refuses it (servers before 1.27, or with the feature off), the
    /// reflector logs a warning and lists and watches from then on (see
    /// [`StatsSnapshot::streaming_list_refused`]).
    ///
    /// [`Capabilities::streaming_list`]: super::source::Capabilities#structfield.streaming_list
    /// [`StatsSnapshot::streaming_list_refused`]: super::StatsSnapshot::streaming_list_refused
    pub streaming_list: bool,
    /// Backoff between failed attempts.
    pub backoff: BackoffConfig,
    /// Extra metrics hooks (the built-in counters are always kept).
    pub metrics: Option<Arc<dyn ReflectorMetrics>>,
    /// Called with every error.
    pub error_handler: Option<WatchErrorHandler>,
    /// Keep only the objects this filter keeps, skipped before they are decoded, and
    /// relist when its generation changes (see [`KeyFilter`]; `None`, the default,
    /// keeps everything).
    pub key_filter: Option<Arc<dyn KeyFilter>>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            page_size: None,
            resync_period: None,
            should_resync: None,
            watch_timeout: Duration::from_secs(300)..=Duration::from_secs(600),
            allow_bookmarks: true,
            streaming_list: true,
            backoff: BackoffConfig::default(),
            metrics: None,
            error_handler: None,
            key_filter: None,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("page_size", &self.page_size)
            .field("resync_period", &self.resync_period)
            .field("should_resync", &self.should_resync.is_some())
            .field("watch_timeout", &self.watch_timeout)
            .field("allow_bookmarks", &self.allow_bookmarks)
            .field("streaming_list", &self.streaming_list)
            .field("backoff", &self.backoff)
            .field("metrics", &self.metrics.is_some())
            .field("error_handler", &self.error_handler.is_some())
            .field("key_filter", &self.key_filter.is_some())
            .finish()
    }
}

impl Config {
    /// Objects per list page, for every list (`None`: client-go's default; see
    /// [`Config::page_size`](Self#structfield.page_size)).
    pub fn page_size(mut self, page_size: Option<u32>) -> Self {
        self.page_size = page_size;
        self
    }

    /// Resync every `period` (zero: never).
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = Some(period);
        self
    }

    /// Resync only when `should_resync` says so at a tick.
    pub fn should_resync(
        mut self,
        should_resync: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Self {
        self.should_resync = Some(Arc::new(should_resync));
        self
    }

    /// The range each watch's server-side timeout is drawn from.
    pub fn watch_timeout(mut self, range: RangeInclusive<Duration>) -> Self {
        self.watch_timeout = range;
        self
    }

    /// Whether to ask for bookmark events.
    pub fn allow_bookmarks(mut self, allow: bool) -> Self {
        self.allow_bookmarks = allow;
        self
    }

    /// Whether to sync with streaming lists (see
    /// [`Config::streaming_list`](Self#structfield.streaming_list)); `false` lists and
    /// watches from the start.
    pub fn streaming_list(mut self, enabled: bool) -> Self {
        self.streaming_list = enabled;
        self
    }

    /// The backoff between failed attempts.
    pub fn backoff(mut self, backoff: BackoffConfig) -> Self {
        self.backoff = backoff;
        self
    }

    /// Extra metrics hooks.
    pub fn metrics(mut self, metrics: Arc<dyn ReflectorMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// A handler for every error (forbidden, unauthorized, expired, undecodable...).
    pub fn error_handler(
        mut self,
        handler: impl Fn(&ReflectorError) + Send + Sync + 'static,
    ) -> Self {
        self.error_handler = Some(Arc::new(handler));
        self
    }

    /// Keep only the objects `filter` keeps (see [`KeyFilter`]).
    pub fn key_filter(mut self, filter: Arc<dyn KeyFilter>) -> Self {
        self.key_filter = Some(filter);
        self
    }
}
