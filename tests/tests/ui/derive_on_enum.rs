// An enum is not a Kubernetes resource.
use informer::informable::Informable;

#[derive(Informable)]
pub enum Phase {
    Pending,
    Ready,
}

fn main() {}
