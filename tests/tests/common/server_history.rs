//! What the API server saw, in the order it applied it: every change of the Leases,
//! the ConfigMaps and the Events of one namespace, with the resourceVersion the server
//! gave it. All live in the one etcd, whose revision counts every write, so the
//! resourceVersions order Lease changes and object writes against each other: the
//! multi-process fencing tests decide from them, not from what the replicas say,
//! whether a write landed after another replica's term or ownership began. Included
//! by those test binaries with `#[path]`.
// Each test binary uses part of it.
#![allow(unreachable_pub, dead_code)]

use std::sync::{Arc, Mutex};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

/// One change, at the resourceVersion the server gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A Lease was created, updated or deleted; `holder` is its `holderIdentity`.
    Lease {
        rv: u64,
        name: String,
        holder: Option<String>,
        deleted: bool,
    },
    /// A replica wrote a ConfigMap (its `data.writer`).
    Write {
        rv: u64,
        key: String,
        writer: String,
    },
    /// A replica's recorder created or patched an Event (its `reportingInstance`).
    Event {
        rv: u64,
        name: String,
        instance: String,
        count: i32,
    },
}

impl Change {
    pub fn rv(&self) -> u64 {
        match self {
            Change::Lease { rv, .. } | Change::Write { rv, .. } | Change::Event { rv, .. } => *rv,
        }
    }
}

/// Watches the Leases and ConfigMaps of a namespace from now on.
pub struct ServerHistory {
    changes: Arc<Mutex<Vec<Change>>>,
    watches: Vec<tokio::task::JoinHandle<()>>,
}

impl ServerHistory {
    /// Starts watching; returns once both watches are open.
    pub async fn record(client: &Client, namespace: &str) -> Self {
        let changes = Arc::new(Mutex::new(Vec::new()));
        let leases = watch(
            Api::<Lease>::namespaced(client.clone(), namespace),
            Arc::clone(&changes),
            |lease, deleted| {
                Some(Change::Lease {
                    rv: rv_of(lease),
                    name: lease.name_any(),
                    holder: lease.spec.as_ref().and_then(|s| s.holder_identity.clone()),
                    deleted,
                })
            },
        )
        .await;
        let writes = watch(
            Api::<ConfigMap>::namespaced(client.clone(), namespace),
            Arc::clone(&changes),
            |cm, _| {
                let writer = cm
                    .data
                    .as_ref()
                    .and_then(|data| data.get("writer").cloned())?;
                Some(Change::Write {
                    rv: rv_of(cm),
                    key: cm.name_any(),
                    writer,
                })
            },
        )
        .await;
        let events = watch(
            Api::<Event>::namespaced(client.clone(), namespace),
            Arc::clone(&changes),
            |event, deleted| {
                (!deleted).then(|| Change::Event {
                    rv: rv_of(event),
                    name: event.name_any(),
                    instance: event.reporting_instance.clone().unwrap_or_default(),
                    count: event.series.as_ref().map_or(1, |series| series.count),
                })
            },
        )
        .await;
        Self {
            changes,
            watches: vec![leases, writes, events],
        }
    }

    /// How many Event writes (creates and series patches) `instance` landed so far.
    pub fn events_by(&self, instance: &str) -> usize {
        self.changes()
            .iter()
            .filter(|c| matches!(c, Change::Event { instance: i, .. } if i == instance))
            .count()
    }

    /// Every change so far, in resourceVersion order.
    pub fn changes(&self) -> Vec<Change> {
        let mut changes = self.changes.lock().unwrap().clone();
        changes.sort_by_key(Change::rv);
        changes
    }

    /// How many writes `writer` landed so far.
    pub fn writes_by(&self, writer: &str) -> usize {
        self.changes()
            .iter()
            .filter(|c| matches!(c, Change::Write { writer: w, .. } if w == writer))
            .count()
    }

    /// The writes and Events that landed while another replica held the election
    /// Lease `lease`: `(write, holder)` for each whose writer (reporting instance) is
    /// not the holder as of the Lease's last change before it.
    pub fn writes_outside_the_writers_term(&self, lease: &str) -> Vec<(Change, String)> {
        let mut holder: Option<String> = None;
        let mut outside = Vec::new();
        for change in self.changes() {
            match &change {
                Change::Lease {
                    name,
                    holder: now,
                    deleted,
                    ..
                } if name == lease => {
                    holder = if *deleted { None } else { now.clone() };
                }
                Change::Write { writer, .. }
                | Change::Event {
                    instance: writer, ..
                } => {
                    if let Some(holder) = &holder
                        && !holder.is_empty()
                        && holder != writer
                    {
                        outside.push((change.clone(), holder.clone()));
                    }
                }
                Change::Lease { .. } => {}
            }
        }
        outside
    }

    /// The writes and Events of shard members (of group `group`, Leases
    /// `{group}-{identity}`) that landed while the writer had no Lease (after another member fenced it,
    /// or it left, and before it joined again), and those of a key another member
    /// had written since the writer's previous write of it without the writer
    /// having joined again in between. Either means the writer acted on a key that
    /// may have been another's.
    pub fn writes_outside_the_writers_membership(&self, group: &str) -> Vec<Change> {
        use std::collections::HashMap;
        let prefix = format!("{group}-");
        // Per member: whether its Lease exists, and the rv it was last created at.
        let mut joined: HashMap<String, (bool, u64)> = HashMap::new();
        // Per key: its writes so far, (rv, writer).
        let mut writes: HashMap<String, Vec<(u64, String)>> = HashMap::new();
        let mut outside = Vec::new();
        for change in self.changes() {
            match &change {
                Change::Lease {
                    rv, name, deleted, ..
                } => {
                    let Some(member) = name.strip_prefix(&prefix) else {
                        continue;
                    };
                    let entry = joined.entry(member.to_owned()).or_insert((false, 0));
                    if *deleted {
                        entry.0 = false;
                    } else if !entry.0 {
                        *entry = (true, *rv);
                    }
                }
                Change::Event { instance, .. } => {
                    if !joined.get(instance).is_some_and(|(member, _)| *member) {
                        outside.push(change.clone());
                    }
                }
                Change::Write { rv, key, writer } => {
                    let (member, since) = joined.get(writer).copied().unwrap_or((false, 0));
                    let history = writes.entry(key.clone()).or_default();
                    let previous_own = history.iter().rev().find(|(_, w)| w == writer);
                    let taken_meanwhile = previous_own.is_some_and(|(own, _)| {
                        history.iter().any(|(other, w)| other > own && w != writer) && since < *own
                    });
                    if !member || taken_meanwhile {
                        outside.push(change.clone());
                    }
                    history.push((*rv, writer.clone()));
                }
            }
        }
        outside
    }
}

impl Drop for ServerHistory {
    fn drop(&mut self) {
        for watch in &self.watches {
            watch.abort();
        }
    }
}

fn rv_of<K: Resource>(object: &K) -> u64 {
    object
        .meta()
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .expect("an etcd revision")
}

/// Lists `api` and watches from the list's resourceVersion, recording what `change`
/// makes of each object (`true`: deleted); panics (failing the test) if the watch
/// breaks, since a gap would hide changes.
async fn watch<K>(
    api: Api<K>,
    changes: Arc<Mutex<Vec<Change>>>,
    change: impl Fn(&K, bool) -> Option<Change> + Send + 'static,
) -> tokio::task::JoinHandle<()>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let listed = api.list(&ListParams::default()).await.unwrap();
    let mut from = listed.metadata.resource_version.unwrap();
    tokio::spawn(async move {
        loop {
            let params = WatchParams::default().timeout(290);
            let mut events = api.watch(&params, &from).await.unwrap().boxed();
            while let Some(event) = events.try_next().await.unwrap() {
                let (object, deleted) = match event {
                    WatchEvent::Added(object) | WatchEvent::Modified(object) => (object, false),
                    WatchEvent::Deleted(object) => (object, true),
                    WatchEvent::Bookmark(bookmark) => {
                        from = bookmark.metadata.resource_version;
                        continue;
                    }
                    WatchEvent::Error(error) => panic!("the history's watch failed: {error:?}"),
                };
                from = object.meta().resource_version.clone().unwrap();
                if let Some(change) = change(&object, deleted) {
                    changes.lock().unwrap().push(change);
                }
            }
        }
    })
}
