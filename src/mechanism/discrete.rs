//! Mechanisms with finitely many outcomes (up to tails), as exact atoms of their PLD.
//!
//! Each function returns the REMOVE pair's [`LossAtoms`]; the ADD pair is its swap
//! ([`LossAtoms::swapped`]), identical for the symmetric pairs.

use crate::discretize::loss_atoms::{LossAtom, LossAtoms};
use crate::discretize::loss_bins::MAX_GRID_POINTS;
use crate::error::{Error, Result};
use crate::numeric::log_space::log_add_exp;

/// k-ary randomized response under replace-one: the truth with probability `e^ε/(k−1+e^ε)`,
/// each other answer with `1/(k−1+e^ε)`. The pair is "answer x" vs "answer x'":
/// ```text
/// loss +ε: (P, Q) = (e^ε, 1)/D,   loss −ε: (1, e^ε)/D,   loss 0: (k−2, k−2)/D,   D = k−1+e^ε
/// ```
/// Symmetric. Losses are exactly ±ε and 0 (no logarithm is taken).
///
/// # References
/// Kairouz, Oh & Viswanath, "The composition theorem for differential privacy", ICML 2015
/// (binary case: the worst (ε, 0) pair).
pub fn randomized_response(epsilon: f64, categories: u64) -> LossAtoms {
    let k = categories as f64;
    let e = (-epsilon).exp();
    // Divide through by e^ε: truth 1/(1 + (k−1)e^{−ε}), other e^{−ε}/(1 + (k−1)e^{−ε}).
    let denominator = 1.0 + (k - 1.0) * e;
    let (truth, other) = (1.0 / denominator, e / denominator);
    let rest = (k - 2.0) * other;
    LossAtoms::from_atoms(
        vec![
            LossAtom {
                loss: epsilon,
                p: truth,
                q: other,
            },
            LossAtom {
                loss: -epsilon,
                p: other,
                q: truth,
            },
            LossAtom {
                loss: 0.0,
                p: rest,
                q: rest,
            },
        ],
        0.0,
        0.0,
    )
}

/// The worst-case pair of an (ε, δ)-DP mechanism ("leaky randomized response"):
/// ```text
/// +∞: δ,   +ε: (1−δ)e^ε/(1+e^ε),   −ε: (1−δ)/(1+e^ε)        (and the mirror for Q)
/// ```
/// Every (ε, δ)-DP pair is a post-processing of it, so its k-fold composition gives the
/// optimal composition theorem exactly.
///
/// # References
/// Kairouz, Oh & Viswanath, "The composition theorem for differential privacy", ICML 2015,
/// Thm 3.3 and Lemma 3.1; Murtagh & Vadhan, "The complexity of computing the optimal
/// composition of differential privacy", TCC 2016.
pub fn eps_delta(epsilon: f64, delta: f64) -> LossAtoms {
    // Both from e^{−ε} directly: (1−δ) − high cancels to 0 once e^{−ε} is below an ulp of 1
    // (ε ≳ 37), which would drop the −ε atom's Q-mass of about 1.
    let e = (-epsilon).exp();
    let high = (1.0 - delta) / (1.0 + e);
    let low = (1.0 - delta) * e / (1.0 + e);
    LossAtoms::from_atoms(
        vec![
            LossAtom {
                loss: epsilon,
                p: high,
                q: low,
            },
            LossAtom {
                loss: -epsilon,
                p: low,
                q: high,
            },
        ],
        delta,
        delta,
    )
}

/// How an additive integer-noise pair is sampled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum IntegerPair {
    /// `P = μ(·+Δ)`, `Q = μ` (symmetric).
    Plain,
    /// Poisson rate r: `P = (1−r)μ + rμ(·+Δ)`, `Q = μ` (REMOVE; ADD is the swap).
    Poisson(f64),
}

/// Symmetric noise on the integers, with its probabilities held as logarithms: a pair with
/// a per-step loss of 1000 nats has Q-masses near e^{−1000}, which underflow in f64 although
/// the loss, and the P-mass that carries it, are perfectly representable.
trait IntegerNoise {
    /// ln μ(x) (finite for every x the window reaches: no underflow to −∞).
    fn log_pmf(&self, x: i64) -> f64;
    /// `ℓ(x) = ln(μ(x+Δ)/μ(x))`, computed without cancellation.
    fn loss(&self, x: i64, delta: i64) -> f64;
    /// `ln P(X < x)`, or the log of an upper bound on it where `x` is beyond the window (see
    /// [`IntegerNoise::exact_tails`]).
    fn log_mass_below(&self, x: i64) -> f64;
    /// Whether [`IntegerNoise::log_mass_below`] is exact and the loss is constant beyond the
    /// window (so the tails are atoms rather than bounded remainders).
    fn exact_tails(&self) -> bool;
}

/// Discrete Laplace noise `μ(x) = c·e^{−a|x|}`, `c = tanh(a/2)`.
struct DiscreteLaplaceNoise {
    a: f64,
}

impl DiscreteLaplaceNoise {
    /// `ln tanh(a/2) = ln1p(−e^{−a}) − ln1p(e^{−a})`, accurate for large a too (where
    /// tanh(a/2) rounds to 1).
    fn log_c(&self) -> f64 {
        let e = (-self.a).exp();
        (-e).ln_1p() - e.ln_1p()
    }
}

impl IntegerNoise for DiscreteLaplaceNoise {
    fn log_pmf(&self, x: i64) -> f64 {
        self.log_c() - self.a * x.unsigned_abs() as f64
    }

    fn loss(&self, x: i64, delta: i64) -> f64 {
        self.a * (x.unsigned_abs() as f64 - (x + delta).unsigned_abs() as f64)
    }

    /// `P(X < x) = e^{a(x−1)}/(1+e^{−a})` for x ≤ 0; for x > 0 it is
    /// `1 − e^{−a x}/(1+e^{−a})` by symmetry.
    fn log_mass_below(&self, x: i64) -> f64 {
        let log_norm = (-self.a).exp().ln_1p();
        if x <= 0 {
            self.a * (x - 1) as f64 - log_norm
        } else {
            (-(-self.a * x as f64 - log_norm).exp()).ln_1p()
        }
    }

    fn exact_tails(&self) -> bool {
        true
    }
}

/// Discrete Gaussian noise `μ(x) = e^{−x²/(2σ²)}/Z`.
struct DiscreteGaussianNoise {
    sigma: f64,
    log_z: f64,
}

impl DiscreteGaussianNoise {
    /// `Z = Σ e^{−x²/(2σ²)}`: by Poisson summation `σ√(2π)(1 + 2Σ_k e^{−2π²σ²k²})` for σ ≥ 2
    /// (the k ≥ 2 terms are below e^{−300}), by direct summation to |x| ≤ 40σ + 40 otherwise.
    fn new(sigma: f64) -> Self {
        let z = if sigma >= 2.0 {
            let s2 = sigma * sigma;
            sigma
                * (2.0 * std::f64::consts::PI).sqrt()
                * (1.0 + 2.0 * (-2.0 * std::f64::consts::PI.powi(2) * s2).exp())
        } else {
            let reach = (40.0 * sigma + 40.0) as i64;
            let terms = (-reach..=reach).map(|x| (-((x * x) as f64) / (2.0 * sigma * sigma)).exp());
            crate::numeric::summation::neumaier_sum(terms)
        };
        DiscreteGaussianNoise {
            sigma,
            log_z: z.ln(),
        }
    }

    /// `ln Σ_{k ≥ t} e^{−k²/(2σ²)}/Z ≤ −t²/(2σ²) + ln(1 + σ²/t) − ln Z` for t ≥ 1 (the sum is
    /// bounded by its first term plus the Gaussian integral beyond t, Mills' ratio).
    fn log_tail_bound(&self, t: i64) -> f64 {
        let t = t as f64;
        let s2 = self.sigma * self.sigma;
        (-t * t / (2.0 * s2) + (s2 / t).ln_1p() - self.log_z).min(0.0)
    }
}

impl IntegerNoise for DiscreteGaussianNoise {
    fn log_pmf(&self, x: i64) -> f64 {
        let x = x as f64;
        -x * x / (2.0 * self.sigma * self.sigma) - self.log_z
    }

    fn loss(&self, x: i64, delta: i64) -> f64 {
        // (x² − (x+Δ)²)/(2σ²) = −Δ(2x + Δ)/(2σ²).
        -(delta as f64) * (2 * x + delta) as f64 / (2.0 * self.sigma * self.sigma)
    }

    fn log_mass_below(&self, x: i64) -> f64 {
        if x <= 0 {
            // P(X < x) = P(X ≥ 1 − x) by symmetry.
            self.log_tail_bound(1 - x)
        } else {
            0.0
        }
    }

    fn exact_tails(&self) -> bool {
        false
    }
}

/// Discrete Laplace noise `P(k) ∝ e^{−|k|/scale}` on a query of integer sensitivity Δ.
///
/// ```text
/// ℓ(x) = a(|x| − |x+Δ|) ∈ a·{−Δ, −Δ+2, …, Δ},   a = 1/scale
/// ```
/// The loss is constant beyond `[−Δ, Δ]`, so the atoms are exact: 2Δ + 3 of them at most.
/// With Δ = 1 and no sampling it is binary randomized response with ε = a.
///
/// # Errors
/// [`Error::GridTooLarge`] when Δ needs more than [`MAX_GRID_POINTS`] atoms.
pub fn discrete_laplace(scale: f64, sensitivity: u64, pair: IntegerPair) -> Result<LossAtoms> {
    integer_noise(
        &DiscreteLaplaceNoise { a: 1.0 / scale },
        sensitivity,
        pair,
        0,
    )
}

/// Discrete Gaussian noise `P(k) ∝ e^{−k²/(2σ²)}` on a query of integer sensitivity Δ.
///
/// ```text
/// ℓ(x) = −Δ(2x + Δ)/(2σ²)
/// ```
/// The normalizing constant Z is computed (Poisson summation for σ ≥ 2, a direct sum
/// otherwise). Atoms cover `|x| ≤ T + Δ` with `T = ⌈σ·√(2 ln(4/τ))⌉`; the mass beyond is
/// bounded (Mills' ratio) and charged to +∞ (upper bound) or dropped (lower bound).
///
/// # References
/// Canonne, Kamath & Steinke, "The discrete Gaussian for differential privacy", NeurIPS 2020.
///
/// # Errors
/// [`Error::GridTooLarge`] when the window needs more than [`MAX_GRID_POINTS`] atoms.
pub fn discrete_gaussian(
    sigma: f64,
    sensitivity: u64,
    pair: IntegerPair,
    tail_mass: f64,
) -> Result<LossAtoms> {
    let reach = discrete_gaussian_reach(sigma, tail_mass);
    if reach > MAX_GRID_POINTS as f64 {
        return Err(too_many(reach));
    }
    integer_noise(
        &DiscreteGaussianNoise::new(sigma),
        sensitivity,
        pair,
        reach as i64,
    )
}

/// `T = ⌈σ·√(2 ln(4/τ))⌉ + 1`: [`discrete_gaussian`] lists the atoms of `|x| ≤ T + Δ` at
/// truncation mass τ.
fn discrete_gaussian_reach(sigma: f64, tail_mass: f64) -> f64 {
    (sigma * (2.0 * (4.0 / tail_mass).ln()).sqrt()).ceil() + 1.0
}

/// The span (nats) between the largest and the smallest finite loss of
/// [`discrete_gaussian`]'s atoms for `pair` at truncation mass `tail_mass` (either order:
/// ADD's losses are REMOVE's negated), for grid-size estimates. Unsampled, the window's
/// ends have losses `Δ(2T + Δ)/(2σ²)` and `−Δ(2T + 3Δ)/(2σ²)`; Poisson sampling at rate r
/// maps each loss ℓ to `ln(1 − r + r·e^ℓ)`, which narrows the span a great deal at small
/// rates (σ 4, r 1e-3, τ 1e-16: 0.00965 nats, against 4.625 unsampled).
pub fn discrete_gaussian_loss_span(
    sigma: f64,
    sensitivity: u64,
    pair: IntegerPair,
    tail_mass: f64,
) -> f64 {
    let reach = discrete_gaussian_reach(sigma, tail_mass);
    let d = sensitivity as f64;
    let scale = 2.0 * sigma * sigma;
    let (top, bottom) = (
        d * (2.0 * reach + d) / scale,
        -d * (2.0 * reach + 3.0 * d) / scale,
    );
    match pair {
        IntegerPair::Plain => top - bottom,
        // (A rate of 1, as a fixed batch of the whole dataset gives, is the plain pair.)
        IntegerPair::Poisson(r) if r >= 1.0 => top - bottom,
        IntegerPair::Poisson(r) => {
            // ln(1 − r + r·e^ℓ), without overflow for large ℓ.
            let sampled = |l: f64| {
                if l > 0.0 {
                    l + (r + (1.0 - r) * (-l).exp()).ln()
                } else {
                    (r * l.exp_m1()).ln_1p()
                }
            };
            sampled(top) - sampled(bottom)
        }
    }
}

fn too_many(points: f64) -> Error {
    Error::GridTooLarge {
        points: points as u64,
        limit: MAX_GRID_POINTS as u64,
        hint: "the noise support is too wide to list (use a smaller sensitivity or σ)".into(),
    }
}

/// The atoms of an integer-noise pair on the window `[−reach − Δ, reach + Δ]`, with the tails
/// beyond it as atoms (exact tails) or as bounded remainders.
///
/// Masses are mixed in log space and losses come from the exact loss formula, so an outcome
/// whose Q-mass underflows keeps its P-mass at its true (huge) loss: the roundings then send
/// it to +∞ (upper bound) or down to the top of the grid (lower bound), never drop it. Only
/// masses below the smallest subnormal (about 5e-324 each, 1e-317 in all) can be lost.
fn integer_noise(
    noise: &dyn IntegerNoise,
    sensitivity: u64,
    pair: IntegerPair,
    reach: i64,
) -> Result<LossAtoms> {
    if sensitivity as f64 + reach as f64 > 0.25 * MAX_GRID_POINTS as f64 {
        return Err(too_many(2.0 * (sensitivity as f64 + reach as f64)));
    }
    let d = sensitivity as i64;
    let (lo, hi) = (-reach - d, reach + d);
    // ln-weights of μ(x + s) in P and Q, for shifts s ∈ {0, Δ}; Q is always μ.
    let (p_weights, q_weights): ([f64; 2], [f64; 2]) = match pair {
        IntegerPair::Plain => ([f64::NEG_INFINITY, 0.0], [0.0, f64::NEG_INFINITY]),
        IntegerPair::Poisson(r) => ([(-r).ln_1p(), r.ln()], [0.0, f64::NEG_INFINITY]),
    };
    let shifts = [0, d];
    let log_mix = |weights: &[f64; 2], f: &dyn Fn(i64) -> f64| -> f64 {
        weights
            .iter()
            .zip(shifts)
            .filter(|(w, _)| **w > f64::NEG_INFINITY)
            .map(|(w, s)| w + f(s))
            .fold(f64::NEG_INFINITY, log_add_exp)
    };
    let loss = |x: i64| -> f64 {
        let l = noise.loss(x, d);
        match pair {
            IntegerPair::Plain => l,
            IntegerPair::Poisson(r) => log_add_exp((-r).ln_1p(), r.ln() + l),
        }
    };
    let mut atoms = Vec::with_capacity((hi - lo + 3) as usize);
    let mut p_infinity = 0.0;
    let mut push = |x: i64, log_p: f64, log_q: f64, atoms: &mut Vec<LossAtom>| {
        let p = log_p.exp();
        if p <= 0.0 {
            return;
        }
        if log_q == f64::NEG_INFINITY {
            p_infinity += p;
        } else {
            atoms.push(LossAtom {
                loss: loss(x),
                p,
                q: log_q.exp(),
            });
        }
    };
    for x in lo..=hi {
        let log_p = log_mix(&p_weights, &|s| noise.log_pmf(x + s));
        let log_q = log_mix(&q_weights, &|s| noise.log_pmf(x + s));
        push(x, log_p, log_q, &mut atoms);
    }
    // Tails: x < lo (the largest losses) and x > hi (the smallest).
    let below = |weights: &[f64; 2]| log_mix(weights, &|s| noise.log_mass_below(lo + s));
    let above = |weights: &[f64; 2]| log_mix(weights, &|s| noise.log_mass_below(-hi - s));
    let top = (below(&p_weights), below(&q_weights));
    let bottom = (above(&p_weights), above(&q_weights));
    if noise.exact_tails() {
        // The loss is constant beyond the window: the tails are atoms with the boundary loss.
        push(lo - 1, top.0, top.1, &mut atoms);
        push(hi + 1, bottom.0, bottom.1, &mut atoms);
        Ok(LossAtoms::from_atoms(atoms, p_infinity, 0.0))
    } else {
        let exp = |(p, q): (f64, f64)| (p.exp(), q.exp());
        Ok(LossAtoms::from_atoms(atoms, p_infinity, 0.0).with_tails(exp(top), exp(bottom)))
    }
}

/// The pair given as two lists of outcome probabilities, REMOVE = `p‖q` and ADD = `q‖p`.
pub fn pmf_pair(p: &[f64], q: &[f64]) -> LossAtoms {
    LossAtoms::from_pair(p, q)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The span from the window's ends is the span of the atoms listed, sampled or not, at
    /// the truncation masses queries use (at least that span where the window's end masses
    /// underflow).
    #[test]
    fn discrete_gaussian_loss_span_is_the_atoms_span() {
        for sigma in [0.5, 1.0, 4.0, 30.0] {
            for sensitivity in [1, 3] {
                for pair in [
                    IntegerPair::Plain,
                    IntegerPair::Poisson(1e-3),
                    IntegerPair::Poisson(0.3),
                ] {
                    for tail_mass in [1e-16, 1e-300] {
                        let atoms = discrete_gaussian(sigma, sensitivity, pair, tail_mass).unwrap();
                        let losses = atoms.atoms().iter().map(|a| a.loss);
                        let top = losses.clone().fold(f64::NEG_INFINITY, f64::max);
                        let bottom = losses.fold(f64::INFINITY, f64::min);
                        let span = discrete_gaussian_loss_span(sigma, sensitivity, pair, tail_mass);
                        // (At 1e-300 the window's end masses can underflow, and those
                        // atoms are not listed: the span may then only be wider.)
                        let listed = top - bottom;
                        let holds = if tail_mass < 1e-100 {
                            span >= listed * (1.0 - 1e-9)
                        } else {
                            (span - listed).abs() <= 1e-9 * listed
                        };
                        assert!(
                            holds,
                            "σ {sigma}, Δ {sensitivity}, {pair:?}, τ {tail_mass}: {span} \
                             against [{bottom}, {top}]"
                        );
                    }
                }
            }
        }
        let whole = discrete_gaussian_loss_span(4.0, 1, IntegerPair::Poisson(1.0), 1e-16);
        assert_eq!(
            whole,
            discrete_gaussian_loss_span(4.0, 1, IntegerPair::Plain, 1e-16)
        );
        let narrowed = discrete_gaussian_loss_span(4.0, 1, IntegerPair::Poisson(1e-3), 1e-16);
        let unsampled = discrete_gaussian_loss_span(4.0, 1, IntegerPair::Plain, 1e-16);
        assert!((narrowed - 0.00965).abs() < 5e-5 && (unsampled - 4.625).abs() < 1e-9);
    }
}
