// Asking the factory for a k8s-openapi type with derived indexes: it cannot have
// them (the orphan rule); the error says how to index it instead.
use informer::factory::SharedInformerFactory;
use k8s_openapi::api::core::v1::Pod;

fn pods(factory: &SharedInformerFactory) {
    let _ = factory.informable::<Pod>();
}

fn main() {
    let _ = pods;
}
