//! [`SelectorError`]: why a selector or requirement is invalid.

use super::operator::Operator;

/// Why a selector or requirement is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
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
