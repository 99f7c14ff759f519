//! Informers of resources known only at run time: `dynamic_informer(&resource)`.
//!
//! client-go's dynamic informer factory: a resource found in configuration or through
//! discovery ([`DynamicResource`]) is informed as [`DynamicObject`]s, each the object's
//! metadata with the rest as JSON. Entries are keyed by the resource (group, version,
//! plural), the namespace (for namespaced resources) and the selectors, beside the
//! typed ones: `informer::<ConfigMap>()` and the dynamic informer of `configmaps` are
//! two informers. Per-type settings address them all as `DynamicObject`
//! (`by_object(ByObject::<DynamicObject>::default()...)`).

use kube::Resource;
use kube::core::{ApiResource, DynamicObject, PartialObjectMeta};

use super::selection::{Selection, Target};
use super::shared_informer_factory::SharedInformerFactory;
use crate::dynamic::DynamicResource;
use crate::shared_informer::{InformerConfig, SharedIndexInformer};

impl SharedInformerFactory {
    /// The informer of `resource` in the factory's namespace (all namespaces, for a
    /// cluster-scoped resource), made on first request and the same one ever after.
    ///
    /// ```no_run
    /// # async fn demo(factory: informer::factory::SharedInformerFactory)
    /// # -> Result<(), Box<dyn std::error::Error>> {
    /// use informer::dynamic::DynamicResource;
    /// use kube::core::GroupVersionKind;
    ///
    /// let gvk = GroupVersionKind::gvk("example.com", "v1", "Backup");
    /// let backups = DynamicResource::discover(factory.client(), &gvk).await?;
    /// let informer = factory.dynamic_informer(&backups);
    /// factory.start();
    /// factory.wait_for_cache_sync().await?;
    /// for backup in informer.lister().list_all() {
    ///     println!("{:?}: {}", backup.metadata.name, backup.data["spec"]);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn dynamic_informer(
        &self,
        resource: &DynamicResource,
    ) -> SharedIndexInformer<DynamicObject> {
        self.dynamic_informer_for(resource, self.default_selection())
    }

    /// [`dynamic_informer`](Self::dynamic_informer) in `selection` (namespace and
    /// selectors), shared like [`informer_for`](Self::informer_for).
    pub fn dynamic_informer_for(
        &self,
        resource: &DynamicResource,
        selection: Selection,
    ) -> SharedIndexInformer<DynamicObject> {
        self.informer_with(target(resource), selection, InformerConfig::default)
            .0
    }

    /// The metadata-only informer of `resource` in the factory's namespace
    /// (client-go's metadata informer, which is keyed by resource too): see
    /// [`metadata_informer`](Self::metadata_informer).
    pub fn dynamic_metadata_informer(
        &self,
        resource: &DynamicResource,
    ) -> SharedIndexInformer<PartialObjectMeta<DynamicObject>> {
        self.dynamic_metadata_informer_for(resource, self.default_selection())
    }

    /// [`dynamic_metadata_informer`](Self::dynamic_metadata_informer) in `selection`.
    pub fn dynamic_metadata_informer_for(
        &self,
        resource: &DynamicResource,
        selection: Selection,
    ) -> SharedIndexInformer<PartialObjectMeta<DynamicObject>> {
        self.informer_with(target(resource), selection, InformerConfig::default)
            .0
    }
}

/// Where an informer of `resource` looks, for `K` of any resource named at run time.
fn target<K: Resource<DynamicType = ApiResource>>(resource: &DynamicResource) -> Target<'_, K> {
    Target {
        dynamic_type: &resource.api_resource,
        namespaced: resource.namespaced,
        dynamic: true,
    }
}
