//! `pld calibrate`: the best value of the one `null` field of a specification for a target
//! (ε, δ), from [`pld_accountant::calibrate`], with the time it took.

use crate::progress::Progress;
use crate::render::number::{self, significant};
use pld_accountant::calibration::{Parameter, Stage};
use pld_accountant::{
    calibrate, AccountantOptions, Calibration, CalibrationProblem, CalibrationProgress, Error,
};
use serde::Serialize;
use std::time::Instant;

/// A calibration as printed: the library's [`Calibration`] (the documented keys `parameter`,
/// `value`, `epsilon`, `delta`, and the rest) plus the time and the input.
#[derive(Debug, Clone, Serialize)]
pub struct CalibrationReport {
    #[serde(flatten)]
    pub calibration: Calibration,
    /// Wall-clock time of the whole calibration, verification included.
    #[serde(serialize_with = "number::serialize")]
    pub seconds: f64,
    /// What was calibrated, e.g. `specification dp_sgd_sigma.json`.
    pub source: String,
    /// With `--solve` and DP-SGD flags: the answer in those words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dp_sgd: Option<crate::calibrate_dp_sgd::DpSgdAnswer>,
}

/// Check the target before any work.
///
/// # Errors
/// [`Error::InvalidParameter`] naming `--epsilon` unless it is finite and > 0, or `--delta`
/// unless it is in (0, 1).
pub fn validate_target(epsilon: f64, delta: f64) -> Result<(), Error> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(Error::invalid("--epsilon", epsilon, "a finite number > 0"));
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(Error::invalid("--delta", delta, "a number in (0, 1)"));
    }
    Ok(())
}

impl CalibrationReport {
    /// Calibrate `problem` for (`epsilon`, `delta`), showing progress and, with `--verbose`,
    /// every accountant call.
    ///
    /// # Errors
    /// The calibration's errors ([`Error::Infeasible`] when no value meets the target).
    pub fn new(
        problem: &CalibrationProblem,
        (epsilon, delta): (f64, f64),
        options: AccountantOptions,
        source: String,
        progress: &Progress,
    ) -> Result<CalibrationReport, Error> {
        let parameter = problem.kind();
        let start = Instant::now();
        let calibration = {
            let task = progress.task(format!("calibration of {}", problem.location()), 0);
            calibrate(problem, epsilon, delta, options, &mut |p| {
                task.advance();
                task.status(format!(
                    "evaluation {}, {} = {}",
                    p.evaluations,
                    symbol(parameter),
                    tried(parameter, p.value)
                ));
                progress.note(evaluation(parameter, p, epsilon));
            })?
        };
        Ok(CalibrationReport {
            calibration,
            seconds: start.elapsed().as_secs_f64(),
            source,
            dp_sgd: None,
        })
    }
}

/// The parameter's name in progress lines: `sigma`, `scale`, `count`, `q`.
fn symbol(parameter: Parameter) -> &'static str {
    match parameter {
        Parameter::PoissonRate => "q",
        other => other.name(),
    }
}

/// A value being tried, to 7 significant digits (counts exactly).
fn tried(parameter: Parameter, x: f64) -> String {
    if parameter == Parameter::Count || !x.is_finite() {
        number::raw(x)
    } else {
        significant(x, 7)
    }
}

/// One accountant call for `--verbose`: `evaluation 3 (coarse): sigma = 0.95 → ε upper
/// bound 1.930000 ≤ 2, meets`.
fn evaluation(parameter: Parameter, p: &CalibrationProgress, target: f64) -> String {
    let stage = match p.stage {
        Stage::Limit => "limit",
        Stage::Coarse => "coarse",
        Stage::Fine => "fine",
        Stage::Verification => "verification",
    };
    let left_out = match (p.stage, parameter) {
        (Stage::Limit, Parameter::Sigma | Parameter::Scale | Parameter::PoissonRate) => {
            " (the event left out)"
        }
        _ => "",
    };
    let (relation, verdict) = if p.meets {
        ("≤", "meets")
    } else {
        (">", "misses")
    };
    format!(
        "evaluation {} ({stage}): {} = {}{left_out} → ε upper bound {} {relation} {}, {verdict}",
        p.evaluations,
        symbol(parameter),
        tried(parameter, p.value),
        number::upper(p.epsilon_upper),
        number::input(target),
    )
}
