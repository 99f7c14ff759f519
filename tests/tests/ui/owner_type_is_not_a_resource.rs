// `owner(type = ...)` takes the owner's API group and kind from the type's
// `kube::Resource` impl: a type without one cannot name an owner.
use informer::informable::Informable;
use k8s_openapi::api::batch::v1::Job;

/// Not a resource.
pub struct Schedule;

#[derive(Informable)]
#[informable(
    kind = Job,
    foreign,
    index(name = "by_schedule", owner(type = Schedule, controller))
)]
struct JobIndexes;

fn main() {}
