// The keys of `by_size` are `u32` (the field's type): a string does not fit.
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
#[informable(index(name = "by_size", path = "spec.size"))]
pub struct WidgetSpec {
    size: u32,
}

fn query(widgets: Lister<Widget>) {
    let _ = widgets.by_size("three");
}

fn main() {}
