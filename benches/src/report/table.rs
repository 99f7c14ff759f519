//! The result table: rows of medians, their targets, and the markdown the driver
//! prints.

use std::fmt::Write as _;

/// The median (the mean of the two middle values for an even count); NaN when empty.
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.into_iter().collect();
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

/// A target on a row: the ratio ours/theirs (or our value alone, without a
/// kube-runtime column) must be at most or at least this.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// The ratio must be at most this.
    RatioAtMost(f64),
    /// The ratio must be at least this.
    RatioAtLeast(f64),
    /// Our value must be at least this.
    AtLeast(f64),
    /// Our value must be at most this.
    AtMost(f64),
    /// The ratio must be within these bounds.
    RatioBetween(f64, f64),
}

impl Target {
    fn describe(self) -> String {
        match self {
            Target::RatioAtMost(x) => format!("<= {x}x"),
            Target::RatioAtLeast(x) => format!(">= {x}x"),
            Target::AtLeast(x) => format!(">= {}", human(x)),
            Target::AtMost(x) => format!("<= {}", human(x)),
            Target::RatioBetween(lo, hi) => format!("{lo}x to {hi}x"),
        }
    }

    fn met(self, ours: f64, ratio: Option<f64>) -> bool {
        match self {
            Target::RatioAtMost(x) => ratio.is_some_and(|r| r <= x),
            Target::RatioAtLeast(x) => ratio.is_some_and(|r| r >= x),
            Target::AtLeast(x) => ours >= x,
            Target::AtMost(x) => ours <= x,
            Target::RatioBetween(lo, hi) => ratio.is_some_and(|r| (lo..=hi).contains(&r)),
        }
    }
}

/// client-go's medians on a row (JSON and protobuf), and the target against them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientGo {
    /// client-go speaking JSON.
    pub json: f64,
    /// client-go speaking protobuf.
    pub protobuf: f64,
    /// The target on ours/client-go, met when both ratios meet it.
    pub target: Option<Target>,
}

/// One row of the result table.
#[derive(Debug, Clone, Default)]
pub struct Row {
    /// The scenario, e.g. `1. sync 10k`.
    pub scenario: String,
    /// What is measured, with its unit.
    pub metric: String,
    /// Our median.
    pub ours: f64,
    /// kube-runtime's median, when compared.
    pub theirs: Option<f64>,
    /// The target on ours/kube-runtime (or on ours alone), if the issue sets one.
    pub target: Option<Target>,
    /// client-go's medians, when it ran.
    pub client_go: Option<ClientGo>,
    /// controller-runtime's median, when it ran (no target: the issues set none).
    pub controller_runtime: Option<f64>,
}

impl Row {
    /// ours / theirs.
    pub fn ratio(&self) -> Option<f64> {
        self.theirs.map(|t| self.ours / t)
    }

    /// ours / client-go, JSON then protobuf.
    pub fn client_go_ratios(&self) -> Option<(f64, f64)> {
        self.client_go
            .map(|c| (self.ours / c.json, self.ours / c.protobuf))
    }

    /// ours / controller-runtime.
    pub fn controller_runtime_ratio(&self) -> Option<f64> {
        self.controller_runtime.map(|c| self.ours / c)
    }

    /// Whether every target is met (`None` without a target).
    pub fn met(&self) -> Option<bool> {
        let peer = self.target.map(|t| t.met(self.ours, self.ratio()));
        let client_go = self.client_go.and_then(|c| {
            let (json, protobuf) = self.client_go_ratios()?;
            let target = c.target?;
            Some(target.met(self.ours, Some(json)) && target.met(self.ours, Some(protobuf)))
        });
        match (peer, client_go) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(true) && b.unwrap_or(true)),
        }
    }
}

/// Formats a figure with three significant digits (and thousands separators above).
pub fn human(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".to_owned();
    }
    let abs = x.abs();
    if abs >= 1000.0 {
        let rounded = x.round() as i64;
        let digits = rounded.unsigned_abs().to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        if rounded < 0 {
            out.insert(0, '-');
        }
        out
    } else if abs >= 100.0 {
        format!("{x:.0}")
    } else if abs >= 10.0 {
        format!("{x:.1}")
    } else if abs >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

fn ratio_text(ratio: f64) -> String {
    if !ratio.is_finite() {
        "n/a".to_owned()
    } else if ratio >= 100.0 {
        format!("{}x", human(ratio))
    } else if ratio > 0.0 && ratio < 0.01 {
        // Two significant digits, not `0.00x`.
        let decimals = (-ratio.log10()).ceil() as usize + 1;
        format!("{ratio:.decimals$}x")
    } else {
        format!("{ratio:.2}x")
    }
}

/// The rows as a Markdown table; client-go's columns appear when any row has them, and
/// controller-runtime's likewise.
pub fn markdown(rows: &[Row]) -> String {
    let with_client_go = rows.iter().any(|r| r.client_go.is_some());
    let with_controller_runtime = rows.iter().any(|r| r.controller_runtime.is_some());
    let mut values = vec!["ours", "kube-runtime"];
    let mut ratios = vec!["ours/kube-runtime"];
    if with_client_go {
        values.extend(["client-go JSON", "client-go protobuf"]);
        ratios.extend(["ours/client-go JSON", "ours/client-go protobuf"]);
    }
    if with_controller_runtime {
        values.push("controller-runtime");
        ratios.push("ours/controller-runtime");
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| scenario | metric | {} | {} | target | met |",
        values.join(" | "),
        ratios.join(" | ")
    );
    let _ = writeln!(
        out,
        "|---|---|{}---|---|",
        "---:|".repeat(values.len() + ratios.len())
    );
    let dash = || "-".to_owned();
    let value = |x: Option<f64>| x.map(human).unwrap_or_else(dash);
    let ratio = |x: Option<f64>| x.map(ratio_text).unwrap_or_else(dash);
    for row in rows {
        let mut cells = vec![human(row.ours), value(row.theirs)];
        let mut ratio_cells = vec![ratio(row.ratio())];
        if with_client_go {
            let ratios = row.client_go_ratios();
            cells.extend([
                value(row.client_go.map(|c| c.json)),
                value(row.client_go.map(|c| c.protobuf)),
            ]);
            ratio_cells.extend([ratio(ratios.map(|r| r.0)), ratio(ratios.map(|r| r.1))]);
        }
        if with_controller_runtime {
            cells.push(value(row.controller_runtime));
            ratio_cells.push(ratio(row.controller_runtime_ratio()));
        }
        let targets: Vec<String> = [
            row.target.map(|t| format!("{} kube-runtime", t.describe())),
            row.client_go
                .and_then(|c| c.target)
                .map(|t| format!("{} client-go", t.describe())),
        ]
        .into_iter()
        .flatten()
        .collect();
        let targets = if row.client_go.is_none() && row.theirs.is_none() {
            row.target.map(Target::describe).unwrap_or_default()
        } else {
            targets.join(", ")
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {targets} | {} |",
            row.scenario,
            row.metric,
            cells.join(" | "),
            ratio_cells.join(" | "),
            match row.met() {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "",
            },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_formatting() {
        assert_eq!(median([3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median([4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median([]).is_nan());
        assert_eq!(human(1_234_567.0), "1,234,567");
        assert_eq!(human(0.1234), "0.123");
        let row = Row {
            scenario: "x".into(),
            metric: "m".into(),
            ours: 1.0,
            theirs: Some(2.0),
            target: Some(Target::RatioAtMost(0.6)),
            ..Row::default()
        };
        assert_eq!(row.met(), Some(true));
        assert_eq!(ratio_text(0.004567), "0.0046x");
        assert_eq!(ratio_text(0.0123), "0.01x");
        assert_eq!(ratio_text(f64::NAN), "n/a");
        assert!(markdown(std::slice::from_ref(&row)).contains("| 0.50x |"));
        let with_client_go = Row {
            client_go: Some(ClientGo {
                json: 4.0,
                protobuf: 2.5,
                target: Some(Target::RatioAtMost(0.3)),
            }),
            ..row.clone()
        };
        // 1/4 meets <= 0.3x, 1/2.5 does not.
        assert_eq!(with_client_go.met(), Some(false));
        let table = markdown(std::slice::from_ref(&with_client_go));
        assert!(table.contains("| 0.25x | 0.40x |"), "{table}");
        assert!(!table.contains("controller-runtime"), "{table}");
        let with_controller_runtime = Row {
            controller_runtime: Some(4.0),
            ..with_client_go
        };
        let table = markdown(&[with_controller_runtime, row]);
        let lines: Vec<&str> = table.lines().collect();
        assert!(
            lines[0].contains("| controller-runtime | ours/kube-runtime |")
                && lines[0].ends_with("| ours/controller-runtime | target | met |"),
            "{table}"
        );
        // The header's column count matches the separator's and every row's.
        let columns = |line: &str| line.matches('|').count();
        assert!(
            lines.iter().all(|l| columns(l) == columns(lines[0])),
            "{table}"
        );
        assert!(
            lines[2].contains("| 4.00 | 0.50x | 0.25x | 0.40x | 0.25x |"),
            "{table}"
        );
        assert!(
            lines[3].contains("| 1.00 | 2.00 | - | - | - | 0.50x |"),
            "{table}"
        );
    }
}
