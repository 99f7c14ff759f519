//! The types a controller knows: one shared informer each, looked up by type.
//!
//! The run registers the primary type and every `owns`, `watches` and `reads` type
//! the builder recorded here (see [`wiring`](super::wiring)); the
//! [`Context`](super::Context) hands out their listers and indexes by type, and the
//! read-your-writes wait probes their caches.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

use crate::object::Object;

use super::read_your_writes::{CacheProbe, FilteredCache};
use crate::key::short_type_name;
use crate::reflector::KeyFilter;
use crate::shared_informer::{HasSynced, SharedIndexInformer};
use crate::store::Indexer;

/// One registered type.
struct Registered {
    /// The type's informer, as `SharedIndexInformer<C>`.
    informer: Box<dyn Any + Send + Sync>,
    /// The same informer, as a cache to probe for read-your-writes.
    cache: Arc<dyn CacheProbe>,
    /// When the type is owned: the owned cache (an `Indexer<C>`; the informer's, or,
    /// for a sharded controller owning its own primary type, the children's) and the
    /// name of its index of controllers of the primary kind.
    owned: Option<(Box<dyn Any + Send + Sync>, String)>,
}

/// The registered types, by `TypeId`, and every informer registered.
#[derive(Default)]
pub(crate) struct Registry {
    types: HashMap<TypeId, Registered>,
    /// Every informer the controller was given, for the wait until synced: also one
    /// that is not its type's informer (a sharded controller's watched `C` beside its
    /// owned `C`). An informer given twice is waited for twice, at no cost.
    synced: Vec<Arc<dyn HasSynced>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("types", &self.types.len())
            .finish()
    }
}

impl Registry {
    /// Registers `informer` (once per type; registering again keeps the first).
    pub(crate) fn register<C>(&mut self, informer: &SharedIndexInformer<C>)
    where
        C: Object + Send + Sync + 'static,
    {
        self.synced.push(Arc::new(informer.clone()));
        self.types
            .entry(TypeId::of::<C>())
            .or_insert_with(|| Registered {
                informer: Box::new(informer.clone()),
                cache: Arc::new(informer.indexer()),
                owned: None,
            });
    }

    /// Registers `informer`, whose reflector keeps only what `filter` keeps, as the
    /// type's informer, in place of one registered before: a sharded controller's
    /// primary and owned types are read from their shard's caches.
    pub(crate) fn register_filtered<C>(
        &mut self,
        informer: &SharedIndexInformer<C>,
        filter: Arc<dyn KeyFilter>,
    ) where
        C: Object + Send + Sync + 'static,
    {
        let cache = FilteredCache {
            indexer: informer.indexer(),
            filter,
        };
        self.synced.push(Arc::new(informer.clone()));
        self.types.insert(
            TypeId::of::<C>(),
            Registered {
                informer: Box::new(informer.clone()),
                cache: Arc::new(cache),
                owned: None,
            },
        );
    }

    /// Records that `C` is owned: its children are in `owned`, indexed by controller
    /// in the index named `index`.
    pub(crate) fn set_owned<C: Object + Send + Sync + 'static>(
        &mut self,
        owned: Indexer<C>,
        index: String,
    ) {
        if let Some(registered) = self.types.get_mut(&TypeId::of::<C>()) {
            registered.owned = Some((Box::new(owned), index));
        }
    }

    /// The informer of `C`, if registered.
    pub(crate) fn informer<C: 'static>(&self) -> Option<&SharedIndexInformer<C>> {
        self.types
            .get(&TypeId::of::<C>())
            .and_then(|r| r.informer.downcast_ref())
    }

    /// The informer of `C`; panics, naming what to do, when `C` is not registered.
    pub(crate) fn expect_informer<C: 'static>(&self, primary: &str) -> &SharedIndexInformer<C> {
        self.informer::<C>().unwrap_or_else(|| {
            let kind = short_type_name::<C>();
            panic!(
                "the {primary} controller has no informer for {kind}: register it with \
                 .owns::<{kind}>(), .watches::<{kind}>(..) or .reads::<{kind}>()"
            )
        })
    }

    /// The owned type `C`'s indexer and owner index name; panics, naming what to do,
    /// when `C` is not owned.
    pub(crate) fn expect_owned<C: Object + Send + Sync + 'static>(
        &self,
        primary: &str,
    ) -> (Indexer<C>, &str) {
        let kind = short_type_name::<C>();
        let owned = self
            .types
            .get(&TypeId::of::<C>())
            .and_then(|registered| registered.owned.as_ref());
        match owned
            .and_then(|(indexer, index)| Some((indexer.downcast_ref::<Indexer<C>>()?, index)))
        {
            Some((indexer, index)) => (indexer.clone(), index),
            None => panic!(
                "the {primary} controller does not own {kind}: register it with .owns::<{kind}>()"
            ),
        }
    }

    /// The cache of `C`, for read-your-writes, if registered.
    pub(crate) fn cache<C: 'static>(&self) -> Option<Arc<dyn CacheProbe>> {
        self.types
            .get(&TypeId::of::<C>())
            .map(|r| Arc::clone(&r.cache))
    }

    /// Every registered informer, for the wait until synced.
    pub(crate) fn synced(&self) -> Vec<Arc<dyn HasSynced>> {
        self.synced.clone()
    }
}
