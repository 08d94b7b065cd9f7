//! The Gaussian mechanism N(0, σ²) added to a query of sensitivity Δ.

use super::MonotonePrivacyLoss;
use crate::error::{Error, Result};
use crate::numeric::normal::{self, Tail};

/// Gaussian noise of standard deviation `sigma` on a query of (L2) sensitivity `sensitivity`.
///
/// REMOVE pair: `P = N(−Δ, σ²)`, `Q = N(0, σ²)`.
/// ```text
/// L(x)  = Δ(−Δ/2 − x)/σ²            L ~ N(μ²/2, μ²) under P,   μ = Δ/σ
/// x*(ε) = −Δ/2 − εσ²/Δ
/// δ(ε)  = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)
/// ```
/// The pair is symmetric: its ADD pair has the same privacy loss distribution.
///
/// # References
/// Balle & Wang, "Improving the Gaussian mechanism for differential privacy", ICML 2018, Thm 8.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gaussian {
    sigma: f64,
    sensitivity: f64,
}

impl Gaussian {
    /// The edge at the point where P's standardized value is `z`, from its two tails.
    fn edge_from_tails(&self, z: f64, p: Tail, q: Tail) -> GaussianEdge {
        let mu = self.mu();
        // Outside the series' region D is the difference of the two tails just computed (no
        // cancellation there): no need to evaluate them again.
        let difference = if normal::shifted_series_applies(z, mu) {
            normal::mass_between_shifted(z, mu)
        } else if z.is_nan() || z.is_infinite() {
            0.0
        } else {
            p.mass_above(q)
        };
        GaussianEdge { p, q, difference }
    }

    /// A Gaussian mechanism.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless both `sigma` and `sensitivity` are finite and > 0.
    pub fn new(sigma: f64, sensitivity: f64) -> Result<Self> {
        if !(sigma.is_finite() && sigma > 0.0) {
            return Err(Error::invalid("sigma", sigma, "a finite number > 0"));
        }
        if !(sensitivity.is_finite() && sensitivity > 0.0) {
            return Err(Error::invalid(
                "sensitivity",
                sensitivity,
                "a finite number > 0",
            ));
        }
        Ok(Gaussian { sigma, sensitivity })
    }

    /// The mechanism with unit sensitivity and noise `1/mu`, which has the same privacy loss
    /// distribution as any Gaussian with `Δ/σ = mu`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless `mu` is finite and > 0 with a finite `1/mu` (not
    /// subnormal).
    pub fn from_mu(mu: f64) -> Result<Self> {
        if !(mu.is_finite() && mu > 0.0 && (1.0 / mu).is_finite()) {
            return Err(Error::invalid(
                "mu",
                mu,
                "a finite number > 0 whose reciprocal is finite",
            ));
        }
        Gaussian::new(1.0 / mu, 1.0)
    }

    /// Noise standard deviation σ.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// Sensitivity Δ.
    pub fn sensitivity(&self) -> f64 {
        self.sensitivity
    }

    /// `μ = Δ/σ`, the parameter of the equivalent μ-GDP guarantee.
    pub fn mu(&self) -> f64 {
        self.sensitivity / self.sigma
    }

    /// δ(ε) of the mechanism with parameter `mu` (Balle–Wang), to about 1e-11 relative.
    ///
    /// ```text
    /// δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)
    /// ```
    /// The centre of the ball that [`crate::mechanism::analytic_gaussian::delta_for_epsilon`] widens into
    /// its bracket, which evaluates this without cancellation (also at tiny μ, where the two
    /// terms agree to `μ/max(1, ε/μ)`); see [`crate::mechanism::analytic_gaussian::delta_estimate`].
    ///
    /// # Guarantee
    /// Within that bracket (relative error below about 5e-11 where δ ≥ 1e-300; 0 when δ is
    /// far below the double range). Callers needing a guaranteed side should use the bracket.
    pub fn delta_for_mu(mu: f64, epsilon: f64) -> f64 {
        crate::mechanism::analytic_gaussian::delta_estimate(mu, epsilon)
    }
}

/// CDF information of the Gaussian pair at one point.
#[derive(Debug, Clone, Copy)]
pub struct GaussianEdge {
    /// Tail of P = N(−Δ, σ²).
    p: Tail,
    /// Tail of Q = N(0, σ²).
    q: Tail,
    /// `F_P(x) − F_Q(x) ≥ 0`, computed without cancellation (small when μ is).
    difference: f64,
}

impl MonotonePrivacyLoss for Gaussian {
    type Edge = GaussianEdge;

    fn privacy_loss(&self, x: f64) -> f64 {
        self.sensitivity * (-0.5 * self.sensitivity - x) / (self.sigma * self.sigma)
    }

    fn inverse_privacy_loss(&self, epsilon: f64) -> f64 {
        -0.5 * self.sensitivity - epsilon * self.sigma * self.sigma / self.sensitivity
    }

    fn edge(&self, x: f64) -> GaussianEdge {
        let z = (x + self.sensitivity) / self.sigma;
        self.edge_from_tails(z, Tail::at(z), Tail::at(x / self.sigma))
    }

    fn edges(&self, x: &[f64]) -> Vec<GaussianEdge> {
        // P's points, then Q's, in one batch of tails.
        let points: Vec<f64> = x
            .iter()
            .map(|&x| (x + self.sensitivity) / self.sigma)
            .chain(x.iter().map(|&x| x / self.sigma))
            .collect();
        let tails = Tail::at_each(&points);
        let (p, q) = tails.split_at(x.len());
        (0..x.len())
            .map(|i| self.edge_from_tails(points[i], p[i], q[i]))
            .collect()
    }

    fn masses_between(&self, upper: GaussianEdge, lower: GaussianEdge) -> (f64, f64) {
        (upper.p.mass_above(lower.p), upper.q.mass_above(lower.q))
    }

    fn masses_below(&self, edge: GaussianEdge) -> (f64, f64) {
        (edge.p.below(), edge.q.below())
    }

    /// `P_I − e^c Q_I` as the better-conditioned of the direct difference and
    /// ```text
    /// (1 − e^c)·P_I + e^c·(P_I − Q_I),   P_I − Q_I = D(upper) − D(lower),   D = F_P − F_Q
    /// ```
    /// where D comes from [`normal::mass_between_shifted`] without cancellation. For small μ
    /// the losses are all close to 0 and P_I ≈ Q_I, so the direct difference loses all digits
    /// of a δ of order μ; the split form keeps them. The form whose error bound (the sum of the
    /// magnitudes of its terms, times a few ulps) is smaller is used.
    fn excess_between(&self, upper: GaussianEdge, lower: GaussianEdge, c: f64) -> f64 {
        let (p, q) = self.masses_between(upper, lower);
        if q <= 0.0 {
            return p;
        }
        let scale = c.exp();
        if !scale.is_finite() {
            return f64::NEG_INFINITY;
        }
        let direct_size = p + scale * q;
        let one_minus = -c.exp_m1();
        let split_size = one_minus.abs() * p + scale * (upper.difference + lower.difference);
        if split_size < direct_size {
            one_minus * p + scale * (upper.difference - lower.difference)
        } else {
            p - scale * q
        }
    }

    fn masses_above(&self, edge: GaussianEdge) -> (f64, f64) {
        (edge.p.above(), edge.q.above())
    }

    fn truncation_points(&self, tail_mass: f64) -> (f64, f64) {
        let z = normal::inverse_cdf(0.5 * tail_mass); // negative
        (-self.sensitivity + z * self.sigma, -z * self.sigma)
    }

    fn hockey_stick(&self, epsilon: f64) -> f64 {
        Gaussian::delta_for_mu(self.mu(), epsilon)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The batch of edges is the edges one at a time, bit for bit, for shifts μ from 1e-6
    /// (where D comes from the series everywhere) to 30, at points across both tails, ±∞
    /// and NaN.
    #[test]
    fn edges_in_a_batch_are_edges_one_at_a_time() {
        let bits = |tail: Tail| match tail {
            Tail::Left(v) => (0, v.to_bits()),
            Tail::Right(v) => (1, v.to_bits()),
        };
        for (sigma, sensitivity) in [(1.0, 1.0), (0.3, 1.0), (1e6, 1.0), (2.0, 60.0), (0.8, 0.5)] {
            let gaussian = Gaussian::new(sigma, sensitivity).expect("valid");
            let mut x: Vec<f64> = (0..=20_000)
                .map(|i| (-40.0 + 80.0 * i as f64 / 20_000.0) * sigma)
                .collect();
            x.extend([
                0.0,
                -0.5 * sensitivity,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
            ]);
            for (&x, batch) in x.iter().zip(gaussian.edges(&x)) {
                let one = gaussian.edge(x);
                assert_eq!(bits(batch.p), bits(one.p), "σ {sigma}, x = {x}");
                assert_eq!(bits(batch.q), bits(one.q), "σ {sigma}, x = {x}");
                assert_eq!(
                    batch.difference.to_bits(),
                    one.difference.to_bits(),
                    "σ {sigma}, x = {x}"
                );
            }
        }
    }
}
