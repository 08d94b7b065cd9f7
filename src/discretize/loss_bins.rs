//! The exact P- and Q-masses of a mechanism's privacy loss, binned on a uniform grid.

use crate::error::{Error, Result};
use crate::mechanism::MonotonePrivacyLoss;
use crate::pmf::grid_pmf::LOSS_LIMIT;

/// Largest number of grid points a single mechanism may be discretized onto.
pub const MAX_GRID_POINTS: usize = 1 << 22;

/// A privacy loss distribution before rounding: exact masses between consecutive grid points.
///
/// Nodes are the losses `ε_j = (first + j)·step`, `j = 0..nodes`. Bin j holds the losses in
/// `[ε_j, ε_{j+1})` with P-mass `p[j]` and Q-mass `q[j]`. Losses below `ε_0` and at or above
/// the top node are kept as separate `(P, Q)` totals, and so are the infinite losses.
///
/// Knowing both P- and Q-masses is what makes connect-the-dots exact per bin (each bin's
/// mass is split between its two nodes keeping both masses; Doroshenko et al., PETS 2022) and the merged atoms of [`crate::discretize::lumped_atoms`] exact, and it makes the other
/// direction free: the ADD pair is the REMOVE pair swapped, see [`LossBins::swapped`].
///
/// What connect-the-dots actually uses is the excess `P_I − e^{ε} Q_I` of a bin at one of its
/// nodes, and that is stored too, computed by the mechanism: as a difference of the stored
/// masses it would cancel when δ is far below the bin's mass (small sampling rates), and its
/// absolute rounding error would not be covered by the relative floating-point allowance.
#[derive(Debug, Clone, PartialEq)]
pub struct LossBins {
    pub(crate) step: f64,
    pub(crate) first: i64,
    pub(crate) p: Vec<f64>,
    pub(crate) q: Vec<f64>,
    /// `p[j] − e^{ε_j}·q[j] ≥ 0`: the excess of bin j at its lower node, computed by the
    /// mechanism without cancellation ([`MonotonePrivacyLoss::excess_between`]).
    pub(crate) excess_low: Vec<f64>,
    /// `p[j] − e^{ε_{j+1}}·q[j] ≤ 0`: the excess at its upper node (what the swapped pair
    /// needs, see [`LossBins::swapped`]).
    pub(crate) excess_high: Vec<f64>,
    /// (P, Q) mass of the finite losses below `ε_0`.
    pub(crate) below: (f64, f64),
    /// (P, Q) mass of the finite losses at or above the top node.
    pub(crate) above: (f64, f64),
    /// P-mass of loss +∞ (Q = 0 there).
    pub(crate) p_infinity: f64,
    /// Q-mass of loss −∞ (P = 0 there).
    pub(crate) q_neg_infinity: f64,
}

/// Smallest `|P_I − e^c Q_I| / (P_I + e^c Q_I)` at which the excess is taken as the direct
/// difference: its rounding is then below about `2u/1e-5 ≈ 4e-11` of the excess (within the
/// δ allowance of [`crate::pmf::hockey_stick::FLOATING_POINT_ALLOWANCE`]).
const DIRECT_EXCESS_MARGIN: f64 = 1e-5;

/// `P_I − e^c·Q_I` of an interval with masses `(p, q)` and `scale = e^c`: the direct
/// difference where it cancels little (error a few ulps of `p + e^c q`, below 4e-11 of the
/// result), else `stable()`, the mechanism's cancellation-free form
/// ([`MonotonePrivacyLoss::excess_between`], which costs more CDF work).
pub(crate) fn excess_between(p: f64, q: f64, scale: f64, stable: impl FnOnce() -> f64) -> f64 {
    let direct = p - scale * q;
    if direct.abs() >= DIRECT_EXCESS_MARGIN * (p + scale * q) {
        direct
    } else {
        stable()
    }
}

impl LossBins {
    /// Bin the privacy loss of `mechanism` on the grid of step `step`, cutting the outcome
    /// space where P and Q have at most `tail_mass / 2` left on each side.
    ///
    /// # Errors
    /// [`Error::GridTooLarge`] if more than [`MAX_GRID_POINTS`] points would be needed, and
    /// [`Error::InvalidParameter`] if the loss at a truncation point is not finite. Losses
    /// beyond ±[`LOSS_LIMIT`] are not an error: they join the tails.
    pub fn from_mechanism<M: MonotonePrivacyLoss>(
        mechanism: &M,
        step: f64,
        tail_mass: f64,
    ) -> Result<LossBins> {
        let (x_lo, x_hi) = mechanism.truncation_points(tail_mass);
        // Beyond ±LOSS_LIMIT the mass joins the tails (above: +∞ for the upper bound).
        let top_loss = mechanism.privacy_loss(x_lo).min(LOSS_LIMIT);
        let bottom_loss = mechanism.privacy_loss(x_hi).max(-LOSS_LIMIT);
        if !(top_loss.is_finite() && bottom_loss.is_finite()) {
            return Err(Error::invalid(
                "privacy loss range to represent",
                format!("[{bottom_loss}, {top_loss}] nats"),
                "finite",
            ));
        }
        // With loss atoms at the ends of the range (Laplace's ±ε₀), one spare node beyond each
        // end: the atom then lies inside a bin and is split, rather than left in the tails
        // (where the top would go to +∞).
        let pad = i64::from(mechanism.constant_loss_regions() != (None, None));
        // Sizes in f64 first: a tiny step must give an error, not a saturated or wrapped index.
        let first = (bottom_loss / step).floor() - pad as f64;
        let last = (top_loss / step).ceil() + pad as f64;
        let nodes = (last - first + 1.0).max(2.0);
        if !(nodes <= MAX_GRID_POINTS as f64 && first.abs() < 1e15 && last.abs() < 1e15) {
            return Err(Error::GridTooLarge {
                points: if nodes < u64::MAX as f64 {
                    nodes as u64
                } else {
                    u64::MAX
                },
                limit: MAX_GRID_POINTS as u64,
                hint: format!("use a grid step larger than {step:e}"),
            });
        }
        let first = first as i64;
        let nodes = nodes as usize;
        let edges: Vec<M::Edge> = (0..nodes)
            .map(|j| {
                let epsilon = (first + j as i64) as f64 * step;
                mechanism.edge(mechanism.inverse_privacy_loss(epsilon))
            })
            .collect();
        let mut p = Vec::with_capacity(nodes - 1);
        let mut q = Vec::with_capacity(nodes - 1);
        let mut excess_low = Vec::with_capacity(nodes - 1);
        let mut excess_high = Vec::with_capacity(nodes - 1);
        let node_loss = |j: usize| (first + j as i64) as f64 * step;
        let scales: Vec<f64> = (0..nodes).map(|j| node_loss(j).exp()).collect();
        for j in 0..nodes - 1 {
            // Node j sits at larger x than node j+1: L is non-increasing.
            let (pj, qj) = mechanism.masses_between(edges[j], edges[j + 1]);
            p.push(pj);
            q.push(qj);
            // The direct difference where it cancels little; the mechanism's stable form
            // (more CDF work) only where it would lose more than ~17 bits (tiny sampling
            // rates, tiny shifts, very fine grids).
            let excess = |node: usize| {
                excess_between(pj, qj, scales[node], || {
                    mechanism.excess_between(edges[j], edges[j + 1], node_loss(node))
                })
            };
            excess_low.push(excess(j));
            excess_high.push(excess(j + 1));
        }
        let (p_infinity, q_neg_infinity) = mechanism.infinite_masses();
        let bins = LossBins {
            step,
            first,
            p,
            q,
            excess_low,
            excess_high,
            below: mechanism.masses_above(edges[0]),
            above: mechanism.masses_below(edges[nodes - 1]),
            p_infinity,
            q_neg_infinity,
        };
        Ok(bins)
    }

    /// The bins of the swapped pair (Q, P), whose privacy loss is the negated one.
    ///
    /// ```text
    /// bin [ε_j, ε_{j+1}) with (P, Q)  ↦  bin (−ε_{j+1}, −ε_j] with (Q, P)
    /// ```
    /// Losses exactly on a node change side of the half-open bins; connect-the-dots treats a
    /// bin's mass as spread over the closed bin, so nothing depends on it. The excesses follow
    /// without any subtraction:
    /// ```text
    /// Q_I − e^{−ε_{j+1}} P_I = −e^{−ε_{j+1}}·(P_I − e^{ε_{j+1}} Q_I)      (new lower node −ε_{j+1})
    /// Q_I − e^{−ε_j} P_I     = −e^{−ε_j}·(P_I − e^{ε_j} Q_I)              (new upper node −ε_j)
    /// ```
    pub fn swapped(&self) -> LossBins {
        let nodes = self.p.len() as i64 + 1;
        let scaled = |excess: &[f64], shift: usize| -> Vec<f64> {
            excess
                .iter()
                .enumerate()
                .rev()
                .map(|(j, &e)| -(-self.node_loss(j + shift)).exp() * e)
                .collect()
        };
        LossBins {
            step: self.step,
            first: -(self.first + nodes - 1),
            p: self.q.iter().rev().copied().collect(),
            q: self.p.iter().rev().copied().collect(),
            excess_low: scaled(&self.excess_high, 1),
            excess_high: scaled(&self.excess_low, 0),
            below: (self.above.1, self.above.0),
            above: (self.below.1, self.below.0),
            p_infinity: self.q_neg_infinity,
            q_neg_infinity: self.p_infinity,
        }
    }

    /// Grid step in nats.
    pub fn step(&self) -> f64 {
        self.step
    }

    /// Number of grid nodes (one more than the number of bins).
    pub fn nodes(&self) -> usize {
        self.p.len() + 1
    }

    /// The loss of node j.
    pub(crate) fn node_loss(&self, j: usize) -> f64 {
        (self.first + j as i64) as f64 * self.step
    }
}
