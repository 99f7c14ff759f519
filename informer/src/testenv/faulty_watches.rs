//! [`FaultyWatches`]: a lister-watcher that loses or reorders watch events on request,
//! for drift the informer's own machinery cannot see.
//!
//! The [`FaultProxy`](super::FaultProxy) forwards raw TCP (TLS passes through
//! untouched), so it can cut a connection or silence it, but cannot see one event in
//! a watch. A lost or reordered event is what a consistency check must catch: the
//! reflector never learns of it, its resourceVersion moves on, and the cache quietly
//! differs from the server. This stands where such a fault would happen, between the
//! server's stream and the reflector, and forwards everything else (lists, streaming
//! lists, the [`versions`](crate::reflector::source::Capabilities#structfield.versions) a check reads)
//! untouched.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::future::BoxFuture;
use kube::Resource;

use crate::cached::CachedObjects;
use crate::key::ObjectKey;
use crate::lock::MutexExt;
use crate::reflector::source::{
    Capabilities, ListPage, ListRequest, ListerWatcher, WatchEvent, WatchRequest, WatchStream,
};

/// A lister-watcher in front of `L` whose watches lose or reorder the events asked
/// for: drift the reflector never learns of, which only a consistency check can catch.
/// Lists, streaming lists and the [`versions`](crate::reflector::source::Capabilities#structfield.versions)
/// a check reads pass through untouched.
///
/// ```no_run
/// # async fn demo(env: &informer::testenv::TestEnv) -> Result<(), Box<dyn std::error::Error>> {
/// use informer::key::ObjectKey;
/// use informer::reflector::source::ApiListerWatcher;
/// use informer::shared_informer::{InformerConfig, SharedIndexInformer};
/// use informer::testenv::FaultyWatches;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let api = kube::Api::<ConfigMap>::namespaced(env.client()?, "default");
/// let faulty = FaultyWatches::new(ApiListerWatcher::new(api));
/// let informer = SharedIndexInformer::with_config(faulty.clone(), InformerConfig::default())?;
/// // ... once synced: the next event about default/web never reaches the informer.
/// faulty.lose_next(ObjectKey::namespaced("default", "web"));
/// # Ok(())
/// # }
/// ```
pub struct FaultyWatches<L> {
    inner: Arc<L>,
    faults: Arc<Mutex<Faults>>,
}

impl<L> Clone for FaultyWatches<L> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            faults: Arc::clone(&self.faults),
        }
    }
}

impl<L> std::fmt::Debug for FaultyWatches<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let faults = self.faults.locked();
        f.debug_struct("FaultyWatches")
            .field("armed", &faults.armed.len())
            .field("done", &faults.done)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Faults {
    armed: Vec<(ObjectKey, Fault)>,
    /// Faults that took effect.
    done: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// Drop the next event of the key.
    Lose,
    /// Hold the next event of the key back until after the one that follows it.
    Swap,
}

impl<L> FaultyWatches<L> {
    /// Forwards to `inner`, with no fault armed.
    pub fn new(inner: L) -> Self {
        Self {
            inner: Arc::new(inner),
            faults: Arc::default(),
        }
    }

    /// The next watch event (added, modified or deleted) about `key` is dropped
    /// silently, on whichever watch it comes.
    pub fn lose_next(&self, key: ObjectKey) {
        self.faults.locked().armed.push((key, Fault::Lose));
    }

    /// The next watch event about `key` is held back and delivered right after the
    /// one that follows it on the same watch (or at the watch's end): two changes of
    /// one object in the wrong order.
    pub fn swap_next(&self, key: ObjectKey) {
        self.faults.locked().armed.push((key, Fault::Swap));
    }

    /// How many armed faults have taken effect (a swap counts once its held event
    /// was delivered late).
    pub fn faults_done(&self) -> usize {
        self.faults.locked().done
    }
}

impl<K, L> ListerWatcher<K> for FaultyWatches<L>
where
    K: Resource + Send + 'static,
    L: ListerWatcher<K> + 'static,
{
    fn list(&self, request: ListRequest) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>> {
        self.inner.list(request)
    }

    fn list_reusing(
        &self,
        request: ListRequest,
        cache: Arc<dyn CachedObjects<K>>,
    ) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>> {
        self.inner.list_reusing(request, cache)
    }

    fn watch(&self, request: WatchRequest) -> BoxFuture<'_, Result<WatchStream<K>, kube::Error>> {
        let faults = Arc::clone(&self.faults);
        Box::pin(async move {
            let events = self.inner.watch(request).await?;
            Ok(with_faults(events, faults))
        })
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn server_filters_shards(&self) -> Option<bool> {
        self.inner.server_filters_shards()
    }
}

/// What one watch does with its events.
struct Applying<K> {
    events: WatchStream<K>,
    faults: Arc<Mutex<Faults>>,
    /// Events to hand out before reading more.
    ready: VecDeque<Result<WatchEvent<K>, kube::Error>>,
    /// A held-back event and its key.
    held: Option<(ObjectKey, WatchEvent<K>)>,
}

fn with_faults<K: Resource + Send + 'static>(
    events: WatchStream<K>,
    faults: Arc<Mutex<Faults>>,
) -> WatchStream<K> {
    let state = Applying {
        events,
        faults,
        ready: VecDeque::new(),
        held: None,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(event) = state.ready.pop_front() {
                return Some((event, state));
            }
            let Some(event) = state.events.next().await else {
                // The watch ends: a held event comes last.
                let (_, held) = state.held.take()?;
                state.faults.locked().done += 1;
                return Some((Ok(held), state));
            };
            state.apply(event);
        }
    })
    .boxed()
}

impl<K: Resource> Applying<K> {
    fn apply(&mut self, event: Result<WatchEvent<K>, kube::Error>) {
        let key = match &event {
            Ok(
                WatchEvent::Added(object)
                | WatchEvent::Modified(object)
                | WatchEvent::Deleted(object),
            ) => ObjectKey::of(object),
            _ => {
                self.ready.push_back(event);
                return;
            }
        };
        if let Some((held_key, _)) = &self.held
            && *held_key == key
        {
            let (_, held) = self.held.take().expect("just matched");
            self.ready.push_back(event);
            self.ready.push_back(Ok(held));
            self.faults.locked().done += 1;
            return;
        }
        let mut faults = self.faults.locked();
        let armed = faults.armed.iter().position(|(k, _)| *k == key);
        match armed.map(|index| faults.armed.remove(index).1) {
            Some(Fault::Lose) => faults.done += 1,
            Some(Fault::Swap) if self.held.is_none() => {
                if let Ok(event) = event {
                    self.held = Some((key, event));
                }
            }
            Some(Fault::Swap) => {
                // One held event per watch: this one waits for the next.
                faults.armed.push((key, Fault::Swap));
                self.ready.push_back(event);
            }
            None => self.ready.push_back(event),
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::ResourceExt;

    use super::*;
    use crate::reflector::source::FakeSource;
    use crate::test_support::config_map;

    fn names(events: &[WatchEvent<ConfigMap>]) -> Vec<String> {
        events
            .iter()
            .map(|event| match event {
                WatchEvent::Added(o) => {
                    format!("add {}@{}", o.name_any(), o.resource_version().unwrap())
                }
                WatchEvent::Modified(o) => {
                    format!("mod {}@{}", o.name_any(), o.resource_version().unwrap())
                }
                WatchEvent::Deleted(o) => {
                    format!("del {}@{}", o.name_any(), o.resource_version().unwrap())
                }
                _ => "other".into(),
            })
            .collect()
    }

    /// From the first change on, the watch sends every change: the update of `a` is
    /// lost, and `b`'s creation arrives after its update.
    #[tokio::test]
    async fn loses_and_swaps_the_events_asked_for() {
        let source = FakeSource::new();
        source.add(config_map("ns/a", &[], 0));
        source.add(config_map("ns/b", &[], 0));
        source.add(config_map("ns/c", &[], 0));
        source.modify(config_map("ns/b", &[], 0));
        source.modify(config_map("ns/a", &[], 0));
        let faulty = FaultyWatches::new(source.clone());
        faulty.lose_next(ObjectKey::namespaced("ns", "a"));
        faulty.swap_next(ObjectKey::namespaced("ns", "b"));
        let request = WatchRequest::new("1", std::time::Duration::from_millis(100));
        let events: Vec<_> = faulty.watch(request).await.unwrap().collect().await;
        let events: Vec<_> = events.into_iter().map(Result::unwrap).collect();
        assert_eq!(names(&events), ["add c@3", "mod b@4", "add b@2"]);
        assert_eq!(faulty.faults_done(), 2);
        assert!(
            ListerWatcher::<ConfigMap>::capabilities(&faulty)
                .versions
                .is_some()
        );
    }
}
