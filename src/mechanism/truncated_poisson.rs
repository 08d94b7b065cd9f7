//! Truncated Poisson sampling of Gaussian noise (DP-SGD whose Poisson batches are cut to a
//! maximum size), as a revealed mixture of Poisson-subsampled Gaussian pairs.
//!
//! # The mechanism
//! Each of the records is drawn independently with probability q; when more than B are
//! drawn, a uniformly random subset of B of them is kept. The output is the sum of the kept
//! records' contributions g(x), each of norm at most Δ (the clipping norm), plus N(0, σ²I).
//! The event's `dataset_size` n is the number of records; both neighbours are covered: a
//! record removed (the pair has N = n records on the larger side) and a record added
//! (N = n + 1).
//!
//! # The dominating pair (upper bound)
//! Fix one neighbouring pair: the larger dataset holds N records, z and N − 1 shared ones.
//! The shared records are drawn by the same coins on both sides; K ~ Bin(N − 1, q) of them
//! are drawn.
//!
//! 1. Reveal the flag T = [K ≥ B]. Forgetting T is a post-processing, so the pair with T
//!    revealed dominates; T has the same law on both sides, so its hockey-stick divergence
//!    is `(1 − p_N)·H(· | T = 0) + p_N·H(· | T = 1)` at every ε, in both directions, with
//!    `p_N = P(Bin(N − 1, q) ≥ B)` (the chance that the batch is cut when z is drawn).
//! 2. T = 0: nothing is cut on either side (K + 1 ≤ B). Given the drawn shared records S,
//!    the pair is `((1 − q)·N(ΣS) + q·N(ΣS + g(z)), N(ΣS))`; averaged over S with the same
//!    weights on both sides (joint convexity) it is dominated by the Poisson-subsampled
//!    Gaussian **A** = `((1 − q)·N(0, σ²) + q·N(Δ, σ²), N(0, σ²))`.
//! 3. T = 1: without z the batch is a uniformly random B-subset of the drawn shared records,
//!    hence of all N − 1 of them, whatever K is. With z: z is drawn with probability q and
//!    survives the cut with probability B/(K + 1); the batch is then z with a uniform
//!    (B − 1)-subset, i.e. a uniform B-subset with one uniform member y replaced by z.
//!    Given K the pair is `((1 − ρ_K)·R + ρ_K·R_z, R)` with `ρ_K = qB/(K + 1)` and R not
//!    depending on K, so given T = 1 it is the same form at the average rate
//!    ```text
//!    r_N = E[ρ_K | K ≥ B] = (B/N)·P(Bin(N, q) ≥ B + 1) / p_N
//!    ```
//!    (from `q·C(N−1, k) q^k (1−q)^{N−1−k}/(k+1) = C(N, k+1) q^{k+1} (1−q)^{N−k−1}/N`).
//!    Given the B-subset and y the shift is `g(z) − g(y)`, of norm at most 2Δ; by joint
//!    convexity the pair is dominated by **C(r)** = `((1 − r)·N(0, σ²) + r·N(2Δ, σ²), N(0, σ²))`.
//! 4. One step for one N is thus dominated by the revealed mixture `(1 − p_N)·A + p_N·C(r_N)`
//!    (the ADD direction: every pair swapped, same weights).
//! 5. Both neighbours and the numerics: with certified `L ≤ p_N ≤ U` (both N) and
//!    `r_up ≥ r_N`, the pair
//!    ```text
//!    (1 − U)·A + (U − L)·D + L·C(r_up),      D = ((1 − q)·N(0, σ²) + q·N(2Δ, σ²), N(0, σ²))
//!    ```
//!    dominates every `(1 − p_N)·A + p_N·C(r_N)`: split `(1 − p_N)·A = (1 − U)·A + (U − p_N)·A`
//!    and `p_N·C(r_N) = (p_N − L)·C(r_N) + L·C(r_N)`; D dominates A (larger shift, same rate)
//!    and C(r_N) (`r_N ≤ qB/(B + 1) < q`, and a rate-r pair is the rate-r′ pair mixed with
//!    (R, R)), and C(r_up) dominates C(r_N). A revealed mixture is dominated part by part.
//!
//! Steps 1–4 are dp_accounting 0.6.0's decomposition
//! (`from_truncated_subsampled_gaussian_mechanism`: the same weight p_N, rate r_N and
//! revealed mixture). It differs in step 3: it takes the replace-one pair at σ/2,
//! `(1 − r)·N(0, σ²/4) + r·N(−Δ, σ²/4)` against `(1 − r)·N(0, σ²/4) + r·N(Δ, σ²/4)`, whose two
//! sampled components are 4Δ/σ noise units apart where one member's replacement moves the
//! sum by at most 2Δ. That pair dominates C(r) (checked numerically at σ from 0.3 to 10, r
//! from 10⁻³ to 1), so dp_accounting's answer is also an upper bound, a looser one. It
//! covers only N = n. What stays loose here is step 1: a real adversary does not see whether
//! the batch was cut; A and C(r) are each attained by some pair of datasets (others
//! contributing 0, resp. −Δ·e against z's +Δ·e), but not by one pair at once.
//!
//! # The lower bound
//! The datasets where z contributes Δ·e and every other record 0: the output is
//! `N(Δ·e·[z kept], σ²I)`, exactly a Poisson-subsampled Gaussian of shift Δ at the rate
//! ```text
//! π_N = P(z kept) = E[min(Bin(N, q), B)]/N = q·P(Bin(N−1, q) ≤ B−1) + (B/N)·P(Bin(N, q) ≥ B+1)
//! ```
//! Its PLD, composed, is that of a genuine run, hence a lower bound (at a certified lower
//! bound on π_N, the larger over N = n, n + 1; a smaller rate gives a dominated pair). It is
//! tight when cuts are rare (π_N → q and U → 0) and loose when they are common: there the
//! truth lies between this and the revealed mixture.
//!
//! At q = 1 with n > B every batch is cut (T = 1 surely, nothing is revealed by step 1), and
//! the datasets where z contributes Δ·e and every other record −Δ·e attain C(B/n): without z
//! the sum is −BΔ·e, with z it is −BΔ·e + 2Δ·e when z is kept (probability B/n). The lower
//! bound is then C(B/n) itself and meets the upper bound up to the grids.
//!
//! # References
//! - Ganesh, "Tighter privacy analysis for truncated Poisson sampling", arXiv:2508.15089
//!   (2025); dp_accounting 0.6.0, `TruncatedSubsampledGaussianDpEvent`.
//! - Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha & Zhang, "Scalable DP-SGD: Shuffling vs.
//!   Poisson subsampling", NeurIPS 2024 (truncated Poisson sampling, there charged to δ).
//! - Zhu, Dong & Wang, "Optimal accounting of differential privacy via characteristic
//!   function", AISTATS 2022 (dominating pairs and their adaptive composition).
//! - Balle, Barthe & Gaboardi, "Privacy amplification by subsampling", NeurIPS 2018 (joint
//!   convexity of the hockey-stick divergence).

use super::{Gaussian, PoissonSubsampled};
use crate::bound::Bracket;
use crate::error::{Error, Result};
use crate::numeric::binomial::Binomial;

/// Unit round-off of f64.
const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// One part of a revealed mixture: the pair used with probability `weight`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeightedPair {
    /// Probability of this part (the same on both datasets).
    pub weight: f64,
    /// Its REMOVE pair (ADD is the swap).
    pub pair: PoissonSubsampled<Gaussian>,
}

/// Gaussian noise on a truncated Poisson sample: the pairs that bound it (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct TruncatedPoissonGaussian {
    gaussian: Gaussian,
    rate: f64,
    max_batch_size: u64,
    dataset_size: u64,
    upper: Vec<WeightedPair>,
    lower: Option<PoissonSubsampled<Gaussian>>,
}

impl TruncatedPoissonGaussian {
    /// `gaussian` (σ and one record's contribution Δ) on a Poisson sample at `rate` from
    /// `dataset_size` records, cut to `max_batch_size`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] naming `sampling.truncated_poisson.rate` unless
    /// 0 < rate ≤ 1, `.max_batch_size` unless ≥ 1, or `.dataset_size` unless
    /// 1 ≤ n ≤ 2⁵³ − 1.
    pub fn new(
        gaussian: Gaussian,
        rate: f64,
        max_batch_size: u64,
        dataset_size: u64,
    ) -> Result<Self> {
        if !(rate > 0.0 && rate <= 1.0) {
            return Err(Error::invalid(
                "sampling.truncated_poisson.rate",
                rate,
                "a number in (0, 1]",
            ));
        }
        if max_batch_size == 0 {
            return Err(Error::invalid(
                "sampling.truncated_poisson.max_batch_size",
                max_batch_size,
                "a whole number ≥ 1",
            ));
        }
        if dataset_size == 0 || dataset_size >= crate::numeric::binomial::MAX_TRIALS {
            return Err(Error::invalid(
                "sampling.truncated_poisson.dataset_size",
                dataset_size,
                "a whole number from 1 to 2^53 − 1",
            ));
        }
        let mut tp = TruncatedPoissonGaussian {
            gaussian,
            rate,
            max_batch_size,
            dataset_size,
            upper: Vec::new(),
            lower: None,
        };
        tp.upper = tp.upper_parts()?;
        tp.lower = tp.lower_pair()?;
        Ok(tp)
    }

    /// The noise and one record's contribution.
    pub fn gaussian(&self) -> Gaussian {
        self.gaussian
    }

    /// `(rate, max_batch_size, dataset_size)`.
    pub fn parameters(&self) -> (f64, u64, u64) {
        (self.rate, self.max_batch_size, self.dataset_size)
    }

    /// Whether a batch can ever be cut: B ≤ n (the larger neighbour has n + 1 records).
    pub fn can_truncate(&self) -> bool {
        self.max_batch_size <= self.dataset_size
    }

    /// The revealed mixture that dominates one step (module docs, step 5): parts of positive
    /// weight, in the order A, D, C(r_up).
    ///
    /// # Guarantee
    /// Upper bound: its PLD (the weighted sum of the parts' PLDs) dominates the step's, in
    /// both directions. The weights sum to 1 within a few ulps (rounded so that A's and
    /// C's are not above their certified values and D's not below).
    pub fn upper(&self) -> &[WeightedPair] {
        &self.upper
    }

    /// The attained pair of the lower bound (module docs): Poisson subsampling at a
    /// certified lower bound on π = P(the record is in the cut batch), shift Δ; at q = 1
    /// with n > B, C(B/n) (shift 2Δ). `None` when the rate's bound underflows to 0 (no
    /// privacy loss is then certified).
    ///
    /// # Guarantee
    /// Lower bound: the PLD of a pair of neighbouring datasets under this very sampling.
    pub fn lower(&self) -> Option<PoissonSubsampled<Gaussian>> {
        self.lower
    }

    /// The rate of [`TruncatedPoissonGaussian::lower`] (0 when there is none).
    pub fn lower_rate(&self) -> f64 {
        self.lower.map_or(0.0, |pair| pair.rate())
    }

    /// `p_N = P(Bin(N − 1, q) ≥ B)`: the chance that the batch is cut given that the record is
    /// drawn, for the larger dataset of N records.
    ///
    /// # Guarantee
    /// Certified bracket (see [`Binomial::upper_tail`]).
    pub fn truncation_probability(&self, larger: u64) -> Bracket {
        truncation_probability(self.rate, self.max_batch_size, larger)
    }

    /// `r_N = (B/N)·P(Bin(N, q) ≥ B + 1)/p_N`: the chance that the record is drawn and kept,
    /// given that the cut happens (`None` when p_N's lower bound is 0).
    pub fn rate_given_truncation(&self, larger: u64) -> Option<Bracket> {
        rate_given_truncation(self.rate, self.max_batch_size, larger)
    }

    /// `π_N = q·(1 − p_N) + (B/N)·P(Bin(N, q) ≥ B + 1)`: the chance that the record is in
    /// the cut batch.
    pub fn inclusion_probability(&self, larger: u64) -> Bracket {
        inclusion_probability(self.rate, self.max_batch_size, larger)
    }

    fn upper_parts(&self) -> Result<Vec<WeightedPair>> {
        let (q, b, n) = (self.rate, self.max_batch_size, self.dataset_size);
        let larger = [n, n + 1];
        let brackets = larger.map(|big| truncation_probability(q, b, big));
        let most = brackets
            .iter()
            .map(|p| p.upper)
            .fold(0.0, f64::max)
            .min(1.0);
        let least = brackets
            .iter()
            .map(|p| p.lower)
            .fold(1.0, f64::min)
            .max(0.0);
        let plain = PoissonSubsampled::new(self.gaussian, q)?;
        let doubled = double_shift(self.gaussian)?;
        // w_plain ≤ 1 − U and w_cut ≤ L (L is certified as it stands); w_either takes the
        // rest, rounded up (a little extra mass never lowers an upper bound's δ).
        let w_plain = if most == 0.0 {
            1.0
        } else {
            ((1.0 - most) * (1.0 - 2.0 * UNIT_ROUNDOFF)).max(0.0)
        };
        let w_cut = least;
        let rest = 1.0 - w_plain - w_cut;
        let w_either = if rest > 0.0 {
            rest * (1.0 + 4.0 * UNIT_ROUNDOFF)
        } else {
            0.0
        };
        let mut parts = Vec::with_capacity(3);
        if w_plain > 0.0 {
            parts.push(WeightedPair {
                weight: w_plain,
                pair: plain,
            });
        }
        if w_either > 0.0 && most > 0.0 {
            parts.push(WeightedPair {
                weight: w_either,
                pair: PoissonSubsampled::new(doubled, q)?,
            });
        }
        if w_cut > 0.0 {
            // r_N for both N, each at most qB/(B + 1) < q.
            let cap = (q * (b as f64 / (b as f64 + 1.0)) * (1.0 + 4.0 * UNIT_ROUNDOFF)).min(q);
            let r_up = larger
                .iter()
                .filter_map(|&big| rate_given_truncation(q, b, big))
                .map(|r| r.upper)
                .fold(0.0, f64::max)
                .min(cap);
            if r_up > 0.0 {
                parts.push(WeightedPair {
                    weight: w_cut,
                    pair: PoissonSubsampled::new(doubled, r_up)?,
                });
            }
        }
        if parts.is_empty() {
            // Unreachable (the weights sum to about 1); the plain part keeps the answer valid
            // only if nothing is cut, so refuse instead of guessing.
            return Err(Error::invalid(
                "sampling.truncated_poisson",
                format!("weights {w_plain}, {w_either}, {w_cut}"),
                "parameters whose truncation probability can be bracketed",
            ));
        }
        Ok(parts)
    }

    /// The pair of the lower bound: C(B/n) when every batch of the n-record dataset is cut
    /// (q = 1, n > B), else Poisson sampling at the larger certified lower bound on π_N over
    /// N = n, n + 1 (none if it underflows).
    fn lower_pair(&self) -> Result<Option<PoissonSubsampled<Gaussian>>> {
        let (q, b, n) = (self.rate, self.max_batch_size, self.dataset_size);
        if q >= 1.0 && n > b {
            let kept = b as f64 / n as f64 * (1.0 - 2.0 * UNIT_ROUNDOFF);
            return Ok(Some(PoissonSubsampled::new(
                double_shift(self.gaussian)?,
                kept,
            )?));
        }
        let best = [n, n + 1]
            .iter()
            .map(|&big| inclusion_probability(q, b, big).lower)
            .fold(0.0, f64::max);
        Ok(if best.is_finite() && best > 0.0 {
            Some(PoissonSubsampled::new(self.gaussian, best.min(q))?)
        } else {
            None
        })
    }
}

/// Gaussian noise with twice the shift (the same μ = 2Δ/σ, built without overflow).
fn double_shift(gaussian: Gaussian) -> Result<Gaussian> {
    Gaussian::new(gaussian.sigma(), 2.0 * gaussian.sensitivity())
        .or_else(|_| Gaussian::new(0.5 * gaussian.sigma(), gaussian.sensitivity()))
}

/// `P(Bin(larger − 1, q) ≥ B)` (module docs), bracketed.
pub fn truncation_probability(rate: f64, max_batch_size: u64, larger: u64) -> Bracket {
    match Binomial::new(larger.saturating_sub(1), rate) {
        Ok(shared) => shared.upper_tail(max_batch_size),
        Err(_) => Bracket {
            upper: 1.0,
            lower: 0.0,
        },
    }
}

/// `(B/N)·P(Bin(N, q) ≥ B + 1)/P(Bin(N − 1, q) ≥ B)` for N = `larger`, bracketed in log space
/// (`None` when the denominator's lower bound is 0).
pub fn rate_given_truncation(rate: f64, max_batch_size: u64, larger: u64) -> Option<Bracket> {
    let all = Binomial::new(larger, rate).ok()?;
    let shared = Binomial::new(larger.saturating_sub(1), rate).ok()?;
    let numerator = all.ln_upper_tail(max_batch_size.saturating_add(1));
    let denominator = shared.ln_upper_tail(max_batch_size);
    if denominator.lower == f64::NEG_INFINITY {
        return None;
    }
    let ln_share = (max_batch_size as f64).ln() - (larger as f64).ln();
    let slack = 8.0 * UNIT_ROUNDOFF * (1.0 + ln_share.abs());
    Some(Bracket {
        upper: (ln_share + slack + numerator.upper - denominator.lower)
            .exp()
            .min(rate),
        lower: (ln_share - slack + numerator.lower - denominator.upper)
            .exp()
            .min(rate),
    })
}

/// `q·P(Bin(N − 1, q) ≤ B − 1) + (B/N)·P(Bin(N, q) ≥ B + 1)` for N = `larger`, bracketed.
pub fn inclusion_probability(rate: f64, max_batch_size: u64, larger: u64) -> Bracket {
    if max_batch_size >= larger {
        // Nothing is ever cut: the record is in the batch exactly when drawn.
        return Bracket {
            upper: rate,
            lower: rate,
        };
    }
    let cut = truncation_probability(rate, max_batch_size, larger);
    let kept_when_cut = Binomial::new(larger, rate)
        .map(|all| all.upper_tail(max_batch_size.saturating_add(1)))
        .unwrap_or(Bracket {
            upper: 1.0,
            lower: 0.0,
        });
    let share = max_batch_size as f64 / larger as f64;
    let up = 1.0 + 4.0 * UNIT_ROUNDOFF;
    let down = 1.0 - 4.0 * UNIT_ROUNDOFF;
    Bracket {
        upper: ((rate * (1.0 - cut.lower) + share * kept_when_cut.upper) * up).min(rate),
        lower: ((rate * (1.0 - cut.upper) + share * kept_when_cut.lower) * down).max(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gaussian() -> Gaussian {
        Gaussian::new(1.1, 1.0).unwrap()
    }

    #[test]
    fn no_cut_possible_is_plain_poisson() {
        let tp = TruncatedPoissonGaussian::new(gaussian(), 0.3, 11, 10).unwrap();
        assert!(!tp.can_truncate());
        assert_eq!(tp.upper().len(), 1);
        assert_eq!(tp.upper()[0].weight, 1.0);
        assert_eq!(tp.upper()[0].pair.rate(), 0.3);
        assert_eq!(tp.lower_rate(), 0.3);
    }

    #[test]
    fn full_rate_always_cut_is_a_fixed_batch_pair() {
        // q = 1, n = 100 > B = 10: every batch is cut, r_N = B/N.
        let tp = TruncatedPoissonGaussian::new(gaussian(), 1.0, 10, 100).unwrap();
        let parts = tp.upper();
        assert_eq!(parts.len(), 1, "{parts:?}");
        assert!((parts[0].pair.rate() - 0.1).abs() < 1e-14);
        assert!((parts[0].pair.base().mu() - 2.0 / 1.1).abs() < 1e-14);
        // Attained: the lower pair is the same C(B/n).
        let lower = tp.lower().unwrap();
        assert!((lower.rate() - 0.1).abs() < 1e-15 && lower.rate() <= 0.1);
        assert_eq!(lower.base().mu(), parts[0].pair.base().mu());
    }

    #[test]
    fn weights_sum_to_one() {
        for (q, b, n) in [
            (0.01, 100, 10_000),
            (0.2, 3, 20),
            (1e-6, 1, 1_000_000_000_000),
        ] {
            let tp = TruncatedPoissonGaussian::new(gaussian(), q, b, n).unwrap();
            let total: f64 = tp.upper().iter().map(|p| p.weight).sum();
            assert!((total - 1.0).abs() < 1e-14, "{q} {b} {n}: {:?}", tp.upper());
            assert!(tp.lower_rate() > 0.0 && tp.lower_rate() <= q);
        }
    }
}
