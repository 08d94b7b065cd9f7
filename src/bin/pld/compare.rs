//! `pld compare`: every accountant on one composition at one δ, and ε(δ) of each for the plot.

use crate::input::Input;
use crate::plot::{Axis, Band, Marker, Plot, Scale, Series};
use crate::progress::Progress;
use crate::render::number;
use pld_accountant::comparison::{method_title, NotApplicableRow, PLD_LOWER, PLD_UPPER};
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

/// Points per decade of δ in the plot.
const PLOT_POINTS_PER_DECADE: i32 = 6;

/// The δ values of the plot: six per decade from 1e-12 to 1e-1 (67 values).
pub fn plot_deltas() -> Vec<f64> {
    (0..=11 * PLOT_POINTS_PER_DECADE)
        .map(|k| 10f64.powf(-12.0 + f64::from(k) / f64::from(PLOT_POINTS_PER_DECADE)))
        .collect()
}

/// ε(δ) of every method for δ from 1e-12 to 1e-1, the PLD bracket shaded, the requested δ
/// and the answer at it marked (`report`).
///
/// # Errors
/// As [`compare`].
pub fn plot(
    spec: &CompositionSpec,
    options: AccountantOptions,
    report: &CompareReport,
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
        &format!("ε(δ) of every method (requested δ = {:e})", report.delta),
        &subtitle(&report.source, report.about.as_deref()),
        Axis::new("δ", Scale::Log10).range(1e-12, 1e-1),
        Axis::new("ε", Scale::Linear).starting_at_zero(),
    );
    if !band.is_empty() {
        let widest = band
            .iter()
            .map(|&(_, lo, hi)| hi - lo)
            .filter(|w| w.is_finite())
            .fold(0.0, f64::max);
        plot.notes.push(format!(
            "The PLD bracket (shaded, between the PLD bounds) is at most {} wide in ε: the \
             truth lies inside it.",
            number::upper(widest)
        ));
        plot.bands.push(Band {
            name: "PLD bracket (guaranteed)".into(),
            points: band,
            color: 0,
        });
    }
    let mut others = 2;
    for (method, kind, points) in series {
        let title = method_title(&method);
        let curve = match method.as_str() {
            PLD_UPPER => Series::nth(0, &format!("{title} (publish this)"), points),
            PLD_LOWER => Series {
                color: 5,
                ..Series::nth(1, title, points)
            },
            _ => {
                // A colour and a dash pattern of its own, never the PLD bounds' blues.
                while [0, 5].contains(&(others % 11)) {
                    others += 1;
                }
                others += 1;
                Series::nth(
                    others - 1,
                    &format!("{title}{}", kind_suffix(title, kind)),
                    points,
                )
            }
        };
        plot.series.push(curve);
    }
    plot.markers.push(Marker::Vertical {
        x: report.delta,
        label: format!("δ = {:e}", report.delta),
    });
    if let Some(row) = report.rows.iter().find(|r| r.method == PLD_UPPER) {
        plot.markers.push(Marker::Point {
            x: report.delta,
            y: row.epsilon,
            label: format!("ε ≤ {}", number::upper(row.epsilon)),
        });
    }
    plot.notes.push(
        "Upper and lower bounds are guaranteed; an estimate is neither. Each curve has its own \
         colour and dash pattern."
            .into(),
    );
    Ok(plot)
}

/// ", upper bound" and so on, unless the method's title already says what it is.
fn kind_suffix(title: &str, kind: Kind) -> &'static str {
    if title.contains("bound") || title.contains("estimate") || title.contains("claim") {
        return "";
    }
    match kind {
        Kind::UpperBound => " — upper bound",
        Kind::LowerBound => " — lower bound",
        Kind::Estimate => " — estimate (no guarantee)",
    }
}

/// The plot's subtitle: what was accounted, and the preset's description.
pub fn subtitle(source: &str, about: Option<&str>) -> String {
    match about {
        Some(about) => format!("{source}: {about}"),
        None => source.to_string(),
    }
}
