//! Sampling without replacement (a fixed batch of m out of n records) under replace-one
//! neighbouring, for additive noise.

use super::{AdditiveNoisePair, MonotonePrivacyLoss};
use crate::error::{Error, Result};
use crate::log_space::log_add_exp;
use crate::normal::Tail;

/// Additive noise applied to a uniformly random batch of m out of n records, with `γ = m/n`,
/// under replace-one neighbouring.
///
/// The differing record is in the batch with probability γ, independently of which other
/// records are; when it is, one output is shifted by +Δ and the other by −Δ. The worst-case
/// pair, with μ the noise, is
/// ```text
/// P = (1−γ)μ + γμ(·+Δ),   Q = (1−γ)μ + γμ(·−Δ)
/// L(x) = ln(1−γ + γe^{ℓ(x)}) − ln(1−γ + γe^{−ℓ(x−Δ)}),   ℓ(x) = ln(μ(x+Δ)/μ(x))
/// ```
/// It is symmetric (reflecting x swaps P and Q), so ADD and REMOVE coincide. At γ = 1 it is
/// the unsampled pair with shift 2Δ.
///
/// # References
/// dp_accounting 0.6.0, `AdditiveNoisePrivacyLoss` with `AdjacencyType.REPLACE` and
/// `sampling_prob = γ` (the same pair); Balle, Barthe & Gaboardi, "Privacy amplification by
/// subsampling", NeurIPS 2018, §5 (the coupling of sampling without replacement under
/// replace-one); ALGORITHMS.md §2.4. The pair is exact for contributions ±Δ along one axis;
/// its optimality for every noise and dimension is not established (ALGORITHMS.md §2.4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FixedBatch<M> {
    base: M,
    gamma: f64,
    log_keep_out: f64,
    log_gamma: f64,
}

impl<M: AdditiveNoisePair> FixedBatch<M> {
    /// `base` (the unsampled REMOVE pair `μ(·+Δ)`, `μ`) on a batch drawn with inclusion
    /// probability `gamma = m/n`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless `0 < gamma ≤ 1`.
    pub fn new(base: M, gamma: f64) -> Result<Self> {
        if !(gamma > 0.0 && gamma <= 1.0) {
            return Err(Error::invalid(
                "sampling.fixed_batch (batch_size/dataset_size)",
                gamma,
                "in (0, 1]",
            ));
        }
        Ok(FixedBatch {
            base,
            gamma,
            log_keep_out: (-gamma).ln_1p(),
            log_gamma: gamma.ln(),
        })
    }

    /// The inclusion probability γ = m/n.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }
}

/// CDF information of the fixed-batch pair: the noise tails at x + Δ, x and x − Δ.
#[derive(Debug, Clone, Copy)]
pub struct FixedBatchEdge {
    left: Tail,
    centre: Tail,
    right: Tail,
}

impl<M: AdditiveNoisePair> FixedBatch<M> {
    fn mix(&self, centre: f64, shifted: f64) -> f64 {
        (1.0 - self.gamma) * centre + self.gamma * shifted
    }
}

impl<M: AdditiveNoisePair> MonotonePrivacyLoss for FixedBatch<M> {
    type Edge = FixedBatchEdge;

    fn privacy_loss(&self, x: f64) -> f64 {
        let delta = self.base.sensitivity();
        let up = log_add_exp(
            self.log_keep_out,
            self.log_gamma + self.base.privacy_loss(x),
        );
        let down = log_add_exp(
            self.log_keep_out,
            self.log_gamma - self.base.privacy_loss(x - delta),
        );
        up - down
    }

    fn inverse_privacy_loss(&self, epsilon: f64) -> f64 {
        self.base.fixed_batch_inverse(self.gamma, epsilon)
    }

    fn edge(&self, x: f64) -> FixedBatchEdge {
        let delta = self.base.sensitivity();
        FixedBatchEdge {
            left: self.base.noise_tail(x + delta),
            centre: self.base.noise_tail(x),
            right: self.base.noise_tail(x - delta),
        }
    }

    fn masses_between(&self, upper: FixedBatchEdge, lower: FixedBatchEdge) -> (f64, f64) {
        let centre = upper.centre.mass_above(lower.centre);
        (
            self.mix(centre, upper.left.mass_above(lower.left)),
            self.mix(centre, upper.right.mass_above(lower.right)),
        )
    }

    fn masses_below(&self, edge: FixedBatchEdge) -> (f64, f64) {
        let centre = edge.centre.below();
        (
            self.mix(centre, edge.left.below()),
            self.mix(centre, edge.right.below()),
        )
    }

    fn masses_above(&self, edge: FixedBatchEdge) -> (f64, f64) {
        let centre = edge.centre.above();
        (
            self.mix(centre, edge.left.above()),
            self.mix(centre, edge.right.above()),
        )
    }

    fn truncation_points(&self, tail_mass: f64) -> (f64, f64) {
        // The base cuts μ(·+Δ) on the left and μ on the right; Q also holds μ(·−Δ).
        let (lo, hi) = self.base.truncation_points(tail_mass);
        let (top, bottom) = self.constant_loss_regions();
        (
            top.map_or(lo, |t| lo.max(t)),
            bottom.map_or(hi + self.base.sensitivity(), |b| {
                (hi + self.base.sensitivity()).min(b)
            }),
        )
    }

    fn constant_loss_regions(&self) -> (Option<f64>, Option<f64>) {
        self.base.fixed_batch_constant_regions()
    }
}
