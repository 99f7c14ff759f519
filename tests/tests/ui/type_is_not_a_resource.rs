// A plain struct: neither a CRD spec (no #[kube(...)]) nor a `kube::Resource`.
use informer::informable::Informable;

#[derive(Informable)]
#[informable(index(name = "by_color", path = "color"))]
pub struct Settings {
    color: String,
}

fn main() {}
