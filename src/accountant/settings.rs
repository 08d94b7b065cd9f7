//! What the caller asks for (tolerance, options) and what the accountant answers (brackets
//! with the settings that produced them).

use crate::bound::Bracket;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// How tight the bracket must be.
///
/// An ε bracket is accepted when `upper − lower ≤ max(relative·upper, absolute_epsilon)`;
/// a δ bracket when `upper − lower ≤ max(relative_delta·upper, absolute_delta)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
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

impl Tolerance {
    /// The default tolerance with ε brackets `relative` wide: the absolute width for small
    /// ε scales with it (`relative / 10`, as in the default 1e-3 and 1e-4), so asking for a
    /// tighter relative width is never capped by the absolute one.
    pub fn epsilon_relative(relative: f64) -> Tolerance {
        Tolerance {
            relative,
            absolute_epsilon: relative / 10.0,
            ..Tolerance::default()
        }
    }
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

/// Memory an accountant plans to stay within by default: 2 GiB (see
/// [`AccountantOptions::memory_budget`]).
pub const DEFAULT_MEMORY_BUDGET: u64 = 2 << 30;

/// Smallest memory budget accepted: 16 MiB (a grid of a few hundred thousand points).
pub const MIN_MEMORY_BUDGET: u64 = 16 << 20;

/// Default of [`AccountantOptions::upper_grid_step`]: 1e-4 nats, the grid step Google's
/// dp_accounting uses by default (`value_discretization_interval`), so that a default upper
/// bound is never looser than its default answer (on the same connect-the-dots rounding, a
/// grid at least as fine gives an upper bound at least as tight, up to rounding).
pub const DEFAULT_UPPER_GRID_STEP: f64 = 1e-4;

/// Accountant settings. `Default` gives the accuracy-driven behaviour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AccountantOptions {
    /// Target bracket width.
    pub tolerance: Tolerance,
    /// Fixed grid step in nats (disables refinement).
    pub grid_step: Option<f64>,
    /// Fixed truncation mass per truncation (default: for ε(δ), 1e-14, or 1e-9·δ if
    /// smaller; for δ(ε), 1e-20 on the first grid, then 1e-9·δ over the number of events
    /// for the δ the bracket bounds from below, rounded down to a power of ten, at most
    /// 1e-14).
    pub tail_mass: Option<f64>,
    /// Bytes the grids of one evaluation may hold (default [`DEFAULT_MEMORY_BUDGET`], at
    /// least [`MIN_MEMORY_BUDGET`]). The accountant estimates the memory of a grid before
    /// computing on it (from the previous grid's measured sizes, or from the events' loss
    /// ranges for the first one): a refinement that would exceed the budget is not made, and
    /// the bracket of the last grid is returned with its tolerance not met
    /// ([`Settings::stopped_by`] = `"memory budget"`); a first grid that would exceed it is
    /// coarsened. A fixed grid step over the budget is an [`crate::Error::MemoryBudget`].
    /// The estimate is of the accountant's own buffers; the process needs a few MiB more.
    /// Epochs of random allocation and shuffling count too: their lattices take at most half
    /// the budget and the laws kept across grids at most a quarter (see
    /// [`crate::discretize::random_allocation::EpochLaws::within`]); the default budget leaves
    /// them at their maxima.
    pub memory_budget: Option<u64>,
    /// When the grid chosen for the tolerance is coarser than this (nats), the upper bound
    /// is also computed on a grid this fine (default [`DEFAULT_UPPER_GRID_STEP`]), if that
    /// grid is cheap: predicted from the last evaluated grid, at most 2¹⁹ composed points
    /// and 2²¹ points times the number of distinct events, and within the memory budget.
    /// It is computed beside the grid a refinement chooses, or after the first grid when
    /// that one met the tolerance; for compositions of Gaussian noise (sampled or not, at
    /// most four distinct events) first of all, when a probe on a coarse grid predicts it
    /// cheap and its bracket resolves the answer: beside the evaluation of the grid the
    /// probe predicts the tolerance needs. Only the upper end moves, and only down: both
    /// grids' upper bounds are guaranteed, the smaller is kept ([`Settings::upper_grid_step`] says when it came from
    /// the finer grid). Skipped with a fixed [`AccountantOptions::grid_step`], and after a
    /// first grid whose bracket is already a thousand times narrower than the tolerance asks.
    /// `None`: the tolerance alone chooses the grid.
    pub upper_grid_step: Option<f64>,
}

impl Default for AccountantOptions {
    fn default() -> Self {
        AccountantOptions {
            tolerance: Tolerance::default(),
            grid_step: None,
            tail_mass: None,
            memory_budget: None,
            upper_grid_step: Some(DEFAULT_UPPER_GRID_STEP),
        }
    }
}

impl AccountantOptions {
    /// The memory budget in bytes, default applied.
    pub fn memory_budget_bytes(&self) -> u64 {
        self.memory_budget.unwrap_or(DEFAULT_MEMORY_BUDGET)
    }
}

/// How a result was computed, for the JSON output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// `"analytic_gaussian"` (exact closed form), `"pld"` (grid + FFT), or `"closed_form"`:
    /// the closed forms that bound random-allocation or shuffled epochs (`lower_method` and
    /// `upper_method` name them), when the grid could not add to them (the answer lies past
    /// the grid's loss range, or they already meet the tolerance), or every closed form
    /// the composition has when even its first grid exceeds the size limits (`stopped_by`
    /// `"grid size limit"`; lower end 0, or for δ the mass at infinite loss).
    pub method: Cow<'static, str>,
    /// Grid step used (nats): the lower bound's, and the upper bound's unless
    /// `upper_grid_step` names a finer one; absent for the analytic method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid_step: Option<f64>,
    /// Truncation mass per truncation; absent for the analytic method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_mass: Option<f64>,
    /// Number of grid refinements after the first attempt.
    pub refinements: u32,
    /// The tolerance requested.
    pub tolerance: Tolerance,
    /// Width of the bracket returned.
    #[serde(
        serialize_with = "crate::report_number::serialize",
        deserialize_with = "crate::report_number::deserialize"
    )]
    pub bracket_width: f64,
    /// Width the tolerance asked for.
    #[serde(
        serialize_with = "crate::report_number::serialize",
        deserialize_with = "crate::report_number::deserialize"
    )]
    pub target_width: f64,
    /// Whether `bracket_width ≤ target_width`.
    pub tolerance_met: bool,
    /// The neighbouring direction that determines the answer: `"remove"` (the outputs with
    /// the extra record as P) or `"add"`; `"both"` for symmetric compositions.
    pub worse_direction: Cow<'static, str>,
    /// Why the refinement stopped short of the tolerance, when it did and a limit rather
    /// than the grid was the reason: `"memory budget"` (the next grid would exceed
    /// [`AccountantOptions::memory_budget`]), `"round-off"` (a finer grid did not narrow
    /// the bracket and the transforms' round-off bound could explain its width),
    /// `"not narrowing"` (finer grids did not narrow the bracket by a tenth, twice in a row;
    /// three times, each at most half the step of the last, for heavy atoms off the grid's
    /// lattice: its width is not the grid's), `"upper end converged"` (a lower bound loose
    /// by nature, e.g. of a mechanism known only by its guarantee, or truncated Poisson
    /// sampling whose cut steps matter: the upper end has settled
    /// within a twentieth of the target width, extrapolated from the last refinement, and
    /// the lower end stays far below it), `"grid size limit"` (a refinement past
    /// the size limits is first replaced by the finest grid within them),
    /// `"refinement limit"` or, for ε(δ), `"loss range"` (the answer lies past the grid's
    /// loss range of ±600 nats: the grid's lower end stops near 600 nats whatever the grid,
    /// and the upper end is RDP's when every event has an RDP curve) or `"mass at infinite
    /// loss"` (the grid's upper end is past that range too, but its lower end lies far below:
    /// the mass its upper bound charged to +∞ loss, which it could not place, exceeds δ;
    /// random allocation over a few steps below σ 1 is the known case, and the upper end is
    /// then a closed form's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<Cow<'static, str>>,
    /// How the upper bound was computed when not by `method`: `"analytic_gaussian"` when the
    /// composition's upper bound is one Gaussian in closed form while its lower bound needs
    /// the grid (shuffled batches: each epoch's upper bound is an unamplified Gaussian step;
    /// sampled Gaussian steps past the grid's 600-nat loss range, where the grid reads ∞);
    /// `"zcdp_conversion"` when every event has a zCDP guarantee (unsampled: `zcdp`, Gaussian
    /// noise, ε-DP pairs at ε²/2, exponential selections at ε²/8, `eps_delta` with its δ₀ set
    /// aside) and the conversion of the total was below the PLD's upper bound;
    /// `"rdp_conversion"` when every event is known by a guarantee (`zcdp`, `rdp_curve`;
    /// unsampled Gaussians too) and the conversion of the total was below it, and also when
    /// the answer lies past
    /// the grid's 600-nat loss range (the grid's bracket missing its tolerance there) and
    /// every event has an RDP curve; `"optimal_composition"` when every event is ε₀-DP by
    /// its guarantee with one ε₀ (`exponential`, `student_t`, `cauchy`) and the exact
    /// optimal composition of k ε₀-DP mechanisms was below it; the name of a composition
    /// theorem (`"basic_composition"`, `"advanced_composition_drv"`,
    /// `"advanced_composition_tanh"`, `"kov_closed_form"`, `"zcdp_composition"`, as in
    /// [`crate::comparison`]) when every event has an (ε, δ) guarantee and the theorem's ε was
    /// below it (δ(ε): basic composition's Σδᵢ once ε ≥ Σεᵢ), as near the largest loss Σεᵢ,
    /// where the grid's upper end is rounded up by up to a step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper_method: Option<Cow<'static, str>>,
    /// How the lower bound was computed when not by `method`: `"bounded_range_adaptive"` when
    /// every event is an exponential mechanism with one ε and the optimal adaptive
    /// composition's lattice bracket (see [`crate::analytic::bounded_range_optimal`]) raised
    /// it (that bracket may also lower the upper bound: `upper_method` says so);
    /// `"two_output_exponential"` when every event is an exponential mechanism at one ε, too
    /// many for that lattice, and the exact composition of the exponential mechanism over two
    /// outputs (randomized response at ε/2; Kairouz, Oh & Viswanath's sum) raised it;
    /// `"sum_statistic"` when the composition has random-allocation or shuffled epochs and
    /// the Gaussian of their sums (each epoch reporting only the sum of its t outputs, with
    /// the unsampled Gaussians) was the larger lower bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower_method: Option<Cow<'static, str>>,
    /// The grid step (nats) of the upper bound when it came from a grid finer than
    /// `grid_step` (see [`AccountantOptions::upper_grid_step`]); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper_grid_step: Option<f64>,
}

/// The answer to "what ε for this δ?".
///
/// Displayed as `ε ∈ [lower, upper] at δ = 1e-5` (the bracket as [`Bracket`] displays it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpsilonAnswer {
    /// The δ asked about.
    #[serde(
        serialize_with = "crate::report_number::serialize",
        deserialize_with = "crate::report_number::deserialize"
    )]
    pub delta: f64,
    /// Guaranteed bracket on the smallest ε with (ε, δ)-DP.
    pub epsilon: Bracket,
    /// How it was computed.
    pub settings: Settings,
}

/// The answer to "what δ for this ε?".
///
/// Displayed as `δ ∈ [lower, upper] at ε = 2` (the bracket as [`Bracket`] displays it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeltaAnswer {
    /// The ε asked about.
    #[serde(
        serialize_with = "crate::report_number::serialize",
        deserialize_with = "crate::report_number::deserialize"
    )]
    pub epsilon: f64,
    /// Guaranteed bracket on the smallest δ with (ε, δ)-DP.
    pub delta: Bracket,
    /// How it was computed.
    pub settings: Settings,
}

impl Settings {
    pub(super) fn analytic(tolerance: Tolerance, bracket: Bracket, target: f64) -> Settings {
        Settings {
            method: Cow::Borrowed("analytic_gaussian"),
            grid_step: None,
            tail_mass: None,
            refinements: 0,
            tolerance,
            bracket_width: bracket.width(),
            target_width: target,
            tolerance_met: bracket.width().is_finite() && bracket.width() <= target,
            worse_direction: Cow::Borrowed("both"),
            stopped_by: None,
            upper_method: None,
            lower_method: None,
            upper_grid_step: None,
        }
    }
}
