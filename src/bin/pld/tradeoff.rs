//! `pld tradeoff`: the certified membership-inference trade-off, and its ROC plot.

use crate::input::Input;
use crate::plot_svg::{Axis, Band, Plot, Scale, Series, Style};
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
/// value can be; the diagonal of random guessing for reference.
pub fn plot(curve: &[TradeoffPoint], title: &str) -> Plot {
    let points: Vec<(f64, f64, f64)> = curve
        .iter()
        .map(|p| (p.alpha, 1.0 - p.beta.upper, 1.0 - p.beta.lower))
        .collect();
    let mut plot = Plot::new(
        title,
        Axis::new("false-positive rate α (FPR)", Scale::Log10).range(PLOT_SMALLEST_FPR, 1.0),
        Axis::new("true-positive rate 1 − β (TPR)", Scale::Log10),
    );
    plot.bands.push(Band {
        name: "certified bracket".into(),
        points: points.clone(),
        color: 0,
    });
    plot.series.push(Series {
        name: "best attack, at most (guarantee)".into(),
        points: points.iter().map(|&(a, _, hi)| (a, hi)).collect(),
        style: Style::Solid,
        color: 0,
    });
    plot.series.push(Series {
        name: "best attack, at least".into(),
        points: points.iter().map(|&(a, lo, _)| (a, lo)).collect(),
        style: Style::Dashed,
        color: 1,
    });
    plot.series.push(Series {
        name: "random guess (TPR = FPR)".into(),
        points: vec![(PLOT_SMALLEST_FPR, PLOT_SMALLEST_FPR), (1.0, 1.0)],
        style: Style::Dotted,
        color: 6,
    });
    plot
}
