//! [`Operator`]: how a requirement relates a label to its values.

use std::fmt;

/// How a [`Requirement`](super::Requirement) relates a label to its values.
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
