//! Wires: the controller's event handlers, registered when it runs and removed when
//! it stops. Each maps an informer's events to keys of the primary type on the
//! controller's queue, and tells read-your-writes waiters that a cache changed.

use std::sync::Arc;

use kube::Resource;
use tokio::sync::Notify;

use crate::fifo::DeletedObject;
use crate::key::ObjectKey;
use crate::shared_informer::{InformerError, ResourceEventHandlerFns, SharedIndexInformer};
use crate::workqueue::WorkQueue;

/// What a wire needs to connect an informer: the queue, and the signal that a cache
/// changed (read-your-writes waits on it).
pub(crate) struct Wiring {
    pub(crate) queue: WorkQueue<ObjectKey>,
    pub(crate) cache_changed: Arc<Notify>,
}

/// Registers a handler when the controller runs; the returned closure removes it. On
/// failure, names the informer's type.
pub(crate) type Wire =
    Box<dyn FnOnce(&Wiring) -> Result<Unwire, (&'static str, InformerError)> + Send>;

/// Removes one wire's handler.
pub(crate) type Unwire = Box<dyn FnOnce() + Send>;

/// Removes the controller's handlers when dropped (`run` returned or was dropped).
#[derive(Default)]
pub(crate) struct Unwires(Vec<Unwire>);

impl Unwires {
    /// Connects `wire`, to be removed when this is dropped.
    pub(crate) fn connect(
        &mut self,
        wire: Wire,
        wiring: &Wiring,
    ) -> Result<(), (&'static str, InformerError)> {
        self.0.push(wire(wiring)?);
        Ok(())
    }
}

impl Drop for Unwires {
    fn drop(&mut self) {
        for unwire in self.0.drain(..) {
            unwire();
        }
    }
}

/// A handler queueing the keys `map` gives for each state an event carries (old and
/// new on update), and telling read-your-writes waiters the cache changed. `on_gone`
/// sees a deleted object before its keys are queued.
pub(crate) fn mapping_wire<C, M, I>(
    informer: &SharedIndexInformer<C>,
    map: M,
    on_gone: impl Fn(&Arc<C>) + Send + 'static,
) -> Wire
where
    C: Resource + Send + Sync + 'static,
    M: Fn(&C) -> I + Send + Sync + 'static,
    I: IntoIterator<Item = ObjectKey>,
{
    let informer = informer.clone();
    Box::new(move |wiring: &Wiring| {
        let enqueue = {
            let queue = wiring.queue.clone();
            let changed = Arc::clone(&wiring.cache_changed);
            // Each key once per event: queued twice (an update whose old and new
            // state map to the same key), a key a worker took in between would be
            // reconciled twice for one change.
            move |states: &[&C]| {
                let mut keys: Vec<ObjectKey> = Vec::new();
                for key in states.iter().flat_map(|state| map(state)) {
                    if !keys.contains(&key) {
                        keys.push(key);
                    }
                }
                for key in keys {
                    queue.add(key);
                }
                changed.notify_waiters();
            }
        };
        let enqueue = Arc::new(enqueue);
        let (on_add, on_update, on_delete) = (Arc::clone(&enqueue), Arc::clone(&enqueue), enqueue);
        let registration = informer
            .add_event_handler(
                ResourceEventHandlerFns::new()
                    .on_add(move |object: &Arc<C>, _| on_add(&[object]))
                    .on_update(move |old: &Arc<C>, new: &Arc<C>| on_update(&[old, new]))
                    .on_delete(move |gone: DeletedObject<C>| {
                        on_gone(gone.object());
                        on_delete(&[gone.object()]);
                    }),
            )
            .map_err(|error| (crate::key::short_type_name::<C>(), error))?;
        Ok(Box::new(move || registration.remove()) as Unwire)
    })
}
