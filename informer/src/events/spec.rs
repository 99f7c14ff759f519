//! What an event says: who reports it ([`Reporter`]), its [`EventType`], and the
//! [`EventSpec`] a caller publishes about an object.

use std::fmt;

use k8s_openapi::api::core::v1::ObjectReference;

/// The most bytes the API server accepts in `reportingInstance`.
pub(super) const INSTANCE_LIMIT: usize = 128;

/// Who reports events: an Event's `reportingController` and `reportingInstance`.
///
/// client-go's `NewRecorder(scheme, reportingController)` uses
/// `{reportingController}-{hostname}` as the instance; [`Reporter::new`] does the
/// same. In a pod the hostname is the pod's name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reporter {
    /// The controller's name (`reportingController`), e.g. `backup-operator` or
    /// `example.com/backup-operator`: a qualified name, as the API server requires.
    pub controller: String,
    /// This replica of the controller (`reportingInstance`), e.g. the pod's name; at
    /// most 128 bytes.
    pub instance: String,
}

impl Reporter {
    /// A reporter named `controller`, with the instance `{controller}-{hostname}`
    /// (cut to the API server's 128 bytes), as client-go's recorder does. The hostname
    /// is `$HOSTNAME` when set (the pod's name in a pod), else the kernel's hostname,
    /// else `unknown`.
    pub fn new(controller: impl Into<String>) -> Self {
        let controller = controller.into();
        let instance = truncate(format!("{controller}-{}", hostname()), INSTANCE_LIMIT);
        Self {
            controller,
            instance,
        }
    }

    /// A reporter with an explicit instance (e.g. from the downward API's pod name).
    pub fn with_instance(controller: impl Into<String>, instance: impl Into<String>) -> Self {
        Self {
            controller: controller.into(),
            instance: instance.into(),
        }
    }
}

impl From<&str> for Reporter {
    fn from(controller: &str) -> Self {
        Self::new(controller)
    }
}

impl From<String> for Reporter {
    fn from(controller: String) -> Self {
        Self::new(controller)
    }
}

/// This machine's hostname: `$HOSTNAME`, else the kernel's, else `unknown`.
fn hostname() -> String {
    let from_env = std::env::var("HOSTNAME").ok();
    let from_kernel = || {
        ["/proc/sys/kernel/hostname", "/etc/hostname"]
            .iter()
            .find_map(|path| std::fs::read_to_string(path).ok())
    };
    from_env
        .or_else(from_kernel)
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Cuts `text` to at most `limit` bytes, at a character boundary.
pub(super) fn truncate(mut text: String, limit: usize) -> String {
    if text.len() > limit {
        let mut end = limit;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// An Event's `type`: the two the API server accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something expected happened (`Normal`).
    Normal,
    /// Something may need a human's attention (`Warning`).
    Warning,
}

impl EventType {
    /// The name the API uses: `Normal` or `Warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happened, as a caller publishes it: the recorder adds the regarding object,
/// the reporter, a name and the time.
///
/// ```
/// use informer::events::{EventSpec, EventType};
///
/// let spec = EventSpec::warning("BackupFailed", "Backup").note("bucket unreachable");
/// assert_eq!(spec.event_type, EventType::Warning);
/// assert_eq!(spec.note.as_deref(), Some("bucket unreachable"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct EventSpec {
    /// `Normal` or `Warning`.
    pub event_type: EventType,
    /// Why the action was taken, machine-readable and UpperCamelCase by convention
    /// (`reason`, e.g. `BackupFailed`); required, at most 128 bytes.
    pub reason: String,
    /// What was done or failed (`action`, e.g. `Backup`); required, at most 128 bytes.
    pub action: String,
    /// A human-readable description (`note`). The API server takes at most 1 kB: a
    /// longer note is cut to that.
    pub note: Option<String>,
    /// A second object the action concerns (`related`), e.g. the Pod a Job created.
    pub related: Option<ObjectReference>,
}

impl EventSpec {
    /// An event of `event_type` with a reason and an action, no note, nothing related.
    pub fn new(
        event_type: EventType,
        reason: impl Into<String>,
        action: impl Into<String>,
    ) -> Self {
        Self {
            event_type,
            reason: reason.into(),
            action: action.into(),
            note: None,
            related: None,
        }
    }

    /// A `Normal` event.
    pub fn normal(reason: impl Into<String>, action: impl Into<String>) -> Self {
        Self::new(EventType::Normal, reason, action)
    }

    /// A `Warning` event.
    pub fn warning(reason: impl Into<String>, action: impl Into<String>) -> Self {
        Self::new(EventType::Warning, reason, action)
    }

    /// Sets the human-readable note.
    #[must_use]
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }

    /// Sets the related object.
    #[must_use]
    pub fn related(mut self, related: ObjectReference) -> Self {
        self.related = Some(related);
        self
    }
}

/// A reference to `object` for an Event's `regarding` or `related`: its apiVersion,
/// kind, namespace, name and uid (kube's
/// [`Resource::object_ref`](kube::Resource::object_ref), client-go's
/// `reference.GetReference` without the resourceVersion, so events about an object
/// that changes between them still fold into one series).
///
/// For a dynamic type, call `object.object_ref(&dynamic_type)` yourself.
pub fn object_reference<K>(object: &K) -> ObjectReference
where
    K: kube::Resource<DynamicType = ()>,
{
    object.object_ref(&())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    #[test]
    fn reporter_new_appends_the_hostname_within_the_instance_limit() {
        let reporter = Reporter::new("backup-operator");
        assert_eq!(reporter.controller, "backup-operator");
        assert!(reporter.instance.starts_with("backup-operator-"));
        assert!(reporter.instance.len() > "backup-operator-".len());
        let long = Reporter::new("x".repeat(300));
        assert_eq!(long.instance.len(), INSTANCE_LIMIT);
        assert_eq!(
            Reporter::with_instance("c", "pod-1"),
            Reporter {
                controller: "c".into(),
                instance: "pod-1".into()
            }
        );
    }

    #[test]
    fn truncate_cuts_at_a_char_boundary() {
        assert_eq!(truncate("abc".into(), 5), "abc");
        assert_eq!(truncate("abcdef".into(), 3), "abc");
        // 'é' is two bytes: cutting at 2 would split it.
        assert_eq!(truncate("aé".into(), 2), "a");
    }

    #[test]
    fn object_reference_names_the_object_without_its_resource_version() {
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "web", "namespace": "prod", "uid": "u-1", "resourceVersion": "7" }
        }))
        .unwrap();
        let reference = object_reference(&cm);
        assert_eq!(reference.api_version.as_deref(), Some("v1"));
        assert_eq!(reference.kind.as_deref(), Some("ConfigMap"));
        assert_eq!(reference.namespace.as_deref(), Some("prod"));
        assert_eq!(reference.name.as_deref(), Some("web"));
        assert_eq!(reference.uid.as_deref(), Some("u-1"));
        assert_eq!(reference.resource_version, None);
    }

    #[test]
    fn event_spec_builders_set_type_note_and_related() {
        let related = ObjectReference {
            name: Some("pod-1".into()),
            ..Default::default()
        };
        let spec = EventSpec::normal("Scaled", "Scale")
            .note("to 3")
            .related(related.clone());
        assert_eq!(spec.event_type, EventType::Normal);
        assert_eq!(
            (spec.reason.as_str(), spec.action.as_str()),
            ("Scaled", "Scale")
        );
        assert_eq!(spec.related, Some(related));
        assert_eq!(EventType::Warning.to_string(), "Warning");
    }
}
