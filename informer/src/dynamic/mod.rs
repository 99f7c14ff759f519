//! Resources known only at run time: [`DynamicResource`], found through discovery, and
//! index functions over [`DynamicObject`]s.
//!
//! client-go's dynamic informer: an operator that reads a GroupVersionKind from its
//! configuration (or walks discovery) cannot name a Rust type for it. kube's
//! [`DynamicObject`] holds any object (typed metadata, the rest as JSON) given an
//! [`ApiResource`] (group, version, kind, plural). A [`DynamicResource`] is that plus
//! whether the resource lives in namespaces, which decides how the factory scopes it:
//! [`DynamicResource::discover`] asks the API server's discovery for both, or
//! [`DynamicResource::of`] takes them from a static type.
//!
//! [`SharedInformerFactory::dynamic_informer`](crate::factory::SharedInformerFactory::dynamic_informer)
//! then makes a shared informer of it, keyed by the resource, namespace and selectors.
//! Its [`Lister<DynamicObject>`](crate::lister::Lister) has both `get(name)` and
//! `namespaced(ns)` (the scope is not in the type), label selectors and label indexes
//! work as for any type, and [`JsonPathIndex`] indexes objects by a field path in their
//! JSON (`spec.nodeName`); any closure over `&DynamicObject` is an index function too.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use informer::dynamic::{DynamicResource, JsonPathIndex};
//! use informer::factory::{FactoryConfig, SharedInformerFactory};
//! use informer::store::Indexers;
//! use kube::core::GroupVersionKind;
//!
//! let gvk = GroupVersionKind::gvk("example.com", "v1", "Backup");
//! let backups = DynamicResource::discover(&client, &gvk).await?;
//! let factory = SharedInformerFactory::new(client, FactoryConfig::default());
//! let informer = factory.dynamic_informer(&backups);
//! informer.indexer().add_indexers(
//!     Indexers::new().with("by_schedule", JsonPathIndex::new("spec.schedule")?),
//! )?;
//! factory.start();
//! factory.wait_for_cache_sync().await?;
//! let nightly = informer.indexer().by_index("by_schedule", "nightly")?;
//! # let _ = nightly;
//! # Ok(())
//! # }
//! ```

mod discovery;
mod json_path;

pub use discovery::{DiscoveryError, DynamicResource};
pub use json_path::{JsonPathError, JsonPathIndex};

#[doc(no_inline)]
pub use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
