//! The reflector's side of its [`KeyFilter`](super::KeyFilter): the filter each
//! request carries, the filtering it does itself for lister-watchers that do not, and
//! the generation it relists on. The rules are on [`KeyFilter`](super::KeyFilter).

use crate::object::Object;

use super::Reflector;
use super::error::DecodeError;
use super::key_filter::{ObjectHead, SharedKeyFilter};
use super::progress::{FilterGeneration, Progress, Relist};
use super::source::ListPage;

impl Progress {
    /// A sync starts: changes of the key filter from now on call for another (and so
    /// do relists asked for from now on).
    pub(super) fn key_filter_syncing(&mut self) {
        if let Some(generation) = &mut self.key_filter_generation {
            generation.mark_synced();
        }
        self.relist_requests.mark_synced();
    }

    /// Whether the key filter changed since the last sync started.
    pub(super) fn key_filter_moved(&self) -> bool {
        self.key_filter_generation
            .as_ref()
            .is_some_and(FilterGeneration::has_moved)
    }

    /// The key filter's generation the last sync started with (0 without a filter).
    pub(super) fn synced_filter_generation(&self) -> u64 {
        self.key_filter_generation
            .as_ref()
            .map_or(0, FilterGeneration::synced)
    }

    /// The key filter's generation, for a watch to follow.
    pub(super) fn key_filter_generation(&self) -> Option<FilterGeneration> {
        self.key_filter_generation.clone()
    }
}

impl<K> Reflector<K>
where
    K: Object + Send + 'static,
{
    /// A sync's objects are about to replace the store's: from now on the store holds
    /// the objects of the key filter's generation that sync started with.
    pub(super) fn replacing(&self, progress: &Progress) {
        self.store_filter_generation.store(
            progress.synced_filter_generation(),
            std::sync::atomic::Ordering::Release,
        );
    }

    /// The key filter requests carry, for the lister-watcher to apply while decoding.
    pub(super) fn request_key_filter(&self) -> Option<SharedKeyFilter> {
        self.config
            .key_filter
            .as_ref()
            .map(|filter| SharedKeyFilter::new(filter.clone()))
    }

    /// Whether `object` passes the filter the reflector applies itself (for a
    /// lister-watcher that does not filter keys); counts it when it does not.
    pub(super) fn passes_filter(&self, object: &K) -> bool {
        let Some(filter) = &self.own_key_filter else {
            return true;
        };
        let kept = ObjectHead::of(object.metadata()).is_none_or(|head| filter.keeps_object(&head));
        if !kept {
            self.record(|metrics| metrics.filtered_out(1));
        }
        kept
    }

    /// [`passes_filter`](Self::passes_filter) for an object that did not decode, by
    /// the key it was named by ([`KeyFilter::keeps`]): one not kept is not reported.
    pub(super) fn passes_filter_undecodable(&self, error: &DecodeError) -> bool {
        let Some(filter) = &self.own_key_filter else {
            return true;
        };
        let kept = error
            .object_key
            .as_ref()
            .is_none_or(|key| filter.keeps(key.namespace.as_deref(), &key.name));
        if !kept {
            self.record(|metrics| metrics.filtered_out(1));
        }
        kept
    }

    /// Leaves in a listed page only what the key filter keeps (when the
    /// lister-watcher did not filter it), and counts what was left out.
    pub(super) fn filter_page(&self, page: &mut ListPage<K>) {
        if page.filtered_out > 0 {
            let filtered_out = page.filtered_out;
            self.record(|metrics| metrics.filtered_out(filtered_out));
        }
        if self.own_key_filter.is_none() {
            return;
        }
        page.items.retain(|object| self.passes_filter(object));
        page.unchanged.retain(|object| self.passes_filter(object));
        page.undecodable
            .retain(|error| self.passes_filter_undecodable(error));
    }

    /// The key filter changed while watching: the watch ends, and the reflector
    /// relists at once.
    pub(super) fn filter_changed(&self) -> Relist {
        tracing::debug!("the key filter changed; relisting");
        self.record(|metrics| metrics.filter_changed());
        Relist::AtOnce
    }
}

#[cfg(test)]
mod tests;
