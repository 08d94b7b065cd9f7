//! Calibration: the best value of one parameter such that the composition still meets a
//! privacy target (ε, δ).
//!
//! It sits on top of the pipeline: every candidate value is evaluated by a full
//! [`Accountant`] call.
//!
//! A [`CalibrationProblem`] is a composition specification with one field written `null`:
//! the noise (`sigma` or `scale`), a `count`, or a Poisson sampling rate. [`calibrate`] finds
//! the value best for utility — the smallest noise, the largest count, the largest rate —
//! at which the PLD accountant's **upper bound** on ε(δ) is at most the target:
//!
//! ```text
//! sigma, scale:  smallest x in [1e-6·Δ, 1e9·Δ]  with  ε_upper(x; δ) ≤ ε_target
//! count:         largest k in [1, 10^12]        with  ε_upper(k; δ) ≤ ε_target
//! poisson:       largest q in [1e-12, 1]        with  ε_upper(q; δ) ≤ ε_target
//! ```
//!
//! (Δ is the event's sensitivity, the largest of a mixture's.) The answer is resolved to a
//! relative 10⁻⁴ for σ, scale and q ([`RESOLUTION`]) and exactly for counts: the value returned
//! meets the target, and `failing_value`, within that resolution of it on the better side,
//! does not.
//!
//! # How
//! 1. *Limits.* The limit where the calibrated event leaks nothing (σ → ∞ or q → 0: the
//!    specification without that event), or `count = 1`, is evaluated first: if it misses the
//!    target, no value can meet it ([`Error::Infeasible`], after one accountant call).
//! 2. *Coarse search.* The switch point is bracketed and narrowed to a relative 10⁻² with a
//!    cheaper accountant tolerance (bracket width 10⁻² of ε and of the target), by Newton
//!    steps on `ln ε_upper` against `ln x` and then interpolation (see `search.rs`).
//! 3. *Fine search.* From the coarse estimate, the same search with the caller's accountant
//!    options, down to the final resolution; typically three or four accountant calls.
//! 4. *Verification.* The value found is evaluated once more by a fresh [`Accountant`] with
//!    the caller's options; its bracket is the one reported. The upper bound can be slightly
//!    non-monotone in the parameter (the grid changes with it), so the search only ever reports
//!    values it has itself evaluated.
//!
//! Every accountant call is counted; a search stops after [`MAX_EVALUATIONS`].

mod problem;
mod search;

pub use problem::{CalibrationProblem, Parameter};

use crate::accountant::{Accountant, AccountantOptions, Settings, Tolerance};
use crate::bound::Bracket;
use crate::error::{Error, Result};
use crate::spec::CompositionSpec;
use search::{Axis, Next, Points, Probe, Switch, BLIND_STEP};
use serde::{Deserialize, Serialize, Serializer};

/// Relative resolution of a calibrated σ, scale or sampling rate: the search stops when the
/// value that meets and the nearest value known to miss differ by at most this fraction.
/// Counts are resolved exactly (adjacent whole numbers).
pub const RESOLUTION: f64 = 1e-4;

/// Relative resolution of the coarse search that precedes the final one.
pub const COARSE_RESOLUTION: f64 = 1e-2;

/// Relative (and, times the target ε, absolute) accountant tolerance of the coarse search.
pub const COARSE_TOLERANCE: f64 = 1e-2;

/// Searched range of σ and scale, in multiples of the event's sensitivity.
pub const NOISE_RANGE: (f64, f64) = (1e-6, 1e9);

/// Searched range of a Poisson sampling rate.
pub const RATE_RANGE: (f64, f64) = (1e-12, 1.0);

/// Searched range of a count (the specification's limits).
pub const COUNT_RANGE: (u64, u64) = (1, crate::spec::MAX_COUNT);

/// Most accountant calls one calibration makes. Typical calibrations make 8–15.
pub const MAX_EVALUATIONS: u32 = 100;

/// What a calibration is doing, reported after every accountant call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Checking the limit where the calibrated event leaks least (infeasibility test).
    Limit,
    /// Bracketing with a coarse accountant tolerance.
    Coarse,
    /// Narrowing with the caller's accountant options.
    Fine,
    /// Re-evaluating the value found.
    Verification,
}

/// Progress of a calibration after one accountant call, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CalibrationProgress {
    /// Accountant calls so far, this one included.
    pub evaluations: u32,
    /// The stage this call belongs to.
    pub stage: Stage,
    /// The candidate value evaluated (`inf` for σ → ∞, `0` for q → 0: the specification
    /// without the calibrated event).
    #[serde(
        serialize_with = "serialize_value",
        deserialize_with = "crate::report_number::deserialize"
    )]
    pub value: f64,
    /// The accountant's upper bound on ε(δ) there.
    #[serde(
        serialize_with = "crate::report_number::serialize",
        deserialize_with = "crate::report_number::deserialize"
    )]
    pub epsilon_upper: f64,
    /// Whether that upper bound meets the target.
    pub meets: bool,
}

/// The result of a calibration.
///
/// # Guarantee
/// At `value` the composition is (`epsilon.upper`, `delta`)-DP with `epsilon.upper ≤
/// target_epsilon`, certified by a fresh accountant call with the caller's options: a safe
/// setting to use. At `failing_value` the accountant's upper bound exceeds the target, so the
/// best value the accountant can certify lies between the two (where its upper bound is
/// monotone). The exact optimum lies between them up to the accountant's bracket: the true ε
/// at `failing_value` is only known to be in `failing_epsilon`, so when
/// `failing_epsilon.lower ≤ target_epsilon` the exact optimum may lie a little beyond
/// `failing_value`.
///
/// Displayed as four lines: the value found (rounded toward more privacy, so safe as printed),
/// the bracket there, the nearest failing value, and the number of accountant calls.
///
/// Serialized as `pld calibrate`'s JSON, `{"parameter": NAME, "value": X, "epsilon": {"upper": U,
/// "lower": L}, "delta": D, …}`; infinities are written `"inf"`, whole numbers (counts) as
/// JSON integers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// The calibrated field: `sigma`, `scale`, `count` or `poisson`.
    pub parameter: Parameter,
    /// Its path in the specification, e.g. `events[0].sigma`.
    pub location: String,
    /// The best value found that meets the target.
    #[serde(
        serialize_with = "serialize_value",
        deserialize_with = "crate::report_number::deserialize"
    )]
    pub value: f64,
    /// Guaranteed bracket on ε(δ) at `value` (`upper ≤ target_epsilon`).
    pub epsilon: Bracket,
    /// The δ of the target.
    #[serde(
        serialize_with = "crate::report_number::serialize",
        deserialize_with = "crate::report_number::deserialize"
    )]
    pub delta: f64,
    /// The ε the upper bound had to meet.
    #[serde(
        serialize_with = "crate::report_number::serialize",
        deserialize_with = "crate::report_number::deserialize"
    )]
    pub target_epsilon: f64,
    /// The nearest value on the better side that was found to miss the target (within
    /// [`RESOLUTION`] of `value`, or the next whole number for counts); `None` when `value` is
    /// the end of the searched range (`search_range`), which then meets the target itself.
    #[serde(
        serialize_with = "serialize_optional_value",
        deserialize_with = "crate::report_number::deserialize_option"
    )]
    pub failing_value: Option<f64>,
    /// The accountant's bracket on ε(δ) at `failing_value` (its upper end is above the
    /// target).
    pub failing_epsilon: Option<Bracket>,
    /// The range that was searched, `[smallest, largest]`.
    pub search_range: [f64; 2],
    /// Accountant calls made, the verification included.
    pub evaluations: u32,
    /// How the verifying accountant call computed `epsilon`.
    pub settings: Settings,
}

/// Find the value of the problem's unknown that is best for utility while the composition
/// still meets (`epsilon`, `delta`) by the accountant's upper bound (see the module docs).
///
/// `options` are used for the final search and the verification; `progress` is called after
/// every accountant call.
///
/// # Guarantee
/// See [`Calibration`]: the returned value is certified by a fresh accountant call.
///
/// # Errors
/// - [`Error::InvalidParameter`] naming `epsilon` unless it is finite and > 0, naming `delta`
///   unless 0 < δ < 1, or for invalid `options`;
/// - [`Error::Infeasible`] naming the calibrated field when no value in the searched range
///   meets the target (e.g. the other events alone exceed it, or `count = 1` already does);
/// - accountant errors at the limit or at the verified value.
pub fn calibrate(
    problem: &CalibrationProblem,
    epsilon: f64,
    delta: f64,
    options: AccountantOptions,
    progress: &mut dyn FnMut(&CalibrationProgress),
) -> Result<Calibration> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(Error::invalid("epsilon", epsilon, "a finite number > 0"));
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(Error::invalid("delta", delta, "a number in (0, 1)"));
    }
    // Invalid options are reported before any work.
    Accountant::new(&problem.spec_with(1.0)?, options)?;
    let mut run = Run {
        problem,
        target: epsilon,
        delta,
        options,
        coordinates: Coordinates::of(problem),
        evaluations: 0,
        progress,
    };
    run.calibrate()
}

/// The map between a parameter value x and the search coordinate z, oriented so that larger
/// z is worse for privacy: z = −ln(x/Δ) for noise, ln k for counts, ln q for rates.
#[derive(Debug, Clone, Copy)]
struct Coordinates {
    parameter: Parameter,
    /// Δ for noise, 1 otherwise.
    unit: f64,
}

impl Coordinates {
    fn of(problem: &CalibrationProblem) -> Self {
        let parameter = problem.kind();
        Coordinates {
            parameter,
            unit: if parameter.larger_is_more_private() {
                problem.noise_unit()
            } else {
                1.0
            },
        }
    }

    /// The value at coordinate z (the ends of the axis give the ends of the range exactly).
    fn value(&self, z: f64) -> f64 {
        let (lowest, highest) = self.ends();
        let (at_lowest, at_highest) = match self.parameter {
            Parameter::Sigma | Parameter::Scale => {
                (self.unit * NOISE_RANGE.1, self.unit * NOISE_RANGE.0)
            }
            Parameter::Count => (COUNT_RANGE.0 as f64, COUNT_RANGE.1 as f64),
            Parameter::PoissonRate => RATE_RANGE,
        };
        if z <= lowest {
            return at_lowest;
        }
        if z >= highest {
            return at_highest;
        }
        match self.parameter {
            Parameter::Sigma | Parameter::Scale => self.unit * (-z).exp(),
            Parameter::Count => Axis::whole(z),
            Parameter::PoissonRate => z.exp(),
        }
    }

    /// The smallest and largest coordinate.
    fn ends(&self) -> (f64, f64) {
        match self.parameter {
            Parameter::Sigma | Parameter::Scale => (-NOISE_RANGE.1.ln(), -NOISE_RANGE.0.ln()),
            Parameter::Count => ((COUNT_RANGE.0 as f64).ln(), (COUNT_RANGE.1 as f64).ln()),
            Parameter::PoissonRate => (RATE_RANGE.0.ln(), RATE_RANGE.1.ln()),
        }
    }

    /// The searched axis, resolved to `resolution` (relative).
    fn axis(&self, resolution: f64) -> Axis {
        let (lowest, highest) = self.ends();
        Axis {
            lowest,
            highest,
            points: if self.parameter == Parameter::Count {
                Points::WholeNumbers
            } else {
                Points::Continuous
            },
            // Slightly inside, so the reported values are within `resolution` after rounding.
            resolution: 0.99 * resolution.ln_1p(),
        }
    }

    /// Where the coarse search starts: σ = Δ, count 1, q = 1.
    fn start(&self) -> f64 {
        0.0
    }

    /// Prior slope of ln ε against z: ε ∝ 1/σ, √k, q in the usual regimes.
    fn prior_slope(&self) -> f64 {
        match self.parameter {
            Parameter::Count => 0.5,
            _ => 1.0,
        }
    }

    /// `[smallest, largest]` value searched.
    fn range(&self) -> [f64; 2] {
        let (lowest, highest) = self.ends();
        let (a, b) = (self.value(lowest), self.value(highest));
        [a.min(b), a.max(b)]
    }
}

/// One calibration in progress.
struct Run<'a> {
    problem: &'a CalibrationProblem,
    target: f64,
    delta: f64,
    options: AccountantOptions,
    coordinates: Coordinates,
    evaluations: u32,
    progress: &'a mut dyn FnMut(&CalibrationProgress),
}

/// How a search ended.
enum Outcome {
    /// A meeting probe, and the nearest missing one if any (`None`: the meeting probe is the
    /// end of the axis).
    Found(Probe, Option<Probe>),
    /// Nothing on the axis meets the target; the probe at its end.
    Infeasible(Probe),
    /// [`MAX_EVALUATIONS`] reached.
    OutOfEvaluations,
}

impl Run<'_> {
    fn calibrate(&mut self) -> Result<Calibration> {
        let parameter = self.coordinates.parameter;
        // 1. The limit where the event leaks least.
        let mut seed = None;
        match parameter {
            Parameter::Count => {
                let bracket = self.evaluate(0.0, Stage::Limit, self.options)?;
                if bracket.upper > self.target {
                    return Err(self.infeasible(format!(
                        "even count = 1 gives an upper bound ε = {} above the target",
                        bracket.upper
                    )));
                }
                seed = Some(Probe {
                    z: 0.0,
                    gap: self.gap(bracket.upper),
                });
            }
            _ => {
                if let Some(rest) = self.problem.spec_without_event() {
                    let limit = if parameter == Parameter::PoissonRate {
                        0.0
                    } else {
                        f64::INFINITY
                    };
                    let bracket = self.accountant_call(&rest, self.options, Stage::Limit, limit)?;
                    if bracket.upper > self.target {
                        let arrow = if parameter == Parameter::PoissonRate {
                            "→ 0"
                        } else {
                            "→ ∞"
                        };
                        return Err(self.infeasible(format!(
                            "the other events alone have an upper bound ε = {} above the \
                             target, so no {parameter} can meet it ({parameter} {arrow} \
                             removes events[{}])",
                            bracket.upper,
                            self.problem.event_index()
                        )));
                    }
                }
            }
        }

        // 2. Coarse search, with a cheaper tolerance.
        let coarse_options = coarse(self.options, self.target);
        let fine_axis = self.coordinates.axis(if parameter == Parameter::Count {
            0.0
        } else {
            RESOLUTION
        });
        let mut fine = if coarse_options == self.options {
            let mut search = Switch::new(
                fine_axis,
                self.coordinates.start(),
                self.coordinates.prior_slope(),
                BLIND_STEP,
            );
            if let Some(seed) = seed {
                search.record(seed);
            }
            search
        } else {
            let mut search = Switch::new(
                self.coordinates.axis(COARSE_RESOLUTION),
                self.coordinates.start(),
                self.coordinates.prior_slope(),
                BLIND_STEP,
            );
            if let Some(seed) = seed {
                search.record(seed);
            }
            let start =
                match self.search(&mut search, Stage::Coarse, coarse_options, &mut |_, _| {})? {
                    Outcome::Found(_, None) => fine_axis.highest,
                    Outcome::Infeasible(_) => fine_axis.lowest,
                    Outcome::Found(..) | Outcome::OutOfEvaluations => search.estimate().0,
                };
            // Fine steps where the gap is infinite: about the coarse bracket's width.
            let blind_step = match (search.meets(), search.fails()) {
                (Some(a), Some(b)) => (2.0 * (b.z - a.z)).clamp(fine_axis.resolution, BLIND_STEP),
                _ => BLIND_STEP,
            };
            Switch::new(fine_axis, start, search.estimate().1, blind_step)
        };

        // 3–4. Fine search and verification (repeated should the verification disagree).
        let mut brackets: Vec<(f64, Bracket)> = Vec::new();
        loop {
            let outcome = self.search(&mut fine, Stage::Fine, self.options, &mut |z, b| {
                brackets.push((z, b))
            })?;
            let (meets, fails) = match outcome {
                Outcome::Found(meets, fails) => (meets, fails),
                Outcome::Infeasible(end) => {
                    let value = self.coordinates.value(end.z);
                    let upper = brackets
                        .iter()
                        .find(|(z, _)| *z == end.z)
                        .map_or(f64::INFINITY, |(_, bracket)| bracket.upper);
                    return Err(self.infeasible(format!(
                        "at the end of the searched range, {parameter} = {value}, the upper \
                         bound is ε = {upper}"
                    )));
                }
                Outcome::OutOfEvaluations => match fine.meets() {
                    Some(meets) => (meets, fine.fails()),
                    None => {
                        return Err(self.infeasible(format!(
                            "no value meeting the target was found in {MAX_EVALUATIONS} \
                             accountant calls"
                        )))
                    }
                },
            };
            let value = self.coordinates.value(meets.z);
            let spec = self.problem.spec_with(value)?;
            let answer = Accountant::new(&spec, self.options)?.epsilon_for_delta(self.delta)?;
            self.evaluations += 1;
            let verified = answer.epsilon.upper <= self.target;
            (self.progress)(&CalibrationProgress {
                evaluations: self.evaluations,
                stage: Stage::Verification,
                value,
                epsilon_upper: answer.epsilon.upper,
                meets: verified,
            });
            if !verified {
                // Not reproducible: count it as missing and search on.
                if self.evaluations >= MAX_EVALUATIONS {
                    return Err(self.infeasible(format!(
                        "{parameter} = {value} met the target once and missed it on \
                         re-evaluation (upper bound ε = {})",
                        answer.epsilon.upper
                    )));
                }
                fine.record(Probe {
                    z: meets.z,
                    gap: f64::INFINITY,
                });
                continue;
            }
            let failing_epsilon = fails.and_then(|f| {
                brackets
                    .iter()
                    .find(|(z, _)| *z == f.z)
                    .map(|(_, bracket)| *bracket)
            });
            return Ok(Calibration {
                parameter,
                location: self.problem.location().to_string(),
                value,
                epsilon: answer.epsilon,
                delta: self.delta,
                target_epsilon: self.target,
                failing_value: fails.map(|f| self.coordinates.value(f.z)),
                failing_epsilon,
                search_range: self.coordinates.range(),
                evaluations: self.evaluations,
                settings: answer.settings,
            });
        }
    }

    /// Run a search to its end, evaluating with `options`; `seen` gets every bracket.
    fn search(
        &mut self,
        search: &mut Switch,
        stage: Stage,
        options: AccountantOptions,
        seen: &mut dyn FnMut(f64, Bracket),
    ) -> Result<Outcome> {
        loop {
            match search.next() {
                Next::Probe(z) => {
                    if self.evaluations >= MAX_EVALUATIONS {
                        return Ok(Outcome::OutOfEvaluations);
                    }
                    let bracket = match self.evaluate(z, stage, options) {
                        // A grid too large to compute certifies nothing there (a grid step
                        // fixed by the caller is the caller's to change: report it).
                        Err(Error::GridTooLarge { .. }) if options.grid_step.is_none() => Bracket {
                            upper: f64::INFINITY,
                            lower: 0.0,
                        },
                        other => other?,
                    };
                    seen(z, bracket);
                    search.record(Probe {
                        z,
                        gap: self.gap(bracket.upper),
                    });
                }
                Next::Resolved => {
                    return Ok(match (search.meets(), search.fails()) {
                        (Some(meets), fails) => Outcome::Found(meets, fails),
                        _ => Outcome::OutOfEvaluations,
                    })
                }
                Next::MeetsAtHighest => {
                    return Ok(match search.meets() {
                        Some(meets) => Outcome::Found(meets, None),
                        None => Outcome::OutOfEvaluations,
                    })
                }
                Next::FailsAtLowest => {
                    return Ok(match search.fails() {
                        Some(fails) => Outcome::Infeasible(fails),
                        None => Outcome::OutOfEvaluations,
                    })
                }
            }
        }
    }

    /// The accountant's bracket on ε(δ) at coordinate z.
    fn evaluate(&mut self, z: f64, stage: Stage, options: AccountantOptions) -> Result<Bracket> {
        let value = self.coordinates.value(z);
        let spec = self.problem.spec_with(value)?;
        self.accountant_call(&spec, options, stage, value)
    }

    /// One accountant call, counted and reported.
    fn accountant_call(
        &mut self,
        spec: &CompositionSpec,
        options: AccountantOptions,
        stage: Stage,
        value: f64,
    ) -> Result<Bracket> {
        self.evaluations += 1;
        let result = Accountant::new(spec, options).and_then(|a| a.epsilon_for_delta(self.delta));
        let upper = match &result {
            Ok(answer) => answer.epsilon.upper,
            Err(_) => f64::INFINITY,
        };
        (self.progress)(&CalibrationProgress {
            evaluations: self.evaluations,
            stage,
            value,
            epsilon_upper: upper,
            meets: upper <= self.target,
        });
        result.map(|answer| answer.epsilon)
    }

    /// `ln(ε_upper/ε_target)`: ≤ 0 when the target is met (−∞ for ε = 0, +∞ for ε = ∞).
    fn gap(&self, upper: f64) -> f64 {
        if upper <= self.target {
            (upper / self.target).ln().min(0.0)
        } else {
            (upper / self.target).ln().max(f64::MIN_POSITIVE)
        }
    }

    fn infeasible(&self, reason: String) -> Error {
        Error::Infeasible {
            field: self.problem.location().to_string(),
            epsilon: self.target,
            delta: self.delta,
            reason,
        }
    }
}

/// The options of the coarse search: tolerance at least [`COARSE_TOLERANCE`] relative, and
/// [`COARSE_TOLERANCE`]·target absolute (a probe far below the target needs no fine bracket),
/// no finer grid for the upper bound; unchanged when the grid step is fixed.
fn coarse(options: AccountantOptions, target: f64) -> AccountantOptions {
    if options.grid_step.is_some() {
        return options;
    }
    let tolerance = options.tolerance;
    AccountantOptions {
        tolerance: Tolerance {
            relative: tolerance.relative.max(COARSE_TOLERANCE),
            absolute_epsilon: tolerance.absolute_epsilon.max(COARSE_TOLERANCE * target),
            ..tolerance
        },
        upper_grid_step: None,
        ..options
    }
}

/// A calibrated value: whole numbers below 2⁵³ (counts) as JSON integers, ±∞ as `"inf"`.
fn serialize_value<S: Serializer>(
    value: &f64,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        serializer.serialize_i64(*value as i64)
    } else {
        crate::report_number::serialize(value, serializer)
    }
}

/// [`serialize_value`] of an optional value (`null` when absent).
fn serialize_optional_value<S: Serializer>(
    value: &Option<f64>,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    match value {
        Some(v) => serialize_value(v, serializer),
        None => serializer.serialize_none(),
    }
}
