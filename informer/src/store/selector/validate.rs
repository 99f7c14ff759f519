//! Validation of label keys and values: apimachinery's `IsQualifiedName` and
//! `IsValidLabelValue`.
//!
//! Every [`Requirement`](super::Requirement) goes through these checks when it is
//! built, whichever way it is built (the string grammar, a `metav1.LabelSelector` or the
//! builders), so no selector holds a key or value that apimachinery would refuse.

use super::error::SelectorError;

const NAME_MAX: usize = 63;
const PREFIX_MAX: usize = 253;

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, at most 63 characters.
fn check_name(s: &str) -> Result<(), &'static str> {
    let b = s.as_bytes();
    if b.is_empty() {
        return Err("name part must be non-empty");
    }
    if b.len() > NAME_MAX {
        return Err("name part must be no more than 63 characters");
    }
    if !b[0].is_ascii_alphanumeric()
        || !b[b.len() - 1].is_ascii_alphanumeric()
        || !b.iter().copied().all(is_name_char)
    {
        return Err(
            "name part must consist of alphanumerics, '-', '_' or '.', and start and end with an alphanumeric",
        );
    }
    Ok(())
}

/// A DNS-1123 subdomain: dot-separated lowercase labels, at most 253 characters.
fn check_prefix(s: &str) -> Result<(), &'static str> {
    const MSG: &str = "prefix must be a DNS-1123 subdomain (lowercase alphanumerics, '-' and '.')";
    if s.is_empty() || s.len() > PREFIX_MAX {
        return Err("prefix must be 1 to 253 characters");
    }
    for label in s.split('.') {
        let b = label.as_bytes();
        let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        if b.is_empty()
            || !alnum(b[0])
            || !alnum(b[b.len() - 1])
            || !b.iter().all(|&c| alnum(c) || c == b'-')
        {
            return Err(MSG);
        }
    }
    Ok(())
}

/// A label key: a qualified name, `[prefix/]name`.
pub(super) fn validate_key(key: &str) -> Result<(), SelectorError> {
    let checked = match key.split_once('/') {
        Some((prefix, name)) => check_prefix(prefix).and_then(|()| {
            if name.contains('/') {
                Err("a qualified name has at most one '/'")
            } else {
                check_name(name)
            }
        }),
        None => check_name(key),
    };
    checked.map_err(|reason| SelectorError::InvalidKey {
        key: key.to_owned(),
        reason,
    })
}

/// A label value: empty, or a name part of at most 63 characters.
pub(super) fn validate_value(key: &str, value: &str) -> Result<(), SelectorError> {
    if value.is_empty() {
        return Ok(());
    }
    check_name(value).map_err(|reason| SelectorError::InvalidValue {
        key: key.to_owned(),
        value: value.to_owned(),
        reason: if value.len() > NAME_MAX {
            "must be no more than 63 characters"
        } else {
            reason
        },
    })
}
