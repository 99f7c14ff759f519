//! What sharing a projection's repeating values costs in decoding (issue 48: "sharing
//! costs a hash and a lookup per value: measure it"), in one process, no server:
//! 30,000 Pods of scenario 15's shape decoded as `PodView` (plain strings and lists)
//! and as `SharedPodView` (the node, the container list and the phase shared), three
//! rounds, each printing the time, the estimate per object, the shared values and the
//! ratio. `cargo run --release -p informer-benches --bin bench-decode-shared`.

use std::time::{Duration, Instant};

use informer::projection::shared_size;
use informer::reflector::source::decode_measured;
use informer_benches::objects;
use informer_benches::projection_types::{CompactPodView, PodView, SharedPodView};
use serde::de::DeserializeOwned;

const PODS: usize = 30_000;

/// Decodes every object as `T`, keeping them all (as a cache does): the time and the
/// estimated bytes per object.
fn decode_all<T: DeserializeOwned>(jsons: &[String]) -> (Duration, usize, Vec<T>) {
    let started = Instant::now();
    let mut kept = Vec::with_capacity(jsons.len());
    let mut bytes = 0;
    for json in jsons {
        let (object, size) = decode_measured::<T>(json).expect("a valid Pod");
        bytes += size;
        kept.push(object);
    }
    (started.elapsed(), bytes / jsons.len(), kept)
}

fn main() {
    let jsons: Vec<String> = (0..PODS)
        .map(|i| {
            let mut pod = serde_json::to_value(objects::pod(i)).expect("serializes");
            pod["metadata"]["namespace"] = "bench".into();
            pod["metadata"]["uid"] = format!("uid-{i}").into();
            pod["metadata"]["resourceVersion"] = format!("{}", 1000 + i).into();
            pod["status"] = objects::pod_status(i);
            pod.to_string()
        })
        .collect();
    for round in 1..=3 {
        let (plain, plain_bytes, kept) = decode_all::<PodView>(&jsons);
        drop(kept);
        let (shared, shared_bytes, kept) = decode_all::<SharedPodView>(&jsons);
        let values = shared_size();
        println!(
            "round {round}: PodView {:.3} s, {plain_bytes} B an object; SharedPodView {:.3} s, \
             {shared_bytes} B an object + {} shared values of {} B in all; time {:.2}x",
            plain.as_secs_f64(),
            shared.as_secs_f64(),
            values.values,
            values.bytes,
            shared.as_secs_f64() / plain.as_secs_f64()
        );
        drop(kept);
        let (compact, compact_bytes, kept) = decode_all::<CompactPodView>(&jsons);
        let values = shared_size();
        println!(
            "round {round}: CompactPodView {:.3} s, {compact_bytes} B an object + {} shared \
             values of {} B in all; time {:.2}x PodView's",
            compact.as_secs_f64(),
            values.values,
            values.bytes,
            compact.as_secs_f64() / plain.as_secs_f64()
        );
        drop(kept);
    }
}
