// Two indexes with one name: the second is reported.
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
#[informable(
    index(name = "by_color", path = "spec.color"),
    index(name = "by_color", path = "spec.shade")
)]
pub struct WidgetSpec {
    color: String,
    shade: String,
}

fn main() {}
