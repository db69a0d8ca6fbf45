//! `ctxbench plot`: line plots of an experiment's points (PNG and SVG, plotters): one line per
//! (series value, measure) over a swept setting (003 Fig. 3.3, 001 Fig. 6), or speed against
//! accuracy (RTFx vs WER). The font is embedded, so no fontconfig is needed.

use crate::experiment::{Experiment, PlotSpec};
use crate::results::Points;
use crate::table::measure_name;
use anyhow::{anyhow, bail, Result};
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
static REGISTER: Once = Once::new();

fn register_font() {
    REGISTER.call_once(|| {
        // The embedded file is a valid TTF; a failure here would show as missing text.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// One line of a plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// Points sorted by x.
    pub points: Vec<(f64, f64)>,
}

/// `x = "measures"`: the y measures themselves are the x axis (positions 0, 1, …).
pub const MEASURES_AXIS: &str = "measures";

/// The lines of a plot spec over the points.
pub fn series(spec: &PlotSpec, pts: &Points) -> Result<Vec<Series>> {
    let mut names: Vec<String> = Vec::new();
    for i in 0..pts.rows.len() {
        let v = pts.text(i, &spec.series).unwrap_or("").to_string();
        if !names.contains(&v) {
            names.push(v);
        }
    }
    let mut out = Vec::new();
    if spec.x == MEASURES_AXIS {
        // One line per series across the y measures (e.g. error rate by training-count
        // bucket): x = the measure's position in `y`, from the series' first point.
        for n in &names {
            let Some(i) =
                (0..pts.rows.len()).find(|&i| pts.text(i, &spec.series).unwrap_or("") == n)
            else {
                continue;
            };
            let points: Vec<(f64, f64)> = spec
                .y
                .iter()
                .enumerate()
                .filter_map(|(k, y)| Some((k as f64, pts.num(i, y)?)))
                .collect();
            if !points.is_empty() {
                out.push(Series {
                    name: n.clone(),
                    points,
                });
            }
        }
    }
    for y in spec.y.iter().filter(|_| spec.x != MEASURES_AXIS) {
        for n in &names {
            let mut points: Vec<(f64, f64)> = (0..pts.rows.len())
                .filter(|&i| pts.text(i, &spec.series).unwrap_or("") == n)
                .filter_map(|i| Some((pts.num(i, &spec.x)?, pts.num(i, y)?)))
                .collect();
            if points.is_empty() {
                continue;
            }
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let name = match (spec.y.len(), names.len()) {
                (1, _) => n.clone(),
                (_, 1) => long_name(y).to_string(),
                _ => format!("{n}: {}", long_name(y)),
            };
            out.push(Series { name, points });
        }
    }
    if out.is_empty() {
        bail!(
            "plot '{}': no numeric points for x = {} and y = {}",
            spec.name,
            spec.x,
            spec.y.join(", ")
        );
    }
    Ok(out)
}

/// Tableau-10 colours: dark enough on white, distinct for the colour-blind common cases.
const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// The data range with a margin; `top` extra room (a fraction) above it for the legend.
fn range(v: impl Iterator<Item = f64>, top: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for x in v {
        lo = lo.min(x);
        hi = hi.max(x);
    }
    let span = (hi - lo).max(1e-6 + hi.abs() * 0.02);
    (lo - span * 0.06, hi + span * (0.06 + top))
}

/// A measure's name in a legend or axis label.
fn long_name(m: &str) -> &str {
    match m {
        "precision" => "precision",
        "recall" => "recall",
        other => measure_name(other),
    }
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    spec: &PlotSpec,
    lines: &[Series],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("plot '{}': {e:?}", spec.name);
    root.fill(&WHITE).map_err(err)?;
    let (x0, x1) = range(lines.iter().flat_map(|s| s.points.iter().map(|p| p.0)), 0.0);
    // Room above the data for the legend (one line per series).
    let top = 0.08 * lines.len() as f64 + 0.05;
    let (y0, y1) = range(lines.iter().flat_map(|s| s.points.iter().map(|p| p.1)), top);
    let mut chart = ChartBuilder::on(&root)
        .caption(&spec.title, ("sans-serif", 26))
        .margin(20)
        .x_label_area_size(55)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(err)?;
    let x_label = spec.x_label.clone().unwrap_or_else(|| spec.x.clone());
    let y_label = spec.y_label.clone().unwrap_or_else(|| {
        spec.y
            .iter()
            .map(|m| long_name(m))
            .collect::<Vec<_>>()
            .join(", ")
    });
    let tick = |v: &f64| {
        if (x1 - x0).abs() >= 20.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    };
    chart
        .configure_mesh()
        .x_label_formatter(&tick)
        .x_desc(x_label)
        .y_desc(y_label)
        .label_style(("sans-serif", 18))
        .axis_desc_style(("sans-serif", 20))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(err)?;
    for (i, s) in lines.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                color.stroke_width(3),
            ))
            .map_err(err)?
            .label(s.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3))
            });
        chart
            .draw_series(s.points.iter().map(|&p| Circle::new(p, 5, color.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 18))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Writes `plot-<name>.png` and `.svg` for every plot of the experiment.
pub fn write_plots(exp: &Experiment, pts: &Points, dir: &Path) -> Result<Vec<String>> {
    register_font();
    let mut written = Vec::new();
    for spec in &exp.plots {
        let lines = series(spec, pts)?;
        let png = dir.join(format!("plot-{}.png", spec.name));
        let svg = dir.join(format!("plot-{}.svg", spec.name));
        let tmp_png = dir.join(format!(".plot-{}.png.tmp.png", spec.name));
        draw(
            BitMapBackend::new(&tmp_png, (1000, 640)).into_drawing_area(),
            spec,
            &lines,
        )?;
        std::fs::rename(&tmp_png, &png)?;
        let mut text = String::new();
        draw(
            SVGBackend::with_string(&mut text, (1000, 640)).into_drawing_area(),
            spec,
            &lines,
        )?;
        ctx_core::io::write_atomic(&svg, |w| w.write_all(text.as_bytes()))?;
        written.push(png.display().to_string());
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(x: &str, y: &[&str]) -> PlotSpec {
        PlotSpec {
            name: "t".into(),
            title: String::new(),
            x: x.into(),
            y: y.iter().map(|s| s.to_string()).collect(),
            series: "row".into(),
            x_label: None,
            y_label: None,
        }
    }

    fn points() -> Points {
        let cell = |s: &str| Some(s.to_string());
        Points {
            columns: vec![
                "row".into(),
                "beam".into(),
                "err_c0".into(),
                "err_c101".into(),
            ],
            rows: vec![
                vec![cell("a"), cell("15"), cell("80"), cell("8")],
                vec![cell("b"), cell("15"), cell("100"), cell("12")],
                vec![cell("a"), cell("11"), cell("90"), cell("9")],
            ],
        }
    }

    #[test]
    fn a_measures_axis_draws_each_series_across_its_measures() {
        let s = series(&spec(MEASURES_AXIS, &["err_c0", "err_c101"]), &points()).unwrap();
        let got: Vec<(&str, Vec<(f64, f64)>)> = s
            .iter()
            .map(|x| (x.name.as_str(), x.points.clone()))
            .collect();
        // Each series from its first point, x = the measure's position.
        assert_eq!(
            got,
            vec![
                ("a", vec![(0.0, 80.0), (1.0, 8.0)]),
                ("b", vec![(0.0, 100.0), (1.0, 12.0)])
            ]
        );
        // An ordinary x still plots each series over its points, sorted by x.
        let s = series(&spec("beam", &["err_c0"]), &points()).unwrap();
        assert_eq!(s[0].points, vec![(11.0, 90.0), (15.0, 80.0)]);
    }
}
