//! What the factory's wait says when it cannot say "synced" (the waits themselves run
//! against a real API server in the integration tests).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Client;

use super::*;
use crate::lock::MutexExt;
use crate::reflector::{ReflectorError, SyncError};
use crate::shared_informer::HasSynced;

/// A client for a server nobody runs: these tests send no request.
fn client() -> Client {
    let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
    Client::try_from(config).unwrap()
}

fn not_served(resource: &str) -> SyncError {
    let status = kube::core::Status::failure(
        "the server could not find the requested resource",
        "NotFound",
    )
    .with_code(404)
    .boxed();
    SyncError::new(
        ReflectorError::List(kube::Error::Api(status)),
        resource,
        None,
    )
}

#[test]
fn not_started_names_every_informer_or_says_nothing_was() {
    let none = CacheSyncError::NotStarted { informers: vec![] };
    assert_eq!(
        none.to_string(),
        "nothing was started: call start() after asking for informers and before waiting for them"
    );
    let one = CacheSyncError::NotStarted {
        informers: vec!["Widget in ns".into()],
    };
    assert_eq!(
        one.to_string(),
        "Widget in ns was never started: call start() after asking for informers and before waiting for them"
    );
    let two = CacheSyncError::NotStarted {
        informers: vec!["ConfigMap in ns".into(), "Namespace".into()],
    };
    assert!(
        two.to_string()
            .starts_with("ConfigMap in ns, Namespace were never started:"),
        "{two}"
    );
    assert!(two.unsynced().is_empty());
}

#[test]
fn timed_out_gives_each_informer_not_synced_with_its_last_error() {
    let error = CacheSyncError::TimedOut {
        after: Duration::from_secs(5),
        unsynced: vec![
            Unsynced {
                informer: "Backup in ns".into(),
                last_error: Some(not_served("backups.ops.example.com")),
            },
            Unsynced {
                informer: "ConfigMap in ns".into(),
                last_error: None,
            },
        ],
    };
    assert_eq!(
        error.to_string(),
        "not synced after 5s: Backup in ns (backups.ops.example.com is not served by the API server), ConfigMap in ns"
    );
    assert_eq!(error.unsynced().len(), 2);
    let shut_down = CacheSyncError::ShutDown {
        unsynced: vec![Unsynced {
            informer: "Secret in ns".into(),
            last_error: None,
        }],
    };
    assert_eq!(
        shut_down.to_string(),
        "the factory shut down before Secret in ns synced"
    );
}

#[tokio::test]
async fn waiting_before_start_fails_at_once_naming_the_informers() {
    let factory = SharedInformerFactory::new(client(), FactoryConfig::default());
    let error = factory.wait_for_cache_sync().await.unwrap_err();
    assert!(
        matches!(&error, CacheSyncError::NotStarted { informers } if informers.is_empty()),
        "{error:?}"
    );

    let factory = SharedInformerFactory::new(client(), FactoryConfig::default().namespace("ns"));
    factory.informer::<Secret>();
    factory.informer::<ConfigMap>();
    let waited = factory.wait_for_cache_sync_within(Duration::from_secs(3600));
    let error = tokio::time::timeout(Duration::from_secs(5), waited)
        .await
        .expect("fails at once, not at the deadline")
        .unwrap_err();
    let CacheSyncError::NotStarted { informers } = error else {
        panic!("{error:?}");
    };
    assert_eq!(informers, ["ConfigMap in ns", "Secret in ns"]);
    assert!(
        !factory.has_synced(),
        "informers not started have not synced"
    );
}

/// Full, metadata-only and dynamic informers of one type are distinct entries, each
/// shared by all who ask; dynamic ones are told apart by their resource and selection.
#[tokio::test]
async fn metadata_and_dynamic_informers_are_entries_of_their_own() {
    use crate::dynamic::DynamicResource;
    use k8s_openapi::api::core::v1::Namespace;
    use kube::core::PartialObjectMeta;

    let factory = SharedInformerFactory::new(client(), FactoryConfig::default().namespace("ns"));
    let full = factory.informer::<ConfigMap>();
    let metadata = factory.metadata_informer::<ConfigMap>();
    assert_eq!(metadata, factory.metadata_informer::<ConfigMap>());
    let config_maps = DynamicResource::of::<ConfigMap>();
    let dynamic = factory.dynamic_informer(&config_maps);
    assert_eq!(dynamic, factory.dynamic_informer(&config_maps));
    let dynamic_metadata = factory.dynamic_metadata_informer(&config_maps);
    assert_eq!(
        dynamic_metadata,
        factory.dynamic_metadata_informer(&config_maps)
    );
    let secrets = factory.dynamic_informer(&DynamicResource::of::<Secret>());
    assert_ne!(dynamic, secrets, "another resource is another informer");
    let labelled = factory.dynamic_informer_for(
        &config_maps,
        Selection::default().namespace("ns").label_selector("app=x"),
    );
    assert_ne!(dynamic, labelled, "another selector is another informer");
    // Cluster-scoped resources ignore the namespace, dynamic ones included.
    let namespaces = DynamicResource::of::<Namespace>();
    let everywhere = factory.dynamic_informer_for(&namespaces, Selection::default());
    assert_eq!(everywhere, factory.dynamic_informer(&namespaces));
    assert_eq!(factory.len(), 7);
    let _ = (full, PartialObjectMeta::<ConfigMap>::default());

    let mut names: Vec<String> = factory
        .state
        .locked()
        .informers
        .values()
        .map(|e| e.name.clone())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "ConfigMap (dynamic) in ns",
            // Names carry the selection's selectors, so that no two entries share one.
            "ConfigMap (dynamic) in ns (app=x)",
            "ConfigMap (dynamic) metadata in ns",
            "ConfigMap in ns",
            "ConfigMap metadata in ns",
            "Namespace (dynamic)",
            "Secret (dynamic) in ns",
        ]
    );
}

/// `metadata_informable` maintains the derived metadata indexes from the start, and adds
/// them to the metadata informer someone else made first; the full informer of the
/// type is another entry and gets none of them.
#[tokio::test]
async fn metadata_informable_maintains_the_metadata_indexes() {
    use crate::informable::Informable;
    use kube::CustomResource;
    use serde::{Deserialize, Serialize};

    #[derive(CustomResource, Informable, Deserialize, Serialize, Clone, Debug)]
    #[kube(
        group = "example.com",
        version = "v1",
        kind = "Gadget",
        namespaced,
        schema = "disabled"
    )]
    #[informable(
        crate = crate,
        index(name = "by_app", path = "metadata.labels['app']"),
        index(name = "by_color", path = "spec.color"),
    )]
    struct GadgetSpec {
        color: String,
    }

    let with_namespace = |mut names: Vec<String>| {
        names.sort();
        names
    };
    let factory = SharedInformerFactory::new(client(), FactoryConfig::default());
    let informable = factory.metadata_informable::<Gadget>();
    assert_eq!(
        with_namespace(informable.indexer().index_names()),
        ["by_app", "namespace"]
    );
    let full = factory.informer::<Gadget>();
    assert_ne!(
        full.indexer().index_names(),
        informable.indexer().index_names()
    );

    let other = SharedInformerFactory::new(client(), FactoryConfig::default());
    let plain = other.metadata_informer::<Gadget>();
    assert_eq!(plain.indexer().index_names(), ["namespace"]);
    assert_eq!(other.metadata_informable::<Gadget>(), plain);
    assert_eq!(
        with_namespace(plain.indexer().index_names()),
        ["by_app", "namespace"]
    );
}

/// A selection with a key filter is an entry of its own, never the unfiltered informer of
/// the same type and namespace, shared by all who name the same filter id, for full,
/// metadata-only and dynamic informers alike; its name carries the id.
#[tokio::test]
async fn a_filtered_selection_is_its_own_entry_shared_by_filter_id() {
    use crate::dynamic::DynamicResource;
    use crate::reflector::{FnKeyFilter, KeyFilter};

    let factory = SharedInformerFactory::new(client(), FactoryConfig::default().namespace("ns"));
    let shard: Arc<dyn KeyFilter> = Arc::new(FnKeyFilter::new(|_, name| name < "m"));
    let selection = |id: &str, filter: &Arc<dyn KeyFilter>| {
        Selection::default()
            .namespace("ns")
            .filtered(id, Arc::clone(filter))
    };
    let unfiltered = factory.informer::<ConfigMap>();
    let filtered = factory.informer_for::<ConfigMap>(selection("shard web/replica-1", &shard));
    assert_ne!(unfiltered, filtered, "a filtered informer is never shared");
    // The id says which filter it is: another handle on it names the same informer.
    let same_id: Arc<dyn KeyFilter> = Arc::new(FnKeyFilter::new(|_, _| true));
    assert_eq!(
        filtered,
        factory.informer_for::<ConfigMap>(selection("shard web/replica-1", &same_id))
    );
    let other = factory.informer_for::<ConfigMap>(selection("shard web/replica-2", &shard));
    assert_ne!(filtered, other);
    let metadata =
        factory.metadata_informer_for::<ConfigMap>(selection("shard web/replica-1", &shard));
    assert_ne!(metadata, factory.metadata_informer::<ConfigMap>());
    let config_maps = DynamicResource::of::<ConfigMap>();
    let dynamic =
        factory.dynamic_informer_for(&config_maps, selection("shard web/replica-1", &shard));
    assert_ne!(dynamic, factory.dynamic_informer(&config_maps));
    assert_eq!(factory.len(), 7);

    let mut names: Vec<String> = factory
        .state
        .locked()
        .informers
        .values()
        .map(|e| e.name.clone())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "ConfigMap (dynamic) in ns",
            "ConfigMap (dynamic) in ns [shard web/replica-1]",
            "ConfigMap in ns",
            "ConfigMap in ns [shard web/replica-1]",
            "ConfigMap in ns [shard web/replica-2]",
            "ConfigMap metadata in ns",
            "ConfigMap metadata in ns [shard web/replica-1]",
        ]
    );
    assert_eq!(
        format!("{:?}", selection("shard web/replica-1", &shard).key_filter),
        r#"Some(NamedKeyFilter("shard web/replica-1"))"#
    );
}

/// A type's `ByObject` is over every type's settings: what it leaves unset is theirs,
/// another type keeps theirs, and a second `by_object` of the type replaces the first.
#[test]
fn by_object_settings_override_one_type_and_fall_back_to_every_types() {
    use crate::reflector::source::ManagedFields;
    use crate::shared_informer::QueueKind;

    let every = Duration::from_secs(600);
    let options = FactoryConfig::default()
        .default_resync(every)
        .queue(QueueKind::DeltaFifo)
        .by_object(ByObject::<Secret>::default().resync(Duration::from_secs(1)))
        .by_object(
            ByObject::<ConfigMap>::default()
                .managed_fields(ManagedFields::Keep)
                .transform(|mut cm: ConfigMap| {
                    cm.data = None;
                    cm
                }),
        );
    assert_eq!(options.resync_of::<Secret>(), Some(Duration::from_secs(1)));
    assert_eq!(options.resync_of::<ConfigMap>(), Some(every));
    assert_eq!(options.queue_of::<Secret>(), QueueKind::DeltaFifo);
    assert_eq!(
        options.managed_fields_of::<ConfigMap>(),
        ManagedFields::Keep
    );
    assert_eq!(
        options.managed_fields_of::<Secret>(),
        ManagedFields::default()
    );
    assert!(options.transform_of::<Secret>().is_none());
    let transform = options
        .transform_of::<ConfigMap>()
        .expect("ConfigMap's own");
    let cm = ConfigMap {
        data: Some([("k".to_owned(), "v".to_owned())].into()),
        ..ConfigMap::default()
    };
    assert_eq!(transform(cm).data, None);

    let replaced = options.by_object(ByObject::<Secret>::default().queue(QueueKind::InOrder));
    assert_eq!(
        replaced.resync_of::<Secret>(),
        Some(every),
        "the first is gone"
    );
    assert_eq!(replaced.queue_of::<Secret>(), QueueKind::InOrder);
}
