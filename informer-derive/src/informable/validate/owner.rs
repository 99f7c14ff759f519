//! Resolving `owner(...)`: which owner references an owner index reads.
//!
//! An owner is identified by API group and kind, never by kind alone: kinds are
//! unique only within a group (a CRD `CronJob` of ours and the built-in `batch/v1`
//! `CronJob` are different owners, and a Job controlled by the other one is not
//! ours), so a bare `kind` is an error that points to the two ways of saying the
//! group. The version never takes part: an owner reference keeps the version it was
//! written with while its owner is served (and re-versioned) under others.

use std::cell::Cell;

use super::*;
use crate::informable::ast::Owner;

/// The owner references an owner index reads, and how it keys them.
pub(crate) struct OwnerKeys {
    /// Only owners of this group and kind; `None`: any owner (keyed by UID, which is
    /// unique across kinds).
    pub(crate) of: Option<OwnerOf>,
    /// Only the managing controller's reference.
    pub(crate) controller: bool,
    /// Key by the owner's name instead of its UID.
    pub(crate) by_name: bool,
}

/// How an owner's group and kind are known.
pub(crate) enum OwnerOf {
    /// From a Rust type's `kube::Resource` impl, at compile time of the user's crate.
    Type(Type),
    /// Written down: `kind` and the group (`""` for the core group).
    Named {
        /// The API group, without a version.
        group: String,
        /// The kind.
        kind: String,
    },
}

/// Checks `owner(...)`; `None` after a mistake (recorded in `cx`).
pub(super) fn owner(
    cx: &Ctxt,
    container: &Container<'_>,
    owner: &Owner,
    span: Span,
) -> Option<OwnerKeys> {
    let failed = Cell::new(false);
    let fail = |span: Span, message: String| {
        cx.error(span, message);
        failed.set(true);
    };
    let of = if let Some(ty) = &owner.ty {
        let ty_text = type_text(ty);
        for (key, lit) in [
            ("kind", &owner.kind),
            ("group", &owner.group),
            ("api_version", &owner.api_version),
        ] {
            if let Some(lit) = lit {
                fail(
                    lit.span(),
                    format!(
                        "`type = {ty_text}` gives the owner's group and kind already: remove `{key}`"
                    ),
                );
            }
        }
        Some(OwnerOf::Type(ty.clone()))
    } else if let Some(kind) = &owner.kind {
        let group = match (&owner.group, &owner.api_version) {
            (Some(_), Some(api_version)) => {
                fail(
                    api_version.span(),
                    "`group` and `api_version` both give the owner's API group: keep one \
                     (the version never matters)"
                        .into(),
                );
                None
            }
            (Some(group), None) => group_of(cx, group),
            (None, Some(api_version)) => group_of_api_version(cx, api_version),
            (None, None) => {
                fail(kind.span(), kind_without_group(container, owner, kind));
                None
            }
        };
        if kind.value().is_empty() {
            fail(kind.span(), "the owner's kind is empty".into());
        }
        if group.is_none() {
            failed.set(true);
        }
        group.map(|group| OwnerOf::Named {
            group,
            kind: kind.value(),
        })
    } else {
        for (key, lit) in [("group", &owner.group), ("api_version", &owner.api_version)] {
            if let Some(lit) = lit {
                fail(
                    lit.span(),
                    format!(
                        "`{key}` needs the owner's kind beside it: `owner(kind = \"...\", {key} = {})`",
                        quote::ToTokens::to_token_stream(lit)
                    ),
                );
            }
        }
        None
    };
    if owner.by_name && owner.ty.is_none() && owner.kind.is_none() {
        // Names are unique only within one kind: every owner named `web` would share
        // the key `web`.
        fail(
            span,
            "keying by the owner's name (`name`) needs the owner's group and kind, as names \
             are unique only within a kind: add `type = Owner` or \
             `kind = \"...\", group = \"...\"` to `owner(...)`"
                .into(),
        );
    }
    (!failed.get()).then_some(OwnerKeys {
        of,
        controller: owner.controller,
        by_name: owner.by_name,
    })
}

/// What the index reads, for the generated docs.
pub(super) fn describe(keys: &OwnerKeys) -> String {
    let mut describe = String::from("the ");
    if keys.controller {
        describe.push_str("controller ");
    }
    describe.push_str("owner references");
    match &keys.of {
        None => {}
        Some(OwnerOf::Type(ty)) => {
            describe.push_str(&format!(
                " to a `{}` (API group and kind of that type)",
                type_text(ty)
            ));
        }
        Some(OwnerOf::Named { group, kind }) if group.is_empty() => {
            describe.push_str(&format!(" to a `{kind}` of the core API group"));
        }
        Some(OwnerOf::Named { group, kind }) => {
            describe.push_str(&format!(" to a `{kind}` of API group `{group}`"));
        }
    }
    describe.push_str(if keys.by_name {
        " (by owner name)"
    } else {
        " (by owner UID)"
    });
    describe
}

/// The error for `kind` alone, with the two forms that say the group, written out
/// with the same flags. When the kind is the annotated CRD's own, its group is known.
fn kind_without_group(container: &Container<'_>, owner: &Owner, kind: &LitStr) -> String {
    let kind = kind.value();
    let flags: String = [("controller", owner.controller), ("name", owner.by_name)]
        .iter()
        .filter(|(_, on)| *on)
        .map(|(flag, _)| format!(", {flag}"))
        .collect();
    let own_group = container.kube.as_ref().and_then(|kube| {
        let own_kind = kube.kind.as_ref()?.value();
        (own_kind == kind).then(|| kube.group.as_ref().map(LitStr::value))?
    });
    let group = match &own_group {
        Some(group) => format!("group = \"{group}\""),
        None => "group = \"...\"".to_owned(),
    };
    format!(
        "`owner(kind = \"{kind}\")` would match a `{kind}` of any API group, and another \
         group's `{kind}` (a built-in one, another operator's) is another owner whose \
         children would be indexed as yours: name the group too. Did you mean \
         `owner(type = {kind}{flags})` (the owner's Rust type, in scope here), or \
         `owner(kind = \"{kind}\", {group}{flags})` (`group = \"\"` for the core group)?"
    )
}

/// `group = "batch"`: the group alone.
fn group_of(cx: &Ctxt, group: &LitStr) -> Option<String> {
    let value = group.value();
    if let Some((name, version)) = value.split_once('/') {
        cx.error(
            group.span(),
            format!(
                "`group` is the API group alone: write `group = \"{name}\"` (or \
                 `api_version = \"{name}/{version}\"`)"
            ),
        );
        return None;
    }
    Some(value)
}

/// `api_version = "batch/v1"` (group `batch`) or `"v1"` (the core group).
fn group_of_api_version(cx: &Ctxt, api_version: &LitStr) -> Option<String> {
    let value = api_version.value();
    let group = match value.split_once('/') {
        Some((group, version)) => (!group.is_empty() && is_version(version)).then_some(group),
        None => is_version(&value).then_some(""),
    };
    if let Some(group) = group {
        return Some(group.to_owned());
    }
    let advice = if !value.contains('/') && !value.is_empty() {
        // `api_version = "batch"`: a group without a version.
        format!("; did you mean `group = \"{value}\"`?")
    } else {
        String::new()
    };
    cx.error(
        api_version.span(),
        format!(
            "`{value}` is not an apiVersion: write `group/version` (`batch/v1`), or the \
             version alone for the core group (`v1`){advice}"
        ),
    );
    None
}

/// A Kubernetes API version: `v1`, `v2beta1`, `v1alpha3`.
fn is_version(version: &str) -> bool {
    let Some(rest) = version.strip_prefix('v') else {
        return false;
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || rest.starts_with('0') {
        return false;
    }
    let rest = &rest[digits..];
    let level = rest
        .strip_prefix("alpha")
        .or_else(|| rest.strip_prefix("beta"));
    match level {
        None => rest.is_empty(),
        Some(n) => !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) && !n.starts_with('0'),
    }
}

/// A type as written, without the token spacing: `batch::v1::CronJob`.
fn type_text(ty: &Type) -> String {
    quote::ToTokens::to_token_stream(ty)
        .to_string()
        .replace(' ', "")
}

#[cfg(test)]
mod tests {
    use super::is_version;

    #[test]
    fn knows_api_versions() {
        for version in ["v1", "v2", "v1beta1", "v2alpha3", "v10"] {
            assert!(is_version(version), "{version}");
        }
        for not in [
            "", "v", "1", "v0", "v01", "batch", "v1beta", "v1gamma1", "v1beta0",
        ] {
            assert!(!is_version(not), "{not}");
        }
    }
}
