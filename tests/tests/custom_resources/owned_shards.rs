//! A sharded controller's cache of owned objects follows their controller references:
//! a Gear whose controller moves to a Widget of another member's shard, or that loses
//! its controller, leaves the member's cache at that event (its handlers told, as a
//! relist would tell them), and a deleted one leaves every cache, though the membership
//! never changes, so no relist repairs anything. Decided from the server's objects:
//! each member's owned cache must hold exactly the Gears controlled by Widgets of its
//! share.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use informer::controller::Action;
use informer::controller::{Context, Controller, backoff};
use informer::factory::{FactoryConfig, SharedInformerFactory};
use informer::shard::{ShardBy, ShardConfig, ShardHandle};
use informer::store::Selector;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};

use super::{Gear, GearSpec, Widget, common, create_widgets, setup};

const WAIT: Duration = Duration::from_secs(60);

/// What each member's owned cache held at its latest reconcile, by member.
type Seen = Arc<Mutex<BTreeMap<String, BTreeSet<String>>>>;

fn gear(name: &str, controller: Option<&Widget>) -> Gear {
    let mut gear = Gear::new(
        name,
        GearSpec {
            color: "grey".into(),
            size: 1,
        },
    );
    gear.metadata.owner_references = controller.map(|w| vec![w.controller_owner_ref(&()).unwrap()]);
    gear
}

/// The Gears that the server says are controlled by Widgets `handle` holds.
async fn gears_of(
    handle: &ShardHandle,
    gears: &Api<Gear>,
    widgets: &Api<Widget>,
) -> BTreeSet<String> {
    let widgets: BTreeMap<String, Widget> = widgets
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|w| (w.uid().unwrap(), w))
        .collect();
    gears
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|g| {
            g.owner_references()
                .iter()
                .find(|r| r.controller == Some(true))
                .and_then(|r| widgets.get(&r.uid))
                .is_some_and(|w| handle.in_shard_object(w.meta()))
        })
        .map(|g| g.name_any())
        .collect()
}

async fn owned_children_follow_their_controller(by: ShardBy) {
    let (env, ns) = setup("owned-shards").await;
    let client = env.client().unwrap();
    let widgets = Api::<Widget>::namespaced(client.clone(), &ns);
    let gears = Api::<Gear>::namespaced(client.clone(), &ns);
    create_widgets(&widgets, (0..40).map(|i| format!("w{i}"))).await;
    for i in 0..40 {
        let owner = widgets.get(&format!("w{i}")).await.unwrap();
        gears
            .create(
                &PostParams::default(),
                &gear(&format!("g{i}"), Some(&owner)),
            )
            .await
            .unwrap();
    }

    let seen: Seen = Arc::default();
    let mut handles = Vec::new();
    let mut members = Vec::new();
    let mut running = Vec::new();
    let mut factories = Vec::new();
    for identity in ["a", "b"] {
        let config = ShardConfig::new(ns.clone(), format!("owned-{by:?}").to_lowercase())
            .identity(identity)
            .lease_duration(Duration::from_secs(8))
            .renew_deadline(Duration::from_secs(6))
            .retry_period(Duration::from_millis(500))
            .shard_by(by);
        let member = common::RunningMember::join(client.clone(), config);
        handles.push(member.handle.clone());
        members.push(member);
    }
    common::eventually("both members to read each other", WAIT, || {
        handles.iter().all(|h| h.members() == ["a", "b"])
    })
    .await;
    for (identity, handle) in ["a", "b"].into_iter().zip(&handles) {
        let factory =
            SharedInformerFactory::new(client.clone(), FactoryConfig::default().namespace(&ns));
        let reconcile = {
            let seen = Arc::clone(&seen);
            move |_widget: Arc<Widget>, ctx: Context<Widget>| {
                let cached = ctx
                    .lister::<Gear>()
                    .list(&Selector::everything())
                    .iter()
                    .map(|g| g.name_any())
                    .collect();
                seen.lock().unwrap().insert(identity.to_owned(), cached);
                async { Ok::<_, kube::Error>(Action::Done) }
            }
        };
        let controller = Controller::<Widget>::sharded(&factory, handle).owns::<Gear>();
        running.push(common::spawn_until_stopped(|stop| {
            controller.run(reconcile, backoff, stop)
        }));
        factories.push(factory);
    }
    // Each member's owned cache holds exactly the Gears the server says are its own.
    let settle = |what: &'static str| {
        let seen = Arc::clone(&seen);
        let handles = handles.clone();
        let (gears, widgets) = (gears.clone(), widgets.clone());
        async move {
            common::eventually_async(what, WAIT, || async {
                let mut exact = true;
                for (identity, handle) in ["a", "b"].into_iter().zip(&handles) {
                    let expected = gears_of(handle, &gears, &widgets).await;
                    let cached = seen.lock().unwrap().get(identity).cloned();
                    exact &= cached == Some(expected);
                }
                exact
            })
            .await;
        }
    };
    settle("each member to cache its own Gears").await;

    // Move some of a's Gears to Widgets of b's, orphan some, and delete some of each.
    let all = widgets.list(&ListParams::default()).await.unwrap().items;
    let (of_a, of_b): (Vec<&Widget>, Vec<&Widget>) = all
        .iter()
        .partition(|w| handles[0].in_shard_object(w.meta()));
    assert!(
        of_a.len() >= 6 && of_b.len() >= 2,
        "a {} b {}",
        of_a.len(),
        of_b.len()
    );
    let gear_of = |w: &Widget| format!("g{}", &w.name_any()[1..]);
    let moved: Vec<String> = of_a[..3].iter().map(|w| gear_of(w)).collect();
    let orphaned: Vec<String> = of_a[3..5].iter().map(|w| gear_of(w)).collect();
    for name in &moved {
        let new_owner = of_b[0].controller_owner_ref(&()).unwrap();
        let patch = serde_json::json!({ "metadata": { "ownerReferences": [new_owner] } });
        gears
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }
    for name in &orphaned {
        let patch = serde_json::json!({ "metadata": { "ownerReferences": null } });
        gears
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }
    // The faults happened on the server: the moved Gears name b's Widget, the orphans
    // nobody.
    for name in &moved {
        let controller = gears.get(name).await.unwrap().owner_references()[0]
            .uid
            .clone();
        assert_eq!(Some(controller), of_b[0].uid());
    }
    for name in &orphaned {
        assert!(gears.get(name).await.unwrap().owner_references().is_empty());
    }
    // A moved Gear goes to b's cache and leaves a's; an orphan leaves a's.
    settle("the moved Gears to leave a's cache for b's, the orphans a's").await;
    for name in [&moved[0], &orphaned[0]] {
        gears.delete(name, &DeleteParams::default()).await.unwrap();
        assert!(gears.get_opt(name).await.unwrap().is_none());
    }
    // b hears of the deleted moved Gear; a reconciles nothing that maps to the deleted
    // orphan, so another change of a's must show its cache: a Gear of its own changes.
    let touch = serde_json::json!({ "spec": { "size": 2 } });
    gears
        .patch(
            &gear_of(of_a[5]),
            &PatchParams::default(),
            &Patch::Merge(&touch),
        )
        .await
        .unwrap();
    settle("the deleted Gears to leave every cache").await;

    for running in running {
        running.stop().await;
    }
    for factory in factories {
        factory.shutdown().await;
    }
    for member in members {
        member.leave().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owned_objects_leave_a_member_s_cache_when_their_controller_moves_by_key() {
    owned_children_follow_their_controller(ShardBy::Key).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owned_objects_leave_a_member_s_cache_when_their_controller_moves_by_uid() {
    owned_children_follow_their_controller(ShardBy::Uid).await;
}
