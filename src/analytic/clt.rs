//! The μ-GDP central-limit estimate: an *estimate*, never a bound.
//!
//! Dong, Roth & Su's CLT says a long composition behaves like one Gaussian mechanism with
//!
//! ```text
//! μ ≈ 2K/s,   K = Σ_i E_P[L_i],   s² = Σ_i Var_P[L_i]
//! ```
//!
//! where `L_i` is the privacy loss of run `i` under its first distribution P. (Dong, Roth &
//! Su state it with `E_P[L_i²]`; the two agree in the CLT's limit, and the variance makes the
//! estimate exact for Gaussian mechanisms, whose loss is N(μ²/2, μ²).) For Poisson-subsampled
//! Gaussians the moments are taken to leading order in q, `K = μ₁²/2`, `s² = μ₁²` with
//! `μ₁² = q²(e^{Δ²/σ²} − 1)` per step: this is Bu et al.'s DP-SGD form
//! `μ = q·sqrt(T(e^{Δ²/σ²} − 1))` (exact moments give a slightly smaller μ: 0.4093 against
//! 0.4145 for q = 0.01, σ = 1, T = 1000). The estimate is then the exact Gaussian ε(δ) at μ.
//!
//! It is neither an upper nor a lower bound: on DP-SGD it under-estimates (q = 0.01, σ = 1,
//! 1000 steps, δ = 1e-5: 1.618 against the true 1.828).
//!
//! # References
//! Dong, Roth & Su, "Gaussian differential privacy", JRSS B 2022, Thm 3.5; Bu, Dong, Long &
//! Su, "Deep learning with Gaussian differential privacy", HDSR 2020 (the DP-SGD form
//! `μ ≈ q·sqrt(T(e^{1/σ²} − 1))`, which agrees to first order in q).

use super::event_bounds::NotApplicable;
use crate::mechanism::{analytic_gaussian, Gaussian, TruncatedPoissonGaussian};
use crate::numeric::log_space::log_sum_exp;
use crate::spec::{CompositionSpec, Event, MechanismKind, Neighbouring, SamplingKind};
use serde::Serialize;

/// The first two moments of one run's privacy loss `L = ln(P/Q)` under P (nats, nats²).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LossMoments {
    /// `E_P[L]` (the KL divergence, ≥ 0).
    pub mean: f64,
    /// `Var_P[L]`.
    pub variance: f64,
}

/// The CLT estimate for a whole composition.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CltEstimate {
    /// The estimated Gaussian-DP parameter (the larger of the two directions).
    pub mu: f64,
    /// The estimated ε at the δ asked for. An estimate: not a bound in either direction.
    pub epsilon: f64,
}

/// Most outcome points used to integrate one event's moments.
const MAX_POINTS: usize = 1 << 21;

/// The CLT estimate of ε at `delta` for `spec`.
///
/// # Guarantee
/// None: an estimate only (see the module docs).
///
/// # Errors
/// [`NotApplicable`] for events with an infinite privacy loss (`eps_delta` with δ > 0) and
/// for randomized response with fixed-batch sampling.
pub fn estimate(spec: &CompositionSpec, delta: f64) -> Result<CltEstimate, NotApplicable> {
    let mut sums = [(0.0, 0.0); 2];
    for event in &spec.events {
        let moments = event_moments(event, spec.neighbouring)?;
        for (sum, m) in sums.iter_mut().zip(moments) {
            sum.0 += event.count as f64 * m.mean;
            sum.1 += event.count as f64 * m.variance;
        }
    }
    let mu = sums
        .iter()
        .map(|&(k, s2)| if s2 > 0.0 { 2.0 * k / s2.sqrt() } else { 0.0 })
        .fold(0.0, f64::max);
    let epsilon = if !mu.is_finite() {
        f64::INFINITY
    } else if mu > 0.0 {
        analytic_gaussian::epsilon_upper_for_delta(mu, delta)
    } else {
        0.0
    };
    Ok(CltEstimate { mu, epsilon })
}

/// The loss moments of one run in both directions: `[remove, add]` (for add/remove), or the
/// two orders of the pair (for replace).
///
/// # Errors
/// As [`estimate`].
pub fn event_moments(
    event: &Event,
    relation: Neighbouring,
) -> Result<[LossMoments; 2], NotApplicable> {
    if let (
        &MechanismKind::Gaussian { sigma, sensitivity },
        SamplingKind::RandomAllocation {
            steps_per_epoch,
            participations,
        },
    ) = (&event.mechanism.kind, event.sampling.kind)
    {
        // One epoch as t Poisson-sampled steps at rate k/t (random allocation and Poisson
        // sampling at rate 1/t agree to leading order, Feldman & Shenfeld 2025); every step
        // when k = t. An estimate either way.
        let (t, k) = (steps_per_epoch as f64, participations as f64);
        let per_step = (sensitivity.per_record() / sigma).powi(2);
        let mu_squared = if participations >= steps_per_epoch {
            t * per_step
        } else {
            k * k / t * per_step.exp_m1()
        };
        let moments = LossMoments {
            mean: mu_squared / 2.0,
            variance: mu_squared,
        };
        return Ok([moments; 2]);
    }
    if let (
        &MechanismKind::Gaussian { sigma, sensitivity },
        SamplingKind::TruncatedPoisson {
            rate,
            max_batch_size,
            dataset_size,
        },
    ) = (&event.mechanism.kind, event.sampling.kind)
    {
        // The revealed mixture of the PLD's upper bound, each part by Bu et al.'s leading
        // order (a rate-1 part is the Gaussian itself): mean and variance of the mixture.
        let gaussian = Gaussian::new(sigma, sensitivity.per_record())
            .map_err(|e| NotApplicable::new(e.to_string()))?;
        let tp = TruncatedPoissonGaussian::new(gaussian, rate, max_batch_size, dataset_size)
            .map_err(|e| NotApplicable::new(e.to_string()))?;
        let (mut mean, mut second) = (0.0, 0.0);
        for part in tp.upper() {
            let (r, mu) = (part.pair.rate(), part.pair.base().mu());
            let mu_squared = if r >= 1.0 {
                mu * mu
            } else {
                r * r * (mu * mu).exp_m1()
            };
            let m = mu_squared / 2.0;
            mean += part.weight * m;
            second += part.weight * (mu_squared + m * m);
        }
        let moments = LossMoments {
            mean,
            variance: (second - mean * mean).max(0.0),
        };
        return Ok([moments; 2]);
    }
    if let (&MechanismKind::Gaussian { sigma, sensitivity }, SamplingKind::Poisson(rate)) =
        (&event.mechanism.kind, event.sampling.kind)
    {
        if rate < 1.0 {
            // Bu et al.'s leading-order moments (module docs).
            let mu_squared = rate * rate * (sensitivity.per_record() / sigma).powi(2).exp_m1();
            let moments = LossMoments {
                mean: mu_squared / 2.0,
                variance: mu_squared,
            };
            return Ok([moments; 2]);
        }
    }
    let pair = OutcomePair::for_event(event, relation)?;
    Ok([pair.moments(), pair.swapped().moments()])
}

/// Two distributions on a common finite set of outcomes, as log-masses (unnormalized).
struct OutcomePair {
    log_p: Vec<f64>,
    log_q: Vec<f64>,
}

/// The noise distribution of an additive mechanism.
#[derive(Clone, Copy)]
enum Noise {
    Gaussian { sigma: f64 },
    Laplace { scale: f64 },
    DiscreteGaussian { sigma: f64 },
    DiscreteLaplace { scale: f64 },
}

impl Noise {
    /// ln of the (unnormalized) density or mass at `x`.
    fn log_density(self, x: f64) -> f64 {
        match self {
            Noise::Gaussian { sigma } | Noise::DiscreteGaussian { sigma } => {
                -0.5 * (x / sigma).powi(2)
            }
            Noise::Laplace { scale } | Noise::DiscreteLaplace { scale } => -x.abs() / scale,
        }
    }

    /// Half-width beyond which the noise mass is negligible (< e^{−80}).
    fn reach(self) -> f64 {
        match self {
            Noise::Gaussian { sigma } | Noise::DiscreteGaussian { sigma } => 13.0 * sigma,
            Noise::Laplace { scale } | Noise::DiscreteLaplace { scale } => 80.0 * scale,
        }
    }

    fn is_discrete(self) -> bool {
        matches!(
            self,
            Noise::DiscreteGaussian { .. } | Noise::DiscreteLaplace { .. }
        )
    }
}

/// A mixture of shifted copies of the noise: (weight, shift) pairs.
type Mixture = Vec<(f64, f64)>;

/// ln Σ_j w_j·μ(x − s_j) for a mixture of shifted copies of the noise.
fn log_mixture(noise: Noise, components: &[(f64, f64)], x: f64) -> f64 {
    let logs: Vec<f64> = components
        .iter()
        .map(|&(w, s)| w.ln() + noise.log_density(x - s))
        .collect();
    log_sum_exp(&logs)
}

impl OutcomePair {
    fn for_event(event: &Event, relation: Neighbouring) -> Result<Self, NotApplicable> {
        // (noise, one record's contribution, the relation's pair shift)
        let (noise, sensitivity, shift) = match event.mechanism.kind {
            MechanismKind::Zcdp { .. }
            | MechanismKind::LaplaceLogNormal { .. }
            | MechanismKind::RdpCurve { .. }
            | MechanismKind::Exponential { .. }
            | MechanismKind::StudentT { .. }
            | MechanismKind::Cauchy { .. } => {
                return Err(NotApplicable::new(format!(
                    "a {} event is known only by its guarantee: no distribution to estimate from",
                    event.mechanism.name()
                )))
            }
            MechanismKind::MixtureOfGaussians {
                sigma,
                ref sensitivities,
                ref probabilities,
                ..
            } => {
                let p: Mixture = probabilities
                    .iter()
                    .zip(sensitivities)
                    .filter(|(w, _)| **w > 0.0)
                    .map(|(&w, &c)| (w, c))
                    .collect();
                return Ok(Self::on_points(
                    Noise::Gaussian { sigma },
                    sensitivities.iter().fold(0.0, |a: f64, &c| a.max(c)),
                    &p,
                    &[(1.0, 0.0)],
                ));
            }
            MechanismKind::PmfPair { ref p, ref q, .. } => {
                if p.iter().zip(q).any(|(&a, &b)| (a > 0.0) != (b > 0.0)) {
                    return Err(NotApplicable::new(
                        "the pair has outcomes only one side can produce (infinite loss)",
                    ));
                }
                let (log_p, log_q) = p
                    .iter()
                    .zip(q)
                    .filter(|(&a, _)| a > 0.0)
                    .map(|(a, b)| (a.ln(), b.ln()))
                    .unzip();
                return Ok(OutcomePair { log_p, log_q });
            }
            MechanismKind::Gaussian { sigma, sensitivity } => (
                Noise::Gaussian { sigma },
                sensitivity.per_record(),
                sensitivity.pair_shift(relation),
            ),
            MechanismKind::Laplace { scale, sensitivity } => (
                Noise::Laplace { scale },
                sensitivity.per_record(),
                sensitivity.pair_shift(relation),
            ),
            MechanismKind::DiscreteGaussian { sigma, sensitivity } => (
                Noise::DiscreteGaussian { sigma },
                sensitivity.per_record() as f64,
                sensitivity.pair_shift(relation),
            ),
            MechanismKind::DiscreteLaplace { scale, sensitivity } => (
                Noise::DiscreteLaplace { scale },
                sensitivity.per_record() as f64,
                sensitivity.pair_shift(relation),
            ),
            MechanismKind::RandomizedResponse {
                epsilon,
                categories,
            } => return Self::randomized_response(epsilon, categories, event.sampling.kind),
            MechanismKind::EpsDelta { epsilon, delta } => {
                if delta > 0.0 {
                    return Err(NotApplicable::new(
                        "an (ε, δ) guarantee with δ > 0 has an infinite privacy loss",
                    ));
                }
                return Self::randomized_response(epsilon, 2, event.sampling.kind);
            }
        };
        let (p, q): (Mixture, Mixture) = match event.sampling.kind {
            SamplingKind::None => (vec![(1.0, shift)], vec![(1.0, 0.0)]),
            SamplingKind::Poisson(rate) if rate >= 1.0 => {
                (vec![(1.0, sensitivity)], vec![(1.0, 0.0)])
            }
            SamplingKind::Poisson(rate) => (
                vec![(1.0 - rate, 0.0), (rate, sensitivity)],
                vec![(1.0, 0.0)],
            ),
            SamplingKind::FixedBatch {
                batch_size,
                dataset_size,
            } => {
                // The symmetric pair: the sampled record at ±shift/2 (±Δ, or ±r/2 for a
                // replace_sensitivity r).
                let gamma = batch_size as f64 / dataset_size as f64;
                let half = shift / 2.0;
                if gamma >= 1.0 {
                    (vec![(1.0, half)], vec![(1.0, -half)])
                } else {
                    (
                        vec![(1.0 - gamma, 0.0), (gamma, half)],
                        vec![(1.0 - gamma, 0.0), (gamma, -half)],
                    )
                }
            }
            SamplingKind::RandomAllocation { .. } => {
                return Err(NotApplicable::new(
                    "no CLT estimate for random allocation of this mechanism",
                ))
            }
            SamplingKind::TruncatedPoisson { .. } => {
                return Err(NotApplicable::new(
                    "no CLT estimate for truncated Poisson sampling of this mechanism",
                ))
            }
            SamplingKind::Shuffle { .. } => {
                return Err(NotApplicable::new(
                    "no CLT estimate for shuffling (no tight accounting of it is known)",
                ))
            }
        };
        Ok(Self::on_points(noise, shift, &p, &q))
    }

    /// The pair of mixtures of shifted noise, on integer points (discrete noise) or a fine
    /// uniform grid (continuous noise).
    fn on_points(noise: Noise, sensitivity: f64, p: &[(f64, f64)], q: &[(f64, f64)]) -> Self {
        let shifts = p.iter().chain(q).map(|c| c.1);
        let low = shifts.clone().fold(f64::INFINITY, f64::min) - noise.reach();
        let high = shifts.fold(f64::NEG_INFINITY, f64::max) + noise.reach();
        let points: Vec<f64> = if noise.is_discrete() && high - low < MAX_POINTS as f64 {
            let (start, end) = (low.floor() as i64, high.ceil() as i64);
            (start..=end).map(|k| k as f64).collect()
        } else {
            // Continuous noise (or a discrete one so wide that its continuous counterpart is
            // indistinguishable for an estimate): a uniform grid resolving both the noise
            // scale and the shifts; the trapezoid rule is spectrally accurate here.
            let resolution = match noise {
                Noise::Gaussian { sigma } | Noise::DiscreteGaussian { sigma } => sigma / 16.0,
                Noise::Laplace { scale } | Noise::DiscreteLaplace { scale } => {
                    scale.min(sensitivity.max(f64::MIN_POSITIVE)) / 64.0
                }
            };
            let n = (((high - low) / resolution).ceil() as usize).clamp(2, MAX_POINTS);
            let dx = (high - low) / n as f64;
            (0..=n).map(|i| low + i as f64 * dx).collect()
        };
        OutcomePair {
            log_p: points.iter().map(|&x| log_mixture(noise, p, x)).collect(),
            log_q: points.iter().map(|&x| log_mixture(noise, q, x)).collect(),
        }
    }

    /// k-ary randomized response, replace-one pair (binary for ε-DP): outcomes "the first
    /// answer", "the second answer", "any other answer".
    fn randomized_response(
        epsilon: f64,
        categories: u64,
        sampling: SamplingKind,
    ) -> Result<Self, NotApplicable> {
        let k = categories as f64;
        // p = k/(e^ε + k − 1) is the probability of answering uniformly; with
        // c = ln(1 + (k−1)e^{−ε}):  ln(p/k) = −ε − c,  ln(1 − p + p/k) = −c.
        let c = ((k - 1.0) * (-epsilon).exp()).ln_1p();
        let log_other = -epsilon - c;
        let log_truth = -c;
        let rest = if categories > 2 {
            (k - 2.0).ln() - epsilon - c
        } else {
            f64::NEG_INFINITY
        };
        let p = [log_truth, log_other, rest];
        let q = [log_other, log_truth, rest];
        let mix = |rate: f64, a: &[f64; 3], b: &[f64; 3]| -> Vec<f64> {
            a.iter()
                .zip(b)
                .map(|(&x, &y)| ((1.0 - rate) * y.exp() + rate * x.exp()).ln())
                .collect()
        };
        match sampling {
            SamplingKind::None => Ok(OutcomePair {
                log_p: p.to_vec(),
                log_q: q.to_vec(),
            }),
            SamplingKind::Poisson(rate) => Ok(OutcomePair {
                log_p: mix(rate, &p, &q),
                log_q: q.to_vec(),
            }),
            SamplingKind::FixedBatch { .. } => Err(NotApplicable::new(
                "no CLT estimate for randomized response with fixed-batch sampling",
            )),
            SamplingKind::RandomAllocation { .. } => Err(NotApplicable::new(
                "no CLT estimate for randomized response with random allocation",
            )),
            SamplingKind::TruncatedPoisson { .. } => Err(NotApplicable::new(
                "no CLT estimate for randomized response with truncated Poisson sampling",
            )),
            SamplingKind::Shuffle { .. } => Err(NotApplicable::new(
                "no CLT estimate for randomized response with shuffling",
            )),
        }
    }

    fn swapped(self) -> Self {
        OutcomePair {
            log_p: self.log_q,
            log_q: self.log_p,
        }
    }

    /// `E_P[L]` and `Var_P[L]` with P normalized over the outcomes.
    fn moments(&self) -> LossMoments {
        // Normalizing constants (the grid spacing and the noise's constant cancel).
        let norm_p = log_sum_exp(&self.log_p);
        let norm_q = log_sum_exp(&self.log_q);
        let (mut mean, mut second) = (0.0, 0.0);
        for (&lp, &lq) in self.log_p.iter().zip(&self.log_q) {
            let weight = (lp - norm_p).exp();
            if weight == 0.0 {
                continue;
            }
            let loss = (lp - norm_p) - (lq - norm_q);
            mean += weight * loss;
            second += weight * loss * loss;
        }
        LossMoments {
            mean: mean.max(0.0),
            variance: (second - mean * mean).max(0.0),
        }
    }
}
