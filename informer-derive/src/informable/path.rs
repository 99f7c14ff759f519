//! The field-path mini-language of `index(path = "...")`.
//!
//! ```text
//! path    := name ( "." name | "[" quoted "]" )*
//! name    := [A-Za-z_][A-Za-z0-9_]*   (or r#keyword)
//! quoted  := "'" [^']* "'" | '"' [^"]* '"'
//! ```
//!
//! Names are JSON field names as in `kubectl get -o jsonpath` (`spec.nodeName`) or Rust
//! field names (`spec.node_name`); `['key']` looks a key up in a map
//! (`metadata.labels['app.kubernetes.io/name']`).

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Segment {
    /// `.name`: a field.
    Name(String),
    /// `['key']`: a map lookup.
    Key(String),
}

/// Parses a path; the error says what is wrong.
pub(crate) fn parse(path: &str) -> Result<Vec<Segment>, String> {
    let mut segments = Vec::new();
    let mut rest = path;
    if rest.is_empty() {
        return Err("the path is empty; write e.g. `spec.nodeName`".into());
    }
    let mut first = true;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('[') {
            if first {
                return Err(format!("path `{path}` must start with a field name"));
            }
            let quote = after
                .chars()
                .next()
                .filter(|c| *c == '\'' || *c == '"')
                .ok_or_else(|| format!("in path `{path}`: a map key is quoted, e.g. `['app']`"))?;
            let body = &after[1..];
            let end = body
                .find(quote)
                .ok_or_else(|| format!("in path `{path}`: unterminated map key"))?;
            let key = &body[..end];
            let after_key = body[end + 1..]
                .strip_prefix(']')
                .ok_or_else(|| format!("in path `{path}`: expected `]` after the map key"))?;
            if key.is_empty() {
                return Err(format!("in path `{path}`: the map key is empty"));
            }
            segments.push(Segment::Key(key.to_owned()));
            rest = after_key;
        } else {
            let name_part = if first {
                rest
            } else {
                rest.strip_prefix('.').ok_or_else(|| {
                    format!(
                        "in path `{path}`: expected `.` or `[` after `{}`",
                        &path[..path.len() - rest.len()]
                    )
                })?
            };
            let (raw, name_part) = match name_part.strip_prefix("r#") {
                Some(stripped) => (true, stripped),
                None => (false, name_part),
            };
            let end = name_part
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(name_part.len());
            let name = &name_part[..end];
            if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
                return Err(format!(
                    "in path `{path}`: expected a field name at `{}`",
                    if name_part.is_empty() {
                        "the end"
                    } else {
                        name_part
                    }
                ));
            }
            segments.push(Segment::Name(if raw {
                format!("r#{name}")
            } else {
                name.to_owned()
            }));
            rest = &name_part[end..];
        }
        first = false;
    }
    Ok(segments)
}

/// The path written back, for docs and messages.
pub(crate) fn display(segments: &[Segment]) -> String {
    let mut out = String::new();
    for (i, segment) in segments.iter().enumerate() {
        match segment {
            Segment::Name(name) if i == 0 => out.push_str(name),
            Segment::Name(name) => {
                out.push('.');
                out.push_str(name);
            }
            Segment::Key(key) => {
                out.push_str("['");
                out.push_str(key);
                out.push_str("']");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::Segment::{Key, Name};
    use super::*;

    #[test]
    fn parses_fields_and_keys() {
        assert_eq!(
            parse("spec.nodeName").unwrap(),
            vec![Name("spec".into()), Name("nodeName".into())]
        );
        assert_eq!(
            parse("metadata.labels['app.kubernetes.io/name']").unwrap(),
            vec![
                Name("metadata".into()),
                Name("labels".into()),
                Key("app.kubernetes.io/name".into())
            ]
        );
        assert_eq!(
            parse(r#"spec.selector["app"].x"#).unwrap(),
            vec![
                Name("spec".into()),
                Name("selector".into()),
                Key("app".into()),
                Name("x".into())
            ]
        );
        assert_eq!(parse("spec.r#type").unwrap()[1], Name("r#type".into()));
        assert_eq!(display(&parse("a.b['c'].d").unwrap()), "a.b['c'].d");
    }

    #[test]
    fn rejects_malformed_paths() {
        for bad in [
            "",
            ".spec",
            "spec.",
            "spec..x",
            "spec[app]",
            "spec['app'",
            "['x']",
            "spec.1x",
            "spec-x",
            "spec['']",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should not parse");
        }
    }
}
