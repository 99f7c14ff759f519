//! Event handlers: what an informer tells the code that watches it.
//!
//! client-go's `ResourceEventHandler` with types: `on_add` gets the new object and
//! whether it belongs to the initial list, `on_update` gets the old and the new state,
//! `on_delete` gets a [`DeletedObject`]: either the object as last seen, or a tombstone
//! ([`crate::fifo::DeletedFinalStateUnknown`]) when the deletion happened while the
//! informer was disconnected. No `interface{}`, no type switches.
//!
//! Handlers run on their own thread, one notification at a time and in order, so they
//! take `&mut self` and may keep state without locks. Keep them quick: a controller's
//! handler usually only enqueues the object's key in a
//! [`workqueue`](crate::workqueue). A handler that panics is caught and reported; the
//! informer and the other handlers go on.

use std::sync::Arc;

use crate::fifo::DeletedObject;
use educe::Educe;

/// Reacts to an informer's notifications; every method has an empty default, so a
/// handler implements only what it needs. Closures work through
/// [`ResourceEventHandlerFns`].
pub trait ResourceEventHandler<K>: Send + 'static {
    /// An object appeared: created, or listed for the first time.
    /// `is_initial_list` is true for objects of the initial list (and for the replay a
    /// handler added late receives).
    fn on_add(&mut self, object: &Arc<K>, is_initial_list: bool) {
        let _ = (object, is_initial_list);
    }

    /// An object changed (or, on a resync, did not change: then `old` and `new` are
    /// the same object).
    fn on_update(&mut self, old: &Arc<K>, new: &Arc<K>) {
        let _ = (old, new);
    }

    /// An object was deleted.
    fn on_delete(&mut self, deleted: DeletedObject<K>) {
        let _ = deleted;
    }
}

type AddFn<K> = Box<dyn FnMut(&Arc<K>, bool) + Send>;
type UpdateFn<K> = Box<dyn FnMut(&Arc<K>, &Arc<K>) + Send>;
type DeleteFn<K> = Box<dyn FnMut(DeletedObject<K>) + Send>;

/// A handler made of closures (client-go's `ResourceEventHandlerFuncs`); unset ones
/// do nothing.
///
/// ```
/// # use informer::shared_informer::ResourceEventHandlerFns;
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::ResourceExt;
///
/// let handler = ResourceEventHandlerFns::<ConfigMap>::new()
///     .on_add(|cm, _initial| println!("Added: {}", cm.name_any()))
///     .on_delete(|deleted| println!("Deleted: {}", deleted.object().name_any()));
/// # let _ = handler;
/// ```
pub struct ResourceEventHandlerFns<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
}

impl<K> Default for ResourceEventHandlerFns<K> {
    fn default() -> Self {
        Self {
            add: None,
            update: None,
            delete: None,
        }
    }
}

impl<K> std::fmt::Debug for ResourceEventHandlerFns<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceEventHandlerFns")
            .field("on_add", &self.add.is_some())
            .field("on_update", &self.update.is_some())
            .field("on_delete", &self.delete.is_some())
            .finish()
    }
}

impl<K> ResourceEventHandlerFns<K> {
    /// A handler that does nothing until closures are set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Called for every add.
    #[must_use]
    pub fn on_add(mut self, f: impl FnMut(&Arc<K>, bool) + Send + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Called for every update.
    #[must_use]
    pub fn on_update(mut self, f: impl FnMut(&Arc<K>, &Arc<K>) + Send + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Called for every delete.
    #[must_use]
    pub fn on_delete(mut self, f: impl FnMut(DeletedObject<K>) + Send + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<K: 'static> ResourceEventHandler<K> for ResourceEventHandlerFns<K> {
    fn on_add(&mut self, object: &Arc<K>, is_initial_list: bool) {
        if let Some(f) = &mut self.add {
            f(object, is_initial_list);
        }
    }

    fn on_update(&mut self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &mut self.update {
            f(old, new);
        }
    }

    fn on_delete(&mut self, deleted: DeletedObject<K>) {
        if let Some(f) = &mut self.delete {
            f(deleted);
        }
    }
}

/// One notification, as delivered to handlers and [`subscribe`](super::SharedIndexInformer::subscribe)rs.
#[derive(Debug, Educe)]
#[educe(Clone)]
pub enum Notification<K> {
    /// See [`ResourceEventHandler::on_add`].
    Add {
        /// The object.
        object: Arc<K>,
        /// Whether it belongs to the initial list.
        is_initial_list: bool,
    },
    /// See [`ResourceEventHandler::on_update`].
    Update {
        /// The state before.
        old: Arc<K>,
        /// The state now.
        new: Arc<K>,
    },
    /// See [`ResourceEventHandler::on_delete`].
    Delete(DeletedObject<K>),
}

impl<K> Notification<K> {
    /// The object the notification is about (the new state for an update, the last
    /// known state for a delete).
    pub fn object(&self) -> &Arc<K> {
        match self {
            Self::Add { object, .. } => object,
            Self::Update { new, .. } => new,
            Self::Delete(deleted) => deleted.object(),
        }
    }

    pub(crate) fn is_initial_list(&self) -> bool {
        matches!(
            self,
            Self::Add {
                is_initial_list: true,
                ..
            }
        )
    }
}

impl<K: 'static> Notification<K> {
    /// Hands the notification to `handler`.
    pub fn deliver(self, handler: &mut dyn ResourceEventHandler<K>) {
        match self {
            Self::Add {
                object,
                is_initial_list,
            } => handler.on_add(&object, is_initial_list),
            Self::Update { old, new } => handler.on_update(&old, &new),
            Self::Delete(deleted) => handler.on_delete(deleted),
        }
    }
}
