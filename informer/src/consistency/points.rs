//! [`Points`]: the moments the cache is known to have been exactly the server's
//! collection at some resourceVersion, each with its digest.
//!
//! A point is taken when nothing is left to apply: the informer's queue is empty and
//! the last thing the reflector queued (an event, a list's end, a bookmark) carried
//! that resourceVersion. A check lists the server's collection at exactly a point's
//! version and compares digests, so it can run at any time after the point, while the
//! cache has moved on. The ring keeps a few points spread over time: the newest is the
//! one to check (the server is most likely to still keep its version), and an older
//! one serves when a server behind a load balancer has not reached the newest yet.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use super::digest::Digest;

/// How many points the ring keeps.
const CAPACITY: usize = 8;

/// Points closer together than this replace one another: the ring spans at least
/// `CAPACITY - 1` times this, however fast the cache moves.
const SPACING: Duration = Duration::from_secs(10);

/// The cache was exactly the server's collection at `resource_version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Point {
    pub(crate) resource_version: String,
    pub(crate) digest: Digest,
    /// How many objects the cache held.
    pub(crate) objects: usize,
    /// The key filter's generation the cache's objects were filtered with (0 without a
    /// filter): a check compares the point only with a list under the same one.
    pub(crate) filter_generation: u64,
    /// When the cache got there (or, for a point a probe vouched for, when the probe
    /// found the collection unchanged since).
    pub(crate) at: Instant,
}

/// The ring of recent points, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Points {
    ring: VecDeque<Point>,
}

impl Points {
    /// Adds `point`; it replaces the newest one when that is recent (unless the newest
    /// is the only one: the ring keeps an older point beside the newest).
    pub(crate) fn record(&mut self, point: Point) {
        let several = self.ring.len() > 1;
        match self.ring.back_mut() {
            Some(newest) if newest.resource_version == point.resource_version => {
                // The same version again (a drained queue with nothing new): keep the
                // earlier time, when the cache got there.
                newest.digest = point.digest;
                newest.objects = point.objects;
                newest.filter_generation = point.filter_generation;
            }
            Some(newest) if several && point.at.duration_since(newest.at) < SPACING => {
                *newest = point;
            }
            _ => {
                self.ring.push_back(point);
                if self.ring.len() > CAPACITY {
                    self.ring.pop_front();
                }
            }
        }
    }

    pub(crate) fn newest(&self) -> Option<&Point> {
        self.ring.back()
    }

    /// The newest point taken before `than` in the ring, if any.
    pub(crate) fn older(&self, than: &Point) -> Option<&Point> {
        let at = self.ring.iter().position(|p| p == than)?;
        at.checked_sub(1).and_then(|older| self.ring.get(older))
    }

    /// How many points the ring holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.ring.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(version: u32, at: Instant) -> Point {
        Point {
            filter_generation: 0,
            resource_version: version.to_string(),
            digest: Digest::default(),
            objects: 0,
            at,
        }
    }

    /// Points in quick succession replace the newest (the first stays, so the ring
    /// keeps an older one), points spread out fill the ring, and the oldest falls out.
    #[tokio::test(start_paused = true)]
    async fn the_ring_keeps_points_spread_over_time() {
        let mut points = Points::default();
        let start = Instant::now();
        points.record(point(1, start));
        points.record(point(2, start + Duration::from_secs(1)));
        points.record(point(3, start + Duration::from_secs(2)));
        assert_eq!(points.len(), 2);
        assert_eq!(points.newest().unwrap().resource_version, "3");
        let newest = points.newest().unwrap().clone();
        assert_eq!(points.older(&newest).unwrap().resource_version, "1");
        for i in 0..20u32 {
            points.record(point(10 + i, start + SPACING * (i + 1)));
        }
        assert_eq!(points.len(), CAPACITY);
        assert_eq!(points.newest().unwrap().resource_version, "29");
        let oldest = points.ring.front().unwrap().clone();
        assert_eq!(points.older(&oldest), None);
    }

    /// The same version recorded again keeps the time the cache first got there.
    #[tokio::test(start_paused = true)]
    async fn the_same_version_keeps_its_first_time() {
        let mut points = Points::default();
        let start = Instant::now();
        points.record(point(5, start));
        points.record(point(5, start + Duration::from_secs(30)));
        assert_eq!(points.len(), 1);
        assert_eq!(points.newest().unwrap().at, start);
    }
}
