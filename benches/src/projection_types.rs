//! The Pod types of scenario 15, each reading the same fields (name, namespace, uid,
//! resourceVersion, labels, owner references, `spec.nodeName`, the containers' names
//! and images, `status.phase`):
//!
//! - [`PodView`]: ours, `#[derive(Projection)]`, slim metadata;
//! - [`SharedPodView`]: the same, its repeating values shared
//!   ([`Shared`]: the node name, the container list, the phase);
//! - [`CompactPodView`]: the same as `SharedPodView` with [`CompactMeta`] for its
//!   metadata (name, uid and resourceVersion inline; namespace, labels and owner
//!   references shared);
//! - [`PodPartial`]: what a kube-rs user writes for kube-runtime,
//!   `#[derive(Resource)] #[resource(inherit = Pod)]` with serde's derive, whole
//!   `ObjectMeta` (managedFields decoded);
//! - [`PodPartialSlim`]: the same with a hand-written metadata decoder that skips
//!   managedFields (and what else the controller does not read): the best a kube-rs
//!   user can write by hand, the peer the target is set against.

use std::collections::BTreeMap;

use informer::projection::{CompactMeta, Projection, Shared};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::{Deserialize, Deserializer};

/// Ours: a projection of Pod.
#[derive(Projection, Clone, Debug)]
#[projection(of = Pod)]
pub struct PodView {
    /// Slim: name, namespace, uid, resourceVersion, generation, labels, owners,
    /// deletionTimestamp, finalizers.
    pub metadata: ObjectMeta,
    /// Node and images.
    pub spec: Option<PodViewSpec>,
    /// Phase.
    pub status: Option<PodViewStatus>,
}

/// The spec of [`PodView`].
#[derive(Projection, Clone, Debug, Default)]
#[projection(of = PodSpec)]
pub struct PodViewSpec {
    /// `spec.nodeName`.
    pub node_name: Option<String>,
    /// `spec.containers[*]`.
    pub containers: Vec<ContainerImage>,
}

/// A container of [`PodViewSpec`].
#[derive(Projection, Clone, Debug, Default)]
#[projection(of = Container)]
pub struct ContainerImage {
    /// Its name.
    pub name: String,
    /// Its image.
    pub image: Option<String>,
}

/// The status of [`PodView`].
#[derive(Projection, Clone, Debug, Default)]
#[projection(of = PodStatus)]
pub struct PodViewStatus {
    /// `status.phase`.
    pub phase: Option<String>,
}

/// Ours with the values that repeat across Pods stored once: what issue 48 measures.
#[derive(Projection, Clone, Debug)]
#[projection(of = Pod)]
pub struct SharedPodView {
    /// Slim, as [`PodView`]'s (an `ObjectMeta`: nothing in it shared).
    pub metadata: ObjectMeta,
    /// Node and images, shared.
    pub spec: Option<SharedPodViewSpec>,
    /// Phase, shared.
    pub status: Option<SharedPodViewStatus>,
}

/// The spec of [`SharedPodView`].
#[derive(Projection, Clone, Debug, Default)]
#[projection(of = PodSpec)]
pub struct SharedPodViewSpec {
    /// `spec.nodeName`: one copy a node.
    pub node_name: Option<Shared<String>>,
    /// `spec.containers[*]`: one list a template.
    pub containers: Shared<Vec<SharedContainerImage>>,
}

/// A container of [`SharedPodViewSpec`]: compared when its list is looked up.
#[derive(Projection, Clone, Debug, Default, PartialEq, Eq, Hash)]
#[projection(of = Container)]
pub struct SharedContainerImage {
    /// Its name.
    pub name: String,
    /// Its image.
    pub image: Option<String>,
}

/// The status of [`SharedPodView`].
#[derive(Projection, Clone, Debug, Default)]
#[projection(of = PodStatus)]
pub struct SharedPodViewStatus {
    /// `status.phase`: one of five words.
    pub phase: Option<Shared<String>>,
}

/// Ours with [`CompactMeta`]: the smallest we hold a Pod in.
#[derive(Projection, Clone, Debug)]
#[projection(of = Pod)]
pub struct CompactPodView {
    /// Name, uid and resourceVersion inline; namespace, labels, owners shared.
    pub metadata: CompactMeta,
    /// Node and images, shared, as [`SharedPodView`]'s.
    pub spec: Option<SharedPodViewSpec>,
    /// Phase, shared.
    pub status: Option<SharedPodViewStatus>,
}

/// kube-runtime's partial type, as its docs show it: whole `ObjectMeta`.
#[derive(kube::Resource, Deserialize, Clone, Debug)]
#[resource(inherit = Pod)]
pub struct PodPartial {
    /// All of it, managedFields included.
    pub metadata: ObjectMeta,
    /// Node and images.
    pub spec: Option<PartialSpec>,
    /// Phase.
    pub status: Option<PartialStatus>,
}

/// The same, with a hand-written metadata decoder (`slim_metadata`, 35 lines).
#[derive(kube::Resource, Deserialize, Clone, Debug)]
#[resource(inherit = Pod)]
pub struct PodPartialSlim {
    /// The fields its `SlimMeta` reads; managedFields and the rest skipped.
    #[serde(deserialize_with = "slim_metadata", default)]
    pub metadata: ObjectMeta,
    /// Node and images.
    pub spec: Option<PartialSpec>,
    /// Phase.
    pub status: Option<PartialStatus>,
}

/// The spec of the partial types, by hand.
#[derive(Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct PartialSpec {
    /// `spec.nodeName`.
    pub node_name: Option<String>,
    /// `spec.containers[*]`.
    #[serde(default)]
    pub containers: Vec<PartialContainer>,
}

/// A container of [`PartialSpec`].
#[derive(Deserialize, Clone, Debug)]
pub struct PartialContainer {
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// Its image.
    pub image: Option<String>,
}

/// The status of the partial types.
#[derive(Deserialize, Clone, Debug)]
pub struct PartialStatus {
    /// `status.phase`.
    pub phase: Option<String>,
}

/// The metadata fields a controller reads: serde skips every other key (managedFields
/// among them) without building it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SlimMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    owner_references: Option<Vec<OwnerReference>>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
}

/// Decodes `metadata` through [`SlimMeta`] into an `ObjectMeta` (which
/// `kube::Resource` asks for).
fn slim_metadata<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ObjectMeta, D::Error> {
    let slim = SlimMeta::deserialize(deserializer)?;
    Ok(ObjectMeta {
        name: slim.name,
        namespace: slim.namespace,
        uid: slim.uid,
        resource_version: slim.resource_version,
        generation: slim.generation,
        labels: slim.labels,
        owner_references: slim.owner_references,
        deletion_timestamp: slim.deletion_timestamp,
        finalizers: slim.finalizers,
        ..ObjectMeta::default()
    })
}
