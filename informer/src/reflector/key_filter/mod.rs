//! [`KeyFilter`]: a reflector that keeps only some objects, chosen by key (or by their
//! controller's key, [`ControlledBy`]) before they are decoded.
//!
//! A controller sharded across replicas needs in its
//! cache only the objects of its shard. The API server cannot filter by a hash of the
//! key, so every object still arrives; the filter drops the others before they are
//! decoded, so they cost neither memory nor a decode. When the filter changes (a
//! replica joined or left), the reflector relists, so the store ends holding exactly
//! what the filter keeps.
//!
//! The rules (where the filter applies, what a change of it does) are on
//! [`KeyFilter`], where users read them.

use std::fmt;
use std::sync::{Arc, RwLock};

use tokio::sync::watch;

use crate::object::Meta;

/// Which objects a reflector keeps, by namespace and name.
///
/// # Where it applies
///
/// Set it in [`Config::key_filter`](super::Config#structfield.key_filter) (an
/// informer's [`InformerConfig::reflector`](crate::shared_informer::InformerConfig::reflector),
/// or a factory scope's
/// [`Selection::filtered`](crate::factory::Selection::filtered)). Every object
/// that enters the reflector passes it: list items (paged or whole, first lists and
/// relists), a streaming list's initial events, and watch events, deletions included.
/// The reflector hands it to the lister-watcher with each request
/// ([`ListRequest::key_filter`](super::source::ListRequest::key_filter),
/// [`WatchRequest::key_filter`](super::source::WatchRequest::key_filter)):
/// [`ApiListerWatcher`](super::source::ApiListerWatcher) reads only an object's namespace,
/// name and controller reference (an [`ObjectHead`]) from the raw JSON and skips an
/// object not kept there, before decoding it, so it is never stored, never wrapped in
/// an `Arc`, and never reported as undecodable.
/// For a lister-watcher that does not filter
/// ([`Capabilities::filters_keys`](super::source::Capabilities#structfield.filters_keys) is false, as
/// for [`FakeSource`](super::source::FakeSource), and for a [`ListWatch`](super::source::ListWatch)
/// not told otherwise with [`filters_keys`](super::source::ListWatch::filters_keys)), the
/// reflector applies the filter to what it gets, with the same outcome (an undecodable
/// object not kept is not reported either).
///
/// A skipped watch event still moves the reflector's resourceVersion on, as a bookmark
/// would, so a watch that resumes does not replay it. Skipped objects are counted in
/// [`StatsSnapshot::filtered_out`](super::StatsSnapshot::filtered_out).
///
/// # When the filter changes
///
/// [`KeyFilter::generation`] says when [`keeps`](KeyFilter::keeps) may answer
/// differently. Change what `keeps` answers first, then the generation: the reflector
/// ends its watch (a streaming list's included) at the next event boundary and
/// relists at once, without a backoff, from the last resourceVersion it saw (client-go's
/// `relistResourceVersion`: never back in time, and served from the watch cache). The
/// relist replaces the store's content as any relist does, so the store holds exactly
/// the objects kept: newly kept ones arrive as adds, and ones no longer kept leave as
/// the relist's deletions (for an informer, tombstones: deletions whose final state is
/// unknown, as for any object missing from a relist).
///
/// **So the handlers of a filtered informer see a filter that shrinks as deletions of
/// objects that may well still exist.** That is why a filtered informer is never shared
/// with unfiltered users (the factory keeps a filtered selection apart from the unfiltered
/// one of the same type and namespace).
///
/// Several generation changes before the relist starts make one relist. A list in
/// flight when the generation changes was filtered with whatever `keeps` said while it
/// was decoded, so the reflector relists once more after it: after the last change,
/// the store converges on what the filter keeps. A list is not cut short by a change
/// (a filter that changes faster than a list takes would otherwise never let one
/// finish).
///
/// ```
/// use std::sync::Arc;
/// use informer::reflector::{Config, FnKeyFilter, KeyFilter};
///
/// // Keep the objects whose name starts with "a"; later, those starting with "b".
/// let filter = Arc::new(FnKeyFilter::new(|_namespace, name| name.starts_with('a')));
/// let config = Config::default().key_filter(filter.clone());
/// assert!(filter.keeps(Some("default"), "alpha"));
/// let generation = filter.generation();
/// filter.set(|_namespace, name| name.starts_with('b'));
/// assert!(generation.has_changed().unwrap());
/// assert!(!filter.keeps(Some("default"), "alpha"));
/// # let _ = config;
/// ```
pub trait KeyFilter: Send + Sync + 'static {
    /// Whether the object `namespace`/`name` (no namespace: cluster-scoped) is kept.
    fn keeps(&self, namespace: Option<&str>, name: &str) -> bool;

    /// A receiver whose value changes whenever [`keeps`](Self::keeps) (or
    /// [`keeps_object`](Self::keeps_object)) may answer differently than before.
    fn generation(&self) -> watch::Receiver<u64>;

    /// Whether the object `head` describes is kept. The reflector asks this of every
    /// object whose metadata it could read; by default it answers
    /// [`keeps`](Self::keeps) for the object's key. A filter that chooses by the
    /// object's controller instead (as [`ControlledBy`] does) overrides it; its
    /// `keeps` then answers for an object known only by its key (one that did not
    /// decode, from a lister-watcher that does not filter).
    fn keeps_object(&self, head: &ObjectHead<'_>) -> bool {
        self.keeps(head.namespace, head.name)
    }

    /// A shard selector the API server may apply instead (the `shardSelector` of
    /// Kubernetes 1.36's sharded list and watch, such as
    /// `shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')`,
    /// [`ShardSelector::to_query`]): every object the filter keeps must match it. [`ApiListerWatcher`](super::source::ApiListerWatcher)
    /// sends it with every list and watch; a server that filters sends only what it
    /// matches, any other sends everything. Either way the filter still decides what is
    /// kept, so the selector saves bytes, never correctness. `None` (the default):
    /// nothing to ask of the server. It may change only with the
    /// [generation](Self::generation).
    fn server_selector(&self) -> Option<ShardSelector> {
        None
    }
}

/// An object as a [`KeyFilter`] sees it: what its metadata says, read before the
/// object is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectHead<'a> {
    /// Its namespace; `None` for a cluster-scoped object.
    pub namespace: Option<&'a str>,
    /// Its name.
    pub name: &'a str,
    /// Its uid, when the metadata has one (every object the server sends does).
    pub uid: Option<&'a str>,
    /// Its controller: the owner reference with `controller: true` (there is at most
    /// one), if any.
    pub controller: Option<OwnerHead<'a>>,
}

impl<'a> ObjectHead<'a> {
    /// The head of a decoded object, from its metadata; `None` without a name.
    pub fn of<M: Meta + ?Sized>(meta: &'a M) -> Option<Self> {
        let controller = meta
            .owner_references()
            .iter()
            .find(|owner| owner.controller == Some(true))
            .map(|owner| OwnerHead {
                api_version: &owner.api_version,
                kind: &owner.kind,
                name: &owner.name,
                uid: Some(&owner.uid),
            });
        Some(Self {
            namespace: meta.namespace(),
            name: meta.name()?,
            uid: meta.uid(),
            controller,
        })
    }
}

/// An owner reference as an [`ObjectHead`] gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnerHead<'a> {
    /// The owner's `apiVersion`: `group/version`, or `version` for the core group.
    pub api_version: &'a str,
    /// The owner's kind.
    pub kind: &'a str,
    /// The owner's name, in the object's namespace when the owner is namespaced.
    pub name: &'a str,
    /// The owner's uid, when the reference has one (every valid one does).
    pub uid: Option<&'a str>,
}

impl OwnerHead<'_> {
    /// The owner's API group (`""` for the core group).
    pub fn group(&self) -> &str {
        crate::key::api_group(self.api_version)
    }
}

type Predicate = dyn Fn(Option<&str>, &str) -> bool + Send + Sync;

/// A [`KeyFilter`] made of a closure that can be replaced at run time
/// ([`set`](Self::set)), which moves the generation on.
pub struct FnKeyFilter {
    keeps: RwLock<Arc<Predicate>>,
    generation: watch::Sender<u64>,
}

impl fmt::Debug for FnKeyFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnKeyFilter")
            .field("generation", &*self.generation.borrow())
            .finish_non_exhaustive()
    }
}

impl FnKeyFilter {
    /// A filter that keeps what `keeps(namespace, name)` says, at generation 0.
    pub fn new(keeps: impl Fn(Option<&str>, &str) -> bool + Send + Sync + 'static) -> Self {
        Self {
            keeps: RwLock::new(Arc::new(keeps)),
            generation: watch::Sender::new(0),
        }
    }

    /// Replaces the closure, then moves the generation on: reflectors using the
    /// filter relist.
    pub fn set(&self, keeps: impl Fn(Option<&str>, &str) -> bool + Send + Sync + 'static) {
        *self.keeps.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keeps);
        self.generation.send_modify(|generation| *generation += 1);
    }
}

impl KeyFilter for FnKeyFilter {
    fn keeps(&self, namespace: Option<&str>, name: &str) -> bool {
        let keeps = self.keeps.read().unwrap_or_else(|e| e.into_inner());
        keeps(namespace, name)
    }

    fn generation(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }
}

/// A [`KeyFilter`] as list and watch requests carry it: shared, compared by identity
/// (two requests are equal when they carry the same filter), and printed without its
/// state.
#[derive(Clone)]
pub struct SharedKeyFilter(Arc<dyn KeyFilter>);

impl SharedKeyFilter {
    /// Wraps `filter`.
    pub fn new(filter: Arc<dyn KeyFilter>) -> Self {
        Self(filter)
    }

    /// Whether the object `namespace`/`name` is kept (see [`KeyFilter::keeps`]).
    pub fn keeps(&self, namespace: Option<&str>, name: &str) -> bool {
        self.0.keeps(namespace, name)
    }

    /// Whether the object `head` describes is kept (see [`KeyFilter::keeps_object`]).
    pub fn keeps_object(&self, head: &ObjectHead<'_>) -> bool {
        self.0.keeps_object(head)
    }

    /// The filter.
    pub fn filter(&self) -> &Arc<dyn KeyFilter> {
        &self.0
    }
}

impl From<Arc<dyn KeyFilter>> for SharedKeyFilter {
    fn from(filter: Arc<dyn KeyFilter>) -> Self {
        Self(filter)
    }
}

impl PartialEq for SharedKeyFilter {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SharedKeyFilter {}

impl fmt::Debug for SharedKeyFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SharedKeyFilter(..)")
    }
}

mod controlled_by;
mod shard_selector;
#[cfg(test)]
mod tests;

pub use controlled_by::ControlledBy;
pub use shard_selector::{ShardField, ShardSelector};
