//! What each analytic accountant knows about one event of a specification.
//!
//! A [`CompositionSpec`](crate::spec::CompositionSpec) event is translated, under the spec's
//! neighbouring relation, into an RDP curve, a zCDP parameter, or an (ε, δ) guarantee, or
//! into the reason why that accountant cannot use it. The worst-case pairs and conventions are
//! those of the PLD accountant (README, "Worst-case pairs"):
//!
//! ```text
//! additive noise, unsampled:      sensitivity Δ (add/remove), 2Δ (replace), or the
//!                                 replace_sensitivity as given (replace)
//! Poisson rate q (add/remove):    per-record bound Δ
//! fixed batch m of n (replace):   replace-one shift 2Δ (or replace_sensitivity as given),
//!                                 sampling fraction γ = m/n
//! truncated Poisson (add/remove): the revealed mixture of Poisson-subsampled Gaussians of
//!                                 `mechanism::truncated_poisson` (shifts Δ and 2Δ)
//! randomized_response:            the replace-one pair (one answer changed) under both
//!                                 relations; under add/remove (an absent person's report is
//!                                 uniform) this pair dominates by joint convexity
//! eps_delta:                      (ε, δ) as stated, for the spec's relation
//! ```

use super::composition_theorems::ApproxDp;
use super::rdp::RdpCurve;
use super::{rdp_mechanisms, rdp_subsampled};
use crate::mechanism::truncated_poisson::WeightedPair;
use crate::mechanism::{Gaussian, TruncatedPoissonGaussian};
use crate::numeric::log_space::log_sum_exp;
use crate::spec::{Event, MechanismKind, Neighbouring, SamplingKind};

/// Why an accountant cannot use an event (shown as the report's reason).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotApplicable {
    /// One sentence for the report.
    pub reason: String,
}

impl NotApplicable {
    /// A reason for the report.
    pub fn new(reason: impl Into<String>) -> Self {
        NotApplicable {
            reason: reason.into(),
        }
    }
}

/// The pure ε of an unsampled ε-DP mechanism (`None` for the Gaussians, which have none).
fn pure_epsilon(mechanism: &MechanismKind, relation: Neighbouring) -> Option<ApproxDp> {
    let pure = |epsilon: f64| {
        Some(ApproxDp {
            epsilon,
            delta: 0.0,
        })
    };
    match *mechanism {
        MechanismKind::Gaussian { .. }
        | MechanismKind::DiscreteGaussian { .. }
        | MechanismKind::MixtureOfGaussians { .. }
        | MechanismKind::Zcdp { .. }
        | MechanismKind::LaplaceLogNormal { .. }
        | MechanismKind::RdpCurve { .. } => None,
        MechanismKind::PmfPair { ref p, ref q, .. } => Some(pmf_pair_guarantee(p, q)),
        MechanismKind::Laplace { scale, sensitivity } => {
            pure(sensitivity.pair_shift(relation) / scale)
        }
        MechanismKind::DiscreteLaplace { scale, sensitivity } => {
            pure(sensitivity.pair_shift(relation) / scale)
        }
        MechanismKind::RandomizedResponse { epsilon, .. } => pure(epsilon),
        // ε-BR implies ε-DP.
        MechanismKind::Exponential { epsilon } => pure(epsilon),
        ref kind @ (MechanismKind::StudentT { .. } | MechanismKind::Cauchy { .. }) => {
            pure(kind.smooth_sensitivity_epsilon().unwrap_or(f64::INFINITY))
        }
        MechanismKind::EpsDelta { epsilon, delta } => Some(ApproxDp { epsilon, delta }),
    }
}

/// The (ε, δ) guarantee of a finite pair, in both orders: ε the largest finite |ln(p/q)|, δ
/// the larger of the masses only one side can produce.
///
/// # Guarantee
/// Exact as an (ε, δ) pair at that ε: `δ_{p‖q}(ε) = m_∞` once ε is the largest finite loss.
fn pmf_pair_guarantee(p: &[f64], q: &[f64]) -> ApproxDp {
    let (mut epsilon, mut only_p, mut only_q) = (0.0f64, 0.0, 0.0);
    for (&a, &b) in p.iter().zip(q) {
        match (a > 0.0, b > 0.0) {
            (true, true) => epsilon = epsilon.max((a.ln() - b.ln()).abs()),
            (true, false) => only_p += a,
            (false, true) => only_q += b,
            (false, false) => {}
        }
    }
    ApproxDp {
        epsilon,
        delta: f64::max(only_p, only_q).min(1.0),
    }
}

/// Amplification by subsampling of an (ε, δ) guarantee with inclusion probability `rate`:
///
/// ```text
/// ε' = ln(1 + rate·(e^ε − 1)),   δ' = rate·δ
/// ```
///
/// # Guarantee
/// Valid for Poisson sampling under add/remove and for sampling without replacement under
/// replace-one (rate = m/n).
///
/// # References
/// Balle, Barthe & Gaboardi, "Privacy amplification by subsampling", NeurIPS 2018, Thms 8–9;
/// Steinke, "Composition of differential privacy & privacy amplification by subsampling",
/// arXiv:2210.00597 (2022), Thm 29.
fn amplified(guarantee: ApproxDp, rate: f64) -> ApproxDp {
    // ln(1 + rate·expm1(ε)) in log space for large ε: ln(rate) + ε + ln(1 + (1−rate)/(rate·e^ε)).
    let epsilon = if guarantee.epsilon < 30.0 {
        (rate * guarantee.epsilon.exp_m1()).ln_1p()
    } else {
        guarantee.epsilon + rate.ln() + ((1.0 - rate) / rate * (-guarantee.epsilon).exp()).ln_1p()
    };
    ApproxDp {
        epsilon: epsilon.min(guarantee.epsilon).max(0.0),
        delta: rate * guarantee.delta,
    }
}

/// The (ε, δ) guarantee of one run of the event, for the composition theorems.
///
/// # Guarantee
/// The event is (ε, δ)-DP for `relation` (an upper bound: the tightest such pair for Laplace,
/// randomized response and `eps_delta`; amplified by subsampling when sampled).
///
/// # Errors
/// [`NotApplicable`] for Gaussian noise, which has no (ε, 0) guarantee and whose (ε, δ)
/// curve the composition theorems cannot take without splitting δ.
pub fn approximate_dp(event: &Event, relation: Neighbouring) -> Result<ApproxDp, NotApplicable> {
    let base = pure_epsilon(&event.mechanism.kind, relation).ok_or_else(|| {
        NotApplicable::new(match event.mechanism.kind {
            ref kind if kind.is_guarantee() => format!(
                "a {} guarantee has no pure ε; the composition theorems need each event's \
                 (ε, δ)",
                event.mechanism.name()
            ),
            _ => format!(
                "{} noise has no pure ε; the composition theorems need each event's (ε, δ)",
                event.mechanism.name()
            ),
        })
    })?;
    Ok(match event.sampling.kind {
        SamplingKind::None => base,
        SamplingKind::Poisson(rate) => amplified(base, rate),
        SamplingKind::FixedBatch {
            batch_size,
            dataset_size,
        } => amplified(base, batch_size as f64 / dataset_size as f64),
        SamplingKind::RandomAllocation { .. } => {
            return Err(NotApplicable::new(
                "the composition theorems take no random allocation (only the gaussian is \
                 allocated, and it has no pure ε)",
            ))
        }
        SamplingKind::TruncatedPoisson { .. } => {
            return Err(NotApplicable::new(
                "the composition theorems take no truncated Poisson sampling (only the \
                 gaussian is sampled so, and it has no pure ε)",
            ))
        }
        SamplingKind::Shuffle { .. } => {
            return Err(NotApplicable::new(
                "the composition theorems take no shuffling (only the gaussian is shuffled, \
                 and it has no pure ε)",
            ))
        }
    })
}

/// The zCDP guarantee (ρ, δ) of one run of the event: ρ-zCDP, or δ-approximately ρ-zCDP.
///
/// ```text
/// Gaussian, discrete Gaussian:   ρ = Δ²/(2σ²)
/// ε-DP (Laplace, RR, ...):       ρ = ε²/2       (δ carried along for eps_delta)
/// ```
///
/// # Guarantee
/// Upper bound on ρ.
///
/// # Errors
/// [`NotApplicable`] for sampled events (Poisson rate < 1 or a fixed batch): subsampling
/// does not amplify zCDP usefully.
///
/// # References
/// Bun & Steinke, TCC 2016, Props 1.3–1.4; Canonne, Kamath & Steinke, NeurIPS 2020 (discrete
/// Gaussian, Thm 4).
pub fn zcdp(event: &Event, relation: Neighbouring) -> Result<(f64, f64), NotApplicable> {
    // Poisson sampling at rate 1 includes every record: the unsampled pair. Random
    // allocation is bounded without amplification: the record's k steps of an epoch
    // composed (ρ adds up), whatever the other steps do; shuffling likewise, with one step
    // per epoch.
    if let &MechanismKind::Gaussian { sigma, sensitivity } = &event.mechanism.kind {
        let steps_of_record = match event.sampling.kind {
            SamplingKind::RandomAllocation { participations, .. } => Some(participations),
            SamplingKind::Shuffle { .. } => Some(1),
            _ => None,
        };
        if let Some(k) = steps_of_record {
            let rho = super::zcdp::gaussian_rho(sigma / sensitivity.pair_shift(relation));
            return Ok((k as f64 * rho, 0.0));
        }
    }
    let unsampled = matches!(event.sampling.kind, SamplingKind::None)
        || matches!(event.sampling.kind, SamplingKind::Poisson(rate) if rate >= 1.0)
        || matches!(event.sampling.kind, SamplingKind::TruncatedPoisson {
            rate, max_batch_size, dataset_size } if rate >= 1.0 && max_batch_size > dataset_size);
    if !unsampled {
        return Err(NotApplicable::new(
            "zCDP has no useful amplification by subsampling (use RDP or the PLD)",
        ));
    }
    Ok(match event.mechanism.kind {
        MechanismKind::MixtureOfGaussians { .. } => {
            return Err(NotApplicable::new(
                "a mixture of Gaussians is a sampled mechanism: zCDP has no useful bound for it",
            ))
        }
        MechanismKind::Gaussian { sigma, sensitivity } => {
            let shift = sensitivity.pair_shift(relation);
            (super::zcdp::gaussian_rho(sigma / shift), 0.0)
        }
        MechanismKind::DiscreteGaussian { sigma, sensitivity } => {
            let shift = sensitivity.pair_shift(relation);
            (super::zcdp::gaussian_rho(sigma / shift), 0.0)
        }
        ref kind @ (MechanismKind::Zcdp { .. } | MechanismKind::LaplaceLogNormal { .. }) => {
            (kind.zcdp_rho().unwrap_or(f64::INFINITY), 0.0)
        }
        // ε-bounded range is ε²/8-zCDP (Hoeffding; see `renyi_divergence_bound`).
        MechanismKind::Exponential { epsilon } => {
            (epsilon * epsilon / 8.0 * (1.0 + 4.0 * f64::EPSILON), 0.0)
        }
        MechanismKind::RdpCurve { .. } => {
            return Err(NotApplicable::new(
                "an RDP curve at finitely many orders implies no zCDP bound (use RDP or the PLD)",
            ))
        }
        ref other => {
            let guarantee = pure_epsilon(other, relation).ok_or_else(|| {
                NotApplicable::new(format!("no zCDP bound for {}", event.mechanism.name()))
            })?;
            (super::zcdp::pure_dp_rho(guarantee.epsilon), guarantee.delta)
        }
    })
}

/// The RDP curve of one run of the event at `orders`.
///
/// ```text
/// Gaussian:          α/(2σ_m²), σ_m = σ/Δ;  Poisson: MTZ 2019;  fixed batch: WBK 2019 (σ/(2Δ))
/// discrete Gaussian: as the Gaussian (CKS 2020: same zCDP);  Poisson: Steinke Thm 34
/// Laplace:           Mironov 2017 Prop. 6;  Poisson: Steinke Thm 34
/// discrete Laplace:  pure-DP curve at ε = Δ/scale (exact for Δ = 1, where it is binary RR)
/// RR:                k-ary replace-one curve;  eps_delta with δ = 0: pure-DP curve
/// ```
///
/// # Guarantee
/// Upper bound on the Rényi divergence at every order.
///
/// # Errors
/// [`NotApplicable`] for `eps_delta` with δ > 0 (no finite Rényi divergence), and for
/// sampling without replacement of anything but the Gaussian.
pub fn rdp_curve(
    event: &Event,
    relation: Neighbouring,
    orders: &[f64],
) -> Result<RdpCurve, NotApplicable> {
    let orders = orders.to_vec();
    let mechanism = &event.mechanism.kind;
    if let MechanismKind::MixtureOfGaussians { .. } = mechanism {
        return Err(NotApplicable::new(
            "no RDP curve for a mixture of Gaussians in this version (use the PLD)",
        ));
    }
    if let MechanismKind::PmfPair { p, q, .. } = mechanism {
        let (p, q) = (p.clone(), q.clone());
        return Ok(RdpCurve::from_fn(orders, move |a| {
            rdp_mechanisms::pmf_pair(a, &p, &q).max(rdp_mechanisms::pmf_pair(a, &q, &p))
        }));
    }
    if let &MechanismKind::EpsDelta { delta, .. } = mechanism {
        if delta > 0.0 {
            return Err(NotApplicable::new(
                "an (ε, δ) guarantee with δ > 0 bounds no Rényi divergence",
            ));
        }
    }
    if let &MechanismKind::Gaussian { sigma, sensitivity } = mechanism {
        return Ok(match event.sampling.kind {
            SamplingKind::None => {
                let multiplier = sigma / sensitivity.pair_shift(relation);
                RdpCurve::from_fn(orders, |a| rdp_mechanisms::gaussian(a, multiplier))
            }
            SamplingKind::Poisson(rate) => RdpCurve::from_fn(orders, |a| {
                rdp_subsampled::poisson_gaussian(a, rate, sigma / sensitivity.per_record())
            }),
            SamplingKind::FixedBatch {
                batch_size,
                dataset_size,
            } => {
                let gamma = batch_size as f64 / dataset_size as f64;
                RdpCurve::from_fn(orders, |a| {
                    rdp_subsampled::without_replacement_gaussian(
                        a,
                        gamma,
                        sigma / sensitivity.pair_shift(relation),
                    )
                })
            }
            // Without amplification: the record's k steps of the epoch composed (one step
            // per epoch when shuffled).
            SamplingKind::RandomAllocation { participations, .. } => {
                let multiplier = sigma / sensitivity.pair_shift(relation);
                let k = participations as f64;
                RdpCurve::from_fn(orders, |a| k * rdp_mechanisms::gaussian(a, multiplier))
            }
            SamplingKind::Shuffle { .. } => {
                let multiplier = sigma / sensitivity.pair_shift(relation);
                RdpCurve::from_fn(orders, |a| rdp_mechanisms::gaussian(a, multiplier))
            }
            SamplingKind::TruncatedPoisson {
                rate,
                max_batch_size,
                dataset_size,
            } => {
                let gaussian = Gaussian::new(sigma, sensitivity.per_record())
                    .map_err(|e| NotApplicable::new(e.to_string()))?;
                let tp =
                    TruncatedPoissonGaussian::new(gaussian, rate, max_batch_size, dataset_size)
                        .map_err(|e| NotApplicable::new(e.to_string()))?;
                RdpCurve::from_fn(orders, |a| revealed_mixture_rdp(a, tp.upper()))
            }
        });
    }
    // The other mechanisms: an unsampled curve under the relation's sensitivity, subsampled
    // by Steinke's Theorem 34 (Poisson only).
    let base_curve = |relation: Neighbouring| -> Box<dyn Fn(f64) -> f64> {
        match *mechanism {
            MechanismKind::MixtureOfGaussians { .. } | MechanismKind::PmfPair { .. } => {
                unreachable!("handled above")
            }
            MechanismKind::Laplace { scale, sensitivity } => {
                let epsilon0 = sensitivity.pair_shift(relation) / scale;
                Box::new(move |a| rdp_mechanisms::laplace(a, epsilon0))
            }
            MechanismKind::DiscreteLaplace { scale, sensitivity } => {
                let epsilon0 = sensitivity.pair_shift(relation) / scale;
                Box::new(move |a| rdp_mechanisms::pure_dp(a, epsilon0))
            }
            MechanismKind::DiscreteGaussian { sigma, sensitivity } => {
                let multiplier = sigma / sensitivity.pair_shift(relation);
                Box::new(move |a| rdp_mechanisms::gaussian(a, multiplier))
            }
            MechanismKind::RandomizedResponse {
                epsilon,
                categories,
            } => Box::new(move |a| rdp_mechanisms::randomized_response(a, epsilon, categories)),
            MechanismKind::EpsDelta { epsilon, .. } => {
                Box::new(move |a| rdp_mechanisms::pure_dp(a, epsilon))
            }
            // ε-bounded range: Hoeffding's bound below the pure-DP curve.
            MechanismKind::Exponential { epsilon } => Box::new(move |a| {
                crate::mechanism::bounded_range::renyi_divergence_bound(epsilon, a)
            }),
            ref kind @ (MechanismKind::StudentT { .. } | MechanismKind::Cauchy { .. }) => {
                let epsilon = kind.smooth_sensitivity_epsilon().unwrap_or(f64::INFINITY);
                Box::new(move |a| rdp_mechanisms::pure_dp(a, epsilon))
            }
            // The guarantee as stated, for the relation in use.
            ref kind @ (MechanismKind::Zcdp { .. } | MechanismKind::LaplaceLogNormal { .. }) => {
                let rho = kind.zcdp_rho().unwrap_or(f64::INFINITY);
                Box::new(move |a| rho * a)
            }
            // D_α is non-decreasing in α: bounded by the value at the next listed order up.
            MechanismKind::RdpCurve {
                ref orders,
                ref values,
            } => {
                let (orders, values) = (orders.clone(), values.clone());
                Box::new(move |a| {
                    orders
                        .iter()
                        .zip(&values)
                        .filter(|(&o, _)| o >= a)
                        .map(|(_, &v)| v)
                        .fold(f64::INFINITY, f64::min)
                })
            }
            // Sampled Gaussians are handled above; this is the same curve for completeness.
            MechanismKind::Gaussian { sigma, sensitivity } => {
                let multiplier = sigma / sensitivity.pair_shift(relation);
                Box::new(move |a| rdp_mechanisms::gaussian(a, multiplier))
            }
        }
    };
    match event.sampling.kind {
        SamplingKind::None => Ok(RdpCurve::from_fn(orders, base_curve(relation))),
        SamplingKind::Poisson(rate) => {
            let base = base_curve(Neighbouring::AddRemove);
            Ok(RdpCurve::from_fn(orders, |a| {
                rdp_subsampled::poisson_generic(a, rate, &*base)
            }))
        }
        SamplingKind::FixedBatch { .. } => Err(NotApplicable::new(format!(
            "RDP for sampling without replacement is implemented for the Gaussian only, not {}",
            event.mechanism.name()
        ))),
        SamplingKind::RandomAllocation { .. } => Err(NotApplicable::new(format!(
            "random allocation is accounted for the Gaussian only, not {}",
            event.mechanism.name()
        ))),
        SamplingKind::TruncatedPoisson { .. } => Err(NotApplicable::new(format!(
            "truncated Poisson sampling is accounted for the Gaussian only, not {}",
            event.mechanism.name()
        ))),
        SamplingKind::Shuffle { .. } => Err(NotApplicable::new(format!(
            "shuffling is accounted for the Gaussian only, not {}",
            event.mechanism.name()
        ))),
    }
}

/// The Rényi divergence of a revealed mixture of Poisson-subsampled Gaussians (the pair that
/// dominates truncated Poisson sampling, see [`TruncatedPoissonGaussian`]):
///
/// ```text
/// D_α = ln(Σᵢ wᵢ·A_α,ᵢ) / (α − 1),     A_α,ᵢ = exp((α − 1)·D_α,ᵢ)      (α > 1; 0 for α ≤ 1)
/// ```
/// since `A_α = ∫ p^α q^{1−α}` of a revealed mixture is the weighted sum of the parts'. Each
/// part's `ln A_α,ᵢ` is Mironov, Talwar & Zhang's bound
/// ([`rdp_subsampled::poisson_gaussian_log_a`], both directions), so the result bounds the
/// mixture's in both directions.
///
/// Where every `ln A_α,ᵢ ≤ 1` the sum is taken as
/// `ln1p((Σᵢ wᵢ − 1) + Σᵢ wᵢ·expm1(ln A_α,ᵢ))`: the logarithm of a sum of `wᵢ·A_α,ᵢ` near 1
/// lost everything below 1e-16 (a step with σ = 4.4e7 has `D_α` ≈ 1e-18, which came out 0,
/// and so did the δ of its conversion: not an upper bound). Both parts of the argument are
/// bounded with their rounding (the weights' excess over 1 from an error-free sum, the
/// non-negative products within `4u` relative), so the result stays an upper bound; it is
/// at least the weights' excess over 1 (a few ulps where the weights were rounded up so
/// that the mixture dominates).
fn revealed_mixture_rdp(order: f64, parts: &[WeightedPair]) -> f64 {
    if order.is_nan() {
        return f64::INFINITY;
    }
    if order <= 1.0 {
        return 0.0;
    }
    let u = f64::EPSILON / 2.0;
    let log_a: Vec<f64> = parts
        .iter()
        .map(|p| {
            rdp_subsampled::poisson_gaussian_log_a(p.pair.rate(), 1.0 / p.pair.base().mu(), order)
        })
        .collect();
    if log_a.iter().all(|&l| l <= 1.0) {
        // Σ wᵢ − 1 from the weights' sum as an unevaluated pair (head + tail, each addition's
        // error kept by TwoSum): the head minus 1 is exact (Sterbenz) for weights summing to
        // within [½, 2], so only the last addition and the tail's own additions round.
        let (mut head, mut tail) = (0.0_f64, 0.0_f64);
        for part in parts {
            let sum = head + part.weight;
            let back = sum - head;
            tail += (head - (sum - back)) + (part.weight - back);
            head = sum;
        }
        let weight_excess = (head - 1.0) + tail;
        let excess_error = u * weight_excess.abs() + 4.0 * u * tail.abs();
        let spread: f64 = parts
            .iter()
            .zip(&log_a)
            .map(|(p, &l)| p.weight * l.max(0.0).exp_m1())
            .sum();
        let argument = weight_excess + excess_error + spread * (1.0 + 4.0 * u);
        let log_sum = argument.max(0.0).ln_1p() * (1.0 + 4.0 * u);
        return (log_sum / (order - 1.0) * (1.0 + 2.0 * u)).max(0.0);
    }
    let terms: Vec<f64> = parts
        .iter()
        .zip(&log_a)
        .map(|(p, &l)| p.weight.ln() + l)
        .collect();
    // The sum exceeds e^{ln w + 1} ≥ 1 here: a few ulps of its terms' sizes cover the
    // rounding.
    let size = terms.iter().fold(1.0_f64, |a, t| a.max(t.abs()));
    ((log_sum_exp(&terms) + 8.0 * u * size) / (order - 1.0) * (1.0 + 2.0 * u)).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanism::PoissonSubsampled;

    /// A revealed mixture's divergence is at least each part's weighted share, however
    /// small (σ = 4.4e7: about 1e-18, below one ulp of the sum near 1 it used to be taken
    /// from), and a mixture of one part of weight 1 is that part, within a few ulps.
    #[test]
    fn tiny_divergences_of_a_revealed_mixture_are_kept() {
        let pair = |sigma: f64, rate: f64| {
            PoissonSubsampled::new(Gaussian::new(sigma, 1.0).unwrap(), rate).unwrap()
        };
        for sigma in [4.4e7, 1e4, 3.0, 0.5] {
            let parts = [
                WeightedPair {
                    weight: 0.75,
                    pair: pair(sigma, 0.06),
                },
                WeightedPair {
                    weight: 0.25,
                    pair: pair(sigma / 2.0, 0.05),
                },
            ];
            for order in [1.1, 2.0, 7.5, 64.0] {
                let mixed = revealed_mixture_rdp(order, &parts);
                // Each part alone, weighted: ln(1 + w·(A − 1))/(α − 1) ≤ D of the mixture.
                for part in &parts {
                    let log_a = rdp_subsampled::poisson_gaussian_log_a(
                        part.pair.rate(),
                        1.0 / part.pair.base().mu(),
                        order,
                    );
                    // (In log space where A overflows: 1 + w·(A − 1) ≥ w·A for w ≤ 1.)
                    let share = if log_a <= 1.0 {
                        (part.weight * log_a.exp_m1()).ln_1p() / (order - 1.0)
                    } else {
                        (part.weight.ln() + log_a) / (order - 1.0)
                    };
                    assert!(
                        mixed >= share && share > 0.0,
                        "σ {sigma}, α {order}: {mixed:e} below the share {share:e}"
                    );
                }
                let single = [WeightedPair {
                    weight: 1.0,
                    pair: pair(sigma, 0.06),
                }];
                let own =
                    rdp_subsampled::poisson_gaussian_log_a(0.06, sigma, order) / (order - 1.0);
                let alone = revealed_mixture_rdp(order, &single);
                assert!(
                    alone >= own && alone <= own * (1.0 + 1e-12) + 1e-300,
                    "σ {sigma}, α {order}: {alone:e} against the part's {own:e}"
                );
            }
        }
    }
}
