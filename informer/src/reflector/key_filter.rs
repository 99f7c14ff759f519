//! [`KeyFilter`]: a reflector that keeps only some objects, chosen by key before they
//! are decoded.
//!
//! A controller sharded across replicas needs in its
//! cache only the objects of its shard. The API server cannot filter by a hash of the
//! key, so every object still arrives; the filter drops the others before they are
//! decoded, so they cost neither memory nor a decode. When the filter changes (a
//! replica joined or left), the reflector relists, so the store ends holding exactly
//! what the filter keeps.

use tokio::sync::watch;

/// Which objects a reflector keeps, by namespace and name.
pub trait KeyFilter: Send + Sync + 'static {
    /// Whether the object `namespace`/`name` (no namespace: cluster-scoped) is kept.
    fn keeps(&self, namespace: Option<&str>, name: &str) -> bool;

    /// A receiver whose value changes whenever [`keeps`](Self::keeps) may answer
    /// differently than before.
    fn generation(&self) -> watch::Receiver<u64>;
}
