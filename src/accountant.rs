//! The accuracy-driven accountant: from a specification to a guaranteed bracket.
//!
//! The caller states how tight the bracket must be; the accountant picks the grid step and
//! truncation itself, refining until the bracket is narrow enough, and reports what it used.

use crate::analytic_gaussian;
use crate::bound::{Bound, Bracket};
use crate::discretize::loss_atoms::LossAtoms;
use crate::discretize::loss_bins::MAX_GRID_POINTS;
use crate::error::{Error, Result};
use crate::mechanism::discrete::{self, IntegerPair};
use crate::mechanism::{
    Gaussian, Laplace, MixtureOfGaussians, MonotonePrivacyLoss, PoissonSubsampled,
};
use crate::pld::{BracketedPld, PrivacyLossDistribution, Symmetry};
use crate::pmf::composition::compose_all;
use crate::pmf::grid_pmf::{GridPmf, MAX_ABS_LOSS};
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

/// Smallest grid step (nats) the accountant accepts, fixed or in [`Accountant::pld`]: 1e-12.
///
/// A grid this fine holds at most [`MAX_GRID_POINTS`]·1e-12 ≈ 4.2e-6 nats of privacy loss, so
/// nothing finer is ever useful; and the index `loss/step` of every loss within ±700 nats
/// ([`MAX_ABS_LOSS`]) stays below 2⁵³, an exact integer in f64 (the grid code relies on it).
/// Finer steps are refused as invalid input before anything is allocated.
pub const MIN_GRID_STEP: f64 = 1e-12;
const _: () = assert!(2.0 * MAX_ABS_LOSS / MIN_GRID_STEP < 9_007_199_254_740_992.0);

/// The grid step as an invalid parameter unless it is in [`MIN_GRID_STEP`, 1] nats.
fn check_grid_step(name: &str, step: f64) -> Result<()> {
    if step.is_finite() && (MIN_GRID_STEP..=1.0).contains(&step) {
        Ok(())
    } else {
        Err(Error::invalid(
            name,
            readable(step),
            "a number in [1e-12, 1] (nats)",
        ))
    }
}

/// The truncation mass as an invalid parameter unless it is in (0, 1e-3).
fn check_tail_mass(tail_mass: f64) -> Result<()> {
    if tail_mass.is_finite() && tail_mass > 0.0 && tail_mass < 1e-3 {
        Ok(())
    } else {
        Err(Error::invalid(
            "tail_mass",
            readable(tail_mass),
            "a number in (0, 1e-3)",
        ))
    }
}

/// A number as an error message shows it: 5e-324 rather than 324 digits.
fn readable(x: f64) -> String {
    if x != 0.0 && (x.abs() < 1e-4 || x.abs() >= 1e16) {
        format!("{x:e}")
    } else {
        x.to_string()
    }
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

/// Coarsest grid step (nats) of the lower-bound chain: a fixed grid step h also reads the
/// lower bound from the grids 2h, 4h, … up to this step (see [`coarser_steps`]).
const COARSEST_CHAIN_STEP: f64 = 1.0;

/// The grid steps 2h, 4h, … ≤ [`COARSEST_CHAIN_STEP`] whose lower bounds are also read at a
/// fixed grid step h. The steps for h/2 are h and those for h, so halving a fixed grid step
/// never loosens the lower end of a bracket (exact: doubling a float is exact).
fn coarser_steps(step: f64) -> Vec<f64> {
    std::iter::successors(Some(2.0 * step), |s| Some(2.0 * s))
        .take_while(|&s| s <= COARSEST_CHAIN_STEP)
        .collect()
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
/// identical events merged into one self-composition.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    /// μ of all unsampled (or q = 1) Gaussian events together, if any.
    gaussian_mu: Option<f64>,
    /// Bound on the relative rounding error of `gaussian_mu` (see [`Plan::analytic_mu`]).
    gaussian_mu_relative_error: f64,
    /// The other events, identical ones merged.
    groups: Vec<Group>,
}

/// Identical events, composed `count` times.
#[derive(Debug, Clone, PartialEq)]
struct Group {
    component: Component,
    count: u64,
}

/// One event's pair, in the form the discretization needs.
#[derive(Debug, Clone, PartialEq)]
enum Component {
    SubsampledGaussian(PoissonSubsampled<Gaussian>),
    Mixture(MixtureOfGaussians),
    Laplace(Laplace),
    SubsampledLaplace(PoissonSubsampled<Laplace>),
    /// Built per truncation mass (its tails depend on it).
    DiscreteGaussian {
        sigma: f64,
        sensitivity: u64,
        pair: IntegerPair,
    },
    /// Exact atoms of a finite pair (REMOVE direction), with the lattice their losses lie on
    /// when it is known (every loss an integer multiple of it).
    Atoms {
        atoms: LossAtoms,
        symmetry: Symmetry,
        lattice: Option<f64>,
    },
}

impl Accountant {
    /// An accountant for `spec`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a tolerance that is not a finite number ≥ 0, a grid step
    /// outside [[`MIN_GRID_STEP`], 1] nats or a truncation mass outside (0, 1e-3).
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
            check_grid_step("grid_step", h)?;
        }
        if let Some(tau) = options.tail_mass {
            check_tail_mass(tau)?;
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
        if let Some((mu_lo, mu_hi)) = self.plan.analytic_mu() {
            // ε(δ) grows with μ: the upper bound at the largest μ, the lower at the smallest.
            let upper = analytic_gaussian::epsilon_upper_for_delta(mu_hi, delta);
            let epsilon = Bracket {
                upper,
                lower: analytic_gaussian::epsilon_lower_for_delta(mu_lo, delta, upper),
            };
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
        if let Some((mu_lo, mu_hi)) = self.plan.analytic_mu() {
            let delta = Bracket {
                upper: analytic_gaussian::delta_for_epsilon(mu_hi, epsilon).upper,
                lower: analytic_gaussian::delta_for_epsilon(mu_lo, epsilon).lower,
            };
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

    /// The bracketed PLD of the whole composition on a grid of step `step`, both directions,
    /// with the lower PLDs on the grids 2h, 4h, … ≤ 1 nat in `coarser_lowers` (a coarser grid
    /// whose computation fails is left out), so that halving `step` never loosens the lower
    /// end of any bracket read from it.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a step outside [[`MIN_GRID_STEP`], 1] nats or a
    /// truncation mass outside (0, 1e-3); grid and range errors from discretization and
    /// composition on the grid `step`.
    pub fn pld(&self, step: f64, tail_mass: f64) -> Result<BracketedPld> {
        check_grid_step("step", step)?;
        check_tail_mass(tail_mass)?;
        let symmetric = self.plan.is_symmetric();
        let direction = |bound, step| -> Result<PrivacyLossDistribution> {
            let grid = Grid {
                step,
                tail_mass,
                tilts: 0,
            };
            let remove = self.composed(bound, Direction::Remove, grid)?;
            let add = if symmetric {
                None
            } else {
                Some(self.composed(bound, Direction::Add, grid)?)
            };
            PrivacyLossDistribution::from_pmfs(remove, add)
        };
        Ok(BracketedPld {
            upper: direction(Bound::Upper, step)?,
            lower: direction(Bound::Lower, step)?,
            coarser_lowers: coarser_steps(step)
                .into_iter()
                .filter_map(|coarse| direction(Bound::Lower, coarse).ok())
                .collect(),
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
        // μ = 0 (Δ/σ underflows): no privacy loss, nothing to compose.
        if let Some(mu) = self.plan.gaussian_mu.filter(|&mu| mu > 0.0) {
            // Δ = μ, σ = 1 has the same PLD, and stays valid where 1/μ overflows.
            let gaussian = Gaussian::from_mu(mu).or_else(|_| Gaussian::new(1.0, mu))?;
            let single = PrivacyLossDistribution::from_mechanism(
                &gaussian,
                Symmetry::Symmetric,
                step,
                tail_mass,
                bound,
            )?;
            parts.push(single.remove().clone());
        }
        for group in &self.plan.groups {
            let single = group.component.pld(bound, step, tail_mass)?;
            let pmf = match direction {
                Direction::Remove => single.remove(),
                Direction::Add => single.add(),
            };
            parts.push(pmf.self_compose_tilted(group.count, tail_mass, tilts)?);
        }
        compose_all(parts, tail_mass)
    }

    /// Evaluate a query (ε(δ) or δ(ε), read from one direction's PMF) as a bracket over both
    /// directions.
    ///
    /// At a grid step fixed by the user, the lower end is the largest over the grids h, 2h,
    /// 4h, … ≤ 1 nat (see [`coarser_steps`]; each is a lower bound, and a coarser grid whose
    /// computation fails is left out), so that halving the step never loosens it. The coarser
    /// grids together cost about as much as the grid h; the first runs beside the lower bound
    /// at h, the others after the upper bound.
    ///
    /// The REMOVE direction is computed in both bounds on two threads. The ADD direction is
    /// first bounded from above on a grid twice as coarse (cheap): the true answer is the
    /// maximum over directions, so when that bound does not exceed REMOVE's upper bound, ADD
    /// cannot change either end of the bracket (the lower end stays valid because the
    /// maximum is at least REMOVE's value). Otherwise ADD is computed at full resolution too.
    fn evaluate(&self, grid: Grid, query: &(dyn Fn(&GridPmf) -> f64 + Sync)) -> Result<Evaluation> {
        let symmetric = self.plan.is_symmetric();
        // (value, number of grid points) of one direction in one bound.
        let run = |bound, direction, grid| -> Result<(f64, usize)> {
            self.composed(bound, direction, grid)
                .map(|pmf| (query(&pmf), pmf.len()))
        };
        let chain = match self.options.grid_step {
            Some(_) => coarser_steps(grid.step),
            None => Vec::new(),
        };
        let (beside_lower, after_upper) = chain.split_at(chain.len().min(1));
        // The best lower bound over coarser grids (−∞ when there is none).
        let coarser_lower = |direction, steps: &[f64]| -> f64 {
            steps
                .iter()
                .filter_map(|&step| run(Bound::Lower, direction, Grid { step, ..grid }).ok())
                .map(|(value, _)| value)
                .fold(f64::NEG_INFINITY, f64::max)
        };
        let both = |direction: Direction| -> Result<(Bracket, usize)> {
            let (upper, coarser, lower) = std::thread::scope(|scope| {
                let lower = scope.spawn(|| {
                    run(Bound::Lower, direction, grid).map(|(value, points)| {
                        (value.max(coarser_lower(direction, beside_lower)), points)
                    })
                });
                let upper = run(Bound::Upper, direction, grid);
                let coarser = match upper {
                    Ok(_) => coarser_lower(direction, after_upper),
                    Err(_) => f64::NEG_INFINITY,
                };
                (upper, coarser, lower.join())
            });
            let (lower, lower_points) = lower.map_err(|_| Error::IncompatibleDistributions {
                reason: "the lower-bound computation panicked".into(),
            })??;
            let (upper, upper_points) = upper?;
            let bracket = Bracket {
                upper,
                lower: lower.max(coarser),
            };
            Ok((bracket, upper_points.max(lower_points)))
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
        let mut best: Option<Bracket> = None;
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
                    step = self.plan.aligned_step(step * 4.0);
                    coarsenings += 1;
                    continue;
                }
                Err(error) => return Err(error),
            };
            // Every grid's bracket is guaranteed: keep the tightest ends seen so far, so that
            // a refinement never loosens either end.
            let bracket = match best {
                Some(previous) => Bracket {
                    upper: bracket.upper.min(previous.upper),
                    lower: bracket.lower.max(previous.lower),
                },
                None => bracket,
            };
            best = Some(bracket);
            let width = bracket.width();
            let wanted = target(&bracket);
            let met = width.is_finite() && width <= wanted;
            let give_up =
                fixed.is_some() || met || !width.is_finite() || refinements >= MAX_REFINEMENTS;
            let next = self
                .plan
                .aligned_step(step * (0.95 * (wanted / width).sqrt()).clamp(0.1, 0.8));
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

/// Largest lattice refinement tried when aligning the grid to several lattices.
const MAX_LATTICE_DIVISOR: u32 = 1000;

impl Plan {
    fn from_spec(spec: &CompositionSpec) -> Result<Plan> {
        let mut mu_squared = 0.0;
        let mut any_unsampled = false;
        let mut unsampled_events = 0usize;
        let mut groups: Vec<Group> = Vec::new();
        // Under replace-one the two outputs of unsampled additive noise differ by 2Δ.
        let factor = match spec.neighbouring {
            Neighbouring::AddRemove => 1.0,
            Neighbouring::Replace => 2.0,
        };
        for (i, event) in spec.events.iter().enumerate() {
            let field = |name: &str| format!("events[{i}].{name}");
            let located = |e: Error| match e {
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
            };
            // Poisson sampling at rate 1 and a batch of the whole dataset are no sampling.
            let sampling = match event.sampling {
                Sampling::Poisson(rate) if rate >= 1.0 => Sampling::None,
                Sampling::FixedBatch {
                    batch_size,
                    dataset_size,
                } if batch_size >= dataset_size => Sampling::None,
                other => other,
            };
            let component = match (&event.mechanism, sampling) {
                (&MechanismSpec::Gaussian { sigma, sensitivity }, Sampling::None) => {
                    let gaussian = Gaussian::new(sigma, sensitivity).map_err(located)?;
                    mu_squared += event.count as f64 * (factor * gaussian.mu()).powi(2);
                    any_unsampled = true;
                    unsampled_events += 1;
                    continue;
                }
                (&MechanismSpec::Gaussian { sigma, sensitivity }, Sampling::Poisson(rate)) => {
                    let gaussian = Gaussian::new(sigma, sensitivity).map_err(located)?;
                    Component::SubsampledGaussian(
                        PoissonSubsampled::new(gaussian, rate).map_err(located)?,
                    )
                }
                // Sampling without replacement (m of n) under replace-one: the worst case is
                // Poisson sampling at rate γ = m/n of the pair with shift 2Δ, in both directions.
                // It is attained (record i contributes −v in D, every other record +v in D and
                // D′: when i is not drawn both outputs coincide) and dominating (Zhu, Dong &
                // Wang, AISTATS 2022, Thm 10 on subset sampling). The symmetric pair
                // (1−γ)μ + γμ(·±Δ) of ALGORITHMS.md §2.4 is not an upper bound here.
                (&MechanismSpec::Gaussian { sigma, sensitivity }, Sampling::FixedBatch { .. }) => {
                    let gaussian = Gaussian::new(sigma, 2.0 * sensitivity).map_err(located)?;
                    Component::SubsampledGaussian(
                        PoissonSubsampled::new(gaussian, gamma(sampling)).map_err(located)?,
                    )
                }
                (&MechanismSpec::Laplace { scale, sensitivity }, Sampling::None) => {
                    Component::Laplace(Laplace::new(scale, factor * sensitivity).map_err(located)?)
                }
                (&MechanismSpec::Laplace { scale, sensitivity }, Sampling::Poisson(rate)) => {
                    let laplace = Laplace::new(scale, sensitivity).map_err(located)?;
                    Component::SubsampledLaplace(
                        PoissonSubsampled::new(laplace, rate).map_err(located)?,
                    )
                }
                (&MechanismSpec::Laplace { scale, sensitivity }, Sampling::FixedBatch { .. }) => {
                    let laplace = Laplace::new(scale, 2.0 * sensitivity).map_err(located)?;
                    Component::SubsampledLaplace(
                        PoissonSubsampled::new(laplace, gamma(sampling)).map_err(located)?,
                    )
                }
                (&MechanismSpec::DiscreteLaplace { scale, sensitivity }, _) => {
                    let (sensitivity, pair) =
                        integer_pair(sensitivity, factor, sampling).map_err(located)?;
                    let atoms = discrete::discrete_laplace(scale, sensitivity, pair)?;
                    Component::Atoms {
                        atoms,
                        symmetry: pair_symmetry(pair),
                        lattice: (pair == IntegerPair::Plain).then_some(1.0 / scale),
                    }
                }
                (&MechanismSpec::DiscreteGaussian { sigma, sensitivity }, _) => {
                    let (sensitivity, pair) =
                        integer_pair(sensitivity, factor, sampling).map_err(located)?;
                    Component::DiscreteGaussian {
                        sigma,
                        sensitivity,
                        pair,
                    }
                }
                (
                    &MechanismSpec::RandomizedResponse {
                        epsilon,
                        categories,
                    },
                    _,
                ) => atoms_component(
                    discrete::randomized_response(epsilon, categories),
                    epsilon,
                    sampling,
                ),
                (&MechanismSpec::EpsDelta { epsilon, delta }, _) => {
                    atoms_component(discrete::eps_delta(epsilon, delta), epsilon, sampling)
                }
                (
                    MechanismSpec::MixtureOfGaussians {
                        sigma,
                        sensitivities,
                        probabilities,
                    },
                    _,
                ) => {
                    let mixture = MixtureOfGaussians::new(*sigma, sensitivities, probabilities)
                        .map_err(located)?;
                    if mixture.largest_shift() == 0.0 {
                        // Both outputs have the same distribution: no privacy loss at all.
                        atoms_component(discrete::eps_delta(0.0, 0.0), 0.0, Sampling::None)
                    } else {
                        Component::Mixture(mixture)
                    }
                }
                (MechanismSpec::PmfPair { p, q }, _) => Component::Atoms {
                    atoms: discrete::pmf_pair(p, q),
                    symmetry: Symmetry::Asymmetric,
                    lattice: None,
                },
            };
            if let Some(group) = groups.iter_mut().find(|g| g.component == component) {
                group.count += event.count;
            } else {
                groups.push(Group {
                    component,
                    count: event.count,
                });
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
        // Each term count·(factor·Δ/σ)² carries three roundings, the sum of n positive terms
        // n − 1 more, and the square root halves that and adds one: (n/2 + 2)·2⁻⁵³ in all,
        // below (n + 4)·2⁻⁵² with room for second-order terms (and an inexact count > 2⁵³).
        let gaussian_mu_relative_error = (unsampled_events as f64 + 4.0) * f64::EPSILON;
        Ok(Plan {
            gaussian_mu,
            gaussian_mu_relative_error,
            groups,
        })
    }

    /// `[μ_lo, μ_hi]` around the exact μ when the whole composition is one Gaussian (no grid
    /// needed): the computed μ widened by its rounding error bound. δ(ε) and ε(δ) increase
    /// with μ, so lower bounds are taken at `μ_lo` and upper bounds at `μ_hi`.
    fn analytic_mu(&self) -> Option<(f64, f64)> {
        if self.groups.is_empty() {
            let r = self.gaussian_mu_relative_error;
            self.gaussian_mu.map(|mu| (mu * (1.0 - r), mu * (1.0 + r)))
        } else {
            None
        }
    }

    /// Whether every event's ADD pair has the same PLD as its REMOVE pair.
    fn is_symmetric(&self) -> bool {
        self.groups
            .iter()
            .all(|g| g.component.symmetry() == Symmetry::Symmetric)
    }

    /// First grid step. Both discretizations err by about `0.3·k·h²` in ε after k
    /// compositions (measured on DP-SGD; second order), so this step gives a bracket of about
    /// 0.01 nats: coarse enough to be cheap, and refinement rescales it in one go. When every
    /// event is a finite pair on a common lattice, the lattice itself is the grid (exact).
    fn initial_step(&self) -> f64 {
        let k: u64 = self.groups.iter().map(|g| g.count).sum::<u64>() + 1;
        let step = (0.02 / k as f64).sqrt().clamp(1e-5, 2e-2);
        let all_on_lattice = self.gaussian_mu.is_none()
            && self.groups.iter().all(|g| {
                matches!(g.component, Component::Atoms { lattice: Some(u), .. } if u > 0.0)
                    || matches!(
                        g.component,
                        Component::Atoms { ref atoms, .. } if atoms.atoms().iter().all(|a| a.loss == 0.0)
                    )
            });
        if all_on_lattice {
            if let Some(unit) = self.common_lattice(0.0) {
                return unit.min(1.0);
            }
        }
        self.aligned_step(step)
    }

    /// The largest step ≤ `step` that divides the common lattice of the events whose atoms
    /// are spaced at least `step` apart, so those atoms sit exactly on grid points (both
    /// roundings are then exact for them); `step` itself if there is no common lattice.
    fn aligned_step(&self, step: f64) -> f64 {
        match self.common_lattice(step) {
            Some(unit) => unit / (unit / step * (1.0 - 1e-12)).ceil().max(1.0),
            None => step,
        }
    }

    /// The largest g such that every lattice unit of at least `smallest` is a whole multiple
    /// of g (within 1e-9 relative), trying g = u_min/n for n up to 1000. The losses that are
    /// merely worth keeping on the grid (the largest atom of a pair without a lattice) are
    /// added one by one where they fit.
    fn common_lattice(&self, smallest: f64) -> Option<f64> {
        let keep = |u: &f64| *u > 0.0 && *u >= smallest && u.is_finite();
        let (mut required, mut optional) = (Vec::new(), Vec::new());
        for group in &self.groups {
            match group.component {
                Component::Atoms {
                    lattice: Some(u), ..
                } => required.push(u),
                Component::Laplace(laplace) => required.push(laplace.epsilon0()),
                Component::DiscreteGaussian {
                    sigma,
                    sensitivity,
                    pair: IntegerPair::Plain,
                } => required.push(sensitivity as f64 / (2.0 * sigma * sigma)),
                // No lattice: keep at least the largest loss on the grid, the atom that weighs
                // most in δ(ε) for ε > 0 (an isolated atom off the grid costs the lower bound
                // first-order error).
                Component::Atoms {
                    ref atoms,
                    lattice: None,
                    ..
                } => optional.extend(atoms.atoms().last().map(|a| a.loss)),
                Component::SubsampledLaplace(m) => optional.push(top_constant_loss(&m)),
                _ => {}
            }
        }
        required.retain(keep);
        optional.retain(keep);
        let mut units = required;
        let mut lattice = lattice_of(&units);
        for u in optional {
            units.push(u);
            match lattice_of(&units) {
                Some(g) => lattice = Some(g),
                None => {
                    units.pop();
                }
            }
        }
        lattice
    }

    /// Whether a grid of this step stays within the size limits (rough, per mechanism).
    fn fits(&self, step: f64) -> bool {
        let gaussian_width = |mu: f64| mu * mu / 2.0 + 20.0 * mu + 1.0;
        let widest = self
            .groups
            .iter()
            .map(|g| g.component.loss_width(gaussian_width))
            .chain(self.gaussian_mu.map(gaussian_width))
            .fold(0.0, f64::max);
        2.0 * widest / step < MAX_GRID_POINTS as f64
    }
}

/// The largest g = u_min/n (n ≤ 1000) of which every unit is a whole multiple (within 1e-9
/// relative); `None` for no units or no such g.
fn lattice_of(units: &[f64]) -> Option<f64> {
    let smallest = units.iter().copied().fold(f64::INFINITY, f64::min);
    if !smallest.is_finite() {
        return None;
    }
    (1..=MAX_LATTICE_DIVISOR).find_map(|n| {
        let g = smallest / n as f64;
        units
            .iter()
            .all(|u| {
                let r = u / g;
                (r - r.round()).abs() <= 1e-9 * r
            })
            .then_some(g)
    })
}

/// γ = m/n of a fixed batch.
fn gamma(sampling: Sampling) -> f64 {
    match sampling {
        Sampling::FixedBatch {
            batch_size,
            dataset_size,
        } => batch_size as f64 / dataset_size as f64,
        _ => 1.0,
    }
}

/// The integer pair of discrete noise under a sampling scheme; under replace-one (unsampled,
/// or a fixed batch) the shift is doubled, and a fixed batch is accounted as Poisson sampling
/// at γ = m/n (its worst case, see `Plan::from_spec`).
fn integer_pair(sensitivity: u64, factor: f64, sampling: Sampling) -> Result<(u64, IntegerPair)> {
    let doubled = || {
        sensitivity.checked_mul(2).ok_or_else(|| {
            Error::invalid(
                "sensitivity",
                sensitivity,
                "a whole number ≥ 1 whose double (the replace-one shift) is below 2^64",
            )
        })
    };
    Ok(match sampling {
        Sampling::None if factor == 2.0 => (doubled()?, IntegerPair::Plain),
        Sampling::None => (sensitivity, IntegerPair::Plain),
        Sampling::Poisson(rate) => (sensitivity, IntegerPair::Poisson(rate)),
        Sampling::FixedBatch { .. } => (doubled()?, IntegerPair::Poisson(gamma(sampling))),
    })
}

fn pair_symmetry(pair: IntegerPair) -> Symmetry {
    match pair {
        IntegerPair::Poisson(_) => Symmetry::Asymmetric,
        IntegerPair::Plain => Symmetry::Symmetric,
    }
}

/// A symmetric finite pair with losses on the lattice `epsilon·ℤ`, Poisson-subsampled if asked
/// (REMOVE `((1−q)Q + qP, Q)`, ADD its swap; the spec refuses other sampling).
fn atoms_component(atoms: LossAtoms, epsilon: f64, sampling: Sampling) -> Component {
    match sampling {
        Sampling::Poisson(rate) => Component::Atoms {
            atoms: atoms.poisson_subsampled(rate),
            symmetry: Symmetry::Asymmetric,
            lattice: None,
        },
        _ => Component::Atoms {
            atoms,
            symmetry: Symmetry::Symmetric,
            lattice: (epsilon > 0.0).then_some(epsilon),
        },
    }
}

impl Component {
    fn symmetry(&self) -> Symmetry {
        match self {
            Component::Laplace(_) => Symmetry::Symmetric,
            Component::SubsampledGaussian(_)
            | Component::SubsampledLaplace(_)
            | Component::Mixture(_) => Symmetry::Asymmetric,
            Component::DiscreteGaussian { pair, .. } => pair_symmetry(*pair),
            Component::Atoms { symmetry, .. } => *symmetry,
        }
    }

    /// The single-event PLD in one bound.
    fn pld(&self, bound: Bound, step: f64, tail_mass: f64) -> Result<PrivacyLossDistribution> {
        fn continuous<M: MonotonePrivacyLoss>(
            m: &M,
            symmetry: Symmetry,
            bound: Bound,
            step: f64,
            tail_mass: f64,
        ) -> Result<PrivacyLossDistribution> {
            PrivacyLossDistribution::from_mechanism(m, symmetry, step, tail_mass, bound)
        }
        let symmetry = self.symmetry();
        match self {
            Component::SubsampledGaussian(m) => continuous(m, symmetry, bound, step, tail_mass),
            Component::Mixture(m) => continuous(m, symmetry, bound, step, tail_mass),
            Component::Laplace(m) => continuous(m, symmetry, bound, step, tail_mass),
            Component::SubsampledLaplace(m) => continuous(m, symmetry, bound, step, tail_mass),
            &Component::DiscreteGaussian {
                sigma,
                sensitivity,
                pair,
            } => {
                let atoms = discrete::discrete_gaussian(sigma, sensitivity, pair, tail_mass)?;
                PrivacyLossDistribution::from_atoms(&atoms, symmetry, step, bound)
            }
            Component::Atoms { atoms, .. } => {
                PrivacyLossDistribution::from_atoms(atoms, symmetry, step, bound)
            }
        }
    }

    /// A rough width (nats) of the single-event loss range, for grid-size estimates.
    fn loss_width(&self, gaussian_width: impl Fn(f64) -> f64) -> f64 {
        match self {
            Component::SubsampledGaussian(m) => gaussian_width(m.base().mu()),
            Component::Mixture(m) => truncated_width(m),
            Component::Laplace(m) => truncated_width(m),
            Component::SubsampledLaplace(m) => truncated_width(m),
            Component::DiscreteGaussian {
                sigma, sensitivity, ..
            } => gaussian_width(*sensitivity as f64 / sigma),
            Component::Atoms { atoms, .. } => {
                let a = atoms.atoms();
                match (a.first(), a.last()) {
                    (Some(lo), Some(hi)) => hi.loss.min(700.0) - lo.loss.max(-700.0) + 1.0,
                    _ => 1.0,
                }
            }
        }
    }
}

/// The loss of the region of largest, constant loss (e.g. `ln(1 + q(e^{ε₀} − 1))` for
/// subsampled Laplace noise).
fn top_constant_loss<M: MonotonePrivacyLoss>(m: &M) -> f64 {
    match m.constant_loss_regions().0 {
        Some(x) => m.privacy_loss(x),
        None => 0.0,
    }
}

/// The loss range of a continuous mechanism between its widest truncation points.
fn truncated_width<M: MonotonePrivacyLoss>(m: &M) -> f64 {
    let (lo, hi) = m.truncation_points(1e-300);
    (m.privacy_loss(lo) - m.privacy_loss(hi)).abs().min(1400.0) + 1.0
}
