// A foreign kind's fields are unknown to the derive: rustc checks the path, and the
// error points at it. ConfigMaps have no `spec`; a Pod's spec has no `nodeNme`.
use informer::informable::Informable;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};

#[derive(Informable)]
#[informable(kind = ConfigMap, foreign, index(name = "by_node", path = "spec.nodeName"))]
pub struct ConfigMapIndexes;

#[derive(Informable)]
#[informable(kind = Pod, foreign, index(name = "by_pod_node", path = "spec.nodeNme"))]
pub struct PodIndexes;

fn main() {}
