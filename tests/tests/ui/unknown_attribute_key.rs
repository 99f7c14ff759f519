// A misspelt key, in `index(...)` and at the top: each gets a did-you-mean hint.
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
#[informable(index(name = "by_color", pth = "spec.color"), lister_trai = WidgetQueries)]
pub struct WidgetSpec {
    color: String,
}

fn main() {}
