//! The factory's state under its lock: the informers it made, keyed by type,
//! resource and selection, and the tasks running them.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::Arc;

use tokio::task::JoinHandle;

use super::managed::ManagedInformer;
use super::selection::Selection;

/// What tells two of the factory's informers apart.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct InformerKey {
    pub(super) type_id: TypeId,
    /// The resource (`group`, `version`, `plural`): fixed by the type for a static one,
    /// what tells two informers of [`DynamicObject`] apart.
    pub(super) resource: [String; 3],
    pub(super) selection: Selection,
}

/// One informer the factory made.
pub(super) struct Entry {
    pub(super) name: String,
    /// The Rust type that caches a projection of the resource (`PodView` for `Pod`),
    /// when it is not the resource's own: the metrics' `projection` label, beside the
    /// resource's name.
    pub(super) projection: Option<&'static str>,
    pub(super) informer: Arc<dyn ManagedInformer>,
    pub(super) started: bool,
}

/// The factory's informers and tasks, under its lock.
pub(super) struct State {
    pub(super) informers: HashMap<InformerKey, Entry>,
    pub(super) tasks: Vec<JoinHandle<()>>,
    /// `start` was called at least once.
    pub(super) started: bool,
    pub(super) shut_down: bool,
}
