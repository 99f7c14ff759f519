//! client-go: tools/cache/delta_fifo_test.go

use std::sync::Arc;
use std::time::Duration;

use informer::fifo::{DeletedFinalStateUnknown, DeletedObject, ProcessError};
use informer::key::{KeyFn, ObjectKey};

use crate::support::{
    added, deleted, delta_list, fifo, fifo_obj, pop, pop_newest, pop_val, replaced, synced,
    tombstone, updated, val_of,
};

// client-go: delta_fifo_test.go TestDeltaFIFO_basic
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic() {
    const AMOUNT: u64 = 500;
    let fifo = fifo(None, false);
    let producers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|prefix| {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                for i in 0..AMOUNT {
                    fifo.add(fifo_obj(&format!("{prefix}{i}"), i + 1));
                }
            })
        })
        .collect();
    // Each producer's objects come out in the order it added them.
    let mut last = [0u64; 2];
    for _ in 0..AMOUNT * 2 {
        let obj = pop_newest(&fifo).await;
        let producer = usize::from(!obj.metadata.name.as_deref().unwrap().starts_with('a'));
        let val = val_of(&obj);
        assert!(
            val > last[producer],
            "{val} out of order after {}",
            last[producer]
        );
        last[producer] = val;
    }
    for producer in producers {
        producer.join().unwrap();
    }
    assert_eq!(last, [AMOUNT, AMOUNT]);
}

// client-go: delta_fifo_test.go TestDeltaFIFO_replaceWithDeleteDeltaIn
#[tokio::test]
async fn replace_with_delete_delta_in() {
    let old = fifo_obj("foo", 1);
    let new = fifo_obj("foo", 2);
    let fifo = fifo(Some(vec![old.clone()]), false);
    fifo.delete(old.clone());
    fifo.replace([new.clone()], "");
    // The listed object follows the queued deletion: the informer must see it recreated.
    assert_eq!(delta_list(&pop(&fifo).await), [deleted(old), synced(new)]);
}

/// Runs one row of TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue with and
/// without (empty) known objects: the popped deltas and an empty queue after.
async fn only_in_queue(
    emit_replaced: bool,
    operations: impl Fn(&informer::fifo::DeltaFifo<k8s_openapi::api::core::v1::ConfigMap>),
    expected: Vec<informer::fifo::Delta<k8s_openapi::api::core::v1::ConfigMap>>,
) {
    for known in [Some(Vec::new()), None] {
        let with_known = known.is_some();
        let fifo = fifo(known, emit_replaced);
        operations(&fifo);
        assert_eq!(
            delta_list(&pop(&fifo).await),
            expected,
            "with known objects: {with_known}"
        );
        assert!(
            fifo.is_empty(),
            "no extra deltas (known objects: {with_known})"
        );
        assert!(fifo.get(&ObjectKey::cluster_scoped("foo")).is_none());
    }
}

// client-go: delta_fifo_test.go TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue
// "Added object should be deleted on Replace"
#[tokio::test]
async fn replace_deletes_added_object_only_in_queue() {
    let obj = fifo_obj("foo", 2);
    let expected = vec![added(obj.clone()), tombstone(obj.clone())];
    only_in_queue(
        false,
        |f| {
            f.add(obj.clone());
            f.replace(Vec::<k8s_openapi::api::core::v1::ConfigMap>::new(), "0");
        },
        expected,
    )
    .await;
}

// client-go: delta_fifo_test.go TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue
// "Replaced object should have only a single Delete"
#[tokio::test]
async fn replaced_object_only_in_queue_gets_one_delete() {
    let obj = fifo_obj("foo", 2);
    let expected = vec![
        added(obj.clone()),
        replaced(obj.clone()),
        tombstone(obj.clone()),
    ];
    only_in_queue(
        true,
        |f| {
            f.add(obj.clone());
            f.replace([obj.clone()], "0");
            f.replace(Vec::<k8s_openapi::api::core::v1::ConfigMap>::new(), "0");
        },
        expected,
    )
    .await;
}

// client-go: delta_fifo_test.go TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue
// "Deleted object should have only a single Delete"
#[tokio::test]
async fn deleted_object_only_in_queue_gets_one_delete() {
    let obj = fifo_obj("foo", 2);
    let expected = vec![added(obj.clone()), deleted(obj.clone())];
    only_in_queue(
        false,
        |f| {
            f.add(obj.clone());
            f.delete(obj.clone());
            f.replace(Vec::<k8s_openapi::api::core::v1::ConfigMap>::new(), "0");
        },
        expected,
    )
    .await;
}

// client-go: delta_fifo_test.go TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue
// "Synced objects should have a single delete"
#[tokio::test]
async fn synced_object_only_in_queue_gets_one_delete() {
    let obj = fifo_obj("foo", 2);
    let expected = vec![
        added(obj.clone()),
        synced(obj.clone()),
        synced(obj.clone()),
        tombstone(obj.clone()),
    ];
    only_in_queue(
        false,
        |f| {
            f.add(obj.clone());
            f.replace([obj.clone()], "0");
            f.replace([obj.clone()], "0");
            f.replace(Vec::<k8s_openapi::api::core::v1::ConfigMap>::new(), "0");
        },
        expected,
    )
    .await;
}

// client-go: delta_fifo_test.go TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue
// "Added objects should have a single delete on multiple Replaces"
#[tokio::test]
async fn added_object_only_in_queue_gets_one_delete_over_replaces() {
    let obj = fifo_obj("foo", 2);
    let expected = vec![added(obj.clone()), tombstone(obj.clone())];
    only_in_queue(
        false,
        |f| {
            f.add(obj.clone());
            f.replace(Vec::<k8s_openapi::api::core::v1::ConfigMap>::new(), "0");
            f.replace(Vec::<k8s_openapi::api::core::v1::ConfigMap>::new(), "1");
        },
        expected,
    )
    .await;
}

// client-go: delta_fifo_test.go TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue
// "Added and deleted and added object should be deleted"
#[tokio::test]
async fn recreated_object_only_in_queue_is_deleted() {
    let obj = fifo_obj("foo", 2);
    let v2 = fifo_obj("foo", 3);
    let expected = vec![
        added(obj.clone()),
        deleted(obj.clone()),
        added(v2.clone()),
        tombstone(v2.clone()),
    ];
    only_in_queue(
        false,
        |f| {
            f.add(obj.clone());
            f.delete(obj.clone());
            f.add(v2.clone());
            f.replace(Vec::<k8s_openapi::api::core::v1::ConfigMap>::new(), "0");
        },
        expected,
    )
    .await;
}

// client-go: delta_fifo_test.go TestDeltaFIFO_addUpdate
#[tokio::test]
async fn add_update() {
    let fifo = fifo(None, false);
    fifo.add(fifo_obj("foo", 10));
    fifo.update(fifo_obj("foo", 12));
    fifo.delete(fifo_obj("foo", 15));
    let key = ObjectKey::cluster_scoped("foo");
    let queued = fifo.get(&key).expect("foo is queued");
    assert_eq!(val_of(queued.newest().object()), 15);
    assert_eq!(fifo.list_keys(), [Arc::new(key.clone())]);

    // One pop hands out the newest state, and nothing is left behind.
    assert_eq!(pop_val(&fifo).await, 15);
    assert!(fifo.is_empty());
    assert!(fifo.get(&key).is_none(), "the item was removed");
}

// client-go: delta_fifo_test.go TestDeltaFIFO_enqueueingNoLister
#[tokio::test]
async fn enqueueing_no_lister() {
    let fifo = fifo(None, false);
    fifo.add(fifo_obj("foo", 10));
    fifo.update(fifo_obj("bar", 15));
    fifo.add(fifo_obj("qux", 17));
    fifo.delete(fifo_obj("qux", 18));
    // baz was never seen: deleting it queues nothing.
    fifo.delete(fifo_obj("baz", 20));
    for expected in [10, 15, 18] {
        assert_eq!(pop_val(&fifo).await, expected);
    }
    assert!(fifo.is_empty());
}

// client-go: delta_fifo_test.go TestDeltaFIFO_enqueueingWithLister
#[tokio::test]
async fn enqueueing_with_lister() {
    let known = vec![fifo_obj("foo", 5), fifo_obj("bar", 6), fifo_obj("baz", 7)];
    let fifo = fifo(Some(known), false);
    fifo.add(fifo_obj("foo", 10));
    fifo.update(fifo_obj("bar", 15));
    // baz is known: its deletion is queued.
    fifo.delete(fifo_obj("baz", 20));
    for expected in [10, 15, 20] {
        assert_eq!(pop_val(&fifo).await, expected);
    }
    assert!(fifo.is_empty());
}

// client-go: delta_fifo_test.go TestDeltaFIFO_addReplace
#[tokio::test]
async fn add_replace() {
    let fifo = fifo(None, false);
    fifo.add(fifo_obj("foo", 10));
    fifo.replace([fifo_obj("foo", 15)], "0");
    assert_eq!(pop_val(&fifo).await, 15);
    assert!(fifo.is_empty(), "no second value");
    assert!(fifo.get(&ObjectKey::cluster_scoped("foo")).is_none());
}

// client-go: delta_fifo_test.go TestDeltaFIFO_ResyncNonExisting
#[tokio::test]
async fn resync_non_existing() {
    let fifo = fifo(Some(vec![fifo_obj("foo", 5)]), false);
    fifo.delete(fifo_obj("foo", 10));
    fifo.resync();
    // The queued deletion is not followed by a Sync that would resurrect foo.
    let queued = fifo.get(&ObjectKey::cluster_scoped("foo")).unwrap();
    assert_eq!(delta_list(&queued), [deleted(fifo_obj("foo", 10))]);
}

// client-go: delta_fifo_test.go TestDeltaFIFO_Resync
#[tokio::test]
async fn resync() {
    let fifo = fifo(Some(vec![fifo_obj("foo", 5)]), false);
    fifo.resync();
    let queued = fifo.get(&ObjectKey::cluster_scoped("foo")).unwrap();
    assert_eq!(delta_list(&queued), [synced(fifo_obj("foo", 5))]);
}

// client-go: delta_fifo_test.go TestDeltaFIFO_DeleteExistingNonPropagated
#[tokio::test]
async fn delete_existing_non_propagated() {
    let fifo = fifo(Some(Vec::new()), false);
    fifo.add(fifo_obj("foo", 5));
    // Not known yet, but queued: the deletion is queued behind the add.
    fifo.delete(fifo_obj("foo", 6));
    let queued = fifo.get(&ObjectKey::cluster_scoped("foo")).unwrap();
    assert_eq!(
        delta_list(&queued),
        [added(fifo_obj("foo", 5)), deleted(fifo_obj("foo", 6))]
    );
}

// client-go: delta_fifo_test.go TestDeltaFIFO_ReplaceMakesDeletions
#[tokio::test]
async fn replace_makes_deletions() {
    let known = || {
        Some(vec![
            fifo_obj("foo", 5),
            fifo_obj("bar", 6),
            fifo_obj("baz", 7),
        ])
    };
    let o = fifo_obj;

    // A queued deletion stays as it is; an unlisted known object gets a tombstone.
    let f = fifo(known(), false);
    f.delete(o("baz", 10));
    f.replace([o("foo", 5)], "0");
    assert_eq!(delta_list(&pop(&f).await), [deleted(o("baz", 10))]);
    assert_eq!(delta_list(&pop(&f).await), [synced(o("foo", 5))]);
    assert_eq!(delta_list(&pop(&f).await), [tombstone(o("bar", 6))]);

    // A queued add that the list lacks gets a tombstone with the queued state.
    let f = fifo(known(), false);
    f.add(o("baz", 10));
    f.replace([o("foo", 5)], "0");
    assert_eq!(
        delta_list(&pop(&f).await),
        [added(o("baz", 10)), tombstone(o("baz", 10))]
    );
    assert_eq!(delta_list(&pop(&f).await), [synced(o("foo", 5))]);
    assert_eq!(delta_list(&pop(&f).await), [tombstone(o("bar", 6))]);

    // Deleted and recreated in the queue, then missing: the tombstone carries the
    // newest queued state, not the known one.
    let f = fifo(known(), false);
    f.delete(o("bar", 6));
    f.add(o("bar", 100));
    f.replace([o("foo", 5)], "0");
    assert_eq!(
        delta_list(&pop(&f).await),
        [
            deleted(o("bar", 6)),
            added(o("bar", 100)),
            tombstone(o("bar", 100))
        ]
    );
    assert_eq!(delta_list(&pop(&f).await), [synced(o("foo", 5))]);
    assert_eq!(delta_list(&pop(&f).await), [tombstone(o("baz", 7))]);

    // Listed first, then missing: the tombstone uses the listed (latest) version.
    let f = fifo(known(), false);
    f.replace([o("bar", 100), o("foo", 5)], "0");
    f.replace([o("foo", 5)], "0");
    assert_eq!(
        delta_list(&pop(&f).await),
        [synced(o("bar", 100)), tombstone(o("bar", 100))]
    );
    assert_eq!(
        delta_list(&pop(&f).await),
        [synced(o("foo", 5)), synced(o("foo", 5))]
    );
    assert_eq!(delta_list(&pop(&f).await), [tombstone(o("baz", 7))]);

    // Without known objects, only queued keys can be found missing.
    let f = fifo(None, false);
    f.add(o("baz", 10));
    f.replace([o("foo", 5)], "0");
    assert_eq!(
        delta_list(&pop(&f).await),
        [added(o("baz", 10)), tombstone(o("baz", 10))]
    );
    assert_eq!(delta_list(&pop(&f).await), [synced(o("foo", 5))]);
    assert!(f.is_empty());
}

// client-go: delta_fifo_test.go TestDeltaFIFO_ReplaceMakesDeletionsReplaced
#[tokio::test]
async fn replace_makes_deletions_replaced() {
    let known = vec![fifo_obj("foo", 5), fifo_obj("bar", 6), fifo_obj("baz", 7)];
    let f = fifo(Some(known), true);
    f.delete(fifo_obj("baz", 10));
    f.replace([fifo_obj("foo", 6)], "0");
    assert_eq!(delta_list(&pop(&f).await), [deleted(fifo_obj("baz", 10))]);
    assert_eq!(delta_list(&pop(&f).await), [replaced(fifo_obj("foo", 6))]);
    assert_eq!(delta_list(&pop(&f).await), [tombstone(fifo_obj("bar", 6))]);
}

// client-go: delta_fifo_test.go TestDeltaFIFO_ReplaceDeltaType
#[tokio::test]
async fn replace_delta_type() {
    let f = fifo(Some(vec![fifo_obj("foo", 5)]), true);
    f.replace([fifo_obj("foo", 5)], "0");
    assert_eq!(delta_list(&pop(&f).await), [replaced(fifo_obj("foo", 5))]);
}

// client-go: delta_fifo_test.go TestDeltaFIFO_UpdateResyncRace
#[tokio::test]
async fn update_resync_race() {
    let f = fifo(Some(vec![fifo_obj("foo", 5)]), false);
    f.update(fifo_obj("foo", 6));
    // A resync never queues a stale Sync behind a pending update.
    f.resync();
    assert_eq!(delta_list(&pop(&f).await), [updated(fifo_obj("foo", 6))]);
    assert!(f.is_empty());
}

// client-go: delta_fifo_test.go TestDeltaFIFO_HasSyncedCorrectOnDeletion
#[tokio::test]
async fn has_synced_correct_on_deletion() {
    let known = vec![fifo_obj("foo", 5), fifo_obj("bar", 6), fifo_obj("baz", 7)];
    let f = fifo(Some(known), false);
    f.replace([fifo_obj("foo", 5)], "0");
    let expected = [
        vec![synced(fifo_obj("foo", 5))],
        vec![tombstone(fifo_obj("bar", 6))],
        vec![tombstone(fifo_obj("baz", 7))],
    ];
    // The tombstones of the first replace belong to the initial list too.
    for deltas in expected {
        assert!(!f.has_synced(), "synced before the initial list was popped");
        let popped = pop(&f).await;
        assert_eq!(delta_list(&popped), deltas);
        assert!(popped.is_initial_list());
    }
    assert!(f.has_synced());
}

// client-go: delta_fifo_test.go TestDeltaFIFO_detectLineJumpers
#[tokio::test]
async fn detect_line_jumpers() {
    let f = fifo(None, false);
    f.add(fifo_obj("foo", 10));
    f.add(fifo_obj("bar", 1));
    f.add(fifo_obj("foo", 11));
    f.add(fifo_obj("foo", 13));
    f.add(fifo_obj("zab", 30));
    assert_eq!(pop_val(&f).await, 13);
    // foo goes to the back of the line, not back to its old place.
    f.add(fifo_obj("foo", 14));
    for expected in [1, 30, 14] {
        assert_eq!(pop_val(&f).await, expected);
    }
}

// client-go: delta_fifo_test.go TestDeltaFIFO_KeyOf
#[tokio::test]
async fn key_of() {
    let key_fn = KeyFn::meta_namespace();
    // An object.
    assert_eq!(key_fn.key(&fifo_obj("A", 0)).to_string(), "A");
    // A tombstone.
    let tombstone = DeletedObject::Unknown(DeletedFinalStateUnknown {
        key: Arc::new(ObjectKey::cluster_scoped("B")),
        last_known: Arc::new(fifo_obj("B", 0)),
    });
    assert_eq!(tombstone.key().to_string(), "B");
    // Deltas of an object, and of a tombstone.
    let f = fifo(Some(vec![fifo_obj("D", 0)]), false);
    f.add(fifo_obj("C", 0));
    f.replace([fifo_obj("C", 0)], "0");
    assert_eq!(pop(&f).await.key().to_string(), "C");
    let d = pop(&f).await;
    assert!(matches!(
        d.newest(),
        informer::fifo::Delta::Deleted(DeletedObject::Unknown(_))
    ));
    assert_eq!(d.key().to_string(), "D");
}

// client-go: delta_fifo_test.go TestDeltaFIFO_HasSynced
#[tokio::test]
async fn has_synced() {
    let none: Vec<k8s_openapi::api::core::v1::ConfigMap> = Vec::new();
    // Nothing happened yet.
    assert!(!fifo(None, false).has_synced());
    // An add before any replace.
    let f = fifo(None, false);
    f.add(fifo_obj("a", 1));
    assert!(f.has_synced());
    // An empty initial list.
    let f = fifo(None, false);
    f.replace(none, "0");
    assert!(f.has_synced());
    // A list of two, popped one by one.
    let f = fifo(None, false);
    f.replace([fifo_obj("a", 1), fifo_obj("b", 2)], "0");
    assert!(!f.has_synced());
    pop(&f).await;
    assert!(!f.has_synced());
    pop(&f).await;
    assert!(f.has_synced());
    // A list naming one key twice (a broken server) is one item to pop.
    let f = fifo(None, false);
    f.replace([fifo_obj("a", 1), fifo_obj("a", 2)], "0");
    pop(&f).await;
    assert!(f.has_synced());
}

// client-go: delta_fifo_test.go TestDeltaFIFO_PopShouldUnblockWhenClosed
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pop_should_unblock_when_closed() {
    const JOBS: usize = 10;
    let f = fifo(Some(vec![fifo_obj("foo", 5)]), false);
    let pops: Vec<_> = (0..JOBS)
        .map(|_| {
            let f = f.clone();
            tokio::spawn(async move { f.pop(|_| Ok::<_, ProcessError<()>>(())).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(20)).await;
    f.close();
    for popped in pops {
        let result = tokio::time::timeout(crate::support::WAIT, popped)
            .await
            .expect("pop unblocked by close")
            .unwrap();
        assert!(matches!(result, Err(informer::fifo::PopError::Closed)));
    }
}
