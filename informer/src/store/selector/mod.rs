//! Label selectors, as the API server understands them.
//!
//! A [`Selector`] is a conjunction of [`Requirement`]s on an object's labels, exactly
//! apimachinery's `labels.Selector`:
//!
//! - equality-based: `app=web`, `app==web`, `tier!=db`;
//! - set-based: `env in (a,b)`, `env notin (c)`, `has` (the label exists), `!legacy`
//!   (it does not);
//! - numeric: `replicas>2`, `replicas<5` (the label's value parsed as an integer).
//!
//! It is built from the API server's string grammar ([`Selector::parse`], [`FromStr`]),
//! from a `metav1.LabelSelector` (`matchLabels` plus `matchExpressions`, via
//! [`TryFrom`]), or from requirements. Its [`Display`](fmt::Display) form is the
//! canonical string (requirements sorted by key, values sorted), which parses back to
//! the same selector and can be sent as a list call's `labelSelector`.
//!
//! The store answers selectors with an equality or `in` requirement on a label that has
//! a [`LabelIndex`](super::LabelIndex) from that index instead of scanning
//! ([`Indexer::select`](super::Indexer::select)).
//!
//! ```
//! use std::collections::BTreeMap;
//! use informer::store::Selector;
//!
//! let sel: Selector = "app=web,tier!=db,env in (a,b),!legacy,has".parse().unwrap();
//! let labels: BTreeMap<String, String> =
//!     [("app", "web"), ("env", "a"), ("has", "")].map(|(k, v)| (k.into(), v.into())).into();
//! assert!(sel.matches(&labels));
//! assert_eq!(sel.to_string(), "app=web,env in (a,b),has,!legacy,tier!=db");
//! ```

use std::{collections::BTreeMap, fmt, str::FromStr};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::Resource;

mod parse;
mod validate;

use parse::Parser;
use validate::{validate_key, validate_value};

/// Why a selector or requirement is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A label key is not a valid qualified name (`[prefix/]name`).
    #[error("invalid label key {key:?}: {reason}")]
    InvalidKey {
        /// The offending key.
        key: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A label value is not valid (63 characters at most, alphanumerics, `-`, `_`, `.`).
    #[error("invalid value {value:?} for label {key:?}: {reason}")]
    InvalidValue {
        /// The label key.
        key: String,
        /// The offending value.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The operator takes a different number of values.
    #[error("operator {operator} on label {key:?} takes {expected}, got {got} value(s)")]
    ValueCount {
        /// The label key.
        key: String,
        /// The operator.
        operator: Operator,
        /// What the operator takes.
        expected: &'static str,
        /// How many values were given.
        got: usize,
    },
    /// A `matchExpressions` operator other than `In`, `NotIn`, `Exists`, `DoesNotExist`.
    #[error("{0:?} is not a valid label selector operator")]
    UnknownOperator(String),
    /// The selector string does not follow the grammar.
    #[error("cannot parse label selector at byte {position}: {message}")]
    Syntax {
        /// Byte offset of the offending token.
        position: usize,
        /// What was expected.
        message: String,
    },
}

/// The labels of an object without labels.
static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// How a [`Requirement`] relates a label to its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key=value` or `key==value`: the label exists and equals the value.
    Equals,
    /// `key!=value`: the label is absent or differs from the value.
    NotEquals,
    /// `key in (a,b)`: the label exists and is one of the values.
    In,
    /// `key notin (a,b)`: the label is absent or none of the values.
    NotIn,
    /// `key`: the label exists.
    Exists,
    /// `!key`: the label does not exist.
    DoesNotExist,
    /// `key>n`: the label's value is an integer greater than `n`.
    GreaterThan,
    /// `key<n`: the label's value is an integer less than `n`.
    LessThan,
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operator::Equals => "=",
            Operator::NotEquals => "!=",
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        })
    }
}

/// One condition on one label.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted and without duplicates.
    values: Vec<String>,
    /// The bound of `>` and `<`.
    bound: i64,
}

impl Requirement {
    /// A validated requirement (apimachinery's `NewRequirement`): `In`/`NotIn` take one
    /// or more values, `Equals`/`NotEquals` exactly one, `Exists`/`DoesNotExist` none,
    /// `GreaterThan`/`LessThan` one integer.
    pub fn new<I>(
        key: impl Into<String>,
        operator: Operator,
        values: I,
    ) -> Result<Self, SelectorError>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let key = key.into();
        validate_key(&key)?;
        let mut values: Vec<String> = values.into_iter().map(Into::into).collect();
        let (ok, expected) = match operator {
            Operator::In | Operator::NotIn => (!values.is_empty(), "one or more values"),
            Operator::Equals | Operator::NotEquals => (values.len() == 1, "exactly one value"),
            Operator::Exists | Operator::DoesNotExist => (values.is_empty(), "no values"),
            Operator::GreaterThan | Operator::LessThan => (values.len() == 1, "one integer"),
        };
        if !ok {
            return Err(SelectorError::ValueCount {
                key,
                operator,
                expected,
                got: values.len(),
            });
        }
        for value in &values {
            validate_value(&key, value)?;
        }
        let mut bound = 0;
        if matches!(operator, Operator::GreaterThan | Operator::LessThan) {
            bound = values[0].parse().map_err(|_| SelectorError::InvalidValue {
                key: key.clone(),
                value: values[0].clone(),
                reason: "operators > and < need an integer",
            })?;
        }
        values.sort_unstable();
        values.dedup();
        Ok(Self {
            key,
            operator,
            values,
            bound,
        })
    }

    /// `key=value`.
    pub fn equals(key: impl Into<String>, value: impl Into<String>) -> Result<Self, SelectorError> {
        Self::new(key, Operator::Equals, [value.into()])
    }

    /// `key!=value`.
    pub fn not_equals(
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Result<Self, SelectorError> {
        Self::new(key, Operator::NotEquals, [value.into()])
    }

    /// `key in (values)`.
    pub fn is_in<I>(key: impl Into<String>, values: I) -> Result<Self, SelectorError>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        Self::new(key, Operator::In, values)
    }

    /// `key notin (values)`.
    pub fn not_in<I>(key: impl Into<String>, values: I) -> Result<Self, SelectorError>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        Self::new(key, Operator::NotIn, values)
    }

    /// `key` (the label exists).
    pub fn exists(key: impl Into<String>) -> Result<Self, SelectorError> {
        Self::new(key, Operator::Exists, [] as [String; 0])
    }

    /// `!key` (the label does not exist).
    pub fn does_not_exist(key: impl Into<String>) -> Result<Self, SelectorError> {
        Self::new(key, Operator::DoesNotExist, [] as [String; 0])
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, sorted, without duplicates.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether `labels` satisfy this requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::Equals | Operator::In => value.is_some_and(|v| self.has_value(v)),
            Operator::NotEquals | Operator::NotIn => !value.is_some_and(|v| self.has_value(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan => value
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > self.bound),
            Operator::LessThan => value
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < self.bound),
        }
    }

    /// Whether the labels of `obj` satisfy this requirement.
    pub fn matches_object<K: Resource>(&self, obj: &K) -> bool {
        self.matches(obj.meta().labels.as_ref().unwrap_or(&NO_LABELS))
    }

    fn has_value(&self, value: &str) -> bool {
        match self.values.as_slice() {
            [only] => only == value,
            values => values.binary_search_by(|v| v.as_str().cmp(value)).is_ok(),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = &self.key;
        match self.operator {
            Operator::Exists => write!(f, "{key}"),
            Operator::DoesNotExist => write!(f, "!{key}"),
            Operator::Equals => write!(f, "{key}={}", self.values[0]),
            Operator::NotEquals => write!(f, "{key}!={}", self.values[0]),
            Operator::GreaterThan => write!(f, "{key}>{}", self.values[0]),
            Operator::LessThan => write!(f, "{key}<{}", self.values[0]),
            Operator::In => write!(f, "{key} in ({})", self.values.join(",")),
            Operator::NotIn => write!(f, "{key} notin ({})", self.values.join(",")),
        }
    }
}

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
        Parser::new(selector).parse()
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
            .partition_point(|r| r.key <= requirement.key);
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
        let r = self.requirements.iter().find(|r| r.key == label)?;
        match (r.operator, r.values.as_slice()) {
            (Operator::Equals | Operator::In, [value]) => Some(value),
            _ => None,
        }
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether the labels of `obj` satisfy every requirement.
    pub fn matches_object<K: Resource>(&self, obj: &K) -> bool {
        self.is_everything() || self.matches(obj.meta().labels.as_ref().unwrap_or(&NO_LABELS))
    }
}

impl FromIterator<Requirement> for Selector {
    fn from_iter<T: IntoIterator<Item = Requirement>>(iter: T) -> Self {
        let mut requirements: Vec<Requirement> = iter.into_iter().collect();
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
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

impl TryFrom<&LabelSelectorRequirement> for Requirement {
    type Error = SelectorError;

    /// One `matchExpressions` entry; operators are `In`, `NotIn`, `Exists`, `DoesNotExist`.
    fn try_from(expr: &LabelSelectorRequirement) -> Result<Self, Self::Error> {
        let operator = match expr.operator.as_str() {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            other => return Err(SelectorError::UnknownOperator(other.to_owned())),
        };
        Requirement::new(
            expr.key.clone(),
            operator,
            expr.values.iter().flatten().cloned(),
        )
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    /// A label map from pairs (also used by the parser's tests).
    pub(super) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn matches_like_apimachinery() {
        let sel = Selector::parse("app=web,tier!=db,env in (a,b),!legacy,has").unwrap();
        assert!(sel.matches(&labels(&[("app", "web"), ("env", "b"), ("has", "")])));
        assert!(sel.matches(&labels(&[
            ("app", "web"),
            ("env", "a"),
            ("has", "1"),
            ("tier", "fe")
        ])));
        assert!(!sel.matches(&labels(&[
            ("app", "web"),
            ("env", "a"),
            ("has", ""),
            ("tier", "db")
        ])));
        assert!(!sel.matches(&labels(&[("app", "web"), ("env", "c"), ("has", "")])));
        assert!(!sel.matches(&labels(&[("app", "web"), ("env", "a")])));
        assert!(!sel.matches(&labels(&[
            ("app", "web"),
            ("env", "a"),
            ("has", ""),
            ("legacy", "")
        ])));
        let notin = Selector::parse("env notin (a)").unwrap();
        assert!(notin.matches(&labels(&[])), "notin matches an absent label");
        let num = Selector::parse("n>2,m<5").unwrap();
        assert!(num.matches(&labels(&[("n", "3"), ("m", "4")])));
        assert!(!num.matches(&labels(&[("n", "2"), ("m", "4")])));
        assert!(!num.matches(&labels(&[("n", "x"), ("m", "4")])));
        assert!(Selector::everything().matches(&labels(&[])));
    }

    #[test]
    fn display_is_canonical_and_parses_back() {
        for s in [
            "a=b,c notin (x,y),m<10,n>3",
            "app in (a,b,c),b!=,!x",
            "example.com/k=v",
        ] {
            let sel = Selector::parse(s).unwrap();
            assert_eq!(sel.to_string(), s);
            assert_eq!(Selector::parse(&sel.to_string()).unwrap(), sel);
        }
        assert_eq!(
            Selector::parse("b in (z,y,y),a==1").unwrap().to_string(),
            "a=1,b in (y,z)"
        );
    }

    #[test]
    fn converts_from_k8s_label_selector() {
        let ls = LabelSelector {
            match_labels: Some(labels(&[("app", "web")])),
            match_expressions: Some(vec![
                LabelSelectorRequirement {
                    key: "env".into(),
                    operator: "In".into(),
                    values: Some(vec!["a".into(), "b".into()]),
                },
                LabelSelectorRequirement {
                    key: "legacy".into(),
                    operator: "DoesNotExist".into(),
                    values: None,
                },
            ]),
        };
        let sel = Selector::try_from(&ls).unwrap();
        assert_eq!(
            sel,
            Selector::parse("app=web,env in (a,b),!legacy").unwrap()
        );
        assert_eq!(
            Selector::try_from(LabelSelector::default()).unwrap(),
            Selector::everything()
        );
        let bad_op = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: "in".into(),
                values: Some(vec!["x".into()]),
            }]),
            ..Default::default()
        };
        assert_eq!(
            Selector::try_from(&bad_op),
            Err(SelectorError::UnknownOperator("in".into()))
        );
        let empty_in = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: "In".into(),
                values: Some(vec![]),
            }]),
            ..Default::default()
        };
        assert!(matches!(
            Selector::try_from(&empty_in),
            Err(SelectorError::ValueCount { .. })
        ));
    }

    #[test]
    fn builders_and_object_matching() {
        let sel = Selector::from_labels([("app", "web")])
            .unwrap()
            .and(Requirement::is_in("env", ["b", "a"]).unwrap())
            .and(Requirement::does_not_exist("legacy").unwrap())
            .and(Requirement::not_equals("tier", "db").unwrap())
            .and(Requirement::exists("has").unwrap())
            .and(Requirement::not_in("zone", ["z"]).unwrap());
        assert_eq!(
            sel.to_string(),
            "app=web,env in (a,b),has,!legacy,tier!=db,zone notin (z)"
        );
        assert_eq!(sel.requires_exact_match("app"), Some("web"));
        assert_eq!(sel.requires_exact_match("env"), None);
        let mut cm = ConfigMap {
            metadata: ObjectMeta {
                labels: Some(labels(&[("app", "web"), ("env", "a"), ("has", "")])),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(sel.matches_object(&cm));
        cm.metadata.labels = None;
        assert!(!sel.matches_object(&cm));
        assert!(Selector::everything().matches_object(&cm));
        assert!(Requirement::new("a", Operator::Equals, ["x", "y"]).is_err());
        assert!(Requirement::new("a", Operator::Exists, ["x"]).is_err());
        assert!(Requirement::new("a", Operator::GreaterThan, ["x"]).is_err());
    }
}
