// An owner named by its kind alone would match that kind in every API group: Jobs of
// the built-in `batch/v1` CronJob `nightly` would be indexed with those of a CRD
// CronJob `nightly`. The error names the two ways to say the group.
use informer::informable::Informable;

#[derive(Informable)]
#[informable(
    kind = k8s_openapi::api::batch::v1::Job,
    foreign,
    index(name = "by_cron_job", owner(kind = "CronJob", controller, name))
)]
struct JobIndexes;

fn main() {}
