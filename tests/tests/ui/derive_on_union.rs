// A union is not a Kubernetes resource.
use informer::informable::Informable;

#[derive(Informable)]
pub union Bits {
    int: u32,
    float: f32,
}

fn main() {}
