// Indexes of a type of another crate without `foreign`: the derive would implement
// `Informable` for `ConfigMap`, which the orphan rule forbids. A struct without
// fields cannot be the type's spec, so the derive says to add `foreign`, whatever the
// struct's name, and rustc's orphan-rule error never comes.
use informer::informable::Informable;
use k8s_openapi::api::core::v1::ConfigMap;

#[derive(Informable)]
#[informable(kind = ConfigMap, index(name = "by_app", path = "metadata.labels['app']"))]
pub struct ConfigMapIndexes;

mod copies {
    use super::{ConfigMap, Informable};

    #[derive(Informable)]
    #[informable(kind = ConfigMap, index(name = "by_tier", path = "metadata.labels['tier']"))]
    pub struct BackupCopies;
}

fn main() {}
