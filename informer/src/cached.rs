//! The objects a cache holds, as a relist sees them ([`CachedObjects`]): the store
//! offers them and the reflector's lister-watchers reuse them, so the trait sits below
//! both; its public path is [`crate::reflector`].

use std::sync::Arc;

use crate::key::ObjectKeyRef;

/// The objects a cache holds, offered to a relist ([`ListerWatcher::list_reusing`](crate::reflector::source::ListerWatcher::list_reusing)): an
/// object listed at the same resourceVersion as its cached copy is the same object, so
/// the cached copy can stand for it instead of a second one decoded next to it.
pub trait CachedObjects<K>: Send + Sync {
    /// The cached object under `key`, if it is at `resource_version` and, when `uid`
    /// is given, has that uid.
    fn cached(
        &self,
        key: ObjectKeyRef<'_>,
        resource_version: &str,
        uid: Option<&str>,
    ) -> Option<Arc<K>>;
}
