//! `pld curve`: the PLD bracket on ε for a list of δ, or on δ for a list of ε.

use crate::compare::subtitle;
use crate::input::Input;
use crate::plot::{Axis, Band, Plot, Scale, Series};
use crate::progress::Progress;
use crate::render::number;
use pld_accountant::{Accountant, DeltaAnswer, EpsilonAnswer, Error};
use serde::Serialize;

/// The δ values reported by default: 1e-1, 1e-2, ..., 1e-12.
pub fn default_deltas() -> Vec<f64> {
    (1..=12).map(|k| 10f64.powi(-k)).collect()
}

/// Largest number of points one curve may ask for.
pub const MAX_POINTS: usize = 1000;

/// Which question each point answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Query {
    /// ε for each δ.
    EpsilonForDelta,
    /// δ for each ε.
    DeltaForEpsilon,
}

/// The answers: each point has the keys of `pld epsilon` (`delta`, `epsilon.upper`,
/// `epsilon.lower`, `settings`) or of `pld delta`.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Points {
    Epsilon(Vec<EpsilonAnswer>),
    Delta(Vec<DeltaAnswer>),
}

/// The privacy curve as printed.
#[derive(Debug, Clone, Serialize)]
pub struct CurveReport {
    /// `epsilon_for_delta` or `delta_for_epsilon`.
    pub query: Query,
    /// One answer per requested value, in the order given.
    pub points: Points,
    /// What was accounted.
    pub source: String,
    /// The preset's description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub about: Option<String>,
}

/// The values a plot of the curve is drawn through: the requested ones and, between the
/// smallest and the largest, six per decade of δ (log-spaced) or 60 steps of ε, so that the
/// plotted curve is smooth even when few values were asked for.
pub fn plot_values(query: Query, values: &[f64]) -> Vec<f64> {
    let finite: Vec<f64> = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && (query == Query::DeltaForEpsilon || *v > 0.0))
        .collect();
    let mut all = values.to_vec();
    if let (Some(lo), Some(hi)) = (
        finite.iter().copied().reduce(f64::min),
        finite.iter().copied().reduce(f64::max),
    ) {
        match query {
            Query::EpsilonForDelta => {
                let decades = (hi / lo).log10();
                let steps = ((decades * 6.0).ceil() as usize).min(MAX_POINTS / 2);
                all.extend((1..steps).map(|k| lo * (hi / lo).powf(k as f64 / steps as f64)));
            }
            Query::DeltaForEpsilon => {
                let steps = 60;
                all.extend((1..steps).map(|k| lo + (hi - lo) * k as f64 / steps as f64));
            }
        }
    }
    all.sort_by(f64::total_cmp);
    all.dedup();
    all
}

/// Check the requested values before any work.
///
/// # Errors
/// [`Error::InvalidParameter`] naming the list and the position of the first bad value.
pub fn validate(query: Query, values: &[f64]) -> Result<(), Error> {
    let flag = match query {
        Query::EpsilonForDelta => "--deltas",
        Query::DeltaForEpsilon => "--epsilons",
    };
    if values.is_empty() || values.len() > MAX_POINTS {
        return Err(Error::invalid(
            flag,
            format!("a list of {} values", values.len()),
            &format!("between 1 and {MAX_POINTS} values"),
        ));
    }
    for (i, &v) in values.iter().enumerate() {
        let ok = match query {
            Query::EpsilonForDelta => v > 0.0 && v < 1.0,
            Query::DeltaForEpsilon => v >= 0.0,
        };
        if !ok {
            return Err(Error::invalid(
                format!("{flag}[{i}]"),
                v,
                match query {
                    Query::EpsilonForDelta => "a number in (0, 1)",
                    Query::DeltaForEpsilon => "a number ≥ 0",
                },
            ));
        }
    }
    Ok(())
}

impl CurveReport {
    /// Answer `query` at every value.
    ///
    /// # Errors
    /// The accountant's errors.
    pub fn new(
        accountant: &Accountant,
        query: Query,
        values: &[f64],
        input: &Input,
        progress: &Progress,
    ) -> Result<CurveReport, Error> {
        let task = progress.task("privacy curve", values.len());
        let points = match query {
            Query::EpsilonForDelta => Points::Epsilon(
                values
                    .iter()
                    .map(|&d| {
                        let answer = accountant.epsilon_for_delta(d);
                        task.advance();
                        answer
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Query::DeltaForEpsilon => Points::Delta(
                values
                    .iter()
                    .map(|&e| {
                        let answer = accountant.delta_for_epsilon(e);
                        task.advance();
                        answer
                    })
                    .collect::<Result<_, _>>()?,
            ),
        };
        Ok(CurveReport {
            query,
            points,
            source: input.source.clone(),
            about: input.about.clone(),
        })
    }

    /// The curve with its bracket shaded: ε against δ (log), or δ (log) against ε.
    pub fn plot(&self) -> Plot {
        let (title, x, y, brackets): (&str, Axis, Axis, Vec<(f64, f64, f64)>) = match &self.points {
            Points::Epsilon(answers) => (
                "Privacy curve: ε for each δ",
                Axis::new("δ", Scale::Log10),
                Axis::new("ε", Scale::Linear).starting_at_zero(),
                answers
                    .iter()
                    .map(|a| (a.delta, a.epsilon.lower, a.epsilon.upper))
                    .collect(),
            ),
            Points::Delta(answers) => (
                "Privacy curve: δ for each ε",
                Axis::new("ε", Scale::Linear),
                Axis::new("δ", Scale::Log10),
                answers
                    .iter()
                    .map(|a| (a.epsilon, a.delta.lower, a.delta.upper))
                    .collect(),
            ),
        };
        let mut brackets = brackets;
        brackets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut plot = Plot::new(title, &subtitle(&self.source, self.about.as_deref()), x, y);
        bracket_series(&mut plot, brackets);
        plot
    }
}

/// The PLD bracket as a shaded band between the upper bound (solid) and the lower bound
/// (dashed, lighter), with a note on its width.
pub fn bracket_series(plot: &mut Plot, brackets: Vec<(f64, f64, f64)>) {
    plot.series.push(Series::nth(
        0,
        "PLD upper bound (publish this)",
        brackets.iter().map(|&(x, _, hi)| (x, hi)).collect(),
    ));
    plot.series.push(Series {
        color: 5,
        ..Series::nth(
            1,
            "PLD lower bound",
            brackets.iter().map(|&(x, lo, _)| (x, lo)).collect(),
        )
    });
    let widest = brackets
        .iter()
        .map(|&(_, lo, hi)| hi - lo)
        .filter(|w| w.is_finite())
        .fold(0.0, f64::max);
    plot.notes.push(format!(
        "The bracket (shaded) is at most {} wide: the truth lies inside it; both ends are \
         guaranteed.",
        number::upper(widest)
    ));
    plot.bands.push(Band {
        name: "PLD bracket (guaranteed)".into(),
        points: brackets,
        color: 0,
    });
}
