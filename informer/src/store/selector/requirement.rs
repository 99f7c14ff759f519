//! One [`Requirement`] of a selector on a label, with its [`Operator`]: how it is
//! built (validated), matched and written.

use std::{collections::BTreeMap, fmt};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

use super::error::SelectorError;
use super::operator::Operator;
use super::validate::{validate_key, validate_value};
use crate::object::{Meta, Object};

/// The labels of an object without labels.
pub(super) static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

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
    pub fn matches_object<K: Object>(&self, obj: &K) -> bool {
        self.matches(obj.metadata().labels().unwrap_or(&NO_LABELS))
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
