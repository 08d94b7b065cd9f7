//! The accuracy-driven accountant: from a specification to a guaranteed bracket.
//!
//! The caller states how tight the bracket must be; the accountant picks the grid step and
//! truncation itself, refining until the bracket is narrow enough, and reports what it used.
//!
//! This is where the pipeline comes together: the events of a [`crate::spec`] become pairs of
//! [`crate::mechanism`]s, which are put on a grid in both rounding directions
//! ([`crate::discretize`]), composed ([`crate::pmf`], [`crate::pld`]) and read off as a
//! [`Bracket`] on ε(δ) or δ(ε). Unsampled Gaussian compositions skip the grid: they are
//! answered in closed form ([`crate::mechanism::analytic_gaussian`]).

use crate::bound::{Bound, Bracket};
use crate::discretize::loss_atoms::LossAtoms;
use crate::discretize::loss_bins::MAX_GRID_POINTS;
use crate::discretize::random_allocation::EpochLaws;
use crate::error::{Error, Result};
use crate::mechanism::analytic_gaussian;
use crate::mechanism::discrete::{self, IntegerPair};
use crate::mechanism::{
    Gaussian, Laplace, MixtureOfGaussians, MonotonePrivacyLoss, PoissonSubsampled,
};
use crate::pld::{BracketedPld, PrivacyLossDistribution, Symmetry};
use crate::pmf::composition::{compose_all_tilted, DOUBLE_DOUBLE_MAX_PERIOD};
use crate::pmf::grid_pmf::{GridPmf, LOSS_LIMIT, MAX_ABS_LOSS};
use crate::pmf::product::compose_product_reaching;
use crate::pmf::tail_moments::TailMoments;
use crate::spec::{CompositionSpec, MechanismKind, Neighbouring, SamplingKind};

/// Smallest grid step (nats) the accountant accepts, fixed or in [`Accountant::pld`]: 1e-12.
///
/// A grid this fine holds at most [`MAX_GRID_POINTS`]·1e-12 ≈ 4.2e-6 nats of privacy loss, so
/// nothing finer is ever useful; and the index `loss/step` of every loss within ±700 nats
/// ([`MAX_ABS_LOSS`]) stays below 2⁵³, an exact integer in f64 (the grid code relies on it).
/// Finer steps are refused as invalid input before anything is allocated.
pub const MIN_GRID_STEP: f64 = 1e-12;
/// Coarsest grid step (nats) any query uses, the user's or the accountant's.
pub const MAX_GRID_STEP: f64 = 1.0;
const _: () = assert!(2.0 * MAX_ABS_LOSS / MIN_GRID_STEP < 9_007_199_254_740_992.0);

/// The options as [`Accountant::new`] (and the ledger) accept them: tolerances finite and
/// ≥ 0, the grid step in [[`MIN_GRID_STEP`], 1] nats, the truncation mass in (0, 1e-3).
pub(crate) fn check_options(options: &AccountantOptions) -> Result<()> {
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
    if let Some(h) = options.upper_grid_step {
        check_grid_step("upper_grid_step", h)?;
    }
    if let Some(bytes) = options.memory_budget {
        if bytes < MIN_MEMORY_BUDGET {
            return Err(Error::invalid(
                "memory_budget",
                bytes,
                "at least 16 MiB (16777216 bytes)",
            ));
        }
    }
    Ok(())
}

/// The grid step as an invalid parameter unless it is in [[`MIN_GRID_STEP`], 1] nats.
fn check_grid_step(name: &str, step: f64) -> Result<()> {
    if step.is_finite() && (MIN_GRID_STEP..=MAX_GRID_STEP).contains(&step) {
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

/// Most grid refinements the accountant tries before returning what it has. (Six stopped a
/// δ(ε) query on a Poisson-sampled discrete Gaussian, σ 5, q 1e-3, 5000 runs, at 1.03 target
/// widths: its steps halve after refinements that do not narrow the bracket, and each grid
/// was cheap, 0.06 s for all; the size limits and the memory budget bound the costly ones.)
const MAX_REFINEMENTS: u32 = 8;
/// Largest default truncation mass; it is lowered to 1e-9·δ for small δ.
const DEFAULT_TAIL_MASS: f64 = 1e-14;
/// Default truncation mass of a δ query's first grid, before δ is known: the next grids are
/// truncated for the δ the bracket bounds from below (see [`Plan::delta_query_truncation`]),
/// and a second pass lowers it when δ < 1e-11.
const DELTA_QUERY_TAIL_MASS: f64 = 1e-20;
/// Smallest default truncation mass (below it, tails are cut where f64 underflows anyway).
const MIN_TAIL_MASS: f64 = 1e-300;

/// Below this δ, self-compositions add tilted FFT powers so the tail is accurate in relative
/// terms (the plain FFT's round-off floor, ~1e-11 summed over a tail, would dominate).
const TILT_BELOW_DELTA: f64 = 2e-6;
/// Number of tilted powers used then.
const TAIL_TILTS: usize = 3;

/// Plans of up to this many distinct events may be retried with the reaching measures (their
/// product in double-double arithmetic, see [`Accountant::reaching_may_help`]); the product
/// takes at most 8 factors, one transform each.
const REACHING_PRODUCT_GROUPS: usize = 8;
/// Number of tilted powers of a retry at a larger δ, when round-off rather than the grid
/// keeps the bracket wide: one tilt already bounds the round-off of the tail that δ ≥ 2e-6
/// reads (1000 distinct subsampled Gaussians at δ 1e-5 give the same bracket with one
/// tilt as with three, in two thirds of the time); far tails need [`TAIL_TILTS`].
const ROUND_OFF_TILTS: usize = 1;

/// Smallest share of a bracket's own width (in δ, as the target's share is measured) that
/// the round-off charged where the answer was read must reach for a refinement that did not
/// narrow the bracket to be put down to round-off (see [`Accountant::refine`]). The δ–ε
/// conversion assumes |dδ/dε| ≥ δ, which holds in the usual case; 1e-4 leaves four orders of
/// magnitude for where it does not. Two epochs of 2-out-of-5 allocation at σ 0.81 beside 609
/// Poisson-sampled steps: round-off 4.5e-5 of the width (a lower bound loose by nature), so
/// no retry; it had doubled the query's 22 s.
const ROUND_OFF_WIDTH_SHARE: f64 = 1e-4;

/// [`ROUND_OFF_WIDTH_SHARE`] for plans with a lower bound loose by nature
/// ([`Plan::loose_by_nature`]: random allocation with k > 1, shuffling, guarantee events),
/// whose brackets stay wide whatever the round-off: a hundredth (two orders of magnitude
/// left for the δ–ε conversion). 30 epochs of 2-out-of-235 allocation at σ 0.8: round-off
/// 8e-4 of the 0.043-nat bracket at δ 1e-5; the retry with tilts repeated the whole
/// refinement (half of the query's 4.8 s) and lowered the upper end by 3.6e-7.
const LOOSE_ROUND_OFF_WIDTH_SHARE: f64 = 1e-2;

/// Whether FFT round-off may be what keeps a bracket wide: the δ a composed PMF's
/// allowances charge where the answer was read ([`GridPmf::charged_at`]) is at least a tenth
/// of the target width, in δ (`target_delta_width`). Below that, tilted powers (which only shrink the
/// round-off charge) cannot narrow the bracket to its target, and retrying with them would
/// only double the cost of a query whose grid is the limit (every fixed-grid query that
/// misses its tolerance did so before). For ε(δ) the target width in δ is taken as δ times
/// the target width in ε (|dδ/dε| ≥ δ wherever the privacy loss exceeds ε with probability
/// at least 2δ, the usual case; elsewhere this only decides the cost, never the guarantee).
fn roundoff_may_matter(roundoff_mass: f64, target_delta_width: f64) -> bool {
    // NaN (unknown) counts as mattering.
    roundoff_mass.is_nan() || roundoff_mass >= 0.1 * target_delta_width
}

/// Whether a pass that missed its tolerance may meet it on a retry that only shrinks the
/// round-off charge (tilted powers, or reaching ones): unless the pass stopped for round-off
/// (`stopped_by` "round-off") or lost its bracket, it refined as far as the grid goes (size
/// limits, memory budget, refinement count, a bracket no longer narrowing, or a fixed grid),
/// and the retry stops on about the same grids, narrowing the bracket by at most what
/// round-off charged: not worth a whole pass unless that charge is at least a tenth of the
/// width still to lose. All in δ (`roundoff_mass`, `width` and `target_width`; for ε(δ) the
/// ε widths times δ, as in [`roundoff_may_matter`]). A cost rule only: every pass's bracket
/// is guaranteed. (`pld curve --preset mnist-dp-sgd --tolerance 1e-20`, a target no grid
/// meets: at δ 1e-6 the tilted pass stopped by the grid size limit at [2.6967622,
/// 2.6967627], a charge of 3.6e-4 of its width, and the retry with reaching powers took
/// 2.7 of the query's 3.9 s to end at [2.6967621, 2.6967628].)
fn retry_may_meet(
    roundoff_mass: f64,
    width: f64,
    target_width: f64,
    stopped_by: Option<&str>,
) -> bool {
    stopped_by == Some("round-off")
        || !width.is_finite()
        || roundoff_mass.is_nan()
        || roundoff_mass >= 0.1 * (width - target_width)
}

/// A pass's first grid: its step, truncation and round-off charge (see [`FirstGrid::futile`]).
#[derive(Debug, Clone, Copy, PartialEq)]
struct FirstGrid {
    step: f64,
    tail_mass: f64,
    roundoff_mass: f64,
    /// Whether the charge was at least a tenth of the grid's target width (in δ).
    charge_matters: bool,
}

/// The share of the pass before's round-off charge that a retry for round-off must stay
/// below on the same first grid to go on (see [`FirstGrid::futile`]).
const RETRY_SHRINK: f64 = 0.5;

impl FirstGrid {
    /// Whether a retry for round-off (tilted or reaching powers, same truncation), whose
    /// first grid is `this`, is futile after the pass before it, whose first grid was
    /// `self`: on the same grid, where the charge was at least a tenth of the target width,
    /// it did not halve the charge ([`RETRY_SHRINK`]). The retry changes only how
    /// self-compositions are computed, so a charge they do not shrink there is some other
    /// part's, and finer grids would only repeat the pass before at more cost. (Found on one
    /// epoch of random allocation, σ 1.75, t 727, beside 157 runs of a two-outcome pair,
    /// δ 1e-15: 8.66e-13 charged on the first grid in both passes, and the retry's three
    /// finer grids took 2.6 of the query's 2.9 s and left both ends where they were. That
    /// charge was the heterogeneous composition's, whose tilts all aimed above the pair's
    /// last atoms; with tilts at its Chernoff quantiles too, see
    /// [`crate::pmf::grid_pmf::GridPmf::compose_tilted`], that query meets its tolerance on
    /// its first grid and takes no retry.)
    ///
    /// An unknown (NaN) charge is never judged futile, nor one too small on the first grid
    /// to say what held the pass back: Poisson-sampled Laplace noise whose losses lie within
    /// ±4.3e-6 nats, 158,384 runs, δ 1e-5, charged 1.6e-3 target widths on the first grid
    /// (0.9e-3 tilted); the untilted pass stalled for round-off at 1.1e-6 nats, and the
    /// tilted retry met the tolerance a grid finer, [0.0035211, 0.0035214], where stopping
    /// it on its first grid left [0.003058, 0.003530]. A cost rule only: every grid's
    /// bracket is guaranteed.
    fn futile(&self, this: &FirstGrid) -> bool {
        self.charge_matters
            && self.step == this.step
            && self.tail_mass == this.tail_mass
            && this.roundoff_mass >= RETRY_SHRINK * self.roundoff_mass
    }
}

/// The grid's lower end at or above which an upper end past the loss range is put down to
/// the answer lying there (`stopped_by` "loss range"); below it, to the mass the grid's
/// upper bound charged to +∞ loss ("mass at infinite loss"). A lower end whose answer lies
/// past the range stops within a few nats of [`LOSS_LIMIT`].
const PAST_THE_RANGE_LOWER: f64 = 0.9 * LOSS_LIMIT;

/// Whether the grid could not answer an ε(δ) query for lack of range: its bracket misses the
/// tolerance with an upper end past the loss range ([`LOSS_LIMIT`], or infinite), the
/// composed loss lying beyond what the grid holds. Judged on the grid's own bracket, before a
/// closed form replaces its upper end (a finite closed form can still be far looser than
/// RDP). Only there is the RDP conversion taken for
/// a composition without guarantee events: elsewhere the grid's upper end is the tighter, and
/// the divergences there are large, far from the tiny ones (σ of 1e8) whose RDP curves lose
/// their last digits to cancellation.
fn past_the_range(epsilon: &Bracket, settings: &Settings) -> bool {
    !settings.tolerance_met && epsilon.upper > LOSS_LIMIT
}

/// [`past_the_range`] for a δ(ε) query: the grid's bracket misses the tolerance with an
/// upper end of at least ½ over a lower end of at most half of it (the mass the grid cannot
/// place counted at +∞). With `cheap_rdp` (a composition of few events), any upper end at
/// least twice the lower end counts too: round-off the grid could not place, folded onto
/// +∞, can hold δ's upper end at a floor (random allocation of 1 < k < t steps beside
/// Poisson-sampled steps: 1.1e-12 at every ε from 8 to 20, where RDP's δ at ε 13.6 is
/// 1e-13). RDP's divergences are rounded upwards, so its conversion stays an upper bound
/// however small they are; only its cost (about 2 ms per event) keeps it off for many.
fn past_the_range_delta(delta: &Bracket, settings: &Settings, cheap_rdp: bool) -> bool {
    !settings.tolerance_met && (delta.upper >= 0.5 || cheap_rdp) && delta.lower <= 0.5 * delta.upper
}

/// Intersect a query's bracket with another pass's (both guaranteed, so their intersection
/// is too), keeping the settings of the narrower pass; the width and tolerance follow.
fn intersect_passes(
    (bracket, settings): (&mut Bracket, &mut Settings),
    (other, other_settings): (Bracket, &Settings),
    target: impl Fn(&Bracket) -> f64,
) {
    let merged = Bracket {
        upper: bracket.upper.min(other.upper),
        lower: bracket.lower.max(other.lower),
    };
    if other.width() < bracket.width() {
        *settings = other_settings.clone();
    }
    settings.bracket_width = merged.width();
    settings.target_width = target(&merged);
    // (An open bracket meets no tolerance, though its target is ∞ too.)
    settings.tolerance_met = merged.width().is_finite() && merged.width() <= settings.target_width;
    *bracket = merged;
}

/// `lower_method` of a lower end from the exponential mechanism over two outputs
/// (randomized response at ε/2), composed exactly (see [`Plan::exponential_lower_pair`]).
const TWO_OUTPUTS: &str = "two_output_exponential";

/// Replace a bracket's upper end by `closed_form` (the composition's upper bound in closed
/// form, see [`Plan::upper_gaussian_mu`]) when it is smaller: both are upper bounds. The
/// settings record it and their width and tolerance follow.
fn take_closed_form_upper(
    bracket: &mut Bracket,
    settings: &mut Settings,
    closed_form: f64,
    target: impl Fn(&Bracket) -> f64,
    method: &'static str,
) {
    if closed_form < bracket.upper {
        bracket.upper = closed_form.max(bracket.lower);
        settings.upper_method = Some(method.into());
        settings.bracket_width = bracket.width();
        settings.target_width = target(bracket);
        settings.tolerance_met =
            bracket.width().is_finite() && bracket.width() <= settings.target_width;
    }
}

/// Intersect the bracket with a closed-form bracket whose ends are both valid, recording
/// which end it improved.
fn take_closed_form_bracket(
    bracket: &mut Bracket,
    settings: &mut Settings,
    closed_form: Bracket,
    target: impl Fn(&Bracket) -> f64,
    method: &'static str,
) {
    if closed_form.lower > bracket.lower && closed_form.lower <= bracket.upper {
        bracket.lower = closed_form.lower;
        settings.lower_method = Some(method.into());
    }
    take_closed_form_upper(bracket, settings, closed_form.upper, &target, method);
    settings.bracket_width = bracket.width();
    settings.target_width = target(bracket);
    settings.tolerance_met =
        bracket.width().is_finite() && bracket.width() <= settings.target_width;
}

/// [`take_closed_form_bracket`] for the epochs' sum-statistic lower end alone (their upper
/// end is taken under its own method's name).
fn take_closed_form_lower(
    bracket: &mut Bracket,
    settings: &mut Settings,
    lower: f64,
    target: impl Fn(&Bracket) -> f64,
) {
    let closed_form = Bracket {
        upper: f64::INFINITY,
        lower,
    };
    take_closed_form_bracket(bracket, settings, closed_form, target, "sum_statistic");
}

/// Grid settings of one evaluation.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Grid {
    step: f64,
    tail_mass: f64,
    tilts: usize,
    /// δ each single event's discretization may add by merging its tail bins (see
    /// [`Plan::merge_budget`]); 0 for none.
    merge_budget: f64,
    /// A retry's tail-accuracy measures, when round-off keeps a tilted bracket from its
    /// tolerance: tilted self-compositions also reach beyond the window's saddle point (see
    /// [`GridPmf::self_compose_tilted_reaching`]), and random allocation with 1 < k < t
    /// composes its split blocks tilted (see [`Component::tilts_when_reaching`]).
    reaching: bool,
}

/// Most discretizations of costly events an accountant without a cache keeps (see
/// [`Accountant::group_single`]): both bounds of a few events on the grid being evaluated.
const COSTLY_SINGLES: usize = 8;

/// Coarsest grid step (nats) of the coarser lower grids: of [`Accountant::pld`]'s chain 2h,
/// 4h, … (see [`coarser_steps`]), and of the grids 16h and 2h that a query at a fixed grid
/// step h reads (see [`lower_end_steps`]).
const COARSEST_CHAIN_STEP: f64 = 1.0;

/// The grid steps 2h, 4h, … ≤ [`COARSEST_CHAIN_STEP`] of [`Accountant::pld`]'s coarser lower
/// PLDs. The steps for h/2 are h and those for h, so halving the grid step never loosens
/// the lower end of a bracket read from them (exact: doubling a float is exact).
fn coarser_steps(step: f64) -> Vec<f64> {
    std::iter::successors(Some(2.0 * step), |s| Some(2.0 * s))
        .take_while(|&s| s <= COARSEST_CHAIN_STEP)
        .collect()
}

/// The coarser grid steps whose lower bounds an ε or δ query at a fixed grid step h reads
/// (those at most [`COARSEST_CHAIN_STEP`], coarsest first): 16h, whose lower bound also aims
/// a single event's tilted upper power (see [`Accountant::remove_upper_single_event`]; for
/// such plans it is computed only where that tilt is predicted, see
/// [`Accountant::tilt_predicted`]) and stands in for 2h when that grid fails, and 2h, whose
/// second-order lower rounding is within a quarter of h's own error. Only these two: on
/// DP-SGD σ 1, q 0.01, 10³ steps at h = 1e-4, the grids 4h and 8h gave lower ends 1.828153
/// and 1.827996 against 2h's 1.828220 (upper end 1.828244), and all of 2h, 4h, … ≤ 1 nat
/// cost 40% more time.
/// (Unlike [`coarser_steps`], halving h may loosen such a lower end, by a fraction of its
/// O(h²) error: second-order roundings on different grids are not nested.)
fn lower_end_steps(step: f64) -> Vec<f64> {
    [16.0 * step, 2.0 * step]
        .into_iter()
        .filter(|&s| s <= COARSEST_CHAIN_STEP)
        .collect()
}

/// Most composed grid points of the finer grid of [`AccountantOptions::upper_grid_step`]
/// (predicted from the grid that met the tolerance): 2¹⁹, 4 MiB per PMF. The four DP-SGD
/// benchmarks need up to 405,000 at 1e-4 nats (σ 0.8, q 0.004, 10⁵ steps).
const FINE_UPPER_POINTS: f64 = (1u64 << 19) as f64;
/// [`FINE_UPPER_POINTS`] for plans whose grid steps are aligned to a very sharp unsampled
/// bulk (`Plan::sharp_unsampled_bulk`, below [`FINE_UPPER_SHARP_SPREAD`]): 2²¹. Their
/// lower end, once landed, meets the tolerance on grids far coarser than it did (σ 0.3,
/// q 1e-3, 10⁴ steps: a step of 6.3e-4 instead of 5e-5 that missed it), and the finer upper
/// grid then spends part of the time saved: the upper end 41.500205 became 41.499593
/// (dp_accounting 0.6.0 at 1e-4: 41.499582), in 0.04 s instead of 0.01 s (0.27 s before
/// the alignment). Applied to every plan, this limit cost up to 16 times the query (σ 1.03,
/// q 0.48, 158 steps, δ 1e-8: 5.7 ms to 94 ms).
const FINE_UPPER_POINTS_SHARP_BULK: f64 = (1u64 << 21) as f64;
/// Spread of the unsampled bulk, in steps of the grid that met the tolerance, below which
/// [`FINE_UPPER_POINTS_SHARP_BULK`] applies: where the bulk is that sharp, unaligned grids
/// had to be far finer than the tolerance's. Less sharp bulks were cheap before too (σ 0.43,
/// q 0.09, 214 steps: 3.5 ms; with the larger limit 34 ms for an upper end 3e-5 lower).
const FINE_UPPER_SHARP_SPREAD: f64 = 0.1;
/// Most points of that grid times the number of distinct single PMFs multiplied there: the
/// transforms' work (a thousand distinct events keep their tolerance's grid).
const FINE_UPPER_WORK: f64 = (1u64 << 21) as f64;

/// Most distinct single PMFs of a plan whose finer upper grid is computed from the start,
/// beside the first grid (see [`Accountant::fine_first_steps`]): the probe that predicts
/// its cost composes them all.
const FINE_FIRST_FACTORS: usize = 4;

/// The probe's task bytes, in units of which the memory of the finer upper grid and of the
/// first grid beside it is charged (see [`Accountant::fine_first_steps`]): the finer task,
/// plus a first-grid task of at most half its size.
const BESIDE_FINER_TASKS: f64 = 1.5;

/// How much coarser than the first grid the probe predicting the finer upper grid's cost
/// is (see [`Accountant::fine_first_steps`]).
const PROBE_COARSENING: f64 = 4.0;

/// The widest probe bracket, relative to its upper end, that predicts the first grid when
/// the finer upper grid is computed from the start (see [`Accountant::fine_first_steps`]).
const PROBE_MAX_WIDTH: f64 = 0.5;

/// The share of the tolerance the first grid is chosen for when the finer upper grid is
/// computed from the start (see [`Accountant::fine_first_steps`]). The whole of it: the
/// probe's bracket includes its upper end's error, which the finer grid's upper bound
/// removes, and the width falls a little faster than the step squared, so the grid chosen
/// comes out finer than needed (widths 0.1 to 0.45 of the tolerance on the DP-SGD
/// benchmarks) rather than coarser.
const FIRST_GRID_AIM: f64 = 1.0;

/// How much coarser than the evaluated grid ADD's upper bound is first computed to check
/// whether ADD can matter (see `Accountant::evaluate`). On DP-SGD the ADD direction's ε is
/// below REMOVE's by 0.1–0.6 nats (σ 1, q 0.01, 10⁴ steps, δ 1e-5: 5.61 against 6.19), far
/// more than the grid 16h adds to it (its rounding error is about 256 times that of the
/// grid h, 3e-5 nats there).
const ADD_CHECK_COARSENING: f64 = 16.0;

/// How many times the first grid may be coarsened (×4 each) when it is too large.
const MAX_COARSENINGS: u32 = 6;

/// Most atoms of an exactly composed pair with a few atoms (see
/// [`LossAtoms::power`]); beyond it the pair is rounded onto the grid and composed there.
const MAX_EXACT_ATOMS: usize = 1 << 16;

/// Fewest runs of an event whose lower bound composes them in groups (see
/// `LossAtoms::lower_power_by_squaring`). The group's loss range is that many times a run's,
/// which lengthens the transforms of short compositions: σ 0.884, q 1.75e-4, 17 runs beside
/// a sampled Gaussian, δ 1e-12, took 2.7 times as long for a bracket already met without
/// groups; the first-order error the groups remove grows with the runs (every sampled
/// discrete Gaussian of 60 random ones that missed the tolerance without them had 100 runs
/// or more).
const MIN_GROUPED_RUNS: u64 = 64;

/// Most atom pairs one squaring of a lower bound's group of runs forms (see
/// `LossAtoms::lower_power_by_squaring`): 1,023 atoms squared (a few milliseconds, 12 MiB).
const MAX_SQUARING_PRODUCTS: usize = 1 << 19;

/// … and for events of at least [`MANY_RUNS`] runs, whose per-run error the groups multiply
/// the most: 2,047 atoms squared (about 0.1 s, 48 MiB), which takes a discrete Gaussian of
/// σ ≈ 2.6 (55 atoms) to groups of four runs instead of two.
const MAX_SQUARING_PRODUCTS_MANY_RUNS: usize = 1 << 21;

/// See [`MAX_SQUARING_PRODUCTS_MANY_RUNS`].
const MANY_RUNS: u64 = 1000;

/// Most points of single-event PMFs held at once by one composition: past it, the events so
/// far are multiplied into one PMF (see `Accountant::composed`). 4M points, 32 MiB.
const PRODUCT_CHUNK_POINTS: usize = 1 << 22;

/// Grid refinement stops before a composed grid would hold more points than this, unless
/// the bracket is within [`NEAR_TOLERANCE`] of its target width.
const MAX_REFINED_POINTS: usize = 1 << 21;

/// The composed-grid limit of a refinement whose bracket is within [`NEAR_TOLERANCE`] of its
/// target width: twice [`MAX_REFINED_POINTS`], still half the composition's hard limit
/// ([`crate::pmf::composition::MAX_COMPOSED_POINTS`]: a padded transform may double the
/// length). δ(ε) queries on Poisson-sampled discrete Gaussians, whose lower ends converge
/// about like the step (not its square), stopped at 1.1–1.8 target widths with "grid size
/// limit" (σ 1, q 0.01, 1000 runs, δ(1.82825): [9.997391e-6, 9.999211e-6]); the larger
/// grid meets it. Brackets farther from the tolerance keep the smaller limit: there one more
/// doubling cannot meet it and would only double the time (σ 10⁴, q 10⁻³, 10⁹ steps went
/// from 1.0 s to 2.8 s, still [0, 0.0175]).
const MAX_REFINED_POINTS_NEAR: usize = 1 << 22;

/// How near its target width a bracket must be for [`MAX_REFINED_POINTS_NEAR`]: a step half
/// as fine narrows a bracket converging like h² fourfold.
const NEAR_TOLERANCE: f64 = 4.0;

/// How much coarser than the finest step that fits (memory, grid size) a refinement limited
/// by them takes its step: a margin for the sizes growing a little faster than 1/step.
const FITTING_MARGIN: f64 = 1.01;

/// The δ a δ(ε) query's merge budget is set for while its bracket's lower end is still 0,
/// relative to the upper end (see [`TailMerging::FromLowerDelta`]): merging then costs the
/// tolerance only if δ is below a thousandth of that upper end, and the next grid, whose
/// lower end is usually above 0, sets the budget from it instead.
const UNRESOLVED_DELTA_SHARE: f64 = 1e-3;

/// How the grids of a refinement merge the far tails of each event (see
/// [`Plan::merge_budget`]).
#[derive(Debug, Clone, Copy)]
enum TailMerging {
    /// Every grid with this budget (ε(δ) queries: [`Plan::merge_budget`] at the δ asked).
    Fixed(f64),
    /// δ(ε) queries, whose answer is not known in advance: the first grid merges nothing.
    /// From the first refinement that the unmerged ranges would stop or hold back on, each
    /// grid merges with the budget of an ε(δ) query at the lower end of the bracket so far
    /// (so merging moves δ by at most `TAIL_MERGE_SHARE` of that lower end, a tenth of the
    /// default tolerance), or at [`UNRESOLVED_DELTA_SHARE`] of its upper end while the lower
    /// end is 0. Without it the finer grids a small sampling rate needs were refused for
    /// the width of the unmerged ranges (σ 1, q 1e-5, 10⁶ steps, δ(0.0369): [7.0e-6,
    /// 1.6e-5], grid size limit).
    FromLowerDelta,
}

impl TailMerging {
    /// The budget of a grid merging its tails, given the bracket so far (a δ query's first
    /// grid: `None`, no merging).
    fn budget(self, plan: &Plan, best: Option<Bracket>) -> f64 {
        match self {
            TailMerging::Fixed(budget) => budget,
            TailMerging::FromLowerDelta => match best {
                Some(b) if b.lower > 0.0 && b.lower.is_finite() => plan.merge_budget(b.lower),
                Some(b) if b.upper > 0.0 && b.upper.is_finite() => {
                    plan.merge_budget(UNRESOLVED_DELTA_SHARE * b.upper)
                }
                _ => 0.0,
            },
        }
    }
}

/// The tail mass a grid's loss ranges are judged at: its own where its far tails are merged
/// (a merge budget), none otherwise (see `Component::loss_range`).
fn range_tail(tail_mass: f64, merge_budget: f64) -> Option<f64> {
    (merge_budget > 0.0).then_some(tail_mass)
}

/// The finer upper grid computed from the start (see [`Accountant::fine_first_steps`]).
struct FineFirst {
    /// Its step.
    fine_step: f64,
    /// The step of the first grid, evaluated beside it.
    first_step: f64,
    /// `(from, aim)`: the query reads the PMF at losses from `from` up (what a tilted power
    /// must get right, see [`Accountant::remove_upper_single_event`]), most likely near `aim`;
    /// from the probe's guaranteed bracket on REMOVE's answer.
    read_from: (f64, f64),
}

/// Where an ε(δ) query reads a PMF (see `Accountant::refine`).
#[derive(Clone, Copy)]
struct ReadFrom<'a> {
    /// `(from, aim)` given a guaranteed bracket on the answer: the losses from `from` up,
    /// most likely near `aim`.
    range: &'a (dyn Fn(&Bracket) -> (f64, f64) + Sync),
    /// The δ of an ε(δ) query, from which its answer is estimated before any bracket is
    /// known (see [`Accountant::tilt_predicted`]); `None` for δ(ε) queries.
    delta: Option<f64>,
}

/// The result of one evaluation at one grid.
struct Evaluation {
    bracket: Bracket,
    worse_direction: &'static str,
    /// Largest number of grid points among the composed PMFs.
    points: usize,
    /// Largest δ the numerical allowances of a composed PMF on the evaluated grid charge
    /// where the answer was read ([`GridPmf::charged_at`]): round-off of the entries that
    /// count, folded entries, and a lower PMF's aliasing excess.
    roundoff_mass: f64,
    /// Estimated peak bytes: the [`CONCURRENT_TASKS`] largest task estimates, as if they had
    /// all run at once.
    bytes: f64,
    /// The smallest guaranteed upper bound on ADD's answer known after this evaluation (its
    /// coarse check, or the one passed in), for asymmetric plans.
    add_upper: Option<f64>,
}

/// Which ends of the bracket an evaluation computes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ends {
    /// Both, in every direction that can change them.
    Both,
    /// The upper end alone (the lower end is −∞).
    Upper,
    /// Beside REMOVE's upper bound on a finer grid (see [`Accountant::fine_first_steps`]):
    /// REMOVE's lower end, and ADD's upper bound on a grid of step `add_check_step` (the
    /// check the finer grid would run). When that bound is at most REMOVE's lower end, ADD
    /// cannot be the worse direction: the bracket's upper end is left at +∞ for the finer
    /// grid's bound, and `add_upper` holds ADD's. Otherwise the evaluation is done in full
    /// ([`Ends::Both`]).
    BesideFiner { add_check_step: f64 },
}

/// The upper end of a bracket computed on its own (see [`Accountant::upper_only`]).
#[derive(Debug, Clone, Copy, PartialEq)]
struct UpperEnd {
    upper: f64,
    step: f64,
    worse_direction: &'static str,
}

impl UpperEnd {
    /// REMOVE's upper bound (`self`, from [`Accountant::remove_upper_only`]) joined with a
    /// guaranteed upper bound on ADD's answer, when the plan is asymmetric: the larger of the
    /// two bounds the worse direction's answer.
    fn with_add(self, add_upper: Option<f64>) -> UpperEnd {
        match add_upper {
            Some(add) if add > self.upper => UpperEnd {
                upper: add,
                worse_direction: "add",
                ..self
            },
            _ => self,
        }
    }
}

/// Tasks counted as running at once in a memory estimate: the most threads an evaluation
/// uses on any machine, so that the estimate (and an answer cut short by the memory budget)
/// does not depend on the machine's core count.
const CONCURRENT_TASKS: usize = parallel::MAX_THREADS;

/// The runs per exact chunk of a group of `count` runs, at most `largest`: the largest divisor
/// of `count` down to `largest / 2`, so that the chunks are one self-composition, else
/// `largest` (the runs left over are then a second exact part, in one FFT product with the
/// chunks). The self-composition keeps the far tail: 4-ary randomized response sampled at
/// 0.1, run 1000 times (4 chunks of 250), at δ 1e-200: [21.446, 21.467]; run 1001 times
/// (360, 360 and 281), the product stops narrowing at [20.16, 22.02].
fn chunk_dividing(count: u64, largest: u64) -> u64 {
    (largest.div_ceil(2)..=largest)
        .rev()
        .find(|&runs| count.is_multiple_of(runs))
        .unwrap_or(largest)
}

/// Estimated peak bytes of computing one composed PMF: the parts it composes (with their
/// per-entry errors) twice over (the parts and the next level of the composition tree); the
/// FFT buffers of the largest transform, about six vectors as long as the longest PMF
/// (input, spectrum, scratch, output, per-entry errors), and eight more per tilted copy
/// (its own transform and its error convolutions); and one event's discretization (about
/// eight vectors: CDFs, excesses, edges, both directions). Checked against the peak
/// resident memory of the CLI (`pld -v` prints it), which it exceeds by 1.5–4×.
fn task_bytes(parts_points: usize, longest: usize, tilts: usize) -> f64 {
    let (parts, longest) = (parts_points as f64, longest as f64);
    8.0 * (2.0 * parts + (6 + 8 * tilts) as f64 * longest + 8.0 * longest)
}

/// The sum of the [`CONCURRENT_TASKS`] largest estimates.
fn peak_bytes(tasks: &std::sync::Mutex<Vec<f64>>) -> f64 {
    let mut bytes = tasks
        .lock()
        .map_or_else(|_| vec![f64::INFINITY], |b| b.clone());
    bytes.sort_by(|a, b| b.total_cmp(a));
    bytes.iter().take(CONCURRENT_TASKS).sum()
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
    /// Discretizations kept between accountants (a [`Ledger`]'s); `None` computes afresh.
    cache: Option<Arc<PldCache>>,
    /// Without `cache`: the last few discretizations of events that cost far more to
    /// discretize than to hold (see [`Component::costly_to_discretize`]), which a query
    /// otherwise builds again for each direction and each round of an evaluation.
    costly_singles: Arc<PldCache>,
    /// First grid step of the refinement instead of [`Plan::initial_step`] (a [`Ledger`]
    /// starts from the step its previous query ended at).
    start_step: Option<f64>,
    /// The lower bound's groups of runs of events whose atoms lie off the grid's lattice
    /// (see [`Accountant::lower_group`]), kept for every grid of the accountant's queries.
    lower_groups: Arc<std::sync::Mutex<Vec<LowerGroup>>>,
    /// Random allocation epochs' laws on their lattices, kept for every grid of the
    /// accountant's queries: a lattice capped by its size limit is the same on successive
    /// grids of a refinement, and its t-fold power, most of an epoch's cost, is computed
    /// once (see [`crate::discretize::random_allocation::epoch_pld_kept`]).
    epoch_laws: Arc<EpochLaws<Gaussian>>,
}

/// An event's runs composed exactly in a group for the lower bound (see
/// `LossAtoms::lower_power_by_squaring`): they depend on the event, its count and the
/// truncation mass, not on the grid.
#[derive(Debug)]
struct LowerGroup {
    component: Component,
    count: u64,
    tail_mass: f64,
    /// The group's atoms and runs; `None` when the event has none.
    grouped: Option<Arc<(LossAtoms, u64)>>,
}

/// Most [`LowerGroup`]s an accountant keeps (the oldest goes first).
const KEPT_LOWER_GROUPS: usize = 8;

impl Accountant {
    /// An accountant for `spec`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for a tolerance that is not a finite number ≥ 0, a grid step
    /// outside [[`MIN_GRID_STEP`], 1] nats or a truncation mass outside (0, 1e-3).
    pub fn new(spec: &CompositionSpec, options: AccountantOptions) -> Result<Self> {
        // Started here, the evaluation threads are settled by the time a query needs them.
        parallel::warm_up();
        heap_priming::prime_heap();
        check_options(&options)?;
        Ok(Accountant {
            plan: Plan::from_spec(spec)?,
            options,
            cache: None,
            costly_singles: Arc::new(PldCache::keeping(COSTLY_SINGLES)),
            start_step: None,
            lower_groups: Arc::default(),
            epoch_laws: Arc::new(EpochLaws::within(options.memory_budget_bytes())),
        })
    }

    /// The same accountant, keeping discretizations and self-compositions in `cache` (an
    /// entry is keyed by everything that determines it, so answers are unchanged).
    fn with_cache(mut self, cache: Arc<PldCache>, start_step: Option<f64>) -> Self {
        self.cache = Some(cache);
        self.start_step = start_step;
        self
    }

    /// The RDP accountant's upper bound on ε(δ) for the whole composition (no grid: about a
    /// millisecond); `None` when some event has no RDP curve or the bound is not finite.
    ///
    /// # Guarantee
    /// Upper bound (the RDP conversion of [`crate::analytic::rdp`]).
    pub(crate) fn rdp_epsilon_upper(&self, delta: f64) -> Option<f64> {
        self.plan
            .rdp_fallback()
            .map(|curve| curve.epsilon(delta).epsilon)
            .filter(|epsilon| epsilon.is_finite())
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
        // The mass at infinite loss alone exceeds δ: no finite ε, and no grid needed.
        let floor = self.plan.infinite_loss;
        if floor.remove > delta || floor.add > delta {
            let epsilon = Bracket {
                upper: f64::INFINITY,
                lower: f64::INFINITY,
            };
            let mut settings =
                self.closed_form_settings(epsilon, f64::INFINITY, Some("infinite_loss"));
            settings.lower_method = Some("infinite_loss".into());
            settings.worse_direction = match (floor.remove > delta, floor.add > delta) {
                (true, true) => "both",
                (true, false) => "remove",
                _ => "add",
            }
            .into();
            return Ok(EpsilonAnswer {
                delta,
                epsilon,
                settings,
            });
        }
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
        // Epochs whose closed forms the grid cannot add to: the sum statistic alone puts
        // ε(δ) above LOSS_LIMIT (every grid reads the upper end as ∞ there), or the closed
        // forms already meet the tolerance.
        let epochs = self.epochs_closed_form(
            |mu| analytic_gaussian::epsilon_lower_for_delta(mu, delta, f64::INFINITY),
            |mu| analytic_gaussian::epsilon_upper_for_delta(mu, delta),
            |curve| curve.epsilon(delta).epsilon,
            f64::INFINITY,
        );
        if let Some((epsilon, upper_method)) = epochs {
            let wanted = target(&epsilon);
            // (An open upper end meets no tolerance: its target is ∞ too.)
            let met = epsilon.upper.is_finite() && epsilon.width() <= wanted;
            if epsilon.lower > LOSS_LIMIT || met {
                return Ok(EpsilonAnswer {
                    delta,
                    epsilon,
                    settings: self.closed_form_settings(epsilon, wanted, upper_method),
                });
            }
        }
        let tail_mass = self
            .options
            .tail_mass
            .unwrap_or((TRUNCATION_SHARE * delta).clamp(MIN_TAIL_MASS, DEFAULT_TAIL_MASS));
        let tilts = if delta < TILT_BELOW_DELTA {
            TAIL_TILTS
        } else {
            0
        };
        let merge_budget = self.plan.merge_budget(delta);
        let query = |pmf: &GridPmf| pmf.epsilon_for_delta(delta);
        // The allowances charged where the answer was read.
        let charged = |pmf: &GridPmf, epsilon: f64| pmf.charged_at(epsilon);
        let round_off_limits =
            |roundoff_mass: f64, target_width: f64| roundoff_mass / (delta * target_width);
        // ε(δ) reads the losses above the answer, which is at least a guaranteed lower end.
        let range = |b: &Bracket| (b.lower, 0.5 * (b.lower + b.upper));
        let read_from = ReadFrom {
            range: &range,
            delta: Some(delta),
        };
        let run = |(pass_tilts, reaching): (usize, bool), retry_of: Option<FirstGrid>| {
            // Only the first pass may be followed by another (see `retry` below).
            let first = (pass_tilts, reaching) == (tilts, false);
            self.refine(
                tail_mass,
                (pass_tilts, reaching, first),
                retry_of,
                TailMerging::Fixed(merge_budget),
                query,
                charged,
                target,
                round_off_limits,
                read_from,
            )
        };
        let (mut epsilon, mut settings, roundoff_mass, first_grid) = match run((tilts, false), None)
        {
            Err(error @ Error::GridTooLarge { .. }) => {
                return self.epsilon_without_grid(delta, target, epochs, error);
            }
            first => first?,
        };
        // (An upper end lost, every ε's δ above the one asked, with a round-off charge of at
        // least a tenth of δ: round-off may be what lost it. Its target width is ∞, which
        // no charge reaches.)
        let lost_to_round_off =
            epsilon.upper == f64::INFINITY && roundoff_may_matter(roundoff_mass, delta);
        let held_back_by_round_off = !settings.tolerance_met
            && (roundoff_may_matter(roundoff_mass, delta * settings.target_width)
                || lost_to_round_off
                || settings.stopped_by.as_deref() == Some("round-off"))
            && retry_may_meet(
                roundoff_mass,
                delta * settings.bracket_width,
                delta * settings.target_width,
                settings.stopped_by.as_deref(),
            );
        // When round-off rather than the grid keeps the bracket wide, one more evaluation:
        // untilted, with tilted powers (counts of 1e8 and more multiply the transforms' error
        // by k, which they bound far tighter); tilted, with tilts beyond the window's saddle
        // point (where one step's far tail dominates the sum's extremes, sampled Gaussians at
        // small rates, the answer's losses need them). The retry starts afresh from the first
        // grid. Started on the grid where the pass before it stopped, it was measured on 464
        // DP-SGD queries (δ 1e-5 to 1e-15): the two untilted retries among them took 0.82×
        // as long, but tilted ones took up to 2.2× as long, one with a looser upper end (σ 1,
        // q 1e-3, 100 steps, δ 1e-15: 1.285750 against 1.285648).
        let retry = match tilts {
            _ if !held_back_by_round_off => None,
            0 => Some((ROUND_OFF_TILTS, false)),
            _ if self.reaching_may_help() => Some((tilts, true)),
            _ => None,
        };
        // (A retry that does not halve the charge on its first grid stops there: see
        // `FirstGrid::futile`.)
        let again = retry.map(|pass| run(pass, Some(first_grid)));
        if let Some(Ok((again, again_settings, _, _))) = again {
            intersect_passes(
                (&mut epsilon, &mut settings),
                (again, &again_settings),
                target,
            );
        }
        // Judged on the grid's own bracket: a closed-form upper end taken below may be finite
        // and still far looser than the RDP conversion (a Poisson-sampled Gaussian beside
        // random allocation of 1 < k < t steps at δ 1e-12: the Gaussian without amplification
        // of every step gave 272.9, RDP 13.0).
        let grid_past_the_range = past_the_range(&epsilon, &settings);
        let grid_lower = epsilon.lower;
        // RDP: always beside guarantee events, otherwise only where the answer lies past the
        // grid's range (see `past_the_range`).
        let rdp = self.plan.mixed_rdp.is_some() || grid_past_the_range;
        self.cap_epsilon_by_closed_forms(delta, (&mut epsilon, &mut settings), target, rdp);
        if let Some((closed_form, _)) = epochs {
            // Its upper end was taken above, under its own method's name.
            take_closed_form_lower(&mut epsilon, &mut settings, closed_form.lower, target);
        }
        // Say why when the grid's upper end lies past what it holds. Either the answer does:
        // the grid's lower end stops near the top of the loss range whatever the grid, and no
        // finer grid would help ("loss range"). Or the grid's lower end lies far below it,
        // and what the upper bound charged to +∞ loss (mass it could not place) exceeds δ:
        // one epoch of random allocation, σ 0.696 over 4 steps, δ 1e-5, whose lattice puts
        // `Q(S′ = 0)` at ADD's +∞ (see `discretize::random_allocation`), was bracketed in
        // [5.315466, 6.698060] and said "ε lies past the grid's 600 nats".
        if grid_past_the_range && !settings.tolerance_met && settings.stopped_by.is_none() {
            settings.stopped_by = Some(if grid_lower < PAST_THE_RANGE_LOWER {
                "mass at infinite loss".into()
            } else {
                "loss range".into()
            });
        }
        Ok(EpsilonAnswer {
            delta,
            epsilon,
            settings,
        })
    }

    /// ε at `delta` when even the first grid exceeds the size limits (`error`): the closed
    /// forms' bracket ([`Accountant::cap_epsilon_by_closed_forms`], RDP included; the lower
    /// end that of the epochs' sum statistic, else 0; both ends the optimal composition's when
    /// every run is the same `eps_delta` pair), stopped by "grid size limit", or
    /// `error` itself when no closed form bounds the composition. 10¹² runs of an (ε₀ 1e-9,
    /// δ₀ 1e-20) pair were refused ("grid too large: 16842004 points needed"), where the
    /// zCDP conversion gives 0.0023 at δ 1e-5.
    fn epsilon_without_grid(
        &self,
        delta: f64,
        target: impl Fn(&Bracket) -> f64 + Copy,
        epochs: Option<(Bracket, Option<&'static str>)>,
        error: Error,
    ) -> Result<EpsilonAnswer> {
        let mut epsilon = Bracket {
            upper: f64::INFINITY,
            lower: 0.0,
        };
        let mut settings = Settings::analytic(self.options.tolerance, epsilon, f64::INFINITY);
        settings.method = "closed_form".into();
        self.cap_epsilon_by_closed_forms(delta, (&mut epsilon, &mut settings), target, true);
        if let Some((epsilon0, delta0, k)) = self.plan.uniform_eps_delta() {
            use crate::analytic::optimal_composition as optimal;
            let closed_form = Bracket {
                upper: optimal::epsilon_for_delta(epsilon0, delta0, k, delta),
                lower: optimal::epsilon_for_delta_lower(epsilon0, delta0, k, delta),
            };
            take_closed_form_bracket(
                &mut epsilon,
                &mut settings,
                closed_form,
                target,
                "optimal_composition",
            );
        }
        if let Some((closed_form, upper_method)) = epochs {
            if closed_form.upper < epsilon.upper {
                epsilon.upper = closed_form.upper;
                settings.upper_method = upper_method.map(Into::into);
            }
            epsilon.lower = epsilon.lower.max(closed_form.lower).min(epsilon.upper);
            if closed_form.lower > 0.0 {
                settings.lower_method = Some("sum_statistic".into());
            }
        }
        if epsilon.upper == f64::INFINITY {
            return Err(error);
        }
        settings.bracket_width = epsilon.width();
        settings.target_width = target(&epsilon);
        settings.tolerance_met = epsilon.width() <= settings.target_width;
        if !settings.tolerance_met {
            settings.stopped_by = Some("grid size limit".into());
        }
        Ok(EpsilonAnswer {
            delta,
            epsilon,
            settings,
        })
    }

    /// Lower the upper end of `epsilon` (ε at `delta`) to the smallest closed-form upper
    /// bound the composition has, recording its name in `settings.upper_method`: the Gaussian
    /// without amplification, the zCDP conversion, the RDP conversion (when `rdp`), the
    /// optimal composition of k ε₀-DP runs, the composition theorems, and the optimal adaptive
    /// composition of exponential selections (which may raise the lower end too). All are
    /// upper bounds, so the smallest is one.
    fn cap_epsilon_by_closed_forms(
        &self,
        delta: f64,
        (epsilon, settings): (&mut Bracket, &mut Settings),
        target: impl Fn(&Bracket) -> f64 + Copy,
        rdp: bool,
    ) {
        if let Some(mu_hi) = self.plan.upper_gaussian_mu() {
            let closed_form = analytic_gaussian::epsilon_upper_for_delta(mu_hi, delta);
            take_closed_form_upper(epsilon, settings, closed_form, target, "analytic_gaussian");
        }
        if let Some(zcdp) = self.plan.upper_zcdp() {
            let closed_form = zcdp.epsilon(delta);
            take_closed_form_upper(epsilon, settings, closed_form, target, "zcdp_conversion");
        }
        let rdp = rdp.then(|| self.plan.rdp_fallback()).flatten();
        if let Some(curve) = rdp {
            take_closed_form_upper(
                epsilon,
                settings,
                curve.epsilon(delta).epsilon,
                target,
                "rdp_conversion",
            );
        }
        if let Some((epsilon0, k)) = self.plan.upper_pure_dp() {
            take_closed_form_upper(
                epsilon,
                settings,
                crate::analytic::optimal_composition::epsilon_for_delta(epsilon0, 0.0, k, delta),
                target,
                "optimal_composition",
            );
        }
        if let Some(events) = self.plan.approximate_dp_events() {
            for theorem in crate::analytic::composition_theorems::CompositionTheorem::ALL {
                take_closed_form_upper(
                    epsilon,
                    settings,
                    theorem.epsilon(&events, delta),
                    target,
                    theorem.name(),
                );
            }
        }
        if let Some(composition) = self.plan.bounded_range_composition() {
            take_closed_form_bracket(
                epsilon,
                settings,
                composition.epsilon_for_delta(delta),
                target,
                "bounded_range_adaptive",
            );
        } else if let Some((epsilon0, k)) = self.plan.exponential_lower_pair() {
            let lower = crate::analytic::optimal_composition::epsilon_for_delta_lower(
                epsilon0, 0.0, k, delta,
            );
            let closed_form = Bracket {
                upper: f64::INFINITY,
                lower,
            };
            take_closed_form_bracket(epsilon, settings, closed_form, target, TWO_OUTPUTS);
        }
    }

    /// Lower the upper end of `delta` (δ at `epsilon`) to the smallest closed-form upper
    /// bound the composition has (as [`Accountant::cap_epsilon_by_closed_forms`]; of the
    /// composition theorems, basic composition's Σδᵢ once ε ≥ Σεᵢ).
    fn cap_delta_by_closed_forms(
        &self,
        epsilon: f64,
        (delta, settings): (&mut Bracket, &mut Settings),
        target: impl Fn(&Bracket) -> f64 + Copy,
        rdp: bool,
    ) {
        if let Some(mu_hi) = self.plan.upper_gaussian_mu() {
            let closed_form = analytic_gaussian::delta_for_epsilon(mu_hi, epsilon).upper;
            take_closed_form_upper(delta, settings, closed_form, target, "analytic_gaussian");
        }
        if let Some(zcdp) = self.plan.upper_zcdp() {
            let closed_form = zcdp.delta(epsilon);
            take_closed_form_upper(delta, settings, closed_form, target, "zcdp_conversion");
        }
        let rdp = rdp.then(|| self.plan.rdp_fallback()).flatten();
        if let Some(curve) = rdp {
            take_closed_form_upper(
                delta,
                settings,
                curve.delta(epsilon).delta,
                target,
                "rdp_conversion",
            );
        }
        if let Some((epsilon0, k)) = self.plan.upper_pure_dp() {
            take_closed_form_upper(
                delta,
                settings,
                crate::analytic::optimal_composition::delta_for_epsilon(epsilon0, 0.0, k, epsilon),
                target,
                "optimal_composition",
            );
        }
        if let Some(events) = self.plan.approximate_dp_events() {
            take_closed_form_upper(
                delta,
                settings,
                crate::analytic::composition_theorems::CompositionTheorem::basic_delta(
                    &events, epsilon,
                ),
                target,
                crate::analytic::composition_theorems::CompositionTheorem::Basic.name(),
            );
        }
        if let Some(composition) = self.plan.bounded_range_composition() {
            take_closed_form_bracket(
                delta,
                settings,
                composition.delta(epsilon),
                target,
                "bounded_range_adaptive",
            );
        } else if let Some((epsilon0, k)) = self.plan.exponential_lower_pair() {
            let closed_form = Bracket {
                upper: 1.0,
                lower: crate::analytic::optimal_composition::delta_for_epsilon_lower(
                    epsilon0, 0.0, k, epsilon,
                ),
            };
            take_closed_form_bracket(delta, settings, closed_form, target, TWO_OUTPUTS);
        }
    }

    /// δ at `epsilon` when even the first grid exceeds the size limits (`error`), as
    /// [`Accountant::epsilon_without_grid`]: the closed forms' bracket (its lower end at least
    /// the mass at infinite loss), or `error` when none bounds δ below 1.
    fn delta_without_grid(
        &self,
        epsilon: f64,
        target: impl Fn(&Bracket) -> f64 + Copy,
        epochs: Option<(Bracket, Option<&'static str>)>,
        error: Error,
    ) -> Result<DeltaAnswer> {
        let mut delta = Bracket {
            upper: 1.0,
            lower: 0.0,
        };
        let mut settings = Settings::analytic(self.options.tolerance, delta, target(&delta));
        settings.method = "closed_form".into();
        self.cap_delta_by_closed_forms(epsilon, (&mut delta, &mut settings), target, true);
        if let Some((epsilon0, delta0, k)) = self.plan.uniform_eps_delta() {
            let closed_form = crate::analytic::optimal_composition::delta_for_epsilon_bracket(
                epsilon0, delta0, k, epsilon,
            );
            take_closed_form_bracket(
                &mut delta,
                &mut settings,
                closed_form,
                target,
                "optimal_composition",
            );
        }
        if let Some((closed_form, upper_method)) = epochs {
            if closed_form.upper < delta.upper {
                delta.upper = closed_form.upper;
                settings.upper_method = upper_method.map(Into::into);
            }
            delta.lower = delta.lower.max(closed_form.lower).min(delta.upper);
            if closed_form.lower > 0.0 {
                settings.lower_method = Some("sum_statistic".into());
            }
        }
        // The mass at infinite loss is δ at every ε, at least (see `infinite_loss`).
        let floor = self.plan.infinite_loss;
        if floor.remove.max(floor.add) > delta.lower {
            delta.lower = floor.remove.max(floor.add).min(delta.upper);
            settings.lower_method = Some("infinite_loss".into());
        }
        if delta.upper >= 1.0 {
            return Err(error);
        }
        settings.bracket_width = delta.width();
        settings.target_width = target(&delta);
        settings.tolerance_met = delta.width() <= settings.target_width;
        if !settings.tolerance_met {
            settings.stopped_by = Some("grid size limit".into());
        }
        Ok(DeltaAnswer {
            epsilon,
            delta,
            settings,
        })
    }

    /// The closed-form bracket of a composition with random-allocation or shuffled epochs
    /// (`None` without them), for one query: lower end `lower(μ)` of the Gaussian of the
    /// epochs' sums ([`Plan::lower_gaussian_mu`]); upper end the smaller of `upper(μ)` for the
    /// Gaussian without amplification ([`Plan::upper_gaussian_mu`]) and `rdp(curve)` for the
    /// RDP conversion of a mix with guarantee events, else `no_upper`; with the name of the
    /// upper end's method (`None` for `no_upper`).
    fn epochs_closed_form(
        &self,
        lower: impl Fn(f64) -> f64,
        upper: impl Fn(f64) -> f64,
        rdp: impl Fn(&crate::analytic::rdp::RdpCurve) -> f64,
        no_upper: f64,
    ) -> Option<(Bracket, Option<&'static str>)> {
        let lower = lower(self.plan.lower_gaussian_mu()?);
        let mut best = (no_upper, None);
        if let Some(mu) = self.plan.upper_gaussian_mu() {
            let value = upper(mu);
            if value < no_upper {
                best = (value, Some("analytic_gaussian"));
            }
        }
        if let Some(curve) = &self.plan.mixed_rdp {
            let value = rdp(curve);
            if value < best.0 {
                best = (value, Some("rdp_conversion"));
            }
        }
        let bracket = Bracket {
            upper: best.0.max(lower),
            lower,
        };
        Some((bracket, best.1))
    }

    /// The answer from [`Accountant::epochs_closed_form`] alone, without a grid (settings
    /// `method: "closed_form"`, `lower_method: "sum_statistic"`).
    fn closed_form_settings(&self, bracket: Bracket, wanted: f64, upper: Option<&str>) -> Settings {
        let mut settings = Settings::analytic(self.options.tolerance, bracket, wanted);
        settings.method = "closed_form".into();
        settings.lower_method = Some("sum_statistic".into());
        settings.upper_method = upper.map(|m| m.to_owned().into());
        settings
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
        // Epochs whose closed forms already meet the tolerance (e.g. δ = 1 up to 1e-15 at
        // huge epoch counts, where the grid took seconds to answer [0, 1]).
        let epochs = self.epochs_closed_form(
            |mu| analytic_gaussian::delta_for_epsilon(mu, epsilon).lower,
            |mu| analytic_gaussian::delta_for_epsilon(mu, epsilon).upper,
            |curve| curve.delta(epsilon).delta,
            1.0,
        );
        if let Some((delta, upper_method)) = epochs {
            let wanted = target(&delta);
            // Past the loss range the grid cannot add either, when every event is Gaussian
            // (no infinite losses): its lower end is 0 there (mass above LOSS_LIMIT is folded
            // down to the top point), and its upper end at least P(L > LOSS_LIMIT) ≥
            // δ(LOSS_LIMIT), itself at least the sum statistic's δ there. When the closed
            // form's upper end exceeds that by at most the tolerance, the grid (seconds at
            // huge epoch counts) could not narrow the bracket by more: 10¹² epochs at σ 0.3
            // took 7 s for δ(5.6e9) ∈ [1.0e-5, 1], the closed forms' bracket.
            let beyond_the_grid = epsilon >= LOSS_LIMIT
                && self.plan.upper_gaussian_mu().is_some()
                && self.plan.lower_gaussian_mu().is_some_and(|mu| {
                    let floor = analytic_gaussian::delta_for_epsilon(mu, LOSS_LIMIT).lower;
                    delta.upper - floor <= wanted
                });
            if delta.width() <= wanted || beyond_the_grid {
                return Ok(DeltaAnswer {
                    epsilon,
                    delta,
                    settings: self.closed_form_settings(delta, wanted, upper_method),
                });
            }
        }
        // δ is not known in advance: start far below any δ worth reporting, so that queries at
        // different ε share the same settings unless δ is tiny.
        let mut tail_mass = self.options.tail_mass.unwrap_or(DELTA_QUERY_TAIL_MASS);
        let mut tilts = 0;
        let mut reaching = false;
        let mut passes = 0;
        // The brackets of the passes so far, intersected, with the settings of the narrowest.
        let mut kept: Option<(Bracket, Settings)> = None;
        // The first grid of the pass before, when this pass retries it for round-off only.
        let mut retry_of: Option<FirstGrid> = None;
        loop {
            passes += 1;
            // δ is unknown: tail bins are merged only once the unmerged ranges would stop a
            // refinement, with the budget of the bracket so far (see `TailMerging`).
            let pass = self.refine(
                tail_mass,
                (tilts, reaching, passes < 4),
                retry_of,
                TailMerging::FromLowerDelta,
                |pmf| pmf.delta_for_epsilon(epsilon),
                |pmf, _| pmf.charged_at(epsilon),
                target,
                |roundoff_mass, target_width| roundoff_mass / target_width,
                // δ(ε) reads the losses above ε.
                ReadFrom {
                    range: &|_| (epsilon, epsilon),
                    delta: None,
                },
            );
            let (mut delta, mut settings, roundoff_mass, first_grid) = match pass {
                Err(error @ Error::GridTooLarge { .. }) if passes == 1 => {
                    return self.delta_without_grid(epsilon, target, epochs, error);
                }
                pass => pass?,
            };
            // Every pass's bracket is guaranteed, so their intersection is too: a pass with
            // tilts or a tilted split (random allocation, 1 < k < t) can be the looser one at
            // this ε (3 epochs of 2-out-of-50 at σ 1.5: δ(2.5) ≤ 1.109e-11 plain, 1.210e-11
            // after the tilted split's pass).
            if let Some((earlier, earlier_settings)) = &kept {
                intersect_passes(
                    (&mut delta, &mut settings),
                    (*earlier, earlier_settings),
                    target,
                );
            }
            kept = Some((delta, settings.clone()));
            // Tiny δ: truncation must be far below it, and the tail computed in relative terms.
            let reference = if delta.lower > 0.0 {
                delta.lower
            } else {
                delta.upper
            };
            let wanted = (TRUNCATION_SHARE * reference).max(MIN_TAIL_MASS);
            let retruncate = self.options.tail_mass.is_none() && wanted < 0.1 * tail_mass;
            // Tilts also when the bracket is too wide: at huge counts round-off, not the grid,
            // may be what keeps it so.
            // (Not when the charge is too small a part of the width for the retry to meet
            // the tolerance: see `retry_may_meet`.)
            let may_meet = retry_may_meet(
                roundoff_mass,
                settings.bracket_width,
                settings.target_width,
                settings.stopped_by.as_deref(),
            );
            let retilt = tilts == 0
                && (delta.upper < TILT_BELOW_DELTA
                    || (!settings.tolerance_met
                        && may_meet
                        && roundoff_may_matter(roundoff_mass, settings.target_width)));
            // Round-off keeps even the tilted bracket wide: tilts beyond the window's saddle
            // point (see `GridPmf::self_compose_tilted_reaching`).
            let reach = tilts > 0
                && !reaching
                && self.reaching_may_help()
                && !settings.tolerance_met
                && may_meet
                && (roundoff_may_matter(roundoff_mass, settings.target_width)
                    || settings.stopped_by.as_deref() == Some("round-off"));
            if (retruncate || retilt || reach) && passes < 4 {
                // A retry for round-off only (not for a tiny δ's tail, nor another
                // truncation) stops on its first grid if it does not halve the charge there
                // (see `FirstGrid::futile`).
                let for_round_off = reach || (retilt && delta.upper >= TILT_BELOW_DELTA);
                retry_of = (for_round_off && !retruncate).then_some(first_grid);
                if retruncate {
                    tail_mass = wanted;
                }
                reaching |= reach && !retruncate;
                if retilt {
                    tilts = if delta.upper < TILT_BELOW_DELTA {
                        TAIL_TILTS
                    } else {
                        ROUND_OFF_TILTS
                    };
                }
                continue;
            }
            // Judged on the grid's own bracket, before any closed form (see
            // `epsilon_for_delta`).
            let grid_past_the_range =
                past_the_range_delta(&delta, &settings, self.plan.rdp_is_cheap());
            // RDP: always beside guarantee events, otherwise only where the answer lies past
            // the grid's range (see `past_the_range_delta`).
            let rdp = self.plan.mixed_rdp.is_some() || grid_past_the_range;
            self.cap_delta_by_closed_forms(epsilon, (&mut delta, &mut settings), target, rdp);
            if let Some((closed_form, _)) = epochs {
                // Its upper end was taken above, under its own method's name.
                take_closed_form_lower(&mut delta, &mut settings, closed_form.lower, target);
            }
            return Ok(DeltaAnswer {
                epsilon,
                delta,
                settings,
            });
        }
    }

    /// Estimated peak bytes of an evaluation on a grid of step `step` at truncation
    /// `truncation` before any has run: its grids ([`Plan::memory_estimate`], with `tilts`
    /// tilted powers and the loss ranges cut at `range_tail`) and the random allocation and
    /// shuffling lattices it needs ([`Plan::lattice_bytes`]).
    fn estimated_bytes(
        &self,
        step: f64,
        tilts: usize,
        range_tail: Option<f64>,
        truncation: f64,
    ) -> f64 {
        self.plan
            .memory_estimate(step, tilts, range_tail, truncation)
            + self.plan.lattice_bytes(step, truncation, &self.epoch_laws)
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
        let grid = |step| Grid {
            step,
            tail_mass,
            tilts: 0,
            merge_budget: 0.0,
            reaching: false,
        };
        // Every (bound, step) PLD, its directions computed side by side by the evaluation
        // threads, costliest first (the grid `step`, then the coarser lower grids).
        let plds: Vec<(Bound, f64)> = [(Bound::Upper, step), (Bound::Lower, step)]
            .into_iter()
            .chain(coarser_steps(step).into_iter().map(|s| (Bound::Lower, s)))
            .collect();
        let directions: &[Direction] = if symmetric {
            &[Direction::Remove]
        } else {
            &[Direction::Remove, Direction::Add]
        };
        let tasks: Vec<(Bound, Direction, f64)> = plds
            .iter()
            .flat_map(|&(bound, step)| directions.iter().map(move |&d| (bound, d, step)))
            .collect();
        let compute = || {
            parallel_map(&tasks, |&(bound, direction, step)| {
                self.composed(bound, direction, grid(step))
                    .map(|(pmf, _)| pmf)
            })
        };
        // Side by side only within the memory budget (as an evaluation's tasks are; its
        // estimate counts the tasks held at once), otherwise one after the other here.
        let budget = self.options.memory_budget_bytes() as f64;
        // (No tails are merged here: the loss ranges are judged untruncated.)
        let needed = self.estimated_bytes(step, 0, None, tail_mass);
        let pmfs = if needed <= budget {
            compute()
        } else {
            parallel::serially(compute)
        };
        // One PLD per (bound, step), from its directions' results (in `tasks` order; both
        // taken before either error is returned, so that the next PLD starts at its own).
        let mut results = pmfs.into_iter();
        let mut taken = || {
            results.next().unwrap_or_else(|| {
                Err(Error::IncompatibleDistributions {
                    reason: "a PMF was not computed".into(),
                })
            })
        };
        let mut next = || -> Result<PrivacyLossDistribution> {
            let remove = taken();
            let add = (!symmetric).then(&mut taken);
            PrivacyLossDistribution::from_pmfs(remove?, add.transpose()?)
        };
        let upper = next()?;
        let lower = next()?;
        // (A coarser grid whose computation fails is left out.)
        let coarser_lowers = (2..plds.len()).filter_map(|_| next().ok()).collect();
        Ok(BracketedPld {
            upper,
            lower,
            coarser_lowers,
        })
    }

    /// The composition's PMF in one direction and one bound, and an estimate of the bytes
    /// its computation held at its peak (see [`task_bytes`]).
    fn composed(&self, bound: Bound, direction: Direction, grid: Grid) -> Result<(GridPmf, f64)> {
        let Grid {
            step,
            tail_mass,
            tilts,
            merge_budget,
            ..
        } = grid;
        let key = GridKey::new(bound, step, tail_mass, merge_budget);
        // Composed parts (exact powers of atom pairs), and single events with their counts
        // (and their component, for the cache of self-compositions).
        let mut parts = Vec::new();
        let mut singles: Vec<(GridPmf, u64, Option<&Component>)> = Vec::new();
        // Points held by the singles' PMFs, now and at most.
        let (mut singles_points, mut peak_singles) = (0, 0);
        // Products of the chunks of single events multiplied so far.
        let mut chunks: Vec<GridPmf> = Vec::new();
        // μ = 0 (Δ/σ underflows): no privacy loss, nothing to compose.
        if let Some(mu) = self.plan.gaussian_mu.filter(|&mu| mu > 0.0) {
            let make = || {
                // Δ = μ, σ = 1 has the same PLD, and stays valid where 1/μ overflows.
                let gaussian = Gaussian::from_mu(mu).or_else(|_| Gaussian::new(1.0, mu))?;
                PrivacyLossDistribution::with_merged_tails(
                    &gaussian,
                    Symmetry::Symmetric,
                    step,
                    tail_mass,
                    bound,
                    merge_budget,
                )
            };
            let single = match &self.cache {
                Some(cache) => cache.single(Source::Gaussian(mu.to_bits()), key, make)?,
                None => Arc::new(make()?),
            };
            let pmf = single.remove().clone();
            singles_points += pmf.stored_points();
            singles.push((pmf, 1, None));
        }
        for group in &self.plan.groups {
            let of_direction = |pld: &PrivacyLossDistribution| -> GridPmf {
                match direction {
                    Direction::Remove => pld.remove().clone(),
                    Direction::Add => pld.add().clone(),
                }
            };
            // A pair with a few atoms off any lattice is composed exactly, then rounded once
            // (see `discretize::atom_power`): on the grid, its lower rounding would cost a
            // first-order error per run.
            let exact_runs = |atoms: &LossAtoms, symmetry: Symmetry, runs: u64| {
                let powered = atoms
                    .binomial_power(runs, tail_mass, MAX_EXACT_ATOMS)
                    .or_else(|| atoms.power(runs, MAX_EXACT_ATOMS))?;
                Some(
                    PrivacyLossDistribution::from_atoms(&powered, symmetry, step, bound)
                        .map(|pld| of_direction(&pld)),
                )
            };
            let exact = |atoms: &LossAtoms, symmetry: Symmetry| -> Option<Result<GridPmf>> {
                exact_runs(atoms, symmetry, group.count)
            };
            if let Component::Atoms {
                atoms,
                symmetry,
                lattice: None,
            } = &group.component
            {
                if group.count > 1 {
                    let made = match &self.cache {
                        // No exact power (or an error making it): the grid path below.
                        Some(cache) => cache
                            .power(
                                &group.component,
                                key,
                                direction,
                                (tilts, false),
                                group.count,
                                || exact(atoms, *symmetry).ok_or(())?.map_err(|_| ()),
                            )
                            .map(|pmf| GridPmf::clone(&pmf))
                            .ok(),
                        None => exact(atoms, *symmetry).and_then(Result::ok),
                    };
                    if let Some(pmf) = made {
                        parts.push(pmf);
                        continue;
                    }
                    // Too many runs to compose exactly at once: exact chunks of as many runs
                    // as allowed, each rounded once and composed on the grid (a rounding per
                    // chunk instead of one per run), and the remaining runs exactly.
                    if let Some(chunk) = atoms
                        .largest_exact_count(MAX_EXACT_ATOMS)
                        .filter(|&chunk| chunk >= 2 && chunk < group.count)
                    {
                        let chunk = chunk_dividing(group.count, chunk);
                        let (chunks, rest) = (group.count / chunk, group.count % chunk);
                        let mut exact_parts = vec![(chunk, chunks)];
                        if rest > 0 {
                            exact_parts.push((rest, 1));
                        }
                        for (runs, count) in exact_parts {
                            let pmf = exact_runs(atoms, *symmetry, runs).ok_or_else(|| {
                                Error::IncompatibleDistributions {
                                    reason: format!("no exact power of {runs} runs of a pair"),
                                }
                            })??;
                            singles_points += pmf.stored_points();
                            singles.push((pmf, count, None));
                        }
                        continue;
                    }
                }
            }
            // The lower bound of a pair with atoms off the grid's lattice: runs composed
            // exactly in groups, each group rounded once (see
            // `LossAtoms::lower_power_by_squaring`), and the runs left over one by one.
            let grouped = match bound {
                Bound::Lower
                    if group.count >= MIN_GROUPED_RUNS
                        && group.component.has_off_lattice_atoms() =>
                {
                    self.lower_group(&group.component, group.count, tail_mass)?
                }
                _ => None,
            };
            // (A group whose rounding fails, e.g. one spanning more grid points than a grid
            // may hold, leaves every run to the rounding per run.)
            let rounded_group = grouped.and_then(|grouped| {
                let symmetry = group.component.symmetry();
                let made = PrivacyLossDistribution::from_atoms(&grouped.0, symmetry, step, bound);
                made.ok().map(|pld| (of_direction(&pld), grouped.1))
            });
            let mut left_over = group.count;
            if let Some((pmf, runs)) = rounded_group {
                singles_points += pmf.stored_points();
                singles.push((pmf, group.count / runs, None));
                left_over = group.count % runs;
            }
            if left_over > 0 {
                let single = self.group_single(&group.component, bound, grid)?;
                let pmf = of_direction(&single);
                singles_points += pmf.stored_points();
                singles.push((pmf, left_over, Some(&group.component)));
            }
            // Many distinct events: multiply them in chunks, so that the discretizations
            // held at once stay bounded (their products are composed pairwise at the end).
            if singles_points > PRODUCT_CHUNK_POINTS && singles.len() >= 2 {
                peak_singles = peak_singles.max(singles_points);
                let chunk = std::mem::take(&mut singles);
                singles_points = 0;
                chunks.extend(self.compose_singles(chunk, Vec::new(), key, direction, grid)?);
            }
        }
        peak_singles = peak_singles.max(singles_points);
        // The exact powers join the last product when there is only one (no pairwise step
        // at all), and the pairwise composition otherwise.
        let mut all = if chunks.is_empty() {
            self.compose_singles(singles, parts, key, direction, grid)?
        } else {
            chunks.extend(self.compose_singles(singles, Vec::new(), key, direction, grid)?);
            chunks.extend(parts);
            chunks
        };
        let parts_points = peak_singles + all.iter().map(GridPmf::stored_points).sum::<usize>();
        let largest_part = all.iter().map(GridPmf::len).max().unwrap_or(0);
        let composed = if all.len() == 1 {
            all.pop().expect("one part")
        } else {
            compose_all_tilted(all, tail_mass, tilts)?
        };
        let bytes = task_bytes(parts_points, largest_part.max(composed.len()), tilts);
        Ok((composed, bytes))
    }

    /// The lower bound's group of `count` runs of `component` at `tail_mass` when its atoms
    /// lie off the grid's lattice ([`Component::off_lattice_atoms`]): its atoms and runs, from
    /// the accountant's kept groups when computed before (under the lock, so that the two
    /// directions' tasks compute it once); `None` for other events.
    fn lower_group(
        &self,
        component: &Component,
        count: u64,
        tail_mass: f64,
    ) -> Result<Option<Arc<(LossAtoms, u64)>>> {
        let mut kept = self
            .lower_groups
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let same = |group: &&LowerGroup| {
            group.component == *component
                && group.count == count
                && group.tail_mass.to_bits() == tail_mass.to_bits()
        };
        if let Some(group) = kept.iter().find(same) {
            return Ok(group.grouped.clone());
        }
        let grouped = component
            .off_lattice_atoms(tail_mass)?
            .and_then(|atoms| {
                let most = if count >= MANY_RUNS {
                    MAX_SQUARING_PRODUCTS_MANY_RUNS
                } else {
                    MAX_SQUARING_PRODUCTS
                };
                // (A squaring holds its pairs and the merged atoms, 24 bytes each: at most a
                // quarter of the memory budget.)
                let fits = (self.options.memory_budget_bytes() / (4 * 2 * 24)) as usize;
                atoms.lower_power_by_squaring(count, most.min(fits))
            })
            // Without the extremes the truncation leaves out of a run anyway, so that the
            // group fits finer grids (see `LossAtoms::lower_trimmed`).
            .map(|(atoms, runs)| Arc::new((atoms.lower_trimmed(tail_mass), runs)));
        if kept.len() >= KEPT_LOWER_GROUPS {
            kept.remove(0);
        }
        kept.push(LowerGroup {
            component: component.clone(),
            count,
            tail_mass,
            grouped: grouped.clone(),
        });
        Ok(grouped)
    }

    /// The single-event PLD of a group's component on `grid` in one bound, from the cache
    /// when the accountant has one.
    fn group_single(
        &self,
        component: &Component,
        bound: Bound,
        grid: Grid,
    ) -> Result<Arc<PrivacyLossDistribution>> {
        let Grid {
            step,
            tail_mass,
            merge_budget,
            ..
        } = grid;
        let tilted_split = grid.reaching && component.tilts_when_reaching();
        let key =
            GridKey::new(bound, step, tail_mass, merge_budget).with_tilted_split(tilted_split);
        let make = || {
            component.pld(
                bound,
                step,
                tail_mass,
                merge_budget,
                tilted_split,
                &self.epoch_laws,
            )
        };
        match &self.cache {
            Some(cache) => cache.single(Source::Group(component.clone()), key, make),
            None if component.costly_to_discretize() => {
                self.costly_singles
                    .single(Source::Group(component.clone()), key, make)
            }
            None => make().map(Arc::new),
        }
    }

    /// `single` composed `count` times on `grid` (with its tilts), from the cache of
    /// self-compositions when the accountant has one and `component` names the event.
    #[allow(clippy::too_many_arguments)]
    fn self_composed(
        &self,
        single: &GridPmf,
        count: u64,
        component: Option<&Component>,
        key: GridKey,
        direction: Direction,
        grid: Grid,
        moments: Option<&TailMoments>,
    ) -> Result<GridPmf> {
        let Grid {
            tail_mass,
            tilts,
            reaching,
            ..
        } = grid;
        let power =
            || single.self_compose_tilted_reaching(count, tail_mass, tilts, moments, reaching);
        match (&self.cache, component) {
            (Some(cache), Some(component)) => cache
                .power(component, key, direction, (tilts, reaching), count, power)
                .map(|pmf| GridPmf::clone(&pmf)),
            _ => power(),
        }
    }

    /// Compose single events, (PMF, count, component for the cache), with `extra` composed
    /// parts: by one FFT product over the whole window when it applies (see
    /// [`compose_product_reaching`]; returned alone), otherwise each event's self-composition (cached
    /// by component), returned with `extra` for the pairwise composition.
    fn compose_singles(
        &self,
        singles: Vec<(GridPmf, u64, Option<&Component>)>,
        extra: Vec<GridPmf>,
        key: GridKey,
        direction: Direction,
        grid: Grid,
    ) -> Result<Vec<GridPmf>> {
        let Grid {
            tail_mass,
            tilts,
            reaching,
            ..
        } = grid;
        if singles.len() >= 2 {
            let factors: Vec<(&GridPmf, u64)> = singles
                .iter()
                .map(|(pmf, count, _)| (pmf, *count))
                .chain(extra.iter().map(|pmf| (pmf, 1)))
                .collect();
            if let Some(product) = compose_product_reaching(&factors, tail_mass, tilts, reaching) {
                return Ok(vec![product?]);
            }
        }
        let mut parts = Vec::with_capacity(singles.len() + extra.len());
        for (single, count, component) in singles {
            parts.push(self.self_composed(&single, count, component, key, direction, grid, None)?);
        }
        parts.extend(extra);
        Ok(parts)
    }

    /// Evaluate a query (ε(δ) or δ(ε), read from one direction's PMF) as a bracket over both
    /// directions.
    ///
    /// At a grid step fixed by the user, the lower end is the larger over the grids 16h and
    /// 2h when at most 1 nat (see [`lower_end_steps`]; each is a lower bound, and a coarser
    /// grid whose computation fails is left out; 16h is left out too for one event repeated
    /// when its bound would aim no tilted power, see `tilt_predicted`), and over the grid h
    /// itself only when the bracket without it misses the tolerance (`wanted`): the grid 2h
    /// costs about half as much as the grid h, and the upper end (what a fixed step is
    /// chosen for) is the grid h's either way. (Measured on DP-SGD σ 1, q 0.01, 10⁴ steps,
    /// h = 1e-4: 19 ms instead of 23 ms, lower end 6.187638 instead of 6.187694 against the
    /// upper 6.187746, tolerance 6.2e-3.)
    ///
    /// The ADD direction is first bounded from above on a grid [`ADD_CHECK_COARSENING`] times
    /// coarser (cheap), and if that is not enough on a grid twice as coarse: the true answer
    /// is the maximum over directions, so when such a bound does not exceed REMOVE's upper
    /// bound, ADD cannot change either end of the bracket (the lower end stays valid because
    /// the maximum is at least REMOVE's value). Otherwise ADD is computed at full resolution
    /// too, at once when ADD's lower bound on the coarse grid already exceeds REMOVE's upper
    /// bound (then the grid-2h check could not settle it).
    ///
    /// The PMFs of one round (REMOVE's bounds, its coarser lower grids and ADD's coarse
    /// check; then, if needed, ADD's bounds) are independent: they are computed by a small
    /// pool of threads, largest first (see [`parallel_map`]). Each is a pure function of its
    /// inputs, so the answer does not depend on the scheduling.
    ///
    /// With [`Ends::Upper`], the upper end alone (no lower grids at all).
    ///
    /// `read_from` (where the query reads a PMF, given a guaranteed bracket on its answer):
    /// at a fixed step, REMOVE's upper bound for one event repeated is then a tilted power
    /// read from the lower bound of the grid 16h (see
    /// [`Accountant::remove_upper_single_event`]).
    #[allow(clippy::too_many_arguments)]
    fn evaluate(
        &self,
        grid: Grid,
        query: &(dyn Fn(&GridPmf) -> f64 + Sync),
        charged: &(dyn Fn(&GridPmf, f64) -> f64 + Sync),
        wanted: &dyn Fn(&Bracket) -> f64,
        known_add: Option<f64>,
        ends: Ends,
        read_from: Option<ReadFrom>,
    ) -> Result<Evaluation> {
        let symmetric = self.plan.is_symmetric();
        let upper_only = ends == Ends::Upper;
        let roundoff_mass = std::sync::Mutex::new(0.0_f64);
        let task_bytes_seen = std::sync::Mutex::new(Vec::<f64>::new());
        let chain = match self.options.grid_step {
            Some(_) if !upper_only => lower_end_steps(grid.step),
            _ => Vec::new(),
        };
        // At a fixed step, REMOVE's upper bound at h for one event repeated comes from a
        // tilted power (see `remove_upper_single_event`), read from a guaranteed lower end:
        // REMOVE's lower bound on the chain's coarsest grid (16h when at most 1 nat), which
        // the chain's task for that grid computes (first among the lower grids) while the
        // upper task discretizes the event at h, or the upper task itself if it gets there
        // first.
        let anchor = match (read_from, self.single_event(grid)) {
            (Some(read_from), Some(_)) => chain
                .first()
                .map(|&step| (read_from, Grid { step, ..grid })),
            _ => None,
        };
        let anchor_lower = std::sync::OnceLock::<Result<(f64, usize)>>::new();
        // The event's upper PLD on the grid h, when computed ahead (see below).
        let prepared_upper = std::sync::OnceLock::<Option<Arc<PrivacyLossDistribution>>>::new();
        // The event's upper PLD on the anchor's grid, when discretized ahead to predict the
        // tilt (see `tilt_predicted`): ADD's check on that grid composes it.
        let prepared_coarse = std::sync::OnceLock::<Arc<PrivacyLossDistribution>>::new();
        // Set when the tilt is predicted not to pay: the anchor's lower bound is then
        // neither computed nor read, and the upper power is the plain one.
        let anchor_declined = std::sync::atomic::AtomicBool::new(false);
        // (value, number of grid points) of one direction in one bound.
        let run =
            |&(bound, direction, task_grid): &(Bound, Direction, Grid)| -> Result<(f64, usize)> {
                let record = |pmf: &GridPmf, bytes: f64| {
                    if let Ok(mut held) = task_bytes_seen.lock() {
                        held.push(bytes);
                    }
                    // Only the PMFs on the evaluated grid (not the coarser lower grids of a
                    // fixed step, nor ADD's coarse check) decide whether tilts could narrow
                    // the bracket.
                    let value = query(pmf);
                    if task_grid == grid {
                        let charge = charged(pmf, value);
                        if let Ok(mut largest) = roundoff_mass.lock() {
                            *largest = largest.max(charge);
                        }
                    }
                    (value, pmf.len())
                };
                let plain = |bound, direction, task_grid| {
                    self.composed(bound, direction, task_grid)
                        .map(|(pmf, bytes)| record(&pmf, bytes))
                };
                if let Some((read_from, anchor_grid)) = anchor {
                    let lower_at_anchor = || {
                        anchor_lower
                            .get_or_init(|| plain(Bound::Lower, Direction::Remove, anchor_grid))
                            .clone()
                    };
                    if (bound, direction, task_grid)
                        == (Bound::Lower, Direction::Remove, anchor_grid)
                    {
                        return lower_at_anchor();
                    }
                    if (bound, direction, task_grid) == (Bound::Upper, Direction::Remove, grid) {
                        let prepared = prepared_upper.get().cloned().flatten();
                        let tail = self.remove_upper_single_event(grid, prepared, || {
                            if anchor_declined.load(std::sync::atomic::Ordering::Relaxed) {
                                return None;
                            }
                            let (lower, _) = lower_at_anchor().ok()?;
                            let known = Bracket {
                                upper: lower,
                                lower,
                            };
                            Some((read_from.range)(&known))
                        });
                        if let Some(pmf) = tail {
                            let bytes = task_bytes(pmf.len(), pmf.len(), 0);
                            return Ok(record(&pmf, bytes));
                        }
                    }
                    if let (Bound::Upper, Some(pld)) = (bound, prepared_coarse.get()) {
                        if task_grid == anchor_grid {
                            if let Some((pmf, bytes)) =
                                self.single_event_composed(pld, bound, direction, task_grid, None)
                            {
                                return Ok(record(&pmf, bytes));
                            }
                        }
                    }
                }
                plain(bound, direction, task_grid)
            };
        if let Ends::BesideFiner { add_check_step } = ends {
            // REMOVE's lower bound here, and ADD's check on the finer grid's check grid.
            let check_grid = Grid {
                step: add_check_step,
                ..grid
            };
            let check_now = !symmetric && known_add.is_none();
            let mut tasks = vec![(Bound::Lower, Direction::Remove, grid)];
            if check_now {
                tasks.push((Bound::Upper, Direction::Add, check_grid));
            }
            let mut results = parallel_map(&tasks, run);
            let (lower, points) = results.remove(0)?;
            let coarse_add = match (results.pop(), known_add) {
                // A check that fails is no error: the full evaluation below decides.
                (Some(result), _) => result.map_or(f64::INFINITY, |(value, _)| value),
                (None, Some(known)) => known,
                (None, None) => f64::INFINITY,
            };
            if symmetric || coarse_add <= lower {
                return Ok(Evaluation {
                    bracket: Bracket {
                        upper: f64::INFINITY,
                        lower,
                    },
                    worse_direction: if symmetric { "both" } else { "remove" },
                    points,
                    roundoff_mass: roundoff_mass.lock().map_or(f64::INFINITY, |r| *r),
                    bytes: peak_bytes(&task_bytes_seen),
                    add_upper: (!symmetric).then_some(coarse_add),
                });
            }
            // ADD may be the worse direction: in full, with the check's bound when it has one
            // (REMOVE's lower end is computed again there; no DP-SGD query tried comes here).
            let known = Some(coarse_add).filter(|c| c.is_finite()).or(known_add);
            return self.evaluate(grid, query, charged, wanted, known, Ends::Both, read_from);
        }
        // At a fixed step the lower end is first read from the coarser grids alone (about
        // half the cost of the grid h); the grid h's own lower bound is computed only when
        // that bracket misses the tolerance (see below). `Ends::Upper`: no lower bound at all
        // (the bracket's lower end is −∞).
        let lower_first = chain.is_empty() && !upper_only;
        // The tasks of one direction: upper at h, lower at h unless deferred, then the
        // coarser lower grids.
        let tasks_of = |direction: Direction| -> Vec<(Bound, Direction, Grid)> {
            let mut tasks = vec![(Bound::Upper, direction, grid)];
            if lower_first {
                tasks.push((Bound::Lower, direction, grid));
            }
            tasks.extend(
                chain
                    .iter()
                    .map(|&step| (Bound::Lower, direction, Grid { step, ..grid })),
            );
            tasks
        };
        // The bracket of one direction from its tasks' results (in `tasks_of` order): the
        // upper end from the first, the lower end the largest of the others that succeeded
        // (the grid h's own lower bound must succeed when it is computed).
        let bracket_of = |results: &[Result<(f64, usize)>]| -> Result<(Bracket, usize)> {
            let (upper, mut points) = results[0].clone()?;
            let mut lower = f64::NEG_INFINITY;
            for (i, result) in results.iter().enumerate().skip(1) {
                match result {
                    Ok((value, n)) => {
                        lower = lower.max(*value);
                        if i == 1 && lower_first {
                            points = points.max(*n);
                        }
                    }
                    Err(error) if i == 1 && lower_first => return Err(error.clone()),
                    Err(_) => {}
                }
            }
            Ok((Bracket { upper, lower }, points))
        };
        let mut tasks = tasks_of(Direction::Remove);
        // ADD's upper bound is checked first on a grid ADD_CHECK_COARSENING times coarser
        // (its cost is a small fraction of REMOVE's), then, only if that does not settle it,
        // on a grid twice as coarse.
        let check_grid = Grid {
            step: ADD_CHECK_COARSENING * grid.step,
            ..grid
        };
        let second_add = Grid {
            step: 2.0 * grid.step,
            ..grid
        };
        if let (Some((read_from, anchor_grid)), Some(&(Bound::Upper, Direction::Remove, first))) =
            (anchor, tasks.first())
        {
            // First, side by side: the upper task's discretization at h (connect-the-dots, most
            // of a millisecond at h = 1e-4) and the anchor's lower bound, which that task reads
            // right after it. The discretization is cut into pieces (see `numeric::pieces`)
            // that the other thread takes once the anchor is done; otherwise that thread went
            // on to the other lower grids and the discretization took one thread alone, at the
            // head of the longest task. (DP-SGD σ 1, q 0.01, 10³ steps at h = 1e-4: 0.90 of
            // the time, paired; the other benchmark cases, where the two threads' loads were
            // already even, within noise.)
            if first == grid {
                parallel::join(
                    || {
                        prepared_upper.get_or_init(|| {
                            let (component, _) = self.single_event(grid)?;
                            self.group_single(component, Bound::Upper, grid).ok()
                        });
                    },
                    || {
                        if self.tilt_predicted(read_from, anchor_grid, &prepared_coarse) {
                            let _ = run(&(Bound::Lower, Direction::Remove, anchor_grid));
                        } else {
                            anchor_declined.store(true, std::sync::atomic::Ordering::Relaxed);
                        }
                    },
                );
            }
            // Declined: the anchor's grid leaves the lower end (2h's is the larger on every
            // benchmark; a 2h that fails makes the bracket read the grid h's lower bound).
            if anchor_declined.load(std::sync::atomic::Ordering::Relaxed) {
                tasks.retain(|&task| task != (Bound::Lower, Direction::Remove, anchor_grid));
            }
        }
        // An earlier grid's ADD bound is as valid on this one: with it, the check is run only
        // if REMOVE's upper bound comes out below it.
        let check_now = !symmetric && known_add.is_none();
        // After REMOVE's tasks: its grid h (and its lower bound there) are the largest, and
        // at a fixed step the coarsest lower grid aims the upper bound (see `anchor`).
        let check_at = tasks.len();
        if check_now {
            tasks.insert(check_at, (Bound::Upper, Direction::Add, check_grid));
        }
        let mut results = parallel_map(&tasks, run);
        let coarse_add_result = if check_now {
            Some(results.remove(check_at))
        } else {
            None
        };
        let (remove, points) = bracket_of(&results)?;
        // The grid h's lower bound of each computed direction, when the coarser grids' lower
        // end leaves the bracket wider than the tolerance: the lower end is then the largest
        // over h, 2h and 16h.
        let deepen = |bracket: Bracket, points: usize, directions: &[Direction]| {
            let width = bracket.width();
            if lower_first || upper_only || (width.is_finite() && width <= wanted(&bracket)) {
                return Ok((bracket, points));
            }
            let tasks: Vec<_> = directions
                .iter()
                .map(|&direction| (Bound::Lower, direction, grid))
                .collect();
            let mut deeper = bracket;
            let mut points = points;
            for result in parallel_map(&tasks, run) {
                let (value, n) = result?;
                deeper.lower = deeper.lower.max(value);
                points = points.max(n);
            }
            Ok::<_, Error>((deeper, points))
        };
        let finish = |bracket, worse_direction, points, add_upper| Evaluation {
            bracket,
            worse_direction,
            points,
            roundoff_mass: roundoff_mass.lock().map_or(f64::INFINITY, |r| *r),
            bytes: peak_bytes(&task_bytes_seen),
            add_upper,
        };
        if symmetric {
            let (remove, points) = deepen(remove, points, &[Direction::Remove])?;
            return Ok(finish(remove, "both", points, None));
        }
        let mut coarse_add = match (coarse_add_result, known_add) {
            // A coarse grid that fails is no error: the check moves to the finer one.
            (Some(result), _) => result.map_or(f64::INFINITY, |(value, _)| value),
            (None, Some(known)) => known,
            (None, None) => f64::INFINITY,
        };
        if coarse_add > remove.upper {
            // The earlier or coarser bound is not enough. When ADD's lower bound on the
            // coarse grid is already above REMOVE's upper bound, ADD is the worse direction
            // and is computed in full at once; otherwise its upper bound on the grid 2h may
            // still settle it. (ADD-dominated pairs took 25% longer with the check on 2h
            // always run first.)
            // (One task at a time, each on the pool: its transforms' pieces are then shared
            // by every thread, not computed one after the other on this one.)
            let add_surely_worse = known_add.is_none()
                && parallel::on_pool(|| run(&(Bound::Lower, Direction::Add, check_grid)))
                    .is_ok_and(|(value, _)| value > remove.upper);
            if !add_surely_worse {
                let check = parallel::on_pool(|| run(&(Bound::Upper, Direction::Add, second_add)));
                coarse_add = coarse_add.min(check?.0);
            }
        }
        if coarse_add <= remove.upper {
            let (remove, points) = deepen(remove, points, &[Direction::Remove])?;
            return Ok(finish(remove, "remove", points, Some(coarse_add)));
        }
        let (add, add_points) = bracket_of(&parallel_map(&tasks_of(Direction::Add), run))?;
        let worse_direction = if add.upper > remove.upper {
            "add"
        } else {
            "remove"
        };
        let (both, points) = deepen(
            remove.max(add),
            points.max(add_points),
            &[Direction::Remove, Direction::Add],
        )?;
        Ok(finish(
            both,
            worse_direction,
            points,
            Some(coarse_add.min(add.upper)),
        ))
    }

    /// The step of [`AccountantOptions::upper_grid_step`]'s finer grid, aligned to the
    /// plan's lattice, when that grid is cheap as predicted from an evaluated grid of step
    /// `step` (its largest composed PMF `points` long, `bytes` at its peak): at most
    /// [`FINE_UPPER_POINTS`] composed points ([`FINE_UPPER_POINTS_SHARP_BULK`] for a sharp
    /// unsampled bulk), [`FINE_UPPER_WORK`] points times the distinct
    /// single PMFs, within the memory budget together with a grid like the evaluated one,
    /// and only for plans whose cost follows the
    /// grid's size. `None` when the option is off, `step` is already that fine, or the grid
    /// would not be cheap.
    fn cheap_finer_step(
        &self,
        step: f64,
        tail_mass: Option<f64>,
        truncation: f64,
        points: usize,
        bytes: f64,
    ) -> Option<f64> {
        let fine = self.options.upper_grid_step?;
        if step <= fine || !self.plan.discretizes_per_point() {
            return None;
        }
        let fine_step = self.plan.aligned_step(fine);
        let growth = step / fine_step;
        let fine_points = points as f64 * growth;
        let most_points = if self
            .plan
            .sharp_unsampled_bulk(step, FINE_UPPER_SHARP_SPREAD)
            .is_some()
        {
            FINE_UPPER_POINTS_SHARP_BULK
        } else {
            FINE_UPPER_POINTS
        };
        let cheap = fine_points <= most_points
            && fine_points * self.plan.distinct_factors() as f64 <= FINE_UPPER_WORK
            // (beside the next grid's evaluation, when computed speculatively)
            && bytes * (growth + 1.0) + self.plan.lattice_bytes(fine_step, truncation, &self.epoch_laws)
                <= self.options.memory_budget_bytes() as f64
            && self.plan.fits(fine_step, tail_mass, truncation);
        cheap.then_some(fine_step)
    }

    /// The upper bound alone on the grid `grid` with step `fine_step` (REMOVE's, and ADD's
    /// only when `known_add`, a guaranteed bound on it, does not settle it); `None` when its
    /// computation fails.
    #[allow(clippy::too_many_arguments)]
    fn upper_only(
        &self,
        grid: Grid,
        fine_step: f64,
        known_add: Option<f64>,
        query: &(dyn Fn(&GridPmf) -> f64 + Sync),
        charged: &(dyn Fn(&GridPmf, f64) -> f64 + Sync),
        target: &dyn Fn(&Bracket) -> f64,
    ) -> Option<UpperEnd> {
        let fine = Grid {
            step: fine_step,
            ..grid
        };
        let evaluation = self
            .evaluate(fine, query, charged, target, known_add, Ends::Upper, None)
            .ok()?;
        let upper = evaluation.bracket.upper;
        (upper >= 0.0).then_some(UpperEnd {
            upper,
            step: fine_step,
            worse_direction: evaluation.worse_direction,
        })
    }

    /// REMOVE's upper bound alone on the grid `grid` with step `fine_step` (ADD's is
    /// computed beside it, see [`Ends::BesideFiner`], and joined with
    /// [`UpperEnd::with_add`]); `None` when its computation fails.
    fn remove_upper_only(
        &self,
        grid: Grid,
        fine: FineFirst,
        prepared: Option<Arc<PrivacyLossDistribution>>,
        query: &(dyn Fn(&GridPmf) -> f64 + Sync),
    ) -> Option<UpperEnd> {
        let fine_step = fine.fine_step;
        let fine_grid = Grid {
            step: fine_step,
            ..grid
        };
        let pmf = match self.remove_upper_single_event(fine_grid, prepared, || Some(fine.read_from))
        {
            Some(pmf) => pmf,
            None => {
                self.composed(Bound::Upper, Direction::Remove, fine_grid)
                    .ok()?
                    .0
            }
        };
        let upper = query(&pmf);
        (upper >= 0.0).then_some(UpperEnd {
            upper,
            step: fine_step,
            worse_direction: if self.plan.is_symmetric() {
                "both"
            } else {
                "remove"
            },
        })
    }

    /// The upper PLD on the grid `grid` with step `fine_step` of the plan's one event
    /// repeated ([`Accountant::single_event`]), as [`Accountant::remove_upper_only`] would
    /// discretize it; `None` for other plans or when it fails (`remove_upper_only` then
    /// composes as for any plan).
    fn fine_single_upper(
        &self,
        grid: Grid,
        fine_step: f64,
    ) -> Option<Arc<PrivacyLossDistribution>> {
        let fine_grid = Grid {
            step: fine_step,
            ..grid
        };
        let (component, _) = self.single_event(fine_grid)?;
        self.group_single(component, Bound::Upper, fine_grid).ok()
    }

    /// Whether a retry's tail-accuracy measures ([`Grid::reaching`]) can narrow a bracket:
    /// tilts beyond the window's saddle point, which only self-compositions take (plans of
    /// one event repeated), powers and products in double-double arithmetic (a few distinct
    /// events, composed by one product), and tilted compositions of the split blocks of
    /// random allocation with 1 < k < t.
    fn reaching_may_help(&self) -> bool {
        matches!(self.plan.groups.as_slice(), [group] if group.count >= 2)
            || (2..=REACHING_PRODUCT_GROUPS).contains(&self.plan.groups.len())
            || self.plan.has_tilted_split()
    }

    /// The event and count of a plan of one event with continuous losses repeated (as
    /// DP-SGD), composed on a grid without tilts; `None` for other plans.
    fn single_event(&self, grid: Grid) -> Option<(&Component, u64)> {
        let [group] = self.plan.groups.as_slice() else {
            return None;
        };
        let continuous = matches!(
            group.component,
            Component::SubsampledGaussian(_)
                | Component::Mixture(_)
                | Component::TruncatedPoisson(_)
        );
        (grid.tilts == 0
            && continuous
            && group.count >= 2
            && !self.plan.gaussian_mu.is_some_and(|mu| mu > 0.0))
        .then_some((&group.component, group.count))
    }

    /// REMOVE's upper PMF on `grid` for a plan of one event repeated, as tight as the plain
    /// power's at losses from `from` up (where the query reads it): by one FFT power tilted
    /// at `aim` over a buffer about half as long as the plain power's window (see
    /// [`GridPmf::upper_tail_power`]), else (declined, or no `(from, aim)` from
    /// `read_range`) by the plain power ([`Accountant::composed`]'s, through the same
    /// caches). `None` when the plan is not of that kind or the power fails: the caller
    /// composes.
    fn remove_upper_single_event(
        &self,
        grid: Grid,
        prepared: Option<Arc<PrivacyLossDistribution>>,
        read_range: impl FnOnce() -> Option<(f64, f64)>,
    ) -> Option<GridPmf> {
        let (component, count) = self.single_event(grid)?;
        // (`prepared`: the event's upper PLD on `grid` when it was computed ahead.)
        let pld = match prepared {
            Some(pld) => pld,
            None => self.group_single(component, Bound::Upper, grid).ok()?,
        };
        let single = pld.remove();
        // The tail moments the tilted power computes, reused by the plain power when the
        // tilted one is declined.
        let moments = std::cell::OnceCell::new();
        // (Asked only now: at a fixed step the range comes from a coarser grid's lower bound,
        // which another thread computes meanwhile. Without one, the plain power.)
        read_range()
            .and_then(|(from, aim)| {
                single.upper_tail_power_sharing(count, grid.tail_mass, from, aim, &moments)
            })
            .or_else(|| {
                let (bound, direction) = (Bound::Upper, Direction::Remove);
                self.single_event_composed(&pld, bound, direction, grid, moments.get())
                    .map(|(pmf, _)| pmf)
            })
    }

    /// The plan's one event repeated ([`Accountant::single_event`]) composed in `direction`
    /// on `grid` from its PLD `pld` in `bound` on that grid, computed ahead: what
    /// [`Accountant::composed`] computes, without discretizing again (nor computing the
    /// tail moments, when given); with the task's bytes as `composed` counts them. `None`
    /// when the plan is not of that kind or the power fails.
    fn single_event_composed(
        &self,
        pld: &PrivacyLossDistribution,
        bound: Bound,
        direction: Direction,
        grid: Grid,
        moments: Option<&TailMoments>,
    ) -> Option<(GridPmf, f64)> {
        let (component, count) = self.single_event(grid)?;
        let single = match direction {
            Direction::Remove => pld.remove(),
            Direction::Add => pld.add(),
        };
        let key = GridKey::new(bound, grid.step, grid.tail_mass, grid.merge_budget);
        let composed = self
            .self_composed(
                single,
                count,
                Some(component),
                key,
                direction,
                grid,
                moments,
            )
            .ok()?;
        let points = single.stored_points() + composed.stored_points();
        let bytes = task_bytes(points, composed.len(), grid.tilts);
        Some((composed, bytes))
    }

    /// Whether REMOVE's upper power on the grid h of a plan of one event repeated, at a
    /// fixed step, is predicted to be tilted ([`Accountant::remove_upper_single_event`]),
    /// which reads a guaranteed lower end of the answer: the anchor, REMOVE's lower bound on
    /// `anchor_grid` (16h). Predicted on that grid itself, with a Chernoff estimate of an
    /// ε(δ) query's answer ([`GridPmf::chernoff_epsilon`], from above) in place of the
    /// anchor: the event's upper PLD there is discretized for it and kept in `prepared`
    /// (ADD's check on that grid composes it). A prediction only chooses the work: when it
    /// errs, the anchor is computed and not used (as always before), or a plain power
    /// replaces a tilted one that would have been shorter (and may differ from it in the
    /// ninth digit: in 1 of 1080 random DP-SGD queries at steps 1e-4 to 1e-3, an upper end
    /// 3e-9 higher); every answer is as valid. (DP-SGD at h = 1e-4, tilted at δ = 1e-5
    /// where predicted: σ 1, q 0.01, 10⁴ steps and σ 0.8, q 0.004, 10⁵ steps; declined:
    /// σ 1, q 0.01, 10³ steps and σ 1.1, q 256/60000, 14063 steps; both as the anchor would
    /// have decided.) True (compute the anchor) for δ(ε) queries, for estimates beyond half
    /// the loss limit, and whenever no estimate can be made.
    fn tilt_predicted(
        &self,
        read_from: ReadFrom,
        anchor_grid: Grid,
        prepared: &std::sync::OnceLock<Arc<PrivacyLossDistribution>>,
    ) -> bool {
        let Some(delta) = read_from.delta else {
            return true;
        };
        let Some((component, count)) = self.single_event(anchor_grid) else {
            return true;
        };
        let Ok(pld) = self.group_single(component, Bound::Upper, anchor_grid) else {
            return true;
        };
        let single = prepared.get_or_init(|| pld).remove();
        let moments = std::cell::OnceCell::new();
        // Near the loss limit the lower grids' ends are cut there, and 16h's lower end may be
        // the larger one: it is computed then, as it always was.
        let Some(estimate) = single
            .chernoff_epsilon(count, delta, &moments)
            .filter(|&estimate| estimate < 0.5 * LOSS_LIMIT)
        else {
            return true;
        };
        let (from, aim) = (read_from.range)(&Bracket {
            upper: estimate,
            lower: estimate,
        });
        single.upper_tail_power_applies(count, anchor_grid.tail_mass, from, aim, &moments)
    }

    /// The step of [`AccountantOptions::upper_grid_step`]'s grid when its (REMOVE) upper
    /// bound is worth computing from the start, beside the first grid's lower end and ADD's
    /// check ([`Ends::BesideFiner`]), and the step of that first grid: for plans of at most [`FINE_FIRST_FACTORS`] distinct single PMFs, all
    /// with continuous losses (see [`Plan::continuous_losses`]), when the finer grid is cheap (see
    /// [`Accountant::cheap_finer_step`]). Both are predicted from a probe, the composition's
    /// REMOVE bounds on a grid [`PROBE_COARSENING`] times coarser than `grid` (a few percent
    /// of its cost): the finer grid's size from the probe's, and the first grid from the
    /// probe's bracket, whose width shrinks about like the step squared (aiming at
    /// [`FIRST_GRID_AIM`] of the tolerance, within a factor 8 of `grid`'s step either way).
    /// `None` (the tolerance's grids first, as for other plans) when the probe's bracket does
    /// not resolve the answer yet (lower end 0, or wider than [`PROBE_MAX_WIDTH`] of its
    /// upper end) or when the tolerance needs a grid within 2× of the finer one.
    ///
    /// Not kept, measured: a second probe at `grid`'s own step (REMOVE's two ends) when the
    /// coarse one does not resolve the answer. On 88 DP-SGD queries at δ 1e-5 (84 whose
    /// coarse probe does not resolve it, σ 0.6 to 5, q 0.001 to 0.2, 10 to 10⁴ steps, and
    /// the four benchmarks; in-process medians, the two builds alternated three times) it
    /// took down to 0.59× as long where the second probe resolved the answer (σ 1, q 0.01,
    /// 10³ steps: 0.85–0.89×), but up to 1.33× where it did not (the first grid's evaluation
    /// then computes those ends again), and 3× on σ 0.6, q 0.001, 10⁴ steps: the first grid
    /// it predicted (step 6.43e-4) had a REMOVE lower end of 1.28 where the answer is 2.456
    /// (the refinement's own grid, 5% finer, gave 2.4538), and the next grid was 10× finer.
    /// Over all of them the time was 1.06× the total and 0.97× the geometric mean.
    fn fine_first_steps(
        &self,
        grid: Grid,
        query: &(dyn Fn(&GridPmf) -> f64 + Sync),
        target: &dyn Fn(&Bracket) -> f64,
        read_from: &dyn Fn(&Bracket) -> (f64, f64),
    ) -> Option<FineFirst> {
        let fine = self.options.upper_grid_step?;
        if grid.step <= fine
            || !self.plan.continuous_losses()
            || self.plan.distinct_factors() > FINE_FIRST_FACTORS
        {
            return None;
        }
        let probe = Grid {
            step: self
                .plan
                .aligned_step((grid.step * PROBE_COARSENING).min(MAX_GRID_STEP)),
            ..grid
        };
        let tasks = [Bound::Upper, Bound::Lower];
        let mut probed = parallel_map(&tasks, |&bound| {
            self.composed(bound, Direction::Remove, probe)
        });
        let lower = probed.pop()?;
        let (upper, bytes) = probed.pop()?.ok()?;
        // What runs at once beside the finer grid is known here: its REMOVE upper bound is
        // one task, and the first grid's tasks run one after the other beside it
        // (`parallel::serially` in `refine`) on a grid at least twice as coarse (checked
        // below), so a task of at most half the finer one's bytes. Both scale with the
        // grid's points from the probe's task: `cheap_finer_step` charges `bytes·(growth +
        // 1)`, which at 1.5 times the probe's task covers `1.5·growth` of it. (Before, four
        // concurrent tasks were counted, as for an evaluation on a machine of four threads:
        // σ 0.8, q 0.004, 10⁵ steps lost the finer grid's upper end under budgets up to
        // 128 MiB while its process peaked at 12 MiB.)
        let peak = BESIDE_FINER_TASKS * bytes;
        let fine_step = self
            .cheap_finer_step(
                probe.step,
                range_tail(grid.tail_mass, grid.merge_budget),
                grid.tail_mass,
                upper.len(),
                peak,
            )
            .filter(|&fine_step| grid.step > fine_step)?;
        // The probe's bracket predicts the first grid only when it resolves the answer (its
        // lower end above 0 and within a factor 2 of its upper end): on coarser grids the
        // width is not yet the grid's (a lower bound of 0 says nothing of the step it
        // needs), and the finer upper bound known from the start would leave refinements
        // that do not move the lower end looking as if they were not narrowing the bracket.
        let (lower, _) = lower.ok()?;
        let bracket = Bracket {
            upper: query(&upper),
            lower: query(&lower),
        };
        let (width, wanted) = (bracket.width(), target(&bracket));
        if !(bracket.lower > 0.0 && width.is_finite() && width <= PROBE_MAX_WIDTH * bracket.upper) {
            return None;
        }
        let aimed = probe.step * (FIRST_GRID_AIM * wanted / width.max(f64::MIN_POSITIVE)).sqrt();
        // The tolerance wants a grid about as fine as the finer one, or finer: the
        // refinements' own upper bounds will do.
        if aimed.is_nan() || aimed < 2.0 * fine_step {
            return None;
        }
        let first = aimed.clamp(grid.step / 8.0, grid.step * 8.0);
        Some(FineFirst {
            fine_step,
            first_step: self.plan.aligned_step(first),
            read_from: read_from(&bracket),
        })
    }

    /// Compute at a grid step, refining it until the bracket meets the tolerance: one pass
    /// with `tilts` tilted powers, double-double ones when `reaching`; `reach_may_follow`
    /// when the caller retries with them if round-off holds this pass back; `retry_of`: the
    /// first grid of the pass this one retries for round-off (see [`FirstGrid::futile`]).
    /// Returns the bracket, the settings, the last grid's round-off charge and this pass's
    /// first grid.
    #[allow(clippy::too_many_arguments)]
    fn refine(
        &self,
        mut tail_mass: f64,
        (tilts, reaching, reach_may_follow): (usize, bool, bool),
        retry_of: Option<FirstGrid>,
        merging: TailMerging,
        query: impl Fn(&GridPmf) -> f64 + Sync,
        charged: impl Fn(&GridPmf, f64) -> f64 + Sync,
        target: impl Fn(&Bracket) -> f64 + Sync,
        round_off_share: impl Fn(f64, f64) -> f64,
        read_from: ReadFrom,
    ) -> Result<(Bracket, Settings, f64, FirstGrid)> {
        // The merge budget of the first grid, and the truncation the plan's loss ranges are
        // judged at (see `Component::loss_range`): only where far tails are merged. Both are
        // those of the grid to be evaluated next (a δ query's may change, see below).
        let mut merge_budget = merging.budget(&self.plan, None);
        let mut range_tail = range_tail(tail_mass, merge_budget);
        let fixed = self.options.grid_step;
        let mut step = fixed.unwrap_or_else(|| match self.start_step {
            Some(start) => self.plan.aligned_step(start),
            None => self.plan.initial_step(range_tail),
        });
        let mut refinements = 0;
        let mut coarsenings = 0;
        let mut stalls = 0;
        // Whether a refinement failed for its size (the last grid is then the answer's).
        let mut size_limited = false;
        let mut best: Option<Bracket> = None;
        // The last grid's own bracket (before the tightest ends seen so far are kept).
        let mut previous_own: Option<Bracket> = None;
        // The last refined-from grid's step and bracket width (see `order` below).
        let mut last_grid: Option<(f64, f64)> = None;
        // The tightest guaranteed upper bound on ADD's answer seen so far (see `evaluate`).
        let mut known_add: Option<f64> = None;
        let budget = self.options.memory_budget_bytes() as f64;
        // The finer grid's upper bound (`AccountantOptions::upper_grid_step`): whether it was
        // tried, and its value and step when it succeeded.
        let mut fine_tried = false;
        let mut fine_upper: Option<UpperEnd> = None;
        // Step, largest composed PMF and peak bytes of the last evaluated grid.
        let mut previous: Option<(f64, usize, f64)> = None;
        let mut first_grid: Option<FirstGrid> = None;
        loop {
            let mut grid = Grid {
                step,
                tail_mass,
                tilts,
                merge_budget,
                reaching,
            };
            // The first grid's memory from the events' loss ranges (later grids are checked
            // from the measured sizes before they are chosen, below).
            if refinements == 0 {
                let needed = self.estimated_bytes(step, tilts, range_tail, tail_mass);
                if needed > budget {
                    if fixed.is_none() && coarsenings < MAX_COARSENINGS && step < MAX_GRID_STEP {
                        step = self.plan.aligned_step((step * 4.0).min(MAX_GRID_STEP));
                        coarsenings += 1;
                        continue;
                    }
                    return Err(Error::MemoryBudget {
                        grid_step: step,
                        needed_mib: needed / (1u64 << 20) as f64,
                        budget_mib: budget / (1u64 << 20) as f64,
                    });
                }
            }
            let evaluated = {
                // The first grid: when the finer upper grid is cheap (predicted by a coarse
                // probe), its upper bound is computed at once, beside the evaluation of a
                // grid the probe predicts to meet the tolerance with it (the finer grid's
                // upper bound is the long task; this grid's both ends fit beside it). After a
                // refinement the grid is chosen to meet the tolerance: when the finer upper
                // grid is cheap too, its upper bound is computed beside this grid's
                // evaluation (the two threads share the work) rather than after it.
                let first = match (fixed, refinements, fine_tried) {
                    (None, 0, false) => {
                        self.fine_first_steps(grid, &query, &target, read_from.range)
                    }
                    _ => None,
                };
                // The first grid as predicted, if it fits the budget.
                if let Some(FineFirst { first_step, .. }) = first {
                    if first_step != step
                        && self.estimated_bytes(first_step, tilts, range_tail, tail_mass) <= budget
                    {
                        step = first_step;
                        grid.step = first_step;
                    }
                }
                let speculate = match (fixed, previous, fine_tried) {
                    (None, Some((s, p, b)), false) => self
                        .cheap_finer_step(s, range_tail, tail_mass, p, b)
                        .filter(|&fine_step| step > fine_step),
                    _ => None,
                };
                let evaluate_here = |ends| {
                    self.evaluate(
                        grid,
                        &query,
                        &charged,
                        &target,
                        known_add,
                        ends,
                        Some(read_from),
                    )
                };
                match (first, speculate) {
                    // The first grid beside the finer one: REMOVE's upper bound alone there,
                    // this grid's lower end and ADD's check here (see `Ends::BesideFiner`);
                    // this grid's upper end only if ADD may be the worse direction, or if the
                    // finer grid fails.
                    (Some(fine), _) => {
                        let beside = Ends::BesideFiner {
                            add_check_step: ADD_CHECK_COARSENING * fine.fine_step,
                        };
                        // The finer grid's single PLD first, on every thread (its bin ends
                        // and masses are cut into pieces), before the two sides part: the
                        // long side is then shorter by most of its discretization.
                        let prepared =
                            parallel::on_pool(|| self.fine_single_upper(grid, fine.fine_step));
                        let (evaluation, fine) = parallel::join(
                            || parallel::serially(|| evaluate_here(beside)),
                            || self.remove_upper_only(grid, fine, prepared, &query),
                        );
                        fine_tried = true;
                        match (evaluation, fine) {
                            (Ok(evaluation), Some(fine)) => {
                                fine_upper = Some(fine.with_add(evaluation.add_upper));
                                Ok(evaluation)
                            }
                            (Ok(evaluation), None) if evaluation.bracket.upper.is_finite() => {
                                Ok(evaluation)
                            }
                            // (The finer grid failed, which no benchmark does: this grid's
                            // lower end and ADD's check are computed again, in full.)
                            (Ok(_), None) => evaluate_here(Ends::Both),
                            (Err(error), _) => Err(error),
                        }
                    }
                    (None, Some(fine_step)) => {
                        // This grid's tasks one after the other beside the finer grid (see
                        // `parallel::serially`): an idle thread helps with the transforms.
                        let (evaluation, fine) = parallel::join(
                            || parallel::serially(|| evaluate_here(Ends::Both)),
                            || {
                                self.upper_only(
                                    grid, fine_step, known_add, &query, &charged, &target,
                                )
                            },
                        );
                        fine_tried = true;
                        fine_upper = fine;
                        evaluation
                    }
                    (None, None) => evaluate_here(Ends::Both),
                }
            };
            let Evaluation {
                bracket,
                worse_direction,
                points,
                roundoff_mass,
                bytes,
                add_upper,
            } = match evaluated {
                Ok(evaluation) => evaluation,
                // The first grid is too fine for the composition's range: coarsen it (the
                // bracket will say how loose the answer is) rather than give up.
                Err(Error::GridTooLarge { .. })
                    if fixed.is_none()
                        && refinements == 0
                        && coarsenings < MAX_COARSENINGS
                        && step < MAX_GRID_STEP =>
                {
                    // Never past the coarsest grid a query may use (1 nat).
                    step = self.plan.aligned_step((step * 4.0).min(MAX_GRID_STEP));
                    coarsenings += 1;
                    continue;
                }
                // A refinement to the finest grid the size estimates allowed needed more
                // points than they said: answer from the last grid (evaluated again).
                Err(Error::GridTooLarge { .. })
                    if fixed.is_none()
                        && refinements > 0
                        && !size_limited
                        && previous.is_some() =>
                {
                    step = previous.map_or(step, |(last, _, _)| last);
                    refinements -= 1;
                    size_limited = true;
                    continue;
                }
                Err(error) => return Err(error),
            };
            known_add = add_upper;
            previous = Some((step, points, bytes));
            // The finer grid's upper bound, when computed, is as guaranteed as this one's;
            // when it is the upper end, so is its worse direction.
            // The step of the grid the upper end comes from.
            let (bracket, worse_direction, upper_step) = match fine_upper {
                Some(fine) if fine.upper < bracket.upper => (
                    Bracket {
                        upper: fine.upper,
                        ..bracket
                    },
                    fine.worse_direction,
                    fine.step,
                ),
                _ => (bracket, worse_direction, step),
            };
            let (own_upper, own_lower) = (bracket.upper, bracket.lower);
            // Whether both ends of this grid's own bracket lie outside the last grid's: the
            // finer grid made both bounds worse (see `patience` below).
            let outwards = previous_own
                .is_some_and(|p: Bracket| bracket.lower < p.lower && bracket.upper > p.upper);
            let prior_own = previous_own;
            previous_own = Some(bracket);
            // Every grid's bracket is guaranteed: keep the tightest ends seen so far, so that
            // a refinement never loosens either end.
            let bracket = match best {
                Some(previous) => Bracket {
                    upper: bracket.upper.min(previous.upper),
                    lower: bracket.lower.max(previous.lower),
                },
                None => bracket,
            };
            let previous_width = best.map(|b| b.width());
            best = Some(bracket);
            let width = bracket.width();
            let wanted = target(&bracket);
            let met = width.is_finite() && width <= wanted;
            // Round-off, not the grid, keeps the bracket wide when the allowances charged
            // where the answer was read exceed the target width (in δ: no untilted grid can
            // meet it), or when a finer grid did not narrow the bracket by a tenth while they
            // are at least 1e-3 of it and at least ROUND_OFF_WIDTH_SHARE of the bracket's
            // own width: finer grids would only cost more (each about three times the last),
            // so stop here and let the caller retry with tilted powers. (A bracket far wider
            // than its round-off, e.g. one whose lower bound is loose by nature, is not held
            // by round-off: the retry would repeat the whole refinement for nothing.)
            let share = round_off_share(roundoff_mass, wanted);
            let width_share = round_off_share(roundoff_mass, width);
            let not_narrowing = previous_width.is_some_and(|w| width > 0.9 * w);
            let width_floor = if self.plan.loose_by_nature() {
                LOOSE_ROUND_OFF_WIDTH_SHARE
            } else {
                ROUND_OFF_WIDTH_SHARE
            };
            let round_off_stall = not_narrowing
                && share >= 1e-3
                && (width_share.is_nan() || width_share >= width_floor);
            // Likewise on a tilted pass that a retry with double-double powers (`reaching`)
            // follows, once the charge alone exceeds the target width while the bracket is
            // still ten times wider than that and its lower end has left 0: finer grids
            // would only add round-off there, so the retry starts at once from the first
            // grid. (σ 0.661, q 3.78e-6, 212,635 steps, δ 1e-15, first grid 2e-5 nats: a
            // charge of 3e7 target widths, [0.203, 1.625]; the retry there gives [0.844384,
            // 0.844456]. Started at 4.9e-4 nats, this pass refined to 4.9e-5 and 6.7e-6 nats
            // (1.3 GB), [0.225, 1.512] and [0.172, 1.753], before the retry.)
            // A bracket within ten times its target is left to refine: σ 0.693, q 3.2e-7,
            // 18,738 steps, δ 1e-8 (a charge of 5.7 target widths, [5.28e-4, 7.20e-4] on
            // the first grid) took 1.1 s in double-double powers instead of 0.2 s. A lower
            // end still at 0 is the grid's: Poisson-sampled Laplace noise whose losses lie
            // within ±4.3e-6 nats, 158,384 runs, δ 1e-10 gets its lower end (0.008238) from
            // this pass refined to 8.5e-8 nats, finer than the retry's powers reach. Not
            // where the retry also changes the events' PLDs (random allocation's tilted
            // split), which may be the looser: 3 epochs of 2-out-of-50 at σ 1.5, δ 3e-12 gave
            // an upper end of 2.601128 against 2.600082 from this pass refined. Nor while
            // the charge is below the bracket's own width: the grid, not round-off, holds
            // that bracket, and a coarse first grid's charge says little about the finer
            // grids' (a Poisson-sampled discrete Gaussian, σ 1.6, q 1e-3, 2295 runs, δ 1e-12:
            // 123 target widths on the first grid, [0.121, 0.378], but 0.4 on every finer
            // one; the retry doubled the time, 0.41 → 0.81 s. σ 0.867, q 3.19e-5, 119,717
            // steps, δ 1e-8: 3.0 s with the retry, 0.5 s without, both within the tolerance).
            let tilted_stall = tilts > 0
                && !reaching
                && reach_may_follow
                && bracket.lower > 0.0
                && width >= 10.0 * wanted
                && self.reaching_may_help()
                && !self.plan.has_tilted_split()
                && (share.is_nan() || (share >= 1.0 && width_share >= 1.0));
            let this_grid = FirstGrid {
                step,
                tail_mass,
                roundoff_mass,
                charge_matters: share >= 0.1,
            };
            let futile_retry =
                first_grid.is_none() && retry_of.is_some_and(|before| before.futile(&this_grid));
            let first_grid = *first_grid.get_or_insert(this_grid);
            let stalled = !met
                && (tilted_stall
                    || futile_retry
                    || (tilts == 0 && (share.is_nan() || share >= 1.0 || round_off_stall)));
            // Finer grids that did not narrow the bracket by a tenth: the width is not the
            // grid's (a lower bound that is loose by nature, e.g. shuffling, or a floor of the
            // tails), and finer grids would only cost more. Once is enough when the plan has
            // such a lower bound; otherwise twice in a row (a lower bound off the lattice
            // can stall for one refinement and then converge). A cost rule only: every
            // bracket returned is guaranteed whatever the grid.
            stalls = if not_narrowing { stalls + 1 } else { 0 };
            // Heavy atoms off the lattice make the lower end jump about with the grid (how
            // near each lands to a grid point) and stay put while a composite atom near the
            // answer is off by more than the step: they get a third chance.
            // So do the lower ends of heavy-tailed random allocations, which move when the
            // grid lets their lattice follow it (σ 0.6, t 100, five epochs, δ 1e-10: 10.0760
            // at grid steps 0.02 to 0.008, 10.0820 at 0.005).
            let erratic = self.plan.has_heavy_atoms() || self.plan.has_heavy_tailed_allocation();
            // A refinement that did not narrow the bracket and moved both ends of its own
            // bracket outwards is not converging either: the bounds are limited by something
            // a finer grid makes worse (60 epochs of random allocation, σ 1.1, t 235,
            // δ(2.34): [9.637771e-6, 9.639919e-6] at a step of 4.1e-4, then [9.636978e-6,
            // 9.639981e-6] at 2.6e-4 and [9.635027e-6, 9.640837e-6] at 1.7e-4, 7.6 s for the
            // last). Not for erratic plans, whose ends jump about with the grid.
            let patience = if self.plan.loose_by_nature() || (outwards && !erratic) {
                1
            } else if erratic {
                3
            } else {
                2
            };
            // A plan whose lower end may be loose whatever the grid (by nature, or truncated
            // Poisson sampling: `Plan::lower_may_be_loose`), once finer grids can no longer
            // help: the upper end has settled (what the last refinement moved it,
            // extrapolated like h², leaves under a twentieth of the target width to gain; the
            // extrapolation matched the finer grids within 3% in the mixes measured) and the
            // lower end, extrapolated like h (a generous guess), stays more than two target
            // widths below it. Finer grids would only move the lower end towards a floor the
            // tolerance cannot reach. (An exponential mechanism run 66 times beside one epoch
            // of random allocation, σ 1.17, t 16, δ 1e-12: refined to 1.7e-5 nats, 16 s and
            // 1 GB, for [3.655367, 3.862877]; it stops at 1.7e-3 nats in 1.6 s with
            // [3.621938, 3.863012], the upper end 0.035 target widths above.)
            // Not when heavy atoms off the lattice moved the lower end down: it jumps about
            // with the grid there, and a fall says nothing of its floor. (Discrete Laplace
            // noise run 822 times and a discrete Gaussian 69 times beside 58 steps of
            // truncated Poisson sampling, δ 0.1: the lower end fell from 450.045 to 450.013
            // refining 1e-2 to 2.8e-3 nats and stopped there, 2.3 target widths wide; on
            // 3e-4 it is 451.053, within the tolerance.)
            let upper_settled = self.plan.lower_may_be_loose()
                && !met
                && match (prior_own, last_grid) {
                    (Some(prior), Some(_)) if erratic && own_lower < prior.lower => false,
                    (Some(prior), Some((last_step, _))) if last_step > step => {
                        let r = step / last_step;
                        let upper_left = (prior.upper - own_upper).abs() * r * r / (1.0 - r * r);
                        let lower_left = (own_lower - prior.lower).max(0.0) * r / (1.0 - r);
                        upper_left <= wanted / 20.0
                            && own_upper - upper_left - (own_lower + lower_left) > 2.0 * wanted
                    }
                    _ => false,
                };
            let converged = !met && (stalls >= patience || upper_settled);
            let give_up = fixed.is_some()
                || met
                || !width.is_finite()
                || refinements >= MAX_REFINEMENTS
                || converged
                || size_limited;
            // With heavy atoms, after a refinement that did not narrow the bracket, a step at
            // most half the last (then a quarter, an eighth): a lower end that jumps about, or
            // that was lucky on an earlier grid, is then not taken for one that stopped
            // converging after a step barely finer. (Halving after a stall for every plan
            // measured no better: as many queries lost their tolerance on a new path as
            // gained it.)
            let largest_factor = if erratic && stalls > 0 {
                0.5f64.powi(stalls.min(3))
            } else {
                0.8
            };
            // A width narrowing like h² from this grid's step; or, after a refinement that
            // did not narrow the bracket while the upper end is the finer upper grid's, from
            // that grid's step: refining this grid then narrows only the lower end, and the
            // width is the upper end's (at rates far below the step the lower end can be
            // tight on grids where the upper is not: σ 0.645, q 1.17e-5, 238,482 steps,
            // δ 1e-12 refined 4e-4 to 3.2e-4 to 2.56e-4 nats under an upper end from 1e-4
            // and stopped "not narrowing", 1.34e-3 wide against 1.04e-3).
            let scale_step = if stalls > 0 && upper_step < step && bracket.upper == own_upper {
                upper_step
            } else {
                step
            };
            // The width's order in the step, measured from the last refinement when it
            // narrowed the bracket, between 1 and 2 (2 until measured). At rates far below the
            // step the upper end converges about like h (σ 0.3, q 1e-9, 10⁶ steps, δ 1e-5:
            // 9.7e-4, 4.0e-4, 2.0e-4 wide at 1.9e-4, 6.9e-5, 3.3e-5 nats), and refinements
            // sized for h² took six grids, 1.8 s, where this takes four.
            let order = match last_grid {
                Some((last_step, last_width)) if last_step > step && last_width > width => {
                    ((last_width / width).ln() / (last_step / step).ln()).clamp(1.0, 2.0)
                }
                _ => 2.0,
            };
            let shrink = if order == 2.0 {
                (wanted / width).sqrt()
            } else {
                (wanted / width).powf(order.recip())
            };
            let wanted_next = self
                .plan
                .aligned_step(scale_step * (0.95 * shrink).clamp(0.1, largest_factor));
            // The next step when the events' ranges are judged at `range_tail`, and whether
            // the grid size limits stop there.
            let most_points = if width <= NEAR_TOLERANCE * wanted {
                MAX_REFINED_POINTS_NEAR
            } else {
                MAX_REFINED_POINTS
            };
            let next_at = |range_tail: Option<f64>| -> (f64, bool) {
                let mut next = wanted_next;
                // In the retry with double-double powers (`reaching`), a grid whose composed
                // PMFs they can still hold refines first only as far as they reach (a
                // twentieth to spare): past them the round-off they removed comes back, and
                // refinements clamped to 1/10 of the step went past at once (σ 0.802,
                // q 2.51e-5, 3704 steps, δ 1e-12: [0.13689, 0.15161] at 3.1e-6 nats,
                // stopped by the memory budget, where 6.6e-6 gives [0.151568, 0.151571]).
                let double_double = if reaching && points <= DOUBLE_DOUBLE_MAX_PERIOD {
                    step * points as f64 / (0.95 * DOUBLE_DOUBLE_MAX_PERIOD as f64)
                } else {
                    0.0
                };
                // A refinement the memory budget, the grid size limits or (in that retry) the
                // double-double powers cannot hold: the finest step that fits, if it is still
                // a refinement (memory and composed grids grow like 1/step): by a fifth at
                // least, or by less when a bracket
                // narrowing like h² would meet the tolerance there (σ 2, q 1e-3, 10⁸ steps
                // stopped 0.03631 wide against 0.03622 at a step of 3.75e-5 nats; at
                // 3.53e-5, which fits, 0.03265).
                let fitting = (step * bytes / budget)
                    .max(step * points as f64 / most_points as f64)
                    .max(self.plan.finest_fitting_step(range_tail, tail_mass))
                    .max(double_double);
                let meets_at = |s: f64| width * (s / step).powi(2) <= wanted;
                let worth_it = fitting <= 0.8 * step
                    || (FITTING_MARGIN * fitting < step && meets_at(FITTING_MARGIN * fitting));
                if next < fitting && worth_it {
                    let aligned = self.plan.aligned_step(fitting * FITTING_MARGIN);
                    next = if aligned >= fitting {
                        aligned
                    } else {
                        fitting * FITTING_MARGIN
                    };
                }
                // The composed grids grow like 1/step: stop before one would exceed the limits.
                let too_large = points as f64 * (step / next) > most_points as f64
                    || !self.plan.fits(next, range_tail, tail_mass);
                (next, too_large)
            };
            let (mut next, mut too_large) = next_at(range_tail);
            // A δ(ε) query's next grid: once merging has started, with the budget of the
            // bracket so far; before, only when the unmerged ranges would stop or hold back
            // the refinement (where they do not, merging would only move δ: queries whose
            // brackets stall for other reasons took twice as long on the finer grids the
            // truncated ranges allowed, for nothing).
            if let TailMerging::FromLowerDelta = merging {
                let candidate = merging.budget(&self.plan, best);
                let merged_range = self::range_tail(tail_mass, candidate);
                let (merged_next, merged_too_large) = next_at(merged_range);
                let limited = too_large || merged_next < next;
                if merge_budget > 0.0 || (candidate > 0.0 && limited && !give_up && !stalled) {
                    merge_budget = candidate;
                    range_tail = merged_range;
                    (next, too_large) = (merged_next, merged_too_large);
                }
            }
            let over_budget = bytes * (step / next)
                + self.plan.lattice_bytes(next, tail_mass, &self.epoch_laws)
                > budget;
            if give_up || too_large || over_budget || stalled {
                // The finer upper grid of `upper_grid_step` (cheap grids only): computed beside
                // a refined grid above, else now that this grid met the tolerance (unless its
                // bracket is already a thousand times narrower than wanted). Its upper bound
                // was merged above when computed there; here it is merged and named.
                let finer = match (met, fixed, fine_tried) {
                    (_, _, true) => fine_upper,
                    (true, None, false) if bracket.width() > wanted / 1000.0 => self
                        .cheap_finer_step(step, range_tail, tail_mass, points, bytes)
                        .and_then(|fine_step| {
                            self.upper_only(grid, fine_step, add_upper, &query, &charged, &target)
                        }),
                    // (Likewise when the upper end has settled above a lower end loose by
                    // nature: the upper end is the answer.)
                    (false, None, false) if upper_settled => self
                        .cheap_finer_step(step, range_tail, tail_mass, points, bytes)
                        .and_then(|fine_step| {
                            self.upper_only(grid, fine_step, add_upper, &query, &charged, &target)
                        }),
                    _ => None,
                };
                let (bracket, upper_grid_step, worse_direction) = match finer {
                    Some(fine) if fine.upper <= bracket.upper => (
                        Bracket {
                            upper: fine.upper,
                            ..bracket
                        },
                        Some(fine.step),
                        fine.worse_direction,
                    ),
                    _ => (bracket, None, worse_direction),
                };
                let (width, wanted) = (bracket.width(), target(&bracket));
                let stopped_by = if met || fixed.is_some() || !width.is_finite() {
                    None
                } else if stalled {
                    Some("round-off")
                } else if upper_settled && stalls < patience {
                    Some("upper end converged")
                } else if converged || ((too_large || size_limited) && !over_budget && stalls > 0) {
                    // (Also when the grid size stops a refinement right after one that did
                    // not narrow the bracket: that, not the size, is what the user can act
                    // on.)
                    Some("not narrowing")
                } else if too_large || size_limited {
                    // (Before the memory budget: where both stop the refinement, a larger
                    // budget would not let it go on. A sampled discrete Gaussian, σ 1, q 0.01,
                    // 5000 runs, δ(4.202): "memory budget" at a peak of 103 MiB of 2 GiB, and
                    // "grid size limit" with 16 GB.)
                    Some("grid size limit")
                } else if over_budget {
                    Some("memory budget")
                } else if refinements >= MAX_REFINEMENTS {
                    Some("refinement limit")
                } else {
                    None
                };
                return Ok((
                    bracket,
                    Settings {
                        method: "pld".into(),
                        grid_step: Some(step),
                        tail_mass: Some(tail_mass),
                        refinements,
                        tolerance: self.options.tolerance,
                        bracket_width: width,
                        target_width: wanted,
                        tolerance_met: met && width <= wanted,
                        worse_direction: worse_direction.into(),
                        stopped_by: stopped_by.map(Into::into),
                        upper_method: None,
                        lower_method: None,
                        upper_grid_step,
                    },
                    roundoff_mass,
                    first_grid,
                ));
            }
            // A δ(ε) query's next grids are truncated for the δ the bracket now bounds from
            // below (unless the options fix the truncation): the first grid's truncation,
            // chosen before δ was known, is far below what the tolerance needs, and it set
            // the lattices of random allocation so wide that they hit their size limit, and
            // their lower ends stopped converging (20 epochs of σ 1.1, t 235, δ(1): [2.076331e-4,
            // 2.076722e-4], not met, 25 s and 1 GB; at a truncation of 1e-14, [2.076575e-4,
            // 2.076769e-4], met, in 2 s). Only ever raised, to at most an ε(δ) query's default.
            if let (TailMerging::FromLowerDelta, None) = (merging, self.options.tail_mass) {
                let raised = best
                    .and_then(|b| self.plan.delta_query_truncation(b.lower))
                    .map_or(tail_mass, |t| t.min(DEFAULT_TAIL_MASS));
                if raised > tail_mass {
                    tail_mass = raised;
                    range_tail = self::range_tail(tail_mass, merge_budget);
                }
            }
            last_grid = Some((step, width));
            step = next;
            refinements += 1;
        }
    }
}

mod allocation;
mod cache;
mod filters;
mod heap_priming;
pub(crate) mod infinite_loss;
mod ledger;
mod parallel;
mod plan;
mod profile;
mod settings;
mod shuffle;

use cache::{GridKey, PldCache, Source};
pub use filters::{GdpFilter, RdpFilter, FILTER_ORDERS};
use infinite_loss::{infinite_loss_floor, InfiniteLossFloor};
pub use ledger::{Budget, Ledger, LEDGER_FORMAT_VERSION};
use parallel::parallel_map;
use plan::{Component, Plan, TRUNCATION_SHARE};
pub use profile::{DeltaProfile, PROFILE_REFERENCE_DELTA};
pub use settings::{
    AccountantOptions, DeltaAnswer, EpsilonAnswer, Settings, Tolerance, DEFAULT_MEMORY_BUDGET,
    DEFAULT_UPPER_GRID_STEP, MIN_MEMORY_BUDGET,
};
use std::sync::Arc;

/// Start the pool of evaluation threads now, ahead of the first [`Accountant`] (which
/// otherwise starts it): a program that knows it will account soon (the `pld` binary, before
/// it parses its arguments) gives the threads time to settle before the first query needs
/// them. Cheap after the first call; nothing to do on a machine with one thread. Like the first
/// [`Accountant::new`], it also allocates and frees one 4 MiB block, once per process, so
/// that glibc's allocator keeps the memory a query frees for the next one instead of
/// faulting it in again (see the source file `src/accountant/heap_priming.rs`).
pub fn start_evaluation_threads() {
    parallel::warm_up();
    heap_priming::prime_heap();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunks divide the count when a divisor down to half the largest chunk exists.
    #[test]
    fn chunks_divide_the_count_when_they_can() {
        assert_eq!(chunk_dividing(1000, 360), 250);
        assert_eq!(chunk_dividing(100_000, 360), 250);
        assert_eq!(chunk_dividing(720, 360), 360);
        assert_eq!(chunk_dividing(1001, 360), 360);
        assert_eq!(chunk_dividing(7919, 71), 71);
        assert_eq!(chunk_dividing(4 * 37, 71), 37);
        for count in [361, 1000, 1001, 65_537, 1_000_000_007] {
            for largest in [2, 3, 71, 360] {
                let chunk = chunk_dividing(count, largest);
                assert!(
                    chunk <= largest && 2 * chunk >= largest,
                    "{count} {largest}: {chunk}"
                );
                assert!(
                    count % chunk == 0 || chunk == largest,
                    "{count} {largest}: {chunk}"
                );
            }
        }
    }

    /// A retry that only shrinks round-off is taken after a pass stopped by round-off, one
    /// that lost its bracket, or one whose charge is at least a tenth of the width to lose;
    /// not after a pass that refined as far as it could with a charge far below that.
    #[test]
    fn a_retry_for_round_off_is_taken_only_where_it_may_meet_the_target() {
        let limited = Some("grid size limit");
        assert!(retry_may_meet(1e-20, 1e-12, 1e-15, Some("round-off")));
        assert!(retry_may_meet(1e-20, f64::INFINITY, f64::INFINITY, limited));
        assert!(retry_may_meet(f64::NAN, 1e-12, 1e-15, limited));
        assert!(retry_may_meet(2e-13, 1e-12, 1e-15, limited));
        assert!(retry_may_meet(2e-13, 1e-12, 1e-15, None));
        assert!(!retry_may_meet(1e-16, 1e-12, 1e-15, limited));
        assert!(!retry_may_meet(1e-16, 1e-12, 1e-15, Some("memory budget")));
        assert!(!retry_may_meet(1e-16, 1e-12, 1e-15, None));
    }

    /// A retry's first grid is futile after the pass before only on the same grid and
    /// truncation, where the pass before's charge mattered, and when the retry did not halve
    /// that charge; an unknown (NaN) charge never is.
    #[test]
    fn a_retry_is_futile_only_where_it_did_not_halve_a_charge_that_mattered() {
        let before = FirstGrid {
            step: 1e-2,
            tail_mass: 1e-24,
            roundoff_mass: 8.66e-13,
            charge_matters: true,
        };
        let retry = |roundoff_mass: f64| FirstGrid {
            roundoff_mass,
            charge_matters: true,
            ..before
        };
        assert!(before.futile(&retry(8.66e-13)));
        assert!(before.futile(&retry(0.5 * 8.66e-13)));
        assert!(!before.futile(&retry(0.49 * 8.66e-13)));
        assert!(!before.futile(&retry(f64::NAN)));
        assert!(!before.futile(&FirstGrid {
            step: 5e-3,
            ..retry(8.66e-13)
        }));
        assert!(!before.futile(&FirstGrid {
            tail_mass: 1e-20,
            ..retry(8.66e-13)
        }));
        let small = FirstGrid {
            charge_matters: false,
            ..before
        };
        assert!(!small.futile(&retry(8.66e-13)));
        let unknown = FirstGrid {
            roundoff_mass: f64::NAN,
            charge_matters: false,
            ..before
        };
        assert!(!unknown.futile(&retry(8.66e-13)));
    }

    /// A random allocation epoch's laws on its lattices are kept by the accountant (both
    /// bounds), so that the grids and queries that share a lattice compute it once; a later
    /// query answers as a fresh accountant does.
    #[test]
    fn random_allocation_laws_are_kept_across_grids_and_queries() {
        let spec = CompositionSpec::from_json_str(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1.5, "count": 5,
                "sampling": {"random_allocation": {"steps_per_epoch": 100}}}]}"#,
        )
        .expect("valid");
        let accountant = Accountant::new(&spec, AccountantOptions::default()).expect("valid");
        assert!(accountant.epoch_laws.is_empty());
        let first = accountant.epsilon_for_delta(1e-5).expect("answers");
        assert!(
            accountant.epoch_laws.len() >= 2,
            "{:?}",
            accountant.epoch_laws
        );
        let fresh = Accountant::new(&spec, AccountantOptions::default()).expect("valid");
        for delta in [1e-5, 1e-7] {
            let again = accountant.epsilon_for_delta(delta).expect("answers");
            let afresh = fresh.epsilon_for_delta(delta).expect("answers");
            assert_eq!(again.epsilon, afresh.epsilon, "δ {delta}");
        }
        assert!(first.settings.tolerance_met, "{:?}", first.settings);
    }

    /// A tolerance no grid meets (1e-20 of ε) at δ below the tilting threshold: the tilted
    /// pass stops at the memory budget with a round-off charge far below its width, and no
    /// retry with reaching powers follows (none is in the cache), whether ε(δ) or δ(ε) was
    /// asked; the bracket is still the true ε's (the answer of a fine fixed grid lies in it).
    #[test]
    fn an_unreachable_tolerance_is_not_retried_for_round_off() {
        let spec = CompositionSpec::dp_sgd(1.0, 0.01, 1000, 1.0).expect("valid");
        let options = AccountantOptions {
            tolerance: Tolerance {
                relative: 1e-20,
                absolute_epsilon: 1e-21,
                relative_delta: 1e-20,
                absolute_delta: 1e-300,
            },
            memory_budget: Some(MIN_MEMORY_BUDGET),
            ..AccountantOptions::default()
        };
        let delta = 1e-8;
        let cache = Arc::new(PldCache::default());
        let accountant = Accountant::new(&spec, options)
            .expect("valid")
            .with_cache(Arc::clone(&cache), None);
        let answer = accountant.epsilon_for_delta(delta).expect("answers");
        assert!(!answer.settings.tolerance_met, "{:?}", answer.settings);
        assert_eq!(cache.reaching_powers(), 0, "{:?}", answer.settings);
        let fixed = Accountant::new(
            &spec,
            AccountantOptions {
                grid_step: Some(2e-4),
                memory_budget: None,
                ..options
            },
        )
        .expect("valid")
        .epsilon_for_delta(delta)
        .expect("answers");
        assert!(
            answer.epsilon.lower <= fixed.epsilon.upper
                && fixed.epsilon.lower <= answer.epsilon.upper,
            "{:?} against {:?}",
            answer.epsilon,
            fixed.epsilon
        );
        let cache = Arc::new(PldCache::default());
        let accountant = Accountant::new(&spec, options)
            .expect("valid")
            .with_cache(Arc::clone(&cache), None);
        let answer = accountant
            .delta_for_epsilon(answer.epsilon.upper)
            .expect("answers");
        assert!(!answer.settings.tolerance_met, "{:?}", answer.settings);
        assert_eq!(cache.reaching_powers(), 0, "{:?}", answer.settings);
        assert!(answer.delta.lower <= delta, "{:?}", answer.delta);
    }

    /// δ of the ε queries the evaluation tests ask.
    const DELTA: f64 = 1e-5;

    /// An accountant for DP-SGD σ 1, q 0.01, 10³ steps (with `grid_step` fixed or not), and
    /// the grid of step `step` an ε query at [`DELTA`] evaluates without tilts.
    fn dp_sgd_accountant_and_grid(grid_step: Option<f64>, step: f64) -> (Accountant, Grid) {
        let spec = CompositionSpec::dp_sgd(1.0, 0.01, 1000, 1.0).expect("valid");
        let options = AccountantOptions {
            grid_step,
            ..AccountantOptions::default()
        };
        let accountant = Accountant::new(&spec, options).expect("valid");
        let grid = Grid {
            step,
            tail_mass: 1e-14,
            tilts: 0,
            merge_budget: accountant.plan.merge_budget(DELTA),
            reaching: false,
        };
        (accountant, grid)
    }

    /// `Accountant::pld`, whose PMFs are computed side by side, holds exactly the PMFs
    /// computed one at a time: both bounds and directions on the grid, and the lower ones
    /// on every coarser grid, in order.
    #[test]
    fn the_bracketed_pld_holds_each_grids_own_pmfs() {
        let spec = CompositionSpec::dp_sgd(1.0, 0.05, 30, 1.0).expect("valid");
        let accountant = Accountant::new(&spec, AccountantOptions::default()).expect("valid");
        let (step, tail_mass) = (0.05, 1e-12);
        assert!(!accountant.plan.is_symmetric());
        let pld = accountant.pld(step, tail_mass).expect("composes");
        let alone = |bound, direction, step| {
            let grid = Grid {
                step,
                tail_mass,
                tilts: 0,
                merge_budget: 0.0,
                reaching: false,
            };
            accountant
                .composed(bound, direction, grid)
                .expect("composes")
                .0
        };
        assert_eq!(
            *pld.upper.remove(),
            alone(Bound::Upper, Direction::Remove, step)
        );
        assert_eq!(*pld.upper.add(), alone(Bound::Upper, Direction::Add, step));
        assert_eq!(
            *pld.lower.remove(),
            alone(Bound::Lower, Direction::Remove, step)
        );
        assert_eq!(*pld.lower.add(), alone(Bound::Lower, Direction::Add, step));
        let coarser = coarser_steps(step);
        assert_eq!(coarser, vec![0.1, 0.2, 0.4, 0.8]);
        assert_eq!(pld.coarser_lowers.len(), coarser.len());
        for (lower, &coarse) in pld.coarser_lowers.iter().zip(&coarser) {
            assert_eq!(
                *lower.remove(),
                alone(Bound::Lower, Direction::Remove, coarse)
            );
            assert_eq!(*lower.add(), alone(Bound::Lower, Direction::Add, coarse));
        }
    }

    /// `accountant`'s evaluation of ε([`DELTA`]) on `grid`, read as an ε query reads, with a
    /// tolerance of 1e-3 of the upper end (which the coarser lower grids of a fixed step
    /// meet: the grid h's own lower bound is not computed).
    fn evaluate_epsilon(accountant: &Accountant, grid: Grid) -> Evaluation {
        let query = |pmf: &GridPmf| pmf.epsilon_for_delta(DELTA);
        let charged = |pmf: &GridPmf, epsilon: f64| pmf.charged_at(epsilon);
        let wanted = |b: &Bracket| 1e-3 * b.upper;
        let range = |b: &Bracket| (b.lower, 0.5 * (b.lower + b.upper));
        let read_from = ReadFrom {
            range: &range,
            delta: Some(DELTA),
        };
        let ends = Ends::Both;
        accountant
            .evaluate(grid, &query, &charged, &wanted, None, ends, Some(read_from))
            .expect("evaluates")
    }

    /// A fixed grid step h reads its lower end from the grids 16h and 2h (those ≤ 1 nat):
    /// on DP-SGD, the evaluated bracket's lower end is exactly the larger of REMOVE's lower
    /// bounds on those two grids, computed apart.
    #[test]
    fn a_fixed_step_reads_its_lower_end_from_the_grids_16h_and_2h() {
        assert_eq!(lower_end_steps(1e-4), vec![16.0 * 1e-4, 2.0 * 1e-4]);
        assert_eq!(lower_end_steps(0.1), vec![0.2]);
        assert!(lower_end_steps(0.6).is_empty());
        let (accountant, grid) = dp_sgd_accountant_and_grid(Some(1e-4), 1e-4);
        let query = |pmf: &GridPmf| pmf.epsilon_for_delta(DELTA);
        let wanted = |b: &Bracket| 1e-3 * b.upper;
        let evaluation = evaluate_epsilon(&accountant, grid);
        let lower_on = |step: f64| {
            accountant
                .composed(Bound::Lower, Direction::Remove, Grid { step, ..grid })
                .map(|(pmf, _)| query(&pmf))
                .expect("composes")
        };
        let (coarse, fine) = (lower_on(16e-4), lower_on(2e-4));
        assert!(fine > coarse, "2h {fine} not above 16h {coarse}");
        assert_eq!(evaluation.bracket.lower, coarse.max(fine));
        assert!(evaluation.bracket.upper >= evaluation.bracket.lower);
        assert!(evaluation.bracket.width() <= wanted(&evaluation.bracket));
    }

    /// At a fixed step, REMOVE's lower bound on 16h (the anchor a tilted upper power reads)
    /// is computed only where the tilt is predicted to pay: on DP-SGD σ 1, q 0.01 at
    /// h = 1e-4, δ = 1e-5, at 10⁴ steps and not at 10³ (always for δ(ε) queries). The PLD the
    /// prediction discretized gives ADD's check the plain composition's PMF bit for bit, and
    /// without the anchor the bracket is the plain power's upper end and the grid 2h's lower
    /// end, bit for bit.
    #[test]
    fn the_anchor_is_computed_only_where_the_tilt_is_predicted_to_pay() {
        let range = |b: &Bracket| (b.lower, 0.5 * (b.lower + b.upper));
        let epsilon_query = ReadFrom {
            range: &range,
            delta: Some(DELTA),
        };
        let delta_query = ReadFrom {
            range: &range,
            delta: None,
        };
        for (steps, predicted) in [(1000, false), (10_000, true)] {
            let spec = CompositionSpec::dp_sgd(1.0, 0.01, steps, 1.0).expect("valid");
            let options = AccountantOptions {
                grid_step: Some(1e-4),
                ..AccountantOptions::default()
            };
            let accountant = Accountant::new(&spec, options).expect("valid");
            let anchor_grid = Grid {
                step: 16e-4,
                tail_mass: 1e-14,
                tilts: 0,
                merge_budget: accountant.plan.merge_budget(DELTA),
                reaching: false,
            };
            let prepared = std::sync::OnceLock::new();
            let decision = accountant.tilt_predicted(epsilon_query, anchor_grid, &prepared);
            assert_eq!(decision, predicted, "{steps} steps");
            let unused = std::sync::OnceLock::new();
            assert!(accountant.tilt_predicted(delta_query, anchor_grid, &unused));
            assert!(
                unused.get().is_none(),
                "δ(ε): nothing discretized to predict"
            );
            let pld = prepared.get().expect("discretized for the prediction");
            let (check, _) = accountant
                .single_event_composed(pld, Bound::Upper, Direction::Add, anchor_grid, None)
                .expect("composes");
            let (plain, _) = accountant
                .composed(Bound::Upper, Direction::Add, anchor_grid)
                .expect("composes");
            assert_eq!(check, plain, "{steps} steps");
        }
        let (accountant, grid) = dp_sgd_accountant_and_grid(Some(1e-4), 1e-4);
        let query = |pmf: &GridPmf| pmf.epsilon_for_delta(DELTA);
        let evaluation = evaluate_epsilon(&accountant, grid);
        let plain = |bound, step| {
            accountant
                .composed(bound, Direction::Remove, Grid { step, ..grid })
                .map(|(pmf, _)| query(&pmf))
                .expect("composes")
        };
        assert_eq!(evaluation.bracket.upper, plain(Bound::Upper, 1e-4));
        assert_eq!(evaluation.bracket.lower, plain(Bound::Lower, 2e-4));
    }

    /// [`Ends::BesideFiner`] on DP-SGD (REMOVE the worse direction): with ADD's check on the
    /// finer grid's check grid, the lower end is a full evaluation's, ADD's bound is at most
    /// it (so REMOVE's upper bound on the finer grid bounds the answer) and the upper end is
    /// left to the finer grid; with a check too coarse to settle ADD, the evaluation is done
    /// in full, with the full evaluation's bracket.
    #[test]
    fn beside_the_finer_grid_the_lower_end_and_add_bound_are_a_full_evaluations() {
        let (accountant, grid) = dp_sgd_accountant_and_grid(None, 1e-3);
        let query = |pmf: &GridPmf| pmf.epsilon_for_delta(DELTA);
        let charged = |pmf: &GridPmf, epsilon: f64| pmf.charged_at(epsilon);
        let wanted = |_: &Bracket| 0.0;
        let evaluate = |ends| {
            accountant
                .evaluate(grid, &query, &charged, &wanted, None, ends, None)
                .expect("evaluates")
        };
        let full = evaluate(Ends::Both);
        assert!(full.bracket.upper.is_finite() && full.bracket.lower > 1.8);
        let beside = evaluate(Ends::BesideFiner {
            add_check_step: ADD_CHECK_COARSENING * 1e-4,
        });
        assert_eq!(beside.bracket.upper, f64::INFINITY);
        assert_eq!(beside.bracket.lower, full.bracket.lower);
        assert_eq!(beside.worse_direction, "remove");
        let add = beside.add_upper.expect("DP-SGD is asymmetric");
        assert!(
            add <= beside.bracket.lower,
            "{add} above {}",
            beside.bracket.lower
        );
        // ADD's bound is an upper bound: above ADD's own lower bound on this grid.
        let add_lower = accountant
            .composed(Bound::Lower, Direction::Add, grid)
            .map(|(pmf, _)| query(&pmf))
            .expect("composes");
        assert!(
            add >= add_lower,
            "{add} below ADD's lower bound {add_lower}"
        );
        let coarse = evaluate(Ends::BesideFiner {
            add_check_step: 0.5,
        });
        assert!(coarse.bracket.upper.is_finite(), "done in full");
        assert_eq!(coarse.bracket, full.bracket);
        assert_eq!(coarse.worse_direction, full.worse_direction);
    }
}
