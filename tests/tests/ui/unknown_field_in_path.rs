// A path naming a field the spec does not have: the derive suggests the close one.
use informer::informable::Informable;
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
#[informable(index(name = "by_color", path = "spec.colour"))]
pub struct WidgetSpec {
    color: String,
}

fn main() {}
