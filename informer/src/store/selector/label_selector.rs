//! [`Selector`]: the conjunction of requirements, apimachinery's `labels.Selector`,
//! parsed from the API server's grammar or converted from a `metav1.LabelSelector`.

use std::{collections::BTreeMap, fmt, str::FromStr};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::error::SelectorError;
use super::operator::Operator;
use super::parse::Parser;
use super::requirement::{NO_LABELS, Requirement};
use crate::object::{Meta, Object};

/// A label selector: the conjunction of its requirements. The empty selector matches
/// everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Selector {
    /// Sorted by key (stable).
    requirements: Vec<Requirement>,
}

impl Selector {
    /// The selector that matches every object.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Parses the API server's selector grammar, e.g.
    /// `app=web,tier!=db,env in (a,b),env notin (c),!legacy,has,replicas>2`.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        Parser::new(selector).parse().map(Selector::from_iter)
    }

    /// `key=value` for every pair (a `matchLabels` map).
    pub fn from_labels<I, KS, VS>(labels: I) -> Result<Self, SelectorError>
    where
        I: IntoIterator<Item = (KS, VS)>,
        KS: Into<String>,
        VS: Into<String>,
    {
        labels
            .into_iter()
            .map(|(k, v)| Requirement::equals(k, v))
            .collect()
    }

    /// This selector and `requirement`.
    #[must_use]
    pub fn and(mut self, requirement: Requirement) -> Self {
        let at = self
            .requirements
            .partition_point(|r| r.key() <= requirement.key());
        self.requirements.insert(at, requirement);
        self
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether this selector matches everything.
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The single value label `label` must have, if the selector demands one
    /// (apimachinery's `RequiresExactMatch`).
    pub fn requires_exact_match(&self, label: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key() == label)?;
        match (r.operator(), r.values()) {
            (Operator::Equals | Operator::In, [value]) => Some(value),
            _ => None,
        }
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether the labels of `obj` satisfy every requirement.
    pub fn matches_object<K: Object>(&self, obj: &K) -> bool {
        self.is_everything() || self.matches(obj.metadata().labels().unwrap_or(&NO_LABELS))
    }
}

impl FromIterator<Requirement> for Selector {
    fn from_iter<T: IntoIterator<Item = Requirement>>(iter: T) -> Self {
        let mut requirements: Vec<Requirement> = iter.into_iter().collect();
        requirements.sort_by(|a, b| a.key().cmp(b.key()));
        Self { requirements }
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            r.fmt(f)?;
        }
        Ok(())
    }
}

impl FromStr for Selector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl TryFrom<&LabelSelector> for Selector {
    type Error = SelectorError;

    /// apimachinery's `LabelSelectorAsSelector` for a present selector: `matchLabels` and
    /// `matchExpressions` combined; an empty selector matches everything.
    fn try_from(selector: &LabelSelector) -> Result<Self, Self::Error> {
        let labels = selector.match_labels.iter().flatten();
        let mut requirements = labels
            .map(|(k, v)| Requirement::equals(k.clone(), v.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        for expr in selector.match_expressions.iter().flatten() {
            requirements.push(Requirement::try_from(expr)?);
        }
        Ok(requirements.into_iter().collect())
    }
}

impl TryFrom<LabelSelector> for Selector {
    type Error = SelectorError;

    fn try_from(selector: LabelSelector) -> Result<Self, Self::Error> {
        Self::try_from(&selector)
    }
}
