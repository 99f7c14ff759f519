//! Shard members deciding by uid, on a server with sharded list and watch on:
//! a member joining and one leaving while every Widget is reconciled over and over,
//! and no Widget ever reconciled by two members at once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use informer::controller::Action;
use informer::controller::{Context, Controller, backoff};
use informer::factory::{FactoryConfig, SharedInformerFactory};
use informer::shard::{ShardBy, ShardConfig, ShardHandle, ShardMember};
use kube::api::{Api, ListParams};
use kube::{Resource, ResourceExt};
use tokio::time::Instant;

use super::common::{Running, eventually, spawn_until_stopped as spawn};
use super::{Widget, create_widgets, setup};

/// One reconcile: which member, which Widget, from when to when (its end recorded when
/// the reconcile ends or is dropped).
#[derive(Debug, Clone)]
struct Span {
    member: &'static str,
    widget: String,
    start: Instant,
    end: Option<Instant>,
}

type Spans = Arc<Mutex<Vec<Span>>>;

/// Records a reconcile's end when dropped: also when the member drops the reconcile.
struct Ending {
    spans: Spans,
    index: usize,
}

impl Drop for Ending {
    fn drop(&mut self) {
        if let Ok(mut spans) = self.spans.lock() {
            spans[self.index].end = Some(Instant::now());
        }
    }
}

/// A member with its controller, reconciling every Widget every 200 ms.
struct Member {
    identity: &'static str,
    handle: ShardHandle,
    stop: tokio::sync::oneshot::Sender<()>,
    run: tokio::task::JoinHandle<()>,
    controller: Running<informer::controller::ControllerError>,
    factory: SharedInformerFactory,
}

impl Member {
    fn join(client: &kube::Client, ns: &str, identity: &'static str, spans: &Spans) -> Self {
        let config = ShardConfig::new(ns, "handoffs")
            .identity(identity)
            .lease_duration(Duration::from_secs(8))
            .renew_deadline(Duration::from_secs(6))
            .retry_period(Duration::from_millis(500))
            .handoff_timeout(Duration::from_secs(2))
            .shard_by(ShardBy::Uid);
        let member = ShardMember::new(client.clone(), config).unwrap();
        let handle = member.handle();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let run = tokio::spawn(member.run(async {
            stopped.await.ok();
        }));
        let factory =
            SharedInformerFactory::new(client.clone(), FactoryConfig::default().namespace(ns));
        let reconcile = {
            let spans = Arc::clone(spans);
            move |widget: Arc<Widget>, _ctx: Context<Widget>| {
                let spans = Arc::clone(&spans);
                async move {
                    let index = {
                        let mut spans = spans.lock().unwrap();
                        spans.push(Span {
                            member: identity,
                            widget: widget.name_any(),
                            start: Instant::now(),
                            end: None,
                        });
                        spans.len() - 1
                    };
                    let _ending = Ending { spans, index };
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    Ok::<_, kube::Error>(Action::RequeueAfter(Duration::from_millis(200)))
                }
            }
        };
        let controller = Controller::<Widget>::sharded(&factory, &handle).workers(4);
        let controller = spawn(|stop| controller.run(reconcile, backoff, stop));
        Self {
            identity,
            handle,
            stop,
            run,
            controller,
            factory,
        }
    }

    async fn leave(self) {
        self.controller.stop().await;
        self.factory.shutdown().await;
        self.stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(30), self.run)
            .await
            .unwrap()
            .unwrap();
    }
}

/// Who owns each Widget of `widgets` (the server's) by `members`' handles now: those
/// exactly one member may reconcile (its view gives it the Widget and its lease
/// holds).
fn owners(members: &[&Member], widgets: &[Widget]) -> BTreeMap<String, &'static str> {
    owners_by(members, widgets, |m, w| {
        m.handle.may_reconcile_object(w.meta())
    })
}

/// Whose share each Widget is in, by the members' views alone: once [`owners`] gave
/// every Widget an owner, the same map, whatever a late renewal does to `owners` at
/// the moment it is read.
fn shares(members: &[&Member], widgets: &[Widget]) -> BTreeMap<String, &'static str> {
    owners_by(members, widgets, |m, w| m.handle.in_shard_object(w.meta()))
}

fn owners_by(
    members: &[&Member],
    widgets: &[Widget],
    has: impl Fn(&Member, &Widget) -> bool,
) -> BTreeMap<String, &'static str> {
    widgets
        .iter()
        .filter_map(|w| {
            let mut owning = members.iter().filter(|m| has(m, w));
            let owner = owning.next()?;
            owning
                .next()
                .is_none()
                .then(|| (w.name_any(), owner.identity))
        })
        .collect()
}

/// The Widgets reconciled by `member` since `since`.
fn reconciled_since(spans: &Spans, member: &str, since: Instant) -> BTreeSet<String> {
    spans
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.member == member && s.start >= since)
        .map(|s| s.widget.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_by_uid_hand_widgets_over_as_one_joins_and_one_leaves_never_two_at_once() {
    let (env, ns) = setup("uid-handoffs").await;
    let client = env.client().unwrap();
    let api = Api::<Widget>::namespaced(client.clone(), &ns);
    create_widgets(&api, (0..60).map(|i| format!("h{i}"))).await;
    let widgets = api.list(&ListParams::default()).await.unwrap().items;
    let names: BTreeSet<String> = widgets.iter().map(|w| w.name_any()).collect();
    let spans: Spans = Arc::default();

    let a = Member::join(&client, &ns, "a", &spans);
    let b = Member::join(&client, &ns, "b", &spans);
    eventually("a and b to settle", Duration::from_secs(60), || {
        [&a, &b].iter().all(|m| m.handle.members() == ["a", "b"])
            && owners(&[&a, &b], &widgets).len() == names.len()
    })
    .await;
    let settled = Instant::now();
    eventually("every Widget reconciled", Duration::from_secs(60), || {
        let mut seen = reconciled_since(&spans, "a", settled);
        seen.extend(reconciled_since(&spans, "b", settled));
        seen == names
    })
    .await;

    // c joins: it takes about a third, from a and b.
    let c = Member::join(&client, &ns, "c", &spans);
    eventually("all three to settle", Duration::from_secs(60), || {
        [&a, &b, &c]
            .iter()
            .all(|m| m.handle.members() == ["a", "b", "c"])
            && owners(&[&a, &b, &c], &widgets).len() == names.len()
    })
    .await;
    let of_three = shares(&[&a, &b, &c], &widgets);
    let joined = Instant::now();
    eventually("c to reconcile its share", Duration::from_secs(60), || {
        let of_c: BTreeSet<String> = of_three
            .iter()
            .filter(|(_, o)| **o == "c")
            .map(|(w, _)| w.clone())
            .collect();
        !of_c.is_empty() && reconciled_since(&spans, "c", joined) == of_c
    })
    .await;

    // b leaves cleanly: its share moves, and (members by uid lay their buckets out in
    // a few ranges, so a leave moves a little between the stayers too) few of the
    // others': 22 of their 1,365 buckets for these three names (pinned by a unit test
    // of the layout), so about 0.6 of their 40 or so Widgets; a quarter would be a
    // broken layout.
    b.leave().await;
    eventually("a and c to settle", Duration::from_secs(60), || {
        [&a, &c].iter().all(|m| m.handle.members() == ["a", "c"])
            && owners(&[&a, &c], &widgets).len() == names.len()
    })
    .await;
    let of_two = shares(&[&a, &c], &widgets);
    let stayed: Vec<&String> = of_three
        .iter()
        .filter(|(_, owner)| **owner != "b")
        .map(|(widget, _)| widget)
        .collect();
    let moved: Vec<&&String> = stayed
        .iter()
        .filter(|widget| of_two[**widget] != of_three[**widget])
        .collect();
    assert!(
        moved.len() * 4 < stayed.len(),
        "{moved:?} of a's and c's {} Widgets moved as b left",
        stayed.len()
    );
    let left = Instant::now();
    eventually(
        "every Widget reconciled after b left",
        Duration::from_secs(60),
        || {
            let mut seen = reconciled_since(&spans, "a", left);
            seen.extend(reconciled_since(&spans, "c", left));
            seen == names
        },
    )
    .await;
    a.leave().await;
    c.leave().await;

    // Never two members on one Widget at once.
    let spans = spans.lock().unwrap().clone();
    let mut by_widget: BTreeMap<&str, Vec<&Span>> = BTreeMap::new();
    for span in &spans {
        by_widget.entry(&span.widget).or_default().push(span);
    }
    let mut handoffs = 0;
    for (widget, spans) in by_widget {
        for (i, one) in spans.iter().enumerate() {
            let one_end = one.end.expect("every reconcile ended");
            for other in &spans[i + 1..] {
                if one.member == other.member {
                    continue;
                }
                handoffs += 1;
                let other_end = other.end.expect("every reconcile ended");
                assert!(
                    one_end <= other.start || other_end <= one.start,
                    "{widget} reconciled by {} and {} at once",
                    one.member,
                    other.member
                );
            }
        }
    }
    assert!(handoffs > 0, "some Widget changed hands");
    assert!(spans.len() > 3 * names.len(), "{} reconciles", spans.len());
}
