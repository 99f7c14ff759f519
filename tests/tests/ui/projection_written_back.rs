// A projection cannot be written back: it has no `Serialize`, so the half object
// can never replace the whole one. Writes go through the full type.
use informer::projection::Projection;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};

#[derive(Projection, Clone, Debug)]
#[projection(of = Pod)]
pub struct PodView {
    pub metadata: ObjectMeta,
}

async fn write(api: Api<PodView>, view: PodView) {
    let _ = api.replace("web-0", &PostParams::default(), &view).await;
    let _ = api.create(&PostParams::default(), &view).await;
}

fn main() {
    let _ = write;
}
