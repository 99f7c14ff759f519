//! One test per RealFIFO rule, most of them ports of client-go's
//! `tools/cache/the_real_fifo_test.go` (the Go test named above each), and an
//! in-order test across keys.

use std::{sync::Arc, time::Duration};

use k8s_openapi::api::core::v1::ConfigMap;

use super::*;
use crate::fifo::DeltaType::{self, Added, Deleted, Replaced, Sync, Updated};
use crate::store::Writer;
use crate::test_support::{self, version};

/// A ConfigMap `ns/name` whose resourceVersion is `version`, to tell states apart.
fn cm(key: &str, version: u32) -> ConfigMap {
    test_support::config_map(key, &[], version)
}

/// A delta as (key, kind, version, is tombstone).
type Summary = (String, DeltaType, u32, bool);

fn summarise(key: &ObjectKey, delta: &Delta<ConfigMap>) -> Summary {
    let tombstone = matches!(delta, Delta::Deleted(DeletedObject::Unknown(_)));
    (
        key.to_string(),
        delta.kind(),
        version(delta.object()),
        tombstone,
    )
}

fn s(key: &str, kind: DeltaType, version: u32, tombstone: bool) -> Summary {
    (key.into(), kind, version, tombstone)
}

fn queued(fifo: &RealFifo<ConfigMap>) -> Vec<Summary> {
    fifo.queued()
        .iter()
        .map(|(key, delta)| summarise(key, delta))
        .collect()
}

/// A FIFO whose known objects are `writer`'s store, holding `known`.
fn fifo_with_known(known: &[(&str, u32)]) -> (RealFifo<ConfigMap>, Writer<ConfigMap>) {
    let mut writer = Writer::new();
    for (key, v) in known {
        writer.upsert(cm(key, *v));
    }
    let fifo = RealFifo::new(RealFifoConfig::default().known_objects(writer.indexer()));
    (fifo, writer)
}

/// Pops one delta, applying it to `writer` as the informer does; returns it summarised
/// with its initial-list flag.
async fn pop_apply(fifo: &RealFifo<ConfigMap>, writer: &mut Writer<ConfigMap>) -> (Summary, bool) {
    fifo.pop(|deltas| {
        assert_eq!(deltas.len(), 1, "a RealFifo pops one delta at a time");
        let delta = deltas.newest();
        match delta {
            Delta::Deleted(_) => {
                writer.delete_key(deltas.key());
            }
            other => {
                writer.upsert_keyed(deltas.key(), Arc::clone(other.object()));
            }
        }
        Ok::<_, ()>((summarise(deltas.key(), delta), deltas.is_initial_list()))
    })
    .await
    .unwrap()
}

async fn pop_all(fifo: &RealFifo<ConfigMap>, writer: &mut Writer<ConfigMap>) -> Vec<Summary> {
    let mut popped = Vec::new();
    while !fifo.is_empty() {
        popped.push(pop_apply(fifo, writer).await.0);
    }
    popped
}

// client-go: TestRealFIFO_basic (two producers; each one's changes come out in order)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_from_concurrent_producers_each_come_out_in_their_order() {
    let fifo = RealFifo::<ConfigMap>::default();
    const AMOUNT: u32 = 500;
    let producers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|prefix| {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                for i in 1..=AMOUNT {
                    fifo.add(cm(&format!("{prefix}/{i}"), i));
                }
            })
        })
        .collect();
    let mut last = [0u32; 2];
    for _ in 0..2 * AMOUNT {
        let (namespace, v) = fifo
            .pop(|d| {
                Ok::<_, ()>((
                    d.key().namespace.clone().unwrap(),
                    version(d.newest().object()),
                ))
            })
            .await
            .unwrap();
        let producer = usize::from(namespace == "b");
        assert!(
            v > last[producer],
            "{namespace}: {v} after {}",
            last[producer]
        );
        last[producer] = v;
    }
    for producer in producers {
        producer.join().unwrap();
    }
    assert_eq!(last, [AMOUNT, AMOUNT]);
}

// client-go: TestRealFIFO_detectLineJumpers
#[tokio::test]
async fn no_change_overtakes_another_across_keys() {
    let (fifo, mut writer) = fifo_with_known(&[]);
    fifo.add(cm("ns/foo", 10));
    fifo.add(cm("ns/bar", 1));
    fifo.add(cm("ns/foo", 11));
    fifo.add(cm("ns/foo", 13));
    fifo.add(cm("ns/zab", 30));
    assert_eq!(
        pop_apply(&fifo, &mut writer).await.0,
        s("ns/foo", Added, 10, false)
    );
    // A change queued now goes behind everything queued before it.
    fifo.add(cm("ns/foo", 14));
    let versions: Vec<u32> = pop_all(&fifo, &mut writer)
        .await
        .into_iter()
        .map(|(_, _, v, _)| v)
        .collect();
    assert_eq!(versions, [1, 11, 13, 30, 14]);
}

// client-go: TestRealFIFO_addUpdate
#[tokio::test]
async fn every_change_to_one_key_is_queued_and_popped_separately() {
    let (fifo, mut writer) = fifo_with_known(&[]);
    fifo.add(cm("ns/foo", 10));
    fifo.update(cm("ns/foo", 12));
    fifo.delete(cm("ns/foo", 15));
    let expected = [
        s("ns/foo", Added, 10, false),
        s("ns/foo", Updated, 12, false),
        s("ns/foo", Deleted, 15, false),
    ];
    assert_eq!(queued(&fifo), expected);
    assert_eq!(fifo.len(), 3);
    assert_eq!(pop_all(&fifo, &mut writer).await, expected);
    assert!(writer.indexer().is_empty());
}

// client-go: TestRealFIFO_enqueueingNoLister
#[tokio::test]
async fn a_deletion_is_queued_even_for_a_key_neither_queued_nor_known() {
    let fifo = RealFifo::<ConfigMap>::default();
    fifo.add(cm("ns/foo", 10));
    fifo.update(cm("ns/bar", 15));
    fifo.add(cm("ns/qux", 17));
    fifo.delete(cm("ns/qux", 18));
    fifo.delete(cm("ns/baz", 20));
    let versions: Vec<u32> = queued(&fifo).into_iter().map(|(_, _, v, _)| v).collect();
    assert_eq!(versions, [10, 15, 17, 18, 20]);
}

// client-go: TestRealFIFO_enqueueingWithLister
#[tokio::test]
async fn a_deletion_of_a_known_key_is_queued() {
    let (fifo, mut writer) = fifo_with_known(&[("ns/foo", 5), ("ns/bar", 6), ("ns/baz", 7)]);
    fifo.add(cm("ns/foo", 10));
    fifo.update(cm("ns/bar", 15));
    fifo.delete(cm("ns/baz", 20));
    let popped = pop_all(&fifo, &mut writer).await;
    assert_eq!(
        popped,
        [
            s("ns/foo", Added, 10, false),
            s("ns/bar", Updated, 15, false),
            s("ns/baz", Deleted, 20, false),
        ]
    );
}

// client-go: TestRealFIFO_DeleteExistingNonPropagated
#[test]
fn a_deletion_after_an_add_is_queued_behind_it() {
    let fifo = RealFifo::<ConfigMap>::default();
    fifo.add(cm("ns/foo", 5));
    fifo.delete(cm("ns/foo", 6));
    assert_eq!(
        queued(&fifo),
        [s("ns/foo", Added, 5, false), s("ns/foo", Deleted, 6, false)]
    );
}

// client-go: TestRealFIFO_replaceWithDeleteDeltaIn
#[test]
fn replace_after_a_queued_deletion_queues_the_listed_object_again() {
    let (fifo, _writer) = fifo_with_known(&[("ns/foo", 1)]);
    fifo.delete(cm("ns/foo", 1));
    fifo.replace([cm("ns/foo", 2)], "");
    assert_eq!(
        queued(&fifo),
        [
            s("ns/foo", Deleted, 1, false),
            s("ns/foo", Replaced, 2, false)
        ]
    );
}

// client-go: TestRealFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue (every row)
#[tokio::test]
async fn replace_tombstones_objects_only_in_the_queue_once() {
    type Operations = fn(&RealFifo<ConfigMap>);
    let rows: [(&str, Operations, Vec<Summary>); 5] = [
        (
            "Added object should be deleted on Replace",
            |f| {
                f.add(cm("ns/foo", 2));
                f.replace(Vec::<ConfigMap>::new(), "0");
            },
            vec![s("ns/foo", Added, 2, false), s("ns/foo", Deleted, 2, true)],
        ),
        (
            "Deleted object should have only a single Delete",
            |f| {
                f.add(cm("ns/foo", 2));
                f.delete(cm("ns/foo", 2));
                f.replace(Vec::<ConfigMap>::new(), "0");
            },
            vec![s("ns/foo", Added, 2, false), s("ns/foo", Deleted, 2, false)],
        ),
        (
            "Synced objects should have a single delete",
            |f| {
                f.add(cm("ns/foo", 2));
                f.replace([cm("ns/foo", 2)], "0");
                f.replace([cm("ns/foo", 2)], "0");
                f.replace(Vec::<ConfigMap>::new(), "0");
            },
            vec![
                s("ns/foo", Added, 2, false),
                s("ns/foo", Replaced, 2, false),
                s("ns/foo", Replaced, 2, false),
                s("ns/foo", Deleted, 2, true),
            ],
        ),
        (
            "Added objects should have a single delete on multiple Replaces",
            |f| {
                f.add(cm("ns/foo", 2));
                f.replace(Vec::<ConfigMap>::new(), "0");
                f.replace(Vec::<ConfigMap>::new(), "1");
            },
            vec![s("ns/foo", Added, 2, false), s("ns/foo", Deleted, 2, true)],
        ),
        (
            "Added and deleted and added object should be deleted",
            |f| {
                f.add(cm("ns/foo", 2));
                f.delete(cm("ns/foo", 2));
                f.add(cm("ns/foo", 3));
                f.replace(Vec::<ConfigMap>::new(), "0");
            },
            vec![
                s("ns/foo", Added, 2, false),
                s("ns/foo", Deleted, 2, false),
                s("ns/foo", Added, 3, false),
                s("ns/foo", Deleted, 3, true),
            ],
        ),
    ];
    for (name, operations, expected) in rows {
        let (fifo, mut writer) = fifo_with_known(&[]);
        operations(&fifo);
        assert_eq!(pop_all(&fifo, &mut writer).await, expected, "{name}");
        assert!(fifo.is_empty(), "{name}");
    }
}

// client-go: TestRealFIFO_addReplace
#[tokio::test]
async fn an_add_then_a_replace_are_both_delivered() {
    let (fifo, mut writer) = fifo_with_known(&[]);
    fifo.add(cm("ns/foo", 10));
    fifo.replace([cm("ns/foo", 15)], "0");
    assert_eq!(
        pop_all(&fifo, &mut writer).await,
        [
            s("ns/foo", Added, 10, false),
            s("ns/foo", Replaced, 15, false)
        ]
    );
}

// client-go: TestRealFIFO_ReplaceMakesDeletions (first case: a pre-existing delete) and
// TestRealFIFO_ReplaceMakesDeletionsReplaced
#[tokio::test]
async fn replace_puts_the_deletions_of_vanished_objects_before_the_listed_ones() {
    let (fifo, mut writer) = fifo_with_known(&[("ns/foo", 5), ("ns/bar", 6), ("ns/baz", 7)]);
    fifo.delete(cm("ns/baz", 10));
    fifo.replace([cm("ns/foo", 6)], "0");
    assert_eq!(
        pop_all(&fifo, &mut writer).await,
        [
            s("ns/baz", Deleted, 10, false),
            s("ns/bar", Deleted, 6, true),
            s("ns/foo", Replaced, 6, false),
        ]
    );
}

// client-go: TestRealFIFO_ReplaceMakesDeletions (second case: a pre-existing add)
#[tokio::test]
async fn replace_tombstones_a_queued_add_with_its_queued_state() {
    let (fifo, mut writer) = fifo_with_known(&[("ns/foo", 5), ("ns/bar", 6), ("ns/baz", 7)]);
    fifo.add(cm("ns/baz", 10));
    fifo.replace([cm("ns/foo", 5)], "0");
    assert_eq!(
        pop_all(&fifo, &mut writer).await,
        [
            s("ns/baz", Added, 10, false),
            s("ns/baz", Deleted, 10, true),
            s("ns/bar", Deleted, 6, true),
            s("ns/foo", Replaced, 5, false),
        ]
    );
}

// client-go: TestRealFIFO_ReplaceMakesDeletions (third case: deleted and recreated)
#[tokio::test]
async fn replace_tombstones_a_recreated_object_with_its_newest_queued_state() {
    let (fifo, mut writer) = fifo_with_known(&[("ns/foo", 5), ("ns/bar", 6), ("ns/baz", 7)]);
    fifo.delete(cm("ns/bar", 6));
    fifo.add(cm("ns/bar", 100));
    fifo.replace([cm("ns/foo", 5)], "0");
    assert_eq!(
        pop_all(&fifo, &mut writer).await,
        [
            s("ns/bar", Deleted, 6, false),
            s("ns/bar", Added, 100, false),
            s("ns/bar", Deleted, 100, true),
            s("ns/baz", Deleted, 7, true),
            s("ns/foo", Replaced, 5, false),
        ]
    );
}

// client-go: TestRealFIFO_ReplaceMakesDeletions (fourth case: two replaces in a row)
#[tokio::test]
async fn a_second_replace_tombstones_what_the_first_listed_with_the_listed_state() {
    let (fifo, mut writer) = fifo_with_known(&[("ns/foo", 5), ("ns/bar", 6), ("ns/baz", 7)]);
    fifo.replace([cm("ns/bar", 100), cm("ns/foo", 5)], "0");
    fifo.replace([cm("ns/foo", 5)], "0");
    assert_eq!(
        pop_all(&fifo, &mut writer).await,
        [
            s("ns/baz", Deleted, 7, true),
            s("ns/bar", Replaced, 100, false),
            s("ns/foo", Replaced, 5, false),
            s("ns/bar", Deleted, 100, true),
            s("ns/foo", Replaced, 5, false),
        ]
    );
}

// client-go: TestRealFIFO_ReplaceMakesDeletions (fifth case: no known objects)
#[tokio::test]
async fn without_known_objects_replace_tombstones_only_queued_keys() {
    let fifo = RealFifo::<ConfigMap>::default();
    let mut writer = Writer::new();
    fifo.add(cm("ns/baz", 10));
    fifo.replace([cm("ns/foo", 5)], "0");
    assert_eq!(
        pop_all(&fifo, &mut writer).await,
        [
            s("ns/baz", Added, 10, false),
            s("ns/baz", Deleted, 10, true),
            s("ns/foo", Replaced, 5, false),
        ]
    );
}

// client-go: TestRealFIFO_ResyncNonExisting
#[test]
fn resync_skips_a_known_key_with_a_queued_deletion() {
    let (fifo, _writer) = fifo_with_known(&[("ns/foo", 5)]);
    fifo.delete(cm("ns/foo", 10));
    fifo.resync();
    assert_eq!(queued(&fifo), [s("ns/foo", Deleted, 10, false)]);
}

// client-go: TestRealFIFO_Resync
#[test]
fn resync_queues_sync_for_every_known_object_with_nothing_queued() {
    let (fifo, _writer) = fifo_with_known(&[("ns/foo", 5)]);
    fifo.resync();
    assert_eq!(queued(&fifo), [s("ns/foo", Sync, 5, false)]);
    let fifo = RealFifo::<ConfigMap>::default();
    fifo.resync();
    assert!(
        fifo.is_empty(),
        "without known objects a resync does nothing"
    );
}

// client-go: TestRealFIFO_UpdateResyncRace
#[tokio::test]
async fn resync_racing_an_update_never_reverts_the_object() {
    let (fifo, mut writer) = fifo_with_known(&[("ns/foo", 5)]);
    fifo.update(cm("ns/foo", 6));
    fifo.resync();
    assert_eq!(
        pop_all(&fifo, &mut writer).await,
        [s("ns/foo", Updated, 6, false)]
    );
}

// client-go: TestRealFIFO_HasSyncedCorrectOnDeletion
#[tokio::test]
async fn the_deletions_of_the_first_replace_belong_to_the_initial_list() {
    let (fifo, mut writer) = fifo_with_known(&[("ns/foo", 5), ("ns/bar", 6), ("ns/baz", 7)]);
    fifo.replace([cm("ns/foo", 5)], "0");
    let mut popped = Vec::new();
    for _ in 0..3 {
        assert!(!fifo.has_synced());
        let (summary, initial) = pop_apply(&fifo, &mut writer).await;
        assert!(initial, "{summary:?} is part of the initial list");
        popped.push(summary);
    }
    assert!(fifo.has_synced());
    // The known objects are walked in no particular order.
    popped[..2].sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        popped,
        [
            s("ns/bar", Deleted, 6, true),
            s("ns/baz", Deleted, 7, true),
            s("ns/foo", Replaced, 5, false),
        ]
    );
}

// client-go: TestRealFIFO_HasSynced (every row)
#[tokio::test]
async fn has_synced_once_the_first_replace_is_delivered_or_an_event_came_first() {
    let pop = |fifo: &RealFifo<ConfigMap>| {
        let fifo = fifo.clone();
        async move { fifo.pop(|_| Ok::<_, ()>(())).await.unwrap() }
    };
    let fifo = RealFifo::<ConfigMap>::default();
    assert!(!fifo.has_synced(), "nothing happened yet");

    let fifo = RealFifo::<ConfigMap>::default();
    fifo.add(cm("ns/a", 1));
    assert!(fifo.has_synced(), "an add came first");

    let fifo = RealFifo::<ConfigMap>::default();
    fifo.replace(Vec::<ConfigMap>::new(), "0");
    assert!(fifo.has_synced(), "an empty first list");

    let fifo = RealFifo::<ConfigMap>::default();
    fifo.replace([cm("ns/a", 1), cm("ns/b", 2)], "0");
    assert!(!fifo.has_synced());
    pop(&fifo).await;
    assert!(!fifo.has_synced(), "one of two popped");
    pop(&fifo).await;
    assert!(fifo.has_synced(), "both popped");

    // A list naming a key twice (a broken server): both deltas must be popped.
    let fifo = RealFifo::<ConfigMap>::default();
    fifo.replace([cm("ns/a", 1), cm("ns/a", 2)], "0");
    pop(&fifo).await;
    assert!(!fifo.has_synced());
    pop(&fifo).await;
    assert!(fifo.has_synced());
}

// client-go: TestRealFIFO_PopShouldUnblockWhenClosed
#[tokio::test]
async fn close_wakes_every_waiting_pop() {
    let fifo = RealFifo::<ConfigMap>::default();
    let pops: Vec<_> = (0..10)
        .map(|_| {
            let fifo = fifo.clone();
            tokio::spawn(async move { fifo.pop(|_| Ok::<_, ()>(())).await })
        })
        .collect();
    tokio::task::yield_now().await;
    fifo.close();
    for pop in pops {
        let result = tokio::time::timeout(Duration::from_secs(5), pop)
            .await
            .expect("pop returned after close")
            .unwrap();
        assert!(matches!(result, Err(PopError::Closed)));
    }
}

// Our rule (client-go's Pop too): nothing queued is lost to a close.
#[tokio::test]
async fn a_closed_queue_hands_out_what_is_still_queued() {
    let (fifo, mut writer) = fifo_with_known(&[]);
    fifo.add(cm("ns/a", 1));
    fifo.add(cm("ns/b", 2));
    fifo.close();
    assert!(fifo.is_closed());
    assert_eq!(pop_all(&fifo, &mut writer).await.len(), 2);
    let closed = fifo.pop(|_| Ok::<_, ()>(())).await;
    assert!(matches!(closed, Err(PopError::Closed)));
}

#[tokio::test]
async fn a_failing_process_function_drops_the_delta_and_keeps_the_order() {
    let (fifo, mut writer) = fifo_with_known(&[]);
    fifo.add(cm("ns/a", 1));
    fifo.add(cm("ns/b", 2));
    let failed = fifo.pop(|_| Err::<(), _>("broken")).await;
    assert!(matches!(failed, Err(PopError::Failed("broken"))));
    assert_eq!(
        pop_all(&fifo, &mut writer).await,
        [s("ns/b", Added, 2, false)]
    );
}

#[tokio::test]
async fn delete_stale_tombstones_the_newest_state_once() {
    let (fifo, mut writer) = fifo_with_known(&[("ns/known", 1)]);
    fifo.delete_stale(cm("ns/unknown", 1));
    assert!(
        fifo.is_empty(),
        "neither queued nor known: nothing to delete"
    );

    fifo.update(cm("ns/known", 2));
    fifo.delete_stale(cm("ns/known", 1));
    fifo.delete_stale(cm("ns/known", 1));
    assert_eq!(
        pop_all(&fifo, &mut writer).await,
        [
            s("ns/known", Updated, 2, false),
            s("ns/known", Deleted, 2, true),
        ],
        "the tombstone carries the newest queued state; a second one is not queued"
    );

    writer.upsert(cm("ns/other", 3));
    fifo.delete_stale(cm("ns/other", 3));
    assert_eq!(queued(&fifo), [s("ns/other", Deleted, 3, true)]);
}

#[test]
fn keys_known_to_the_store_are_shared_not_allocated_again() {
    let (fifo, writer) = fifo_with_known(&[("ns/a", 1)]);
    fifo.update(cm("ns/a", 2));
    fifo.add(cm("ns/new", 1));
    let queued = fifo.queued();
    let stored = writer
        .indexer()
        .stored_key(ObjectKeyRef::new(Some("ns"), "a"))
        .unwrap();
    assert!(Arc::ptr_eq(&queued[0].0, &stored));
}

/// Pops one batch of at most `max` deltas; returns them summarised.
async fn pop_one_batch(fifo: &RealFifo<ConfigMap>, max: usize) -> Vec<Summary> {
    let (popped, _) = fifo
        .pop_batch(max, |batch| {
            let mut popped = Vec::new();
            while batch.apply_next(&mut |deltas| {
                popped.push(summarise(deltas.key(), deltas.newest()));
            }) {}
            popped
        })
        .await
        .expect("not closed");
    popped
}

/// client-go's `TestRealFIFO_ReplaceAtomic` and `ReplaceAtomicPop`, in intent: what one
/// `replace` queued (its tombstones and its listed objects) comes out of one batch pop
/// whatever the batch's size, and what was queued before it and after it does not join
/// it.
#[tokio::test]
async fn a_replace_is_popped_in_one_batch() {
    let (fifo, _writer) = fifo_with_known(&[("ns/gone", 1), ("ns/kept", 1)]);
    fifo.update(cm("ns/kept", 2));
    fifo.replace(vec![cm("ns/kept", 3), cm("ns/a", 3), cm("ns/b", 3)], "3");
    fifo.add(cm("ns/after", 4));
    assert_eq!(
        pop_one_batch(&fifo, 1).await,
        [s("ns/kept", Updated, 2, false)]
    );
    assert_eq!(
        pop_one_batch(&fifo, 2).await,
        [
            s("ns/gone", Deleted, 1, true),
            s("ns/kept", Replaced, 3, false),
            s("ns/a", Replaced, 3, false),
            s("ns/b", Replaced, 3, false),
        ],
        "the whole relist, though the batch asked for 2"
    );
    assert_eq!(
        pop_one_batch(&fifo, 32).await,
        [s("ns/after", Added, 4, false)]
    );
}

/// A one-delta `pop` still takes one; what is left of the relist stays one batch.
#[tokio::test]
async fn a_relist_popped_one_by_one_keeps_the_rest_together() {
    let (fifo, mut writer) = fifo_with_known(&[]);
    fifo.replace(vec![cm("ns/a", 1), cm("ns/b", 1), cm("ns/c", 1)], "1");
    pop_apply(&fifo, &mut writer).await;
    assert_eq!(
        pop_one_batch(&fifo, 1).await,
        [s("ns/b", Replaced, 1, false), s("ns/c", Replaced, 1, false)]
    );
}

/// client-go's `TestRealFIFO_ResyncAtomic`, in intent: a resync's deltas are one batch.
#[tokio::test]
async fn a_resync_is_popped_in_one_batch() {
    let (fifo, _writer) = fifo_with_known(&[("ns/a", 1), ("ns/b", 1), ("ns/c", 1)]);
    fifo.update(cm("ns/b", 2));
    fifo.resync();
    assert_eq!(
        pop_one_batch(&fifo, 1).await,
        [s("ns/b", Updated, 2, false)]
    );
    let mut synced = pop_one_batch(&fifo, 1).await;
    synced.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        synced,
        [s("ns/a", Sync, 1, false), s("ns/c", Sync, 1, false)],
        "both resynced objects in one batch"
    );
}

/// A group is never split between batches: what was queued before it goes alone when
/// the group would not fit beside it, and the group goes whole in the next batch.
#[tokio::test]
async fn a_batch_never_takes_part_of_a_relist() {
    let (fifo, _writer) = fifo_with_known(&[]);
    fifo.add(cm("ns/before", 1));
    let listed: Vec<ConfigMap> = (0..40).map(|i| cm(&format!("ns/l{i}"), 2)).collect();
    fifo.replace(listed, "2");
    fifo.add(cm("ns/after", 3));
    assert_eq!(
        pop_one_batch(&fifo, 32).await,
        [s("ns/before", Added, 1, false)]
    );
    assert_eq!(
        pop_one_batch(&fifo, 32).await.len(),
        41,
        "the whole relist: the tombstone of ns/before, which it lacks, and 40 listed"
    );
    assert_eq!(
        pop_one_batch(&fifo, 32).await,
        [s("ns/after", Added, 3, false)]
    );
}

/// How long a test waits for a condition another thread brings about.
const WAIT: Duration = Duration::from_secs(10);

/// Waits until `done` holds, or panics after [`WAIT`].
fn wait_until(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + WAIT;
    while !done() {
        assert!(std::time::Instant::now() < deadline, "never: {what}");
        std::thread::yield_now();
    }
}

/// A pop processing on its own thread: says when processing starts, waits to be
/// released, and ends with the writer it applied the delta to and the delta.
type HeldPop = (
    std::sync::mpsc::Receiver<()>,
    std::sync::mpsc::Sender<()>,
    std::thread::JoinHandle<(Writer<ConfigMap>, Summary)>,
);

/// A pop on a thread of its own, whose process function applies the delta to `writer`
/// once the test releases it; returns the writer and what was popped.
fn pop_on_a_thread(fifo: &RealFifo<ConfigMap>, mut writer: Writer<ConfigMap>) -> HeldPop {
    let (started, is_started) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let fifo = fifo.clone();
    let consumer = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let popped = runtime.block_on(fifo.pop(|deltas| {
            started.send(()).unwrap();
            released.recv_timeout(WAIT).expect("released");
            writer.upsert_keyed(deltas.key(), Arc::clone(deltas.newest().object()));
            Ok::<_, ()>(summarise(deltas.key(), deltas.newest()))
        }));
        (writer, popped.unwrap())
    });
    (is_started, release, consumer)
}

/// client-go's `UnlockWhileProcessingFIFO`: while a popped delta is processed, a
/// watch's `add` goes through at once (it used to wait for the processing), and a
/// relist waits for it, so that it sees the processed object in the known objects and
/// tombstones it (reading them while the delta was in neither place would miss it).
#[test]
fn an_add_goes_on_while_a_delta_is_processed_and_a_relist_waits_for_it() {
    let (fifo, writer) = fifo_with_known(&[]);
    fifo.add(cm("ns/a", 1));
    let (started, release, consumer) = pop_on_a_thread(&fifo, writer);
    started.recv_timeout(WAIT).expect("processing");

    fifo.add(cm("ns/b", 2));
    assert_eq!(queued(&fifo), [s("ns/b", Added, 2, false)]);
    assert!(!fifo.is_settled(), "a delta is being processed");

    let relist = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fifo.replace(Vec::<ConfigMap>::new(), "3"))
    };
    wait_until("the relist waits for the processing", || {
        fifo.shared
            .idle_waits
            .load(std::sync::atomic::Ordering::SeqCst)
            > 0
    });
    assert_eq!(fifo.len(), 1, "nothing relisted yet");
    release.send(()).unwrap();
    relist.join().unwrap();
    let (writer, popped) = consumer.join().unwrap();
    assert_eq!(popped, s("ns/a", Added, 1, false));
    assert!(
        writer
            .indexer()
            .get(&ObjectKey::parse("ns/a").unwrap())
            .is_some()
    );
    assert_eq!(
        queued(&fifo),
        [
            s("ns/b", Added, 2, false),
            s("ns/b", Deleted, 2, true),
            s("ns/a", Deleted, 1, true),
        ],
        "the relist tombstoned the processed object too"
    );
}

/// Batches are processed one at a time and in order: a second pop waits for the first
/// one's processing, though the queue's lock is free.
#[test]
fn a_second_pop_waits_for_the_first_ones_processing() {
    let (fifo, writer) = fifo_with_known(&[]);
    fifo.add(cm("ns/a", 1));
    fifo.add(cm("ns/b", 1));
    let (started, release, first) = pop_on_a_thread(&fifo, writer);
    started.recv_timeout(WAIT).expect("processing");
    let second = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            runtime
                .block_on(fifo.pop(|deltas| Ok::<_, ()>(summarise(deltas.key(), deltas.newest()))))
        })
    };
    wait_until("the second pop waits", || fifo.lock().waiters == 1);
    assert_eq!(fifo.len(), 1, "b still queued while a is processed");
    release.send(()).unwrap();
    assert_eq!(first.join().unwrap().1, s("ns/a", Added, 1, false));
    assert_eq!(second.join().unwrap().unwrap(), s("ns/b", Added, 1, false));
    assert!(fifo.is_settled());
}

/// A process function that panics loses its delta, as before, and leaves the queue
/// working: the next pop gets the next delta and a relist does not wait forever.
#[test]
fn a_panic_while_processing_leaves_the_queue_working() {
    let (fifo, _writer) = fifo_with_known(&[]);
    fifo.add(cm("ns/a", 1));
    fifo.add(cm("ns/b", 1));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(fifo.pop(|_| -> Result<(), ()> { panic!("process blew up") }))
    }));
    assert!(panicked.is_err());
    assert!(!fifo.lock().processing, "not left processing");
    assert_eq!(
        queued(&fifo),
        [s("ns/b", Added, 1, false)],
        "a is lost, b queued"
    );
    fifo.replace(vec![cm("ns/b", 1)], "2");
    let next =
        runtime.block_on(fifo.pop(|deltas| Ok::<_, ()>(summarise(deltas.key(), deltas.newest()))));
    assert_eq!(next.unwrap(), s("ns/b", Added, 1, false));
}
