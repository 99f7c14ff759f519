//! The keyed comparison: which objects differ, once the digests say something does.
//!
//! The cache is read once, at a point, into a map of key to version (the only time a
//! check holds anything per object, and only when the digests differed); the server's
//! list at the same version is then streamed past it page by page.

use std::cmp::Ordering;

use crate::object::{Meta, Object};

use super::report::{Difference, DifferenceKind};
use crate::key::ObjectKey;
use crate::reflector::source::ObjectVersion;
use crate::store::{FastMap, Indexer};

/// One cached object's identity and version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CachedVersion {
    uid: Option<String>,
    resource_version: Option<String>,
}

/// The cache's objects by `namespace/name`, as of one point.
pub(crate) type Snapshot = FastMap<ObjectKey, CachedVersion>;

/// Reads the cache into a [`Snapshot`] (under the store's read lock).
pub(crate) fn snapshot<K: Object + 'static>(indexer: &Indexer<K>) -> Snapshot {
    let mut snapshot = Snapshot::with_capacity_and_hasher(indexer.len(), Default::default());
    indexer.for_each(|_, object| {
        let meta = object.metadata();
        snapshot.insert(
            ObjectKey::of(object.as_ref()),
            CachedVersion {
                uid: meta.uid().map(str::to_owned),
                resource_version: meta.resource_version().map(str::to_owned),
            },
        );
    });
    snapshot
}

/// The server's list, page by page, against a snapshot of the cache.
#[derive(Debug)]
pub(crate) struct KeyedComparison {
    unlisted: Snapshot,
    cached: usize,
    listed: usize,
    differences: Vec<Difference>,
}

impl KeyedComparison {
    pub(crate) fn new(cached: Snapshot) -> Self {
        Self {
            cached: cached.len(),
            unlisted: cached,
            listed: 0,
            differences: Vec::new(),
        }
    }

    /// Compares one page of the server's list.
    pub(crate) fn page(&mut self, versions: Vec<ObjectVersion>) {
        for listed in versions {
            self.listed += 1;
            let ObjectVersion {
                key,
                uid,
                resource_version,
            } = listed;
            let Some(cached) = self.unlisted.remove(&key) else {
                let difference =
                    Difference::new(key, DifferenceKind::Missing, None, resource_version);
                self.differences.push(difference);
                continue;
            };
            if cached.uid == uid && cached.resource_version == resource_version {
                continue;
            }
            let kind = if cached.uid != uid {
                // An earlier object of the same name.
                DifferenceKind::Older
            } else {
                match compare_versions(&cached.resource_version, &resource_version) {
                    Some(Ordering::Greater) => DifferenceKind::Newer,
                    _ => DifferenceKind::Older,
                }
            };
            let difference = Difference::new(key, kind, cached.resource_version, resource_version);
            self.differences.push(difference);
        }
    }

    /// The differences, sorted by key (what the cache holds and the server did not
    /// list is extra), with how many objects each side had.
    pub(crate) fn finish(mut self) -> (Vec<Difference>, usize, usize) {
        for (key, cached) in self.unlisted.drain() {
            let difference =
                Difference::new(key, DifferenceKind::Extra, cached.resource_version, None);
            self.differences.push(difference);
        }
        self.differences.sort_by(|a, b| a.key.cmp(&b.key));
        (self.differences, self.cached, self.listed)
    }
}

/// resourceVersions compared as integers (see `staleness.rs` on why they compare).
fn compare_versions(a: &Option<String>, b: &Option<String>) -> Option<Ordering> {
    let a: u64 = a.as_deref()?.parse().ok()?;
    let b: u64 = b.as_deref()?.parse().ok()?;
    Some(a.cmp(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(name: &str, uid: &str, version: &str) -> ObjectVersion {
        ObjectVersion {
            key: ObjectKey::namespaced("ns", name),
            uid: Some(uid.into()),
            resource_version: Some(version.into()),
        }
    }

    fn cached(entries: &[(&str, &str, &str)]) -> Snapshot {
        entries
            .iter()
            .map(|(name, uid, version)| {
                (
                    ObjectKey::namespaced("ns", *name),
                    CachedVersion {
                        uid: Some((*uid).into()),
                        resource_version: Some((*version).into()),
                    },
                )
            })
            .collect()
    }

    /// Each kind of difference, named by key, over pages; equal objects are not named.
    #[test]
    fn names_each_differing_key_by_kind() {
        let snapshot = cached(&[
            ("same", "1", "5"),
            ("older", "2", "6"),
            ("newer", "3", "9"),
            ("recreated", "4", "3"),
            ("extra", "5", "4"),
        ]);
        let mut comparison = KeyedComparison::new(snapshot);
        comparison.page(vec![listed("same", "1", "5"), listed("older", "2", "8")]);
        comparison.page(vec![
            listed("newer", "3", "7"),
            listed("recreated", "6", "10"),
            listed("missing", "7", "11"),
        ]);
        let (differences, cached, listed) = comparison.finish();
        assert_eq!((cached, listed), (5, 5));
        let named: Vec<String> = differences.iter().map(ToString::to_string).collect();
        assert_eq!(
            named,
            [
                "ns/extra extra (cache 4)",
                "ns/missing missing (server 11)",
                "ns/newer newer (cache 9, server 7)",
                "ns/older older (cache 6, server 8)",
                "ns/recreated older (cache 3, server 10)",
            ]
        );
    }
}
