//! The spam filter: a token bucket per source and object, client-go's
//! `EventSourceObjectSpamFilter` (`tools/record/events_cache.go`).
//!
//! Every publish about an object takes a token from that object's bucket; with none
//! left the event is dropped. A bucket holds `burst` tokens (25 by default) and gains
//! one every `refill` (5 minutes), so a controller stuck on one object reports 25
//! events at once and then one every 5 minutes, however hot its loop, while events
//! about every other object go on as before.
//!
//! The key is client-go's `getSpamKey`: the object's apiVersion, kind, namespace, name
//! and uid, and the event's type, so a flood of `Normal` events never silences a
//! `Warning`. The source (reporting controller and instance) is the same for every
//! event of one recorder, so it is left out of the key. Like client-go's LRU, the
//! filter remembers a bounded number of buckets.

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use tokio::time::Instant;

use super::spec::EventType;

/// Which bucket an event draws from: the regarding object and the event type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct SpamKey {
    api_version: Option<String>,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    event_type: EventType,
}

impl SpamKey {
    /// The key of an event of `event_type` about `regarding`.
    pub(super) fn new(regarding: &ObjectReference, event_type: EventType) -> Self {
        Self {
            api_version: regarding.api_version.clone(),
            kind: regarding.kind.clone(),
            namespace: regarding.namespace.clone(),
            name: regarding.name.clone(),
            uid: regarding.uid.clone(),
            event_type,
        }
    }
}

/// A token bucket: `tokens` as of `last`.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

/// Token buckets per [`SpamKey`], at most `capacity` of them.
#[derive(Debug)]
pub(super) struct SpamFilter {
    buckets: HashMap<SpamKey, Bucket>,
    burst: u32,
    refill: Duration,
    capacity: usize,
}

impl SpamFilter {
    /// Buckets of `burst` tokens gaining one every `refill` (a zero `refill` lets
    /// everything through), remembering at most `capacity` objects.
    pub(super) fn new(burst: u32, refill: Duration, capacity: usize) -> Self {
        Self {
            buckets: HashMap::new(),
            burst,
            refill,
            capacity: capacity.max(1),
        }
    }

    /// Takes a token for `key` at `now`: false when the bucket is empty and the
    /// event must be dropped.
    pub(super) fn allow(&mut self, key: &SpamKey, now: Instant) -> bool {
        if self.refill.is_zero() {
            return true;
        }
        if !self.buckets.contains_key(key) {
            if self.buckets.len() >= self.capacity {
                self.make_room(now);
            }
            let full = Bucket {
                tokens: f64::from(self.burst),
                last: now,
            };
            self.buckets.insert(key.clone(), full);
        }
        let (burst, refill) = (f64::from(self.burst), self.refill.as_secs_f64());
        let bucket = self.buckets.get_mut(key).expect("inserted above");
        let gained = now.saturating_duration_since(bucket.last).as_secs_f64() / refill;
        bucket.tokens = (bucket.tokens + gained).min(burst);
        bucket.last = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// How many objects the filter remembers.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.buckets.len()
    }

    /// Frees a slot: forgets every bucket that has refilled completely (a new bucket
    /// would be the same), else the one used longest ago.
    fn make_room(&mut self, now: Instant) {
        let (burst, refill) = (f64::from(self.burst), self.refill.as_secs_f64());
        let before = self.buckets.len();
        self.buckets.retain(|_, bucket| {
            let gained = now.saturating_duration_since(bucket.last).as_secs_f64() / refill;
            bucket.tokens + gained < burst
        });
        if self.buckets.len() < before {
            return;
        }
        let oldest = self
            .buckets
            .iter()
            .min_by_key(|(_, bucket)| bucket.last)
            .map(|(key, _)| key.clone());
        if let Some(oldest) = oldest {
            self.buckets.remove(&oldest);
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::time::advance;

    use super::*;

    const REFILL: Duration = Duration::from_secs(300);

    fn key(name: &str, event_type: EventType) -> SpamKey {
        let regarding = ObjectReference {
            kind: Some("ConfigMap".into()),
            namespace: Some("ns".into()),
            name: Some(name.into()),
            ..ObjectReference::default()
        };
        SpamKey::new(&regarding, event_type)
    }

    fn allowed(filter: &mut SpamFilter, key: &SpamKey, tries: usize) -> usize {
        (0..tries)
            .filter(|_| filter.allow(key, Instant::now()))
            .count()
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_passes_then_one_event_per_refill_interval() {
        let mut filter = SpamFilter::new(25, REFILL, 4096);
        let web = key("web", EventType::Normal);
        assert_eq!(allowed(&mut filter, &web, 1000), 25);
        advance(REFILL - Duration::from_secs(1)).await;
        assert_eq!(allowed(&mut filter, &web, 10), 0, "not refilled yet");
        advance(Duration::from_secs(1)).await;
        assert_eq!(allowed(&mut filter, &web, 10), 1, "one token per 5 minutes");
        advance(REFILL * 3).await;
        assert_eq!(allowed(&mut filter, &web, 10), 3);
        advance(REFILL * 1000).await;
        assert_eq!(
            allowed(&mut filter, &web, 1000),
            25,
            "refills up to the burst only"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn objects_and_event_types_have_their_own_buckets() {
        let mut filter = SpamFilter::new(25, REFILL, 4096);
        assert_eq!(
            allowed(&mut filter, &key("web", EventType::Normal), 100),
            25
        );
        assert_eq!(allowed(&mut filter, &key("db", EventType::Normal), 100), 25);
        assert_eq!(
            allowed(&mut filter, &key("web", EventType::Warning), 100),
            25
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_refill_disables_the_filter() {
        let mut filter = SpamFilter::new(0, Duration::ZERO, 4096);
        assert_eq!(
            allowed(&mut filter, &key("web", EventType::Normal), 100),
            100
        );
        assert_eq!(filter.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn the_filter_stays_bounded_and_forgets_refilled_buckets_first() {
        let mut filter = SpamFilter::new(2, REFILL, 2);
        let [a, b, c, d] = ["a", "b", "c", "d"].map(|name| key(name, EventType::Normal));
        assert_eq!(allowed(&mut filter, &a, 5), 2);
        advance(Duration::from_secs(1)).await;
        assert_eq!(allowed(&mut filter, &b, 1), 1);
        // One refill later `b` is full again (a new bucket would be the same) and makes
        // room for `c`; `a`, with one token back, is kept.
        advance(REFILL).await;
        assert!(filter.allow(&c, Instant::now()));
        assert_eq!(filter.len(), 2);
        advance(Duration::from_secs(1)).await;
        assert_eq!(
            allowed(&mut filter, &a, 5),
            1,
            "a kept its state: one token back"
        );
        // No bucket is full: the one used longest ago (`c`) makes room for `d`.
        assert!(filter.allow(&d, Instant::now()));
        assert_eq!(filter.len(), 2);
        assert_eq!(allowed(&mut filter, &a, 5), 0, "a is still remembered");
        assert_eq!(
            allowed(&mut filter, &c, 5),
            2,
            "c was forgotten: a fresh bucket"
        );
    }
}
