//! Pessimistic rounding onto the grid: connect-the-dots by mass splitting.
//!
//! Hockey-stick curves are convex functions of `x = e^ε`, and an atom `(l, p)` contributes the
//! hinge `p·(1 − x e^{−l})₊`. A PMF whose curve lies above the true
//! curve at every x is an upper bound at every ε, and stays one under composition.

use crate::bound::Bound;
use crate::discretize::loss_bins::LossBins;
use crate::pmf::grid_pmf::GridPmf;

/// Absolute error allowed for a Q-mass computed near the underflow threshold (about 2000
/// times the smallest subnormal, 2^-1074 ≈ 4.9e-324): a Q-mass of 1e-320 has only a few
/// significant bits, and `P − e^{ε_j}·Q` with e^{ε_j} = e^{70} turns its rounding into an
/// error of 1e-290, far above a P-mass of 1e-300. Negligible everywhere else.
const UNDERFLOW_GUARD: f64 = 1e-320;

impl LossBins {
    /// Pessimistic connect-the-dots by mass splitting.
    ///
    /// Each bin's mass is split between its two end nodes so that both its P-mass and its Q-mass
    /// are preserved:
    /// ```text
    /// w_hi = (P_I − e^{ε_lo} Q_I) / (1 − e^{−(ε_hi − ε_lo)}),    w_lo = P_I − w_hi
    /// ```
    /// with the excess `P_I − e^{ε_lo} Q_I` as the mechanism computed it (the bins'
    /// `excess_low`): δ at the nodes is a sum of these excesses, so their relative
    /// accuracy is δ's.
    /// Mass below the grid goes up to the first node; mass above it goes to +∞.
    ///
    /// # Guarantee
    /// Upper bound: the curve is the chord interpolation of the (tail-modified) true curve
    /// through the grid nodes, hence above it everywhere and exact at every node. Mass is
    /// conserved and the PMF is valid (`Σ p e^{−l} ≤ 1`).
    ///
    /// # References
    /// Doroshenko, Ghazi, Kamath, Kumar & Manurangsi, "Connect the dots: tighter discrete
    /// approximations of privacy loss distributions", PETS 2022, Thm 3.3 (the chord is the
    /// tightest pessimistic PMF on a given support).
    pub fn connect_the_dots(&self) -> GridPmf {
        let h = self.step;
        let mut probs = vec![0.0; self.nodes()];
        // 1 − e^{−(ε_hi − ε_lo)} for the last width seen (most bins are one step wide).
        let mut width = (0, f64::NAN);
        for (k, pair) in self.ends.windows(2).enumerate() {
            let (lo, hi) = (pair[0], pair[1]);
            if width.0 != hi - lo {
                width = (hi - lo, -(-((hi - lo) as f64 * h)).exp_m1());
            }
            let one_minus_e_minus_width = width.1;
            // a = P_I − e^{ε_lo} Q_I, as the mechanism computed it (no cancellation).
            let p = self.p[k];
            // Q-masses near the underflow threshold carry an absolute error of some 2^-1074
            // each, which e^{ε_lo} magnifies: raise a by a bound on it (more mass up: safe).
            // (Only where Q is that small: elsewhere its relative rounding is covered by the
            // δ allowance, and exact zeros, e.g. beyond a Laplace mechanism's ε₀, stay exact.)
            let guard = if self.q[k] < 1e-290 {
                self.node_loss(lo).exp() * UNDERFLOW_GUARD
            } else {
                0.0
            };
            let a = (self.excess_low[k] + guard).max(0.0);
            let up = (a / one_minus_e_minus_width).min(p);
            probs[hi] += up;
            probs[lo] += p - up;
        }
        probs[0] += self.below.0;
        GridPmf::from_parts(
            h,
            self.first,
            probs,
            self.p_infinity + self.above.0,
            Bound::Upper,
        )
    }
}
