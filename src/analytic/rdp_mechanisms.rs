//! Rényi divergences of the unsampled base mechanisms (Gaussian, Laplace, randomized response).
//!
//! All values are in nats. Each is the exact Rényi divergence `D_α(P‖Q)` of the worst pair of
//! output distributions, so it is the tight RDP curve of the mechanism:
//! ```text
//! D_α(P‖Q) = (1/(α−1)) · ln ∫ p^α q^{1−α},      D_1 = KL(P‖Q),      D_∞ = sup ln(p/q)
//! ```
//! The closed forms are rewritten so that every quantity under a logarithm is a sum of
//! non-negative terms (`y ≥ 0` below, `D = ln(1 + y)/(α−1)`), evaluated in log space. So there
//! is no cancellation for small ε or α near 1, and no overflow for α up to 1024 and ε up to
//! ~700 or beyond. Results are exact up to a few ulps.
//!
//! Valid ranges (the caller validates): α ≥ 1 (α = 1 gives the KL limit, α = +∞ the
//! max-divergence), ε ≥ 0, σ > 0. Outside them nothing panics and nothing is NaN: α < 1 is
//! treated as α = 1 (an upper bound, since `D_α` is non-decreasing in α) and a NaN argument
//! gives +∞.
use crate::numeric::log_space::{ln_expm1, ln_neg_expm1_neg, log_add_exp, softplus};

/// Gaussian mechanism with noise multiplier σ (noise standard deviation / ℓ2 sensitivity).
///
/// ```text
/// D_α = α / (2σ²)
/// ```
/// Equivalently ρ-zCDP with `ρ = 1/(2σ²)`. σ = 0 gives +∞.
///
/// # Guarantee
/// Exact (tight) Rényi divergence, hence an upper bound on the RDP of the mechanism.
///
/// # References
/// Mironov, "Rényi differential privacy", CSF 2017, Prop. 7 (Table II).
pub fn gaussian(alpha: f64, noise_multiplier: f64) -> f64 {
    if alpha.is_nan() || noise_multiplier.is_nan() {
        return f64::INFINITY;
    }
    let alpha = alpha.max(1.0);
    let d = alpha / (2.0 * noise_multiplier * noise_multiplier);
    // ∞/∞ (α = ∞ with σ² overflowing): no finite bound.
    if d.is_nan() {
        f64::INFINITY
    } else {
        d
    }
}

/// Laplace mechanism with `ε₀ = sensitivity / scale` (Mironov 2017, Prop. 6).
///
/// ```text
/// D_α = (1/(α−1)) ln[ α/(2α−1)·e^{(α−1)ε₀} + (α−1)/(2α−1)·e^{−αε₀} ]
///     = ln(1 + y)/(α−1),   y = [α·g((α−1)ε₀) + (α−1)·g(−αε₀)] / (2α−1),   g(t) = eᵗ − 1 − t ≥ 0
/// D_1 = ε₀ + e^{−ε₀} − 1 = g(−ε₀)        D_∞ = ε₀
/// ```
/// The second form (expand both exponentials, the linear terms cancel exactly) has only
/// non-negative terms; it is evaluated in log space with `ln g` from its Taylor series near 0.
///
/// # Guarantee
/// Exact (tight) Rényi divergence up to a few ulps, hence an upper bound on the RDP of the
/// Laplace mechanism.
///
/// # References
/// Mironov, "Rényi differential privacy", CSF 2017, Prop. 6.
pub fn laplace(alpha: f64, epsilon0: f64) -> f64 {
    if alpha.is_nan() || epsilon0.is_nan() || epsilon0 == f64::INFINITY {
        return f64::INFINITY;
    }
    let eps = epsilon0.max(0.0);
    if eps == 0.0 {
        return 0.0;
    }
    if alpha == f64::INFINITY {
        return eps;
    }
    if alpha <= 1.0 {
        return ln_g(-eps).exp();
    }
    let am1 = alpha - 1.0;
    let log_y = log_add_exp(alpha.ln() + ln_g(am1 * eps), am1.ln() + ln_g(-alpha * eps))
        - (2.0 * alpha - 1.0).ln();
    // D_α ≤ D_∞ = ε₀; the clamp only matters where (α−1)ε₀ overflows.
    (softplus(log_y) / am1).min(eps)
}

/// Any ε-DP mechanism; tight for binary randomized response.
///
/// ```text
/// D_α = (1/(α−1)) ln[ (e^{αε} + e^{(1−α)ε}) / (1 + e^ε) ]
///     = ln(1 + y)/(α−1),   y = (e^{αε} − 1)(1 − e^{−(α−1)ε}) / (1 + e^ε)
/// D_1 = ε·tanh(ε/2)        D_∞ = ε
/// ```
/// Equals Bun–Steinke's `ln[(sinh(αε) − sinh((α−1)ε))/sinh ε]/(α−1)`; `α = 2, ε = 1` gives
/// 0.7353256640555. This is [`randomized_response`] with two categories.
///
/// # Guarantee
/// Upper bound on the RDP of every ε-DP mechanism (exact for binary randomized response),
/// up to a few ulps.
///
/// # References
/// Bun & Steinke, "Concentrated differential privacy: simplifications, extensions, and lower
/// bounds", TCC 2016, Prop. 3.3 and its proof; Mironov 2017, Prop. 5.
pub fn pure_dp(alpha: f64, epsilon: f64) -> f64 {
    randomized_response(alpha, epsilon, 2)
}

/// k-ary randomized response with parameter ε under replace-one neighbouring.
///
/// The mechanism reports the true category with probability `1 − p + p/k` and each other one
/// with `p/k`, where `p = k/(e^ε + k − 1)`, so that the likelihood ratio is at most
/// `r = k/p − k + 1 = e^ε`. For inputs in categories 1 and 2 the output laws are
/// `P = [1−p+p/k, p/k, p/k, …]` and `Q = [p/k, 1−p+p/k, p/k, …]`, whose divergence is
/// ```text
/// Σ P^α Q^{1−α} = (p/k)·r^α + (1−p+p/k)·r^{−α} + (1 − 2/k)·p
///               = [e^{αε} + e^{(1−α)ε} + k − 2] / (e^ε + k − 1)
/// D_α = ln(1 + y)/(α−1),   y = (e^{αε} − 1)(1 − e^{−(α−1)ε}) / (e^ε + k − 1)
/// D_1 = ε (e^ε − 1)/(e^ε + k − 1)        D_∞ = ε
/// ```
/// (the first element contributes `(1−p+p/k)^α (p/k)^{1−α} = (p/k) r^α`, the second
/// `(p/k)^α (1−p+p/k)^{1−α} = (1−p+p/k) r^{−α}`; this is dp_accounting's
/// `_randomized_response_rdp_replace_one`). With k = 2 it is [`pure_dp`]. `k ≤ 1` releases
/// nothing and gives 0.
///
/// # Guarantee
/// Exact (tight) Rényi divergence up to a few ulps, hence an upper bound on the RDP.
///
/// # References
/// Warner, "Randomized response", JASA 1965; dp_accounting 0.6.0
/// `rdp_privacy_accountant._randomized_response_rdp_replace_one`.
pub fn randomized_response(alpha: f64, epsilon: f64, categories: u64) -> f64 {
    if alpha.is_nan() || epsilon.is_nan() {
        return f64::INFINITY;
    }
    let eps = epsilon.max(0.0);
    if categories <= 1 || eps == 0.0 {
        return 0.0;
    }
    if eps == f64::INFINITY {
        return f64::INFINITY;
    }
    if alpha == f64::INFINITY {
        return eps;
    }
    // ln(e^ε + k − 1), without overflow.
    let log_denominator = log_add_exp(eps, ((categories - 1) as f64).ln());
    if alpha <= 1.0 {
        return eps * (ln_expm1(eps) - log_denominator).exp();
    }
    let am1 = alpha - 1.0;
    let log_y = ln_expm1(alpha * eps) + ln_neg_expm1_neg(am1 * eps) - log_denominator;
    // D_α ≤ D_∞ = ε; the clamp only matters where αε overflows.
    (softplus(log_y) / am1).min(eps)
}

/// `ln g(t)` with `g(t) = eᵗ − 1 − t ≥ 0` (−∞ at 0, +∞ at ±∞).
///
/// ```text
/// |t| ≤ ½:  g(t) = (t²/2)·Σ_{k≥0} 2tᵏ/(k+2)!      (25 terms: the rest is below 1e-30)
/// t > 2:    ln g(t) = t + ln(1 − (1+t)e^{−t})
/// else:     ln(expm1(t) − t)                      (cancels by at most a factor 10)
/// ```
fn ln_g(t: f64) -> f64 {
    if t == 0.0 {
        return f64::NEG_INFINITY;
    }
    if t.is_infinite() {
        return f64::INFINITY;
    }
    if t.abs() <= 0.5 {
        let mut term = 1.0;
        let mut series = 1.0;
        for k in 1..25 {
            term *= t / (k + 2) as f64;
            series += term;
        }
        2.0 * t.abs().ln() - std::f64::consts::LN_2 + series.ln()
    } else if t > 2.0 {
        t + (-(1.0 + t) * (-t).exp()).ln_1p()
    } else {
        (t.exp_m1() - t).ln()
    }
}

/// Rényi divergence `D_α(p‖q)` of two distributions on the same finite outcomes.
///
/// ```text
/// D_α = ln(Σ pᵢ^α qᵢ^{1−α})/(α − 1)  (α > 1),   D_1 = Σ pᵢ ln(pᵢ/qᵢ)
/// ```
/// The sum is taken in log space (log-sum-exp).
///
/// # Guarantee
/// Upper bound: the value is raised by the sum's worst-case rounding, `(n + 4)·u/(α − 1)`
/// for n outcomes; +∞ when some outcome has `p > 0 = q`.
pub fn pmf_pair(alpha: f64, p: &[f64], q: &[f64]) -> f64 {
    if alpha.is_nan() || p.iter().zip(q).any(|(&a, &b)| a > 0.0 && b <= 0.0) {
        return f64::INFINITY;
    }
    let n = p.len() as f64;
    if alpha <= 1.0 {
        let kl: f64 = p
            .iter()
            .zip(q)
            .filter(|(&a, _)| a > 0.0)
            .map(|(&a, &b)| a * (a.ln() - b.ln()))
            .sum();
        return kl.max(0.0) + (n + 4.0) * f64::EPSILON;
    }
    let terms: Vec<f64> = p
        .iter()
        .zip(q)
        .filter(|(&a, _)| a > 0.0)
        .map(|(&a, &b)| alpha * a.ln() + (1.0 - alpha) * b.ln())
        .collect();
    let value = crate::numeric::log_space::log_sum_exp(&terms) / (alpha - 1.0);
    value.max(0.0) + (n + 4.0) * f64::EPSILON / (alpha - 1.0)
}
