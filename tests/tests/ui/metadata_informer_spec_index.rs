// A metadata-only informer caches no spec: an index on a spec field has no query
// method there, and the error names the types as the user knows them.
use informer::factory::SharedInformerFactory;
use informer::informable::Informable;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Informable, Deserialize, Serialize, Clone, Debug)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, schema = "disabled")]
#[informable(index(name = "by_color", path = "spec.color"), index(name = "by_app", path = "metadata.labels['app']"))]
pub struct WidgetSpec {
    color: String,
}

fn widgets(factory: &SharedInformerFactory) {
    let widgets = factory.metadata_informable::<Widget>();
    let _ = widgets.lister().by_app("web");
    let _ = widgets.lister().by_color("red");
    let _ = widgets.lister().by_index::<ByColor>("red");
}

mod config_maps {
    use informer::factory::SharedInformerFactory;
    use informer::informable::Informable;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[derive(Informable)]
    #[informable(kind = ConfigMap, foreign, index(name = "by_team", path = "data['team']"))]
    pub struct ConfigMapIndexes;

    pub fn teams(factory: &SharedInformerFactory) {
        let config_maps = factory.metadata_informer::<ConfigMap>();
        let _ = config_maps.lister().by_index::<ByTeam>("a");
    }
}

fn main() {
    let _ = config_maps::teams;
    let _ = widgets;
}
