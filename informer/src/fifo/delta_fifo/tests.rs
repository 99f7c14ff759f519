//! One test per DeltaFIFO rule, a randomised model test and a concurrency test.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
        mpsc,
    },
    time::Duration,
};

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use rand::{Rng, SeedableRng, rngs::StdRng, seq::SliceRandom};

use super::*;
use crate::fifo::DeltaType;
use crate::test_support::{self, version};
use crate::{
    key::ObjectKeyRef,
    store::{Indexer, Writer},
};

// ---------------------------------------------------------------------------------------
// Helpers

/// A ConfigMap `ns/name` whose resourceVersion is `version`, to tell states apart.
fn cm(key: &str, version: u32) -> ConfigMap {
    test_support::config_map(key, &[], version)
}

/// A delta as (kind, version, is tombstone).
type Summary = (DeltaType, u32, bool);

fn summary(deltas: &Deltas<ConfigMap>) -> Vec<Summary> {
    deltas
        .iter()
        .map(|d| {
            let tombstone = matches!(d, Delta::Deleted(DeletedObject::Unknown(_)));
            (d.kind(), version(d.object()), tombstone)
        })
        .collect()
}

fn queued(fifo: &DeltaFifo<ConfigMap>, key: &str) -> Vec<Summary> {
    summary(
        &fifo
            .get(&ObjectKey::parse(key).unwrap())
            .expect("key is queued"),
    )
}

fn keys(fifo: &DeltaFifo<ConfigMap>) -> Vec<String> {
    fifo.list_keys().iter().map(|k| k.to_string()).collect()
}

/// What the informer does with popped deltas: bring the known objects up to date.
fn apply(writer: &mut Writer<ConfigMap>, deltas: &Deltas<ConfigMap>) {
    for delta in deltas {
        match delta {
            Delta::Deleted(_) => {
                writer.delete_key(deltas.key());
            }
            other => {
                writer.upsert_keyed(deltas.key(), Arc::clone(other.object()));
            }
        }
    }
}

/// A FIFO whose known objects are `writer`'s store, holding `known`.
fn fifo_with_known(known: &[(&str, u32)]) -> (DeltaFifo<ConfigMap>, Writer<ConfigMap>) {
    let mut writer = Writer::new();
    for (key, v) in known {
        writer.upsert(cm(key, *v));
    }
    let fifo = DeltaFifo::new(DeltaFifoConfig::default().known_objects(writer.indexer()));
    (fifo, writer)
}

/// Pops one key, returning its string key and deltas, applying them to `writer`.
async fn pop_apply(
    fifo: &DeltaFifo<ConfigMap>,
    writer: &mut Writer<ConfigMap>,
) -> (String, Vec<Summary>, bool) {
    fifo.pop(|deltas| {
        apply(writer, deltas);
        Ok::<_, ProcessError<()>>((
            deltas.key().to_string(),
            summary(deltas),
            deltas.is_initial_list(),
        ))
    })
    .await
    .unwrap()
}

async fn pop_summary(fifo: &DeltaFifo<ConfigMap>) -> (String, Vec<Summary>) {
    fifo.pop(|deltas| Ok::<_, ProcessError<()>>((deltas.key().to_string(), summary(deltas))))
        .await
        .unwrap()
}

use DeltaType::{Added, Deleted, Replaced, Sync, Updated};

// ---------------------------------------------------------------------------------------
// Queueing

#[tokio::test]
async fn deltas_of_one_key_accumulate_in_order_and_the_key_is_queued_once() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.add(cm("ns/a", 1));
    fifo.update(cm("ns/a", 2));
    fifo.add(cm("ns/b", 3));
    fifo.update(cm("ns/a", 4));
    assert_eq!(keys(&fifo), ["ns/a", "ns/b"]);
    assert_eq!(fifo.len(), 2);
    assert_eq!(
        pop_summary(&fifo).await,
        (
            "ns/a".into(),
            vec![(Added, 1, false), (Updated, 2, false), (Updated, 4, false)]
        )
    );
    assert_eq!(
        pop_summary(&fifo).await,
        ("ns/b".into(), vec![(Added, 3, false)])
    );
    assert!(fifo.is_empty());
}

#[test]
fn two_deletions_in_a_row_collapse_into_the_earlier_one() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.add(cm("ns/a", 1));
    fifo.delete(cm("ns/a", 2));
    fifo.delete(cm("ns/a", 3));
    assert_eq!(
        queued(&fifo, "ns/a"),
        [(Added, 1, false), (Deleted, 2, false)]
    );
}

#[test]
fn a_deletion_with_the_final_state_replaces_a_queued_tombstone() {
    let (fifo, _writer) = fifo_with_known(&[("ns/a", 1)]);
    fifo.replace(Vec::<ConfigMap>::new(), "10");
    assert_eq!(queued(&fifo, "ns/a"), [(Deleted, 1, true)]);
    fifo.delete(cm("ns/a", 2));
    assert_eq!(queued(&fifo, "ns/a"), [(Deleted, 2, false)]);
}

#[test]
fn delete_of_an_object_neither_queued_nor_known_is_a_noop() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.delete(cm("ns/a", 1));
    assert!(fifo.is_empty());
    let (fifo, _writer) = fifo_with_known(&[("ns/other", 1)]);
    fifo.delete(cm("ns/a", 1));
    assert!(fifo.is_empty());
}

#[test]
fn delete_of_an_object_only_in_the_known_objects_is_queued() {
    let (fifo, _writer) = fifo_with_known(&[("ns/a", 1)]);
    fifo.delete(cm("ns/a", 2));
    assert_eq!(queued(&fifo, "ns/a"), [(Deleted, 2, false)]);
    let popped = fifo.get(&ObjectKey::namespaced("ns", "a")).unwrap();
    assert!(matches!(
        popped.newest(),
        Delta::Deleted(DeletedObject::Final(_))
    ));
}

/// An object whose newer state does not decode leaves the cache as a tombstone with
/// the newest state this process saw (queued first, else known); unknown keys are
/// left alone, and a queued deletion with the final state stays as it is.
#[test]
fn delete_stale_queues_a_tombstone_with_the_newest_state_seen() {
    let (fifo, _writer) = fifo_with_known(&[("ns/a", 1), ("ns/b", 1), ("ns/c", 1)]);
    fifo.delete_stale(cm("ns/a", 1));
    fifo.update(cm("ns/b", 2));
    fifo.delete_stale(cm("ns/b", 1));
    fifo.delete(cm("ns/c", 3));
    fifo.delete_stale(cm("ns/c", 1));
    fifo.delete_stale(cm("ns/unknown", 1));
    assert_eq!(queued(&fifo, "ns/a"), [(Deleted, 1, true)]);
    assert_eq!(
        queued(&fifo, "ns/b"),
        [(Updated, 2, false), (Deleted, 2, true)]
    );
    assert_eq!(queued(&fifo, "ns/c"), [(Deleted, 3, false)]);
    assert_eq!(keys(&fifo), ["ns/a", "ns/b", "ns/c"]);
}

// ---------------------------------------------------------------------------------------
// Replace

#[test]
fn replace_emits_replaced_for_every_listed_object() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.update(cm("ns/a", 1));
    fifo.replace([cm("ns/a", 2), cm("ns/b", 3)], "10");
    assert_eq!(keys(&fifo), ["ns/a", "ns/b"]);
    assert_eq!(
        queued(&fifo, "ns/a"),
        [(Updated, 1, false), (Replaced, 2, false)]
    );
    assert_eq!(queued(&fifo, "ns/b"), [(Replaced, 3, false)]);
}

#[test]
fn replace_emits_sync_when_replaced_is_turned_off() {
    let fifo = DeltaFifo::<ConfigMap>::new(DeltaFifoConfig::default().emit_replaced(false));
    fifo.replace([cm("ns/a", 1)], "10");
    assert_eq!(queued(&fifo, "ns/a"), [(Sync, 1, false)]);
}

#[test]
fn replace_tombstones_known_objects_missing_from_the_list() {
    let (fifo, _writer) = fifo_with_known(&[("ns/a", 1), ("ns/b", 2), ("c", 3)]);
    fifo.replace([cm("ns/a", 4)], "10");
    assert_eq!(queued(&fifo, "ns/a"), [(Replaced, 4, false)]);
    assert_eq!(queued(&fifo, "ns/b"), [(Deleted, 2, true)]);
    assert_eq!(queued(&fifo, "c"), [(Deleted, 3, true)]);
    let deltas = fifo.get(&ObjectKey::namespaced("ns", "b")).unwrap();
    let Delta::Deleted(DeletedObject::Unknown(tombstone)) = deltas.newest() else {
        panic!("expected a tombstone, got {:?}", deltas.newest());
    };
    assert_eq!(*tombstone.key, ObjectKey::namespaced("ns", "b"));
    assert_eq!(version(&tombstone.last_known), 2);
}

#[test]
fn replace_tombstones_queued_objects_missing_from_the_list_with_their_newest_state() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.add(cm("ns/x", 1));
    fifo.update(cm("ns/x", 2));
    fifo.replace(Vec::<ConfigMap>::new(), "10");
    assert_eq!(
        queued(&fifo, "ns/x"),
        [(Added, 1, false), (Updated, 2, false), (Deleted, 2, true)]
    );
}

#[test]
fn replace_with_a_delete_already_queued_keeps_a_single_deletion_with_the_final_state() {
    let (fifo, _writer) = fifo_with_known(&[("ns/a", 1)]);
    fifo.delete(cm("ns/a", 2));
    fifo.replace(Vec::<ConfigMap>::new(), "10");
    assert_eq!(queued(&fifo, "ns/a"), [(Deleted, 2, false)]);
    // A queued tombstone followed by another relist stays one tombstone.
    fifo.replace(Vec::<ConfigMap>::new(), "11");
    assert_eq!(queued(&fifo, "ns/a"), [(Deleted, 2, false)]);
}

#[test]
fn replace_tombstones_a_queued_known_object_once_with_the_queued_state() {
    let (fifo, _writer) = fifo_with_known(&[("ns/a", 1)]);
    fifo.update(cm("ns/a", 2));
    fifo.replace(Vec::<ConfigMap>::new(), "10");
    assert_eq!(
        queued(&fifo, "ns/a"),
        [(Updated, 2, false), (Deleted, 2, true)]
    );
}

// ---------------------------------------------------------------------------------------
// Resync

#[test]
fn resync_queues_sync_only_for_known_objects_not_already_queued() {
    let (fifo, _writer) = fifo_with_known(&[("ns/a", 1), ("ns/b", 2)]);
    fifo.update(cm("ns/a", 3));
    fifo.resync();
    assert_eq!(keys(&fifo), ["ns/a", "ns/b"]);
    assert_eq!(queued(&fifo, "ns/a"), [(Updated, 3, false)]);
    assert_eq!(queued(&fifo, "ns/b"), [(Sync, 2, false)]);
    fifo.resync();
    assert_eq!(
        queued(&fifo, "ns/b"),
        [(Sync, 2, false)],
        "already queued: no second Sync"
    );
}

#[test]
fn resync_without_known_objects_does_nothing() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.resync();
    assert!(fifo.is_empty());
    assert!(!fifo.has_synced(), "resync does not count as populating");
}

#[test]
fn resync_racing_an_update_never_reverts_the_object() {
    let (fifo, mut writer) = fifo_with_known(&[("ns/a", 1)]);
    fifo.update(cm("ns/a", 2));
    // While the update is queued, resync must not queue the stale known state.
    fifo.resync();
    assert_eq!(queued(&fifo, "ns/a"), [(Updated, 2, false)]);

    // While the update is being processed, resync waits for the queue's lock and then
    // sees the processed state.
    let (started_tx, started_rx) = mpsc::channel();
    let resyncer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            started_rx.recv().unwrap();
            fifo.resync();
        })
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(fifo.pop(|deltas| {
        started_tx.send(()).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        apply(&mut writer, deltas);
        Ok::<_, ProcessError<()>>(())
    }))
    .unwrap();
    resyncer.join().unwrap();
    assert_eq!(queued(&fifo, "ns/a"), [(Sync, 2, false)]);
}

// ---------------------------------------------------------------------------------------
// Pop, requeue, close

#[tokio::test]
async fn pop_waits_for_a_key_then_hands_over_all_its_deltas() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    let producer = {
        let fifo = fifo.clone();
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            fifo.add(cm("ns/a", 1));
        })
    };
    let (key, deltas) = pop_summary(&fifo).await;
    producer.await.unwrap();
    assert_eq!((key.as_str(), deltas), ("ns/a", vec![(Added, 1, false)]));
}

#[tokio::test]
async fn requeue_on_error_puts_the_deltas_back_at_the_end_of_the_queue() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.add(cm("ns/a", 1));
    fifo.update(cm("ns/a", 2));
    fifo.add(cm("ns/b", 3));
    let result = fifo
        .pop(|_| Err::<(), _>(ProcessError::Requeue("not now")))
        .await;
    assert!(matches!(result, Err(PopError::Requeued("not now"))));
    assert_eq!(keys(&fifo), ["ns/b", "ns/a"]);
    assert_eq!(
        queued(&fifo, "ns/a"),
        [(Added, 1, false), (Updated, 2, false)]
    );
    assert_eq!(pop_summary(&fifo).await.0, "ns/b");
    assert_eq!(pop_summary(&fifo).await.0, "ns/a");
}

#[tokio::test]
async fn a_failed_process_drops_the_deltas() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.add(cm("ns/a", 1));
    let result = fifo.pop(|_| Err::<(), _>(ProcessError::Fail(7))).await;
    assert!(matches!(result, Err(PopError::Failed(7))));
    assert!(fifo.is_empty());
    assert_eq!(ProcessError::Requeue(1).into_inner(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
// client-go's TestDeltaFIFO_PopShouldUnblockWhenClosed, and `Pop` draining what is
// queued before it reports the close.
async fn close_wakes_every_waiter_and_a_closed_fifo_hands_out_what_is_queued() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let fifo = fifo.clone();
            tokio::spawn(async move { fifo.pop(|_| Ok::<_, ProcessError<()>>(())).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(20)).await;
    fifo.close();
    for waiter in waiters {
        let result = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("close must wake the waiter")
            .unwrap();
        assert!(matches!(result, Err(PopError::Closed)));
    }
    assert!(fifo.is_closed());
    fifo.add(cm("ns/a", 1));
    let popped = fifo
        .pop(|deltas| Ok::<_, ProcessError<()>>(deltas.key().to_string()))
        .await;
    assert_eq!(popped.expect("queued before the pop"), "ns/a");
    assert_eq!(fifo.len(), 0);
    let result = fifo.pop(|_| Ok::<_, ProcessError<()>>(())).await;
    assert!(matches!(result, Err(PopError::Closed)), "closed and empty");
}

#[tokio::test]
async fn pop_is_cancel_safe() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    let timed_out = tokio::time::timeout(Duration::from_millis(10), pop_summary(&fifo)).await;
    assert!(timed_out.is_err());
    fifo.add(cm("ns/a", 1));
    assert_eq!(pop_summary(&fifo).await.0, "ns/a");
}

#[tokio::test]
async fn pop_runs_process_once() {
    let fifo = DeltaFifo::<Pod>::default();
    fifo.add(Pod::default());
    let calls = AtomicUsize::new(0);
    let popped = fifo
        .pop(|deltas| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ProcessError<()>>(deltas.len())
        })
        .await;
    assert_eq!(popped.unwrap(), 1);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

// ---------------------------------------------------------------------------------------
// has_synced and the initial list

#[test]
fn has_synced_is_false_before_anything_and_true_at_once_if_add_comes_first() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    assert!(!fifo.has_synced());
    fifo.add(cm("ns/a", 1));
    assert!(fifo.has_synced());
    fifo.replace([cm("ns/b", 2)], "1");
    assert!(fifo.has_synced(), "a later replace is not the initial list");
    assert!(
        !fifo
            .get(&ObjectKey::namespaced("ns", "b"))
            .unwrap()
            .is_initial_list()
    );
    let deleted_first = DeltaFifo::<ConfigMap>::default();
    deleted_first.delete(cm("ns/a", 1));
    assert!(deleted_first.has_synced());
}

#[tokio::test]
async fn has_synced_once_the_first_replace_is_fully_popped() {
    let (fifo, mut writer) = fifo_with_known(&[]);
    fifo.replace([cm("ns/a", 1), cm("ns/b", 2)], "1");
    fifo.add(cm("ns/c", 3));
    assert!(!fifo.has_synced());
    let (_, _, initial) = pop_apply(&fifo, &mut writer).await;
    assert!(initial);
    assert!(!fifo.has_synced());
    let (_, _, initial) = pop_apply(&fifo, &mut writer).await;
    assert!(initial);
    assert!(fifo.has_synced());
    let (key, _, initial) = pop_apply(&fifo, &mut writer).await;
    assert_eq!((key.as_str(), initial), ("ns/c", false));
}

#[tokio::test]
async fn has_synced_after_deletions() {
    // A watch deletion of a listed key joins that key's deltas: still one pop per key.
    let (fifo, mut writer) = fifo_with_known(&[]);
    fifo.replace([cm("ns/a", 1), cm("ns/b", 2)], "1");
    fifo.delete(cm("ns/a", 3));
    assert_eq!(
        queued(&fifo, "ns/a"),
        [(Replaced, 1, false), (Deleted, 3, false)]
    );
    pop_apply(&fifo, &mut writer).await;
    assert!(!fifo.has_synced());
    pop_apply(&fifo, &mut writer).await;
    assert!(fifo.has_synced());
    assert_eq!(writer.indexer().len(), 1);

    // Tombstones of the first replace are part of the initial list.
    let (fifo, mut writer) = fifo_with_known(&[("ns/gone", 1)]);
    fifo.replace(Vec::<ConfigMap>::new(), "1");
    assert!(!fifo.has_synced());
    let (key, deltas, initial) = pop_apply(&fifo, &mut writer).await;
    assert_eq!(
        (key.as_str(), deltas, initial),
        ("ns/gone", vec![(Deleted, 1, true)], true)
    );
    assert!(fifo.has_synced());
    assert!(writer.indexer().is_empty());

    // An empty first list syncs at once.
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.replace(Vec::<ConfigMap>::new(), "1");
    assert!(fifo.has_synced());
}

#[tokio::test]
async fn has_synced_waits_for_requeued_initial_items() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.replace([cm("ns/a", 1)], "1");
    let result = fifo.pop(|_| Err::<(), _>(ProcessError::Requeue(()))).await;
    assert!(matches!(result, Err(PopError::Requeued(()))));
    assert!(!fifo.has_synced());
    assert!(
        fifo.get(&ObjectKey::namespaced("ns", "a"))
            .unwrap()
            .is_initial_list()
    );
    let result = fifo.pop(|_| Err::<(), _>(ProcessError::Fail(()))).await;
    assert!(matches!(result, Err(PopError::Failed(()))));
    assert!(fifo.has_synced(), "a dropped item is done with");
}

/// `pop_batch` hands out keys in queue order, at most `max` per batch, each with all its
/// deltas as `pop` would, requeues and drops as `pop` does, and says when the queue ran dry.
#[tokio::test]
async fn pop_batch_hands_out_keys_in_order_as_pop_would() {
    let fifo = DeltaFifo::<ConfigMap>::default();
    fifo.replace([cm("ns/a", 1), cm("ns/b", 1), cm("ns/c", 1)], "1");
    fifo.update(cm("ns/a", 2));
    fifo.add(cm("ns/d", 1));
    let take = |batch: &mut PopBatch<'_, ConfigMap>| {
        let mut seen = Vec::new();
        while let Some(result) = batch.next(|deltas| {
            seen.push((deltas.key().to_string(), summary(deltas)));
            Ok::<_, ProcessError<()>>(())
        }) {
            result.unwrap();
        }
        seen
    };
    let (seen, drained) = fifo.pop_batch(2, take).await.unwrap();
    assert_eq!(
        seen,
        [
            (
                "ns/a".to_owned(),
                vec![
                    (DeltaType::Replaced, 1, false),
                    (DeltaType::Updated, 2, false)
                ]
            ),
            ("ns/b".to_owned(), vec![(DeltaType::Replaced, 1, false)]),
        ]
    );
    assert!(!drained);
    assert!(
        !fifo.has_synced(),
        "ns/c of the initial list is still queued"
    );

    // A requeue puts the key back at the end; a failure drops it.
    let (results, drained) = fifo
        .pop_batch(10, |batch| {
            let mut results: Vec<Result<(), _>> = Vec::new();
            while let Some(result) = batch.next(|deltas| {
                if deltas.key().name == "c" {
                    Err(ProcessError::Requeue("again"))
                } else {
                    Err(ProcessError::Fail("dropped"))
                }
            }) {
                results.push(result);
                if results.len() == 2 {
                    break;
                }
            }
            results
        })
        .await
        .unwrap();
    assert!(matches!(results[0], Err(PopError::Requeued("again"))));
    assert!(matches!(results[1], Err(PopError::Failed("dropped"))));
    assert!(!drained);
    assert_eq!(fifo.list_keys().len(), 1);
    assert!(
        !fifo.has_synced(),
        "the requeued initial key is pending again"
    );
    let (seen, drained) = fifo.pop_batch(10, take).await.unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, "ns/c");
    assert!(drained);
    assert!(fifo.has_synced());

    // Waits for a key; returns `None` once closed.
    let waiter = {
        let fifo = fifo.clone();
        tokio::spawn(async move { fifo.pop_batch(10, take).await.map(|(seen, _)| seen.len()) })
    };
    tokio::task::yield_now().await;
    fifo.add(cm("ns/e", 1));
    assert_eq!(waiter.await.unwrap(), Some(1));
    fifo.close();
    assert!(fifo.pop_batch(10, take).await.is_none());
}

// ---------------------------------------------------------------------------------------
// Bounded work

/// Known objects that count how often they are walked in full.
struct CountingKnown {
    inner: Indexer<ConfigMap>,
    walks: Arc<AtomicUsize>,
}

impl KnownObjects<ConfigMap> for CountingKnown {
    fn get_key(&self, key: ObjectKeyRef<'_>) -> Option<Arc<ObjectKey>> {
        self.inner.get_key(key)
    }

    fn for_each_known(&self, f: &mut dyn FnMut(&Arc<ObjectKey>, &Arc<ConfigMap>)) {
        self.walks.fetch_add(1, Ordering::SeqCst);
        self.inner.for_each_known(f);
    }
}

#[tokio::test]
async fn add_update_delete_and_pop_never_walk_the_known_objects() {
    let mut writer = Writer::new();
    for i in 0..1000 {
        writer.upsert(cm(&format!("ns/k{i}"), 1));
    }
    let walks = Arc::new(AtomicUsize::new(0));
    let known = CountingKnown {
        inner: writer.indexer(),
        walks: Arc::clone(&walks),
    };
    let fifo = DeltaFifo::new(DeltaFifoConfig::default().known_objects(known));
    for i in 0..1000 {
        fifo.add(cm(&format!("ns/n{i}"), 2));
        fifo.update(cm(&format!("ns/k{i}"), 2));
        fifo.delete(cm(&format!("ns/k{i}"), 3));
        fifo.delete(cm(&format!("ns/unknown{i}"), 3));
    }
    while !fifo.is_empty() {
        pop_apply(&fifo, &mut writer).await;
    }
    assert_eq!(walks.load(Ordering::SeqCst), 0);
    fifo.resync();
    fifo.replace(Vec::<ConfigMap>::new(), "1");
    assert_eq!(
        walks.load(Ordering::SeqCst),
        2,
        "only resync and replace walk"
    );
}

#[test]
fn keys_are_allocated_once_and_shared_with_the_store() {
    let (fifo, mut writer) = fifo_with_known(&[]);
    fifo.add(cm("ns/a", 1));
    fifo.update(cm("ns/a", 2));
    let queued_key = fifo.list_keys().remove(0);
    let deltas = fifo.get(&ObjectKey::namespaced("ns", "a")).unwrap();
    assert!(Arc::ptr_eq(deltas.key(), &queued_key));
    apply(&mut writer, &deltas);
    assert!(Arc::ptr_eq(&writer.indexer().list_keys()[0], &queued_key));
    let obj = deltas.newest().object();
    assert!(
        Arc::ptr_eq(obj, &writer.indexer().list()[0]),
        "objects are shared, not copied"
    );
}

#[test]
fn a_borrowed_key_finds_the_deltas_queued_under_a_known_key() {
    let (fifo, writer) = fifo_with_known(&[("ns/a", 1)]);
    let known_key = writer.indexer().list_keys().remove(0);
    fifo.update(cm("ns/a", 2));
    fifo.update(cm("ns/a", 3));
    fifo.delete(cm("ns/a", 4));
    assert_eq!(keys(&fifo), ["ns/a"]);
    assert_eq!(
        queued(&fifo, "ns/a"),
        [
            (Updated, 2, false),
            (Updated, 3, false),
            (Deleted, 4, false)
        ]
    );
    assert!(Arc::ptr_eq(&fifo.list_keys()[0], &known_key));
}

#[test]
fn a_borrowed_key_finds_the_deltas_queued_under_an_owned_key() {
    let fifo = DeltaFifo::new(DeltaFifoConfig::new(KeyFn::owned(ObjectKey::of)));
    fifo.add(cm("ns/a", 1));
    fifo.update(cm("ns/a", 2));
    fifo.add(cm("ns/b", 3));
    assert_eq!(keys(&fifo), ["ns/a", "ns/b"]);
    assert_eq!(
        queued(&fifo, "ns/a"),
        [(Added, 1, false), (Updated, 2, false)]
    );
}

// ---------------------------------------------------------------------------------------
// Randomised model test

#[derive(Debug, Clone, PartialEq)]
struct ModelEntry {
    key: String,
    deltas: Vec<Summary>,
    /// The operation that queued the key: keys queued by one operation may come in any
    /// order (replace and resync walk hash maps).
    batch: u64,
    initial: bool,
}

/// client-go's DeltaFIFO rules, written as plainly as possible.
#[derive(Default)]
struct Model {
    queue: Vec<ModelEntry>,
    known: BTreeMap<String, u32>,
    populated: bool,
}

impl Model {
    fn position(&self, key: &str) -> Option<usize> {
        self.queue.iter().position(|e| e.key == key)
    }

    fn append(&mut self, key: &str, delta: Summary, batch: u64, initial: bool) {
        match self.position(key) {
            Some(i) => {
                let entry = &mut self.queue[i];
                let last = entry.deltas.last_mut().unwrap();
                if delta.0 == Deleted && last.0 == Deleted {
                    if last.2 {
                        *last = delta;
                    }
                } else {
                    entry.deltas.push(delta);
                }
                entry.initial |= initial;
            }
            None => self.queue.push(ModelEntry {
                key: key.to_owned(),
                deltas: vec![delta],
                batch,
                initial,
            }),
        }
    }

    fn delete(&mut self, key: &str, v: u32, batch: u64) {
        self.populated = true;
        if self.position(key).is_some() || self.known.contains_key(key) {
            self.append(key, (Deleted, v, false), batch, false);
        }
    }

    fn replace(&mut self, list: &[(String, u32)], batch: u64) {
        let initial = !self.populated;
        self.populated = true;
        for (key, v) in list {
            self.append(key, (Replaced, *v, false), batch, initial);
        }
        let listed: BTreeSet<&String> = list.iter().map(|(k, _)| k).collect();
        let stale: Vec<(String, u32)> = self
            .queue
            .iter()
            .filter(|e| !listed.contains(&e.key))
            .map(|e| (e.key.clone(), e.deltas.last().unwrap().1))
            .collect();
        for (key, v) in stale {
            self.append(&key, (Deleted, v, true), batch, initial);
        }
        let known: Vec<(String, u32)> = self.known.iter().map(|(k, v)| (k.clone(), *v)).collect();
        for (key, v) in known {
            if !listed.contains(&key) && self.position(&key).is_none() {
                self.append(&key, (Deleted, v, true), batch, initial);
            }
        }
    }

    fn resync(&mut self, batch: u64) {
        let known: Vec<(String, u32)> = self.known.iter().map(|(k, v)| (k.clone(), *v)).collect();
        for (key, v) in known {
            if self.position(&key).is_none() {
                self.append(&key, (Sync, v, false), batch, false);
            }
        }
    }

    fn has_synced(&self) -> bool {
        self.populated && !self.queue.iter().any(|e| e.initial)
    }

    fn check(&self, fifo: &DeltaFifo<ConfigMap>, writer: &Writer<ConfigMap>, step: usize) {
        let real = keys(fifo);
        let batch_of = |key: &String| {
            self.queue
                .iter()
                .find(|e| &e.key == key)
                .unwrap_or_else(|| panic!("step {step}: {key} queued but not in the model"))
                .batch
        };
        let mut real: Vec<(u64, String)> = real.iter().map(|k| (batch_of(k), k.clone())).collect();
        assert!(
            real.windows(2).all(|w| w[0].0 <= w[1].0),
            "step {step}: queue order"
        );
        let mut model: Vec<(u64, String)> = self
            .queue
            .iter()
            .map(|e| (e.batch, e.key.clone()))
            .collect();
        real.sort();
        model.sort();
        assert_eq!(real, model, "step {step}: queued keys");
        for entry in &self.queue {
            let deltas = fifo.get(&ObjectKey::parse(&entry.key).unwrap()).unwrap();
            assert_eq!(
                summary(&deltas),
                entry.deltas,
                "step {step}: deltas of {}",
                entry.key
            );
            assert_eq!(
                deltas.is_initial_list(),
                entry.initial,
                "step {step}: {}",
                entry.key
            );
        }
        assert_eq!(
            fifo.has_synced(),
            self.has_synced(),
            "step {step}: has_synced"
        );
        let mut stored = BTreeMap::new();
        writer.indexer().for_each(|k, obj| {
            stored.insert(k.to_string(), version(obj));
        });
        assert_eq!(stored, self.known, "step {step}: known objects");
    }
}

#[test]
fn randomised_operations_agree_with_a_reference_model() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let names: Vec<String> = ["a/x", "a/y", "a/z", "b/x", "b/y", "c"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for seed in 0..60u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let (fifo, mut writer) = fifo_with_known(&[]);
        let mut model = Model::default();
        for step in 0..250usize {
            let batch = step as u64;
            let key = names[rng.random_range(0..names.len())].clone();
            // Distinct versions: 100 per step.
            let v = step as u32 * 100;
            match rng.random_range(0..100) {
                0..15 => {
                    fifo.add(cm(&key, v));
                    model.populated = true;
                    model.append(&key, (Added, v, false), batch, false);
                }
                15..30 => {
                    fifo.update(cm(&key, v));
                    model.populated = true;
                    model.append(&key, (Updated, v, false), batch, false);
                }
                30..42 => {
                    fifo.delete(cm(&key, v));
                    model.delete(&key, v, batch);
                }
                42..52 => {
                    let mut list: Vec<(String, u32)> = names
                        .iter()
                        .filter(|_| rng.random_bool(0.5))
                        .zip(v + 1..)
                        .map(|(k, v)| (k.clone(), v))
                        .collect();
                    list.shuffle(&mut rng);
                    fifo.replace(list.iter().map(|(k, v)| cm(k, *v)), "rv");
                    model.replace(&list, batch);
                }
                52..60 => {
                    fifo.resync();
                    model.resync(batch);
                }
                _ => {
                    if model.queue.is_empty() {
                        continue;
                    }
                    let outcome = rng.random_range(0..10);
                    let popped = rt.block_on(fifo.pop(|deltas| {
                        let seen = (
                            deltas.key().to_string(),
                            summary(deltas),
                            deltas.is_initial_list(),
                        );
                        match outcome {
                            0 => Err(ProcessError::Requeue(seen)),
                            1 => Err(ProcessError::Fail(seen)),
                            _ => {
                                apply(&mut writer, deltas);
                                Ok(seen)
                            }
                        }
                    }));
                    let ((key, deltas, initial), requeued) = match popped {
                        Ok(seen) | Err(PopError::Failed(seen)) => (seen, false),
                        Err(PopError::Requeued(seen)) => (seen, true),
                        Err(PopError::Closed) => panic!("not closed"),
                    };
                    let i = model.position(&key).expect("popped key is in the model");
                    assert_eq!(
                        model.queue[i].batch, model.queue[0].batch,
                        "seed {seed} step {step}: popped {key} out of order"
                    );
                    let mut entry = model.queue.remove(i);
                    assert_eq!(
                        deltas, entry.deltas,
                        "seed {seed} step {step}: popped deltas"
                    );
                    assert_eq!(
                        initial, entry.initial,
                        "seed {seed} step {step}: initial flag"
                    );
                    if requeued {
                        entry.batch = batch;
                        model.queue.push(entry);
                    } else if outcome != 1 {
                        for (kind, v, _) in deltas {
                            if kind == Deleted {
                                model.known.remove(&key);
                            } else {
                                model.known.insert(key.clone(), v);
                            }
                        }
                    }
                }
            }
            model.check(&fifo, &writer, step);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Concurrency

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_producers_and_a_consumer_keep_per_key_order() {
    const PRODUCERS: usize = 4;
    const UPDATES: u32 = 2000;
    let (fifo, mut writer) = fifo_with_known(&[]);
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                for v in 1..=UPDATES {
                    let key = format!("p{p}/k{}", v % 10);
                    if v % 97 == 0 {
                        fifo.delete(cm(&key, v));
                    } else {
                        fifo.update(cm(&key, v));
                    }
                }
            })
        })
        .collect();
    let reader = writer.indexer();
    let mut last_seen: BTreeMap<String, u32> = BTreeMap::new();
    let mut done = false;
    while !done {
        done = producers.iter().all(|p| p.is_finished());
        while !fifo.is_empty() {
            let (key, deltas, _) = pop_apply(&fifo, &mut writer).await;
            for (_, v, _) in deltas {
                let last = last_seen.entry(key.clone()).or_default();
                assert!(v > *last, "{key}: version {v} after {last}");
                *last = v;
            }
        }
        tokio::task::yield_now().await;
    }
    for p in producers {
        p.join().unwrap();
    }
    for p in 0..PRODUCERS {
        for k in 0..10u32 {
            let key = format!("p{p}/k{k}");
            let final_version = (1..=UPDATES).rev().find(|v| v % 10 == k).unwrap();
            assert_eq!(last_seen[&key], final_version, "{key}");
            let stored = reader.get_by_key(&key);
            if final_version % 97 == 0 {
                assert!(stored.is_none());
            } else {
                assert_eq!(version(&stored.unwrap()), final_version);
            }
        }
    }
}

/// client-go's `DeletionHandlingMetaNamespaceKeyFunc`: a tombstone's own key, or the
/// final state's `namespace/name`.
#[test]
fn a_deleted_object_knows_its_key_whether_final_or_a_tombstone() {
    let final_state = DeletedObject::Final(Arc::new(cm("ns/a", 3)));
    assert_eq!(final_state.key().to_string(), "ns/a");
    let tombstone = DeletedObject::Unknown(DeletedFinalStateUnknown {
        key: Arc::new(ObjectKey::parse("custom-key").unwrap()),
        last_known: Arc::new(cm("ns/b", 4)),
    });
    assert_eq!(tombstone.key().to_string(), "custom-key");
}
