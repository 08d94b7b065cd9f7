//! Mechanisms as pairs of distributions with a monotone privacy loss.
//!
//! The stage after [`crate::spec`]: each event of a specification becomes one of these pairs
//! (the pair chosen for each mechanism, sampling scheme and relation is listed with its source
//! in `docs/spec.md`), which [`crate::discretize`] then puts on a grid.
//!
//! Each mechanism here describes the REMOVE pair `P = M(D ∪ {z})`, `Q = M(D)` as distributions
//! on the real line whose privacy loss `L(x) = ln(dP/dQ)(x)` is non-increasing in x. That is
//! all the discretization needs: the grid edges in loss space are mapped to x by the inverse of
//! L, and bin masses come from the CDFs of P and Q. The ADD pair is the REMOVE pair swapped
//! (its PLD is the dual `ω_add(−l) = e^{−l}·ω_remove(l)`), so it needs no code of its own.

pub mod analytic_gaussian;
pub mod bounded_range;
pub mod discrete;
mod gaussian;
mod laplace;
mod mixture_of_gaussians;
mod poisson_subsampled;
pub mod renyi_worst_case;
pub mod smooth_sensitivity;
pub mod truncated_poisson;

pub use gaussian::Gaussian;
pub use laplace::Laplace;
pub use mixture_of_gaussians::MixtureOfGaussians;
pub use poisson_subsampled::PoissonSubsampled;
pub use truncated_poisson::TruncatedPoissonGaussian;

/// A pair (P, Q) on the real line with a non-increasing privacy loss `L(x) = ln(dP/dQ)(x)`.
///
/// Implementations evaluate tails on the side where they are small, so bin masses are
/// accurate in relative terms far into the tails. They are `Sync`, and so are their edges:
/// a discretization may compute its pieces on several threads at once (the results do not
/// depend on how the pieces are shared).
pub trait MonotonePrivacyLoss: Sync {
    /// Whatever the mechanism needs to remember about a point x to difference CDFs at it.
    type Edge: Copy + Send + Sync;

    /// The privacy loss `L(x)` in nats (non-increasing in x).
    fn privacy_loss(&self, x: f64) -> f64;

    /// `x*(ε)`: the largest x with `L(x) ≥ ε`; `+∞` if ε is below the loss range and `−∞` if
    /// it is above it.
    fn inverse_privacy_loss(&self, epsilon: f64) -> f64;

    /// The CDF information of P and Q at x (x may be ±∞).
    fn edge(&self, x: f64) -> Self::Edge;

    /// [`MonotonePrivacyLoss::edge`] at every point of `x`, the same values: mechanisms whose
    /// CDFs vectorize compute them in one batch.
    fn edges(&self, x: &[f64]) -> Vec<Self::Edge> {
        x.iter().map(|&x| self.edge(x)).collect()
    }

    /// `(P, Q)` masses of the interval `(lower, upper]` between two edges.
    fn masses_between(&self, upper: Self::Edge, lower: Self::Edge) -> (f64, f64);

    /// The signed excess `P_I − e^c·Q_I` of the interval `I = (lower, upper]` between two
    /// edges, for a loss level c (finite, at most 700).
    ///
    /// This is what the discretizations need near a grid node c: the mass connect-the-dots
    /// splits off a bin, and the merged loss `c + ln(1 + excess/(e^c Q_I))` of an interval.
    /// Computed as a difference of the two masses it cancels whenever δ is small next to P_I
    /// (a subsampled mechanism at a small rate, or a base mechanism whose losses are all close
    /// to 0): mechanisms where that happens override it.
    ///
    /// # Guarantee
    /// Absolute error at most a few ulps of `P_I + e^c·Q_I` (the direct difference), and for
    /// the overrides a few ulps of the terms they add, which have the sign of the result or
    /// are bounded by it up to a polynomial factor (see each override).
    fn excess_between(&self, upper: Self::Edge, lower: Self::Edge, c: f64) -> f64 {
        let (p, q) = self.masses_between(upper, lower);
        if q > 0.0 {
            p - c.exp() * q
        } else {
            p
        }
    }

    /// `(P, Q)` masses below an edge, i.e. of `(−∞, x]`.
    fn masses_below(&self, edge: Self::Edge) -> (f64, f64);

    /// `(P, Q)` masses above an edge, i.e. of `(x, ∞)`.
    fn masses_above(&self, edge: Self::Edge) -> (f64, f64);

    /// Points `x_lo < x_hi` outside which each of P and Q has at most `tail_mass / 2` on each
    /// side. Only a choice of where to cut: the masses actually cut are recomputed and
    /// accounted for by the discretization.
    fn truncation_points(&self, tail_mass: f64) -> (f64, f64);

    /// `(P-mass at loss +∞, Q-mass at loss −∞)`: where one distribution has no density.
    fn infinite_masses(&self) -> (f64, f64) {
        (0.0, 0.0)
    }

    /// Points `(x_top, x_bottom)` beyond which the loss is constant: `L(x) = L(x_top)` for all
    /// `x ≤ x_top` and `L(x) = L(x_bottom)` for all `x ≥ x_bottom` (`None` where it never is).
    /// Such regions are atoms of the PLD (e.g. ±ε₀ for Laplace noise), kept whole by the
    /// lower-bound discretization.
    fn constant_loss_regions(&self) -> (Option<f64>, Option<f64>) {
        (None, None)
    }

    /// The exact hockey-stick divergence `δ_{P‖Q}(ε) = F_P(x*) − e^ε F_Q(x*)` with `x* = x*(ε)`
    /// (the set where the loss is at least ε is a half-line), clamped to `[0, 1]`.
    ///
    /// # Guarantee
    /// An estimate accurate to rounding: it cancels when δ ≪ F_P(x*). Mechanisms with a
    /// closed form override it; the discretization never uses it.
    fn hockey_stick(&self, epsilon: f64) -> f64 {
        let (p_inf, _) = self.infinite_masses();
        let x = self.inverse_privacy_loss(epsilon);
        let (p, q) = self.masses_below(self.edge(x));
        let finite = if q > 0.0 { p - (epsilon.exp() * q) } else { p };
        (p_inf + finite.max(0.0)).clamp(0.0, 1.0)
    }
}
