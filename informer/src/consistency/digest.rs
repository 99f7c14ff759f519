//! [`Digest`]: what a cache holds, in eight bytes, kept current change by change.
//!
//! Each object counts as a 64-bit hash of its namespace, name, uid and
//! resourceVersion; the digest of a set of objects is the wrapping sum of their
//! hashes. A sum does not depend on order, and an object leaves it by subtraction, so
//! the cache's digest moves by one addition and one subtraction per applied change
//! and never needs a pass over the cache; the server's is summed page by page as its
//! list streams in. Equal sets have equal digests; unequal sets have equal ones only
//! by a collision of the sums (about one chance in 2^64 per check): a difference a
//! check misses so is found by the next check once anything changes. 64 bits rather
//! than 128 because the hash is on the informer's hot path, twice per change.

use std::hash::{BuildHasher, Hash};

use foldhash::quality::FixedState;

use crate::object::Meta;
use crate::reflector::source::ObjectVersion;

/// A fixed seed: the cache's and the server's digests are made in the same process, so
/// any fixed one does.
const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// The order-independent digest of a set of objects (see the [module docs](self)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Digest(u64);

/// What names one version of one object.
#[derive(Hash)]
struct Identity<'a> {
    namespace: Option<&'a str>,
    name: Option<&'a str>,
    uid: Option<&'a str>,
    resource_version: Option<&'a str>,
}

impl Identity<'_> {
    fn hash(&self) -> u64 {
        FixedState::with_seed(SEED).hash_one(self)
    }
}

/// The hash of a cached object.
pub(crate) fn hash_meta(meta: &impl Meta) -> u64 {
    Identity {
        namespace: meta.namespace(),
        name: meta.name(),
        uid: meta.uid(),
        resource_version: meta.resource_version(),
    }
    .hash()
}

/// The hash of a listed object; equal to [`hash_meta`] of the same version.
pub(crate) fn hash_version(version: &ObjectVersion) -> u64 {
    Identity {
        namespace: version.key.namespace.as_deref(),
        name: Some(&version.key.name),
        uid: version.uid.as_deref(),
        resource_version: version.resource_version.as_deref(),
    }
    .hash()
}

impl Digest {
    /// Counts an object in.
    pub(crate) fn add(&mut self, hash: u64) {
        self.0 = self.0.wrapping_add(hash);
    }

    /// Counts an object out.
    pub(crate) fn remove(&mut self, hash: u64) {
        self.0 = self.0.wrapping_sub(hash);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::ObjectKey;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn meta(name: &str, uid: &str, version: &str) -> ObjectMeta {
        ObjectMeta {
            namespace: Some("ns".into()),
            name: Some(name.into()),
            uid: Some(uid.into()),
            resource_version: Some(version.into()),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn a_cached_object_and_its_listed_version_hash_alike() {
        let listed = ObjectVersion {
            key: ObjectKey::namespaced("ns", "a"),
            uid: Some("u1".into()),
            resource_version: Some("7".into()),
        };
        assert_eq!(hash_meta(&meta("a", "u1", "7")), hash_version(&listed));
        assert_ne!(hash_meta(&meta("a", "u1", "8")), hash_version(&listed));
        assert_ne!(hash_meta(&meta("a", "u2", "7")), hash_version(&listed));
    }

    /// The digest depends on the set, not on the order changes came in; a removed
    /// object leaves no trace; a changed version shows.
    #[test]
    fn the_digest_is_the_set_whatever_the_order() {
        let objects = [
            meta("a", "1", "5"),
            meta("b", "2", "6"),
            meta("c", "3", "7"),
        ];
        let mut forward = Digest::default();
        for object in &objects {
            forward.add(hash_meta(object));
        }
        let mut backward = Digest::default();
        let extra = meta("d", "4", "8");
        backward.add(hash_meta(&extra));
        for object in objects.iter().rev() {
            backward.add(hash_meta(object));
        }
        assert_ne!(forward, backward);
        backward.remove(hash_meta(&extra));
        assert_eq!(forward, backward);
        backward.remove(hash_meta(&objects[1]));
        backward.add(hash_meta(&meta("b", "2", "9")));
        assert_ne!(forward, backward);
    }
}
