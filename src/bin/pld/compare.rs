//! `pld compare`: every accountant on one composition at one δ, and ε(δ) of each for the plot.

use crate::input::Input;
use crate::plot_svg::{Axis, Band, Plot, Scale, Series, Style};
use crate::progress::Progress;
use crate::render::number;
use pld_accountant::comparison::{NotApplicableRow, PLD_LOWER, PLD_UPPER};
use pld_accountant::{compare, AccountantOptions, CompositionSpec, Error, Kind};
use serde::Serialize;

/// The comparison as printed: the documented keys (`delta`, `rows[].method`, `epsilon`,
/// `kind`, `seconds`) and extras (`ratio_to_pld_upper`, `detail`, `not_applicable`, `source`).
#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    /// The δ every row answers for.
    #[serde(serialize_with = "number::serialize")]
    pub delta: f64,
    /// The methods that apply, in the library's order (PLD first).
    pub rows: Vec<CompareRow>,
    /// The methods that do not apply, with the reason.
    pub not_applicable: Vec<NotApplicableRow>,
    /// What was compared (preset, file, flags).
    pub source: String,
    /// The preset's description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub about: Option<String>,
}

/// One method's ε.
#[derive(Debug, Clone, Serialize)]
pub struct CompareRow {
    /// Stable method name, e.g. `"rdp"`.
    pub method: String,
    /// ε at δ (`"inf"` when infinite).
    #[serde(serialize_with = "number::serialize")]
    pub epsilon: f64,
    /// `upper_bound`, `lower_bound` or `estimate`.
    pub kind: Kind,
    /// Computing time of the method (the PLD rows share one computation).
    pub seconds: f64,
    /// ε divided by the PLD upper bound's ε; `null` when that is unavailable, zero or
    /// infinite.
    #[serde(serialize_with = "number::serialize_option")]
    pub ratio_to_pld_upper: Option<f64>,
    /// How the value was obtained (grid, RDP order and conversion, μ, ...).
    pub detail: String,
}

impl CompareReport {
    /// Run every accountant on `spec` at `delta`.
    ///
    /// # Errors
    /// Invalid δ or accountant options (the library's [`compare`]).
    pub fn new(
        spec: &CompositionSpec,
        delta: f64,
        options: AccountantOptions,
        input: &Input,
    ) -> Result<CompareReport, Error> {
        let comparison = compare(spec, delta, options)?;
        let reference = comparison
            .row(PLD_UPPER)
            .map(|r| r.epsilon)
            .filter(|e| e.is_finite() && *e > 0.0);
        let rows = comparison
            .rows
            .iter()
            .map(|r| CompareRow {
                method: r.method.to_string(),
                epsilon: r.epsilon,
                kind: r.kind,
                seconds: r.seconds,
                ratio_to_pld_upper: reference.and_then(|u| ratio(r.epsilon, u)),
                detail: r.detail.clone(),
            })
            .collect();
        Ok(CompareReport {
            delta,
            rows,
            not_applicable: comparison.not_applicable,
            source: input.source.clone(),
            about: input.about.clone(),
        })
    }
}

/// `epsilon / reference` for a finite positive reference; never NaN.
fn ratio(epsilon: f64, reference: f64) -> Option<f64> {
    let r = epsilon / reference;
    (!r.is_nan()).then_some(r)
}

/// One method's name, kind and (δ, ε) points.
type MethodCurve = (String, Kind, Vec<(f64, f64)>);

/// The δ values of the plot: half decades from 1e-12 to 1e-1.
pub fn plot_deltas() -> Vec<f64> {
    (0..=22)
        .map(|k| 10f64.powf(-12.0 + 0.5 * k as f64))
        .collect()
}

/// ε(δ) of every method for δ from 1e-12 to 1e-1, the PLD bracket shaded.
///
/// # Errors
/// As [`compare`].
pub fn plot(
    spec: &CompositionSpec,
    options: AccountantOptions,
    title: &str,
    progress: &Progress,
) -> Result<Plot, Error> {
    let deltas = plot_deltas();
    let task = progress.task("ε(δ) of every method for the plot", deltas.len());
    // Methods in the order they first appear, with their points.
    let mut series: Vec<MethodCurve> = Vec::new();
    for &delta in &deltas {
        let comparison = compare(spec, delta, options)?;
        for row in &comparison.rows {
            let index = match series.iter().position(|s| s.0 == row.method) {
                Some(i) => i,
                None => {
                    series.push((row.method.to_string(), row.kind, Vec::new()));
                    series.len() - 1
                }
            };
            series[index].2.push((delta, row.epsilon));
        }
        task.advance();
    }
    drop(task);
    let points_of = |method: &str| {
        series
            .iter()
            .find(|s| s.0 == method)
            .map(|s| s.2.clone())
            .unwrap_or_default()
    };
    let (upper, lower) = (points_of(PLD_UPPER), points_of(PLD_LOWER));
    let band: Vec<(f64, f64, f64)> = upper
        .iter()
        .filter_map(|&(d, hi)| {
            lower
                .iter()
                .find(|&&(d2, _)| d2 == d)
                .map(|&(_, lo)| (d, lo, hi))
        })
        .collect();
    let mut plot = Plot::new(
        title,
        Axis::new("δ", Scale::Log10).range(1e-12, 1e-1),
        Axis::new("ε", Scale::Linear).starting_at_zero(),
    );
    if !band.is_empty() {
        plot.bands.push(Band {
            name: "PLD bracket (guaranteed)".into(),
            points: band,
            color: 0,
        });
    }
    let mut next_color = 1;
    for (method, kind, points) in series {
        let (style, color_index) = match method.as_str() {
            PLD_UPPER => (Style::Solid, 0),
            PLD_LOWER => (Style::Dashed, 0),
            _ => {
                next_color += 1;
                let style = match kind {
                    Kind::Estimate => Style::Dotted,
                    Kind::LowerBound => Style::Dashed,
                    Kind::UpperBound => Style::Solid,
                };
                (style, next_color - 1)
            }
        };
        plot.series.push(Series {
            name: method.to_string(),
            points,
            style,
            color: color_index,
        });
    }
    plot.legend_notes = vec![
        "solid: upper bound".into(),
        "dashed: lower bound".into(),
        "dotted: estimate (no guarantee)".into(),
    ];
    Ok(plot)
}
