//! Did-you-mean hints and the case conversions of field names.

/// The candidate closest to `typo`, when it is close enough to be a likely typo.
pub(crate) fn closest<'a>(
    typo: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let typo_lower = typo.to_ascii_lowercase();
    candidates
        .into_iter()
        .map(|candidate| {
            let distance = edit_distance(&typo_lower, &candidate.to_ascii_lowercase());
            (distance, candidate)
        })
        .filter(|&(distance, candidate)| distance <= (candidate.len().max(typo.len()) / 3).max(1))
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, candidate)| candidate)
}

/// `"; did you mean `x`?"`, or nothing.
pub(crate) fn hint<'a>(typo: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match closest(typo, candidates) {
        Some(candidate) => format!("; did you mean `{candidate}`?"),
        None => String::new(),
    }
}

/// Edit distance counting insertions, deletions, substitutions and swaps of two
/// neighbouring characters (`sepc` is one edit from `spec`), by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // rows[i][j]: distance between a[..i] and b[..j].
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

/// `nodeName` -> `node_name`, `podIPs` -> `pod_ips`; snake_case stays as it is.
///
/// A run of capitals is one word (`IPs`, `UID`), as k8s-openapi names its fields.
pub(crate) fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit());
            if prev_lower && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `by_node` -> `ByNode`.
pub(crate) fn upper_camel_case(name: &str) -> String {
    name.split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// serde's `rename_all` rules, applied to a snake_case Rust field name.
pub(crate) fn rename_field(rule: &str, field: &str) -> Option<String> {
    let camel = |first_upper: bool| {
        let mut out = String::new();
        let mut upper = first_upper;
        for c in field.chars() {
            if c == '_' {
                upper = true;
            } else if upper {
                out.push(c.to_ascii_uppercase());
                upper = false;
            } else {
                out.push(c);
            }
        }
        out
    };
    Some(match rule {
        "lowercase" => field.to_ascii_lowercase(),
        "UPPERCASE" => field.to_ascii_uppercase(),
        "PascalCase" => camel(true),
        "camelCase" => camel(false),
        "snake_case" => field.to_owned(),
        "SCREAMING_SNAKE_CASE" => field.to_ascii_uppercase(),
        "kebab-case" => field.replace('_', "-"),
        "SCREAMING-KEBAB-CASE" => field.replace('_', "-").to_ascii_uppercase(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_names_only() {
        assert_eq!(closest("pth", ["name", "path", "fn"]), Some("path"));
        assert_eq!(closest("indx", ["index", "kind", "key"]), Some("index"));
        assert_eq!(closest("colour", ["color", "size"]), Some("color"));
        assert_eq!(
            closest("sepc", ["metadata", "spec", "status"]),
            Some("spec")
        );
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(closest("zzzzzz", ["name", "path"]), None);
        assert_eq!(hint("nme", ["name"]), "; did you mean `name`?");
        assert_eq!(hint("qqq", ["name"]), "");
    }

    #[test]
    fn converts_cases() {
        assert_eq!(snake_case("nodeName"), "node_name");
        assert_eq!(snake_case("node_name"), "node_name");
        assert_eq!(snake_case("podIPs"), "pod_ips");
        assert_eq!(snake_case("hostIP"), "host_ip");
        assert_eq!(upper_camel_case("by_node"), "ByNode");
        assert_eq!(upper_camel_case("by_owner_uid"), "ByOwnerUid");
        assert_eq!(rename_field("camelCase", "node_name").unwrap(), "nodeName");
        assert_eq!(rename_field("PascalCase", "node_name").unwrap(), "NodeName");
        assert_eq!(
            rename_field("kebab-case", "node_name").unwrap(),
            "node-name"
        );
        assert_eq!(rename_field("nonsense", "x"), None);
    }
}
