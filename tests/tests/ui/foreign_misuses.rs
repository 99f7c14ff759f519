// `foreign` needs the foreign type in `kind`, takes no value, cannot carry a key
// function, needs an index, and the query trait cannot take the struct's name.
use informer::informable::Informable;
use k8s_openapi::api::core::v1::ConfigMap;

#[derive(Informable)]
#[informable(foreign, index(name = "by_app", path = "metadata.labels['app']"))]
pub struct NoKind;

#[derive(Informable)]
#[informable(
    kind = ConfigMap,
    foreign = true,
    key = by_uid,
    lister_trait = KeyedIndexes,
    index(name = "by_app", path = "metadata.labels['app']")
)]
pub struct KeyedIndexes;

#[derive(Informable)]
#[informable(kind = ConfigMap, foreign)]
pub struct Empty;

fn by_uid(config_map: &ConfigMap) -> informer::key::ObjectKey {
    informer::key::ObjectKey::cluster_scoped(config_map.metadata.uid.clone().unwrap_or_default())
}

fn main() {}
