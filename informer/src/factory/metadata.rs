//! Metadata-only informers in the factory: `metadata_informer::<Pod>()`.
//!
//! An informer over [`PartialObjectMeta<K>`] asks the API server for
//! `PartialObjectMetadata` (see [`ApiListerWatcher`](crate::reflector::source::ApiListerWatcher)),
//! so the server sends, and the cache holds, only each object's `metadata`: names,
//! labels, annotations, owner references, finalizers. Garbage collectors, quota and
//! cleanup controllers, anything that watches Pods or Secrets at scale and reads no
//! spec, need no more. Everything else is a full informer's: handlers, listers, label
//! and named indexes (those of `#[derive(Informable)]` on `metadata` fields too),
//! tombstones, relists.
//!
//! It is its own entry in the factory, beside a full informer of `K` in the same selection:
//! the two share nothing but the factory. Per-type settings address it as
//! `PartialObjectMeta<K>` (`by_object(ByObject::<PartialObjectMeta<Pod>>::default()...)`).

use kube::Resource;
use kube::core::PartialObjectMeta;
use serde::de::DeserializeOwned;

use super::selection::{Selection, Target};
use super::shared_informer_factory::SharedInformerFactory;
use crate::informable::Informable;
use crate::scope::FactoryScope;
use crate::shared_informer::{InformerConfig, SharedIndexInformer};

impl SharedInformerFactory {
    /// The metadata-only informer for `K` in the factory's namespace, made on first
    /// request and the same one ever after (client-go's metadata informer).
    ///
    /// The server sends, and the cache holds, only each object's `metadata` (names,
    /// labels, annotations, owner references, finalizers): what garbage collectors,
    /// quota and cleanup controllers read, at a fraction of the memory and decoding
    /// time. Handlers, listers, label and named indexes (the `metadata` ones of
    /// `#[derive(Informable)]` too), tombstones and relists work as on a full informer.
    /// It is its own entry beside the full informer of `K`.
    ///
    /// ```no_run
    /// # fn demo(factory: informer::factory::SharedInformerFactory) {
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let pods = factory.metadata_informer::<Pod>();
    /// factory.start();
    /// // ... once synced: labels and owners, no spec, no status.
    /// for pod in pods.lister().list_all() {
    ///     println!("{:?} {:?}", pod.metadata.name, pod.metadata.owner_references);
    /// }
    /// # }
    /// ```
    pub fn metadata_informer<K>(&self) -> SharedIndexInformer<PartialObjectMeta<K>>
    where
        K: Resource<DynamicType = (), Scope: FactoryScope> + Send + Sync + 'static,
        PartialObjectMeta<K>: DeserializeOwned,
    {
        self.metadata_informer_for(self.default_selection())
    }

    /// [`metadata_informer`](Self::metadata_informer) in `selection` (namespace and
    /// selectors), shared like [`informer_for`](Self::informer_for).
    pub fn metadata_informer_for<K>(
        &self,
        selection: Selection,
    ) -> SharedIndexInformer<PartialObjectMeta<K>>
    where
        K: Resource<DynamicType = (), Scope: FactoryScope> + Send + Sync + 'static,
        PartialObjectMeta<K>: DeserializeOwned,
    {
        self.informer_with(
            Target::<PartialObjectMeta<K>>::of(),
            selection,
            InformerConfig::default,
        )
        .0
    }

    /// The metadata-only informer for `K` in the factory's namespace, maintaining the
    /// indexes of `K` that read only metadata ([`Informable::metadata_indexers`]; with
    /// the derive, queried through `{Kind}MetadataIndexes`). Shared with
    /// [`metadata_informer`](Self::metadata_informer), like
    /// [`informable`](Self::informable) with [`informer`](Self::informer). Objects are
    /// keyed `namespace/name`: a custom key function of `K` reads the whole object.
    ///
    /// For a projection with a metadata of its own (`CompactMeta`), the metadata-only
    /// informer of the resource it is listed as (`PartialObjectMeta<Pod>`), maintaining
    /// the projection's owner indexes.
    pub fn metadata_informable<K>(&self) -> SharedIndexInformer<PartialObjectMeta<K::Resource>>
    where
        K: Informable<Resource: Resource<DynamicType = (), Scope: FactoryScope> + Send + Sync>,
        PartialObjectMeta<K::Resource>: DeserializeOwned,
    {
        self.metadata_informable_for::<K>(self.default_selection())
    }

    /// [`metadata_informable`](Self::metadata_informable) in `selection`.
    pub fn metadata_informable_for<K>(
        &self,
        selection: Selection,
    ) -> SharedIndexInformer<PartialObjectMeta<K::Resource>>
    where
        K: Informable<Resource: Resource<DynamicType = (), Scope: FactoryScope> + Send + Sync>,
        PartialObjectMeta<K::Resource>: DeserializeOwned,
    {
        let (informer, made) = self.informer_with(
            Target::<PartialObjectMeta<K::Resource>>::of(),
            selection,
            || InformerConfig::default().indexers(K::metadata_indexers()),
        );
        if !made {
            super::shared_informer_factory::add_missing(&informer, K::metadata_indexers());
        }
        informer
    }
}
