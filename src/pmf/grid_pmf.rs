//! A privacy loss distribution discretized on a uniform grid.

use crate::bound::Bound;
use crate::error::{Error, Result};

/// Largest |loss| (nats) a grid may reach: `e^{±l}` must stay finite in f64.
pub const MAX_ABS_LOSS: f64 = 700.0;

/// The loss range the accountant represents on its grids, `[−LOSS_LIMIT, LOSS_LIMIT]` nats.
/// Mass beyond it is folded in the safe direction: above, to +∞ (upper bounds) or down to the
/// top point (lower bounds); below, up to the first point (upper) or dropped (lower). Every
/// δ at |ε| < 600 is unaffected by where such mass sits exactly within that rule.
pub const LOSS_LIMIT: f64 = 600.0;

/// A discrete privacy loss distribution on the grid `{(offset + i)·step}` plus an atom at +∞.
///
/// `probs[i]` is the P-probability of the loss `(offset + i)·step` nats; `infinity_mass` the
/// P-probability of an infinite loss. Losses are never stored as floats: grid arithmetic is
/// done on the integer indices.
///
/// # Guarantee
/// With `bound == Upper` the hockey-stick curve δ(ε) of this PMF (plus the recorded round-off
/// allowance) is at least the true curve at every ε; with `Lower` it is at most the true curve
/// (after subtracting the recorded round-off and `excess_mass`). The total mass of an upper
/// PMF is 1 up to rounding (truncation moves mass, it never drops it); a lower PMF may have
/// less than 1 (truncated mass is dropped, which only lowers δ).
#[derive(Debug, Clone, PartialEq)]
pub struct GridPmf {
    pub(crate) step: f64,
    pub(crate) offset: i64,
    pub(crate) probs: Vec<f64>,
    pub(crate) infinity_mass: f64,
    pub(crate) bound: Bound,
    /// Worst-case a-priori bound on the ℓ2 norm of the absolute FFT round-off in `probs`
    /// (diagnostic; see [`crate::numeric::fft_convolution`]).
    pub(crate) roundoff_l2: f64,
    /// Estimated round-off floor of every entry of `probs` (see
    /// [`crate::numeric::fft_convolution::Convolved::roundoff_floor`]); charged to δ(ε) for
    /// every entry above ε, with the entry's weight `1 − e^{ε − l}` in δ.
    pub(crate) roundoff_floor: f64,
    /// Lower PMFs only: mass that may sit at a higher loss than it should (FFT aliasing).
    /// δ read from a lower PMF is reduced by this amount.
    pub(crate) excess_mass: f64,
    /// Entries folded into the first entry by truncation (their round-off is charged to δ
    /// whenever the first entry is above ε).
    pub(crate) folded_bottom: u64,
    /// Entries folded elsewhere (into the top, into `infinity_mass`, or by an earlier
    /// composition): their round-off is charged to every δ.
    pub(crate) folded_top: u64,
    /// Summed per-entry error bounds of entries folded away while `entry_errors` was kept:
    /// charged to every δ.
    pub(crate) folded_error: f64,
    /// Whether the grid is shifted by half a step: losses `(offset + i + ½)·step`. Lower
    /// PMFs live on this grid (see [`crate::discretize::lumped_atoms`]).
    pub(crate) half_offset: bool,
    /// Lower PMFs only: how far (nats) every stored loss may sit above where a valid lower
    /// bound may put it. ε read from the PMF is lowered by it.
    pub(crate) loss_allowance: f64,
    /// Optional per-entry bounds on the absolute round-off error of `probs` (from tilted
    /// self-composition); when present, δ uses whichever of these and the ℓ2 bound is smaller.
    pub(crate) entry_errors: Option<Vec<f64>>,
    /// How many discretized runs' rounding this PMF carries: 1 for one run, the sum for two
    /// PMFs composed, k times as many for a k-fold power, the largest of a mixture's parts.
    /// Every δ read from the PMF is widened for that many runs' rounding (see
    /// [`crate::pmf::run_rounding`]).
    pub(crate) rounding_runs: f64,
}

/// A PMF's probabilities go back to the FFT output buffers (`recycle` in
/// [`crate::numeric::fft_convolution`]): the next composition of about the same size reuses
/// their memory instead of faulting in fresh pages.
impl Drop for GridPmf {
    fn drop(&mut self) {
        crate::numeric::fft_convolution::recycle(std::mem::take(&mut self.probs));
    }
}

impl GridPmf {
    /// A PMF from explicit probabilities.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `step` is not finite and > 0, a probability or
    /// `infinity_mass` is negative or not finite, the grid reaches beyond ±700 nats, or the
    /// total mass exceeds 1 + 1e-9.
    pub fn new(
        step: f64,
        offset: i64,
        probs: Vec<f64>,
        infinity_mass: f64,
        bound: Bound,
    ) -> Result<GridPmf> {
        if !(step.is_finite() && step > 0.0) {
            return Err(Error::invalid("step", step, "a finite number > 0"));
        }
        if let Some((i, p)) = probs
            .iter()
            .enumerate()
            .find(|(_, p)| !(p.is_finite() && **p >= 0.0))
        {
            return Err(Error::invalid(
                format!("probs[{i}]"),
                p,
                "a finite number ≥ 0",
            ));
        }
        if !(infinity_mass.is_finite() && infinity_mass >= 0.0) {
            return Err(Error::invalid(
                "infinity_mass",
                infinity_mass,
                "a finite number ≥ 0",
            ));
        }
        let top = (offset as f64 + probs.len() as f64) * step;
        let bottom = offset as f64 * step;
        if top.abs() > MAX_ABS_LOSS || bottom.abs() > MAX_ABS_LOSS {
            return Err(Error::invalid(
                "offset",
                offset,
                "such that every loss on the grid lies within ±700 nats",
            ));
        }
        let pmf = GridPmf::from_parts(step, offset, probs, infinity_mass, bound);
        let total = pmf.total_mass();
        if total > 1.0 + 1e-9 {
            return Err(Error::invalid("total mass", total, "at most 1"));
        }
        Ok(pmf)
    }

    /// A PMF with no round-off, folding or allowance recorded yet (trusted inputs).
    pub(crate) fn from_parts(
        step: f64,
        offset: i64,
        probs: Vec<f64>,
        infinity_mass: f64,
        bound: Bound,
    ) -> GridPmf {
        GridPmf {
            step,
            offset,
            probs,
            infinity_mass,
            bound,
            roundoff_l2: 0.0,
            roundoff_floor: 0.0,
            excess_mass: 0.0,
            folded_bottom: 0,
            folded_top: 0,
            folded_error: 0.0,
            half_offset: false,
            loss_allowance: 0.0,
            entry_errors: None,
            rounding_runs: 1.0,
        }
    }

    /// Grid step h in nats.
    pub fn step(&self) -> f64 {
        self.step
    }

    /// Grid index of `probs[0]`: its loss is `offset·step`.
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// Probabilities of the finite losses, starting at loss `offset·step`.
    pub fn probs(&self) -> &[f64] {
        &self.probs
    }

    /// Probability of an infinite privacy loss.
    pub fn infinity_mass(&self) -> f64 {
        self.infinity_mass
    }

    /// Which side of the truth this PMF is on.
    pub fn bound(&self) -> Bound {
        self.bound
    }

    /// Worst-case bound on the ℓ2 norm of the FFT round-off error of `probs`.
    pub fn roundoff_l2(&self) -> f64 {
        self.roundoff_l2
    }

    /// Estimated round-off floor of each entry, charged to every δ read from the PMF.
    pub fn roundoff_floor(&self) -> f64 {
        self.roundoff_floor
    }

    /// For lower PMFs, mass that FFT aliasing may have moved up (subtracted from δ).
    pub fn excess_mass(&self) -> f64 {
        self.excess_mass
    }

    /// The privacy loss of `probs[i]`, in nats.
    pub fn loss(&self, i: usize) -> f64 {
        let half = if self.half_offset { 0.5 } else { 0.0 };
        ((self.offset + i as i64) as f64 + half) * self.step
    }

    /// For lower PMFs: how far every stored loss may sit too high (nats).
    pub fn loss_allowance(&self) -> f64 {
        self.loss_allowance
    }

    /// How many discretized runs' rounding every δ read from this PMF is widened for (see
    /// [`crate::pmf::run_rounding`]).
    pub fn rounding_runs(&self) -> f64 {
        self.rounding_runs
    }

    /// Move the whole steps of the loss allowance into the offset: every stored loss moves
    /// down by them and the allowance shrinks by as much, so every ε and δ read is the same
    /// (up to the rounding of the subtraction, which is added back to the allowance: never
    /// less of it than before). A composition adds its parts' allowances, and a lower PMF on
    /// shifted nodes (see [`crate::discretize::lumped_atoms`]) carries most of a step: k-fold,
    /// the stored losses would drift k such steps above the true ones and out of the ±700
    /// nats a grid may span.
    pub(crate) fn settle_loss_allowance(&mut self) {
        let whole = whole_steps(self.loss_allowance, self.step);
        if whole > 0 {
            let allowance = self.loss_allowance;
            self.offset -= whole;
            let rest = (allowance - whole as f64 * self.step).max(0.0);
            self.loss_allowance = rest + 4.0 * f64::EPSILON * allowance;
        }
    }

    /// Whether losses sit at `(offset + i + ½)·step` rather than `(offset + i)·step`.
    pub fn half_offset(&self) -> bool {
        self.half_offset
    }

    /// The same PMF on the half-shifted grid `(offset + i + ½)·step`.
    pub fn with_half_offset(mut self, half_offset: bool) -> GridPmf {
        self.half_offset = half_offset;
        self
    }

    /// Number of grid points stored.
    pub fn len(&self) -> usize {
        self.probs.len()
    }

    /// Number of f64 values held: the probabilities and, when kept, their per-entry error
    /// bounds (what the accountant's memory estimate counts).
    pub(crate) fn stored_points(&self) -> usize {
        self.probs.len() + self.entry_errors.as_ref().map_or(0, Vec::len)
    }

    /// Whether no finite loss carries a stored probability slot.
    pub fn is_empty(&self) -> bool {
        self.probs.is_empty()
    }

    /// Total finite mass `Σ probs`, compensated: within 2u of it relative
    /// ([`crate::numeric::summation::compensated_sum`]).
    pub fn finite_mass(&self) -> f64 {
        crate::numeric::summation::compensated_sum(&self.probs)
    }

    /// Total mass, finite plus infinite.
    pub fn total_mass(&self) -> f64 {
        self.finite_mass() + self.infinity_mass
    }

    /// `Σ p_i e^{−l_i}`: the Q-mass covered by P (≤ 1 for a PMF of a real pair: the
    /// Q-mass of the outcomes where P > 0).
    pub fn q_mass(&self) -> f64 {
        // Zero entries skipped (single events' PMFs are mostly zeros): adding 0 leaves the
        // compensated sum unchanged, so the result is the same.
        crate::numeric::summation::neumaier_sum(
            self.probs
                .iter()
                .enumerate()
                .filter(|(_, &p)| p != 0.0)
                .map(|(i, p)| p * (-self.loss(i)).exp()),
        )
    }
}

/// The whole grid steps in a loss allowance (0 below one step; 0 too where it is not a finite
/// number of steps an offset can hold): how far [`GridPmf::settle_loss_allowance`] moves the
/// stored grid down.
pub(crate) fn whole_steps(allowance: f64, step: f64) -> i64 {
    let steps = (allowance / step).floor();
    if (1.0..1e15).contains(&steps) {
        steps as i64
    } else {
        0
    }
}
