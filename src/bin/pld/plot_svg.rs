//! A small line plot written as SVG by hand: curves, shaded bands, decade ticks on log axes,
//! labelled axes and a legend. No dependency, deterministic output.
//!
//! Data are mapped to pixels only when finite (and positive on a log axis); other points are
//! left out, break the line, and are counted in a note under the plot, so no coordinate is
//! ever NaN.

use std::fmt::Write;

/// Canvas size and margins (pixels).
const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 540.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 250.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 70.0;

/// Line colours (Okabe–Ito, distinguishable with colour-vision deficiencies) and the band's.
const PALETTE: [&str; 8] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#f0e442",
];
const BAND_FILL: &str = "#0072b2";

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

/// Line style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Solid,
    Dashed,
    Dotted,
}

/// A curve through `(x, y)` points, in order.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub style: Style,
    /// Index into the palette.
    pub color: usize,
}

/// A shaded region between two curves: `(x, low, high)`.
#[derive(Debug, Clone)]
pub struct Band {
    pub name: String,
    pub points: Vec<(f64, f64, f64)>,
    /// Index into the palette (unused colours fall back to the band colour).
    pub color: usize,
}

/// A plot: title, axes, bands (drawn first) and curves.
#[derive(Debug, Clone)]
pub struct Plot {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub bands: Vec<Band>,
    pub series: Vec<Series>,
    /// Lines of small text under the legend (e.g. what the line styles mean).
    pub legend_notes: Vec<String>,
}

impl Plot {
    pub fn new(title: &str, x: Axis, y: Axis) -> Plot {
        Plot {
            title: title.into(),
            x,
            y,
            bands: Vec::new(),
            series: Vec::new(),
            legend_notes: Vec::new(),
        }
    }

    /// The plot as a standalone SVG document.
    pub fn svg(&self) -> String {
        let xs = self.all_points().map(|p| p.0);
        let ys = self.all_points().map(|p| p.1);
        let (x0, x1) = range(&self.x, xs.collect());
        let (y0, y1) = range(&self.y, ys.collect());
        let frame = Frame { x0, x1, y0, y1 };
        let mut svg = String::new();
        let mut skipped = 0;
        let _ = writeln!(
            svg,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
             viewBox=\"0 0 {WIDTH} {HEIGHT}\" font-family=\"sans-serif\" font-size=\"13\">"
        );
        let _ = writeln!(svg, "<title>{}</title>", escape(&self.title));
        let _ = writeln!(
            svg,
            "<rect width=\"{WIDTH}\" height=\"{HEIGHT}\" fill=\"white\"/>"
        );
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"28\" text-anchor=\"middle\" font-size=\"15\">{}</text>",
            LEFT + plot_width() / 2.0,
            escape(&self.title)
        );
        self.grid_and_ticks(&mut svg, &frame);
        let _ = writeln!(svg, "<g id=\"data\">");
        for band in &self.bands {
            skipped += self.band(&mut svg, &frame, band);
        }
        for series in &self.series {
            skipped += self.curve(&mut svg, &frame, series);
        }
        let _ = writeln!(svg, "</g>");
        // The frame on top of the data.
        let _ = writeln!(
            svg,
            "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" \
             stroke=\"#333\"/>",
            plot_width(),
            plot_height()
        );
        self.axis_labels(&mut svg);
        self.legend(&mut svg);
        if skipped > 0 {
            let _ = writeln!(
                svg,
                "<text id=\"note\" x=\"{LEFT}\" y=\"{:.1}\" font-size=\"11\" fill=\"#555\">\
                 {skipped} points not finite (or not positive on a log axis), left out</text>",
                HEIGHT - 8.0
            );
        }
        svg.push_str("</svg>\n");
        svg
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
        let _ = writeln!(svg, "<g id=\"ticks\" font-size=\"11\" fill=\"#333\">");
        for (value, label) in ticks(&self.x, frame.x0, frame.x1) {
            let px = frame.px(&self.x, value);
            let _ = writeln!(
                svg,
                "<line x1=\"{px:.2}\" y1=\"{TOP}\" x2=\"{px:.2}\" y2=\"{:.2}\" stroke=\"#e4e4e4\"/>\
                 <text x=\"{px:.2}\" y=\"{:.2}\" text-anchor=\"middle\">{}</text>",
                TOP + plot_height(),
                TOP + plot_height() + 16.0,
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

    fn axis_labels(&self, svg: &mut String) {
        let scale = |axis: &Axis| match axis.scale {
            Scale::Linear => "",
            Scale::Log10 => " (log scale)",
        };
        let _ = writeln!(
            svg,
            "<text id=\"x-label\" class=\"axis-label\" x=\"{:.1}\" y=\"{:.1}\" \
             text-anchor=\"middle\" font-size=\"15\">{}{}</text>",
            LEFT + plot_width() / 2.0,
            TOP + plot_height() + 42.0,
            escape(&self.x.label),
            scale(&self.x)
        );
        let (x, y) = (22.0, TOP + plot_height() / 2.0);
        let _ = writeln!(
            svg,
            "<text id=\"y-label\" class=\"axis-label\" x=\"{x}\" y=\"{y:.1}\" \
             text-anchor=\"middle\" font-size=\"15\" transform=\"rotate(-90 {x} {y:.1})\">\
             {}{}</text>",
            escape(&self.y.label),
            scale(&self.y)
        );
    }

    fn legend(&self, svg: &mut String) {
        let x = LEFT + plot_width() + 16.0;
        let mut y = TOP + 8.0;
        let _ = writeln!(svg, "<g id=\"legend\">");
        for band in &self.bands {
            let _ = writeln!(
                svg,
                "<rect x=\"{x}\" y=\"{:.1}\" width=\"26\" height=\"10\" fill=\"{}\" \
                 fill-opacity=\"0.25\"/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                y - 5.0,
                band_color(band.color),
                x + 34.0,
                y + 4.5,
                escape(&band.name)
            );
            y += 20.0;
        }
        for series in &self.series {
            let _ = writeln!(
                svg,
                "<line x1=\"{x}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{}\" \
                 stroke-width=\"2\"{}/><text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                x + 26.0,
                color(series.color),
                dash(series.style),
                x + 34.0,
                y + 4.5,
                escape(&series.name)
            );
            y += 20.0;
        }
        for note in &self.legend_notes {
            y += 2.0;
            let _ = writeln!(
                svg,
                "<text x=\"{x}\" y=\"{:.1}\" font-size=\"11\" fill=\"#555\">{}</text>",
                y + 4.5,
                escape(note)
            );
            y += 16.0;
        }
        let _ = writeln!(svg, "</g>");
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
                "<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}>\
                 <title>{}</title></path>",
                path.trim_end(),
                color(series.color),
                dash(series.style),
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
                "<polygon points=\"{}\" fill=\"{}\" fill-opacity=\"0.25\" stroke=\"none\">\
                 <title>{}</title></polygon>",
                points.join(" "),
                band_color(band.color),
                escape(&band.name)
            );
        }
        skipped
    }
}

/// The data range in transformed units (log10 for log axes).
struct Frame {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

impl Frame {
    fn px(&self, axis: &Axis, v: f64) -> f64 {
        LEFT + (axis.transform(v) - self.x0) / (self.x1 - self.x0) * plot_width()
    }

    fn py(&self, axis: &Axis, v: f64) -> f64 {
        TOP + plot_height() - (axis.transform(v) - self.y0) / (self.y1 - self.y0) * plot_height()
    }
}

fn plot_width() -> f64 {
    WIDTH - LEFT - RIGHT
}

fn plot_height() -> f64 {
    HEIGHT - TOP - BOTTOM
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

fn band_color(index: usize) -> &'static str {
    PALETTE.get(index).copied().unwrap_or(BAND_FILL)
}

fn dash(style: Style) -> &'static str {
    match style {
        Style::Solid => "",
        Style::Dashed => " stroke-dasharray=\"7 4\"",
        Style::Dotted => " stroke-dasharray=\"2 3\"",
    }
}

/// Text for an XML element or attribute.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_points_are_left_out_and_counted() {
        let mut plot = Plot::new(
            "t",
            Axis::new("δ", Scale::Log10),
            Axis::new("ε", Scale::Linear),
        );
        plot.series.push(Series {
            name: "a".into(),
            points: vec![
                (1e-5, 1.0),
                (1e-4, f64::INFINITY),
                (0.0, 2.0),
                (1e-3, f64::NAN),
                (1e-2, 0.5),
            ],
            style: Style::Solid,
            color: 0,
        });
        let svg = plot.svg();
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        assert!(svg.contains("3 points not finite"), "{svg}");
    }

    #[test]
    fn empty_plot_has_axes_and_no_nan() {
        let plot = Plot::new(
            "empty",
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
}
