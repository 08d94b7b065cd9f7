//! Gaussian noise on a query whose sensitivity is itself random (a mixture of shifts).

use super::MonotonePrivacyLoss;
use crate::error::{Error, Result};
use crate::numeric::log_space::log_sum_exp;
use crate::numeric::normal::{self, Tail};

/// Gaussian noise N(0, σ²) added to a query whose contribution from the differing record is
/// `c_i ≥ 0` with probability `p_i`.
///
/// REMOVE pair `P = Σ pᵢ N(−cᵢ, σ²)`, `Q = N(0, σ²)`:
/// ```text
/// L(x) = ln Σ pᵢ exp(cᵢ(−cᵢ/2 − x)/σ²)      (convex and non-increasing in x)
/// ```
/// `x*(ε)` has no closed form and is found by safeguarded Newton iteration. The ADD pair is the
/// swap. The subsampled Gaussian is the mixture `{0: 1−q, Δ: q}`.
///
/// # References
/// dp_accounting 0.6.0 `MixtureGaussianPrivacyLoss` (the same pair); Choquette-Choo, Ganesh,
/// Steinke & Thakurta, "Privacy amplification for matrix mechanisms", ICLR 2024, Cor. 4.7
/// (vector-valued mixtures are dominated by the scalar one with the norms as shifts).
#[derive(Debug, Clone, PartialEq)]
pub struct MixtureOfGaussians {
    sigma: f64,
    /// (ln pᵢ, cᵢ) for the components with pᵢ > 0.
    components: Vec<(f64, f64)>,
    largest_shift: f64,
}

/// Most Newton steps spent on one inverse.
const MAX_NEWTON_STEPS: usize = 100;

impl MixtureOfGaussians {
    /// The mixture with noise `sigma`, shifts `sensitivities` and their `probabilities`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for σ not finite and > 0, a shift that is negative or not
    /// finite, probabilities that are negative or do not sum to 1 (±1e-9), or lists of
    /// different lengths.
    pub fn new(sigma: f64, sensitivities: &[f64], probabilities: &[f64]) -> Result<Self> {
        if !(sigma.is_finite() && sigma > 0.0) {
            return Err(Error::invalid("sigma", sigma, "a finite number > 0"));
        }
        if sensitivities.len() != probabilities.len() || sensitivities.is_empty() {
            return Err(Error::invalid(
                "probabilities",
                format!("{} entries", probabilities.len()),
                &format!("one per sensitivity ({})", sensitivities.len()),
            ));
        }
        let total: f64 = probabilities.iter().sum();
        if total.is_nan() || (total - 1.0).abs() > 1e-9 {
            return Err(Error::invalid("probabilities", total, "summing to 1"));
        }
        let mut components = Vec::new();
        for (i, (&c, &p)) in sensitivities.iter().zip(probabilities).enumerate() {
            if !(c.is_finite() && c >= 0.0) {
                return Err(Error::invalid(
                    format!("sensitivities[{i}]"),
                    c,
                    "a finite number ≥ 0",
                ));
            }
            if !(p.is_finite() && p >= 0.0) {
                return Err(Error::invalid(
                    format!("probabilities[{i}]"),
                    p,
                    "a number in [0, 1]",
                ));
            }
            if p > 0.0 {
                components.push(((p / total).ln(), c));
            }
        }
        let largest_shift = components.iter().map(|c| c.1).fold(0.0, f64::max);
        Ok(MixtureOfGaussians {
            sigma,
            components,
            largest_shift,
        })
    }

    /// The largest shift `max cᵢ` (0 means the two distributions are equal).
    pub fn largest_shift(&self) -> f64 {
        self.largest_shift
    }

    /// `(L(x), L'(x))`.
    fn loss_and_slope(&self, x: f64) -> (f64, f64) {
        let s2 = self.sigma * self.sigma;
        let exponents: Vec<f64> = self
            .components
            .iter()
            .map(|&(lp, c)| lp + c * (-0.5 * c - x) / s2)
            .collect();
        let loss = log_sum_exp(&exponents);
        let slope = -self
            .components
            .iter()
            .zip(&exponents)
            .map(|(&(_, c), &e)| (e - loss).exp() * c)
            .sum::<f64>()
            / s2;
        (loss, slope)
    }

    /// `(P, Q)` masses of `(lower, upper]` in x.
    fn masses(&self, upper: f64, lower: f64) -> (f64, f64) {
        let s = self.sigma;
        let q = Tail::at(upper / s).mass_above(Tail::at(lower / s));
        let p = self
            .components
            .iter()
            .map(|&(lp, c)| {
                lp.exp() * Tail::at((upper + c) / s).mass_above(Tail::at((lower + c) / s))
            })
            .sum::<f64>();
        (p.min(1.0), q)
    }
}

impl MonotonePrivacyLoss for MixtureOfGaussians {
    type Edge = f64;

    fn privacy_loss(&self, x: f64) -> f64 {
        self.loss_and_slope(x).0
    }

    fn inverse_privacy_loss(&self, epsilon: f64) -> f64 {
        if self.largest_shift == 0.0 {
            return if epsilon <= 0.0 {
                f64::INFINITY
            } else {
                f64::NEG_INFINITY
            };
        }
        // The loss decreases from +∞ (x → −∞) to ln P(c = 0) (x → +∞).
        let zero_mass: f64 = self
            .components
            .iter()
            .filter(|c| c.1 == 0.0)
            .map(|c| c.0.exp())
            .sum();
        if zero_mass > 0.0 && epsilon <= zero_mass.ln() {
            return f64::INFINITY;
        }
        if epsilon.is_infinite() {
            return -epsilon;
        }
        // Bracket [lo, hi] with L(lo) ≥ ε > L(hi), then safeguarded Newton.
        let step = self.sigma * self.sigma / self.largest_shift;
        let mut x = -0.5 * self.largest_shift - epsilon * step;
        let (mut lo, mut hi) = (f64::NEG_INFINITY, f64::INFINITY);
        let mut width = step.max(self.sigma);
        for _ in 0..MAX_NEWTON_STEPS {
            let (loss, slope) = self.loss_and_slope(x);
            if loss >= epsilon {
                lo = x;
            } else {
                hi = x;
            }
            if hi - lo <= 1e-15 * x.abs().max(self.sigma) {
                break;
            }
            let newton = x - (loss - epsilon) / slope;
            x = if newton.is_finite() && newton > lo && newton < hi {
                newton
            } else if lo.is_finite() && hi.is_finite() {
                0.5 * (lo + hi)
            } else if lo.is_finite() {
                width *= 2.0;
                lo + width
            } else {
                width *= 2.0;
                hi - width
            };
            if (newton - x).abs() == 0.0 && loss == epsilon {
                return x;
            }
        }
        // The largest x known to have loss ≥ ε.
        if lo.is_finite() {
            lo
        } else {
            x
        }
    }

    fn edge(&self, x: f64) -> f64 {
        x
    }

    fn masses_between(&self, upper: f64, lower: f64) -> (f64, f64) {
        self.masses(upper, lower)
    }

    fn masses_below(&self, edge: f64) -> (f64, f64) {
        self.masses(edge, f64::NEG_INFINITY)
    }

    fn masses_above(&self, edge: f64) -> (f64, f64) {
        self.masses(f64::INFINITY, edge)
    }

    fn truncation_points(&self, tail_mass: f64) -> (f64, f64) {
        let z = normal::inverse_cdf(0.5 * tail_mass); // negative
        (z * self.sigma - self.largest_shift, -z * self.sigma)
    }
}
