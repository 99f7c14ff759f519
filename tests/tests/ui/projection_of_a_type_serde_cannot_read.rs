// A projection reads the keys the original's `Deserialize` reads, as it reads them:
// an original serde cannot decode is an error at `of = ...`.
use informer::projection::Projection;

pub struct Settings {
    pub color: String,
}

#[derive(Projection)]
#[projection(of = Settings)]
pub struct SettingsView {
    pub color: String,
}

fn main() {}
