//! [`JsonPathIndex`]: an index function over [`DynamicObject`]s that reads a field path
//! in the object's JSON, for resources whose fields no Rust type names.

use kube::core::DynamicObject;
use serde_json::Value;

use crate::store::IndexFunc;

/// Indexes [`DynamicObject`]s by the values at a field path, as `kubectl`'s JSONPath
/// writes simple ones: `spec.nodeName`, `.spec.nodeName` or `{.spec.nodeName}`, with
/// `['key']` for keys that hold dots or slashes
/// (`metadata.labels['app.kubernetes.io/name']`).
///
/// Like the derive's paths, arrays are looked into at every step
/// (`spec.containers.image` gives each container's image) and each scalar found is
/// one value: strings as they are, numbers and booleans in their JSON form. A path
/// that leads nowhere, to `null` or to an object gives no value. Paths under
/// `metadata` read the typed metadata (serialised for the purpose, so they cost more
/// than the rest: prefer a label index for labels).
///
/// ```
/// use informer::dynamic::JsonPathIndex;
/// use informer::store::IndexFunc;
/// use kube::core::DynamicObject;
///
/// let pod: DynamicObject = serde_json::from_value(serde_json::json!({
///     "apiVersion": "v1", "kind": "Pod",
///     "metadata": { "name": "web", "labels": { "app.kubernetes.io/name": "web" } },
///     "spec": { "nodeName": "n1", "containers": [{ "image": "a" }, { "image": "b" }] },
/// }))?;
/// let values = |path: &str| -> Result<Vec<String>, Box<dyn std::error::Error>> {
///     let mut values = Vec::new();
///     JsonPathIndex::new(path)?.index_values(&pod, &mut |v| values.push(v.to_owned()));
///     Ok(values)
/// };
/// assert_eq!(values("spec.nodeName")?, ["n1"]);
/// assert_eq!(values("{.spec.containers.image}")?, ["a", "b"]);
/// assert_eq!(values("metadata.labels['app.kubernetes.io/name']")?, ["web"]);
/// assert!(values("spec.missing")?.is_empty());
/// assert!(JsonPathIndex::new("spec..nodeName").is_err());
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPathIndex {
    path: String,
    segments: Vec<String>,
}

/// Why a path given to [`JsonPathIndex::new`] is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonPathError {
    /// The path names no field.
    #[error("an empty field path")]
    Empty,
    /// The path is not a dotted list of field names and `['key']`s.
    #[error("malformed field path {path:?}: {reason}")]
    Malformed {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl JsonPathIndex {
    /// An index function over the values at `path`; see the [type docs](Self).
    pub fn new(path: &str) -> Result<Self, JsonPathError> {
        let segments = parse(path)?;
        Ok(Self {
            path: path.to_owned(),
            segments,
        })
    }

    /// The path as given.
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl IndexFunc<DynamicObject> for JsonPathIndex {
    fn index_values(&self, obj: &DynamicObject, emit: &mut dyn FnMut(&str)) {
        match self.segments.split_first() {
            // The typed metadata is not in `data`: read it as JSON.
            Some((first, rest)) if first == "metadata" => {
                if let Ok(metadata) = serde_json::to_value(&obj.metadata) {
                    walk(&metadata, rest, emit);
                }
            }
            _ => walk(&obj.data, &self.segments, emit),
        }
    }
}

fn walk(value: &Value, segments: &[String], emit: &mut dyn FnMut(&str)) {
    if let Value::Array(items) = value {
        for item in items {
            walk(item, segments, emit);
        }
        return;
    }
    match segments.split_first() {
        None => match value {
            Value::String(s) => emit(s),
            Value::Number(n) => emit(&n.to_string()),
            Value::Bool(b) => emit(if *b { "true" } else { "false" }),
            Value::Null | Value::Object(_) | Value::Array(_) => {}
        },
        Some((key, rest)) => {
            if let Some(next) = value.as_object().and_then(|map| map.get(key)) {
                walk(next, rest, emit);
            }
        }
    }
}

/// The field names of `path`: `a.b['c.d'].e` is `a`, `b`, `c.d`, `e`.
fn parse(path: &str) -> Result<Vec<String>, JsonPathError> {
    let malformed = |reason| JsonPathError::Malformed {
        path: path.to_owned(),
        reason,
    };
    let mut rest = path.trim();
    if let Some(inner) = rest.strip_prefix('{') {
        rest = inner
            .strip_suffix('}')
            .ok_or_else(|| malformed("`{` without `}`"))?
            .trim();
    }
    rest = rest.strip_prefix('.').unwrap_or(rest);
    if rest.is_empty() {
        return Err(JsonPathError::Empty);
    }
    let mut segments = Vec::new();
    let mut expect_name = true;
    while !rest.is_empty() {
        if let Some(bracketed) = rest.strip_prefix('[') {
            let quote = bracketed
                .chars()
                .next()
                .filter(|c| matches!(c, '\'' | '"'))
                .ok_or_else(|| malformed("`[` must hold a quoted key"))?;
            let body = &bracketed[1..];
            let end = body
                .find(quote)
                .ok_or_else(|| malformed("a quoted key without its closing quote"))?;
            segments.push(body[..end].to_owned());
            rest = body[end + 1..]
                .strip_prefix(']')
                .ok_or_else(|| malformed("a quoted key without its closing `]`"))?;
            expect_name = false;
        } else if let Some(after_dot) = rest.strip_prefix('.') {
            if expect_name {
                return Err(malformed("an empty field name"));
            }
            rest = after_dot;
            expect_name = true;
            if rest.is_empty() || rest.starts_with('.') {
                return Err(malformed("an empty field name"));
            }
        } else {
            if !expect_name {
                return Err(malformed("a field name must follow a `.`"));
            }
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            if end == 0 {
                return Err(malformed("an empty field name"));
            }
            segments.push(rest[..end].to_owned());
            rest = &rest[end..];
            expect_name = false;
        }
    }
    Ok(segments)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_into_field_names() {
        let names = |path: &str| parse(path).unwrap();
        assert_eq!(names("spec.nodeName"), ["spec", "nodeName"]);
        assert_eq!(names(".spec.nodeName"), ["spec", "nodeName"]);
        assert_eq!(names("{.spec.nodeName}"), ["spec", "nodeName"]);
        assert_eq!(
            names("metadata.labels['app.kubernetes.io/name']"),
            ["metadata", "labels", "app.kubernetes.io/name"]
        );
        assert_eq!(names(r#"a["b"].c"#), ["a", "b", "c"]);
    }

    #[test]
    fn malformed_paths_are_typed_errors() {
        assert_eq!(parse(""), Err(JsonPathError::Empty));
        assert_eq!(parse("{.}"), Err(JsonPathError::Empty));
        for bad in ["a..b", "a.", "{.a", "a[b]", "a['b", "a['b'", "a['b']c"] {
            assert!(
                matches!(parse(bad), Err(JsonPathError::Malformed { .. })),
                "{bad}: {:?}",
                parse(bad)
            );
        }
    }

    #[test]
    fn scalars_are_values_and_arrays_are_looked_into() {
        let object: DynamicObject = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "x", "namespace": "n" },
            "spec": {
                "replicas": 3, "paused": false, "none": null, "nested": { "a": 1 },
                "ports": [{ "port": 80 }, { "port": 443 }, { "other": 1 }],
                "tags": ["a", "b"],
            },
        }))
        .unwrap();
        let values = |path: &str| {
            let mut values = Vec::new();
            JsonPathIndex::new(path)
                .unwrap()
                .index_values(&object, &mut |v| values.push(v.to_owned()));
            values
        };
        assert_eq!(values("spec.replicas"), ["3"]);
        assert_eq!(values("spec.paused"), ["false"]);
        assert!(values("spec.none").is_empty());
        assert!(values("spec.nested").is_empty());
        assert_eq!(values("spec.ports.port"), ["80", "443"]);
        assert_eq!(values("spec.tags"), ["a", "b"]);
        assert_eq!(values("metadata.namespace"), ["n"]);
        assert!(values("spec.replicas.deeper").is_empty());
    }
}
