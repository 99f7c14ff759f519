//! Owner indexes tell owners of one kind in different API groups apart: a built-in
//! `apps/v1` Deployment and a CRD `Deployment` of ours with the same name, a core
//! `Namespace` and a CRD `Namespace`, in the typed form (`type = ...`) and the explicit
//! ones (`group`, `api_version`), with versions that must not matter.

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use super::{Widget, keys, names};
use crate::lister::Lister;
use crate::store::Writer;

/// Owner indexes of ConfigMaps, by owners that share a kind with another group's.
mod indexes {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

    use crate::informable::Informable;

    #[derive(Informable)]
    #[informable(
        crate = crate,
        kind = ConfigMap,
        foreign,
        index(name = "by_deployment", owner(type = Deployment, controller, name)),
        index(name = "by_our_deployment", owner(kind = "Deployment", group = "example.com", controller, name)),
        index(name = "by_our_deployment_uid", owner(kind = "Deployment", api_version = "example.com/v1")),
        index(name = "by_namespace", owner(type = Namespace, name)),
        index(name = "by_core_namespace", owner(kind = "Namespace", group = "", name)),
        index(name = "by_v1_namespace", owner(kind = "Namespace", api_version = "v1", name)),
        index(name = "by_widget", owner(type = super::Widget, name)),
    )]
    pub(super) struct SameKindIndexes;
}

use indexes::{
    ByCoreNamespace, ByDeployment, ByNamespace, ByOurDeployment, ByOurDeploymentUid, ByV1Namespace,
    ByWidget, SameKindIndexes, SameKindIndexesExt,
};

fn reference(api_version: &str, kind: &str, name: &str, controller: bool) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: format!("uid-{}-{kind}-{name}", api_version.replace('/', "-")),
        controller: Some(controller),
        ..OwnerReference::default()
    }
}

fn owned(name: &str, owners: Vec<OwnerReference>) -> ConfigMap {
    let mut config_map = super::config_map(&format!("ns/{name}"), &[], 1);
    config_map.metadata.owner_references = Some(owners);
    config_map
}

/// ConfigMaps side by side, each owned by one of two same-named, same-kind owners.
fn config_maps() -> Vec<ConfigMap> {
    vec![
        // The built-in Deployment `web` and the core Namespace `team`.
        owned(
            "apps",
            vec![
                reference("apps/v1", "Deployment", "web", true),
                reference("v1", "Namespace", "team", false),
            ],
        ),
        // The built-in Deployment under an older version: the same owner.
        owned(
            "apps-old",
            vec![reference("apps/v1beta2", "Deployment", "web", true)],
        ),
        // Our Deployment `web` (written under v2: the version does not matter) and our
        // Namespace `team`.
        owned(
            "ours",
            vec![
                reference("example.com/v2", "Deployment", "web", true),
                reference("example.com/v1", "Namespace", "team", false),
            ],
        ),
        owned(
            "ours-v1",
            vec![reference("example.com/v1", "Deployment", "web", true)],
        ),
        // Owned by our Deployment `web`, but not as its controller.
        owned(
            "ours-not-controlled",
            vec![reference("example.com/v1", "Deployment", "web", false)],
        ),
        // Widgets of Widget's group, and of another group.
        owned(
            "widget",
            vec![reference("test.informer.dev/v1beta1", "Widget", "w", false)],
        ),
        owned(
            "other-widget",
            vec![reference("other.example.com/v1", "Widget", "w", false)],
        ),
    ]
}

#[test]
fn owner_indexes_index_only_the_owners_of_their_group() {
    let mut cache = Writer::with_indexers(
        crate::key::KeyFn::meta_namespace(),
        SameKindIndexes::indexers(),
    )
    .unwrap();
    for config_map in config_maps() {
        cache.upsert(config_map);
    }
    let lister = Lister::new(cache.indexer());

    // Same kind, same name, different groups: each index answers its own group's.
    assert_eq!(names(&lister.by_deployment("web")), ["apps", "apps-old"]);
    assert_eq!(names(&lister.by_our_deployment("web")), ["ours", "ours-v1"]);
    assert_eq!(
        names(&lister.by_our_deployment_uid("uid-example.com-v2-Deployment-web")),
        ["ours"]
    );
    assert!(
        lister
            .by_our_deployment_uid("uid-apps-v1-Deployment-web")
            .is_empty()
    );
    // The core group (`v1`, no group part), typed and explicit.
    for core in [
        lister.by_namespace("team"),
        lister.by_core_namespace("team"),
        lister.by_v1_namespace("team"),
    ] {
        assert_eq!(names(&core), ["apps"]);
    }
    // A CRD type names its owners by its own group too.
    assert_eq!(names(&lister.by_widget("w")), ["widget"]);

    // What each object gives, without a cache.
    let [apps, _, ours, ours_v1, not_controlled, widget, other_widget] =
        config_maps().try_into().unwrap();
    assert_eq!(keys::<ConfigMap, ByDeployment>(&apps), ["web"]);
    assert!(keys::<ConfigMap, ByDeployment>(&ours).is_empty());
    assert!(keys::<ConfigMap, ByOurDeployment>(&apps).is_empty());
    assert_eq!(keys::<ConfigMap, ByOurDeployment>(&ours_v1), ["web"]);
    assert!(keys::<ConfigMap, ByOurDeployment>(&not_controlled).is_empty());
    assert_eq!(
        keys::<ConfigMap, ByOurDeploymentUid>(&not_controlled),
        ["uid-example.com-v1-Deployment-web"]
    );
    assert!(keys::<ConfigMap, ByNamespace>(&ours).is_empty());
    assert!(keys::<ConfigMap, ByCoreNamespace>(&ours).is_empty());
    assert!(keys::<ConfigMap, ByV1Namespace>(&ours).is_empty());
    assert!(keys::<ConfigMap, ByWidget>(&other_widget).is_empty());
    assert_eq!(keys::<ConfigMap, ByWidget>(&widget), ["w"]);
}
