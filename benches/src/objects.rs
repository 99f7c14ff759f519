//! The ConfigMaps every scenario uses, generated the same way on the server and in
//! memory.
//!
//! Object `i` is named `cm-{i}` and has two labels, `app: app-{i % 1000}` (so a
//! selector on one app matches one object in a thousand, like the pods of one
//! Deployment) and `shard: shard-{i % 10}`, and two data entries: `owner:
//! owner-{i % 500}` (what the secondary index of scenario 4 indexes) and a `payload` of
//! the requested size.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// How many distinct values the `app` label takes.
pub const APPS: usize = 1000;

/// How many distinct values the `owner` data entry takes.
pub const OWNERS: usize = 500;

/// The name of object `i`.
pub fn name(i: usize) -> String {
    format!("cm-{i}")
}

/// The value of the `app` label of object `i`.
pub fn app(i: usize) -> String {
    format!("app-{}", i % APPS)
}

/// The value of the `owner` data entry of object `i`.
pub fn owner(i: usize) -> String {
    format!("owner-{}", i % OWNERS)
}

/// A deterministic payload of `bytes` ASCII characters, different for each `i`.
pub fn payload(i: usize, bytes: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut state = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..bytes)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ALPHABET[(state % ALPHABET.len() as u64) as usize] as char
        })
        .collect()
}

/// Object `i` with a payload of `payload_bytes`, in `namespace` when given (the API
/// server fills in the namespace of a create from the URL).
pub fn config_map(i: usize, payload_bytes: usize, namespace: Option<&str>) -> ConfigMap {
    let labels = BTreeMap::from([
        ("app".to_owned(), app(i)),
        ("shard".to_owned(), format!("shard-{}", i % 10)),
    ]);
    let mut data = BTreeMap::from([("owner".to_owned(), owner(i))]);
    if payload_bytes > 0 {
        data.insert("payload".to_owned(), payload(i, payload_bytes));
    }
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name(i)),
            namespace: namespace.map(str::to_owned),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        data: Some(data),
        ..ConfigMap::default()
    }
}

/// The name of Pod `i`.
pub fn pod_name(i: usize) -> String {
    format!("pod-{i}")
}

/// Pod `i` as a real cluster holds it: a Deployment's replica with two containers
/// (env, ports, probes, resources, mounts), four volumes, tolerations, and (for
/// [`pod_status`]) conditions and container statuses; about 5 KiB of JSON.
pub fn pod(i: usize) -> Pod {
    let app = app(i);
    let env: Vec<serde_json::Value> = (0..15)
        .map(|e| serde_json::json!({ "name": format!("SETTING_{e}"), "value": format!("value-{e}-{}", payload(i + e, 24)) }))
        .collect();
    let container = |name: &str, port: u16| {
        serde_json::json!({
            "name": name,
            "image": format!("registry.example.com/team/{name}:1.{}.{}", i % 7, i % 13),
            "command": ["/bin/server"],
            "args": ["--port", port.to_string(), "--log-level=info", "--config=/etc/app/config.yaml"],
            "env": env,
            "ports": [{ "name": "http", "containerPort": port, "protocol": "TCP" }],
            "resources": {
                "requests": { "cpu": "100m", "memory": "128Mi" },
                "limits": { "cpu": "500m", "memory": "512Mi" },
            },
            "volumeMounts": [
                { "name": "config", "mountPath": "/etc/app" },
                { "name": "secrets", "mountPath": "/etc/secrets", "readOnly": true },
                { "name": "cache", "mountPath": "/var/cache/app" },
            ],
            "livenessProbe": { "httpGet": { "path": "/healthz", "port": port }, "periodSeconds": 10 },
            "readinessProbe": { "httpGet": { "path": "/ready", "port": port }, "periodSeconds": 5 },
            "imagePullPolicy": "IfNotPresent",
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "securityContext": { "runAsNonRoot": true, "allowPrivilegeEscalation": false },
        })
    };
    serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": pod_name(i),
            "labels": { "app": app, "shard": format!("shard-{}", i % 10), "pod-template-hash": "5d4f8c7b9", "tier": "backend" },
            "annotations": {
                "prometheus.io/scrape": "true",
                "kubectl.kubernetes.io/restartedAt": "2026-11-01T10:00:00Z",
            },
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-5d4f8c7b9"),
                "uid": format!("00000000-0000-0000-0000-{:012}", i % APPS), "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "spec": {
            "containers": [container("server", 8080), container("sidecar", 9090)],
            "volumes": [
                { "name": "config", "configMap": { "name": format!("{app}-config") } },
                { "name": "secrets", "secret": { "secretName": format!("{app}-secrets") } },
                { "name": "cache", "emptyDir": {} },
                { "name": "token", "projected": { "sources": [{ "serviceAccountToken": { "path": "token", "expirationSeconds": 3607 } }] } },
            ],
            "nodeName": format!("node-{}", i % 50),
            "serviceAccountName": format!("{app}-sa"),
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "schedulerName": "default-scheduler",
            "tolerations": [
                { "key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300 },
                { "key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300 },
            ],
        },
    }))
    .expect("a valid Pod")
}

/// The status of [`pod`] `i` once running, as a status patch body.
pub fn pod_status(i: usize) -> serde_json::Value {
    let at = "2026-11-01T10:00:00Z";
    let status = |name: &str| {
        serde_json::json!({
            "name": name, "ready": true, "restartCount": i % 3, "started": true,
            "image": format!("registry.example.com/team/{name}:1.{}.{}", i % 7, i % 13),
            "imageID": format!("registry.example.com/team/{name}@sha256:{}", payload(i, 64)),
            "containerID": format!("containerd://{}", payload(i + 1, 64)),
            "state": { "running": { "startedAt": at } },
        })
    };
    let conditions = ["Initialized", "Ready", "ContainersReady", "PodScheduled"]
        .map(|t| serde_json::json!({ "type": t, "status": "True", "lastTransitionTime": at }));
    serde_json::json!({ "status": {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": format!("10.0.{}.{}", i % 50 / 250, i % 50 + 1),
        "podIP": format!("10.1.{}.{}", (i / 250) % 250, i % 250 + 1),
        "podIPs": [{ "ip": format!("10.1.{}.{}", (i / 250) % 250, i % 250 + 1) }],
        "startTime": at,
        "qosClass": "Burstable",
        "containerStatuses": [status("server"), status("sidecar")],
    }})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_deterministic_and_sized() {
        let a = config_map(7, 1024, Some("ns"));
        assert_eq!(a, config_map(7, 1024, Some("ns")));
        assert_eq!(a.data.as_ref().unwrap()["payload"].len(), 1024);
        assert_ne!(payload(1, 64), payload(2, 64));
        assert_eq!(a.metadata.labels.as_ref().unwrap()["app"], "app-7");
    }

    #[test]
    fn pods_weigh_several_kib_with_their_status() {
        let mut pod = serde_json::to_value(pod(3)).unwrap();
        pod.as_object_mut()
            .unwrap()
            .extend(pod_status(3).as_object().unwrap().clone());
        let bytes = serde_json::to_vec(&pod).unwrap().len();
        assert!((4_000..12_000).contains(&bytes), "{bytes} bytes");
    }
}
