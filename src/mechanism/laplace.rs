//! The Laplace mechanism: noise with density `e^{−|x|/b}/(2b)` on a query of sensitivity Δ.

use super::MonotonePrivacyLoss;
use crate::error::{Error, Result};
use crate::numeric::normal::Tail;

/// Laplace noise of scale `scale` (b) on a query of (L1) sensitivity `sensitivity` (Δ).
///
/// REMOVE pair: `P = Lap(−Δ, b)`, `Q = Lap(0, b)`, with `ε₀ = Δ/b`:
/// ```text
/// L(x)  = (|x| − |x+Δ|)/b ∈ [−ε₀, ε₀]      (= ε₀ for x ≤ −Δ, = −ε₀ for x ≥ 0)
/// x*(ε) = −(Δ + bε)/2                      for |ε| < ε₀
/// δ(ε)  = 1 − e^{(ε−ε₀)/2}                 for −ε₀ ≤ ε < ε₀, and 0 beyond
/// ```
/// The PLD has atoms `+ε₀` (mass ½) and `−ε₀` (mass `e^{−ε₀}/2`) and the density
/// `¼e^{(t−ε₀)/2}` between them. The pair is symmetric: ADD has the same PLD.
///
/// # References
/// Koskela, Jälkö, Prediger & Honkela, "Tight differential privacy for
/// discrete-valued mechanisms and for the subsampled Gaussian mechanism using FFT", AISTATS
/// 2021, §3 (the Laplace PLD).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Laplace {
    scale: f64,
    sensitivity: f64,
}

impl Laplace {
    /// A Laplace mechanism.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless both `scale` and `sensitivity` are finite and > 0,
    /// and `ε₀ = Δ/b` is finite.
    pub fn new(scale: f64, sensitivity: f64) -> Result<Self> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(Error::invalid("scale", scale, "a finite number > 0"));
        }
        if !(sensitivity.is_finite() && sensitivity > 0.0) {
            return Err(Error::invalid(
                "sensitivity",
                sensitivity,
                "a finite number > 0",
            ));
        }
        if !(sensitivity / scale).is_finite() {
            return Err(Error::invalid(
                "sensitivity / scale",
                sensitivity / scale,
                "finite",
            ));
        }
        Ok(Laplace { scale, sensitivity })
    }

    /// `ε₀ = Δ/b`, the mechanism's pure-DP ε and largest privacy loss.
    pub fn epsilon0(&self) -> f64 {
        self.sensitivity / self.scale
    }

    /// Scale b.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// The tail of the noise `Lap(0, b)` at x, on the side where it is small.
    pub fn noise_tail(&self, x: f64) -> Tail {
        let z = x / self.scale;
        if z <= 0.0 {
            Tail::Left(0.5 * z.exp())
        } else {
            Tail::Right(0.5 * (-z).exp())
        }
    }

    /// Exact δ(ε) of the mechanism: `1 − e^{(ε−ε₀)/2}` on `[−ε₀, ε₀)`, `1 − e^ε` below, 0
    /// above.
    ///
    /// # Guarantee
    /// Exact up to rounding (one `expm1`).
    pub fn delta_for_epsilon0(epsilon0: f64, epsilon: f64) -> f64 {
        if epsilon >= epsilon0 {
            0.0
        } else if epsilon >= -epsilon0 {
            -(0.5 * (epsilon - epsilon0)).exp_m1()
        } else {
            -epsilon.exp_m1()
        }
    }
}

/// CDF information of the Laplace pair at one point.
#[derive(Debug, Clone, Copy)]
pub struct LaplaceEdge {
    /// Tail of P = Lap(−Δ, b).
    p: Tail,
    /// Tail of Q = Lap(0, b).
    q: Tail,
}

impl MonotonePrivacyLoss for Laplace {
    type Edge = LaplaceEdge;

    fn privacy_loss(&self, x: f64) -> f64 {
        let e0 = self.epsilon0();
        if x <= -self.sensitivity {
            e0
        } else if x >= 0.0 {
            -e0
        } else {
            (-(2.0 * x + self.sensitivity) / self.scale).clamp(-e0, e0)
        }
    }

    fn inverse_privacy_loss(&self, epsilon: f64) -> f64 {
        let e0 = self.epsilon0();
        if epsilon > e0 {
            f64::NEG_INFINITY
        } else if epsilon == e0 {
            -self.sensitivity
        } else if epsilon <= -e0 {
            f64::INFINITY
        } else {
            // Within (−Δ, 0) by construction; clamp against rounding.
            (-(self.sensitivity + self.scale * epsilon) / 2.0).clamp(-self.sensitivity, 0.0)
        }
    }

    fn edge(&self, x: f64) -> LaplaceEdge {
        LaplaceEdge {
            p: self.noise_tail(x + self.sensitivity),
            q: self.noise_tail(x),
        }
    }

    fn masses_between(&self, upper: LaplaceEdge, lower: LaplaceEdge) -> (f64, f64) {
        (upper.p.mass_above(lower.p), upper.q.mass_above(lower.q))
    }

    fn masses_below(&self, edge: LaplaceEdge) -> (f64, f64) {
        (edge.p.below(), edge.q.below())
    }

    fn masses_above(&self, edge: LaplaceEdge) -> (f64, f64) {
        (edge.p.above(), edge.q.above())
    }

    fn truncation_points(&self, _tail_mass: f64) -> (f64, f64) {
        // The loss is constant beyond these points: nothing needs cutting.
        (-self.sensitivity, 0.0)
    }

    fn constant_loss_regions(&self) -> (Option<f64>, Option<f64>) {
        (Some(-self.sensitivity), Some(0.0))
    }

    fn hockey_stick(&self, epsilon: f64) -> f64 {
        Laplace::delta_for_epsilon0(self.epsilon0(), epsilon)
    }
}
