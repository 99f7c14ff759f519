//! CustomResourceDefinitions that stand in for built-in types on a control plane
//! without the core API ([`Kubernetes::V1_36`](super::Kubernetes::V1_36)), so that code
//! written for those types runs unchanged.
//!
//! - `leases.coordination.k8s.io` (kind `Lease`, v1, namespaced) with the built-in
//!   `LeaseSpec`'s fields: what [`leader`](crate::leader) and [`shard`](crate::shard)
//!   read and write.
//! - `events.events.k8s.io` (kind `Event`, v1, namespaced) with the built-in
//!   `events.k8s.io/v1` Event's top-level fields, `eventTime` required as there:
//!   what [`events`](crate::events) writes.
//!
//! Both groups are protected (`*.k8s.io`): the server accepts a CRD in them only with
//! the `api-approved.kubernetes.io` annotation naming the pull request that approved
//! the API, and then reports the condition `KubernetesAPIApprovalPolicyConformant`.
//!
//! Where they differ from the built-in types: the server checks only the schema
//! (types, formats, `eventTime` present), not the built-in validation (an Event's
//! `reportingController` is not required; no TTL on Events), and it returns
//! timestamps as written instead of normalising them. Code that writes the usual
//! formats (k8s-openapi's `MicroTime` writes RFC 3339 with microseconds, as the
//! built-in types return it) reads back exactly what it wrote. Strategic merge patches
//! are refused on custom resources (415); merge patches, JSON patches and server-side
//! apply work.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

use super::{TestEnv, TestEnvError};

/// The pull request that approved the `coordination.k8s.io` and `events.k8s.io` APIs'
/// protected groups for CRDs; any URL would do.
const API_APPROVED: &str = "https://github.com/kubernetes/kubernetes/pull/72437";

impl TestEnv {
    /// Installs the stand-ins for the built-in Lease and Event, and waits until they
    /// are served.
    pub(super) async fn install_builtin_crds(&self) -> Result<(), TestEnvError> {
        for crd in [lease(), event()] {
            self.install_crd(&crd).await?;
        }
        Ok(())
    }
}

/// A namespaced, v1, protected-group CRD with `properties` as its top-level schema.
fn protected_crd(group: &str, plural: &str, kind: &str, schema: Value) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "metadata": {
            "name": format!("{plural}.{group}"),
            "annotations": { "api-approved.kubernetes.io": API_APPROVED },
        },
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "plural": plural,
                "singular": kind.to_lowercase(),
                "kind": kind,
                "listKind": format!("{kind}List"),
            },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": schema },
            }],
        },
    }))
    .expect("a valid CustomResourceDefinition")
}

fn string() -> Value {
    json!({ "type": "string" })
}

fn int32() -> Value {
    json!({ "type": "integer", "format": "int32" })
}

fn date_time() -> Value {
    json!({ "type": "string", "format": "date-time" })
}

/// `coordination.k8s.io/v1` Lease.
fn lease() -> CustomResourceDefinition {
    protected_crd(
        "coordination.k8s.io",
        "leases",
        "Lease",
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "holderIdentity": string(),
                        "leaseDurationSeconds": int32(),
                        "acquireTime": date_time(),
                        "renewTime": date_time(),
                        "leaseTransitions": int32(),
                        "strategy": string(),
                        "preferredHolder": string(),
                    },
                },
            },
        }),
    )
}

/// `events.k8s.io/v1` Event.
fn event() -> CustomResourceDefinition {
    let object_reference = json!({
        "type": "object",
        "properties": {
            "apiVersion": string(),
            "fieldPath": string(),
            "kind": string(),
            "name": string(),
            "namespace": string(),
            "resourceVersion": string(),
            "uid": string(),
        },
    });
    protected_crd(
        "events.k8s.io",
        "events",
        "Event",
        json!({
            "type": "object",
            "required": ["eventTime"],
            "properties": {
                "action": string(),
                "deprecatedCount": int32(),
                "deprecatedFirstTimestamp": date_time(),
                "deprecatedLastTimestamp": date_time(),
                "deprecatedSource": {
                    "type": "object",
                    "properties": { "component": string(), "host": string() },
                },
                "eventTime": date_time(),
                "note": string(),
                "reason": string(),
                "regarding": object_reference,
                "related": object_reference,
                "reportingController": string(),
                "reportingInstance": string(),
                "series": {
                    "type": "object",
                    "properties": { "count": int32(), "lastObservedTime": date_time() },
                },
                "type": string(),
            },
        }),
    )
}
