//! What a check found: [`ConsistencyReport`], with each [`Difference`] named by key.

use std::fmt;

use crate::key::ObjectKey;

/// What one consistency check found ([`SharedIndexInformer::verify`](crate::shared_informer::SharedIndexInformer::verify)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConsistencyReport {
    /// The resource checked, as `kubectl` names it (`configmaps`, `deployments.apps`).
    pub resource: String,
    /// The resourceVersion at which cache and server were compared.
    pub resource_version: String,
    /// Whether the cache held exactly the server's collection there.
    pub consistent: bool,
    /// Objects the cache held there.
    pub cached: usize,
    /// Objects the server listed there.
    pub listed: usize,
    /// How the cache differed, key by key, at [`keyed_at`](Self::keyed_at). Empty when
    /// consistent, and, rarely, when the difference the digests showed was gone by the
    /// time of the keyed comparison (a later change replaced the object).
    pub differences: Vec<Difference>,
    /// The resourceVersion of the keyed comparison that named the differences: a check
    /// whose digests differ compares again, key by key, at the cache's point then.
    pub keyed_at: Option<String>,
    /// The list requests the check made (every page of every list).
    pub requests: usize,
}

impl ConsistencyReport {
    /// How many differences of `kind` the report names.
    pub fn count(&self, kind: DifferenceKind) -> usize {
        self.differences.iter().filter(|d| d.kind == kind).count()
    }
}

impl fmt::Display for ConsistencyReport {
    /// One line: `configmaps at 1234: consistent (500 objects)`, or the differences
    /// by kind and key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (resource, version) = (&self.resource, &self.resource_version);
        if self.consistent {
            return write!(
                f,
                "{resource} at {version}: consistent ({} objects)",
                self.cached
            );
        }
        write!(
            f,
            "{resource} at {version}: the cache holds {} objects, the server {}",
            self.cached, self.listed
        )?;
        if self.differences.is_empty() {
            return match &self.keyed_at {
                Some(keyed) => write!(f, "; no difference left at {keyed}"),
                None => Ok(()),
            };
        }
        let counts: Vec<String> = DifferenceKind::ALL
            .iter()
            .map(|&kind| (kind, self.count(kind)))
            .filter(|(_, count)| *count > 0)
            .map(|(kind, count)| format!("{count} {kind}"))
            .collect();
        write!(f, "; {}", counts.join(", "))
    }
}

/// One object on which cache and server disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Difference {
    /// `namespace/name`.
    pub key: ObjectKey,
    /// How they disagree.
    pub kind: DifferenceKind,
    /// The cached object's resourceVersion (`None`: not cached).
    pub cached: Option<String>,
    /// The server's (`None`: not listed).
    pub listed: Option<String>,
}

impl Difference {
    pub(crate) fn new(
        key: ObjectKey,
        kind: DifferenceKind,
        cached: Option<String>,
        listed: Option<String>,
    ) -> Self {
        Self {
            key,
            kind,
            cached,
            listed,
        }
    }
}

impl fmt::Display for Difference {
    /// `ns/a missing (server 12)`, `ns/b extra (cache 10)`,
    /// `ns/c older (cache 10, server 12)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let version = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        write!(f, "{} {}", self.key, self.kind)?;
        match self.kind {
            DifferenceKind::Missing => write!(f, " (server {})", version(&self.listed)),
            DifferenceKind::Extra => write!(f, " (cache {})", version(&self.cached)),
            DifferenceKind::Older | DifferenceKind::Newer => write!(
                f,
                " (cache {}, server {})",
                version(&self.cached),
                version(&self.listed)
            ),
        }
    }
}

/// How the cache and the server disagree on one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum DifferenceKind {
    /// The server has it; the cache does not.
    Missing,
    /// The cache has it; the server does not.
    Extra,
    /// Both have it, the cache an older version (or an earlier object of the same
    /// name, or a version that does not compare).
    Older,
    /// Both have it, the cache a newer version than the server had.
    Newer,
}

impl DifferenceKind {
    /// Every kind, in the order reports give them.
    pub const ALL: [DifferenceKind; 4] = [Self::Missing, Self::Extra, Self::Older, Self::Newer];

    /// `missing`, `extra`, `older`, `newer`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Extra => "extra",
            Self::Older => "older",
            Self::Newer => "newer",
        }
    }
}

impl fmt::Display for DifferenceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_reads_in_one_line() {
        let mut report = ConsistencyReport {
            resource: "configmaps".into(),
            resource_version: "40".into(),
            consistent: true,
            cached: 3,
            listed: 3,
            differences: Vec::new(),
            keyed_at: None,
            requests: 1,
        };
        assert_eq!(
            report.to_string(),
            "configmaps at 40: consistent (3 objects)"
        );
        report.consistent = false;
        report.listed = 4;
        report.keyed_at = Some("41".into());
        report.differences = vec![
            Difference::new(
                ObjectKey::namespaced("ns", "a"),
                DifferenceKind::Missing,
                None,
                Some("12".into()),
            ),
            Difference::new(
                ObjectKey::namespaced("ns", "c"),
                DifferenceKind::Older,
                Some("10".into()),
                Some("12".into()),
            ),
        ];
        assert_eq!(
            report.to_string(),
            "configmaps at 40: the cache holds 3 objects, the server 4; 1 missing, 1 older"
        );
        assert_eq!(
            report.differences[0].to_string(),
            "ns/a missing (server 12)"
        );
        assert_eq!(
            report.differences[1].to_string(),
            "ns/c older (cache 10, server 12)"
        );
    }
}
