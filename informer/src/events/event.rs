//! Making the `events.k8s.io/v1` Event a publish describes (client-go's `makeEvent`):
//! its name, namespace and time, after the checks the API server would make.

use std::sync::atomic::{AtomicU64, Ordering};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;

use super::error::EventError;
use super::spec::{EventSpec, INSTANCE_LIMIT, Reporter, truncate};

/// The most bytes the API server accepts in `reason` and in `action`.
const REASON_LIMIT: usize = 128;
/// The most bytes the API server accepts in `note`.
pub(super) const NOTE_LIMIT: usize = 1024;

/// Checks what the API server would reject, so a bad event is reported at once
/// rather than failing in the background; cuts a note longer than 1 kB to that.
pub(super) fn validate(
    reporter: &Reporter,
    regarding: &ObjectReference,
    mut spec: EventSpec,
) -> Result<EventSpec, EventError> {
    let invalid = |field, problem: &str| {
        Err(EventError::Invalid {
            field,
            problem: problem.to_owned(),
        })
    };
    if !is_qualified_name(&reporter.controller) {
        return invalid(
            "reportingController",
            "must be a qualified name ([prefix/]name, name at most 63 characters)",
        );
    }
    if reporter.instance.is_empty() || reporter.instance.len() > INSTANCE_LIMIT {
        return invalid("reportingInstance", "must have 1 to 128 bytes");
    }
    if spec.reason.is_empty() || spec.reason.len() > REASON_LIMIT {
        return invalid("reason", "must have 1 to 128 bytes");
    }
    if spec.action.is_empty() || spec.action.len() > REASON_LIMIT {
        return invalid("action", "must have 1 to 128 bytes");
    }
    if regarding.name.as_deref().is_none_or(str::is_empty) {
        return invalid("regarding.name", "is required");
    }
    spec.note = spec.note.map(|note| truncate(note, NOTE_LIMIT));
    Ok(spec)
}

/// The Event for `spec` about `regarding`, first observed `now`: named
/// `{regarding.name}.{unix nanos in hex}`, in the regarding object's namespace or
/// `cluster_namespace` (client-go: `default`) for a cluster-scoped object.
pub(super) fn make_event(
    reporter: &Reporter,
    regarding: &ObjectReference,
    spec: EventSpec,
    now: Timestamp,
    cluster_namespace: &str,
) -> Event {
    let regarding_name = regarding.name.as_deref().unwrap_or_default();
    let namespace = regarding
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| cluster_namespace.to_owned());
    Event {
        metadata: ObjectMeta {
            name: Some(event_name(regarding_name, unique_unix_nanos(now))),
            namespace: Some(namespace),
            ..ObjectMeta::default()
        },
        event_time: Some(MicroTime(now)),
        reporting_controller: Some(reporter.controller.clone()),
        reporting_instance: Some(reporter.instance.clone()),
        type_: Some(spec.event_type.as_str().to_owned()),
        reason: Some(spec.reason),
        action: Some(spec.action),
        note: spec.note,
        regarding: Some(regarding.clone()),
        related: spec.related,
        ..Event::default()
    }
}

/// `now` in unix nanoseconds, made unique in this process: two events made in the
/// same nanosecond (or with a clock that steps back) still get distinct names.
fn unique_unix_nanos(now: Timestamp) -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let nanos = u64::try_from(now.as_nanosecond()).unwrap_or(0);
    let previous = LAST
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
            Some(nanos.max(last + 1))
        })
        .unwrap_or_else(|last| last);
    nanos.max(previous + 1)
}

/// `{name}.{nanos:x}`, or a random UUID when that is no valid object name (a
/// regarding object named `system:node`, or a very long name), as client-go's
/// `GenerateEventName` does.
fn event_name(regarding_name: &str, unix_nanos: u64) -> String {
    let name = format!("{regarding_name}.{unix_nanos:x}");
    if is_dns_subdomain(&name) {
        name
    } else {
        random_uuid()
    }
}

/// A random (version 4) UUID, lowercase with dashes.
fn random_uuid() -> String {
    let bits = rand::random::<u128>() & !(0xf << 76) & !(0x3 << 62) | (0x4 << 76) | (0x2 << 62);
    let hex = format!("{bits:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// An RFC 1123 subdomain, what object names must be: at most 253 characters,
/// dot-separated labels of lowercase letters, digits and `-` that start and end with
/// a letter or digit.
fn is_dns_subdomain(name: &str) -> bool {
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes
                .iter()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-'
    };
    name.len() <= 253 && name.split('.').all(label_ok)
}

/// A Kubernetes qualified name (`[prefix/]name`), what `reportingController` must be:
/// the name at most 63 characters of letters, digits, `-`, `_` and `.` that start and
/// end with a letter or digit; the prefix a DNS subdomain.
fn is_qualified_name(value: &str) -> bool {
    let (prefix, name) = match value.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, value),
    };
    let bytes = name.as_bytes();
    let name_ok = !bytes.is_empty()
        && bytes.len() <= 63
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric();
    name_ok && prefix.is_none_or(is_dns_subdomain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::spec::EventType;

    fn regarding(namespace: Option<&str>, name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
            namespace: namespace.map(Into::into),
            name: Some(name.into()),
            uid: Some("u-1".into()),
            ..ObjectReference::default()
        }
    }

    fn reporter() -> Reporter {
        Reporter::with_instance("backup-operator", "backup-operator-pod-1")
    }

    #[test]
    fn make_event_fills_every_field_client_go_does() {
        let now: Timestamp = "2026-01-02T03:04:05.123456Z".parse().unwrap();
        let spec = EventSpec::warning("Failed", "Backup")
            .note("bucket gone")
            .related(regarding(Some("prod"), "job"));
        let event = make_event(
            &reporter(),
            &regarding(Some("prod"), "web"),
            spec,
            now,
            "default",
        );
        let name = event.metadata.name.unwrap();
        let suffix = name.strip_prefix("web.").expect("named after the object");
        let nanos = u64::try_from(now.as_nanosecond()).unwrap();
        assert!(u64::from_str_radix(suffix, 16).unwrap() >= nanos);
        assert_eq!(event.metadata.namespace.as_deref(), Some("prod"));
        assert_eq!(event.event_time, Some(MicroTime(now)));
        assert_eq!(
            event.reporting_controller.as_deref(),
            Some("backup-operator")
        );
        assert_eq!(
            event.reporting_instance.as_deref(),
            Some("backup-operator-pod-1")
        );
        assert_eq!(event.type_.as_deref(), Some(EventType::Warning.as_str()));
        assert_eq!(event.reason.as_deref(), Some("Failed"));
        assert_eq!(event.action.as_deref(), Some("Backup"));
        assert_eq!(event.note.as_deref(), Some("bucket gone"));
        assert_eq!(event.regarding, Some(regarding(Some("prod"), "web")));
        assert_eq!(event.related, Some(regarding(Some("prod"), "job")));
        assert_eq!(event.series, None);
    }

    #[test]
    fn a_cluster_scoped_object_gets_its_events_in_the_cluster_namespace() {
        let make = |namespace: Option<&str>| {
            let object = regarding(namespace, "node-1");
            let spec = EventSpec::normal("Ready", "Check");
            make_event(&reporter(), &object, spec, Timestamp::now(), "default")
        };
        assert_eq!(make(None).metadata.namespace.as_deref(), Some("default"));
        assert_eq!(
            make(Some("")).metadata.namespace.as_deref(),
            Some("default")
        );
        assert_eq!(make(Some("ns")).metadata.namespace.as_deref(), Some("ns"));
    }

    #[test]
    fn names_are_unique_even_in_the_same_nanosecond() {
        let now = Timestamp::now();
        let names: std::collections::HashSet<_> = (0..100)
            .map(|_| {
                make_event(
                    &reporter(),
                    &regarding(None, "n"),
                    EventSpec::normal("R", "A"),
                    now,
                    "d",
                )
                .metadata
                .name
                .unwrap()
            })
            .collect();
        assert_eq!(names.len(), 100);
    }

    #[test]
    fn an_object_name_that_makes_no_valid_event_name_gets_a_uuid() {
        let name = event_name("system:node", 42);
        assert_eq!(name.len(), 36);
        assert!(is_dns_subdomain(&name), "{name}");
        assert_eq!(&name[14..15], "4", "version 4: {name}");
        assert_eq!(event_name("web", 255), "web.ff");
        assert_eq!(event_name(&"a".repeat(250), 255).len(), 253);
        assert_eq!(event_name(&"a".repeat(251), 255).len(), 36);
    }

    #[test]
    fn name_rules_match_the_api_server() {
        assert!(is_dns_subdomain("a.b-c.0"));
        for bad in ["", "A", "a..b", "-a", "a-", "a_b", &"a".repeat(254)] {
            assert!(!is_dns_subdomain(bad), "{bad}");
        }
        for good in ["backup-operator", "Backup_Op.1", "example.com/backup", "k"] {
            assert!(is_qualified_name(good), "{good}");
        }
        for bad in ["", "-a", "a b", "Ex.com/x", "example.com/", &"a".repeat(64)] {
            assert!(!is_qualified_name(bad), "{bad}");
        }
    }

    #[test]
    fn validate_rejects_what_the_server_would_and_cuts_long_notes() {
        let ok = EventSpec::normal("Reason", "Action");
        let object = regarding(Some("ns"), "web");
        let field = |result: Result<EventSpec, EventError>| match result {
            Err(EventError::Invalid { field, .. }) => field,
            other => panic!("expected Invalid, got {other:?}"),
        };
        assert_eq!(
            field(validate(
                &Reporter::with_instance("", "i"),
                &object,
                ok.clone()
            )),
            "reportingController"
        );
        assert_eq!(
            field(validate(
                &Reporter::with_instance("c", ""),
                &object,
                ok.clone()
            )),
            "reportingInstance"
        );
        let no_reason = EventSpec::normal("", "Action");
        assert_eq!(field(validate(&reporter(), &object, no_reason)), "reason");
        let long_action = EventSpec::normal("R", "a".repeat(129));
        assert_eq!(field(validate(&reporter(), &object, long_action)), "action");
        let nameless = ObjectReference::default();
        assert_eq!(
            field(validate(&reporter(), &nameless, ok.clone())),
            "regarding.name"
        );
        let long_note = ok.note("n".repeat(5000));
        let valid = validate(&reporter(), &object, long_note).unwrap();
        assert_eq!(valid.note.unwrap().len(), NOTE_LIMIT);
    }
}
