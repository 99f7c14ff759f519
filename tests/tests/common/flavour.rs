//! The informed types a test can run for: the same ConfigMaps informed as full typed
//! objects, as metadata only (`PartialObjectMeta<ConfigMap>`, the server sends
//! `PartialObjectMetadata`), and dynamically (`DynamicObject` of `configmaps`).
//! [`for_each_flavour!`](crate::for_each_flavour) runs one generic test body for each.

use std::fmt::Debug;

use informer::dynamic::DynamicResource;
use informer::reflector::source::ApiListerWatcher;
use informer::scope::NamespaceScoped;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::core::{DynamicObject, PartialObjectMeta};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;

/// One way of informing ConfigMaps.
pub trait Flavour: 'static {
    /// The cached object type.
    type K: Resource<Scope: NamespaceScoped>
        + Clone
        + Debug
        + DeserializeOwned
        + Send
        + Sync
        + 'static;

    /// Lists and watches the ConfigMaps of `namespace` (all, with `None`) as `K`.
    fn config_maps(client: Client, namespace: Option<&str>) -> ApiListerWatcher<Self::K>;

    /// The ConfigMap's `data[key]`, when `K` carries data (metadata only does not).
    fn data(object: &Self::K, key: &str) -> Option<String>;

    /// Panics unless `object` is what this flavour asks the server for: a metadata-only
    /// object says `PartialObjectMetadata` (the server honoured the Accept header), a
    /// dynamic one is a ConfigMap with its data as JSON.
    fn assert_shape(object: &Self::K);
}

/// `ConfigMap`, decoded whole.
pub struct Full;

/// `PartialObjectMeta<ConfigMap>`: metadata only, on the wire and in the cache.
pub struct Metadata;

/// `DynamicObject` of the resource `configmaps`.
pub struct Dynamic;

impl Flavour for Full {
    type K = ConfigMap;

    fn config_maps(client: Client, namespace: Option<&str>) -> ApiListerWatcher<ConfigMap> {
        ApiListerWatcher::in_namespace(client, namespace)
    }

    fn data(object: &ConfigMap, key: &str) -> Option<String> {
        object.data.as_ref()?.get(key).cloned()
    }

    fn assert_shape(object: &ConfigMap) {
        assert!(object.data.is_some(), "a full ConfigMap has its data");
    }
}

impl Flavour for Metadata {
    type K = PartialObjectMeta<ConfigMap>;

    fn config_maps(client: Client, namespace: Option<&str>) -> ApiListerWatcher<Self::K> {
        let lister_watcher = ApiListerWatcher::in_namespace(client, namespace);
        assert!(lister_watcher.is_metadata_only());
        lister_watcher
    }

    fn data(_: &Self::K, _: &str) -> Option<String> {
        None
    }

    fn assert_shape(object: &Self::K) {
        let types = object
            .types
            .as_ref()
            .expect("the server sends kind and apiVersion");
        assert_eq!(
            (types.kind.as_str(), types.api_version.as_str()),
            ("PartialObjectMetadata", "meta.k8s.io/v1"),
            "the server sent metadata only"
        );
    }
}

impl Flavour for Dynamic {
    type K = DynamicObject;

    fn config_maps(client: Client, namespace: Option<&str>) -> ApiListerWatcher<DynamicObject> {
        let resource = DynamicResource::of::<ConfigMap>();
        ApiListerWatcher::in_namespace_with(client, &resource.api_resource, namespace)
    }

    fn data(object: &DynamicObject, key: &str) -> Option<String> {
        object.data["data"][key].as_str().map(str::to_owned)
    }

    fn assert_shape(object: &DynamicObject) {
        // Listed or watched, it has its kind: `Api::replace` can send it back as it is.
        let types = object.types.as_ref().expect("kind and apiVersion");
        assert_eq!(
            (types.kind.as_str(), types.api_version.as_str()),
            ("ConfigMap", "v1")
        );
        assert!(object.data["data"].is_object(), "{object:?} has its data");
    }
}

/// Runs each generic test body for every [`Flavour`]: `for_each_flavour! { name =>
/// body; }` makes a module `name` with the tests `full`, `metadata` and `dynamic`,
/// each awaiting `body::<Flavour>()`.
#[macro_export]
macro_rules! for_each_flavour {
    ($($test:ident => $body:ident;)*) => {$(
        mod $test {
            #[tokio::test]
            async fn full() {
                super::$body::<$crate::common::flavour::Full>().await;
            }
            #[tokio::test]
            async fn metadata() {
                super::$body::<$crate::common::flavour::Metadata>().await;
            }
            #[tokio::test]
            async fn dynamic() {
                super::$body::<$crate::common::flavour::Dynamic>().await;
            }
        }
    )*};
}
