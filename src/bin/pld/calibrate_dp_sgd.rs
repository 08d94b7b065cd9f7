//! `pld calibrate --solve …` with DP-SGD flags: the one quantity left out (noise multiplier,
//! epochs, steps or batch size) found by the library's calibration, answered in those words.
//!
//! The flags become a specification with the matching field written null (σ, the count, or
//! the Poisson rate), which [`pld_accountant::calibrate`] solves and verifies. Then:
//! - noise multiplier = σ / clipping norm, rounded up (more noise never costs privacy);
//! - epochs (Poisson, fixed or truncated batches): the most whole epochs E whose steps
//!   `⌈E / q⌉` (the count `pld epsilon --epochs E` uses) meet the target, re-verified by a
//!   fresh accountant call, with E + 1 shown to miss; for balls-in-bins and shuffling the
//!   count is already in epochs;
//! - batch size: B = ⌊q·N⌋ for the largest rate q found, re-verified at q = B/N, with B + 1
//!   shown to miss.

use crate::args::{BatchSampling, Solve, SpecArgs};
use crate::calibrate::CalibrationReport;
use crate::dp_sgd_flags::{DpSgd, Scheme};
use crate::progress::Progress;
use crate::render::number;
use pld_accountant::{Accountant, AccountantOptions, Bracket, CalibrationProblem, Error};
use serde::Serialize;

/// The answer in DP-SGD words, next to the library's calibration in the report.
#[derive(Debug, Clone, Serialize)]
pub struct DpSgdAnswer {
    /// What was solved for: `noise_multiplier`, `epochs`, `steps` or `batch_size`.
    pub solve: &'static str,
    /// The value found, in those words (use this).
    #[serde(serialize_with = "number::serialize")]
    pub value: f64,
    /// The nearest value on the better side that misses the target, when one was checked.
    #[serde(serialize_with = "number::serialize_option")]
    pub failing_value: Option<f64>,
    /// The guaranteed ε bracket of the run with `value` (a fresh accountant call for epochs
    /// and batch size; the calibration's verification otherwise).
    pub epsilon: Bracket,
    /// The ε bracket at `failing_value`.
    pub failing_epsilon: Option<Bracket>,
    /// The run found, in full: noise multiplier, sampling, steps.
    pub noise_multiplier: f64,
    #[serde(serialize_with = "number::serialize")]
    pub sampling_rate: f64,
    pub steps: u64,
    /// Passes over the data: whole epochs for balls-in-bins and shuffling, steps × q
    /// otherwise.
    #[serde(serialize_with = "number::serialize")]
    pub epochs: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<u64>,
    /// `--solve epochs` counted in steps: the most steps that meet the target (of which the
    /// whole epochs use part).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub most_steps: Option<u64>,
    /// The run as `pld epsilon` would echo it.
    pub run: String,
}

impl Solve {
    fn key(self) -> &'static str {
        match self {
            Solve::NoiseMultiplier => "noise_multiplier",
            Solve::Epochs => "epochs",
            Solve::Steps => "steps",
            Solve::BatchSize => "batch_size",
        }
    }
}

/// Calibrate the quantity `solve` names for the target, from the other DP-SGD flags.
///
/// # Errors
/// [`Error`] naming the flag for flags that conflict with `solve` or are missing; the
/// calibration's errors ([`Error::Infeasible`] when nothing meets the target).
pub fn calibrate(
    args: &SpecArgs,
    solve: Solve,
    target: (f64, f64),
    options: AccountantOptions,
    progress: &Progress,
) -> Result<CalibrationReport, Error> {
    let (filled, field) = with_placeholder(args, solve)?;
    let placeholder_run = DpSgd::from_args(&filled)?.ok_or_else(|| Error::MissingParameter {
        name: "--noise-multiplier".into(),
        hint: "the DP-SGD run needs --noise-multiplier or --sigma".into(),
    })?;
    let scheme = placeholder_run.scheme;
    let (field, allocated) = match (solve, scheme) {
        (Solve::Steps, Scheme::BallsInBins { .. } | Scheme::Shuffle { .. }) => {
            return Err(Error::Incompatible {
                field: "--solve".into(),
                reason: "with --sampling balls-in-bins or shuffle the run is counted in whole \
                         epochs: use --solve epochs"
                    .into(),
            })
        }
        (Solve::BatchSize, s) if s != Scheme::Poisson => {
            return Err(Error::Incompatible {
                field: "--solve".into(),
                reason: "--solve batch-size is for Poisson sampling (the default --sampling)"
                    .into(),
            })
        }
        (_, Scheme::BallsInBins { .. } | Scheme::Shuffle { .. }) => (field, true),
        _ => (field, false),
    };
    let mut json = serde_json::to_value(placeholder_run.spec(&filled)?)
        .map_err(|e| Error::invalid("specification", e.to_string(), "serializable"))?;
    let event = &mut json["events"][0];
    match field {
        Field::Sigma => event["sigma"] = serde_json::Value::Null,
        Field::Count => event["count"] = serde_json::Value::Null,
        Field::Rate => event["sampling"]["poisson"] = serde_json::Value::Null,
    }
    let problem = CalibrationProblem::from_json_value(&json)?;
    let source = format!(
        "DP-SGD flags, solving for {}",
        solve.key().replace('_', " ")
    );
    let mut report = CalibrationReport::new(&problem, target, options, source, progress)?;
    let c = report.calibration.clone();
    let answer = match solve {
        Solve::NoiseMultiplier => {
            // σ is certified; z·C must stay ≥ σ after the division's rounding.
            let z = c.value / placeholder_run.sensitivity * (1.0 + 4.0 * f64::EPSILON);
            let mut run_args = args.clone();
            run_args.sigma = None;
            run_args.noise_multiplier = Some(z);
            let run = rebuilt(&run_args)?;
            answer(
                solve,
                z,
                c.failing_value.map(|s| s / run.sensitivity),
                c.epsilon,
                c.failing_epsilon,
                &run,
                args,
            )
        }
        Solve::Epochs if !allocated => {
            let most_steps = c.value as u64;
            let rate = placeholder_run.sampling_rate;
            let epochs_args = |epochs: f64| {
                let mut a = args.clone();
                a.steps = None;
                a.epochs = Some(epochs);
                a
            };
            // The most whole epochs whose step count is within the most steps found.
            let mut epochs = (most_steps as f64 * rate).floor() + 1.0;
            while epochs >= 1.0 && rebuilt(&epochs_args(epochs))?.steps > most_steps {
                epochs -= 1.0;
            }
            let (epochs, run, bracket) = verified_downwards(epochs, target, options, epochs_args)?;
            let failing = bracket_of(&epochs_args(epochs + 1.0), target.1, options)
                .ok()
                .map(|(_, b)| b);
            let mut found = answer(
                solve,
                epochs,
                failing.map(|_| epochs + 1.0),
                bracket,
                failing,
                &run,
                args,
            );
            found.most_steps = Some(most_steps);
            found
        }
        // The calibrated count is the answer: steps, or epochs of allocated batches.
        Solve::Steps | Solve::Epochs => {
            let mut run_args = args.clone();
            if allocated {
                run_args.epochs = Some(c.value);
            } else {
                run_args.steps = Some(c.value as u64);
            }
            let run = rebuilt(&run_args)?;
            answer(
                solve,
                c.value,
                c.failing_value,
                c.epsilon,
                c.failing_epsilon,
                &run,
                args,
            )
        }
        Solve::BatchSize => {
            let n = args.dataset_size.unwrap_or(1);
            let batch_args = |b: f64| {
                let mut a = args.clone();
                a.batch_size = Some(b as u64);
                a
            };
            let batch = (c.value * n as f64).floor().min(n as f64);
            let (batch, run, bracket) = verified_downwards(batch, target, options, batch_args)?;
            let failing = if batch < n as f64 {
                bracket_of(&batch_args(batch + 1.0), target.1, options)
                    .ok()
                    .map(|(_, b)| b)
            } else {
                None
            };
            answer(
                solve,
                batch,
                failing.map(|_| batch + 1.0),
                bracket,
                failing,
                &run,
                args,
            )
        }
    };
    report.source = answer.run.clone();
    report.dp_sgd = Some(answer);
    Ok(report)
}

/// Which specification field the solved flag becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Sigma,
    Count,
    Rate,
}

/// The flags with a placeholder for the solved one (its field is then written null), after
/// checking that the solved flag was left out and the others it needs are there.
fn with_placeholder(args: &SpecArgs, solve: Solve) -> Result<(SpecArgs, Field), Error> {
    let given = |present: bool, flag: &str| -> Result<(), Error> {
        if present {
            Err(Error::Incompatible {
                field: flag.into(),
                reason: format!(
                    "--solve {} finds it: leave {flag} out",
                    solve.key().replace('_', "-")
                ),
            })
        } else {
            Ok(())
        }
    };
    let mut filled = args.clone();
    let field = match solve {
        Solve::NoiseMultiplier => {
            given(args.noise_multiplier.is_some(), "--noise-multiplier")?;
            given(args.sigma.is_some(), "--sigma")?;
            filled.noise_multiplier = Some(1.0);
            Field::Sigma
        }
        Solve::Epochs | Solve::Steps => {
            given(args.steps.is_some(), "--steps")?;
            given(args.epochs.is_some(), "--epochs")?;
            let allocated = matches!(
                args.sampling,
                Some(BatchSampling::BallsInBins | BatchSampling::Shuffle)
            );
            if allocated {
                filled.epochs = Some(1.0);
            } else {
                filled.steps = Some(1);
            }
            Field::Count
        }
        Solve::BatchSize => {
            given(args.batch_size.is_some(), "--batch-size")?;
            given(args.sampling_rate.is_some(), "--sampling-rate")?;
            if args.dataset_size.is_none() {
                return Err(Error::MissingParameter {
                    name: "--dataset-size".into(),
                    hint: "--solve batch-size finds B with q = B / N: give N".into(),
                });
            }
            if args.steps.is_none() {
                return Err(Error::MissingParameter {
                    name: "--steps".into(),
                    hint: "--solve batch-size keeps the number of steps fixed (with --epochs \
                           the steps would change with the batch size): give --steps"
                        .into(),
                });
            }
            filled.batch_size = Some(1);
            Field::Rate
        }
    };
    Ok((filled, field))
}

/// The run the flags describe (they are complete here).
fn rebuilt(args: &SpecArgs) -> Result<DpSgd, Error> {
    DpSgd::from_args(args)?.ok_or_else(|| Error::MissingParameter {
        name: "--noise-multiplier".into(),
        hint: "the DP-SGD run needs --noise-multiplier or --sigma".into(),
    })
}

/// The run the flags describe and its guaranteed ε bracket at δ (a fresh accountant call).
fn bracket_of(
    args: &SpecArgs,
    delta: f64,
    options: AccountantOptions,
) -> Result<(DpSgd, Bracket), Error> {
    let run = rebuilt(args)?;
    let bracket = Accountant::new(&run.spec(args)?, options)?
        .epsilon_for_delta(delta)?
        .epsilon;
    Ok((run, bracket))
}

/// From `start` down by whole units, the first value whose run (the flags `flags_at` gives)
/// meets the target by a fresh accountant call; `start` is already within the calibrated
/// limit, so a few tries suffice.
fn verified_downwards(
    start: f64,
    (epsilon, delta): (f64, f64),
    options: AccountantOptions,
    flags_at: impl Fn(f64) -> SpecArgs,
) -> Result<(f64, DpSgd, Bracket), Error> {
    let mut value = start;
    for _ in 0..8 {
        if value < 1.0 {
            break;
        }
        let (run, bracket) = bracket_of(&flags_at(value), delta, options)?;
        if bracket.upper <= epsilon {
            return Ok((value, run, bracket));
        }
        value -= 1.0;
    }
    Err(Error::Infeasible {
        field: "--solve".into(),
        epsilon,
        delta,
        reason: format!(
            "no whole value from {start} down to {} meets the target by a fresh accountant call",
            value.max(1.0)
        ),
    })
}

fn answer(
    solve: Solve,
    value: f64,
    failing_value: Option<f64>,
    epsilon: Bracket,
    failing_epsilon: Option<Bracket>,
    run: &DpSgd,
    args: &SpecArgs,
) -> DpSgdAnswer {
    let epochs = match run.scheme {
        Scheme::BallsInBins { epochs, .. } | Scheme::Shuffle { epochs, .. } => epochs as f64,
        _ => run.steps as f64 * run.sampling_rate,
    };
    DpSgdAnswer {
        solve: solve.key(),
        value,
        failing_value,
        epsilon,
        failing_epsilon,
        noise_multiplier: run.sigma / run.sensitivity,
        sampling_rate: run.sampling_rate,
        steps: run.steps,
        epochs,
        batch_size: match solve {
            Solve::BatchSize => Some(value as u64),
            _ => args.batch_size,
        },
        run: run.summary.clone(),
        most_steps: None,
    }
}
