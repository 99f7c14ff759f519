//! What a [`Recorder`](super::Recorder)'s handles and its background writer share: the
//! settings, the caches under one lock and the counters. Both sides import it, so
//! neither imports the other for it.

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use super::config::RecorderConfig;
use super::series::SeriesCache;
use super::spam_filter::SpamFilter;
use super::spec::Reporter;
use super::stats::Counters;

/// What the recorder's handles and its writer share.
pub(super) struct Shared {
    pub(super) reporter: Reporter,
    pub(super) config: RecorderConfig,
    pub(super) state: Mutex<State>,
    pub(super) stats: Counters,
    /// The writer has not ended yet.
    pub(super) running: AtomicBool,
}

/// The recorder's caches, under one lock taken briefly by `publish` and the writer.
pub(super) struct State {
    pub(super) spam: SpamFilter,
    pub(super) series: SeriesCache,
    /// The writer has written its last count and ended: publish drops everything.
    pub(super) closed: bool,
}
