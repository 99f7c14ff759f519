// An index function must take the resource (`&Widget`, not its spec) and return keys
// of the index's key type (`String` unless `value = ...` says otherwise).
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
    index(name = "by_team", fn = team_of),
    index(name = "by_weight", fn = weight_of),
)]
pub struct WidgetSpec {
    team: String,
    weight: f64,
}

fn team_of(spec: &WidgetSpec) -> String {
    spec.team.clone()
}

fn weight_of(widget: &Widget) -> f64 {
    widget.spec.weight
}

fn main() {}
