//! The finalizer's two patches (add before the first reconcile, remove after the
//! cleanup); the protocol is described in the [controller docs](super#finalizers).

use kube::api::{Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::tracked_api::TrackedApi;
use crate::object::Meta;

/// Whether `meta` lists the finalizer `name`.
pub(crate) fn has_finalizer(meta: &impl Meta, name: &str) -> bool {
    meta.finalizers().iter().any(|f| f == name)
}

/// The merge patch that sets `finalizers` on an object still at `resource_version`.
fn finalizers_patch(resource_version: Option<&str>, finalizers: &[String]) -> serde_json::Value {
    serde_json::json!({
        "metadata": {
            "resourceVersion": resource_version,
            "finalizers": finalizers,
        }
    })
}

/// Adds finalizer `name` to `object` (which lacks it); returns the patched object.
pub(crate) async fn add<K>(api: &TrackedApi<K>, object: &K, name: &str) -> kube::Result<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut finalizers = object.finalizers().to_vec();
    finalizers.push(name.to_owned());
    set(api, object, &finalizers).await
}

/// Removes finalizer `name` from `object`; returns the patched object.
pub(crate) async fn remove<K>(api: &TrackedApi<K>, object: &K, name: &str) -> kube::Result<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut finalizers = object.finalizers().to_vec();
    finalizers.retain(|f| f != name);
    set(api, object, &finalizers).await
}

/// Sets `object`'s finalizers, if it is still at the version it was read at.
async fn set<K>(api: &TrackedApi<K>, object: &K, finalizers: &[String]) -> kube::Result<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let patch = finalizers_patch(object.meta().resource_version.as_deref(), finalizers);
    let params = PatchParams::default();
    api.patch(&object.name_any(), &params, &Patch::Merge(&patch))
        .await
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    #[test]
    fn the_patch_carries_the_version_it_was_made_from_and_the_whole_list() {
        let patch = finalizers_patch(Some("42"), &["a".into(), "ours".into()]);
        assert_eq!(
            patch,
            serde_json::json!({
                "metadata": { "resourceVersion": "42", "finalizers": ["a", "ours"] }
            })
        );
    }

    #[test]
    fn finalizers_are_found_by_exact_name() {
        let meta = ObjectMeta {
            finalizers: Some(vec!["example.com/cleanup".into()]),
            ..ObjectMeta::default()
        };
        assert!(has_finalizer(&meta, "example.com/cleanup"));
        assert!(!has_finalizer(&meta, "example.com/clean"));
        assert!(!has_finalizer(
            &ObjectMeta::default(),
            "example.com/cleanup"
        ));
    }
}
