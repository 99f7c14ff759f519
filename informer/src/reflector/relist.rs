//! Relisting on request: what heals a cache that a consistency check found differing
//! from the server. A [`RelistTrigger`] asks the running reflector to end its watch at
//! the next event boundary and list again at once, as a new key filter generation
//! does; the list replaces the store's content, so the store holds the server's
//! collection again.

use std::sync::Arc;

use tokio::sync::watch;

/// Asks a running reflector to relist (see the [module docs](self)). Clones ask the
/// same reflector; several requests before the relist starts make one relist.
#[derive(Debug, Clone)]
pub(crate) struct RelistTrigger(Arc<watch::Sender<u64>>);

impl RelistTrigger {
    pub(super) fn new() -> Self {
        Self(Arc::new(watch::Sender::new(0)))
    }

    /// Asks for a relist.
    pub(crate) fn relist(&self) {
        self.0.send_modify(|requests| *requests += 1);
    }

    /// What the reflector follows.
    pub(super) fn requests(&self) -> RelistRequests {
        RelistRequests(self.0.subscribe())
    }
}

/// The requests a reflector follows: the ones since its last sync started.
#[derive(Clone)]
pub(super) struct RelistRequests(watch::Receiver<u64>);

impl RelistRequests {
    /// A sync starts: it satisfies every request made until now.
    pub(super) fn mark_synced(&mut self) {
        self.0.borrow_and_update();
    }

    /// Whether a relist was asked for since the last sync started.
    pub(super) fn pending(&self) -> bool {
        self.0.has_changed().unwrap_or(false)
    }

    /// Completes once a relist is asked for (at once if one is pending).
    pub(super) async fn asked(&self) {
        let mut requests = self.0.clone();
        if requests.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
