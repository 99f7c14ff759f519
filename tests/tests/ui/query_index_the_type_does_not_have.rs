// Querying a `Lister<Widget>` by an index of another type, or by a method no index made.
use informer::informable::Informable;
use informer::lister::Lister;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Informable, Deserialize, Serialize, Clone, Debug)]
#[kube(
    group = "ui.example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    schema = "disabled"
)]
#[informable(index(name = "by_color", path = "spec.color"))]
pub struct WidgetSpec {
    color: String,
}

#[derive(CustomResource, Informable, Deserialize, Serialize, Clone, Debug)]
#[kube(
    group = "ui.example.com",
    version = "v1",
    kind = "Gadget",
    namespaced,
    schema = "disabled"
)]
#[informable(index(name = "by_size", path = "spec.size"))]
pub struct GadgetSpec {
    size: u32,
}

fn query(widgets: Lister<Widget>) {
    let _ = widgets.by_index::<BySize>(3u32);
    let _ = widgets.by_size(3u32);
}

fn main() {}
