//! Poisson subsampling of an additive-noise mechanism under add/remove neighbouring.

use super::MonotonePrivacyLoss;
use crate::error::{Error, Result};
use crate::numeric::log_space::log_add_exp;

/// The mechanism run on a Poisson subsample: each record is kept independently with
/// probability `rate` (q).
///
/// REMOVE pair, from the base pair (P₀, Q₀) = (μ(·+Δ), μ):
/// ```text
/// P = (1−q)·Q₀ + q·P₀,   Q = Q₀
/// L(x)  = ln(1 − q + q·e^{ℓ(x)})                 range (ln(1−q), …)
/// x*(ε) = ℓ⁻¹(ln(1 + (e^ε − 1)/q))               for ε > ln(1−q), else +∞
/// δ(ε)  = 1 − e^ε                                 for ε ≤ ln(1−q)
/// ```
/// The ADD pair is this pair swapped, so `δ_add(ε) = 1 − e^ε + e^ε·δ_remove(−ε)`.
///
/// # References
/// Zhu, Dong & Wang, "Optimal accounting of differential privacy via characteristic function",
/// AISTATS 2022, §5; Mironov, Talwar & Zhang, "Rényi differential privacy of the sampled
/// Gaussian mechanism", arXiv:1908.10530 (2019).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PoissonSubsampled<M> {
    base: M,
    rate: f64,
    /// ln(1 − q), the infimum of the privacy loss (−∞ when q = 1).
    log_keep_out: f64,
    /// ln q.
    log_rate: f64,
}

impl<M: MonotonePrivacyLoss> PoissonSubsampled<M> {
    /// Subsample `base` at Poisson rate `rate`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless `0 < rate ≤ 1`.
    pub fn new(base: M, rate: f64) -> Result<Self> {
        if !(rate > 0.0 && rate <= 1.0) {
            return Err(Error::invalid("sampling.poisson", rate, "in (0, 1]"));
        }
        Ok(PoissonSubsampled {
            base,
            rate,
            log_keep_out: (-rate).ln_1p(),
            log_rate: rate.ln(),
        })
    }

    /// The sampling rate q.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The mechanism before sampling.
    pub fn base(&self) -> &M {
        &self.base
    }

    /// `ln(1 + (e^ε − 1)/q)`: the base loss at which the subsampled loss equals ε (for
    /// ε > ln(1 − q)).
    ///
    /// For ε > 0 it is evaluated as `ε − ln q + ln(1 + (q − 1)e^{−ε})`, which neither
    /// overflows nor cancels; for ε ≤ 0 as `ln1p(expm1(ε)/q)` while that argument is above −½,
    /// and closer to ln(1 − q) as `ln((1 − q)/q) + ln(expm1(ε − ln(1 − q)))`, which does not
    /// cancel either (`1 − q + q e^β = e^ε`). At q = 1 it is ε itself (ln(1 − q) = −∞).
    fn base_loss_for(&self, epsilon: f64) -> f64 {
        if epsilon > 0.0 {
            return epsilon - self.log_rate + ((self.rate - 1.0) * (-epsilon).exp()).ln_1p();
        }
        let ratio = epsilon.exp_m1() / self.rate;
        if ratio > -0.5 || self.rate == 1.0 {
            ratio.ln_1p()
        } else {
            self.log_keep_out - self.log_rate + (epsilon - self.log_keep_out).exp_m1().ln()
        }
    }
}

impl<M: MonotonePrivacyLoss> MonotonePrivacyLoss for PoissonSubsampled<M> {
    type Edge = M::Edge;

    fn privacy_loss(&self, x: f64) -> f64 {
        log_add_exp(self.log_keep_out, self.log_rate + self.base.privacy_loss(x))
    }

    fn inverse_privacy_loss(&self, epsilon: f64) -> f64 {
        if epsilon <= self.log_keep_out {
            return f64::INFINITY;
        }
        self.base.inverse_privacy_loss(self.base_loss_for(epsilon))
    }

    fn edge(&self, x: f64) -> M::Edge {
        self.base.edge(x)
    }

    fn edges(&self, x: &[f64]) -> Vec<M::Edge> {
        self.base.edges(x)
    }

    fn masses_between(&self, upper: M::Edge, lower: M::Edge) -> (f64, f64) {
        let (p0, q0) = self.base.masses_between(upper, lower);
        ((1.0 - self.rate) * q0 + self.rate * p0, q0)
    }

    fn masses_below(&self, edge: M::Edge) -> (f64, f64) {
        let (p0, q0) = self.base.masses_below(edge);
        ((1.0 - self.rate) * q0 + self.rate * p0, q0)
    }

    /// `P_I − e^c Q_I` moved to the base pair, where the losses are far apart:
    /// ```text
    /// (1−q)Q₀ + qP₀ − e^c Q₀ = q·(P₀ − e^{β(c)} Q₀),   β(c) = ln(1 + (e^c − 1)/q)   (c > ln(1−q))
    ///                        = (1 − q − e^c)·Q₀ + q·P₀                           (c ≤ ln(1−q))
    /// ```
    /// In the second case both terms are ≥ 0, `1 − q − e^c = −(1−q)·expm1(c − ln(1−q))`.
    /// Subtracting the masses directly would cancel: with a small rate both are ≈ Q₀ while the
    /// excess is of order q, so an absolute rounding of ~1e-16 would be a relative error of
    /// 1e-16/q in δ.
    ///
    /// # Guarantee
    /// q times the base's error bound (relative to the base terms, which are of the size of the
    /// result divided by q), or, for c ≤ ln(1−q), a few ulps of a sum of non-negative terms.
    fn excess_between(&self, upper: M::Edge, lower: M::Edge, c: f64) -> f64 {
        if c > self.log_keep_out {
            let beta = self.base_loss_for(c);
            if beta <= 700.0 {
                return self.rate * self.base.excess_between(upper, lower, beta);
            }
            // e^β would overflow (c large, q tiny): the same grouping on the masses.
            let (p0, q0) = self.base.masses_between(upper, lower);
            self.rate * p0 - (c.exp_m1() + self.rate) * q0
        } else {
            let (p0, q0) = self.base.masses_between(upper, lower);
            -(1.0 - self.rate) * (c - self.log_keep_out).exp_m1() * q0 + self.rate * p0
        }
    }

    fn masses_above(&self, edge: M::Edge) -> (f64, f64) {
        let (p0, q0) = self.base.masses_above(edge);
        ((1.0 - self.rate) * q0 + self.rate * p0, q0)
    }

    fn truncation_points(&self, tail_mass: f64) -> (f64, f64) {
        // P is a mixture of P₀ and Q₀, so cutting both of those cuts P.
        self.base.truncation_points(tail_mass)
    }

    fn constant_loss_regions(&self) -> (Option<f64>, Option<f64>) {
        // L is a monotone function of the base loss.
        self.base.constant_loss_regions()
    }

    fn infinite_masses(&self) -> (f64, f64) {
        let (p_inf, q_neg_inf) = self.base.infinite_masses();
        // Q = Q₀, and P ≥ (1−q)Q₀ > 0 wherever Q₀ > 0 unless q = 1.
        let q_neg = if self.rate == 1.0 { q_neg_inf } else { 0.0 };
        (self.rate * p_inf, q_neg)
    }

    /// ```text
    /// δ(ε) = sup_S [(1−q)Q₀(S) + qP₀(S) − e^ε Q₀(S)] = q·δ₀(ln(1 + (e^ε − 1)/q))
    /// ```
    /// so the base mechanism's (log-space) closed form is reused and the tails stay accurate.
    fn hockey_stick(&self, epsilon: f64) -> f64 {
        if epsilon <= self.log_keep_out {
            return -epsilon.exp_m1();
        }
        (self.rate * self.base.hockey_stick(self.base_loss_for(epsilon))).clamp(0.0, 1.0)
    }
}
