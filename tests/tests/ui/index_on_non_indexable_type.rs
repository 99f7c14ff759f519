// A path to a struct-typed field: a struct is not an index key.
use informer::informable::Informable;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Clone, Debug)]
pub struct Size {
    width: u32,
    height: u32,
}

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
    size: Size,
}

fn main() {}
