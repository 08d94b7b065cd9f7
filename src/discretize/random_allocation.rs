//! Random allocation ("balls in bins"): in every epoch each record takes part in exactly one
//! of `t` steps, chosen uniformly at random. One epoch's PLD, in both bounds.
//!
//! # The pair
//! With the per-step REMOVE pair (P, Q) of a mechanism and its loss `L = ln(dP/dQ)`, the
//! epoch's REMOVE pair is (Feldman & Shenfeld, "Privacy amplification by random allocation",
//! 2025; for the Gaussian, the record's contribution at full norm in one direction is the
//! worst case)
//! ```text
//! P_t = (1/t)·Σᵢ Q^{⊗(i−1)} ⊗ P ⊗ Q^{⊗(t−i)},        Q_t = Q^{⊗t}
//! ```
//! and its ADD pair the swap. The likelihood ratio is `S/t`, `S = Σᵢ Bᵢ`, with
//! `Bᵢ = e^{L(Xᵢ)}` i.i.d. under Q (`E_Q B = 1`), so both directions are functions of the law
//! of S under Q alone:
//! ```text
//! δ_remove(ε) = E_Q[(S/t − e^ε)₊],        δ_add(ε) = E_Q[(1 − e^ε·S/t)₊]
//! ```
//! both convex in S. The REMOVE PLD has atoms `ln(s/t)` with Q-mass `Q(S = s)` and P-mass
//! `(s/t)·Q(S = s)`.
//!
//! # Upper bound: a mean-preserving spread
//! B, cut at `c` (beyond which the losses of all steps lie with tiny total mass), is replaced
//! by its mean-preserving spread B′ onto the lattice `{jΔ}`: the mass of each cell
//! `[jΔ, (j+1)Δ)` goes to its two ends with weights that keep its first moment,
//! ```text
//! w_{j+1} = (P_I − jΔ·Q_I)/Δ,      w_j = ((j+1)Δ·Q_I − P_I)/Δ      (P_I = E_Q[B; I])
//! ```
//! (`P_I − e^c Q_I` is the mechanism's `excess_between`). B′ dominates B in convex order, so
//! does `S′ = Σ B′ᵢ` dominate S (the order is kept by independent sums), and every convex
//! function of S, every δ of both directions, can only grow. S′ lives on the lattice: its law
//! is the t-fold power of B′'s by FFT. What the computation cannot place is charged to loss
//! +∞ in both directions (P-mass to REMOVE's +∞, Q-mass to ADD's): the event that some step
//! has B > c, the Chernoff-bounded mass outside the power's window; every entry carries its
//! FFT round-off bound on top (more mass never lowers a δ).
//!
//! # Lower bound: a post-processing that lands on the lattice
//! Reporting for each step only which cell of a partition its output fell in is a
//! post-processing; the ratio of the reported vector is `(1/t)·Σᵢ b̄(cellᵢ)`, `b̄` the cell's
//! conditional mean `P(cell)/Q(cell)`. The cells are closed where b̄ lands on a lattice
//! point (within a relative `η` of a few 1e-11, see [`crate::discretize::lumped_atoms`]), so the
//! sum of the reported means is the lattice sum to within that factor, and one t-fold power
//! of the cells' Q-law gives both directions: REMOVE atoms at `ln(s/t)` with P-mass at most
//! `(s/t)·Q(s)`, ADD atoms whose Q-side is at least it. Every mass is taken on the safe side
//! of its round-off and of the mass that may have wrapped around the power's window; tails
//! are dropped. Merging such atoms (the lower rounding onto the grid) stays safe: each merge
//! has at most the P-mass, and at most the loss, of the true pair's merge of the same
//! outcomes.
//!
//! # Round-off in the tails
//! One FFT power bounds every entry's error by about 1e-15 in absolute terms, far above the
//! true values deep in the tails. The power is also taken of the law tilted by `e^{λj}`
//! (saddle points of S's upper quantiles at levels `τ^{1/4}, τ^{1/2}, τ^{3/4}` of the
//! window's), whose entries near the tilted mean are accurate relative to their size;
//! untilted (`× e^{t·ln M(λ) − λs}`), each entry keeps the estimate with the smallest error
//! bound (round-off plus the mass the circular buffer folds onto it, both untilted).
//! Where entries above the mean still carry error bounds over 1e-6 of their values (and
//! over `τ/(8·window)`), further tilts are centred on the lowest of them, up to 16: from its
//! saddle point halving λ up to 8 times, the one whose estimate there is predicted (by the
//! Chernoff bound on the folded mass) to err least. A tilt towards a heavy upper tail leaves
//! much of its mass above the window, so windows up to 2²⁰ entries compute a tilted power
//! over twice their length whenever the circular buffer of their own length would fold
//! more onto some block than the plain power's round-off.
//!
//! The lower tail of S decides ADD's δ. It is light (B ≥ 0), but its entries' absolute
//! round-off, summed over a long window, is not: where the plain power's round-off summed
//! over the window exceeds 10⁶ truncation masses (about 1e-3·δ for an ε(δ) query), three
//! more tilts, with λ < 0, sit at the saddle points of S's lower quantiles at the same
//! levels. One epoch of σ 1.75, t 727: δ_add(0.17) was bracketed in [0, 2.5e-15] (REMOVE's
//! is 6.4e-16), so ε(1e-15) stopped at [0.1685, 0.1804] in 4.8 s; with them,
//! [1.548e-16, 1.550e-16], and ε(1e-15) is [0.168474, 0.168601] in 0.06 s.
//!
//! Without those gap tilts the three quantile levels' tilts coincided for σ 1.1 and 235
//! steps, and between the bulk and the heavy steps (one epoch's δ from 1e-10 to 1e-13)
//! entries kept error bounds up to 30 times their values: one epoch at δ 1e-12 was
//! bracketed in [1.0760, 1.5234], the `mnist-balls-in-bins` preset missed its tolerance at
//! δ 1e-14 and 1e-15, and finer grids made both ends worse. Now the bracket of one epoch
//! there is [1.364715, 1.365338], and the preset's at 1e-15 [4.594983, 4.599141].
//!
//! # Heavy steps
//! B's upper tail is heavy (log-normal for the Gaussian): S's upper tail comes from one large
//! step, which exponential tilts barely reach, and one FFT power's round-off (about 1e-15 per
//! entry over millions of entries) put a floor of 1e-9 to 1e-7 under the upper δ (one epoch
//! of σ = 0.8, t = 1000: ε(1e-8) ≤ 3.98 where the truth is about 0.98). Both bounds
//! therefore split B's lattice law at J into a bulk `b` (j ≤ J) and a heavy tail `g`:
//! ```text
//! (b + g)^{∗t} = b^{∗t} + t·b^{∗(t−1)} ∗ g + C(t,2)·b^{∗(t−2)} ∗ g ∗ g + (more heavy steps)
//! ```
//! J is the lowest point at which the runs with more heavy steps than composed (two for
//! 3 ≤ t < 100, else one) weigh at most `tail_mass/16` under P and Q.
//! The bulk is light-tailed, so its tilted powers are accurate deep into the tail; the
//! one-heavy-step term is an exact convolution whose round-off is scaled by its mass t·|g|;
//! the two-heavy-step term, of mass about (t·|g|)²/2, is computed on a coarser lattice
//! (mean-preserving spreads for the upper bound, masses gathered below for the lower one,
//! REMOVE only); the rest is charged to the infinite losses (upper) or left out (lower).
//! With only one heavy step composed, J has to sit so high (t·|g| ≲ 1e-9) that for t = 10
//! the bulk's own large steps limited the bracket. σ 0.8, t 1000, δ 1e-8: [0.98214,
//! 0.98264] in 0.2 s; σ 1, t 10: [3.50128, 3.50163]. The split is skipped when the heavy
//! tail is under a quarter of the lattice.
//!
//! Small t with heavy-tailed B (σ below 1) needs many lattice points and is slow.
//!
//! Known limit: the ADD direction of few steps with heavy-tailed B. Its large losses are
//! `−ln(S/t)` for S near 0, which the lattice resolves only to its spacing: the upper bound
//! puts `Q(S′ = 0)` at ADD's +∞ and the lower bound cannot reach ADD losses beyond
//! `−ln(Δ/t)`. σ 0.699, t 2, grid 0.02: `Q(S′ = 0)` is 1.6e-4 (the true Q(S/t < e^{−ε})
//! falls only like the log-normal's lower tail), and one epoch at δ 1e-3 is bracketed in
//! [4.2316, 4.9168], 18 epochs at δ 1e-5 in [34.07, 43.55], on every grid (the upper end
//! the Gaussian without amplification; the answer's `stopped_by` says "mass at infinite
//! loss"). A lattice in ln B near 0 would be needed.
//!
//! Known limit: δ(ε) over many epochs, whose tolerance is 1e-4 of δ, can stop narrowing
//! short of it: 60 epochs of σ 1.1, t 235 give δ(2.34) in [9.637771e-6, 9.639919e-6] (2.2e-4
//! wide) at grid step 4.1e-4, and on finer grids (finer lattices) both ends of a grid's own
//! bracket move outwards. The rounding bounds of the lattice's masses (differences of CDF
//! tails, up to `1e-6/t` relative per cell), applied to the whole t-fold power at their
//! largest, `(1 ± r)^t`, explain about a tenth of that (r = 1.9e-9 at spacing 1.3e-3:
//! 2.7e-5 of δ over 60 epochs); the rest is not located yet. (Until
//! δ(ε) queries truncated for the δ they find, a truncation of 1e-20 cut B so high that
//! the lattice hit its size limit, and 20 epochs gave δ(1) in [2.07633e-4, 2.07672e-4] on
//! every grid; now [2.076579e-4, 2.076771e-4], within the tolerance.) ε(δ) does not
//! notice.
//!
//! # Several participations: a lower bound
//! With k of the t steps carrying the record (1 < k < t), the likelihood ratio of the epoch
//! is `e_k(B₁, …, B_t)/C(t, k)` (the elementary symmetric polynomial): no longer a function
//! of S, and no exact construction is known to us. [`epoch_lower_several`] reports, for
//! each step, a [`StepStatistic`] of the landed cell above (its lattice point, or one step's
//! privacy loss under Poisson sampling at a rate r near k/t on a lattice of its own) and
//! sums them: a post-processing whatever k is. Its law under Q is the t-fold power of the
//! cells' reported Q-law `qⱼ`; under P, k of the steps are drawn from the cells' P-law
//! `b̄ⱼ·qⱼ` (a cell's conditional mean is its P-mass over its Q-mass), and the sum does not
//! depend on which k:
//! ```text
//! P_S = q^{∗(t−k)} ∗ (b̄q)^{∗k},        Q_S = q^{∗t}
//! ```
//! one FFT product each. The pair (P_S, Q_S) is taken with P from below and Q from above
//! (REMOVE; the reverse for ADD), entry by entry: `b̄ⱼ ≥ jΔ(1 − ρ)`, the inputs' rounding,
//! the FFT's round-off, the mass the circular buffer may fold onto each block of the window
//! (whose bottom sits far into the light lower tail, so little folds onto its top). Neither
//! statistic is sufficient for k > 1, yet the Poisson loss comes close: one epoch of σ 1,
//! t 100, k 2 at δ 1e-5 gives ε ≥ 1.2046 at r = 0.01 (the lattice sum 1.1718, the sum of
//! the outputs 0.73), where a Monte Carlo estimate of the truth is 1.205 ± 0.01 and the
//! split upper bound 1.2297. The plain power's round-off (about 1e-15 per entry) is
//! subtracted from every entry, so at δ far below 1e-9 the bound loses ground (staying
//! valid).
//!
//! # Lattice
//! Spreading adds at most `Δ²/4` to the variance of each Bᵢ, so about `Δ/(2√t)` nats to the
//! spread of the epoch's loss: `Δ = h·√t/2` matches a grid of step h. The lattice stops at
//! [`MAX_LATTICE_POINTS`] points (Δ grows instead: the bounds stay valid, the bracket widens).
//! Where that would make Δ more than 16 times the matched spacing (heavy
//! tails, σ well below 1, at tiny truncations) and the charges at +∞ exceed the truncation,
//! the cut is lowered to keep Δ there if that charges less: the first cell of a coarse
//! lattice sends B′ to 0 so often that S′ = 0, ADD's infinite loss, weighed up to 5e-2
//! (σ 0.6, t 33, three epochs, δ 1e-6: ε ≤ 17.30, the unamplified bound; now
//! [7.6580, 7.6586]). Where the charges stay within the truncation but Δ is still that
//! coarse, the cut is lowered (not below that point) as far as charges of
//! 10⁴ times the truncation allow: a spread 16 to 500 times coarser than
//! the grid costs composed epochs far more (σ 0.5, t 1000, ten epochs, δ 1e-5: ε ≤ 5.197 at
//! Δ 15.6, ≤ 5.064 at Δ 1.2). A lower bound's lattice needs a spacing below 1, B's mean
//! under Q, for any cell to land (`Lattice::new`).

use crate::bound::Bound;
use crate::discretize::loss_atoms::{connect_the_dots_by_cells, LossAtom, LossAtoms};
use crate::discretize::lumped_atoms::{landing_tolerance, Lander};
use crate::error::{Error, Result};
use crate::mechanism::MonotonePrivacyLoss;
use crate::numeric::fft_convolution::{
    product_window, self_convolution_period, self_convolve_window,
};
use crate::pld::{PrivacyLossDistribution, Symmetry};
use crate::pmf::tail_moments::{TailMoments, TILTS};
use std::sync::{Arc, Mutex};

/// Most lattice points for B (the FFT power's input length).
pub const MAX_LATTICE_POINTS: usize = 1 << 22;

/// The coarsest lattice spacing tried when the truncation's cut makes the lattice coarser,
/// as a multiple of the spacing matched to the grid (see [`Lattice`]).
const COARSEST_LATTICE: f64 = 16.0;

/// Coarsest lattice spacing of a lower bound's lattice unless the grid's is coarser (see
/// [`Lattice`]): B's mean under Q is 1, and a quarter still resolves its bulk (σ 0.686,
/// 102 steps, truncation 1e-21, grid 0.02: ε(1e-12) ≥ 6.330813 against the upper bound's
/// 6.331106; with spacing 1 the lower bound was 0).
const LOWER_COARSEST_SPACING: f64 = 0.25;

/// Spacing of a lower bound's lattice where the rules of [`Lattice::new`] would give 1 or
/// more, on which no cell can land: half of B's mean under Q.
const LANDABLE_SPACING: f64 = 0.5;

/// How much more than the truncation mass a lattice far coarser than its grid may charge to
/// the infinite losses (upper bound) or leave out (lower bound) for a lower cut (see
/// [`Lattice::new`]): for ε(δ) queries, whose truncation is 1e-9·δ, about 1e-5·δ per epoch.
const CUT_CHARGE_ALLOWANCE: f64 = 1e4;

/// Most entries of the t-fold power's window.
const MAX_WINDOW: u64 = 1 << 24;

/// One epoch of random allocation over `steps` steps of `mechanism`, in one bound, on the
/// loss grid of step `grid_step`, with at most about `tail_mass` charged (upper) or dropped
/// (lower) for truncation.
///
/// # Guarantee
/// [`Bound::Upper`]: every δ of both directions at least the epoch's; [`Bound::Lower`]: at
/// most (see the module docs).
///
/// # Errors
/// [`Error::InvalidParameter`] for `steps = 0`, a grid step or tail mass out of range, or a
/// loss range that cannot be represented; [`Error::GridTooLarge`] when the power's window
/// would be too long.
pub fn epoch_pld<M: MonotonePrivacyLoss + Clone + PartialEq>(
    mechanism: &M,
    steps: u64,
    grid_step: f64,
    tail_mass: f64,
    bound: Bound,
) -> Result<PrivacyLossDistribution> {
    epoch_pld_with(mechanism, steps, grid_step, tail_mass, bound, None)
}

/// [`epoch_pld`], with the epoch's law on its lattice taken from `laws` when kept there, and
/// kept there when computed: the same PLD, bit for bit, and grids that share a lattice
/// compute its t-fold power once.
///
/// # Guarantee
/// As [`epoch_pld`].
///
/// # Errors
/// As [`epoch_pld`].
pub fn epoch_pld_kept<M: MonotonePrivacyLoss + Clone + PartialEq>(
    mechanism: &M,
    steps: u64,
    grid_step: f64,
    tail_mass: f64,
    bound: Bound,
    laws: &EpochLaws<M>,
) -> Result<PrivacyLossDistribution> {
    epoch_pld_with(mechanism, steps, grid_step, tail_mass, bound, Some(laws))
}

fn epoch_pld_with<M: MonotonePrivacyLoss + Clone + PartialEq>(
    mechanism: &M,
    steps: u64,
    grid_step: f64,
    tail_mass: f64,
    bound: Bound,
    laws: Option<&EpochLaws<M>>,
) -> Result<PrivacyLossDistribution> {
    if steps == 0 {
        return Err(Error::invalid("steps_per_epoch", 0, "at least 1"));
    }
    if !(tail_mass > 0.0 && tail_mass < 1.0) {
        return Err(Error::invalid("tail_mass", tail_mass, "a number in (0, 1)"));
    }
    if steps == 1 {
        // One step: the record is always used, the pair is the mechanism's own.
        return PrivacyLossDistribution::from_mechanism(
            mechanism,
            Symmetry::Asymmetric,
            grid_step,
            tail_mass,
            bound,
        );
    }
    let max_points = laws.map_or(MAX_LATTICE_POINTS, |laws| laws.max_points);
    let lattice = Lattice::new(mechanism, steps, grid_step, tail_mass, bound, max_points)?;
    let law = match laws {
        Some(laws) => laws.law(mechanism, &lattice, bound, grid_step, tail_mass)?,
        None => Arc::new(EpochLaw::new(
            mechanism, &lattice, bound, grid_step, tail_mass,
        )?),
    };
    match law.as_ref() {
        EpochLaw::Upper(upper) => upper.on_grid(&lattice, grid_step),
        EpochLaw::Lower(lower) => lower.on_grid(&lattice, grid_step),
    }
}

/// Lattice points an epoch of `steps` steps of `mechanism` uses on a grid of step
/// `grid_step` at truncation `tail_mass`, the larger of its two bounds' lattices, at most
/// `max_points`; 0 where it takes none (one step, or parameters it refuses). For memory
/// estimates (see [`LATTICE_BYTES_PER_POINT`]).
pub fn epoch_lattice_points<M: MonotonePrivacyLoss>(
    mechanism: &M,
    steps: u64,
    grid_step: f64,
    tail_mass: f64,
    max_points: usize,
) -> usize {
    if steps < 2 || !(tail_mass > 0.0 && tail_mass < 1.0) {
        return 0;
    }
    [Bound::Upper, Bound::Lower]
        .into_iter()
        .filter_map(|bound| {
            Lattice::new(mechanism, steps, grid_step, tail_mass, bound, max_points).ok()
        })
        .map(|lattice| lattice.points)
        .max()
        .unwrap_or(0)
}

/// An epoch's law on its lattice in one bound: everything [`epoch_pld`] computes before it
/// rounds the atoms onto the grid. It depends on the grid step only through the lattice
/// (and, for the lower bound, the landing step), so grids that share a lattice, such as
/// the successive grids of a refinement once the lattice is capped by
/// [`MAX_LATTICE_POINTS`], share it.
enum EpochLaw {
    Upper(UpperEpoch),
    Lower(LowerEpoch),
}

impl EpochLaw {
    fn new<M: MonotonePrivacyLoss>(
        mechanism: &M,
        lattice: &Lattice,
        bound: Bound,
        grid_step: f64,
        tail_mass: f64,
    ) -> Result<EpochLaw> {
        Ok(match bound {
            Bound::Upper => EpochLaw::Upper(UpperEpoch::new(mechanism, lattice, tail_mass)?),
            Bound::Lower => {
                EpochLaw::Lower(LowerEpoch::new(mechanism, lattice, grid_step, tail_mass)?)
            }
        })
    }

    /// Bytes held by the law's vectors.
    fn bytes(&self) -> usize {
        let entries = match self {
            EpochLaw::Upper(upper) => upper.law.q.len(),
            EpochLaw::Lower(lower) => {
                let law = &lower.law;
                law.low.len()
                    + law.high.len()
                    + law
                        .remove_only
                        .as_ref()
                        .map_or(0, |r| r.low.len() + r.high.len())
            }
        };
        entries * std::mem::size_of::<f64>()
    }
}

/// Most bytes of epoch laws an [`EpochLaws`] keeps (the oldest go first): the upper and
/// lower laws of an epoch on a capped lattice (2²² points) take about 35 and 140 MB.
pub const KEPT_LAW_BYTES: usize = 256 << 20;

/// Everything an epoch's law depends on.
#[derive(Debug, Clone, PartialEq)]
struct LawKey<M> {
    mechanism: M,
    steps: u64,
    bound: Bound,
    /// Bits of Δ.
    spacing: u64,
    points: usize,
    /// Bits of the truncation mass.
    tail_mass: u64,
    /// Bits of the lower bound's landing step ([`landing_step`]); 0 for the upper bound.
    landing_step: u64,
}

impl<M: Clone> LawKey<M> {
    fn new(mechanism: &M, lattice: &Lattice, bound: Bound, grid_step: f64, tail_mass: f64) -> Self {
        LawKey {
            mechanism: mechanism.clone(),
            steps: lattice.steps,
            bound,
            spacing: lattice.delta.to_bits(),
            points: lattice.points,
            tail_mass: tail_mass.to_bits(),
            landing_step: match bound {
                Bound::Upper => 0,
                Bound::Lower => landing_step(lattice, grid_step).to_bits(),
            },
        }
    }
}

/// Epoch laws kept between grids and queries, so that grids sharing a lattice compute its
/// t-fold power once (see [`epoch_pld_kept`]). Every entry is keyed by everything that
/// determines it: a hit gives the same PLD, bit for bit, as a fresh computation.
///
/// It also carries the memory an epoch may use: the most lattice points
/// ([`MAX_LATTICE_POINTS`] by default) and the most bytes of laws kept
/// ([`KEPT_LAW_BYTES`] by default), both smaller under a small memory budget
/// ([`EpochLaws::within`]).
pub struct EpochLaws<M> {
    kept: Mutex<Vec<(LawKey<M>, Arc<EpochLaw>)>>,
    max_points: usize,
    kept_bytes: usize,
}

impl<M> Default for EpochLaws<M> {
    fn default() -> Self {
        EpochLaws {
            kept: Mutex::new(Vec::new()),
            max_points: MAX_LATTICE_POINTS,
            kept_bytes: KEPT_LAW_BYTES,
        }
    }
}

/// Peak bytes of one epoch's computation per lattice point, both bounds at once (the
/// spread law, its FFT power's window and buffers, the conversion onto the grid and the
/// kept laws), measured with `/usr/bin/time` on σ 0.6, t 1000 (see [`EpochLaws::within`]).
pub const LATTICE_BYTES_PER_POINT: u64 = 160;

/// Fewest lattice points a memory budget may leave an epoch.
const MIN_LATTICE_POINTS: usize = 1 << 12;

impl<M> std::fmt::Debug for EpochLaws<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EpochLaws")
            .field("kept", &self.len())
            .finish()
    }
}

impl<M> EpochLaws<M> {
    /// Laws to be kept by an evaluation whose grids may hold `budget` bytes: lattices of at
    /// most the largest power of two of points whose [`LATTICE_BYTES_PER_POINT`] fit in half
    /// the budget (at most [`MAX_LATTICE_POINTS`], at least 2¹²), and kept laws of at most a
    /// quarter of it (at most [`KEPT_LAW_BYTES`]). A coarser lattice keeps both bounds valid
    /// and widens the bracket. The default budget, 2 GiB, leaves both at their maxima.
    pub fn within(budget: u64) -> Self {
        let fitting = (budget / 2 / LATTICE_BYTES_PER_POINT).max(1);
        let power = 1u64 << (u64::BITS - 1 - fitting.leading_zeros());
        let max_points = usize::try_from(power.min(MAX_LATTICE_POINTS as u64))
            .unwrap_or(MAX_LATTICE_POINTS)
            .max(MIN_LATTICE_POINTS);
        EpochLaws {
            kept: Mutex::new(Vec::new()),
            max_points,
            kept_bytes: usize::try_from(budget / 4)
                .unwrap_or(usize::MAX)
                .min(KEPT_LAW_BYTES),
        }
    }

    /// The most lattice points an epoch may use.
    pub fn max_points(&self) -> usize {
        self.max_points
    }

    /// The most bytes of laws kept.
    pub fn max_kept_bytes(&self) -> usize {
        self.kept_bytes
    }

    /// How many laws are kept.
    pub fn len(&self) -> usize {
        self.kept.lock().map_or(0, |kept| kept.len())
    }

    /// Whether no law is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<M: MonotonePrivacyLoss + Clone + PartialEq> EpochLaws<M> {
    /// The law of `mechanism`'s epoch on `lattice` in `bound`, kept or computed (and kept).
    fn law(
        &self,
        mechanism: &M,
        lattice: &Lattice,
        bound: Bound,
        grid_step: f64,
        tail_mass: f64,
    ) -> Result<Arc<EpochLaw>> {
        let key = LawKey::new(mechanism, lattice, bound, grid_step, tail_mass);
        let same_event = |k: &LawKey<M>| {
            k.mechanism == key.mechanism && k.steps == key.steps && k.bound == key.bound
        };
        if let Ok(mut kept) = self.kept.lock() {
            if let Some((_, law)) = kept.iter().find(|(k, _)| *k == key) {
                return Ok(Arc::clone(law));
            }
            // The same event in the same bound on another lattice is not asked again soon
            // (a refinement's lattices only grow finer): it goes before the new one is
            // computed.
            kept.retain(|(k, _)| !same_event(k));
        }
        let law = Arc::new(EpochLaw::new(
            mechanism, lattice, bound, grid_step, tail_mass,
        )?);
        if let Ok(mut kept) = self.kept.lock() {
            kept.retain(|(k, _)| !same_event(k));
            kept.push((key, Arc::clone(&law)));
            let mut bytes: usize = kept.iter().map(|(_, law)| law.bytes()).sum();
            while bytes > self.kept_bytes && !kept.is_empty() {
                bytes -= kept.remove(0).1.bytes();
            }
        }
        Ok(law)
    }
}

/// The lattice `{jΔ : 0 ≤ j ≤ points − 1}` for B, and where B is cut.
#[derive(Debug, Clone, Copy)]
struct Lattice {
    steps: u64,
    /// Δ.
    delta: f64,
    /// Lattice points, `c = (points − 1)·Δ`.
    points: usize,
}

impl Lattice {
    /// The lattice for an epoch of `steps` steps of `mechanism` in `bound`, of at most
    /// `max_points` points (at least 4; [`MAX_LATTICE_POINTS`] unless a memory budget
    /// asks for fewer, see [`EpochLaws::within`]).
    fn new<M: MonotonePrivacyLoss>(
        mechanism: &M,
        steps: u64,
        grid_step: f64,
        tail_mass: f64,
        bound: Bound,
        max_points: usize,
    ) -> Result<Lattice> {
        if !(grid_step.is_finite() && grid_step > 0.0) {
            return Err(Error::invalid("step", grid_step, "a finite number > 0"));
        }
        let t = steps as f64;
        // Cut B where P holds at most tail/16 above, if "some step beyond the cut",
        // P(B > c) + (t − 1)·Q(B > c) under P and t·Q(B > c) under Q, then weighs at most
        // tail/4; else where each holds at most tail/(16t).
        let cut_at = |tail: f64| {
            let (x_lo, _) = mechanism.truncation_points(tail);
            let (p, q) = mechanism.masses_below(mechanism.edge(x_lo));
            (mechanism.privacy_loss(x_lo), p + t * q)
        };
        let (mut cut_loss, charged) = cut_at(tail_mass / 8.0);
        if charged.is_nan() || charged > tail_mass / 4.0 {
            cut_loss = cut_at(tail_mass / (8.0 * t)).0;
        }
        let (p_inf, _) = mechanism.infinite_masses();
        if !(cut_loss.is_finite() && cut_loss < 600.0) || p_inf > 0.0 {
            return Err(Error::invalid(
                "privacy loss of one step",
                format!("{cut_loss} nats at its tail cut"),
                "finite and below 600 nats for random allocation",
            ));
        }
        let matched = 0.5 * grid_step * t.sqrt();
        let spacing = |cut: f64| matched.max(cut / (max_points - 2) as f64);
        let mut cut = cut_loss.exp().max(1.0);
        // A lower bound may drop what lies above its cut: rather than a lattice too coarse
        // for B's bulk (a spacing of 1 or more, B's mean under Q; heavy-tailed steps at tiny
        // truncations: σ 0.686, 102 steps, truncation 1e-21 put it at 1.6, the bulk of B on
        // a few points and the epoch's lower bound at ε 0 for every δ), it cuts where a
        // spacing of LOWER_COARSEST_SPACING runs out of points. Not where that spacing
        // would still leave half of Q's mass in the first cell (σ 0.35): the finer lattice
        // would cost seconds and resolve no bulk either. (A spacing still at 1 or more after
        // the rules below, where no cell could land, falls back to LANDABLE_SPACING.)
        let lower_spacing = matched.max(LOWER_COARSEST_SPACING);
        let lower_cut = lower_spacing * (max_points - 2) as f64;
        if bound == Bound::Lower && spacing(cut) >= 1.0 && cut > lower_cut && lower_cut > 1.0 {
            let first = mechanism.edge(mechanism.inverse_privacy_loss(lower_spacing.ln()));
            let (_, q_first) = mechanism.masses_between(mechanism.edge(f64::INFINITY), first);
            if q_first < 0.5 {
                cut = lower_cut;
            }
        }
        // Heavy-tailed steps (σ well below 1) at tiny truncations put the cut so high that
        // the lattice is far coarser than the grid; its first cell then sends B′ to 0 often
        // enough that S′ = 0 (ADD's infinite loss) weighs up to 1e-2. A lower cut charges
        // more to "some step beyond the cut" instead: when the first cut's charge (the larger
        // of the two directions' masses at +∞, estimated) exceeds the truncation asked for,
        // the cut with the smaller charge is kept. Both are valid.
        let capped = COARSEST_LATTICE * matched * (max_points - 2) as f64;
        if cut > capped && capped > 1.0 {
            let charges = |cut: f64| {
                let delta = spacing(cut);
                let top = mechanism.edge(mechanism.inverse_privacy_loss(cut.ln()));
                let (p_above, q_above) = mechanism.masses_below(top);
                let first = mechanism.edge(mechanism.inverse_privacy_loss(delta.ln()));
                let (p0, q0) = mechanism.masses_between(mechanism.edge(f64::INFINITY), first);
                let at_zero = (q0 - p0 / delta).max(0.0);
                let remove = p_above + (t - 1.0) * q_above;
                let add = (t * at_zero.ln()).exp();
                remove.max(add)
            };
            let at_cut = charges(cut);
            if at_cut > tail_mass && charges(capped) < at_cut {
                cut = capped;
            } else {
                // The charge is within the truncation, but the lattice is still far coarser
                // than the grid: its spread adds up to Δ²/4 to each step's variance, far more
                // error than a slightly larger charge (σ 0.5, t 1000, ten epochs, δ 1e-5:
                // Δ 15.6 at the cut above, ε ≤ 5.198; cut at 5e6, Δ 1.2, ε ≤ 5.064, where
                // the lower bound is 5.049). The cut is lowered, not below `capped`, to
                // where the charge is at most CUT_CHARGE_ALLOWANCE times the truncation. A
                // lower bound leaves that mass out instead, and resolves B's bulk better
                // (σ 0.6, t 1000, ten epochs, δ 1e-5: ε ≥ 2.40084 instead of 2.38788).
                let allowance = CUT_CHARGE_ALLOWANCE * tail_mass;
                let allowed = cut_at(allowance / 8.0).0.exp().max(capped);
                if allowed < cut && charges(allowed) <= allowance {
                    cut = allowed;
                }
            }
        }
        let mut delta = spacing(cut);
        // A lower bound's cells are closed from the bottom of B's range up, and every cell
        // there has a conditional mean below E_Q B = 1: on a lattice of spacing 1 or more
        // none lands, and the epoch's lower bound is empty (σ 0.5 and 0.55, t 1000, grid
        // 2e-3: spacings 15.6 and 2.6, ε(1e-5) ≥ 0 against upper bounds 3.1342 and 2.1166).
        // Such a lattice is cut where a spacing of LANDABLE_SPACING runs out of points
        // instead, what lies above left out (there: ε(1e-5) ≥ 3.1341 and 2.1165).
        if bound == Bound::Lower && delta >= 1.0 {
            delta = LANDABLE_SPACING;
            cut = cut.min(delta * (max_points - 2) as f64);
        }
        let points = (cut / delta).ceil() as usize + 1;
        Ok(Lattice {
            steps,
            delta,
            points: points.max(3),
        })
    }

    /// The grid step this lattice is matched to, `2Δ/√t` (the inverse of `Δ = h·√t/2`, see
    /// the module docs): the grid's step when the lattice is not cut-limited, coarser when
    /// it is.
    fn matched_step(&self) -> f64 {
        2.0 * self.delta / (self.steps as f64).sqrt()
    }

    /// Loss of lattice point j, `ln(jΔ)` (−∞ at 0).
    fn loss(&self, j: usize) -> f64 {
        (j as f64 * self.delta).ln()
    }
}

/// The law of B′ (spread of B onto the lattice), and the (P, Q) mass of B above the cut.
fn spread<M: MonotonePrivacyLoss>(m: &M, lattice: &Lattice) -> (Vec<f64>, (f64, f64)) {
    let n = lattice.points;
    let delta = lattice.delta;
    let u = f64::EPSILON;
    let mut q = vec![0.0; n];
    // Edges at losses ln(jΔ), j = 0..n−1 (x decreasing in j), with the size of the tails
    // their masses are differences of (the absolute rounding of a difference).
    let edge_at = |j: usize| m.edge(m.inverse_privacy_loss(lattice.loss(j)));
    let tails_size = |e: M::Edge| {
        let (pb, qb) = m.masses_below(e);
        let (pa, qa) = m.masses_above(e);
        (pb.min(pa), qb.min(qa))
    };
    let mut lower = m.edge(f64::INFINITY);
    let mut lower_size = (0.0, 0.0);
    for j in 0..n - 1 {
        let upper = edge_at(j + 1);
        let upper_size = tails_size(upper);
        let (p_i, q_i) = m.masses_between(lower, upper);
        let hi = (j + 1) as f64 * delta;
        // w_hi·Δ = P_I − lo·Q_I, w_lo·Δ = hi·Q_I − P_I (each in [0, Δ·Q_I]).
        let up = if j == 0 {
            p_i
        } else {
            m.excess_between(lower, upper, lattice.loss(j))
        };
        let down = -m.excess_between(lower, upper, lattice.loss(j + 1));
        // Rounding: a few ulps of P_I + c·Q_I, plus the differences of the tails the masses
        // came from (absolute, a few ulps of each tail).
        let slack = 8.0
            * u
            * (p_i + hi * q_i + lower_size.0 + upper_size.0 + hi * (lower_size.1 + upper_size.1));
        let w_hi = (up.clamp(0.0, hi * q_i) + slack) / delta;
        let w_lo = (down.clamp(0.0, hi * q_i) + slack) / delta;
        q[j] += w_lo.min(q_i + slack / delta);
        q[j + 1] += w_hi.min(q_i + slack / delta);
        lower = upper;
        lower_size = upper_size;
    }
    let above = m.masses_below(lower);
    (q, above)
}

/// The step of the grid whose tolerance [`landed`] lands the cells within: the one the
/// lattice resolves (see [`Lattice::matched_step`]), but never a looser one than a
/// thousandth of the grid step (the tolerance of the step √h), nor a tighter one than the
/// grid's own.
fn landing_step(lattice: &Lattice, grid_step: f64) -> f64 {
    lattice.matched_step().min(grid_step.sqrt()).max(grid_step)
}

/// The landed cells' Q-law on the lattice (the lower bound's per-step law).
struct Landed {
    q: Vec<f64>,
    /// Relative bounds with `ℓ·(1 − ρ) ≤ b̄ ≤ ℓ·(1 + η)` for every cell landed at ℓ.
    eta: f64,
    rho: f64,
    /// Bound on the relative rounding error of every cell's Q-mass.
    relative_error: f64,
}

/// Close cells whose conditional means land on the lattice points, from the bottom of B's
/// range up to the cut. A cell whose Q-mass is not known to a relative `1e-6/t` (a few ulps
/// of the CDF tails it is a difference of, next to a tiny mass) is left out: leaving
/// outcomes out of a post-processing is safe for a lower bound.
///
/// Each cell's merged loss lands within the [`landing_tolerance`] of the grid the lattice
/// is matched to ([`Lattice::matched_step`]), capped at a thousandth of the grid step h (the
/// tolerance of the step √h) and never tighter than the grid's own; the tolerance goes into
/// η, which lowers ADD's losses by about η nats. A cut-limited lattice (Δ fixed by
/// [`MAX_LATTICE_POINTS`]) resolves no finer grid, so landing it within a finer grid's
/// tolerance bought nothing and cost up to 15×: two epochs of 2-out-of-5 allocation at
/// σ 0.81 (Δ ≈ 0.0099, matched step 0.0089) spent 4.3 s landing at grid step 6e-5
/// (tolerance 3.6e-12 nats), 0.28 s at 7.9e-8, and the lower end of ε(1e-5) did not move
/// (9.099127 against 9.099130 on the refinement the change of path takes). The cap matters
/// for lattices coarsened to `LOWER_COARSEST_SPACING` (σ 0.5, t 2: matched step 0.35,
/// tolerance 1.2e-4 nats, which lowered ε(1e-5)'s lower end by 9e-5 at grid step 0.02).
fn landed<M: MonotonePrivacyLoss>(
    m: &M,
    lattice: &Lattice,
    grid_step: f64,
    tail_mass: f64,
) -> Landed {
    let landing_step = landing_step(lattice, grid_step);
    let n = lattice.points;
    let u = f64::EPSILON;
    let (_, x_hi) = m.truncation_points(tail_mass / (8.0 * lattice.steps as f64));
    let top = lattice.loss(n - 1);
    let mut lander = Lander::new(m, x_hi, top);
    let q_tail = |e: M::Edge| m.masses_below(e).1.min(m.masses_above(e).1);
    let mut start_tail = q_tail(lander.start_edge());
    let mut q = vec![0.0; n];
    let mut largest_tolerance: f64 = 0.0;
    let mut relative_error: f64 = 0.0;
    let largest_error = 1e-6 / lattice.steps as f64;
    let first = ((lander.start().exp() / lattice.delta).floor() as usize + 1).max(1);
    for (j, slot) in q.iter_mut().enumerate().take(n).skip(first) {
        let target = lattice.loss(j);
        // A point just above the start would close a sliver of a cell, whose mass is a
        // difference of two nearly equal tails: aim at the next one instead.
        if j as f64 * lattice.delta - lander.start().exp() < 0.25 * lattice.delta {
            continue;
        }
        let Some((_, qm)) = lander.land(target, landing_step) else {
            break;
        };
        let end_tail = q_tail(lander.start_edge());
        let error = 8.0 * u * (start_tail + end_tail + qm) / qm;
        start_tail = end_tail;
        if !(qm > 0.0 && error <= largest_error) {
            continue;
        }
        *slot = qm;
        relative_error = relative_error.max(error);
        largest_tolerance =
            largest_tolerance.max(landing_tolerance(landing_step).max(1e-15 * target.abs()));
    }
    let rounding = lander.rounding;
    // (A landing that could not meet its tolerance overshot by more: the lander's record.)
    let largest_tolerance = largest_tolerance.max(lander.overshoot(landing_step));
    Landed {
        q,
        eta: (largest_tolerance + rounding).exp_m1() * (1.0 + 1e-6) + 4.0 * u,
        rho: -(-rounding).exp_m1() * (1.0 + 1e-6) + 4.0 * u,
        relative_error,
    }
}

/// A window of the t-fold power of a lattice law, with bounds on what lies outside it.
struct Power {
    /// Lattice index (of S) of the first entry.
    bottom: u64,
    /// The entries, each from the estimate (plain or tilted power) that bounds its error best.
    values: Vec<f64>,
    /// Which of `estimates` each entry comes from.
    source: Vec<u8>,
    estimates: Vec<Estimate>,
    /// Chernoff bounds on the Q-mass below and above the window, and on the P-mass above.
    q_below: f64,
    q_above: f64,
    p_above: f64,
    /// Chernoff bounds on the Q-mass of every entry, one per block of [`CAP_BLOCK`] entries
    /// (the smaller of the tail from the block's first entry up and from its last one down).
    caps: Vec<f64>,
}

/// The error bounds of one FFT power of the lattice law tilted by `e^{λj}` (λ = 0: the plain
/// power), in the untilted scale: entry s of the window was computed as `ṽ·e^{a − λs}` with
/// `a = t·ln Σⱼ qⱼe^{λj}`, and
/// ```text
/// ṽ ≤ ṽ* + roundoff,        ṽ ≥ ṽ* − roundoff − wrapped(s)
/// ```
/// for the exact tilted entry ṽ*: `roundoff` bounds the FFT's error, `wrapped(s)` the mass
/// of the exact tilted power that the circular buffer folds onto s (one value per block of
/// [`CAP_BLOCK`] entries). The inputs `qⱼe^{λj − a/t}` and the factor carry a relative
/// rounding of at most `relative(s)`.
struct Estimate {
    lambda: f64,
    log_scale: f64,
    roundoff: f64,
    wrapped: Vec<f64>,
    steps: f64,
}

impl Estimate {
    /// `e^{a − λs}`.
    fn factor(&self, s: u64) -> f64 {
        (self.log_scale - self.lambda * s as f64).exp()
    }

    /// A bound on the relative rounding of an untilted entry: t inputs of a few ulps each
    /// (the t-fold power multiplies them), and the factor's exponent, rounded relative to
    /// its terms' sizes.
    fn relative(&self, s: u64) -> f64 {
        let u = f64::EPSILON;
        let exponent =
            4.0 * u * (self.steps + 2.0 + self.log_scale.abs() + (self.lambda * s as f64).abs());
        exponent.exp_m1()
    }
}

/// Entries per Chernoff cap and per wrapped-mass bound (see [`Power::caps`], [`Estimate`]).
const CAP_BLOCK: usize = 256;

impl Power {
    /// Lattice index of entry i.
    fn index(&self, i: usize) -> u64 {
        self.bottom + i as u64
    }

    /// A bound on the Q-mass of entry i from above: the value plus its round-off, or the
    /// Chernoff bound of its block if smaller.
    fn q_upper(&self, i: usize) -> f64 {
        let e = &self.estimates[self.source[i] as usize];
        let s = self.index(i);
        let grow = 1.0 + e.relative(s);
        let bound = (self.values[i] + e.roundoff * e.factor(s)) * grow;
        bound.min(self.caps[i / CAP_BLOCK])
    }

    /// [`Power::q_upper`] of every entry.
    fn uppers(&self) -> Vec<f64> {
        (0..self.values.len()).map(|i| self.q_upper(i)).collect()
    }

    /// [`Power::q_lower`] of every entry.
    fn lowers(&self) -> Vec<f64> {
        (0..self.values.len()).map(|i| self.q_lower(i)).collect()
    }

    /// A bound on the Q-mass of entry i from below: the value less its round-off and the
    /// mass that may have wrapped onto it (0 when that is all it holds).
    fn q_lower(&self, i: usize) -> f64 {
        let e = &self.estimates[self.source[i] as usize];
        let s = self.index(i);
        let r = e.relative(s);
        let error = (e.roundoff + e.wrapped[i / CAP_BLOCK]) * e.factor(s) * (1.0 + r);
        (self.values[i] * (1.0 - r) - error).max(0.0)
    }
}

fn power(q: &[f64], lattice: &Lattice, tail_mass: f64, tilted: bool) -> Result<Power> {
    // Trailing zeros only lengthen the transform.
    let q = &q[..q
        .iter()
        .rposition(|&v| v > 0.0)
        .map_or(1, |i| i + 1)
        .max(2)
        .min(q.len())];
    let t = lattice.steps;
    let tf = t as f64;
    let n = q.len();
    let full_top = ((n - 1) as u64).checked_mul(t).ok_or(Error::GridTooLarge {
        points: u64::MAX,
        limit: MAX_WINDOW,
        hint: "too many steps per epoch for this grid".into(),
    })?;
    let delta = lattice.delta;
    let mq = TailMoments::of(q, delta);
    let first_moment: Vec<f64> = q
        .iter()
        .enumerate()
        .map(|(j, &v)| j as f64 * delta * v)
        .collect();
    let mp = TailMoments::with_span(&first_moment, delta, n - 1);
    let level = (tail_mass / 8.0).ln();
    // Top: where both the Q-law and the P-law (Q^{*(t−1)} ∗ first moment) are below the level.
    let top_q = mq
        .upper_quantile(tf, level, None)
        .map_or(f64::INFINITY, |v| v.0);
    let top_p = mq
        .upper_quantile(tf - 1.0, level, Some(&mp))
        .map_or(f64::INFINITY, |v| v.0);
    let top = top_q.max(top_p);
    let top = if top.is_finite() && top < full_top as f64 {
        top.ceil() as u64
    } else {
        full_top
    };
    let mut bottom = f64::NEG_INFINITY;
    for (&lambda, &down) in mq.lambdas.iter().zip(&mq.down) {
        if down.is_finite() {
            bottom = bottom.max((level - tf * down) / lambda);
        }
    }
    let bottom = if bottom > 0.0 {
        (bottom.floor() as u64).min(top)
    } else {
        0
    };
    let len = top - bottom + 1;
    if len > MAX_WINDOW {
        return Err(Error::GridTooLarge {
            points: len,
            limit: MAX_WINDOW,
            hint: "use a larger grid step or fewer steps per epoch".into(),
        });
    }
    let min_over = |f: &dyn Fn(usize) -> f64| (0..TILTS).map(f).fold(1.0_f64, f64::min);
    let q_above = if top < full_top {
        min_over(&|k| (tf * mq.up[k] - mq.lambdas[k] * (top + 1) as f64).exp())
    } else {
        0.0
    };
    let p_above = if top < full_top {
        min_over(&|k| ((tf - 1.0) * mq.up[k] + mp.up[k] - mq.lambdas[k] * (top + 1) as f64).exp())
    } else {
        0.0
    };
    let q_below = if bottom > 0 {
        min_over(&|k| (tf * mq.down[k] + mq.lambdas[k] * (bottom - 1) as f64).exp())
    } else {
        0.0
    };
    let conv = self_convolve_window(q, t, bottom, len as usize);
    let plain_wrapped = match bottom.checked_add(conv.period) {
        Some(first) if first <= full_top => {
            min_over(&|k| (tf * mq.up[k] - mq.lambdas[k] * first as f64).exp())
        }
        _ => 0.0,
    } + q_below;
    let blocks = conv.values.len().div_ceil(CAP_BLOCK);
    let caps = (0..blocks)
        .map(|b| {
            let first = (bottom + (b * CAP_BLOCK) as u64) as f64;
            let last = first + (CAP_BLOCK - 1) as f64;
            let from_first = min_over(&|k| (tf * mq.up[k] - mq.lambdas[k] * first).exp());
            let to_last = min_over(&|k| (tf * mq.down[k] + mq.lambdas[k] * last).exp());
            from_first.min(to_last)
        })
        .collect();
    let plain = Estimate {
        lambda: 0.0,
        log_scale: 0.0,
        roundoff: conv.entry_bound,
        wrapped: vec![plain_wrapped; blocks],
        steps: tf,
    };
    let mut power = Power {
        bottom,
        caps,
        source: vec![0; conv.values.len()],
        values: conv.values,
        estimates: vec![plain],
        q_below,
        q_above,
        p_above,
    };
    if tilted {
        // The lower tail too where the plain power's round-off, summed over the window,
        // exceeds LOWER_TILTS_ROUND_OFF times the truncation mass: see `tail_tilts`.
        let summed = power.estimates[0].roundoff * power.values.len() as f64;
        let lower = if summed > LOWER_TILTS_ROUND_OFF * tail_mass {
            tail_tilts(&mq, tf, level, Tail::Lower)
        } else {
            Vec::new()
        };
        for lambda in tail_tilts(&mq, tf, level, Tail::Upper)
            .into_iter()
            .chain(lower)
        {
            if let Some(tilt) = power.prepare_tilt(q, t, lambda, delta) {
                power.refine(&tilt, t);
            }
        }
        // Between the quantile levels' saddle points (which may all be one tilt), entries
        // can still carry errors far above their values: each further tilt is centred on
        // the lowest such entry of the upper tail.
        let floor = tail_mass / (8.0 * power.values.len() as f64);
        let mean = tf * first_moment.iter().sum::<f64>() / (delta * q.iter().sum::<f64>());
        let gaps = if power.values.len() <= MAX_EXTENDED_WINDOW {
            MAX_GAP_TILTS
        } else {
            0
        };
        for _ in 0..gaps {
            let Some(target) = power.lowest_inaccurate(mean, floor) else {
                break;
            };
            let Some(tilt) = power.gap_tilt(q, t, target, delta) else {
                break;
            };
            let known = power
                .estimates
                .iter()
                .any(|e| (e.lambda - tilt.lambda).abs() <= 1e-3 * tilt.lambda);
            if known || !power.refine(&tilt, t) {
                break;
            }
        }
    }
    Ok(power)
}

/// Longest window whose tilted powers may be computed over twice its length (see
/// [`Power::tilted_window`]) and that [`power`] fills gaps of with further tilts: beyond it
/// each transform costs seconds.
const MAX_EXTENDED_WINDOW: usize = 1 << 20;

/// Most tilts [`power`] adds where the quantile levels' tilts leave entries inaccurate.
const MAX_GAP_TILTS: usize = 16;

/// Largest error bound, relative to its value, of an entry of the upper tail that
/// [`power`] accepts without centring a further tilt on it.
const GAP_RELATIVE_ERROR: f64 = 1e-6;

/// The tilt λ > 0 (per lattice index) under which the law `q` has mean index `mean`:
/// `Σ j·qⱼe^{λj} / Σ qⱼe^{λj} = mean`, to a relative 1e-3 by bisection on ln λ (the tilted
/// mean increases with λ; any λ gives a valid estimate, this one centres it). `None` when
/// `mean` is not above the untilted mean or not below the top index.
fn saddle_tilt(q: &[f64], mean: f64) -> Option<f64> {
    let top = q.iter().rposition(|&v| v > 0.0)? as f64;
    let tilted_mean = |lambda: f64| {
        let shift = lambda * top;
        let (mut weight, mut moment) = (0.0, 0.0);
        for (j, &v) in q.iter().enumerate() {
            if v > 0.0 {
                let w = v * (lambda * j as f64 - shift).exp();
                weight += w;
                moment += j as f64 * w;
            }
        }
        moment / weight
    };
    if !(mean.is_finite() && mean < top) {
        return None;
    }
    // Bracket: λ small enough that the tilted mean is below the target, large enough above.
    let (mut low, mut high) = (1e-3 / top.max(1.0), 1.0 / top.max(1.0));
    while tilted_mean(low) >= mean {
        low *= 1e-3;
        if low < 1e-300 {
            return None;
        }
    }
    while tilted_mean(high) < mean {
        high *= 2.0;
        if high > 1e6 {
            return None;
        }
    }
    for _ in 0..60 {
        let middle = (low * high).sqrt();
        if tilted_mean(middle) < mean {
            low = middle;
        } else {
            high = middle;
        }
        if high <= low * (1.0 + 1e-3) {
            break;
        }
    }
    let lambda = (low * high).sqrt();
    (lambda.is_finite() && lambda > 0.0).then_some(lambda)
}

/// Which tail of S a tilt aims at.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tail {
    Upper,
    Lower,
}

/// Tilts (per lattice index) aimed at one tail of S: the Chernoff saddle points of S's
/// quantiles in that tail at levels `e^{level·j/4}`, j = 1, 2, 3 (`level` is the window's),
/// each tried once; positive for the upper tail, where small REMOVE δ are decided, negative
/// for the lower, which decides ADD's.
///
/// The lower tail is light (B ≥ 0), and [`power`] aims tilts at it only where the plain
/// power's round-off could matter against the truncation ([`LOWER_TILTS_ROUND_OFF`]): its
/// entries' absolute round-off, about 1e-20 each, summed over a window of 10⁵ and more
/// entries, put a floor of about 2.5e-15 under ADD's δ (σ 1.75, t 727, δ(0.17) ≤ 2.5e-15
/// where REMOVE's is 6.36e-16, and ε(1e-15) ≤ 0.1804 against a lower end of 0.1685).
fn tail_tilts(mq: &TailMoments, tf: f64, level: f64, tail: Tail) -> Vec<f64> {
    // Bounds ln E e^{±λS} ≤ t·log_mgf, and the sign of the tilt.
    let (log_mgf, sign) = match tail {
        Tail::Upper => (&mq.up, 1.0),
        Tail::Lower => (&mq.down, -1.0),
    };
    let mut lambdas: Vec<f64> = (1..=3)
        .filter_map(|j| {
            let at = level * j as f64 / 4.0;
            // The tilt of the bound (t·log_mgf − at)/λ on the quantile's distance from 0
            // (upper tail: the index; lower tail: minus the index) that is smallest.
            (0..TILTS)
                .filter(|&k| log_mgf[k].is_finite())
                .min_by(|&a, &b| {
                    ((tf * log_mgf[a] - at) / mq.lambdas[a])
                        .total_cmp(&((tf * log_mgf[b] - at) / mq.lambdas[b]))
                })
                .map(|k| sign * mq.lambdas[k])
        })
        .collect();
    lambdas.sort_by(f64::total_cmp);
    lambdas.dedup();
    lambdas
}

/// How many times the truncation mass the plain power's round-off, summed over its window,
/// must exceed for [`power`] to add the lower tail's [`tail_tilts`]: about a thousandth of δ for an
/// ε(δ) query (whose truncation is 1e-9·δ). Reached below δ ≈ 1e-8 for σ 1.75, t 727 (at
/// δ 1e-5 the sum is 10²–10³ truncation masses, and the tilts moved no answer of the
/// default-δ epochs measured while costing up to 8% of their time).
const LOWER_TILTS_ROUND_OFF: f64 = 1e6;

impl Power {
    /// Power the law tilted by `e^{λj}` over the same window, and take its entries where
    /// their error bound is below the current one.
    ///
    /// The tilted power's entries near its own mean are accurate to a few ulps *relative*:
    /// untilted, the error falls with the values deep in the tail, where the plain power's
    /// absolute round-off (about 1e-15 per entry) would otherwise put a floor under δ.
    fn refine(&mut self, tilt: &Tilt, t: u64) -> bool {
        if self.estimates.len() >= u8::MAX as usize {
            return false;
        }
        let tf = t as f64;
        let len = self.values.len();
        let conv = self_convolve_window(&tilt.law, t, self.bottom, tilt.window);
        if conv.lattice.is_some() {
            // A law on a sub-lattice wraps with another period: keep the plain entries.
            return false;
        }
        let wrapped: Vec<f64> = (0..len.div_ceil(CAP_BLOCK))
            .map(|b| self.wrapped_onto(b, &tilt.moments, &tilt.law, t, conv.period))
            .collect();
        let estimate = Estimate {
            lambda: tilt.lambda,
            log_scale: tf * tilt.log_normalizer,
            roundoff: conv.entry_bound,
            wrapped,
            steps: tf,
        };
        let id = self.estimates.len() as u8;
        for (i, &v) in conv.values.iter().take(len).enumerate() {
            let s = self.index(i);
            let current = &self.estimates[self.source[i] as usize];
            let block = i / CAP_BLOCK;
            let now = (current.roundoff + current.wrapped[block]) * current.factor(s);
            let factor = estimate.factor(s);
            let candidate = (estimate.roundoff + estimate.wrapped[block]) * factor;
            if factor.is_normal() && candidate < now {
                self.values[i] = v * factor;
                self.source[i] = id;
            }
        }
        self.estimates.push(estimate);
        true
    }

    /// Length of the window a tilted power (the law `tilted`, Chernoff bounds `mt`) is
    /// computed over: the window, or twice it when the circular buffer of the window's
    /// length would fold more of the tilted law onto some block than the plain power's
    /// round-off (a tilt towards a heavy upper tail leaves much of its mass above the
    /// window; over twice the length only its far tail folds back). Not past
    /// [`MAX_EXTENDED_WINDOW`] entries, where the doubled transform would cost seconds.
    fn tilted_window(&self, mt: &TailMoments, tilted: &[f64], t: u64) -> usize {
        let len = self.values.len();
        if len > MAX_EXTENDED_WINDOW {
            return len;
        }
        let period = self_convolution_period(len, tilted.len()) as u64;
        let roundoff = self.estimates[0].roundoff;
        let folds = (0..len.div_ceil(CAP_BLOCK))
            .any(|b| self.wrapped_onto(b, mt, tilted, t, period) > roundoff);
        if folds {
            2 * len
        } else {
            len
        }
    }

    /// Lattice index of the lowest entry above `mean` whose error bound exceeds both `floor`
    /// and [`GAP_RELATIVE_ERROR`] of its value, if any.
    fn lowest_inaccurate(&self, mean: f64, floor: f64) -> Option<u64> {
        (0..self.values.len())
            .filter(|&i| self.index(i) as f64 > mean)
            .find(|&i| {
                let value = self.values[i];
                let e = &self.estimates[self.source[i] as usize];
                let s = self.index(i);
                let error = (e.roundoff + e.wrapped[i / CAP_BLOCK]) * e.factor(s);
                error > floor && error > GAP_RELATIVE_ERROR * value
            })
            .map(|i| self.index(i))
    }

    /// A bound on the mass of the exact t-fold power of the (tilted) law `tilted` that the
    /// circular buffer of period `period` folds onto block `block` of the window: from
    /// `first + period` and above, and from `last − period` and below (Chernoff bounds
    /// `mt` of the tilted law, at the block's worst end).
    fn wrapped_onto(
        &self,
        block: usize,
        mt: &TailMoments,
        tilted: &[f64],
        t: u64,
        period: u64,
    ) -> f64 {
        let tf = t as f64;
        let full_top = (tilted.len() as u64 - 1).saturating_mul(t);
        let min_over = |f: &dyn Fn(usize) -> f64| (0..TILTS).map(f).fold(1.0_f64, f64::min);
        let first = self.bottom + (block * CAP_BLOCK) as u64;
        let last = first + CAP_BLOCK as u64 - 1;
        let from_above = match first.checked_add(period) {
            Some(from) if from <= full_top => {
                min_over(&|k| (tf * mt.up[k] - mt.lambdas[k] * from as f64).exp())
            }
            _ => 0.0,
        };
        let from_below = match last.checked_sub(period) {
            Some(to) => min_over(&|k| (tf * mt.down[k] + mt.lambdas[k] * to as f64).exp()),
            None => 0.0,
        };
        from_above + from_below
    }

    /// The tilt to centre on entry `target` (a lattice index of the window): among the
    /// saddle point λ* of `target` and λ*·2⁻ᵏ (k ≤ 8), the one whose estimate there is
    /// predicted to err least (round-off guessed as the plain power's, wrapped mass by
    /// Chernoff bounds: the saddle point itself may fold its heavy tilted tail onto the
    /// window). `None` when no candidate is predicted to beat the current estimate.
    fn gap_tilt(&self, q: &[f64], t: u64, target: u64, delta: f64) -> Option<Tilt> {
        let tf = t as f64;
        let saddle = saddle_tilt(q, target as f64 / tf)?;
        let i = (target - self.bottom) as usize;
        let block = i / CAP_BLOCK;
        let current = &self.estimates[self.source[i] as usize];
        let now = (current.roundoff + current.wrapped[block]) * current.factor(target);
        let plain = &self.estimates[0];
        (0..=8)
            .filter_map(|k| {
                let tilt = self.prepare_tilt(q, t, saddle * 0.5f64.powi(k), delta)?;
                let period = self_convolution_period(tilt.window, tilt.law.len()) as u64;
                let wrapped = self.wrapped_onto(block, &tilt.moments, &tilt.law, t, period);
                let factor = (tf * tilt.log_normalizer - tilt.lambda * target as f64).exp();
                let predicted = (plain.roundoff + wrapped) * factor;
                predicted.is_finite().then_some((predicted, tilt))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .filter(|(predicted, _)| *predicted < now)
            .map(|(_, tilt)| tilt)
    }

    /// The law `q` tilted by `e^{λj}` with what [`Power::refine`] needs of it; `None` for a
    /// λ that is 0 or not finite, or whose normalizer is not finite.
    fn prepare_tilt(&self, q: &[f64], t: u64, lambda: f64, delta: f64) -> Option<Tilt> {
        if !(lambda.is_finite() && lambda != 0.0) {
            return None;
        }
        let (law, log_normalizer) = tilt(q, lambda)?;
        let moments = TailMoments::of(&law, delta);
        let window = self.tilted_window(&moments, &law, t);
        Some(Tilt {
            lambda,
            law,
            log_normalizer,
            moments,
            window,
        })
    }
}

/// One law tilted by `e^{λj}`, ready for [`Power::refine`].
struct Tilt {
    lambda: f64,
    /// The tilted, normalized law.
    law: Vec<f64>,
    /// `ln Σ qⱼe^{λj}`.
    log_normalizer: f64,
    /// Chernoff bounds of the tilted law.
    moments: TailMoments,
    /// Length of the window its power is computed over ([`Power::tilted_window`]).
    window: usize,
}

/// The law `q` tilted by `e^{λj}` and normalized, with `ln Σ qⱼe^{λj}`; `None` if that
/// logarithm is not finite.
fn tilt(q: &[f64], lambda: f64) -> Option<(Vec<f64>, f64)> {
    // ln Σ qⱼe^{λj} with the largest exponent factored out.
    let shift = q
        .iter()
        .enumerate()
        .filter(|(_, &v)| v > 0.0)
        .map(|(j, _)| lambda * j as f64)
        .fold(f64::NEG_INFINITY, f64::max);
    let sum = crate::numeric::summation::neumaier_sum(
        q.iter()
            .enumerate()
            .map(|(j, &v)| v * (lambda * j as f64 - shift).exp()),
    );
    let log_normalizer = shift + sum.ln();
    if !log_normalizer.is_finite() {
        return None;
    }
    let tilted = q
        .iter()
        .enumerate()
        .map(|(j, &v)| v * (lambda * j as f64 - log_normalizer).exp())
        .collect();
    Some((tilted, log_normalizer))
}

/// `1 − (1 − a)(1 − b)^m` for tail masses a, b (the mass of "some step beyond the cut").
fn some_beyond(a: f64, b: f64, m: f64) -> f64 {
    (-((-a).ln_1p() + m * (-b).ln_1p()).exp_m1() * (1.0 + 1e-12)).min(1.0)
}

/// The upper bound's epoch on its lattice: the law of S′ and the masses charged to the
/// infinite losses.
struct UpperEpoch {
    law: UpperLaw,
    p_infinity: f64,
    q_neg_infinity: f64,
}

impl UpperEpoch {
    fn new<M: MonotonePrivacyLoss>(m: &M, lattice: &Lattice, tail_mass: f64) -> Result<Self> {
        let (q, (p_cut, q_cut)) = spread(m, lattice);
        let t = lattice.steps as f64;
        let delta = lattice.delta;
        let law = match big_jump_split(&q, lattice, tail_mass) {
            Some(split) => split_upper_law(&q, split, lattice, tail_mass)?,
            None => plain_upper_law(&q, lattice, tail_mass)?,
        };
        let mut q_neg_infinity = some_beyond(q_cut, q_cut, t - 1.0) + law.q_neg_infinity;
        // The atoms (s/t's loss ln(s/t), P-mass (s/t)·Q(s), Q-mass Q(s)) of the sums s > 0 with
        // mass, in increasing order of s, as index and masses; S′ = 0 goes to −∞.
        let mut zero_atom = None;
        let mut underflowed = Vec::new();
        for (i, &q_mass) in law.q.iter().enumerate() {
            if q_mass <= 0.0 {
                continue;
            }
            let s = (law.bottom + i as u64) as f64 * delta;
            if s == 0.0 {
                zero_atom = Some(i);
            } else if s / t * q_mass <= 0.0 {
                underflowed.push(q_mass);
            }
        }
        if let Some(i) = zero_atom {
            // S′ = 0 only when every step is at 0: exactly q₀^t for the computed law, far
            // below the transform's round-off when q₀ is not near 1 (σ 0.686, 102 steps:
            // 1e-26 against 1.2e-14, which put ADD's δ at 1.2e-14 for every ε).
            q_neg_infinity += law.q[i].min(all_at_zero(q[0], t));
        }
        // An atom whose P-mass underflows to 0 is Q-mass at −∞ (as `LossAtoms::from_atoms`
        // takes it).
        let q_neg_infinity =
            q_neg_infinity + crate::numeric::summation::neumaier_sum(underflowed.iter().copied());
        let p_infinity = some_beyond(p_cut, q_cut, t - 1.0) + law.p_infinity;
        Ok(UpperEpoch {
            law,
            p_infinity,
            q_neg_infinity,
        })
    }

    /// Both directions' pessimistic PMFs on the grid of step `grid_step`.
    fn on_grid(&self, lattice: &Lattice, grid_step: f64) -> Result<PrivacyLossDistribution> {
        let (law, p_infinity, q_neg_infinity) = (&self.law, self.p_infinity, self.q_neg_infinity);
        let t = lattice.steps as f64;
        let delta = lattice.delta;
        // The outcomes of each lattice sum s > 0 as (P-mass (s/t)·Q(s), Q-mass Q(s)), in
        // increasing order of s (and of the loss ln(s/t)).
        let atom = |i: usize| -> Option<(f64, f64)> {
            let q_mass = law.q[i];
            let s = (law.bottom + i as u64) as f64 * delta;
            let p_mass = s / t * q_mass;
            (q_mass > 0.0 && s != 0.0 && p_mass > 0.0).then_some((p_mass, q_mass))
        };
        // Both directions' pessimistic PMFs straight from the law, the atoms of each grid cell
        // summed before they are split (`connect_the_dots_by_cells`: no logarithm per atom,
        // and no list of up to 8M atoms an epoch). ADD exchanges P and Q, in decreasing s.
        let remove_atoms = (0..law.q.len()).filter_map(atom);
        let add_atoms = (0..law.q.len())
            .rev()
            .filter_map(atom)
            .map(|(p_mass, q_mass)| (q_mass, p_mass));
        // The round-off allowances put the total a little above 1: more mass at the same losses
        // never lowers a δ, of this epoch or of any composition (every δ is a sum of masses
        // times non-negative weights); self-composition stops the compounding where it would
        // overflow (`GridPmf::self_compose_tilted`).
        let remove = connect_the_dots_by_cells(grid_step, remove_atoms, p_infinity)?;
        let add = connect_the_dots_by_cells(grid_step, add_atoms, q_neg_infinity)?;
        PrivacyLossDistribution::from_pmfs(remove, Some(add))
    }
}

/// An upper bound on `q₀^t`, the chance that all t steps are at lattice point 0: computed as
/// `exp(t·ln q₀)`, whose exponent errs by a few ulps of `t·|ln q₀|`.
fn all_at_zero(q0: f64, t: f64) -> f64 {
    if q0.is_nan() || q0 <= 0.0 {
        return 0.0;
    }
    let exponent = t * q0.ln();
    let slack = 8.0 * f64::EPSILON * (exponent.abs() + 4.0);
    (exponent + slack).exp().min(1.0)
}

/// Upper bounds on the Q-law of S′ (lattice indices from `bottom`), with the P- and Q-mass
/// charged to the infinite losses for what the window does not hold.
struct UpperLaw {
    bottom: u64,
    q: Vec<f64>,
    p_infinity: f64,
    q_neg_infinity: f64,
}

/// The t-fold power of B′'s law in one piece (tilted towards the upper tail).
fn plain_upper_law(q: &[f64], lattice: &Lattice, tail_mass: f64) -> Result<UpperLaw> {
    let power = power(q, lattice, tail_mass, true)?;
    let bottom_ratio = power.bottom as f64 * lattice.delta / lattice.steps as f64;
    Ok(UpperLaw {
        bottom: power.bottom,
        q: power.uppers(),
        p_infinity: power.p_above + bottom_ratio * power.q_below,
        q_neg_infinity: power.q_below + power.q_above,
    })
}

/// Heavy steps composed explicitly by [`split_upper_law`] and [`split_lower_law`] (the runs
/// with more are bounded by [`more_heavy`]): two for 3 ≤ t < 100, one otherwise. With
/// hundreds of steps the split for one heavy step already leaves a bulk whose tilted power
/// reaches the tail (every PLD_accounting fixture case at t ≥ 100 meets the tolerance with
/// one), and the second term's extra power would cost a fifth of the time (σ 1, t 1000,
/// 10 epochs: 62 → 75 ms); with few steps the bulk's own large steps set the bracket.
fn heavy_terms(steps: u64) -> u32 {
    if (3..100).contains(&steps) {
        2
    } else {
        1
    }
}

/// Where B′'s law splits into a bulk `j ≤ J` and a heavy tail `j > J` (see
/// [`split_upper_law`]): the smallest J whose tail makes the runs with more than
/// [`heavy_terms`] heavy steps weigh at most `tail_mass/16` under both P and Q. `None` when
/// the tail would be less than a quarter of the lattice (the split would cost more than it
/// saves).
fn big_jump_split(q: &[f64], lattice: &Lattice, tail_mass: f64) -> Option<usize> {
    let t = lattice.steps as f64;
    let terms = heavy_terms(lattice.steps);
    let last = q.iter().rposition(|&v| v > 0.0)?;
    let (mut q_tail, mut p_tail) = (0.0, 0.0);
    let mut split = last;
    for j in (1..=last).rev() {
        let (qt, pt) = (q_tail + q[j], p_tail + j as f64 * lattice.delta * q[j]);
        let (more_q, more_p) = more_heavy(terms, qt, pt, 1.0, t);
        if more_q > tail_mass / 16.0 || more_p > tail_mass / 16.0 {
            break;
        }
        (q_tail, p_tail, split) = (qt, pt, j - 1);
    }
    (split < last && last - split >= last.div_ceil(4)).then_some(split)
}

/// Bounds on the (Q-mass, P-mass) of the runs where more than `terms` (M) of the t steps
/// are heavy, for a heavy tail of Q-mass `q_heavy` (qₕ) and first moment `p_heavy` (pₕ),
/// and a bulk of first moment at most `p_bulk`; with `n^(m)(q) = (n·q)^m/m!`, a bound on
/// the chance that m of n independent steps are heavy (union over the C(n, m) sets):
/// ```text
/// Q ≤ t^(M+1)(qₕ)
/// P = E_Q[B₁; > M heavy] ≤ pₕ·(t−1)^(M)(qₕ) + p_bulk·(t−1)^(M+1)(qₕ)
/// ```
/// (P-mass of the epoch = `E_Q[S/t; ·] = E_Q[B₁; ·]` by symmetry: step 1 heavy and M
/// others, or step 1 in the bulk and M + 1 others).
fn more_heavy(terms: u32, q_heavy: f64, p_heavy: f64, p_bulk: f64, t: f64) -> (f64, f64) {
    let chance =
        |n: f64, m: u32| -> f64 { (1..=m).fold(1.0, |acc, i| acc * n * q_heavy / i as f64) };
    let q = chance(t, terms + 1);
    let p = p_heavy * chance(t - 1.0, terms) + p_bulk * chance(t - 1.0, terms + 1);
    (q * (1.0 + 1e-12), p * (1.0 + 1e-12))
}

/// The mean-preserving spread of `v` (lattice indices from `first`) onto the multiples of
/// `r`: the mass at `a·r + b` (0 ≤ b < r) goes to `a` (coarse index) with weight `1 − b/r`
/// and to `a + 1` with weight `b/r`. A sum of independent spread variables dominates the
/// sum of the originals in convex order, so no δ of either direction can fall; every output
/// is inflated by 4 ulps against the rounding of the weights (more mass never lowers a δ).
/// Returns (first coarse index, masses).
fn coarse_spread(v: &[f64], first: u64, r: u64) -> (u64, Vec<f64>) {
    let start = first / r;
    let end = (first + v.len() as u64 - 1) / r + 1;
    let mut out = vec![0.0; (end - start + 1) as usize];
    let rf = r as f64;
    for (i, &x) in v.iter().enumerate() {
        let k = first + i as u64;
        let (a, b) = ((k / r - start) as usize, (k % r) as f64);
        let up = x * (b / rf);
        out[a] += x - up;
        out[a + 1] += up;
    }
    let grow = 1.0 + 4.0 * f64::EPSILON;
    out.iter_mut().for_each(|x| *x *= grow);
    (start, out)
}

/// The masses of `v` (lattice indices from `first`) gathered at the multiples of `r` below
/// them: `(first coarse index, masses)`. A sum of such indices is at most the true sum.
fn coarse_floor(v: &[f64], first: u64, r: u64) -> (u64, Vec<f64>) {
    let start = first / r;
    let end = (first + v.len() as u64 - 1) / r;
    let mut out = vec![0.0; (end - start + 1) as usize];
    for (i, &x) in v.iter().enumerate() {
        out[((first + i as u64) / r - start) as usize] += x;
    }
    (start, out)
}

/// Coarsening factor for the two-heavy-step term: the heavy tail on at most 2^16 coarse
/// points.
fn two_heavy_coarsening(heavy_len: usize) -> u64 {
    (heavy_len as u64).div_ceil(1 << 16).max(1)
}

/// `factor·(a ∗ g)`, each entry moved by the convolution's round-off bound (and 4 ulps of
/// the product) up (`up`) or down (not `up`, never below 0): a bound on the exact value
/// from that side for exact inputs.
fn bounded_convolution(a: &[f64], g: &[f64], factor: f64, up: bool) -> Vec<f64> {
    let c = crate::numeric::fft_convolution::convolve(a, g);
    let (sign, bound) = if up {
        (1.0, c.entry_bound)
    } else {
        (-1.0, -c.entry_bound)
    };
    let factor = factor * (1.0 + sign * 4.0 * f64::EPSILON);
    c.values
        .iter()
        .map(|&v| factor * (v + bound).max(0.0))
        .collect()
}

/// `C(t, 2)·(a ∗ g ∗ g)` for coarse vectors (first coarse index, masses), bounded from the
/// side `up` says (see [`bounded_convolution`]): `(first coarse index, values)`.
fn two_heavy_term(
    a: (u64, Vec<f64>),
    g: &(u64, Vec<f64>),
    pairs: f64,
    up: bool,
) -> (u64, Vec<f64>) {
    let once = bounded_convolution(&a.1, &g.1, 1.0, up);
    (a.0 + 2 * g.0, bounded_convolution(&once, &g.1, pairs, up))
}

/// The powers of the bulk a split needs (see [`split_upper_law`]): `b^{∗t}` (tilted),
/// `b^{∗(t−1)}` and, with two heavy terms, `b^{∗(t−2)}` (plain: their terms' round-off is
/// scaled by the heavy tail's small mass).
struct SplitPowers<'a> {
    heavy: &'a [f64],
    /// Lattice index of `heavy[0]` (J + 1).
    heavy_first: u64,
    none: Power,
    rest: Power,
    rest2: Option<Power>,
}

impl<'a> SplitPowers<'a> {
    fn new(q: &'a [f64], split: usize, lattice: &Lattice, tail_mass: f64) -> Result<Self> {
        let (bulk, heavy) = q.split_at(split + 1);
        let fewer = |by: u64| Lattice {
            steps: lattice.steps - by,
            ..*lattice
        };
        Ok(SplitPowers {
            heavy,
            heavy_first: split as u64 + 1,
            none: power(bulk, lattice, tail_mass, true)?,
            rest: power(bulk, &fewer(1), tail_mass, false)?,
            rest2: if heavy_terms(lattice.steps) >= 2 {
                Some(power(bulk, &fewer(2), tail_mass, false)?)
            } else {
                None
            },
        })
    }

    /// Lattice index of the first entry of `t·b^{∗(t−1)} ∗ g`.
    fn one_bottom(&self) -> u64 {
        self.rest.bottom + self.heavy_first
    }
}

/// The lattice range `[bottom, top)` covering every `(first, length)` span.
fn covering(spans: &[(u64, u64)]) -> (u64, u64) {
    let bottom = spans.iter().map(|s| s.0).min().unwrap_or(0);
    let top = spans.iter().map(|s| s.0 + s.1).max().unwrap_or(bottom);
    (bottom, top)
}

/// The t-fold power of B′'s law split at J into its bulk `b = q[..=J]` and heavy tail
/// `g = q[J+1..]`:
/// ```text
/// (b + g)^{∗t} = b^{∗t} + t·b^{∗(t−1)} ∗ g + C(t,2)·b^{∗(t−2)} ∗ g ∗ g + (more heavy steps)
/// ```
/// B′'s tail is heavy (log-normal for the Gaussian): in one piece, S′'s upper tail comes
/// from one large step, which exponential tilts barely reach, and the plain power's
/// round-off (about 1e-15 per entry over millions of entries) puts a floor of about 1e-8
/// under δ. Split, the bulk's power is light-tailed (its tilts are accurate deep into the
/// tail), the one-heavy-step term is one exact convolution whose round-off is scaled by its
/// mass t·|g|, the two-heavy-step term (t ≥ 3, see [`heavy_terms`]) is computed on a coarse
/// lattice after mean-preserving spreads of its three factors (convex order: no δ falls; its
/// mass is tiny, so the coarseness costs nothing visible), and the rest is charged to the
/// infinite losses (at most `tail_mass/16` each, see [`more_heavy`]). Every term is an
/// upper bound entry by entry.
fn split_upper_law(q: &[f64], split: usize, lattice: &Lattice, tail_mass: f64) -> Result<UpperLaw> {
    use crate::numeric::summation::neumaier_sum;
    let parts = SplitPowers::new(q, split, lattice, tail_mass)?;
    let (none, rest, heavy) = (&parts.none, &parts.rest, parts.heavy);
    let terms = heavy_terms(lattice.steps);
    let t = lattice.steps as f64;
    let delta = lattice.delta;
    let grow = 1.0 + 1e-12;
    let moment = |v: &[f64], first: u64| {
        neumaier_sum(
            v.iter()
                .enumerate()
                .map(|(j, &x)| (first + j as u64) as f64 * delta * x),
        ) * grow
    };
    let (q_heavy, p_heavy) = (
        neumaier_sum(heavy.iter().copied()) * grow,
        moment(heavy, parts.heavy_first),
    );
    let p_bulk = moment(&q[..=split], 0);
    let one = bounded_convolution(&rest.uppers(), heavy, t, true);
    // C(t,2)·b^{∗(t−2)} ∗ g ∗ g on the coarse lattice rΔ, placed at the fine indices c·r.
    let two = parts.rest2.as_ref().map(|rest2| {
        let r = two_heavy_coarsening(heavy.len());
        let g = coarse_spread(heavy, parts.heavy_first, r);
        let a = coarse_spread(&rest2.uppers(), rest2.bottom, r);
        (r, two_heavy_term(a, &g, 0.5 * t * (t - 1.0), true))
    });
    let mut spans = vec![
        (none.bottom, none.values.len() as u64),
        (parts.one_bottom(), one.len() as u64),
    ];
    if let Some((r, (first, values))) = &two {
        spans.push((first * r, (values.len() as u64 - 1) * r + 1));
    }
    let (bottom, top) = covering(&spans);
    let mut law = crate::numeric::written_zeros((top - bottom) as usize);
    for (i, v) in none.uppers().into_iter().enumerate() {
        law[(none.bottom - bottom) as usize + i] += v;
    }
    let offset = (parts.one_bottom() - bottom) as usize;
    for (k, &v) in one.iter().enumerate() {
        law[offset + k] += v;
    }
    if let Some((r, (first, values))) = &two {
        for (c, &v) in values.iter().enumerate() {
            law[((first + c as u64) * r - bottom) as usize] += v;
        }
    }
    // What the windows leave out: below/above b^{∗t}'s window; the runs with one heavy step
    // whose other t − 1 steps fall outside b^{∗(t−1)}'s window (Q ≤ t·|g|·out,
    // P ≤ E[B; heavy]·out + |g|·E[rest; out], E[rest; above] = (t − 1)·p_above), and the
    // same for two heavy steps; the runs with more heavy steps.
    let out = rest.q_below + rest.q_above;
    let rest_low = rest.bottom as f64 * delta;
    let none_ratio = none.bottom as f64 * delta / t;
    let mut p_infinity = none.p_above
        + none_ratio * none.q_below
        + p_heavy * out
        + q_heavy * ((t - 1.0) * rest.p_above + rest_low * rest.q_below);
    let mut q_neg_infinity = none.q_below + none.q_above + t * q_heavy * out;
    if let Some(rest2) = &parts.rest2 {
        // E_Q[S/t; two given steps heavy, the others out] ≤ (2·pₕ·qₕ·out + qₕ²·E[rest2; out])/t.
        let pairs = 0.5 * t * (t - 1.0);
        let out2 = rest2.q_below + rest2.q_above;
        let rest2_low = rest2.bottom as f64 * delta;
        q_neg_infinity += pairs * q_heavy * q_heavy * out2;
        p_infinity += pairs / t
            * (2.0 * p_heavy * q_heavy * out2
                + q_heavy * q_heavy * ((t - 2.0) * rest2.p_above + rest2_low * rest2.q_below));
    }
    let (more_q, more_p) = more_heavy(terms, q_heavy, p_heavy, p_bulk, t);
    Ok(UpperLaw {
        bottom,
        q: law,
        p_infinity: (p_infinity + more_p) * grow,
        q_neg_infinity: (q_neg_infinity + more_q) * grow,
    })
}

/// Bounds from below and above on the Q-law of the lattice sum of the landed cells (lattice
/// indices from `bottom`), for the outcomes kept (those left out are dropped: safe for a
/// lower bound).
struct LowerLaw {
    bottom: u64,
    low: Vec<f64>,
    high: Vec<f64>,
    /// Outcomes kept for the REMOVE direction only (the ADD side leaves them out), if any.
    remove_only: Option<RemoveOnly>,
}

/// Outcomes of a [`LowerLaw`] kept for the REMOVE direction only, placed at or below their
/// sums on the coarse lattice of multiples of `r`: bounds on their Q-mass from below and
/// above at lattice indices `(first + c)·r`. (Held coarse: at full length these were two
/// more vectors of the lattice's length, zeros but for one entry in r.)
struct RemoveOnly {
    r: u64,
    first: u64,
    low: Vec<f64>,
    high: Vec<f64>,
}

impl RemoveOnly {
    /// The bounds `(low, high)` at lattice index `index` (zero off the coarse points).
    fn at(&self, index: u64) -> (f64, f64) {
        let c = index / self.r;
        match c.checked_sub(self.first) {
            Some(c) if index.is_multiple_of(self.r) && c < self.low.len() as u64 => {
                (self.low[c as usize], self.high[c as usize])
            }
            _ => (0.0, 0.0),
        }
    }
}

/// The t-fold power of the landed cells' law in one piece.
fn plain_lower_law(q: &[f64], lattice: &Lattice, tail_mass: f64) -> Result<LowerLaw> {
    let power = power(q, lattice, tail_mass, true)?;
    Ok(LowerLaw {
        bottom: power.bottom,
        low: power.lowers(),
        high: power.uppers(),
        remove_only: None,
    })
}

/// The lower bound's counterpart of [`split_upper_law`]: the runs with no heavy step and
/// with one, each bounded from below and above entry by entry; for REMOVE also those with
/// two (t ≥ 3), their three factors gathered at the coarse lattice points below them, so
/// that every outcome sits at or below its sum (a REMOVE atom may sit low; an ADD atom may
/// not, and ADD leaves them out); the runs with more heavy steps are left out (a
/// post-processing may drop outcomes).
fn split_lower_law(q: &[f64], split: usize, lattice: &Lattice, tail_mass: f64) -> Result<LowerLaw> {
    let parts = SplitPowers::new(q, split, lattice, tail_mass)?;
    let (none, heavy) = (&parts.none, parts.heavy);
    let t = lattice.steps as f64;
    let one_low = bounded_convolution(&parts.rest.lowers(), heavy, t, false);
    let one_high = bounded_convolution(&parts.rest.uppers(), heavy, t, true);
    let two = parts.rest2.as_ref().map(|rest2| {
        let r = two_heavy_coarsening(heavy.len());
        let g = coarse_floor(heavy, parts.heavy_first, r);
        let pairs = 0.5 * t * (t - 1.0);
        let term = |values: Vec<f64>, up: bool| {
            two_heavy_term(coarse_floor(&values, rest2.bottom, r), &g, pairs, up)
        };
        (r, term(rest2.lowers(), false), term(rest2.uppers(), true))
    });
    let mut spans = vec![
        (none.bottom, none.values.len() as u64),
        (parts.one_bottom(), one_low.len() as u64),
    ];
    if let Some((r, (first, values), _)) = &two {
        spans.push((first * r, (values.len() as u64 - 1) * r + 1));
    }
    let (bottom, top) = covering(&spans);
    let len = (top - bottom) as usize;
    let (mut low, mut high) = (
        crate::numeric::written_zeros(len),
        crate::numeric::written_zeros(len),
    );
    let at = (none.bottom - bottom) as usize;
    for (i, (a, b)) in none.lowers().into_iter().zip(none.uppers()).enumerate() {
        low[at + i] += a;
        high[at + i] += b;
    }
    let at = (parts.one_bottom() - bottom) as usize;
    for (k, (&a, &b)) in one_low.iter().zip(&one_high).enumerate() {
        low[at + k] += a;
        high[at + k] += b;
    }
    // (Both bounds of the two-heavy-step term come from vectors of the same span: the same
    // first coarse index and length.)
    let remove_only = two.map(|(r, (first, low), (_, high))| RemoveOnly {
        r,
        first,
        low,
        high,
    });
    Ok(LowerLaw {
        bottom,
        low,
        high,
        remove_only,
    })
}

/// The lower bound's epoch on its lattice: bounds on the law of the landed cells' sum, and
/// the landing's relative errors ([`Landed`]'s, without its per-step law).
struct LowerEpoch {
    law: LowerLaw,
    eta: f64,
    rho: f64,
    relative_error: f64,
}

impl LowerEpoch {
    fn new<M: MonotonePrivacyLoss>(
        m: &M,
        lattice: &Lattice,
        grid_step: f64,
        tail_mass: f64,
    ) -> Result<Self> {
        let cells = landed(m, lattice, grid_step, tail_mass);
        let law = match big_jump_split(&cells.q, lattice, tail_mass) {
            Some(split) => split_lower_law(&cells.q, split, lattice, tail_mass)?,
            None => plain_lower_law(&cells.q, lattice, tail_mass)?,
        };
        Ok(LowerEpoch {
            law,
            eta: cells.eta,
            rho: cells.rho,
            relative_error: cells.relative_error,
        })
    }

    /// Both directions' optimistic PMFs on the grid of step `grid_step`.
    fn on_grid(&self, lattice: &Lattice, grid_step: f64) -> Result<PrivacyLossDistribution> {
        let law = &self.law;
        let t = lattice.steps as f64;
        let delta = lattice.delta;
        // The true t-fold power lies within [(v − e − w)/(1 + r)^t, (v + e)/(1 − r)^t] for a
        // computed entry v: e its round-off, w the mass that may have wrapped into it, r the
        // inputs' relative error.
        let r = self.relative_error;
        let shrink = (-t * r.ln_1p()).exp() * (1.0 - 4.0 * f64::EPSILON);
        let grow = (-t * (-r).ln_1p()).exp() * (1.0 + 4.0 * f64::EPSILON);
        // (`law.high` bounds the power of the computed inputs; `grow` covers their error.)
        // Consecutive atoms whose losses lie within `RUN_SPAN` grid steps of the run's first
        // are merged into one (see `AtomRuns`).
        let ratio_span = (RUN_SPAN * grid_step).exp();
        let mut remove = AtomRuns::new(ratio_span, law.low.len());
        let mut add = AtomRuns::new(ratio_span, law.low.len());
        for i in 0..law.low.len() {
            let s = (law.bottom + i as u64) as f64 * delta;
            let low = law.low[i] * shrink;
            let high = law.high[i] * grow;
            // REMOVE: P-mass at most that of the reported sum, ≥ (s(1 − ρ)/t)·Q(s) for outcomes
            // whose sum is at least s; Q-mass at least Q(s). Merging such atoms is safe: each
            // merge sits at or below the true pair's merge of the same outcomes, with at most
            // its P-mass.
            let (only_low, only_high) = law
                .remove_only
                .as_ref()
                .map_or((0.0, 0.0), |only| only.at(law.bottom + i as u64));
            let remove_low = low + only_low * shrink;
            if remove_low > 0.0 && s > 0.0 {
                let remove_high = high + only_high * grow;
                let p = s * (1.0 - self.rho) / t * remove_low;
                remove.push(p, remove_high);
            }
            if low <= 0.0 || s == 0.0 {
                continue;
            }
            // ADD (P and Q exchanged): P-mass at most Q(s), Q-mass at least the REMOVE P-mass,
            // which is at most (s(1 + η)/t)·Q(s).
            let q_add = s * (1.0 + self.eta) / t * high;
            add.push(low, q_add);
        }
        lower_pld(remove.finish(), add.finish(), grid_step)
    }
}

/// Width of the runs of [`AtomRuns`], in grid steps.
const RUN_SPAN: f64 = 1e-3;

/// A lower bound's atoms, one per run of consecutive atoms whose losses lie within
/// `RUN_SPAN` grid steps of the run's first (P/Q within a factor `e^{RUN_SPAN·h}` of its
/// P/Q, either way), given in increasing order of the lattice sum.
///
/// Merging outcomes is a post-processing, so a merged atom still bounds the pair from
/// below, whatever the runs: the sum of the runs' P-masses, each at most its outcomes'
/// true one, rounded down (by `2(n − 1)` units in the last place for n terms, more than
/// naive summation's error), and of their Q-masses, each at least the true one, rounded
/// up. The rounding onto the grid then moves each outcome by up to a step, a thousand
/// times the runs' width. An epoch's lattice has up to 2²² sums, and near its top their
/// losses lie about 2.4e-7 nats apart: without the runs, sorting and walking the atoms
/// took most of the lower bound's conversion onto a grid of step 2e-2. The runs follow
/// the atoms' own losses, not the sums': where round-off bounds make an atom's masses
/// loose (far in a tail), its loss departs from its neighbours' and it stays apart, as
/// merging it would move their loss (one epoch beside other events at δ 1e-15: ε ≥ 9.8445
/// instead of 9.8455 when the runs followed the sums).
struct AtomRuns {
    atoms: Vec<LossAtom>,
    ratio_span: f64,
    /// The open run: the range of P/Q it takes, its P- and Q-mass and its number of atoms.
    open: Option<(f64, f64, f64, f64, u32)>,
}

impl AtomRuns {
    fn new(ratio_span: f64, capacity: usize) -> Self {
        AtomRuns {
            atoms: Vec::with_capacity(capacity),
            ratio_span,
            open: None,
        }
    }

    /// Add the atom with masses `p` and `q`, the next in the order of the lattice sum.
    fn push(&mut self, p: f64, q: f64) {
        let ratio = p / q;
        match &mut self.open {
            Some((low, high, run_p, run_q, n))
                if ratio >= *low && ratio <= *high && *n < u32::MAX =>
            {
                *run_p += p;
                *run_q += q;
                *n += 1;
            }
            _ => {
                self.close();
                self.open = Some((ratio / self.ratio_span, ratio * self.ratio_span, p, q, 1));
            }
        }
    }

    fn close(&mut self) {
        if let Some((_, _, p, q, n)) = self.open.take() {
            let slack = 2.0 * f64::from(n - 1) * f64::EPSILON;
            self.atoms
                .push(LossAtom::from_masses(p * (1.0 - slack), q * (1.0 + slack)));
        }
    }

    /// The atoms, the open run closed.
    fn finish(mut self) -> Vec<LossAtom> {
        self.close();
        self.atoms
    }
}

/// The lower PLD of one epoch from its REMOVE and ADD atoms (each P-mass at most, each
/// Q-mass at least the outcomes' true one), rounded down onto the grid.
fn lower_pld(
    remove: Vec<LossAtom>,
    add: Vec<LossAtom>,
    grid_step: f64,
) -> Result<PrivacyLossDistribution> {
    let remove_pmf = LossAtoms::from_atoms(remove, 0.0, 0.0).lower_pmf(grid_step)?;
    let add_pmf = LossAtoms::from_atoms(add, 0.0, 0.0).lower_pmf(grid_step)?;
    PrivacyLossDistribution::from_pmfs(remove_pmf, Some(add_pmf))
}

/// k-out-of-t random allocation (every record in exactly k of the `steps` steps of an
/// epoch, 1 ≤ k < t), **lower bound** only, both directions, on the loss grid of step
/// `grid_step`, dropping at most about `tail_mass` (see "Several participations" in the
/// module docs).
///
/// # Guarantee
/// Every δ of both directions at most the epoch's: the PLD of a post-processing of the
/// epoch's outputs, with every mass rounded toward a smaller hockey-stick divergence.
///
/// # Errors
/// [`Error::InvalidParameter`] unless `steps ≥ 2` and `1 ≤ participations < steps`, or as
/// [`epoch_pld`]; [`Error::GridTooLarge`] when the power's window would be too long.
pub fn epoch_lower_several<M: MonotonePrivacyLoss>(
    mechanism: &M,
    steps: u64,
    participations: u64,
    statistic: StepStatistic,
    grid_step: f64,
    tail_mass: f64,
) -> Result<PrivacyLossDistribution> {
    epoch_lower_several_statistics(
        mechanism,
        steps,
        participations,
        &[statistic],
        grid_step,
        tail_mass,
        MAX_LATTICE_POINTS,
    )?
    .pop()
    .unwrap_or_else(|| Err(Error::invalid("statistics", 0, "one statistic to report")))
}

/// [`epoch_lower_several`] for each of `statistics`, in their order: the lattice and its
/// landed cells (most of the cost, and independent of the statistic) are built once, on at
/// most `max_points` lattice points (see [`EpochLaws::max_points`]).
///
/// # Errors
/// As [`epoch_lower_several`] for what all statistics share (the outer `Result`); each
/// statistic's own failure in its entry.
pub fn epoch_lower_several_statistics<M: MonotonePrivacyLoss>(
    mechanism: &M,
    steps: u64,
    participations: u64,
    statistics: &[StepStatistic],
    grid_step: f64,
    tail_mass: f64,
    max_points: usize,
) -> Result<Vec<Result<PrivacyLossDistribution>>> {
    if steps < 2 {
        return Err(Error::invalid("steps_per_epoch", steps, "at least 2"));
    }
    if participations == 0 || participations >= steps {
        return Err(Error::invalid(
            "participations",
            participations,
            "between 1 and steps_per_epoch − 1",
        ));
    }
    if !(tail_mass > 0.0 && tail_mass < 1.0) {
        return Err(Error::invalid("tail_mass", tail_mass, "a number in (0, 1)"));
    }
    let lattice = Lattice::new(
        mechanism,
        steps,
        grid_step,
        tail_mass,
        Bound::Lower,
        max_points,
    )?;
    let cells = landed(mechanism, &lattice, grid_step, tail_mass);
    let used = cells
        .q
        .iter()
        .rposition(|&v| v > 0.0)
        .map_or(2, |i| i + 1)
        .max(2)
        .min(cells.q.len());
    Ok(statistics
        .iter()
        .map(|&statistic| {
            several_from_cells(
                &cells,
                &lattice,
                used,
                statistic,
                (steps, participations),
                grid_step,
                tail_mass,
            )
        })
        .collect())
}

/// [`epoch_lower_several`] from the landed cells of its lattice.
fn several_from_cells(
    cells: &Landed,
    lattice: &Lattice,
    used: usize,
    statistic: StepStatistic,
    (steps, participations): (u64, u64),
    grid_step: f64,
    tail_mass: f64,
) -> Result<PrivacyLossDistribution> {
    let reported = statistic.report(&cells.q[..used], lattice.delta)?;
    let (q, p) = (&reported.q, &reported.p);
    let window = SeveralWindow::new(q, p, reported.step, steps, participations, tail_mass)?;
    let q_law = product_window(&[(q, steps)], window.bottom, window.len);
    let p_law = product_window(
        &[(q, steps - participations), (p, participations)],
        window.bottom,
        window.len,
    );
    let (t, k) = (steps as f64, participations as f64);
    let u = f64::EPSILON;
    // Relative error of every input: the cells' Q-masses (r) and their gathering, and for
    // P the two products jΔ·qⱼ on top; a t-fold product of inputs within (1 ± r) is within
    // (1 ± r)^{±t}.
    let r_q = cells.relative_error + reported.gathering;
    let r_p = r_q + 3.0 * u;
    let shrink = |r: f64| (-t * r.ln_1p()).exp() * (1.0 - 4.0 * u);
    let grow = |r: f64| (-t * (-r).ln_1p()).exp() * (1.0 + 4.0 * u);
    let (q_shrink, q_grow) = (shrink(r_q), grow(r_q));
    let p_shrink = shrink(r_p) * (k * (-cells.rho).ln_1p()).exp() * (1.0 - 4.0 * u);
    let p_grow = grow(r_p) * (k * cells.eta.ln_1p()).exp() * (1.0 + 4.0 * u);
    let mut remove = Vec::with_capacity(window.len);
    let mut add = Vec::with_capacity(window.len);
    for (i, (&vq, &vp)) in q_law.values.iter().zip(&p_law.values).enumerate() {
        // The computed entry is the exact one plus what wrapped onto it, within the
        // round-off bound.
        let block = i / CAP_BLOCK;
        let q_low = (vq - q_law.entry_bound - window.q_wrapped[block]).max(0.0) * q_shrink;
        let q_high = (vq + q_law.entry_bound) * q_grow;
        let p_low = (vp - p_law.entry_bound - window.p_wrapped[block]).max(0.0) * p_shrink;
        let p_high = (vp + p_law.entry_bound) * p_grow;
        if p_low > 0.0 && q_high > 0.0 {
            remove.push(LossAtom::from_masses(p_low, q_high));
        }
        if q_low > 0.0 && p_high > 0.0 {
            add.push(LossAtom::from_masses(q_low, p_high));
        }
    }
    lower_pld(remove, add, grid_step)
}

/// The per-step statistic [`epoch_lower_several`] sums over the epoch: a function of the
/// cell a step's output landed in (lattice point j of B, conditional mean within
/// `[1 − ρ, 1 + η]` of jΔ), so that the sum is a post-processing of the epoch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepStatistic {
    /// The cell's lattice point j: the lattice sum of the likelihood ratios (sufficient for
    /// k = 1).
    Ratio,
    /// `⌊(ln(1 − r + r·jΔ) − ln(1 − r))/(rΔ)⌋`: the log-likelihood ratio of one step of
    /// Poisson sampling at rate r, on a lattice of step rΔ. Its sum is the Poisson-sampled
    /// epoch's privacy loss, which for r near k/t follows k-of-t allocation's far better
    /// than the sum of ratios (σ 1, t 100, k 2, δ 1e-5: ε ≥ 1.2046 at r = 0.01 against
    /// 1.1718, where a Monte Carlo estimate of the truth is 1.205 ± 0.01).
    LogMixture(f64),
}

/// The cells' Q- and P-law on the statistic's lattice.
struct Reported {
    q: Vec<f64>,
    /// `jΔ·qⱼ` gathered like q (within [1 − ρ, 1 + η] of the cells' P-masses).
    p: Vec<f64>,
    /// The statistic's lattice step (for the Chernoff tilts).
    step: f64,
    /// Bound on the relative rounding of gathering several cells into one point.
    gathering: f64,
}

impl StepStatistic {
    fn report(self, q: &[f64], delta: f64) -> Result<Reported> {
        let ratio = |j: usize| j as f64 * delta;
        match self {
            StepStatistic::Ratio => Ok(Reported {
                q: q.to_vec(),
                p: q.iter().enumerate().map(|(j, &v)| ratio(j) * v).collect(),
                step: delta,
                gathering: 0.0,
            }),
            StepStatistic::LogMixture(rate) => {
                if !(rate > 0.0 && rate < 1.0) {
                    return Err(Error::invalid("rate", rate, "a number in (0, 1)"));
                }
                let step = rate * delta;
                let base = (-rate).ln_1p();
                let index = |j: usize| {
                    let g = (rate * (ratio(j) - 1.0)).ln_1p();
                    ((g - base) / step).floor().max(0.0) as usize
                };
                // Monotone in j: the last cell gives the length.
                let len = index(q.len() - 1) + 1;
                let (mut gq, mut gp) = (vec![0.0; len], vec![0.0; len]);
                let mut counts = vec![0u32; len];
                for (j, &v) in q.iter().enumerate().filter(|(_, &v)| v > 0.0) {
                    let m = index(j);
                    gq[m] += v;
                    gp[m] += ratio(j) * v;
                    counts[m] += 1;
                }
                // A sum of c non-negative terms is within (c − 1)·u/(1 − (c − 1)·u) of its value.
                let most = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
                let gathering = (most - 1.0) * f64::EPSILON * 1.01;
                Ok(Reported {
                    q: gq,
                    p: gp,
                    step,
                    gathering,
                })
            }
        }
    }
}

/// The window of lattice sums [`epoch_lower_several`] computes, and bounds on the mass of
/// each law that the circular buffer may fold onto any one entry.
struct SeveralWindow {
    bottom: u64,
    len: usize,
    /// Per block of [`CAP_BLOCK`] entries: bounds on the Q- and P-mass the circular buffer
    /// may fold onto any entry of the block.
    q_wrapped: Vec<f64>,
    p_wrapped: Vec<f64>,
}

/// How much lower than the window's own level (`tail_mass/8`) the bottom of
/// [`SeveralWindow`] sits, in nats: the mass below the bottom folds onto the window's top
/// entries, where the small REMOVE δ live, so it is kept e^{−60} times smaller (the lower
/// tails of both statistics are light: this costs a few percent of the window).
const SEVERAL_BOTTOM_MARGIN: f64 = 60.0;

impl SeveralWindow {
    /// From Chernoff bounds: the window holds all but `tail_mass/8` of each law above and
    /// far less below (what lies outside is dropped, which a lower bound may do); what the
    /// buffer of length N folds onto the window is bounded block by block.
    fn new(
        q: &[f64],
        p: &[f64],
        step: f64,
        steps: u64,
        participations: u64,
        tail_mass: f64,
    ) -> Result<SeveralWindow> {
        let (t, k) = (steps as f64, participations as f64);
        let n = q.len();
        let too_large = |points: u64| Error::GridTooLarge {
            points,
            limit: MAX_WINDOW,
            hint: "use a larger grid step or fewer steps per epoch".into(),
        };
        let full_top = ((n - 1) as u64)
            .checked_mul(steps)
            .ok_or_else(|| too_large(u64::MAX))?;
        let mq = TailMoments::of(q, step);
        let mp = TailMoments::with_span(p, step, n - 1);
        // Log-moments of the two laws at tilt i, upward and downward.
        let q_up = |i: usize| t * mq.up[i];
        let p_up = |i: usize| (t - k) * mq.up[i] + k * mp.up[i];
        let q_down = |i: usize| t * mq.down[i];
        let p_down = |i: usize| (t - k) * mq.down[i] + k * mp.down[i];
        let level = (tail_mass / 8.0).ln();
        let best = |f: &dyn Fn(usize) -> f64| -> f64 {
            (0..TILTS)
                .map(|i| (f(i), mq.lambdas[i]))
                .filter(|(v, _)| v.is_finite())
                .map(|(v, lambda)| (v - level) / lambda)
                .fold(f64::INFINITY, f64::min)
        };
        let top = best(&q_up).max(best(&p_up));
        let top = if top < full_top as f64 {
            top.ceil() as u64
        } else {
            full_top
        };
        // Lowest index below which each law holds at most the level: (level − down)/λ.
        let floor = |f: &dyn Fn(usize) -> f64| -> f64 {
            (0..TILTS)
                .map(|i| (f(i), mq.lambdas[i]))
                .filter(|(v, _)| v.is_finite())
                .map(|(v, lambda)| (level - SEVERAL_BOTTOM_MARGIN - v) / lambda)
                .fold(f64::NEG_INFINITY, f64::max)
        };
        let bottom = floor(&q_down).min(floor(&p_down));
        let bottom = if bottom > 0.0 {
            (bottom.floor() as u64).min(top)
        } else {
            0
        };
        let len = top - bottom + 1;
        if len > MAX_WINDOW {
            return Err(too_large(len));
        }
        let period = crate::numeric::fft_convolution::self_convolution_period(len as usize, n);
        let chernoff = |f: &dyn Fn(usize) -> f64, sign: f64, at: f64| -> f64 {
            (0..TILTS)
                .map(|i| (f(i) - sign * mq.lambdas[i] * at).exp())
                .fold(1.0_f64, f64::min)
        };
        // Entry x of the window receives the exact entries bottom + x ± m·period (m ≥ 1):
        // for a block [x₀, x₁], at most the mass from bottom + x₀ + period up and from
        // bottom + x₁ − period down.
        let blocks = (len as usize).div_ceil(CAP_BLOCK);
        let wrapped = |up: &dyn Fn(usize) -> f64, down: &dyn Fn(usize) -> f64| -> Vec<f64> {
            (0..blocks)
                .map(|b| {
                    let x0 = (b * CAP_BLOCK) as u64;
                    let x1 = (x0 + CAP_BLOCK as u64 - 1).min(len - 1);
                    let above = match (bottom + x0).checked_add(period as u64) {
                        Some(first) if first <= full_top => chernoff(up, 1.0, first as f64),
                        _ => 0.0,
                    };
                    let below = match (bottom + x1).checked_sub(period as u64) {
                        Some(last) => chernoff(down, -1.0, last as f64),
                        None => 0.0,
                    };
                    (above + below) * (1.0 + 1e-9)
                })
                .collect()
        };
        Ok(SeveralWindow {
            bottom,
            len: len as usize,
            q_wrapped: wrapped(&q_up, &q_down),
            p_wrapped: wrapped(&p_up, &p_down),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanism::Gaussian;
    use crate::numeric::normal::cdf;

    /// The REMOVE-only outcomes are read at their coarse lattice points `(first + c)·r` and
    /// nowhere else: zero between them, below the first and past the last (for a coarse
    /// lattice at r = 1 too).
    #[test]
    fn remove_only_outcomes_sit_at_their_coarse_points() {
        let only = RemoveOnly {
            r: 3,
            first: 2,
            low: vec![0.25, 0.5, 0.125],
            high: vec![0.3, 0.6, 0.2],
        };
        let read: Vec<(f64, f64)> = (0..12).map(|index| only.at(index)).collect();
        for (index, &(low, high)) in read.iter().enumerate() {
            let expected = match index {
                6 => (0.25, 0.3),
                9 => (0.5, 0.6),
                // (The last coarse point, (2 + 2)·3 = 12, is read below.)
                _ => (0.0, 0.0),
            };
            assert_eq!((low, high), expected, "index {index}");
        }
        assert_eq!(only.at(12), (0.125, 0.2));
        assert_eq!(only.at(15), (0.0, 0.0));
        let unit = RemoveOnly {
            r: 1,
            first: 5,
            low: vec![1.0, 2.0],
            high: vec![1.5, 2.5],
        };
        let read: Vec<(f64, f64)> = (3..9).map(|index| unit.at(index)).collect();
        assert_eq!(
            read,
            vec![
                (0.0, 0.0),
                (0.0, 0.0),
                (1.0, 1.5),
                (2.0, 2.5),
                (0.0, 0.0),
                (0.0, 0.0)
            ]
        );
    }

    /// Runs merge only atoms whose losses lie within `RUN_SPAN` grid steps of their run's
    /// first (so a loose atom, its Q-mass inflated tenfold as round-off bounds do far in a
    /// tail, stays apart), round their P-mass down and Q-mass up, and (a post-processing)
    /// never raise δ(ε) above the unmerged atoms' at any ε.
    #[test]
    fn atom_runs_merge_close_atoms_into_a_lower_bound() {
        let (h, t, delta) = (2e-2, 1000.0, 0.37);
        let span = (RUN_SPAN * h).exp();
        // Masses of a log-normal-like law, P-mass s/t times the Q-mass as in an epoch.
        let masses: Vec<(f64, f64)> = (1..1_000_000)
            .map(|j| {
                let s = j as f64 * delta;
                let q = (-(s / t).ln().powi(2)).exp() * 1e-5;
                let loose = if j % 1000 == 0 { 10.0 } else { 1.0 };
                (s / t * q, q * loose)
            })
            .collect();
        let mut runs = AtomRuns::new(span, masses.len());
        for &(p, q) in &masses {
            runs.push(p, q);
        }
        let merged = runs.finish();
        let mut start = 0;
        for atom in &merged {
            // The run: every following atom whose P/Q is within the span of the first's.
            let first = masses[start].0 / masses[start].1;
            let end = masses[start..]
                .iter()
                .position(|&(p, q)| p / q > first * span || p / q < first / span)
                .map_or(masses.len(), |n| start + n);
            let losses = masses[start..end].iter().map(|&(p, q)| p.ln() - q.ln());
            let (low, high) = losses.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), l| {
                (a.min(l), b.max(l))
            });
            assert!(
                atom.loss >= low - 1e-12 && atom.loss <= high + 1e-12,
                "loss {} outside [{low}, {high}]",
                atom.loss
            );
            assert!(high - low <= 2.0 * RUN_SPAN * h * (1.0 + 1e-9));
            // P-mass at most, Q-mass at least the exact sums (compensated).
            let sum = |f: fn(&(f64, f64)) -> f64| {
                crate::numeric::summation::neumaier_sum(masses[start..end].iter().map(f))
            };
            assert!(atom.p <= sum(|m| m.0));
            assert!(atom.q >= sum(|m| m.1));
            start = end;
        }
        assert_eq!(start, masses.len());
        assert!(merged.len() < masses.len() / 4, "{} runs", merged.len());
        let unmerged = masses
            .iter()
            .map(|&(p, q)| LossAtom::from_masses(p, q))
            .collect();
        let (merged, unmerged) = (
            LossAtoms::from_atoms(merged, 0.0, 0.0),
            LossAtoms::from_atoms(unmerged, 0.0, 0.0),
        );
        for i in 0..=60 {
            let epsilon = -2.0 + 0.25 * i as f64;
            let (a, b) = (merged.hockey_stick(epsilon), unmerged.hockey_stick(epsilon));
            assert!(
                a <= b * (1.0 + 1e-12),
                "ε {epsilon}: merged {a:e} above {b:e}"
            );
            assert!(
                a >= b * (1.0 - 1e-4),
                "ε {epsilon}: merged {a:e} far below {b:e}"
            );
        }
    }

    /// `E[(B − c)₊]` for `B = e^{μY − μ²/2}`, Y standard normal (the Gaussian mechanism's
    /// hockey stick at ε = ln c, and `1 − c` for c ≤ 0).
    fn above(mu: f64, c: f64) -> f64 {
        if c <= 0.0 {
            return 1.0 - c;
        }
        let y = (c.ln() + 0.5 * mu * mu) / mu;
        // Upper tails as lower CDFs: no cancellation against 1 deep in the tail.
        cdf(mu - y) - c * cdf(-y)
    }

    /// `E[(c − B)₊]` (0 for c ≤ 0).
    fn below(mu: f64, c: f64) -> f64 {
        if c <= 0.0 {
            return 0.0;
        }
        let y = (c.ln() + 0.5 * mu * mu) / mu;
        (c * cdf(y) - cdf(y - mu)).max(0.0)
    }

    /// Both directions of two-step random allocation, by integrating the second step out in
    /// closed form and the first by Simpson's rule over y ∈ [−14, 14] (the integrand is
    /// smooth):
    /// ```text
    /// δ_remove(ε) = E_{Y₁}[½·E(B₂ − (2e^ε − B₁))₊],   δ_add(ε) = E_{Y₁}[½e^ε·E((2e^{−ε} − B₁) − B₂)₊]
    /// ```
    fn two_steps(mu: f64, epsilon: f64) -> (f64, f64) {
        let n = 40_000;
        let (a, b) = (-14.0, 14.0);
        let h = (b - a) / n as f64;
        let (mut remove, mut add) = (0.0, 0.0);
        for i in 0..=n {
            let y = a + i as f64 * h;
            let weight = if i == 0 || i == n {
                1.0
            } else if i % 2 == 1 {
                4.0
            } else {
                2.0
            } * h
                / 3.0
                * (-0.5 * y * y).exp()
                / (2.0 * std::f64::consts::PI).sqrt();
            let b1 = (mu * y - 0.5 * mu * mu).exp();
            remove += weight * 0.5 * above(mu, 2.0 * epsilon.exp() - b1);
            add += weight * 0.5 * epsilon.exp() * below(mu, 2.0 * (-epsilon).exp() - b1);
        }
        (remove, add)
    }

    /// Check that `upper` and `lower` bracket the exact `(δ_remove, δ_add)` at `epsilon`,
    /// within `slack(exact)`; returns `(low, up, exact)` for each direction.
    fn check_bracket(
        label: &str,
        upper: &PrivacyLossDistribution,
        lower: &PrivacyLossDistribution,
        epsilon: f64,
        exact: (f64, f64),
        slack: impl Fn(f64) -> f64,
    ) -> [(f64, f64, f64); 2] {
        let directions = [
            ("remove", exact.0, upper.remove(), lower.remove()),
            ("add", exact.1, upper.add(), lower.add()),
        ];
        directions.map(|(name, exact, up, low)| {
            let (up, low) = (
                up.delta_for_epsilon(epsilon),
                low.delta_for_epsilon(epsilon),
            );
            let slack = slack(exact);
            assert!(
                low <= exact + slack && exact <= up + slack,
                "{label} ε {epsilon} {name}: [{low:e}, {up:e}] misses {exact:e}"
            );
            (low, up, exact)
        })
    }

    /// Three steps, the shortest epoch with the two-heavy-step term (see
    /// [`split_upper_law`]), at a truncation tiny enough that the split sits deep in the
    /// tail, against exact values by nested adaptive quadrature
    /// (`fixtures/random_allocation/three_steps.json`, made by
    /// `fixtures/scripts/gen_random_allocation_three_steps.py` with scipy 1.17.1).
    #[test]
    fn three_steps_are_bracketed_deep_in_the_tails() {
        let fixture: serde_json::Value = serde_json::from_str(include_str!(
            "../../fixtures/random_allocation/three_steps.json"
        ))
        .unwrap();
        let mut checked = 0;
        // Tail 1e-6: a split low enough that the two-heavy-step term weighs ~1e-5.
        for (sigma, tail) in [
            (0.8, 1e-20),
            (1.0, 1e-20),
            (2.0, 1e-20),
            (0.8, 1e-6),
            (1.0, 1e-6),
        ] {
            let g = Gaussian::new(sigma, 1.0).unwrap();
            let upper = epoch_pld(&g, 3, 1e-2, tail, Bound::Upper).unwrap();
            let lower = epoch_pld(&g, 3, 1e-2, tail, Bound::Lower).unwrap();
            let cases = fixture["cases"].as_array().unwrap().iter();
            for case in cases.filter(|c| c["sigma"].as_f64() == Some(sigma)) {
                let value = |key: &str| case[key].as_f64().unwrap();
                let exact = (value("delta_remove"), value("delta_add"));
                let label = format!("σ {sigma} tail {tail:e}");
                // The quadrature's own error, relative.
                check_bracket(&label, &upper, &lower, value("epsilon"), exact, |e| {
                    1e-9 * e
                });
                checked += 2;
            }
        }
        assert_eq!(checked, 50);
    }

    #[test]
    fn two_steps_are_bracketed_by_both_bounds() {
        for sigma in [1.5, 2.0, 4.0] {
            let g = Gaussian::new(sigma, 1.0).unwrap();
            let upper = epoch_pld(&g, 2, 1e-2, 1e-15, Bound::Upper).unwrap();
            let lower = epoch_pld(&g, 2, 1e-2, 1e-15, Bound::Lower).unwrap();
            for epsilon in [0.0, 0.05, 0.2, 0.5, 1.0, 2.0] {
                let exact = two_steps(g.mu(), epsilon);
                let label = format!("σ {sigma}");
                let slack = |e: f64| 1e-9 * e + 1e-13;
                for (low, up, exact) in check_bracket(&label, &upper, &lower, epsilon, exact, slack)
                {
                    // And tight: the grid of 1e-2 leaves a few percent at most.
                    assert!(
                        up - low <= 0.05 * exact + 1e-9,
                        "σ {sigma} ε {epsilon}: [{low:e}, {up:e}] around {exact:e}"
                    );
                }
            }
        }
    }

    /// Deep in the tails (δ down to about 1e-20), where the plain power's round-off would
    /// dominate: both bounds still bracket the exact value, and the upper one stays within
    /// a factor of it.
    #[test]
    fn two_steps_are_bracketed_deep_in_the_tails() {
        for sigma in [1.0, 2.0] {
            let g = Gaussian::new(sigma, 1.0).unwrap();
            let upper = epoch_pld(&g, 2, 1e-2, 1e-25, Bound::Upper).unwrap();
            let lower = epoch_pld(&g, 2, 1e-2, 1e-25, Bound::Lower).unwrap();
            for epsilon in [1.0, 1.5, 2.0, 3.0, 4.0, 5.0] {
                let exact = two_steps(g.mu(), epsilon);
                let label = format!("σ {sigma}");
                check_bracket(&label, &upper, &lower, epsilon, exact, |e| 1e-7 * e);
            }
        }
    }

    /// Deep in ADD's tail (δ about 1e-16), where the plain power's absolute round-off once
    /// put a floor of 2.5e-15 under ADD's upper δ, the lower-tail tilts make both
    /// directions' brackets narrow: the upper bound within 1% of the lower one, an
    /// independent construction (the landed cells).
    #[test]
    fn deep_add_tails_are_narrow_with_lower_tail_tilts() {
        let g = Gaussian::new(1.75, 1.0).unwrap();
        let (t, step, tail) = (727, 2e-4, 1e-24);
        let upper = epoch_pld(&g, t, step, tail, Bound::Upper).unwrap();
        let lower = epoch_pld(&g, t, step, tail, Bound::Lower).unwrap();
        for epsilon in [0.17, 0.2] {
            for (name, up, low) in [
                ("remove", upper.remove(), lower.remove()),
                ("add", upper.add(), lower.add()),
            ] {
                let (up, low) = (
                    up.delta_for_epsilon(epsilon),
                    low.delta_for_epsilon(epsilon),
                );
                assert!(
                    low > 0.0 && low <= up && up <= 1.01 * low,
                    "{name} δ({epsilon}): [{low:e}, {up:e}]"
                );
            }
        }
        assert!(upper.add().delta_for_epsilon(0.17) < 1.6e-16);
    }

    /// A lattice capped by its size limit is the same on two grids: the law kept from the
    /// first grid is the second's, and gives its epoch bit for bit.
    #[test]
    fn a_kept_law_serves_every_grid_of_its_lattice_bit_for_bit() {
        let g = Gaussian::new(1.0, 1.0).unwrap();
        let (t, tail) = (2, 1e-15);
        let (coarse, fine) = (4e-4, 2e-4);
        for bound in [Bound::Upper, Bound::Lower] {
            let a = Lattice::new(&g, t, coarse, tail, bound, MAX_LATTICE_POINTS).unwrap();
            let b = Lattice::new(&g, t, fine, tail, bound, MAX_LATTICE_POINTS).unwrap();
            assert_eq!((a.delta, a.points), (b.delta, b.points), "{bound:?}");
            assert!(
                a.delta > 0.5 * coarse * (t as f64).sqrt(),
                "{bound:?}: capped"
            );
            let laws = EpochLaws::default();
            let first = laws.law(&g, &a, bound, coarse, tail).unwrap();
            let again = laws.law(&g, &b, bound, fine, tail).unwrap();
            assert!(Arc::ptr_eq(&first, &again), "{bound:?}: computed again");
            let kept = epoch_pld_kept(&g, t, fine, tail, bound, &laws).unwrap();
            assert_eq!(
                kept,
                epoch_pld(&g, t, fine, tail, bound).unwrap(),
                "{bound:?}"
            );
            assert_eq!(laws.len(), 1);
        }
    }

    /// A memory budget caps the lattice at the largest power of two of points whose bytes
    /// fit in half of it, and the kept laws at a quarter; the default budget (2 GiB) leaves
    /// both at their maxima, so default answers do not depend on it. The lattice an epoch
    /// then uses, and the points a memory estimate counts, stay within the cap.
    #[test]
    fn a_memory_budget_caps_the_lattice_and_the_kept_laws() {
        let default = EpochLaws::<Gaussian>::within(crate::DEFAULT_MEMORY_BUDGET);
        assert_eq!(default.max_points(), MAX_LATTICE_POINTS);
        assert_eq!(default.max_kept_bytes(), KEPT_LAW_BYTES);
        let small = EpochLaws::<Gaussian>::within(256 << 20);
        // 128 MiB / 160 bytes = 838,860 points: 2¹⁹.
        assert_eq!(small.max_points(), 1 << 19);
        assert_eq!(small.max_kept_bytes(), 64 << 20);
        assert!(small.max_points() as u64 * LATTICE_BYTES_PER_POINT <= 128 << 20);
        assert_eq!(
            EpochLaws::<Gaussian>::within(16 << 20).max_points(),
            1 << 15
        );
        assert_eq!(
            EpochLaws::<Gaussian>::within(0).max_points(),
            MIN_LATTICE_POINTS
        );
        let huge = EpochLaws::<Gaussian>::within(u64::MAX);
        assert_eq!(huge.max_points(), MAX_LATTICE_POINTS);
        assert_eq!(huge.max_kept_bytes(), KEPT_LAW_BYTES);

        // σ 0.6, t 1000 at a truncation of 1e-14: capped by the default maximum, and by the
        // small budget's.
        let g = Gaussian::new(0.6, 1.0).unwrap();
        let points = |max_points| epoch_lattice_points(&g, 1000, 1e-2, 1e-14, max_points);
        assert!(points(MAX_LATTICE_POINTS) > 1 << 21 && points(MAX_LATTICE_POINTS) <= 1 << 22);
        assert!(points(1 << 19) > 1 << 18 && points(1 << 19) <= 1 << 19);
        let pld = epoch_pld_kept(&g, 1000, 1e-2, 1e-14, Bound::Upper, &small).unwrap();
        assert!(pld.remove().len() > 10);
        assert_eq!(small.len(), 1);
        assert!(small.kept.lock().unwrap()[0].0.points <= 1 << 19);
    }

    /// A law's key holds everything it depends on: the mechanism, the bound, the lattice,
    /// the truncation and (lower bound) the landing step, which follows √h on grids far
    /// finer than the lattice resolves.
    #[test]
    fn a_law_is_kept_under_everything_it_depends_on() {
        let g = Gaussian::new(1.0, 1.0).unwrap();
        let lattice = Lattice::new(&g, 2, 1e-4, 1e-15, Bound::Lower, MAX_LATTICE_POINTS).unwrap();
        let key = |g: &Gaussian, lattice: &Lattice, bound, h, tail| {
            LawKey::new(g, lattice, bound, h, tail)
        };
        let base = key(&g, &lattice, Bound::Lower, 1e-4, 1e-15);
        assert_eq!(base, key(&g, &lattice, Bound::Lower, 2e-4, 1e-15));
        let other_sigma = Gaussian::new(1.01, 1.0).unwrap();
        let finer = Lattice {
            delta: 0.5 * lattice.delta,
            ..lattice
        };
        let longer = Lattice {
            points: lattice.points - 1,
            ..lattice
        };
        for other in [
            key(&other_sigma, &lattice, Bound::Lower, 1e-4, 1e-15),
            key(&g, &lattice, Bound::Upper, 1e-4, 1e-15),
            key(&g, &finer, Bound::Lower, 1e-4, 1e-15),
            key(&g, &longer, Bound::Lower, 1e-4, 1e-15),
            key(&g, &lattice, Bound::Lower, 1e-4, 2e-15),
            key(&g, &lattice, Bound::Lower, 1e-8, 1e-15),
        ] {
            assert_ne!(base, other);
        }
        // The upper bound's law does not depend on the grid step at all.
        assert_eq!(
            key(&g, &lattice, Bound::Upper, 1e-8, 1e-15),
            key(&g, &lattice, Bound::Upper, 1e-4, 1e-15)
        );
    }

    #[test]
    fn one_step_is_the_mechanism_itself() {
        let g = Gaussian::new(1.0, 1.0).unwrap();
        for bound in [Bound::Upper, Bound::Lower] {
            let epoch = epoch_pld(&g, 1, 1e-3, 1e-15, bound).unwrap();
            let plain = PrivacyLossDistribution::from_mechanism(
                &g,
                Symmetry::Asymmetric,
                1e-3,
                1e-15,
                bound,
            )
            .unwrap();
            assert_eq!(epoch, plain);
        }
    }

    /// Many steps: the bracket is narrow, both directions, and it sits below the one-step
    /// Gaussian (amplification) and above the Gaussian of the summed outputs (a
    /// post-processing: μ/√t).
    #[test]
    fn many_steps_amplify_and_stay_narrow() {
        let g = Gaussian::new(1.0, 1.0).unwrap();
        let t = 1000;
        let upper = epoch_pld(&g, t, 1e-3, 1e-15, Bound::Upper).unwrap();
        let lower = epoch_pld(&g, t, 1e-3, 1e-15, Bound::Lower).unwrap();
        let (eu, el) = (upper.epsilon_for_delta(1e-5), lower.epsilon_for_delta(1e-5));
        assert!(el <= eu && eu - el <= 1e-3 * eu, "[{el}, {eu}]");
        let single = Gaussian::delta_for_mu(1.0, eu);
        let summed = Gaussian::delta_for_mu(1.0 / (t as f64).sqrt(), el);
        assert!(upper.delta_for_epsilon(eu) <= single);
        assert!(
            summed <= 1e-5,
            "the summed outputs alone leak δ = {summed:e} at ε {el}"
        );
        for epsilon in [0.0, 0.05, 0.1] {
            for (u, l) in [(upper.remove(), lower.remove()), (upper.add(), lower.add())] {
                let (u, l) = (u.delta_for_epsilon(epsilon), l.delta_for_epsilon(epsilon));
                assert!(l <= u && u - l <= 1e-3 * u, "ε {epsilon}: [{l:e}, {u:e}]");
            }
        }
    }

    /// One epoch of σ 1.1 over 235 steps where S/t is decided neither by the bulk of the
    /// steps nor by one heavy step (δ from about 1e-10 to 1e-13): upper and lower δ agree to
    /// 1e-3 relative. The tilts at the window's quantile levels had all coincided with one
    /// saddle point, and entries there kept error bounds up to 30 times their values: the
    /// upper δ was up to 21 times the lower at ε 1.2, and finer grids made it worse.
    #[test]
    fn the_gap_between_bulk_and_heavy_step_is_accurate() {
        let g = Gaussian::new(1.1, 1.0).unwrap();
        for step in [2e-3, 5e-4] {
            let upper = epoch_pld(&g, 235, step, 1e-20, Bound::Upper).unwrap();
            let lower = epoch_pld(&g, 235, step, 1e-20, Bound::Lower).unwrap();
            for epsilon in [0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6] {
                let u = upper.remove().delta_for_epsilon(epsilon);
                let l = lower.remove().delta_for_epsilon(epsilon);
                assert!(
                    l <= u && u <= l * (1.0 + 1e-3),
                    "step {step} ε {epsilon}: [{l:e}, {u:e}]"
                );
            }
        }
    }

    /// After the gap tilts, every entry of the bulk's tilted power above its mean and above
    /// 1e-15 is known to 1e-6 of its value (that epoch's lattice, split as the upper bound
    /// splits it; before, up to 30 times its value).
    #[test]
    fn gap_tilts_leave_no_inaccurate_entry_in_the_upper_tail() {
        let g = Gaussian::new(1.1, 1.0).unwrap();
        let tail_mass = 1e-20;
        let lattice =
            Lattice::new(&g, 235, 2e-3, tail_mass, Bound::Upper, MAX_LATTICE_POINTS).unwrap();
        let (q, _) = spread(&g, &lattice);
        let split = big_jump_split(&q, &lattice, tail_mass).expect("a heavy tail to split");
        let bulk = &q[..=split];
        let power = power(bulk, &lattice, tail_mass, true).unwrap();
        assert!(
            power.estimates.len() > 2,
            "{} estimates",
            power.estimates.len()
        );
        let mean = 235.0
            * bulk
                .iter()
                .enumerate()
                .map(|(j, &v)| j as f64 * v)
                .sum::<f64>()
            / bulk.iter().sum::<f64>();
        // (Past ~1e-16 the values meet the cut of the bulk and no tilt is much better.)
        for i in 0..power.values.len() {
            let s = power.index(i);
            let value = power.values[i];
            if s as f64 > mean && value > 1e-15 {
                let e = &power.estimates[power.source[i] as usize];
                let error = (e.roundoff + e.wrapped[i / CAP_BLOCK]) * e.factor(s);
                assert!(error <= 1e-6 * value, "entry {s}: {value:e} ± {error:e}");
            }
        }
    }

    /// The saddle-point tilt of a two-point law {0: 1 − p, m: p}, whose tilted mean
    /// `m·p·e^{λm}/(1 − p + p·e^{λm})` is `target` at `λ = ln(target·(1 − p)/(p·(m − target)))/m`;
    /// none below the untilted mean or at the top.
    #[test]
    fn saddle_tilts_match_the_closed_form() {
        let (p, m) = (1e-3, 500usize);
        let mut q = vec![0.0; m + 1];
        q[0] = 1.0 - p;
        q[m] = p;
        for target in [1.0, 10.0, 250.0, 499.0] {
            let exact = (target * (1.0 - p) / (p * (m as f64 - target))).ln() / m as f64;
            let lambda = saddle_tilt(&q, target).unwrap();
            assert!(
                (lambda / exact - 1.0).abs() <= 2e-3,
                "{target}: {lambda} vs {exact}"
            );
        }
        assert_eq!(saddle_tilt(&q, 0.1), None);
        assert_eq!(saddle_tilt(&q, m as f64), None);
    }

    /// Both directions of three-step allocation with two participations, by integrating the
    /// third step out in closed form and the first two by Simpson's rule on [−14, 14]²: the
    /// ratio is `(B₁B₂ + B₁B₃ + B₂B₃)/3 = c + a·B₃` with `a = (B₁ + B₂)/3`, `c = B₁B₂/3`, so
    /// ```text
    /// δ_remove(ε) = E[a·E(B₃ − (e^ε − c)/a)₊],   δ_add(ε) = E[e^ε·a·E((e^{−ε} − c)/a − B₃)₊]
    /// ```
    fn three_steps_two_participations(mu: f64, epsilon: f64) -> (f64, f64) {
        let n = 1200;
        let (lo, hi) = (-14.0, 14.0);
        let h = (hi - lo) / n as f64;
        let nodes: Vec<(f64, f64)> = (0..=n)
            .map(|i| {
                let y = lo + i as f64 * h;
                let simpson = if i == 0 || i == n {
                    1.0
                } else if i % 2 == 1 {
                    4.0
                } else {
                    2.0
                };
                let density = (-0.5 * y * y).exp() / (2.0 * std::f64::consts::PI).sqrt();
                ((mu * y - 0.5 * mu * mu).exp(), simpson * h / 3.0 * density)
            })
            .collect();
        let (mut remove, mut add) = (0.0, 0.0);
        for &(b1, w1) in &nodes {
            for &(b2, w2) in &nodes {
                let (a, c) = ((b1 + b2) / 3.0, b1 * b2 / 3.0);
                let w = w1 * w2;
                remove += w * a * above(mu, (epsilon.exp() - c) / a);
                add += w * epsilon.exp() * a * below(mu, ((-epsilon).exp() - c) / a);
            }
        }
        (remove, add)
    }

    /// k > 1: every statistic's lower bound stays below the exact δ of three steps with two
    /// participations, both directions, and the best of them is close to it.
    #[test]
    fn several_participations_stay_below_the_exact_three_step_values() {
        for sigma in [1.0, 2.0] {
            let g = Gaussian::new(sigma, 1.0).unwrap();
            let statistics = [
                StepStatistic::Ratio,
                StepStatistic::LogMixture(0.3),
                StepStatistic::LogMixture(2.0 / 3.0),
            ];
            // The split upper bound: one step without amplification, then one of two.
            let upper = epoch_pld(&g, 1, 1e-3, 1e-12, Bound::Upper)
                .unwrap()
                .compose(&epoch_pld(&g, 2, 1e-3, 1e-12, Bound::Upper).unwrap(), 1e-12)
                .unwrap();
            let lowers: Vec<PrivacyLossDistribution> = statistics
                .iter()
                .map(|&s| epoch_lower_several(&g, 3, 2, s, 1e-3, 1e-12).unwrap())
                .collect();
            for epsilon in [0.0, 0.25, 0.5, 1.0, 2.0] {
                let (remove, add) = three_steps_two_participations(g.mu(), epsilon);
                let (r, a) = (
                    upper.remove().delta_for_epsilon(epsilon),
                    upper.add().delta_for_epsilon(epsilon),
                );
                assert!(
                    r >= remove * (1.0 - 1e-9) && a >= add * (1.0 - 1e-9),
                    "σ {sigma} ε {epsilon} split: remove {r:e} < {remove:e} or add {a:e} < {add:e}"
                );
                let mut best: f64 = 0.0;
                for (statistic, lower) in statistics.iter().zip(&lowers) {
                    let (r, a) = (
                        lower.remove().delta_for_epsilon(epsilon),
                        lower.add().delta_for_epsilon(epsilon),
                    );
                    assert!(
                        r <= remove * (1.0 + 1e-9) && a <= add * (1.0 + 1e-9),
                        "σ {sigma} ε {epsilon} {statistic:?}: remove {r:e} > {remove:e} or \
                         add {a:e} > {add:e}"
                    );
                    best = best.max(r.max(a) / remove.max(add));
                }
                eprintln!(
                    "σ {sigma} ε {epsilon}: best lower / exact {best}, split / exact {}",
                    r.max(a) / remove.max(add)
                );
                assert!(best >= 0.9, "σ {sigma} ε {epsilon}: best only {best}");
            }
        }
    }

    /// The mass the circular buffer folds onto the window is bounded block by block and the
    /// window reaches far below its level: a coarse truncation (1e-12) must not wipe out the
    /// heavy tail where δ = 1e-10 lives (charged to every entry, it gave ε ≥ 0.708 where a
    /// truncation of 1e-16 gives 0.937; σ 1, t 1000, k 2).
    #[test]
    fn several_participations_keep_the_tail_under_a_coarse_truncation() {
        let g = Gaussian::new(1.0, 1.0).unwrap();
        let statistic = StepStatistic::LogMixture(0.7 * 2.0 / 1000.0);
        let epsilon = |tail: f64| {
            epoch_lower_several(&g, 1000, 2, statistic, 1e-3, tail)
                .unwrap()
                .epsilon_for_delta(1e-10)
        };
        let (coarse, fine) = (epsilon(1e-12), epsilon(1e-16));
        assert!(
            coarse >= 0.98 * fine,
            "tail 1e-12: {coarse}, tail 1e-16: {fine}"
        );
    }

    /// The statistics that share one lattice and its landed cells give exactly what each
    /// gives alone, and one that cannot be bounded fails in its own entry only.
    #[test]
    fn shared_cells_give_each_statistic_its_own_bound() {
        let g = Gaussian::new(0.9, 1.0).unwrap();
        let statistics = [
            StepStatistic::LogMixture(0.4 * 2.0 / 7.0),
            StepStatistic::LogMixture(1.0),
            StepStatistic::Ratio,
        ];
        let shared =
            epoch_lower_several_statistics(&g, 7, 2, &statistics, 2e-3, 1e-12, MAX_LATTICE_POINTS)
                .unwrap();
        assert_eq!(shared.len(), 3);
        assert!(shared[1].is_err(), "a rate of 1 has no bounded statistic");
        for (statistic, together) in statistics.iter().zip(&shared) {
            let alone = epoch_lower_several(&g, 7, 2, *statistic, 2e-3, 1e-12);
            let (Ok(together), Ok(alone)) = (together, alone) else {
                continue;
            };
            assert_eq!(together.remove(), alone.remove(), "{statistic:?}");
            assert_eq!(together.add(), alone.add(), "{statistic:?}");
            assert!(together.remove().delta_for_epsilon(1.0) > 0.0);
        }
    }

    #[test]
    fn several_participations_refuse_what_they_cannot_bound() {
        let g = Gaussian::new(1.0, 1.0).unwrap();
        let ratio = StepStatistic::Ratio;
        assert!(epoch_lower_several(&g, 1, 1, ratio, 1e-3, 1e-12).is_err());
        assert!(epoch_lower_several(&g, 5, 5, ratio, 1e-3, 1e-12).is_err());
        assert!(epoch_lower_several(&g, 5, 0, ratio, 1e-3, 1e-12).is_err());
        let bad_rate = StepStatistic::LogMixture(1.0);
        assert!(epoch_lower_several(&g, 5, 2, bad_rate, 1e-3, 1e-12).is_err());
        assert!(epoch_lower_several(&g, 5, 2, ratio, 1e-3, 0.0).is_err());
    }

    /// Heavy-tailed steps at a tiny truncation: the cut the truncation asks for would make
    /// the lattice so coarse that S′ = 0 (ADD's infinite loss) weighs 5e-2 (σ 0.6, t 33,
    /// grid 0.02, truncation 1e-20); the lower cut keeps both directions' infinite masses
    /// below 1e-7 (ADD's is 1.4e-8, the rest of the lattice's coarseness), and the epoch
    /// still amplifies (below one unamplified step).
    #[test]
    fn heavy_tails_at_tiny_truncations_keep_a_fine_lattice() {
        let g = Gaussian::new(0.6, 1.0).unwrap();
        let upper = epoch_pld(&g, 33, 0.02, 1e-20, Bound::Upper).unwrap();
        for (name, pmf) in [("remove", upper.remove()), ("add", upper.add())] {
            let infinite = pmf.delta_for_epsilon(1e9);
            assert!(infinite <= 1e-7, "{name}: mass at +∞ {infinite:e}");
        }
        let single = Gaussian::delta_for_mu(g.mu(), 4.0);
        let epoch = upper.delta_for_epsilon(4.0);
        assert!(
            epoch < 0.1 * single,
            "δ(4) {epoch:e} against one step's {single:e}"
        );
    }

    /// Heavy tails at tiny truncations (σ 0.686, 102 steps, grid 0.02). Truncation 1e-21:
    /// with the cut the truncation asked for, the lower bound's lattice had a spacing of 1.6,
    /// B's bulk fell on a few points and the lower bound was ε 0 at every δ (the accountant
    /// fell back on the sum of the outputs: [0.944937, 6.330808] at δ 1e-12); cut where a
    /// spacing of a quarter runs out of points, it meets the upper bound. Truncation 1e-24:
    /// the upper bound's Q(S′ = 0), ADD's +∞, was the transform's round-off, 1.2e-14, so
    /// ε(1e-15) was +∞ (the accountant answered with the unamplified Gaussian, 12.299024);
    /// it is q₀^t, about 2e-20.
    #[test]
    fn heavy_tails_at_tiny_truncations_stay_narrow() {
        let g = Gaussian::new(0.6859, 1.0).unwrap();
        for tail_mass in [1e-21, 1e-24] {
            let upper = epoch_pld(&g, 102, 0.02, tail_mass, Bound::Upper).unwrap();
            let lower = epoch_pld(&g, 102, 0.02, tail_mass, Bound::Lower).unwrap();
            let infinite = upper.add().delta_for_epsilon(1e9);
            assert!(
                infinite <= 1e-18,
                "{tail_mass:e}: ADD mass at +∞ {infinite:e}"
            );
            for (delta, relative) in [(1e-12, 2e-4), (1e-15, 1e-3)] {
                let (u, l) = (
                    upper.epsilon_for_delta(delta),
                    lower.epsilon_for_delta(delta),
                );
                assert!(
                    l <= u && u - l <= relative * u,
                    "{tail_mass:e}, δ {delta:e}: [{l}, {u}]"
                );
            }
        }
    }

    #[test]
    fn zero_steps_are_refused() {
        let g = Gaussian::new(1.0, 1.0).unwrap();
        assert!(epoch_pld(&g, 0, 1e-3, 1e-15, Bound::Upper).is_err());
        assert!(epoch_pld(&g, 10, 1e-3, 0.0, Bound::Upper).is_err());
        assert!(epoch_pld(&g, 10, f64::NAN, 1e-15, Bound::Lower).is_err());
    }
}
