//! `pld tradeoff`: the certified membership-inference trade-off, and its ROC plot.

use crate::compare::subtitle;
use crate::input::Input;
use crate::plot::{Axis, Band, Marker, Plot, Scale, Series};
use crate::render::number;
use pld_accountant::tradeoff::{self, Tradeoff, TradeoffPoint};
use pld_accountant::{Accountant, Error};
use serde::Serialize;

/// Smallest false-positive rate drawn in the plot.
const PLOT_SMALLEST_FPR: f64 = 1e-6;

/// Points per plotted curve.
const PLOT_POINTS: usize = 241;

/// The trade-off as printed: the library's answer and what it is about.
#[derive(Debug, Clone, Serialize)]
pub struct TradeoffReport {
    /// `points`, `tpr_at_fpr`, `advantage` and how the profile was read.
    #[serde(flatten)]
    pub curve: Tradeoff,
    /// What was accounted.
    pub source: String,
    /// The preset's description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub about: Option<String>,
}

impl TradeoffReport {
    /// The bracket at every α of `alphas` (see [`tradeoff::tradeoff`]), and the plot's
    /// points when `with_plot` (from the same reading of the profile).
    ///
    /// # Errors
    /// Invalid α values; the accountant's errors.
    pub fn new(
        accountant: &Accountant,
        alphas: &[f64],
        with_plot: bool,
        input: &Input,
    ) -> Result<(TradeoffReport, Vec<TradeoffPoint>), Error> {
        let mut all = alphas.to_vec();
        if with_plot {
            all.extend(tradeoff::log_alphas(PLOT_SMALLEST_FPR, PLOT_POINTS));
        }
        let mut curve = tradeoff::tradeoff(accountant, &all)?;
        let plotted = curve.points.split_off(alphas.len());
        let report = TradeoffReport {
            curve,
            source: input.source.clone(),
            about: input.about.clone(),
        };
        Ok((report, plotted))
    }
}

/// The ROC curve on log-log axes: TPR against FPR, the certified region shaded between the
/// largest TPR any attack can reach (1 − β lower bound, the guarantee) and the smallest that
/// value can be; the diagonal of random guessing for reference; the guaranteed TPR at FPR
/// 1e-3, 1e-2 and 1e-1 marked.
pub fn plot(report: &TradeoffReport, curve: &[TradeoffPoint]) -> Plot {
    let points: Vec<(f64, f64, f64)> = curve
        .iter()
        .map(|p| (p.alpha, 1.0 - p.beta.upper, 1.0 - p.beta.lower))
        .collect();
    let mut plot = Plot::new(
        "Membership-inference risk: the best attack's TPR at each FPR",
        &subtitle(&report.source, report.about.as_deref()),
        Axis::new("false-positive rate α (FPR)", Scale::Log10).range(PLOT_SMALLEST_FPR, 1.0),
        Axis::new("true-positive rate 1 − β (TPR)", Scale::Log10),
    );
    plot.bands.push(Band {
        name: "certified bracket".into(),
        points: points.clone(),
        color: 0,
    });
    plot.series.push(Series::nth(
        0,
        "best attack's TPR, at most (the guarantee)",
        points.iter().map(|&(a, _, hi)| (a, hi)).collect(),
    ));
    plot.series.push(Series::nth(
        1,
        "best attack's TPR, at least",
        points.iter().map(|&(a, lo, _)| (a, lo)).collect(),
    ));
    plot.series.push(Series {
        color: 10,
        ..Series::nth(
            2,
            "random guess (TPR = FPR)",
            vec![(PLOT_SMALLEST_FPR, PLOT_SMALLEST_FPR), (1.0, 1.0)],
        )
    });
    for t in &report.curve.tpr_at_fpr {
        plot.markers.push(Marker::Point {
            x: t.fpr,
            y: t.tpr.upper,
            label: format!("TPR ≤ {}", number::upper(t.tpr.upper)),
        });
    }
    let at: Vec<String> = report
        .curve
        .tpr_at_fpr
        .iter()
        .map(|t| format!("{} at FPR {:e}", number::upper(t.tpr.upper), t.fpr))
        .collect();
    plot.notes
        .push(format!("Marked: TPR at most {}.", at.join(", ")));
    plot.notes.push(format!(
        "Advantage max(TPR − FPR) ≤ {}. No membership-inference attack on this release does \
         better than the solid curve.",
        number::upper(report.curve.advantage.upper)
    ));
    plot
}
