// A foreign path whose keys are not strings needs `value = Type`: the derive cannot see
// that `immutable` is a `bool`, so the keys default to `String`.
use informer::informable::Informable;
use k8s_openapi::api::core::v1::ConfigMap;

#[derive(Informable)]
#[informable(kind = ConfigMap, foreign, index(name = "by_immutable", path = "immutable"))]
pub struct ConfigMapIndexes;

fn main() {}
