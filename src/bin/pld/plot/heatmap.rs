//! A heatmap written as SVG by hand: one coloured cell per pair of parameter values, the value
//! written in cells large enough to hold it, a colour bar, a wrapped title and notes.
//!
//! Colours follow viridis (perceptually uniform, readable in grey and with colour-vision
//! deficiencies), on a log scale when the values span more than a factor of 20. Cells whose
//! value is not finite are grey and say so.

use super::text::{document, escape, header};
use std::fmt::Write;

const WIDTH: f64 = 900.0;
const LEFT: f64 = 100.0;
/// Room on the right for the colour bar and its labels.
const RIGHT: f64 = 130.0;
const AREA_HEIGHT: f64 = 420.0;
/// Space under the cells for the x labels and the axis name.
const X_AXIS_SPACE: f64 = 60.0;

/// Viridis at nine evenly spaced points (matplotlib's table).
const VIRIDIS: [[u8; 3]; 9] = [
    [68, 1, 84],
    [71, 44, 122],
    [59, 81, 139],
    [44, 113, 142],
    [33, 144, 141],
    [39, 173, 129],
    [92, 200, 99],
    [170, 220, 50],
    [253, 231, 37],
];

/// A grid of values: `values[j][i]` for column `i` (x) and row `j` (y, drawn bottom-up).
#[derive(Debug, Clone)]
pub struct Heatmap {
    pub title: String,
    pub subtitle: String,
    pub x_label: String,
    pub y_label: String,
    pub x_ticks: Vec<String>,
    pub y_ticks: Vec<String>,
    pub values: Vec<Vec<f64>>,
    /// The cell text for a value (e.g. rounded up).
    pub cell_text: fn(f64) -> String,
    /// What the colours mean, e.g. "ε upper bound".
    pub value_label: String,
    pub notes: Vec<String>,
}

/// Maps values to [0, 1] for the colour scale.
struct ColorScale {
    low: f64,
    high: f64,
    log: bool,
}

impl ColorScale {
    fn new(values: &[f64]) -> ColorScale {
        let finite = values.iter().copied().filter(|v| v.is_finite());
        let low = finite.clone().fold(f64::INFINITY, f64::min);
        let high = finite.fold(f64::NEG_INFINITY, f64::max);
        if !(low.is_finite() && high.is_finite()) {
            return ColorScale {
                low: 0.0,
                high: 1.0,
                log: false,
            };
        }
        let log = low > 0.0 && high / low > 20.0;
        ColorScale { low, high, log }
    }

    /// Position of `v` in [0, 1].
    fn position(&self, v: f64) -> f64 {
        let t = if self.log {
            (v / self.low).ln() / (self.high / self.low).ln()
        } else {
            (v - self.low) / (self.high - self.low)
        };
        if t.is_finite() {
            t.clamp(0.0, 1.0)
        } else {
            0.5
        }
    }

    /// The value at position `t` in [0, 1].
    fn value(&self, t: f64) -> f64 {
        if self.log {
            self.low * (self.high / self.low).powf(t)
        } else {
            self.low + (self.high - self.low) * t
        }
    }
}

/// A cell's text: `cell_text` for a finite value, `inf` or `n/a` otherwise.
fn text(cell_text: fn(f64) -> String, v: f64) -> String {
    if v.is_finite() {
        cell_text(v)
    } else if v == f64::INFINITY {
        "inf".into()
    } else {
        "n/a".into()
    }
}

/// Viridis at `t` in [0, 1], and whether text on it should be white.
fn viridis(t: f64) -> (String, bool) {
    let x = t.clamp(0.0, 1.0) * (VIRIDIS.len() - 1) as f64;
    let k = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let f = x - k as f64;
    let c: Vec<u8> = (0..3)
        .map(|i| {
            let (a, b) = (f64::from(VIRIDIS[k][i]), f64::from(VIRIDIS[k + 1][i]));
            (a + (b - a) * f).round() as u8
        })
        .collect();
    (format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2]), t < 0.6)
}

impl Heatmap {
    /// The heatmap as a standalone SVG document.
    pub fn svg(&self) -> String {
        let nx = self.x_ticks.len().max(1);
        let ny = self.y_ticks.len().max(1);
        let all: Vec<f64> = self.values.iter().flatten().copied().collect();
        let scale = ColorScale::new(&all);
        let mut body = String::new();
        let top = header(&mut body, &self.title, &self.subtitle, WIDTH) + 8.0;
        let area_width = WIDTH - LEFT - RIGHT;
        let (cw, ch) = (area_width / nx as f64, AREA_HEIGHT / ny as f64);
        let font = (ch * 0.45).min(cw / 4.2).min(12.0);
        let write_values = font >= 7.5;
        let mut not_finite = 0;
        let _ = writeln!(
            body,
            "<g id=\"cells\" font-size=\"{font:.1}\" text-anchor=\"middle\">"
        );
        for (j, row) in self.values.iter().enumerate().take(ny) {
            for (i, &v) in row.iter().enumerate().take(nx) {
                let x = LEFT + i as f64 * cw;
                let y = top + AREA_HEIGHT - (j + 1) as f64 * ch;
                let (fill, white) = if v.is_finite() {
                    viridis(scale.position(v))
                } else {
                    not_finite += 1;
                    ("#bbbbbb".to_string(), false)
                };
                let _ = write!(
                    body,
                    "<rect x=\"{x:.2}\" y=\"{y:.2}\" width=\"{:.2}\" height=\"{:.2}\" \
                     fill=\"{fill}\" stroke=\"white\" stroke-width=\"0.5\"/>",
                    cw, ch
                );
                if write_values {
                    let _ = write!(
                        body,
                        "<text x=\"{:.2}\" y=\"{:.2}\" fill=\"{}\">{}</text>",
                        x + cw / 2.0,
                        y + ch / 2.0 + font * 0.35,
                        if white { "white" } else { "black" },
                        escape(&text(self.cell_text, v))
                    );
                }
                body.push('\n');
            }
        }
        let _ = writeln!(body, "</g>");
        self.axes(&mut body, top, cw, ch);
        self.color_bar(&mut body, &scale, top);
        let mut notes = self.notes.clone();
        if not_finite > 0 {
            notes.push(format!("{not_finite} grey cells: value not finite"));
        }
        let mut y = top + AREA_HEIGHT + X_AXIS_SPACE + 6.0;
        let _ = writeln!(body, "<g id=\"notes\" font-size=\"11\" fill=\"#555\">");
        for note in &notes {
            let _ = writeln!(
                body,
                "<text x=\"{LEFT}\" y=\"{y:.1}\">{}</text>",
                escape(note)
            );
            y += 15.0;
        }
        let _ = writeln!(body, "</g>");
        let height = y + 6.0;
        document(WIDTH, height, &self.title, &body)
    }

    /// Tick labels (thinned to about twelve per axis) and axis names.
    fn axes(&self, svg: &mut String, top: f64, cw: f64, ch: f64) {
        let bottom = top + AREA_HEIGHT;
        let every = |n: usize| n.div_ceil(12).max(1);
        let _ = writeln!(svg, "<g id=\"ticks\" font-size=\"11\" fill=\"#333\">");
        let step = every(self.x_ticks.len());
        for (i, label) in self
            .x_ticks
            .iter()
            .enumerate()
            .filter(|(i, _)| i % step == 0)
        {
            let _ = writeln!(
                svg,
                "<text x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"middle\">{}</text>",
                LEFT + (i as f64 + 0.5) * cw,
                bottom + 16.0,
                escape(label)
            );
        }
        let step = every(self.y_ticks.len());
        for (j, label) in self
            .y_ticks
            .iter()
            .enumerate()
            .filter(|(j, _)| j % step == 0)
        {
            let _ = writeln!(
                svg,
                "<text x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"end\">{}</text>",
                LEFT - 6.0,
                bottom - (j as f64 + 0.5) * ch + 4.0,
                escape(label)
            );
        }
        let _ = writeln!(svg, "</g>");
        let _ = writeln!(
            svg,
            "<text id=\"x-label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" \
             font-size=\"14\">{}</text>",
            LEFT + (WIDTH - LEFT - RIGHT) / 2.0,
            bottom + 40.0,
            escape(&self.x_label)
        );
        let (x, y) = (24.0, top + AREA_HEIGHT / 2.0);
        let _ = writeln!(
            svg,
            "<text id=\"y-label\" x=\"{x}\" y=\"{y:.1}\" text-anchor=\"middle\" font-size=\"14\" \
             transform=\"rotate(-90 {x} {y:.1})\">{}</text>",
            escape(&self.y_label)
        );
    }

    /// A vertical colour bar right of the cells, with five labelled values.
    fn color_bar(&self, svg: &mut String, scale: &ColorScale, top: f64) {
        let x = WIDTH - RIGHT + 24.0;
        let steps = 60;
        let h = AREA_HEIGHT / f64::from(steps);
        let _ = writeln!(svg, "<g id=\"legend\" font-size=\"11\" fill=\"#333\">");
        for k in 0..steps {
            let t = (f64::from(k) + 0.5) / f64::from(steps);
            let (fill, _) = viridis(t);
            let _ = write!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{:.2}\" width=\"18\" height=\"{:.2}\" fill=\"{fill}\"/>",
                top + AREA_HEIGHT - f64::from(k + 1) * h,
                h + 0.3
            );
        }
        svg.push('\n');
        for k in 0..=4 {
            let t = f64::from(k) / 4.0;
            let _ = writeln!(
                svg,
                "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                x + 24.0,
                top + AREA_HEIGHT - t * AREA_HEIGHT + 4.0,
                escape(&(self.cell_text)(scale.value(t)))
            );
        }
        let (lx, ly) = (x + 9.0, top - 6.0);
        let _ = writeln!(
            svg,
            "<text x=\"{lx:.1}\" y=\"{ly:.1}\" text-anchor=\"middle\">{}{}</text>",
            escape(&self.value_label),
            if scale.log { " (log)" } else { "" }
        );
        let _ = writeln!(svg, "</g>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(values: Vec<Vec<f64>>) -> Heatmap {
        Heatmap {
            title: "t".into(),
            subtitle: "s".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_ticks: (0..values[0].len()).map(|i| i.to_string()).collect(),
            y_ticks: (0..values.len()).map(|j| j.to_string()).collect(),
            values,
            cell_text: |v| format!("{v:.2}"),
            value_label: "ε".into(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn every_cell_is_drawn_and_non_finite_cells_are_grey_and_counted() {
        let svg = map(vec![
            vec![1.0, 2.0, f64::INFINITY],
            vec![f64::NAN, 5.0, 6.0],
        ])
        .svg();
        assert!(!svg.contains("NaN"), "{svg}");
        let cells = svg
            .split("<g id=\"cells\"")
            .nth(1)
            .unwrap()
            .split("</g>")
            .next()
            .unwrap();
        assert_eq!(cells.matches("<rect").count(), 6);
        assert_eq!(cells.matches("#bbbbbb").count(), 2);
        assert!(svg.contains("2 grey cells"));
    }

    #[test]
    fn colours_run_from_dark_to_light_and_switch_to_log_for_wide_ranges() {
        assert_eq!(viridis(0.0).0, "#440154");
        assert_eq!(viridis(1.0).0, "#fde725");
        assert!(ColorScale::new(&[0.1, 100.0]).log);
        assert!(!ColorScale::new(&[1.0, 10.0]).log);
        let s = ColorScale::new(&[0.1, 1000.0]);
        assert!((s.position(10.0) - 0.5).abs() < 1e-12);
        assert!((s.value(0.5) - 10.0).abs() < 1e-9);
        // All equal or none finite: no NaN.
        assert_eq!(ColorScale::new(&[2.0, 2.0]).position(2.0), 0.5);
        assert_eq!(ColorScale::new(&[f64::NAN]).position(1.0), 1.0);
    }
}
