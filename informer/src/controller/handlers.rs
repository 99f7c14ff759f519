//! The controller's event handlers: described when the controller is wired
//! ([`PendingHandler`]), registered when it runs and removed when it stops
//! ([`HandlerRegistrations`]). Each maps an informer's events to keys of the primary
//! type on the controller's queue ([`HandlerOutputs`]), and tells read-your-writes
//! waiters that a cache changed.

use std::sync::Arc;

use tokio::sync::Notify;

use super::predicate::Predicate;
use super::reasons::{Reason, Reasons, Sighting};
use crate::fifo::DeletedObject;
use crate::key::{ObjectKey, short_type_name};
use crate::object::{Meta, Object};
use crate::shared_informer::{InformerError, ResourceEventHandlerFns, SharedIndexInformer};
use crate::workqueue::WorkQueue;

/// What the handlers feed: the queue, why each key was queued, and the signal that a
/// cache changed (read-your-writes waits on it).
pub(crate) struct HandlerOutputs {
    pub(crate) queue: WorkQueue<ObjectKey>,
    pub(crate) cache_changed: Arc<Notify>,
    /// Why each queued key was queued, for its reconcile's span and its priority.
    pub(crate) reasons: Arc<Reasons>,
}

/// What an informer's objects are to the primary type, for the reason a key is
/// queued with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Relation {
    /// The primary type itself.
    Primary,
    /// A type the primary owns.
    Owned,
    /// A type the controller watches.
    Watched,
    /// A type the controller only reads: its changes queue no key.
    Read,
}

impl Relation {
    fn reason<C: Object>(self, changed: &C, sighting: Sighting) -> Reason {
        let relation = match self {
            Relation::Primary => return Reason::Primary(sighting),
            Relation::Owned => "owned",
            Relation::Watched => "watched",
            Relation::Read => "read",
        };
        Reason::Related {
            relation,
            kind: short_type_name::<C>(),
            key: ObjectKey::of(changed),
            sighting,
        }
    }
}

/// Registers a handler when the controller runs; the returned closure removes it. On
/// failure, names the informer's type.
pub(crate) type PendingHandler =
    Box<dyn FnOnce(&HandlerOutputs) -> Result<RemoveHandler, (&'static str, InformerError)> + Send>;

/// Removes one registered handler.
pub(crate) type RemoveHandler = Box<dyn FnOnce() + Send>;

/// Removes the controller's handlers when dropped (`run` returned or was dropped).
#[derive(Default)]
pub(crate) struct HandlerRegistrations(Vec<RemoveHandler>);

impl HandlerRegistrations {
    /// Registers `handler`, to be removed when this is dropped.
    pub(crate) fn register(
        &mut self,
        handler: PendingHandler,
        outputs: &HandlerOutputs,
    ) -> Result<(), (&'static str, InformerError)> {
        self.0.push(handler(outputs)?);
        Ok(())
    }
}

impl Drop for HandlerRegistrations {
    fn drop(&mut self) {
        for remove in self.0.drain(..) {
            remove();
        }
    }
}

/// A handler queueing the keys `map` gives for each state an event carries (old and
/// new on update), with the reason `relation` gives, and telling read-your-writes
/// waiters the cache changed. An update `predicate` does not accept queues nothing
/// (adds and deletions always queue). `on_gone` sees a deleted object before its keys
/// are queued. Keys of the initial list and of unchanged objects delivered again
/// (resyncs, relists) are backlog, queued behind real changes.
pub(crate) fn mapping_handler<C, M, I>(
    informer: &SharedIndexInformer<C>,
    relation: Relation,
    predicate: Option<Predicate<C>>,
    map: M,
    on_gone: impl Fn(&Arc<C>) + Send + 'static,
) -> PendingHandler
where
    C: Object + Send + Sync + 'static,
    M: Fn(&C) -> I + Send + Sync + 'static,
    I: IntoIterator<Item = ObjectKey>,
{
    let informer = informer.clone();
    Box::new(move |outputs: &HandlerOutputs| {
        let changed = Arc::clone(&outputs.cache_changed);
        let enqueue = {
            let queue = outputs.queue.clone();
            let reasons = Arc::clone(&outputs.reasons);
            let changed = Arc::clone(&changed);
            // Each key once per event: queued twice (an update whose old and new
            // state map to the same key), a key a worker took in between would be
            // reconciled twice for one change.
            move |states: &[&C], sighting: Sighting| {
                let mut keys: Vec<ObjectKey> = Vec::new();
                for key in states.iter().flat_map(|state| map(state)) {
                    if !keys.contains(&key) {
                        keys.push(key);
                    }
                }
                if let Some(last) = states.last() {
                    let reason = relation.reason(*last, sighting);
                    for key in keys {
                        reasons.queue(&queue, key, reason.clone());
                    }
                }
                changed.notify_waiters();
            }
        };
        let enqueue = Arc::new(enqueue);
        let (on_add, on_update, on_delete) = (Arc::clone(&enqueue), Arc::clone(&enqueue), enqueue);
        // Mapping to keys and queueing them never blocks: a task, not a thread.
        let registration = informer
            .add_event_handler_on_runtime(
                ResourceEventHandlerFns::new()
                    .on_add(move |object: &Arc<C>, initial: bool| {
                        let sighting = if initial {
                            Sighting::Listed
                        } else {
                            Sighting::Changed
                        };
                        on_add(&[object], sighting);
                    })
                    .on_update(move |old: &Arc<C>, new: &Arc<C>| {
                        match &predicate {
                            Some(predicate) if !predicate.accepts(old, new) => {
                                // Not a change worth a reconcile, but the cache did
                                // change: a reconcile may be waiting for it.
                                changed.notify_waiters();
                            }
                            _ => {
                                let version = old.metadata().resource_version();
                                let unchanged = version.is_some()
                                    && version == new.metadata().resource_version();
                                let sighting = if unchanged {
                                    Sighting::Resynced
                                } else {
                                    Sighting::Changed
                                };
                                on_update(&[old, new], sighting);
                            }
                        }
                    })
                    .on_delete(move |gone: DeletedObject<C>| {
                        on_gone(gone.object());
                        on_delete(&[gone.object()], Sighting::Changed);
                    }),
            )
            .map_err(|error| (short_type_name::<C>(), error))?;
        Ok(Box::new(move || registration.remove()) as RemoveHandler)
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;
    use crate::reflector::source::FakeSource;
    use crate::shared_informer::{InformerConfig, wait_for_cache_sync};
    use crate::test_support::{config_map, spawn_run, until};
    use crate::workqueue::Priority;

    /// The keys the handler queued so far, in the order the queue hands them out, each
    /// with its reason.
    async fn drain(outputs: &HandlerOutputs) -> Vec<(String, String)> {
        drain_with_priority(outputs)
            .await
            .into_iter()
            .map(|(key, reason, _)| (key, reason))
            .collect()
    }

    /// [`drain`], with the priority each key was queued at.
    async fn drain_with_priority(outputs: &HandlerOutputs) -> Vec<(String, String, Priority)> {
        let mut taken = Vec::new();
        while !outputs.queue.is_empty() {
            let (key, priority) = outputs.queue.get_with_priority().await.expect("open");
            let reason = reasons_describe(&outputs.reasons, &key);
            outputs.queue.done(&key);
            taken.push((key.to_string(), reason, priority));
        }
        taken
    }

    fn reasons_describe(reasons: &Reasons, key: &ObjectKey) -> String {
        crate::controller::reasons::describe(reasons.take(key).as_ref())
    }

    /// An informer on `source` with a handler (as `relation`) that accepts only label
    /// changes.
    async fn wired(
        source: &FakeSource<ConfigMap>,
        relation: Relation,
    ) -> (
        HandlerOutputs,
        HandlerRegistrations,
        SharedIndexInformer<ConfigMap>,
    ) {
        wired_with(
            source,
            relation,
            Some(Predicate::labels_changed()),
            InformerConfig::default(),
        )
        .await
    }

    /// An informer on `source` made with `options`, with a handler (as `relation`) that
    /// accepts the updates `predicate` does (all without one).
    async fn wired_with(
        source: &FakeSource<ConfigMap>,
        relation: Relation,
        predicate: Option<Predicate<ConfigMap>>,
        options: InformerConfig<ConfigMap>,
    ) -> (
        HandlerOutputs,
        HandlerRegistrations,
        SharedIndexInformer<ConfigMap>,
    ) {
        let informer =
            SharedIndexInformer::with_config(source.clone(), options).expect("no indexes");
        let outputs = HandlerOutputs {
            queue: WorkQueue::new(),
            cache_changed: Arc::new(Notify::new()),
            reasons: Arc::default(),
        };
        let mut registrations = HandlerRegistrations::default();
        let map = move |cm: &ConfigMap| match relation {
            Relation::Primary => Some(ObjectKey::of(cm)),
            // An owned object names its primary "owner" in its namespace.
            _ => Some(ObjectKey::new(cm.metadata.namespace.clone(), "owner")),
        };
        registrations
            .register(
                mapping_handler(&informer, relation, predicate, map, |_| {}),
                &outputs,
            )
            .expect("connected");
        (outputs, registrations, informer)
    }

    /// Gives the informer's handlers (tasks of their own) a moment to run, also for
    /// the cases that must queue nothing.
    async fn settle() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    /// Waits until `count` keys are queued (a loaded machine may run the handlers
    /// late), then [`settle`]s, so that one queued too many is seen too.
    async fn queued(outputs: &HandlerOutputs, count: usize) {
        let what = format!("{count} keys queued");
        until(&what, Duration::from_secs(10), || {
            outputs.queue.len() >= count
        })
        .await;
        settle().await;
    }

    #[tokio::test]
    async fn a_predicate_filters_updates_but_never_first_sights_deletions_or_tombstones() {
        let source = FakeSource::new();
        source.add(config_map("default/listed", &[], 1));
        let (outputs, _registrations, informer) = wired(&source, Relation::Primary).await;
        let (stop, running) = spawn_run(&informer);
        wait_for_cache_sync(&[&informer]).await;
        queued(&outputs, 1).await;
        // First sight from the initial list.
        assert_eq!(
            drain(&outputs).await,
            [("default/listed".to_owned(), "object listed".to_owned())]
        );
        // First sight from a watch event.
        source.add(config_map("default/added", &[], 1));
        queued(&outputs, 1).await;
        assert_eq!(drain(&outputs).await.len(), 1, "an add always queues");
        // An update the predicate refuses queues nothing, but wakes read-your-writes.
        let woken = outputs.cache_changed.notified();
        source.modify(config_map("default/added", &[], 2));
        tokio::time::timeout(Duration::from_secs(5), woken)
            .await
            .expect("a filtered update still tells waiters the cache changed");
        settle().await;
        assert_eq!(drain(&outputs).await, []);
        // One it accepts queues the key.
        source.modify(config_map("default/added", &[("app", "web")], 3));
        queued(&outputs, 1).await;
        assert_eq!(drain(&outputs).await.len(), 1);
        // An update starting the deletion always queues, whatever the predicate.
        let mut deleting = config_map("default/added", &[("app", "web")], 4);
        deleting.metadata.deletion_timestamp = Some(Time(Default::default()));
        source.modify(deleting.clone());
        queued(&outputs, 1).await;
        assert_eq!(
            drain(&outputs).await.len(),
            1,
            "the start of a deletion queues"
        );
        // A deletion queues.
        source.delete(deleting);
        queued(&outputs, 1).await;
        assert_eq!(drain(&outputs).await.len(), 1, "a deletion queues");
        // A deletion missed while disconnected arrives as a tombstone, and queues.
        source.delete_missed(&config_map("default/listed", &[], 1));
        tokio::time::timeout(Duration::from_secs(10), async {
            while outputs.queue.is_empty() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the tombstone queued its key");
        assert_eq!(
            drain(&outputs).await,
            [("default/listed".to_owned(), "object changed".to_owned())]
        );
        stop.send(()).ok();
        running.await.unwrap().unwrap();
    }

    /// The initial list and unchanged redeliveries are backlog, queued behind real
    /// changes; a real change to a backlog key moves it up, and its reason with it.
    #[tokio::test]
    async fn listed_and_resynced_keys_queue_behind_real_changes() {
        let source = FakeSource::new();
        for name in ["a", "b", "c"] {
            source.add(config_map(&format!("default/{name}"), &[], 1));
        }
        let (outputs, registrations, informer) =
            wired_with(&source, Relation::Primary, None, InformerConfig::default()).await;
        let (stop, running) = spawn_run(&informer);
        wait_for_cache_sync(&[&informer]).await;
        queued(&outputs, 3).await;
        // While the backlog waits, b changes and d is created (after b, in the same
        // stream: once d is queued, so is b's change).
        source.modify(config_map("default/b", &[("app", "web")], 2));
        source.add(config_map("default/d", &[], 1));
        queued(&outputs, 4).await;
        let low = Priority::LOW;
        let normal = Priority::NORMAL;
        let entry =
            |key: &str, reason: &str, priority| (key.to_owned(), reason.to_owned(), priority);
        assert_eq!(
            drain_with_priority(&outputs).await,
            [
                entry("default/b", "object changed", normal),
                entry("default/d", "object changed", normal),
                entry("default/a", "object listed", low),
                entry("default/c", "object listed", low),
            ]
        );
        drop(registrations);
        stop.send(()).ok();
        running.await.unwrap().unwrap();
    }

    /// A resync delivers an object again unchanged (so does a relist that finds it
    /// as it was, to handlers whose resync is due): backlog, too.
    #[tokio::test]
    async fn resynced_keys_are_backlog() {
        let source = FakeSource::new();
        source.add(config_map("default/a", &[], 1));
        let (outputs, registrations, informer) = wired_with(
            &source,
            Relation::Primary,
            None,
            InformerConfig::default().resync(Duration::from_secs(1)),
        )
        .await;
        let (stop, running) = spawn_run(&informer);
        wait_for_cache_sync(&[&informer]).await;
        let (key, priority) = outputs.queue.get_with_priority().await.expect("listed");
        assert_eq!(reasons_describe(&outputs.reasons, &key), "object listed");
        assert_eq!(priority, Priority::LOW);
        outputs.queue.done(&key);
        let (key, priority) =
            tokio::time::timeout(Duration::from_secs(10), outputs.queue.get_with_priority())
                .await
                .expect("resynced within the period")
                .expect("open");
        assert_eq!(reasons_describe(&outputs.reasons, &key), "object resynced");
        assert_eq!(priority, Priority::LOW);
        drop(registrations);
        stop.send(()).ok();
        running.await.unwrap().unwrap();
    }

    /// With priorities off, everything is queued at normal priority: a FIFO.
    #[tokio::test]
    async fn without_priorities_everything_is_normal() {
        let queue = WorkQueue::new();
        let reasons = Reasons::new(false);
        reasons.queue(
            &queue,
            ObjectKey::new(None, "listed"),
            Reason::Primary(Sighting::Listed),
        );
        reasons.queue(
            &queue,
            ObjectKey::new(None, "changed"),
            Reason::Primary(Sighting::Changed),
        );
        assert_eq!(
            queue.get_with_priority().await,
            Some((ObjectKey::new(None, "listed"), Priority::NORMAL))
        );
    }

    #[tokio::test]
    async fn a_related_objects_change_queues_its_primary_with_the_reason() {
        let source = FakeSource::new();
        let (outputs, registrations, informer) = wired(&source, Relation::Owned).await;
        let (stop, running) = spawn_run(&informer);
        wait_for_cache_sync(&[&informer]).await;
        source.add(config_map("default/child", &[], 1));
        queued(&outputs, 1).await;
        assert_eq!(
            drain(&outputs).await,
            [(
                "default/owner".to_owned(),
                "owned ConfigMap default/child changed".to_owned()
            )]
        );
        assert_eq!(outputs.reasons.len(), 0, "taken with the key");
        // Removed: nothing more is queued.
        drop(registrations);
        source.add(config_map("default/other", &[], 1));
        settle().await;
        assert_eq!(drain(&outputs).await, []);
        stop.send(()).ok();
        running.await.unwrap().unwrap();
    }
}
