use std::collections::HashMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::time::advance;

use super::*;

const WINDOW: Duration = Duration::from_secs(360);

fn regarding(name: &str) -> ObjectReference {
    ObjectReference {
        kind: Some("ConfigMap".into()),
        namespace: Some("ns".into()),
        name: Some(name.into()),
        ..ObjectReference::default()
    }
}

fn key(name: &str, reason: &str) -> EventKey {
    EventKey::new(&regarding(name), &EventSpec::normal(reason, "Act"))
}

fn event(name: &str) -> Event {
    Event {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            ..Default::default()
        },
        ..Event::default()
    }
}

fn observe(cache: &mut SeriesCache, key: &EventKey, name: &str) -> Observed {
    cache.observe(
        key.clone(),
        Instant::now(),
        Timestamp::now(),
        crate::claim::Fence::open(),
        || event(name),
    )
}

fn id(observed: Observed) -> u64 {
    match observed {
        Observed::New(id) | Observed::SeriesStarted(id) => id,
        Observed::Folded => panic!("expected a write, got Folded"),
    }
}

/// The series count a write carries (1 for a create without a series).
fn count_of(write: &Write) -> i32 {
    match write {
        Write::Create(event) => event.series.as_ref().map_or(1, |s| s.count),
        Write::Patch { series, .. } => series.count,
    }
}

#[test]
fn keys_differ_by_every_field_client_go_compares_and_by_the_note() {
    let base = EventSpec::normal("Reason", "Action").note("n");
    let web = regarding("web");
    let same = EventKey::new(&web, &base.clone());
    assert_eq!(same, EventKey::new(&web, &base));
    let variants = [
        EventSpec::warning("Reason", "Action").note("n"),
        EventSpec::normal("Other", "Action").note("n"),
        EventSpec::normal("Reason", "Other").note("n"),
        EventSpec::normal("Reason", "Action").note("other"),
        base.clone().related(regarding("job")),
    ];
    for variant in variants {
        assert_ne!(same, EventKey::new(&web, &variant), "{variant:?}");
    }
    assert_ne!(same, EventKey::new(&regarding("db"), &base));
    let with_uid = ObjectReference {
        uid: Some("u".into()),
        ..web.clone()
    };
    assert_ne!(same, EventKey::new(&with_uid, &base));
}

#[tokio::test(start_paused = true)]
async fn the_first_repeat_starts_a_series_at_once_later_ones_wait_for_the_flush() {
    let mut cache = SeriesCache::new(WINDOW, 100);
    let k = key("web", "Failed");
    let first = id(observe(&mut cache, &k, "web.1"));
    let create = cache.next_write(first).unwrap();
    assert_eq!(create.write, Write::Create(Box::new(event("web.1"))));
    assert_eq!(cache.written(first, create.count), None);
    assert!(cache.take_dirty().is_empty());

    advance(Duration::from_secs(10)).await;
    assert_eq!(
        observe(&mut cache, &k, "unused"),
        Observed::SeriesStarted(first)
    );
    let patch = cache.next_write(first).unwrap();
    let Write::Patch {
        namespace,
        name,
        series,
    } = &patch.write
    else {
        panic!("expected a patch, got {:?}", patch.write)
    };
    assert_eq!(
        (namespace.as_str(), name.as_str(), series.count),
        ("ns", "web.1", 2)
    );
    for _ in 0..3 {
        assert_eq!(observe(&mut cache, &k, "unused"), Observed::Folded);
    }
    assert_eq!(cache.written(first, patch.count), None);
    assert_eq!(cache.take_dirty(), vec![first]);
    assert!(
        cache.take_dirty().is_empty(),
        "a busy Event is handed out once"
    );
    let flush = cache.next_write(first).unwrap();
    assert_eq!(count_of(&flush.write), 5);
    cache.written(first, flush.count);
    assert!(cache.next_write(first).is_none(), "nothing left to write");
}

#[tokio::test(start_paused = true)]
async fn repeats_during_the_create_go_out_right_after_it() {
    let mut cache = SeriesCache::new(WINDOW, 100);
    let k = key("web", "Failed");
    let first = id(observe(&mut cache, &k, "web.1"));
    let create = cache.next_write(first).unwrap();
    assert_eq!(observe(&mut cache, &k, "unused"), Observed::Folded);
    assert_eq!(observe(&mut cache, &k, "unused"), Observed::Folded);
    assert_eq!(cache.written(first, create.count), Some(first));
    assert_eq!(count_of(&cache.next_write(first).unwrap().write), 3);
}

#[tokio::test(start_paused = true)]
async fn an_event_after_the_window_starts_a_new_event_and_the_old_one_is_finished() {
    let mut cache = SeriesCache::new(WINDOW, 100);
    let k = key("web", "Failed");
    let first = id(observe(&mut cache, &k, "web.1"));
    cache.written(first, 1);
    id(observe(&mut cache, &k, "unused"));
    cache.written(first, 2);
    advance(Duration::from_secs(300)).await;
    assert_eq!(
        observe(&mut cache, &k, "unused"),
        Observed::Folded,
        "within the window"
    );
    advance(WINDOW + Duration::from_secs(1)).await;
    let second = id(observe(&mut cache, &k, "web.2"));
    assert_ne!(first, second);
    assert_eq!(
        cache.next_write(second).unwrap().write,
        Write::Create(Box::new(event("web.2")))
    );
    // The retired Event still gets its last count, then is forgotten.
    assert_eq!(cache.take_dirty(), vec![first]);
    assert_eq!(count_of(&cache.next_write(first).unwrap().write), 3);
    cache.written(first, 3);
    cache.written(second, 1);
    cache.sweep(Instant::now());
    assert_eq!(cache.len(), 1, "only the current Event is left");
    advance(WINDOW + Duration::from_secs(1)).await;
    cache.sweep(Instant::now());
    assert_eq!(cache.len(), 0, "finished after the window");
}

#[tokio::test(start_paused = true)]
async fn sweep_keeps_events_with_unwritten_counts_or_writes_in_flight() {
    let mut cache = SeriesCache::new(WINDOW, 100);
    let busy = id(observe(&mut cache, &key("a", "R"), "a.1"));
    let dirty = id(observe(&mut cache, &key("b", "R"), "b.1"));
    cache.written(dirty, 1);
    id(observe(&mut cache, &key("b", "R"), "unused"));
    cache.cancel(dirty);
    advance(WINDOW * 2).await;
    cache.sweep(Instant::now());
    assert_eq!(cache.len(), 2);
    assert_eq!(cache.take_dirty(), vec![dirty]);
    cache.written(dirty, 2);
    cache.written(busy, 1);
    cache.sweep(Instant::now());
    assert_eq!(cache.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_patch_that_finds_no_event_creates_it_again_with_its_series() {
    let mut cache = SeriesCache::new(WINDOW, 100);
    let k = key("web", "Failed");
    let first = id(observe(&mut cache, &k, "web.1"));
    cache.written(first, 1);
    id(observe(&mut cache, &k, "unused"));
    cache.mark_absent(first);
    let again = cache.next_write(first).unwrap();
    let Write::Create(event) = again.write else {
        panic!("expected a create")
    };
    assert_eq!(event.metadata.name.as_deref(), Some("web.1"));
    assert_eq!(event.series.map(|s| s.count), Some(2));
    // And a create that finds it there turns into a patch.
    cache.mark_present(first);
    assert!(matches!(
        cache.next_write(first).unwrap().write,
        Write::Patch { .. }
    ));
}

#[tokio::test(start_paused = true)]
async fn a_failed_create_is_forgotten_a_failed_patch_keeps_the_server_count() {
    let mut cache = SeriesCache::new(WINDOW, 100);
    let k = key("web", "Failed");
    let first = id(observe(&mut cache, &k, "web.1"));
    cache.failed(first);
    assert_eq!(cache.len(), 0);
    let second = id(observe(&mut cache, &k, "web.2"));
    assert_ne!(first, second, "a repeat of a failed event starts afresh");
    cache.written(second, 1);
    id(observe(&mut cache, &k, "unused"));
    cache.failed(second);
    assert!(cache.next_write(second).is_none());
    assert!(cache.take_dirty().is_empty());
    assert_eq!(observe(&mut cache, &k, "unused"), Observed::Folded);
    assert_eq!(
        cache.take_dirty(),
        vec![second],
        "the next count goes out with a flush"
    );
}

#[tokio::test(start_paused = true)]
async fn a_new_event_whose_write_was_not_queued_is_forgotten() {
    let mut cache = SeriesCache::new(WINDOW, 100);
    let k = key("web", "Failed");
    let first = id(observe(&mut cache, &k, "web.1"));
    cache.cancel(first);
    assert_eq!(cache.len(), 0);
    assert!(matches!(observe(&mut cache, &k, "web.2"), Observed::New(_)));
}

#[tokio::test(start_paused = true)]
async fn beyond_capacity_events_are_written_without_folding() {
    let mut cache = SeriesCache::new(WINDOW, 2);
    for name in ["a", "b"] {
        let id = id(observe(&mut cache, &key(name, "R"), name));
        cache.written(id, 1);
    }
    let extra = key("c", "R");
    let c1 = id(observe(&mut cache, &extra, "c.1"));
    let c2 = id(observe(&mut cache, &extra, "c.2"));
    assert_ne!(c1, c2, "not correlated: the cache is full");
    cache.written(c1, 1);
    cache.written(c2, 1);
    cache.sweep(Instant::now());
    assert_eq!(
        cache.len(),
        2,
        "uncorrelated Events are dropped once written"
    );
    // Once the window frees the cache, `c` is correlated again.
    advance(WINDOW + Duration::from_secs(1)).await;
    let c3 = id(observe(&mut cache, &extra, "c.3"));
    cache.written(c3, 1);
    assert_eq!(
        observe(&mut cache, &extra, "unused"),
        Observed::SeriesStarted(c3)
    );
}

/// The API server as far as the cache's writes go: Event name -> series count.
#[derive(Default)]
struct Server(HashMap<String, i32>);

impl Server {
    /// Applies the next write of `id` like the recorder's writer does.
    fn write(&mut self, cache: &mut SeriesCache, id: u64) -> Option<u64> {
        for _ in 0..4 {
            let pending = cache.next_write(id)?;
            let (_, name) = pending.write.event_name();
            let name = name.to_owned();
            match &pending.write {
                Write::Create(_) if self.0.contains_key(&name) => cache.mark_present(id),
                Write::Patch { .. } if !self.0.contains_key(&name) => cache.mark_absent(id),
                write => {
                    self.0.insert(name, count_of(write));
                    return cache.written(id, pending.count);
                }
            }
        }
        panic!("no progress writing {id}")
    }
}

/// A random interleaving of observations, completed writes, deleted Events (TTL),
/// flushes and sweeps: once everything is flushed, each Event on the server carries
/// exactly the number of observations folded into it.
#[tokio::test(start_paused = true)]
async fn model_every_observation_ends_up_counted_on_the_server() {
    for seed in 0..40 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut cache = SeriesCache::new(WINDOW, 1000);
        let mut server = Server::default();
        let mut queued: Vec<u64> = Vec::new();
        let mut observed: HashMap<u64, i32> = HashMap::new();
        let mut names: HashMap<u64, String> = HashMap::new();
        let keys: Vec<EventKey> = (0..3).map(|i| key(&format!("o{i}"), "R")).collect();
        for step in 0..400 {
            match rng.random_range(0..10) {
                0..=4 => {
                    let k = &keys[rng.random_range(0..keys.len())];
                    let name = format!("e{step}");
                    let observation = observe(&mut cache, k, &name);
                    let target = match observation {
                        Observed::New(id) => {
                            names.insert(id, name);
                            queued.push(id);
                            id
                        }
                        Observed::SeriesStarted(id) => {
                            queued.push(id);
                            id
                        }
                        Observed::Folded => cache.index[k],
                    };
                    *observed.entry(target).or_default() += 1;
                }
                5..=6 if !queued.is_empty() => {
                    let id = queued.remove(rng.random_range(0..queued.len()));
                    queued.extend(server.write(&mut cache, id));
                }
                7 => queued.extend(cache.take_dirty()),
                8 if !server.0.is_empty() => {
                    let name = server.0.keys().min().cloned().unwrap();
                    server.0.remove(&name);
                }
                _ => {
                    advance(Duration::from_secs(rng.random_range(0..120))).await;
                    cache.sweep(Instant::now());
                }
            }
        }
        // The final flush, as at shutdown.
        loop {
            queued.extend(cache.take_dirty());
            let Some(id) = queued.pop() else { break };
            queued.extend(server.write(&mut cache, id));
        }
        let mut series_checked = 0;
        for (id, count) in observed {
            let name = &names[&id];
            if let Some(on_server) = server.0.get(name) {
                assert_eq!(*on_server, count, "seed {seed}: Event {name}");
                series_checked += usize::from(count > 1);
            }
        }
        assert!(series_checked > 0, "seed {seed} checked no series");
    }
}
