//! A line plot written as SVG by hand: curves, shaded bands, reference markers, decade ticks on
//! log axes, labelled axes, a wrapped title and a legend under the plot.
//!
//! Data are mapped to pixels only when finite (and positive on a log axis); other points are
//! left out, break the line, and are counted in a note under the plot, so no coordinate is
//! ever NaN. Every curve has its own colour and its own dash pattern, so curves that lie on
//! top of each other stay distinguishable, in colour and in black and white.

use super::text::{document, escape, header, width};
use std::fmt::Write;

/// Canvas width and the plot area's margins and height (pixels).
const WIDTH: f64 = 900.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 30.0;
const PLOT_HEIGHT: f64 = 400.0;
/// Space under the plot area for tick labels and the x-axis label.
const X_AXIS_SPACE: f64 = 56.0;
/// Height of one legend line.
const LEGEND_LINE: f64 = 20.0;

/// Line colours: Okabe–Ito (distinguishable with colour-vision deficiencies, yellow left
/// out: unreadable on white) and four of Tol's muted colours.
const PALETTE: [&str; 11] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#882255",
    "#44aa99", "#999933", "#888888",
];

/// A white outline under marker labels, so they stay readable over curves and grid lines.
const HALO: &str = " stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\"";

/// How an axis maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    Log10,
}

/// One axis: label, scale and optional fixed range.
#[derive(Debug, Clone)]
pub struct Axis {
    pub label: String,
    pub scale: Scale,
    range: Option<(f64, f64)>,
    from_zero: bool,
}

impl Axis {
    pub fn new(label: &str, scale: Scale) -> Axis {
        Axis {
            label: label.into(),
            scale,
            range: None,
            from_zero: false,
        }
    }

    /// A fixed range (otherwise the data's).
    pub fn range(mut self, low: f64, high: f64) -> Axis {
        self.range = Some((low, high));
        self
    }

    /// A linear axis that starts at 0 when the data are non-negative.
    pub fn starting_at_zero(mut self) -> Axis {
        self.from_zero = true;
        self
    }

    /// Whether `v` can be placed on this axis.
    fn accepts(&self, v: f64) -> bool {
        v.is_finite() && (self.scale == Scale::Linear || v > 0.0)
    }

    fn transform(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log10 => v.log10(),
        }
    }
}

/// Dash pattern of a curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineStyle {
    Solid,
    Dashed,
    Dotted,
    DashDot,
    LongDash,
    DashDotDot,
    SparseDot,
}

impl LineStyle {
    /// Every pattern, in the order curves take them.
    pub const ALL: [LineStyle; 7] = [
        LineStyle::Solid,
        LineStyle::Dashed,
        LineStyle::Dotted,
        LineStyle::DashDot,
        LineStyle::LongDash,
        LineStyle::DashDotDot,
        LineStyle::SparseDot,
    ];

    fn attribute(self) -> &'static str {
        match self {
            LineStyle::Solid => "",
            LineStyle::Dashed => " stroke-dasharray=\"8 4\"",
            LineStyle::Dotted => " stroke-dasharray=\"2 3\"",
            LineStyle::DashDot => " stroke-dasharray=\"9 3 2 3\"",
            LineStyle::LongDash => " stroke-dasharray=\"16 5\"",
            LineStyle::DashDotDot => " stroke-dasharray=\"9 3 2 3 2 3\"",
            LineStyle::SparseDot => " stroke-dasharray=\"2 7\"",
        }
    }
}

/// A curve through `(x, y)` points, in order.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Index into the palette.
    pub color: usize,
    pub dash: LineStyle,
}

impl Series {
    /// The `index`-th curve of a plot: its own colour and its own dash pattern (11 colours ×
    /// 7 patterns: no two of the first 77 curves look alike).
    pub fn nth(index: usize, name: &str, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            color: index % PALETTE.len(),
            dash: LineStyle::ALL[index % LineStyle::ALL.len()],
        }
    }
}

/// A shaded region between two curves: `(x, low, high)`.
#[derive(Debug, Clone)]
pub struct Band {
    pub name: String,
    pub points: Vec<(f64, f64, f64)>,
    /// Index into the palette.
    pub color: usize,
}

/// A reference drawn over the data in grey, with its label beside it.
#[derive(Debug, Clone)]
pub enum Marker {
    /// A vertical line at `x` (e.g. the requested δ).
    Vertical { x: f64, label: String },
    /// A dot at `(x, y)` (e.g. the answer at the requested δ).
    Point { x: f64, y: f64, label: String },
}

/// A plot: title and subtitle, axes, bands (drawn first), curves, markers, notes.
#[derive(Debug, Clone)]
pub struct Plot {
    pub title: String,
    /// What was accounted (wrapped over up to three lines).
    pub subtitle: String,
    pub x: Axis,
    pub y: Axis,
    pub bands: Vec<Band>,
    pub series: Vec<Series>,
    pub markers: Vec<Marker>,
    /// Lines of small text under the legend (e.g. what the rows mean).
    pub notes: Vec<String>,
}

impl Plot {
    pub fn new(title: &str, subtitle: &str, x: Axis, y: Axis) -> Plot {
        Plot {
            title: title.into(),
            subtitle: subtitle.into(),
            x,
            y,
            bands: Vec::new(),
            series: Vec::new(),
            markers: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The plot as a standalone SVG document.
    pub fn svg(&self) -> String {
        let xs = self.all_points().map(|p| p.0);
        let ys = self.all_points().map(|p| p.1);
        let (x0, x1) = range(&self.x, xs.collect());
        let (y0, y1) = range(&self.y, ys.collect());
        let mut body = String::new();
        let top = header(&mut body, &self.title, &self.subtitle, WIDTH) + 8.0;
        let frame = Frame {
            x0,
            x1,
            y0,
            y1,
            top,
        };
        let mut skipped = 0;
        self.grid_and_ticks(&mut body, &frame);
        let _ = writeln!(body, "<g id=\"data\">");
        for band in &self.bands {
            skipped += self.band(&mut body, &frame, band);
        }
        for series in &self.series {
            skipped += self.curve(&mut body, &frame, series);
        }
        let _ = writeln!(body, "</g>");
        self.markers(&mut body, &frame);
        // The frame on top of the data.
        let _ = writeln!(
            body,
            "<rect x=\"{LEFT}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{PLOT_HEIGHT}\" \
             fill=\"none\" stroke=\"#333\"/>",
            plot_width()
        );
        self.axis_labels(&mut body, &frame);
        let mut notes = self.notes.clone();
        if skipped > 0 {
            notes.push(format!(
                "{skipped} points not finite (or not positive on a log axis), left out"
            ));
        }
        let height = self.legend(&mut body, top + PLOT_HEIGHT + X_AXIS_SPACE, &notes) + 10.0;
        document(WIDTH, height, &self.title, &body)
    }

    fn all_points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        let bands = self
            .bands
            .iter()
            .flat_map(|b| b.points.iter().flat_map(|&(x, lo, hi)| [(x, lo), (x, hi)]));
        let series = self.series.iter().flat_map(|s| s.points.iter().copied());
        bands
            .chain(series)
            .filter(|&(x, y)| self.x.accepts(x) && self.y.accepts(y))
    }

    fn grid_and_ticks(&self, svg: &mut String, frame: &Frame) {
        let bottom = frame.top + PLOT_HEIGHT;
        let _ = writeln!(svg, "<g id=\"ticks\" font-size=\"11\" fill=\"#333\">");
        for (value, label) in ticks(&self.x, frame.x0, frame.x1) {
            let px = frame.px(&self.x, value);
            let _ = writeln!(
                svg,
                "<line x1=\"{px:.2}\" y1=\"{:.2}\" x2=\"{px:.2}\" y2=\"{bottom:.2}\" \
                 stroke=\"#e4e4e4\"/><text x=\"{px:.2}\" y=\"{:.2}\" \
                 text-anchor=\"middle\">{}</text>",
                frame.top,
                bottom + 16.0,
                escape(&label)
            );
        }
        for (value, label) in ticks(&self.y, frame.y0, frame.y1) {
            let py = frame.py(&self.y, value);
            let _ = writeln!(
                svg,
                "<line x1=\"{LEFT}\" y1=\"{py:.2}\" x2=\"{:.2}\" y2=\"{py:.2}\" stroke=\"#e4e4e4\"/>\
                 <text x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"end\">{}</text>",
                LEFT + plot_width(),
                LEFT - 6.0,
                py + 4.0,
                escape(&label)
            );
        }
        let _ = writeln!(svg, "</g>");
    }

    fn axis_labels(&self, svg: &mut String, frame: &Frame) {
        let scale = |axis: &Axis| match axis.scale {
            Scale::Linear => "",
            Scale::Log10 => " (log scale)",
        };
        let _ = writeln!(
            svg,
            "<text id=\"x-label\" class=\"axis-label\" x=\"{:.1}\" y=\"{:.1}\" \
             text-anchor=\"middle\" font-size=\"14\">{}{}</text>",
            LEFT + plot_width() / 2.0,
            frame.top + PLOT_HEIGHT + 40.0,
            escape(&self.x.label),
            scale(&self.x)
        );
        let (x, y) = (22.0, frame.top + PLOT_HEIGHT / 2.0);
        let _ = writeln!(
            svg,
            "<text id=\"y-label\" class=\"axis-label\" x=\"{x}\" y=\"{y:.1}\" \
             text-anchor=\"middle\" font-size=\"14\" transform=\"rotate(-90 {x} {y:.1})\">\
             {}{}</text>",
            escape(&self.y.label),
            scale(&self.y)
        );
    }

    /// The legend under the plot, in two columns when every entry fits half the width, then
    /// the notes; return the y coordinate below the last line.
    fn legend(&self, svg: &mut String, top: f64, notes: &[String]) -> f64 {
        let names: Vec<&str> = self
            .bands
            .iter()
            .map(|b| b.name.as_str())
            .chain(self.series.iter().map(|s| s.name.as_str()))
            .collect();
        let column_width = (WIDTH - LEFT - RIGHT) / 2.0;
        let fits_half = names.iter().all(|n| width(n, 13.0) + 40.0 <= column_width);
        let columns = if fits_half && names.len() > 1 { 2 } else { 1 };
        let rows = names.len().div_ceil(columns);
        let place = |i: usize| {
            let (row, column) = if columns == 2 {
                (i % rows, i / rows)
            } else {
                (i, 0)
            };
            (
                LEFT + column as f64 * column_width,
                top + 10.0 + row as f64 * LEGEND_LINE,
            )
        };
        let _ = writeln!(svg, "<g id=\"legend\">");
        for (i, band) in self.bands.iter().enumerate() {
            let (x, y) = place(i);
            let _ = writeln!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"30\" height=\"11\" fill=\"{}\" \
                 fill-opacity=\"0.3\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                y - 5.5,
                color(band.color),
                x + 38.0,
                y + 4.5,
                escape(&band.name)
            );
        }
        for (j, series) in self.series.iter().enumerate() {
            let (x, y) = place(self.bands.len() + j);
            let _ = writeln!(
                svg,
                "<line x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{}\" \
                 stroke-width=\"2.5\"{}/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                x + 30.0,
                color(series.color),
                series.dash.attribute(),
                x + 38.0,
                y + 4.5,
                escape(&series.name)
            );
        }
        let mut y = top + 10.0 + rows as f64 * LEGEND_LINE;
        for note in notes {
            let _ = writeln!(
                svg,
                "<text x=\"{LEFT}\" y=\"{:.1}\" font-size=\"11\" fill=\"#555\">{}</text>",
                y + 2.0,
                escape(note)
            );
            y += 15.0;
        }
        let _ = writeln!(svg, "</g>");
        y
    }

    /// Draw one curve; return the number of points left out.
    fn curve(&self, svg: &mut String, frame: &Frame, series: &Series) -> usize {
        let mut path = String::new();
        let mut skipped = 0;
        let mut pen_down = false;
        for &(x, y) in &series.points {
            if !(self.x.accepts(x) && self.y.accepts(y)) {
                skipped += 1;
                pen_down = false;
                continue;
            }
            let command = if pen_down { 'L' } else { 'M' };
            let _ = write!(
                path,
                "{command}{:.2},{:.2} ",
                frame.px(&self.x, x),
                frame.py(&self.y, y)
            );
            pen_down = true;
        }
        if !path.is_empty() {
            let _ = writeln!(
                svg,
                "<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" \
                 stroke-linejoin=\"round\"{}><title>{}</title></path>",
                path.trim_end(),
                color(series.color),
                series.dash.attribute(),
                escape(&series.name)
            );
        }
        skipped
    }

    /// Shade one band, one polygon per run of usable points; return the number left out.
    fn band(&self, svg: &mut String, frame: &Frame, band: &Band) -> usize {
        let mut skipped = 0;
        let mut runs: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new()];
        for &(x, lo, hi) in &band.points {
            if self.x.accepts(x) && self.y.accepts(lo) && self.y.accepts(hi) {
                if let Some(run) = runs.last_mut() {
                    run.push((x, lo, hi));
                }
            } else {
                skipped += 1;
                runs.push(Vec::new());
            }
        }
        for run in runs.iter().filter(|r| r.len() >= 2) {
            let upper = run
                .iter()
                .map(|&(x, _, hi)| (frame.px(&self.x, x), frame.py(&self.y, hi)));
            let lower = run
                .iter()
                .rev()
                .map(|&(x, lo, _)| (frame.px(&self.x, x), frame.py(&self.y, lo)));
            let points: Vec<String> = upper
                .chain(lower)
                .map(|(px, py)| format!("{px:.2},{py:.2}"))
                .collect();
            let _ = writeln!(
                svg,
                "<polygon points=\"{}\" fill=\"{}\" fill-opacity=\"0.3\" stroke=\"none\">\
                 <title>{}</title></polygon>",
                points.join(" "),
                color(band.color),
                escape(&band.name)
            );
        }
        skipped
    }

    /// The markers that fall inside the plot area, in dark grey.
    fn markers(&self, svg: &mut String, frame: &Frame) {
        let _ = writeln!(
            svg,
            "<g id=\"markers\" font-size=\"12\" fill=\"#222\" stroke-width=\"1\">"
        );
        let (left, right) = (LEFT, LEFT + plot_width());
        let (top, bottom) = (frame.top, frame.top + PLOT_HEIGHT);
        let inside_x = |px: f64| (left..=right).contains(&px);
        let inside_y = |py: f64| (top..=bottom).contains(&py);
        for marker in &self.markers {
            match marker {
                Marker::Vertical { x, label } if self.x.accepts(*x) => {
                    let px = frame.px(&self.x, *x);
                    if inside_x(px) {
                        // The label on the side with room.
                        let (tx, anchor) = if px > left + plot_width() * 0.7 {
                            (px - 4.0, "end")
                        } else {
                            (px + 4.0, "start")
                        };
                        let _ = writeln!(
                            svg,
                            "<line x1=\"{px:.2}\" y1=\"{top:.2}\" x2=\"{px:.2}\" \
                             y2=\"{bottom:.2}\" stroke=\"#444\" stroke-dasharray=\"4 3\"/>\
                             <text x=\"{tx:.2}\" y=\"{:.2}\" text-anchor=\"{anchor}\"{HALO}>{}</text>",
                            top + 14.0,
                            escape(label)
                        );
                    }
                }
                Marker::Point { x, y, label } if self.x.accepts(*x) && self.y.accepts(*y) => {
                    let (px, py) = (frame.px(&self.x, *x), frame.py(&self.y, *y));
                    if inside_x(px) && inside_y(py) {
                        let (tx, anchor) = if px > left + plot_width() * 0.7 {
                            (px - 8.0, "end")
                        } else {
                            (px + 8.0, "start")
                        };
                        // Below the point (above it near the bottom edge).
                        let ty = if py > bottom - 24.0 {
                            py - 9.0
                        } else {
                            py + 19.0
                        };
                        let _ = writeln!(
                            svg,
                            "<circle cx=\"{px:.2}\" cy=\"{py:.2}\" r=\"4\" fill=\"white\" \
                             stroke=\"#222\" stroke-width=\"1.5\"/><text x=\"{tx:.2}\" \
                             y=\"{ty:.2}\" text-anchor=\"{anchor}\"{HALO}>{}</text>",
                            escape(label)
                        );
                    }
                }
                _ => {}
            }
        }
        let _ = writeln!(svg, "</g>");
    }
}

/// The data range in transformed units (log10 for log axes) and the plot area's top.
struct Frame {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    top: f64,
}

impl Frame {
    fn px(&self, axis: &Axis, v: f64) -> f64 {
        LEFT + (axis.transform(v) - self.x0) / (self.x1 - self.x0) * plot_width()
    }

    fn py(&self, axis: &Axis, v: f64) -> f64 {
        self.top + PLOT_HEIGHT - (axis.transform(v) - self.y0) / (self.y1 - self.y0) * PLOT_HEIGHT
    }
}

fn plot_width() -> f64 {
    WIDTH - LEFT - RIGHT
}

/// The axis range in transformed units: fixed, or the data's (log axes widened to whole
/// decades, linear axes to a tick step), never empty.
fn range(axis: &Axis, values: Vec<f64>) -> (f64, f64) {
    if let Some((lo, hi)) = axis.range {
        if axis.accepts(lo) && axis.accepts(hi) && lo < hi {
            return (axis.transform(lo), axis.transform(hi));
        }
    }
    let data: Vec<f64> = values
        .into_iter()
        .filter(|&v| axis.accepts(v))
        .map(|v| axis.transform(v))
        .collect();
    let (mut lo, mut hi) = match (
        data.iter().copied().reduce(f64::min),
        data.iter().copied().reduce(f64::max),
    ) {
        (Some(lo), Some(hi)) => (lo, hi),
        _ => (0.0, 1.0),
    };
    if !(hi - lo).is_finite() {
        (lo, hi) = (0.0, 1.0);
    }
    if axis.scale == Scale::Linear && axis.from_zero && lo >= 0.0 {
        lo = 0.0;
    }
    if hi - lo <= 1e-12 * hi.abs().max(1.0) {
        lo -= 1.0;
        hi += 1.0;
    }
    match axis.scale {
        Scale::Log10 => (lo.floor(), hi.ceil()),
        Scale::Linear => {
            let step = nice_step(hi - lo);
            ((lo / step).floor() * step, (hi / step).ceil() * step)
        }
    }
}

/// A round tick step (1, 2 or 5 × 10^k) giving about five to ten ticks over `span`.
fn nice_step(span: f64) -> f64 {
    let raw = span / 6.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let fraction = raw / magnitude;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// Tick positions (in data units) and labels between `lo` and `hi` (transformed units).
fn ticks(axis: &Axis, lo: f64, hi: f64) -> Vec<(f64, String)> {
    match axis.scale {
        Scale::Log10 => {
            let (first, last) = (lo.ceil() as i32, hi.floor() as i32);
            let every = ((last - first) / 12 + 1).max(1);
            (first..=last)
                .filter(|k| (k - first) % every == 0)
                .map(|k| (10f64.powi(k), format!("1e{k}")))
                .collect()
        }
        Scale::Linear => {
            let step = nice_step(hi - lo);
            let decimals = (-step.log10().floor()).max(0.0) as usize;
            let first = (lo / step).ceil() as i64;
            let last = (hi / step + 1e-9).floor() as i64;
            (first..=last)
                .map(|i| {
                    let v = i as f64 * step;
                    (v, format!("{v:.decimals$}"))
                })
                .collect()
        }
    }
}

fn color(index: usize) -> &'static str {
    PALETTE[index % PALETTE.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_points_are_left_out_and_counted() {
        let mut plot = Plot::new(
            "t",
            "",
            Axis::new("δ", Scale::Log10),
            Axis::new("ε", Scale::Linear),
        );
        plot.series.push(Series::nth(
            0,
            "a",
            vec![
                (1e-5, 1.0),
                (1e-4, f64::INFINITY),
                (0.0, 2.0),
                (1e-3, f64::NAN),
                (1e-2, 0.5),
            ],
        ));
        let svg = plot.svg();
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        assert!(svg.contains("3 points not finite"), "{svg}");
    }

    #[test]
    fn empty_plot_has_axes_and_no_nan() {
        let plot = Plot::new(
            "empty",
            "",
            Axis::new("x", Scale::Linear),
            Axis::new("y", Scale::Log10),
        );
        let svg = plot.svg();
        assert!(svg.contains("x-label") && !svg.contains("NaN"), "{svg}");
    }

    #[test]
    fn log_ticks_are_decades() {
        let axis = Axis::new("δ", Scale::Log10);
        let labels: Vec<String> = ticks(&axis, -12.0, -1.0).into_iter().map(|t| t.1).collect();
        assert_eq!(labels.first().map(String::as_str), Some("1e-12"));
        assert_eq!(labels.last().map(String::as_str), Some("1e-1"));
        assert_eq!(labels.len(), 12);
    }

    #[test]
    fn curves_differ_in_colour_and_dash() {
        let looks: Vec<(usize, LineStyle)> = (0..77)
            .map(|i| {
                let s = Series::nth(i, "c", Vec::new());
                (s.color, s.dash)
            })
            .collect();
        for (i, a) in looks.iter().enumerate() {
            for b in &looks[i + 1..] {
                assert_ne!(a, b);
            }
        }
        // Neighbours differ in both.
        for pair in looks.windows(2) {
            assert!(pair[0].0 != pair[1].0 && pair[0].1 != pair[1].1);
        }
    }

    #[test]
    fn markers_outside_the_data_are_not_drawn_and_the_height_grows_with_the_legend() {
        let mut plot = Plot::new(
            "t",
            "a subtitle",
            Axis::new("x", Scale::Linear).range(0.0, 1.0),
            Axis::new("y", Scale::Linear).range(0.0, 1.0),
        );
        plot.markers.push(Marker::Vertical {
            x: 0.5,
            label: "inside".into(),
        });
        plot.markers.push(Marker::Vertical {
            x: 5.0,
            label: "outside".into(),
        });
        let short = plot.svg();
        assert!(short.contains("inside") && !short.contains("outside"));
        for i in 0..9 {
            plot.series
                .push(Series::nth(i, &format!("curve {i}"), vec![(0.0, 0.0)]));
        }
        let height = |svg: &str| -> f64 {
            let start = svg.find("height=\"").unwrap() + 8;
            svg[start..].split('"').next().unwrap().parse().unwrap()
        };
        assert!(height(&plot.svg()) > height(&short) + 4.0 * LEGEND_LINE);
    }
}
