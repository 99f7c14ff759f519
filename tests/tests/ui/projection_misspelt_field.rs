// A field the original type lacks is a compile error at the projection's field,
// with rustc's own suggestion (a valid fix: the field is Rust code here).
use informer::projection::Projection;
use k8s_openapi::api::core::v1::{Container, PodSpec};

#[derive(Projection)]
#[projection(of = PodSpec)]
pub struct Spec {
    pub nod_name: Option<String>,
    pub containers: Vec<Image>,
}

#[derive(Projection, Default)]
#[projection(of = Container)]
pub struct Image {
    pub imagee: Option<String>,
}

fn main() {}
