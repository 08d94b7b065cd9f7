//! The accuracy-driven accountant: from a specification to a guaranteed bracket.
//!
//! The caller states how tight the bracket must be; the accountant picks the grid step and
//! truncation itself, refining until the bracket is narrow enough, and reports what it used.

use crate::analytic_gaussian;
use crate::bound::{Bound, Bracket};
use crate::composition::compose_all;
use crate::error::{Error, Result};
use crate::grid_pmf::GridPmf;
use crate::loss_bins::MAX_GRID_POINTS;
use crate::mechanism::{Gaussian, PoissonSubsampled};
use crate::pld::{BracketedPld, PrivacyLossDistribution, Symmetry};
use crate::spec::{CompositionSpec, MechanismSpec, Neighbouring, Sampling};
use serde::Serialize;

/// How tight the bracket must be.
///
/// An ε bracket is accepted when `upper − lower ≤ max(relative·upper, absolute_epsilon)`;
/// a δ bracket when `upper − lower ≤ max(relative_delta·upper, absolute_delta)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Tolerance {
    /// Relative width for ε brackets (default 1e-3).
    pub relative: f64,
    /// Absolute width for ε brackets, used when ε is small (default 1e-4).
    pub absolute_epsilon: f64,
    /// Relative width for δ brackets (default 1e-4: δ is far more sensitive than ε).
    pub relative_delta: f64,
    /// Absolute width for δ brackets (default 1e-18).
    pub absolute_delta: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance {
            relative: 1e-3,
            absolute_epsilon: 1e-4,
            relative_delta: 1e-4,
            absolute_delta: 1e-18,
        }
    }
}

/// Accountant settings. `Default` gives the accuracy-driven behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AccountantOptions {
    /// Target bracket width.
    pub tolerance: Tolerance,
    /// Fixed grid step in nats (disables refinement).
    pub grid_step: Option<f64>,
    /// Fixed truncation mass per truncation (default: 1e-14, or 1e-9·δ if smaller).
    pub tail_mass: Option<f64>,
}

/// How a result was computed, for the JSON output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    /// `"analytic_gaussian"` (exact closed form) or `"pld"` (grid + FFT).
    pub method: &'static str,
    /// Grid step used (nats); absent for the analytic method.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grid_step: Option<f64>,
    /// Truncation mass per truncation; absent for the analytic method.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail_mass: Option<f64>,
    /// Number of grid refinements after the first attempt.
    pub refinements: u32,
    /// The tolerance requested.
    pub tolerance: Tolerance,
    /// Width of the bracket returned.
    #[serde(serialize_with = "crate::report_number::serialize")]
    pub bracket_width: f64,
    /// Width the tolerance asked for.
    #[serde(serialize_with = "crate::report_number::serialize")]
    pub target_width: f64,
    /// Whether `bracket_width ≤ target_width`.
    pub tolerance_met: bool,
    /// The neighbouring direction that determines the answer: `"remove"` (the outputs with
    /// the extra record as P) or `"add"`; `"both"` for symmetric compositions.
    pub worse_direction: &'static str,
}

/// The answer to "what ε for this δ?".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpsilonAnswer {
    /// The δ asked about.
    #[serde(serialize_with = "crate::report_number::serialize")]
    pub delta: f64,
    /// Guaranteed bracket on the smallest ε with (ε, δ)-DP.
    pub epsilon: Bracket,
    /// How it was computed.
    pub settings: Settings,
}

/// The answer to "what δ for this ε?".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeltaAnswer {
    /// The ε asked about.
    #[serde(serialize_with = "crate::report_number::serialize")]
    pub epsilon: f64,
    /// Guaranteed bracket on the smallest δ with (ε, δ)-DP.
    pub delta: Bracket,
    /// How it was computed.
    pub settings: Settings,
}

/// Most grid refinements the accountant tries before returning what it has.
const MAX_REFINEMENTS: u32 = 6;
/// Largest default truncation mass; it is lowered to 1e-9·δ for small δ.
const DEFAULT_TAIL_MASS: f64 = 1e-14;
/// Default truncation mass for δ queries (lowered further only when δ < 1e-11).
const DELTA_QUERY_TAIL_MASS: f64 = 1e-20;
/// Smallest default truncation mass (below it, tails are cut where f64 underflows anyway).
const MIN_TAIL_MASS: f64 = 1e-300;

/// Below this δ, self-compositions add tilted FFT powers so the tail is accurate in relative
/// terms (the plain FFT's round-off floor, ~1e-11 summed over a tail, would dominate).
const TILT_BELOW_DELTA: f64 = 2e-6;
/// Number of tilted powers used then.
const TAIL_TILTS: usize = 3;

/// Grid settings of one evaluation.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Grid {
    step: f64,
    tail_mass: f64,
    tilts: usize,
}

/// How many times the first grid may be coarsened (×4 each) when it is too large.
const MAX_COARSENINGS: u32 = 6;

/// Grid refinement stops before a composed grid would hold more points than this.
const MAX_REFINED_POINTS: usize = 1 << 21;

/// The result of one evaluation at one grid.
struct Evaluation {
    bracket: Bracket,
    worse_direction: &'static str,
    /// Largest number of grid points among the composed PMFs.
    points: usize,
}

/// One ordered neighbouring pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// PLD(M(D ∪ {z}) ‖ M(D)).
    Remove,
    /// PLD(M(D) ‖ M(D ∪ {z})).
    Add,
}

/// A PLD accountant for one composition.
#[derive(Debug, Clone)]
pub struct Accountant {
    plan: Plan,
    options: AccountantOptions,
}

/// The composition regrouped for computing: unsampled Gaussians merged analytically,
/// identical sampled events merged into one self-composition.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    /// μ of all unsampled (or q = 1) Gaussian events together, if any.
    gaussian_mu: Option<f64>,
    /// (mechanism, Poisson rate, count) of the sampled events.
    sampled: Vec<(Gaussian, f64, u64)>,
}

impl Accountant {
    /// An accountant for `spec`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a tolerance or grid step that is not a finite positive
    /// number.
    pub fn new(spec: &CompositionSpec, options: AccountantOptions) -> Result<Self> {
        let t = options.tolerance;
        for (name, v) in [
            ("tolerance.relative", t.relative),
            ("tolerance.absolute_epsilon", t.absolute_epsilon),
            ("tolerance.relative_delta", t.relative_delta),
            ("tolerance.absolute_delta", t.absolute_delta),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::invalid(name, v, "a finite number ≥ 0"));
            }
        }
        if let Some(h) = options.grid_step {
            if !(h.is_finite() && h > 0.0 && h <= 1.0) {
                return Err(Error::invalid("grid_step", h, "a number in (0, 1] (nats)"));
            }
        }
        if let Some(tau) = options.tail_mass {
            if !(tau.is_finite() && tau > 0.0 && tau < 1e-3) {
                return Err(Error::invalid("tail_mass", tau, "a number in (0, 1e-3)"));
            }
        }
        Ok(Accountant {
            plan: Plan::from_spec(spec)?,
            options,
        })
    }

    /// Guaranteed bracket on ε(δ): the smallest ε such that the composition is (ε, δ)-DP.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless `0 < delta < 1`; grid errors if the required grid
    /// exceeds the size limits.
    pub fn epsilon_for_delta(&self, delta: f64) -> Result<EpsilonAnswer> {
        if !(delta > 0.0 && delta < 1.0) {
            return Err(Error::invalid("delta", delta, "a number in (0, 1)"));
        }
        let tolerance = self.options.tolerance;
        let target = |b: &Bracket| (tolerance.relative * b.upper).max(tolerance.absolute_epsilon);
        if let Some(mu) = self.plan.analytic_mu() {
            let epsilon = analytic_gaussian::epsilon_for_delta(mu, delta);
            return Ok(EpsilonAnswer {
                delta,
                epsilon,
                settings: Settings::analytic(tolerance, epsilon, target(&epsilon)),
            });
        }
        let tail_mass = self
            .options
            .tail_mass
            .unwrap_or((1e-9 * delta).clamp(MIN_TAIL_MASS, DEFAULT_TAIL_MASS));
        let tilts = if delta < TILT_BELOW_DELTA {
            TAIL_TILTS
        } else {
            0
        };
        let (epsilon, settings) =
            self.refine(tail_mass, tilts, |pmf| pmf.epsilon_for_delta(delta), target)?;
        Ok(EpsilonAnswer {
            delta,
            epsilon,
            settings,
        })
    }

    /// Guaranteed bracket on δ(ε): the smallest δ such that the composition is (ε, δ)-DP.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless ε is a number ≥ 0 (∞ allowed); grid errors as for
    /// [`Accountant::epsilon_for_delta`].
    pub fn delta_for_epsilon(&self, epsilon: f64) -> Result<DeltaAnswer> {
        if epsilon.is_nan() || epsilon < 0.0 {
            return Err(Error::invalid("epsilon", epsilon, "a number ≥ 0"));
        }
        let tolerance = self.options.tolerance;
        let target =
            |b: &Bracket| (tolerance.relative_delta * b.upper).max(tolerance.absolute_delta);
        if let Some(mu) = self.plan.analytic_mu() {
            let delta = analytic_gaussian::delta_for_epsilon(mu, epsilon);
            return Ok(DeltaAnswer {
                epsilon,
                delta,
                settings: Settings::analytic(tolerance, delta, target(&delta)),
            });
        }
        // δ is not known in advance: start far below any δ worth reporting, so that queries at
        // different ε share the same settings unless δ is tiny.
        let mut tail_mass = self.options.tail_mass.unwrap_or(DELTA_QUERY_TAIL_MASS);
        let mut tilts = 0;
        let mut passes = 0;
        loop {
            passes += 1;
            let (delta, settings) = self.refine(
                tail_mass,
                tilts,
                |pmf| pmf.delta_for_epsilon(epsilon),
                target,
            )?;
            // Tiny δ: truncation must be far below it, and the tail computed in relative terms.
            let reference = if delta.lower > 0.0 {
                delta.lower
            } else {
                delta.upper
            };
            let wanted = (1e-9 * reference).max(MIN_TAIL_MASS);
            let retruncate = self.options.tail_mass.is_none() && wanted < 0.1 * tail_mass;
            let retilt = tilts == 0 && delta.upper < TILT_BELOW_DELTA;
            if (retruncate || retilt) && passes < 4 {
                if retruncate {
                    tail_mass = wanted;
                }
                if retilt {
                    tilts = TAIL_TILTS;
                }
                continue;
            }
            return Ok(DeltaAnswer {
                epsilon,
                delta,
                settings,
            });
        }
    }

    /// The bracketed PLD of the whole composition on a grid of step `step`, both directions.
    ///
    /// # Errors
    /// Grid and range errors from discretization and composition.
    pub fn pld(&self, step: f64, tail_mass: f64) -> Result<BracketedPld> {
        let symmetric = self.plan.sampled.is_empty();
        let grid = Grid {
            step,
            tail_mass,
            tilts: 0,
        };
        let direction = |bound| -> Result<PrivacyLossDistribution> {
            let remove = self.composed(bound, Direction::Remove, grid)?;
            let add = if symmetric {
                None
            } else {
                Some(self.composed(bound, Direction::Add, grid)?)
            };
            PrivacyLossDistribution::from_pmfs(remove, add)
        };
        Ok(BracketedPld {
            upper: direction(Bound::Upper)?,
            lower: direction(Bound::Lower)?,
        })
    }

    /// The composition's PMF in one direction and one bound.
    fn composed(&self, bound: Bound, direction: Direction, grid: Grid) -> Result<GridPmf> {
        let Grid {
            step,
            tail_mass,
            tilts,
        } = grid;
        let mut parts = Vec::new();
        if let Some(mu) = self.plan.gaussian_mu {
            let single = PrivacyLossDistribution::from_mechanism(
                &Gaussian::from_mu(mu)?,
                Symmetry::Symmetric,
                step,
                tail_mass,
                bound,
            )?;
            parts.push(single.remove().clone());
        }
        for &(gaussian, rate, count) in &self.plan.sampled {
            let mechanism = PoissonSubsampled::new(gaussian, rate)?;
            let single = PrivacyLossDistribution::from_mechanism(
                &mechanism,
                Symmetry::Asymmetric,
                step,
                tail_mass,
                bound,
            )?;
            let pmf = match direction {
                Direction::Remove => single.remove(),
                Direction::Add => single.add(),
            };
            parts.push(pmf.self_compose_tilted(count, tail_mass, tilts)?);
        }
        compose_all(parts, tail_mass)
    }

    /// Evaluate a query (ε(δ) or δ(ε), read from one direction's PMF) as a bracket over both
    /// directions.
    ///
    /// The REMOVE direction is computed in both bounds on two threads. The ADD direction is
    /// first bounded from above on a grid twice as coarse (cheap): the true answer is the
    /// maximum over directions, so when that bound does not exceed REMOVE's upper bound, ADD
    /// cannot change either end of the bracket (the lower end stays valid because the
    /// maximum is at least REMOVE's value). Otherwise ADD is computed at full resolution too.
    fn evaluate(&self, grid: Grid, query: &(dyn Fn(&GridPmf) -> f64 + Sync)) -> Result<Evaluation> {
        let symmetric = self.plan.sampled.is_empty();
        // (value, number of grid points) of one direction in one bound.
        let run = |bound, direction, grid| -> Result<(f64, usize)> {
            self.composed(bound, direction, grid)
                .map(|pmf| (query(&pmf), pmf.len()))
        };
        let both = |direction: Direction| -> Result<(Bracket, usize)> {
            let (upper, lower) = std::thread::scope(|scope| {
                let lower = scope.spawn(|| run(Bound::Lower, direction, grid));
                let upper = run(Bound::Upper, direction, grid);
                (upper, lower.join())
            });
            let (lower, lower_points) = lower.map_err(|_| Error::IncompatibleDistributions {
                reason: "the lower-bound computation panicked".into(),
            })??;
            let (upper, upper_points) = upper?;
            Ok((Bracket { upper, lower }, upper_points.max(lower_points)))
        };
        let (remove, points) = both(Direction::Remove)?;
        if symmetric {
            return Ok(Evaluation {
                bracket: remove,
                worse_direction: "both",
                points,
            });
        }
        let coarse = Grid {
            step: 2.0 * grid.step,
            ..grid
        };
        let (coarse_add, _) = run(Bound::Upper, Direction::Add, coarse)?;
        if coarse_add <= remove.upper {
            return Ok(Evaluation {
                bracket: remove,
                worse_direction: "remove",
                points,
            });
        }
        let (add, add_points) = both(Direction::Add)?;
        let worse_direction = if add.upper > remove.upper {
            "add"
        } else {
            "remove"
        };
        Ok(Evaluation {
            bracket: remove.max(add),
            worse_direction,
            points: points.max(add_points),
        })
    }

    /// Compute at a grid step, refining it until the bracket meets the tolerance.
    fn refine(
        &self,
        tail_mass: f64,
        tilts: usize,
        query: impl Fn(&GridPmf) -> f64 + Sync,
        target: impl Fn(&Bracket) -> f64,
    ) -> Result<(Bracket, Settings)> {
        let fixed = self.options.grid_step;
        let mut step = fixed.unwrap_or_else(|| self.plan.initial_step());
        let mut refinements = 0;
        let mut coarsenings = 0;
        loop {
            let grid = Grid {
                step,
                tail_mass,
                tilts,
            };
            let Evaluation {
                bracket,
                worse_direction,
                points,
            } = match self.evaluate(grid, &query) {
                Ok(evaluation) => evaluation,
                // The first grid is too fine for the composition's range: coarsen it (the
                // bracket will say how loose the answer is) rather than give up.
                Err(Error::GridTooLarge { .. })
                    if fixed.is_none() && refinements == 0 && coarsenings < MAX_COARSENINGS =>
                {
                    step *= 4.0;
                    coarsenings += 1;
                    continue;
                }
                Err(error) => return Err(error),
            };
            let width = bracket.width();
            let wanted = target(&bracket);
            let met = width.is_finite() && width <= wanted;
            let give_up =
                fixed.is_some() || met || !width.is_finite() || refinements >= MAX_REFINEMENTS;
            let next = step * (0.95 * (wanted / width).sqrt()).clamp(0.1, 0.8);
            // The composed grids grow like 1/step: stop before one would exceed the budget.
            let too_large =
                points as f64 * (step / next) > MAX_REFINED_POINTS as f64 || !self.plan.fits(next);
            if give_up || too_large {
                return Ok((
                    bracket,
                    Settings {
                        method: "pld",
                        grid_step: Some(step),
                        tail_mass: Some(tail_mass),
                        refinements,
                        tolerance: self.options.tolerance,
                        bracket_width: width,
                        target_width: wanted,
                        tolerance_met: met,
                        worse_direction,
                    },
                ));
            }
            step = next;
            refinements += 1;
        }
    }
}

impl Settings {
    fn analytic(tolerance: Tolerance, bracket: Bracket, target: f64) -> Settings {
        Settings {
            method: "analytic_gaussian",
            grid_step: None,
            tail_mass: None,
            refinements: 0,
            tolerance,
            bracket_width: bracket.width(),
            target_width: target,
            tolerance_met: bracket.width().is_finite() && bracket.width() <= target,
            worse_direction: "both",
        }
    }
}

impl Plan {
    fn from_spec(spec: &CompositionSpec) -> Result<Plan> {
        let mut mu_squared = 0.0;
        let mut any_unsampled = false;
        let mut sampled: Vec<(Gaussian, f64, u64)> = Vec::new();
        for (i, event) in spec.events.iter().enumerate() {
            let field = |name: &str| format!("events[{i}].{name}");
            let MechanismSpec::Gaussian { sigma, sensitivity } = event.mechanism else {
                return Err(Error::NotImplemented {
                    field: field("mechanism"),
                    what: format!("mechanism {:?}", event.mechanism.name()),
                    detail: ": the PLD accountant handles \"gaussian\" events only in this \
                             version (the analytic accountants of `compare` accept it)"
                        .into(),
                });
            };
            let gaussian = Gaussian::new(sigma, sensitivity).map_err(|e| match e {
                Error::InvalidParameter {
                    name,
                    value,
                    requirement,
                } => Error::InvalidParameter {
                    name: field(&name),
                    value,
                    requirement,
                },
                other => other,
            })?;
            let rate = match event.sampling {
                Sampling::None => 1.0,
                Sampling::Poisson(rate) => rate,
                Sampling::FixedBatch { .. } => {
                    return Err(Error::NotImplemented {
                        field: field("sampling.fixed_batch"),
                        what: "fixed_batch sampling".into(),
                        detail: String::new(),
                    })
                }
            };
            if rate == 1.0 {
                // Under replace-one the two outputs can differ by 2Δ.
                let factor = match spec.neighbouring {
                    Neighbouring::AddRemove => 1.0,
                    Neighbouring::Replace => 2.0,
                };
                mu_squared += event.count as f64 * (factor * gaussian.mu()).powi(2);
                any_unsampled = true;
            } else if let Some(entry) = sampled
                .iter_mut()
                .find(|(g, r, _)| *g == gaussian && *r == rate)
            {
                entry.2 += event.count;
            } else {
                sampled.push((gaussian, rate, event.count));
            }
        }
        let gaussian_mu = if any_unsampled {
            let mu = mu_squared.sqrt();
            if !mu.is_finite() {
                return Err(Error::invalid(
                    "events",
                    format!("μ = {mu}"),
                    "a composition whose total Gaussian μ = √Σ(count·Δ²/σ²) is finite",
                ));
            }
            Some(mu)
        } else {
            None
        };
        Ok(Plan {
            gaussian_mu,
            sampled,
        })
    }

    /// μ when the whole composition is one Gaussian (no grid needed).
    fn analytic_mu(&self) -> Option<f64> {
        if self.sampled.is_empty() {
            self.gaussian_mu
        } else {
            None
        }
    }

    /// First grid step. Both discretizations err by about `0.3·k·h²` in ε after k
    /// compositions (measured on DP-SGD; second order), so this step gives a bracket of about
    /// 0.01 nats: coarse enough to be cheap, and refinement rescales it in one go.
    fn initial_step(&self) -> f64 {
        let k: u64 = self.sampled.iter().map(|s| s.2).sum::<u64>() + 1;
        (0.02 / k as f64).sqrt().clamp(1e-5, 2e-2)
    }

    /// Whether a grid of this step stays within the size limits (rough, per mechanism).
    fn fits(&self, step: f64) -> bool {
        let widest = self
            .sampled
            .iter()
            .map(|(g, _, _)| {
                let mu = g.mu();
                mu * mu / 2.0 + 20.0 * mu + 1.0
            })
            .chain(self.gaussian_mu.map(|mu| mu * mu / 2.0 + 20.0 * mu + 1.0))
            .fold(0.0, f64::max);
        2.0 * widest / step < MAX_GRID_POINTS as f64
    }
}
