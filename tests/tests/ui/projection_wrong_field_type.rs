// A field of another type than the original's, an `Option` the projection leaves
// out, a list where the original has none, a projection of another type: each a
// compile error at the projection's field type.
use informer::projection::Projection;
use k8s_openapi::api::core::v1::{Container, PodSpec, PodStatus};

#[derive(Projection)]
#[projection(of = PodSpec)]
pub struct Spec {
    pub priority: Option<String>,        // i32 in PodSpec
    pub node_name: String,               // Option<String> in PodSpec
    pub hostname: Vec<String>,           // not a list in PodSpec
    pub containers: Vec<StatusView>,     // a projection of PodStatus, not of Container
}

#[derive(Projection, Default)]
#[projection(of = PodStatus)]
pub struct StatusView {
    pub phase: Option<String>,
}

#[derive(Projection, Default)]
#[projection(of = Container)]
pub struct Image {
    pub image: Option<String>,
}

fn main() {}
