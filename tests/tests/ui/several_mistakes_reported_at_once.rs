// Every attribute mistake is reported in one compilation, each at its own span.
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
    index(name = "byColor", path = "spec.color"),
    index(name = "by_owner", owner, format = "display"),
    index(name = "by_label", path = "metadata.labels"),
    index(name = "by_status", path = "status.phase"),
    index(name = "by_size", path = "spec.size", format = "jsn"),
    index(path = "spec.color")
)]
pub struct WidgetSpec {
    color: String,
    size: u32,
}

fn main() {}
