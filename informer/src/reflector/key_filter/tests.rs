//! Key filters on their own: what a closure's filter and [`ControlledBy`] keep, and the
//! generation that tells a reflector to relist. How the reflector applies them is
//! tested beside its filtering (`reflector::filtering`).

use std::sync::Arc;

use super::*;

#[test]
fn a_filter_from_a_closure_moves_its_generation_when_replaced() {
    let filter = FnKeyFilter::new(|_, name| name == "a");
    let generation = filter.generation();
    assert!(filter.keeps(Some("ns"), "a"));
    assert!(!filter.keeps(None, "b"));
    assert!(!generation.has_changed().unwrap());
    filter.set(|_, name| name == "b");
    assert!(generation.has_changed().unwrap());
    assert_eq!(*filter.generation().borrow(), 1);
    assert!(filter.keeps(None, "b"));
    assert!(format!("{filter:?}").contains("generation: 1"));
}

/// Owners chosen by uid (a shard deciding by uid): an object known only by its key is
/// kept, and one with a uid is kept when the uid is.
struct OwnersByUid {
    uids: &'static [&'static str],
    selector: Option<ShardSelector>,
}

impl KeyFilter for OwnersByUid {
    fn keeps(&self, _namespace: Option<&str>, _name: &str) -> bool {
        true
    }

    fn generation(&self) -> tokio::sync::watch::Receiver<u64> {
        tokio::sync::watch::Sender::new(0).subscribe()
    }

    fn keeps_object(&self, head: &ObjectHead<'_>) -> bool {
        head.uid.is_none_or(|uid| self.uids.contains(&uid))
    }

    fn server_selector(&self) -> Option<ShardSelector> {
        self.selector.clone()
    }
}

/// `ControlledBy` asks the owners' filter about the owner with its uid, so children
/// follow an owner chosen by uid; it passes a selector on to children only when the
/// selector decides by namespace (an owner shares its children's namespace), never one
/// by uid (the server would hash the child's own uid).
#[test]
fn a_controlled_by_filter_decides_by_the_owners_uid_and_passes_on_namespace_selectors_only() {
    use k8s_openapi::api::apps::v1::Deployment;

    let head = |owner_uid: Option<&'static str>| ObjectHead {
        namespace: Some("ns"),
        name: "web-1",
        uid: Some("child-uid"),
        controller: Some(OwnerHead {
            api_version: "apps/v1",
            kind: "Deployment",
            name: "web",
            uid: owner_uid,
        }),
    };
    let by_uid = ControlledBy::<Deployment>::new(Arc::new(OwnersByUid {
        uids: &["mine"],
        selector: Some(ShardSelector::new(ShardField::Uid, Some(0..1 << 63))),
    }));
    assert!(by_uid.keeps_object(&head(Some("mine"))));
    assert!(!by_uid.keeps_object(&head(Some("theirs"))));
    assert!(by_uid.server_selector().is_none());

    let namespace_selector =
        ShardSelector::new(ShardField::Namespace, [0..1 << 63, 9 << 60..1 << 64]);
    let by_namespace = ControlledBy::<Deployment>::new(Arc::new(OwnersByUid {
        uids: &[],
        selector: Some(namespace_selector.clone()),
    }));
    assert_eq!(
        by_namespace.server_selector(),
        Some(namespace_selector.clone())
    );
    // A cluster-scoped owner kind cannot pass a namespace selector on.
    use k8s_openapi::api::core::v1::Node;
    let cluster_owner = ControlledBy::<Node>::new(Arc::new(OwnersByUid {
        uids: &[],
        selector: Some(namespace_selector),
    }));
    assert!(cluster_owner.server_selector().is_none());
}
