//! Scenario 15's figure, drawn by the bench itself (plotters, SVG): bytes per Pod
//! after the sync for each variant at the largest count every variant ran at, and
//! each variant's RSS above its start against the number of Pods (a variant that
//! skipped the largest counts ends its line early).

use std::path::Path;

use anyhow::anyhow;
use plotters::prelude::*;

/// One variant's medians at one count of Pods.
#[derive(Debug, Clone)]
pub struct PlotPoint {
    /// Pods synced.
    pub pods: usize,
    /// RSS after sync above the start, bytes per Pod.
    pub bytes_per_pod: f64,
}

/// One variant's line.
#[derive(Debug, Clone)]
pub struct PlotSeries {
    /// How the figure names it.
    pub name: String,
    /// Its points, by count of Pods.
    pub points: Vec<PlotPoint>,
}

/// Colours the variants keep in both panels.
const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// Draws `series` into an SVG at `path`.
pub fn projections(series: &[PlotSeries], path: &Path) -> anyhow::Result<()> {
    let plotting = |e: &dyn std::fmt::Display| anyhow!("drawing {}: {e}", path.display());
    if series.is_empty() {
        return Err(plotting(&"no variant to draw"));
    }
    let root = SVGBackend::new(path, (1500, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plotting(&e))?;
    let (left, right) = root.split_horizontally(860);

    let largest = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.pods))
        .max()
        .unwrap_or(0);
    // Left: bytes per Pod, one bar per variant, at the largest count all of them ran at
    // (the largest counts run only some), so that every bar is measured at one count.
    let shared = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.pods))
        .filter(|&pods| {
            series
                .iter()
                .all(|s| s.points.iter().any(|p| p.pods == pods))
        })
        .max()
        .unwrap_or(largest);
    let bars: Vec<(usize, f64)> = series
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let point = s.points.iter().find(|p| p.pods == shared)?;
            Some((i, point.bytes_per_pod))
        })
        .collect();
    let most = bars.iter().map(|(_, b)| *b).fold(1.0, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(&left)
        .caption(
            format!("Bytes per Pod after syncing {shared} Pods (RSS above start)"),
            ("sans-serif", 20),
        )
        .margin(12)
        .margin_right(40)
        .x_label_area_size(40)
        .y_label_area_size(420)
        .build_cartesian_2d(0.0..most, (0..series.len() - 1).into_segmented())
        .map_err(|e| plotting(&e))?;
    let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(series.len())
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_desc("bytes per Pod")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(|e| plotting(&e))?;
    // Each bar's figure beside it: the small ones are too short to read off the axis.
    chart
        .draw_series(bars.iter().map(|&(i, bytes)| {
            Text::new(
                format!(" {bytes:.0}"),
                (bytes, SegmentValue::CenterOf(i)),
                ("sans-serif", 12),
            )
        }))
        .map_err(|e| plotting(&e))?;
    for (i, bytes) in &bars {
        let colour = COLOURS[i % COLOURS.len()];
        chart
            .draw_series(
                Histogram::horizontal(&chart)
                    .style(colour.filled())
                    .margin(6)
                    .data([(*i, *bytes)]),
            )
            .map_err(|e| plotting(&e))?;
    }

    // Right: RSS above start against Pods, one line per variant.
    let mib = |p: &PlotPoint| p.bytes_per_pod * p.pods as f64 / (1024.0 * 1024.0);
    let highest = series
        .iter()
        .flat_map(|s| s.points.iter().map(mib))
        .fold(1.0, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&right)
        .caption("RSS above start (MiB) against Pods", ("sans-serif", 20))
        .margin(12)
        .margin_right(40)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0usize..largest.max(1), 0.0..highest)
        .map_err(|e| plotting(&e))?;
    chart
        .configure_mesh()
        .x_desc("Pods")
        .y_desc("MiB")
        .y_label_formatter(&|y| format!("{y:.0}"))
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(|e| plotting(&e))?;
    for (i, variant) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let mut points: Vec<(usize, f64)> = std::iter::once((0, 0.0))
            .chain(variant.points.iter().map(|p| (p.pods, mib(p))))
            .collect();
        points.sort_by_key(|(pods, _)| *pods);
        chart
            .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
            .map_err(|e| plotting(&e))?
            .label(variant.name.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], colour.stroke_width(2)));
        chart
            .draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 3, colour.filled())),
            )
            .map_err(|e| plotting(&e))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()
        .map_err(|e| plotting(&e))?;
    root.present().map_err(|e| plotting(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figure_has_a_bar_and_a_line_per_variant() {
        let series: Vec<PlotSeries> = ["full", "projection"]
            .iter()
            .zip([45_000.0, 2_000.0])
            .map(|(name, bytes)| PlotSeries {
                name: (*name).to_owned(),
                points: [10_000, 30_000]
                    .iter()
                    .map(|&pods| PlotPoint {
                        pods,
                        bytes_per_pod: bytes,
                    })
                    .collect(),
            })
            .collect();
        let dir = std::env::temp_dir().join(format!("plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("projections.svg");
        projections(&series, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
        for name in [
            "full",
            "projection",
            "Bytes per Pod after syncing 30000 Pods",
        ] {
            assert!(svg.contains(name), "{name} missing");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_bars_are_at_the_largest_count_every_variant_ran_at() {
        let line = |name: &str, counts: &[usize]| PlotSeries {
            name: name.to_owned(),
            points: counts
                .iter()
                .map(|&pods| PlotPoint {
                    pods,
                    bytes_per_pod: 1_000.0,
                })
                .collect(),
        };
        let series = [
            line("full", &[10_000, 30_000]),
            line("projection", &[10_000, 30_000, 150_000]),
        ];
        let dir = std::env::temp_dir().join(format!("plot-counts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("projections.svg");
        projections(&series, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("Bytes per Pod after syncing 30000 Pods"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
