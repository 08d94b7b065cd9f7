//! Zero-concentrated differential privacy (zCDP): ρ of the basic mechanisms and the
//! conversion of a ρ-zCDP guarantee to (ε, δ)-DP.
//!
//! A mechanism is ρ-zCDP when its Rényi divergences satisfy `D_α ≤ αρ` for every α > 1.
//! ρ adds up under (adaptive) composition, which is what makes zCDP a convenient accountant.
//!
//! ```text
//! Gaussian, noise multiplier σ (= std / ℓ₂-sensitivity):   ρ = 1/(2σ²)
//! pure ε-DP:                                              ρ = ε²/2
//! simple conversion:      ε = ρ + 2 sqrt(ρ ln(1/δ))        δ = exp(−(ε − ρ)²/(4ρ))   (ε > ρ)
//! CKS conversion, α > 1:  ε = αρ + ln(1 − 1/α) − (ln δ + ln α)/(α − 1)
//!                         δ = exp((α − 1)(αρ − ε)) (1 − 1/α)^{α−1} / α
//! ```
//! Every α > 1 gives a valid bound, so the result of the numerical minimisation over α is a
//! guaranteed upper bound whatever α the minimiser stops at; only the formula evaluated at that
//! α has to be rounded upwards.
//!
//! # References
//! - Bun & Steinke, "Concentrated differential privacy: simplifications, extensions, and lower
//!   bounds", TCC 2016 (Lemma 2.7 Gaussian, Prop. 1.3 pure DP ⇒ ε²/2-zCDP, Prop. 1.3/Lemma 3.5
//!   conversion).
//! - Canonne, Kamath & Steinke, "The discrete Gaussian for differential privacy", NeurIPS 2020,
//!   Prop. 12 (the CKS conversion); also Asoodeh et al. 2020 and Steinke 2022 ("Composition of
//!   differential privacy & privacy amplification by subsampling", Prop. 14).

use serde::Serialize;

/// Unit round-off of f64.
const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// Half-width of the search interval in `ln(α − 1)` around the analytic guess (e²⁰ ≈ 5e8).
const SEARCH_HALF_WIDTH: f64 = 20.0;

/// Grid points of the coarse scan before the golden-section refinement.
const GRID_POINTS: usize = 161;

/// ρ of the Gaussian mechanism: `ρ = 1/(2σ²)` for noise multiplier σ (std / ℓ₂-sensitivity).
///
/// σ = +∞ gives 0. σ ≤ 0 or NaN (no valid noise) gives +∞, the conservative answer.
///
/// # Guarantee
/// Exact up to one rounding (the Gaussian mechanism is exactly ρ-zCDP, not better).
///
/// # References
/// Bun & Steinke 2016, Prop. 1.6.
pub fn gaussian_rho(noise_multiplier: f64) -> f64 {
    if noise_multiplier.is_nan() || noise_multiplier <= 0.0 {
        return f64::INFINITY;
    }
    0.5 / (noise_multiplier * noise_multiplier)
}

/// ρ implied by pure ε-DP: `ρ = ε²/2`.
///
/// NaN or negative ε gives +∞ (conservative).
///
/// # Guarantee
/// Upper bound on the zCDP parameter of any ε-DP mechanism.
///
/// # References
/// Bun & Steinke 2016, Prop. 1.4; Steinke 2022, Prop. 16.
pub fn pure_dp_rho(epsilon: f64) -> f64 {
    if epsilon.is_nan() || epsilon < 0.0 {
        return f64::INFINITY;
    }
    0.5 * epsilon * epsilon
}

/// Which zCDP → (ε, δ) conversion gave the reported value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ZcdpConversion {
    /// ε = ρ + 2 sqrt(ρ ln(1/δ)).
    Simple,
    /// Canonne–Kamath–Steinke with D_α = αρ, minimised over α.
    CanonneKamathSteinke,
}

/// Upper bound on ε from ρ-zCDP.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ZcdpEpsilon {
    /// Guaranteed upper bound on ε.
    pub epsilon: f64,
    /// The conversion that attains it.
    pub conversion: ZcdpConversion,
    /// The simple conversion's value.
    pub epsilon_simple: f64,
}

/// Best valid ε at δ for ρ-zCDP: the smaller of the simple and the CKS conversion.
///
/// ```text
/// ε = min{ ρ + 2 sqrt(ρ ln(1/δ)),  min_{α>1} αρ + ln(1 − 1/α) − (ln δ + ln α)/(α − 1) },  clipped at 0
/// ```
/// The minimum over α is found by a scan of `ln(α − 1)` over ±20 around the optimum of the
/// leading terms, `α − 1 ≈ sqrt(ln(1/δ)/ρ)`, then golden-section refinement. Each formula is
/// evaluated once more at the final α and rounded up by a bound on its rounding error.
///
/// Special cases: ρ = 0 or δ ≥ 1 → 0; ρ = +∞ or δ ≤ 0 → +∞; NaN or ρ < 0 → +∞. Never NaN.
///
/// # Guarantee
/// Upper bound: every ρ-zCDP mechanism is (ε, δ)-DP with the returned ε.
///
/// # References
/// Bun & Steinke 2016, Prop. 1.3; Canonne, Kamath & Steinke 2020, Prop. 12.
pub fn epsilon_for_delta(rho: f64, delta: f64) -> ZcdpEpsilon {
    let exact = |epsilon: f64, conversion| ZcdpEpsilon {
        epsilon,
        conversion,
        epsilon_simple: epsilon,
    };
    if rho.is_nan() || delta.is_nan() || rho < 0.0 {
        return exact(f64::INFINITY, ZcdpConversion::Simple);
    }
    if delta >= 1.0 || rho == 0.0 {
        return exact(0.0, ZcdpConversion::Simple);
    }
    if delta <= 0.0 || rho == f64::INFINITY {
        return exact(f64::INFINITY, ZcdpConversion::Simple);
    }
    let log_inv_delta = -delta.ln(); // > 0, ≤ 745
    let simple = simple_epsilon(rho, log_inv_delta);
    let guess = (log_inv_delta / rho).sqrt().ln();
    let s = minimise(guess, |s| cks_epsilon(rho, delta.ln(), s).0);
    let (value, magnitude) = cks_epsilon(rho, delta.ln(), s);
    let cks = (value + 8.0 * UNIT_ROUNDOFF * magnitude).max(0.0);
    if cks.is_finite() && cks < simple {
        ZcdpEpsilon {
            epsilon: cks,
            conversion: ZcdpConversion::CanonneKamathSteinke,
            epsilon_simple: simple,
        }
    } else {
        exact(simple, ZcdpConversion::Simple)
    }
}

/// Best valid δ at ε for ρ-zCDP: the smaller of the simple and the CKS conversion, in [0, 1].
///
/// ```text
/// δ = min{ exp(−(ε − ρ)²/(4ρ)) [ε > ρ, else 1],  min_{α>1} exp((α−1)(αρ − ε)) (1 − 1/α)^{α−1}/α }
/// ```
/// Special cases: ρ = 0 and ε ≥ 0 → 0; ε < 0 → 1 (a trivial bound); ρ = +∞ → 1; NaN → 1.
///
/// # Guarantee
/// Upper bound: every ρ-zCDP mechanism is (ε, δ)-DP with the returned δ.
///
/// # References
/// Bun & Steinke 2016, Prop. 1.3; Canonne, Kamath & Steinke 2020, Prop. 12.
pub fn delta_for_epsilon(rho: f64, epsilon: f64) -> f64 {
    if rho.is_nan() || epsilon.is_nan() || rho < 0.0 || rho == f64::INFINITY {
        return 1.0;
    }
    if epsilon < 0.0 {
        return 1.0;
    }
    if rho == 0.0 || epsilon == f64::INFINITY {
        return 0.0;
    }
    // Simple: ln δ = −(ε − ρ)²/(4ρ) for ε > ρ.
    let log_simple = if epsilon > rho {
        let d = epsilon - rho;
        -(d * d) / (4.0 * rho) * (1.0 - 4.0 * UNIT_ROUNDOFF)
    } else {
        0.0
    };
    let guess = (0.5 * (epsilon - rho).max(rho) / rho).ln();
    let s = minimise(guess, |s| cks_log_delta(rho, epsilon, s).0);
    let (value, magnitude) = cks_log_delta(rho, epsilon, s);
    let log_cks = value + 8.0 * UNIT_ROUNDOFF * magnitude;
    let log_delta = if log_cks.is_finite() {
        log_cks.min(log_simple)
    } else {
        log_simple
    };
    if log_delta.is_nan() {
        // ∞/∞ for ρ and ε near f64::MAX: only the trivial bound.
        return 1.0;
    }
    // exp rounds to within one ulp; the factor covers it.
    (log_delta.exp() * (1.0 + 4.0 * UNIT_ROUNDOFF)).clamp(0.0, 1.0)
}

/// The simple conversion ε = ρ + 2 sqrt(ρ ln(1/δ)), rounded up.
fn simple_epsilon(rho: f64, log_inv_delta: f64) -> f64 {
    (rho + 2.0 * (rho * log_inv_delta).sqrt()) * (1.0 + 8.0 * UNIT_ROUNDOFF)
}

/// `ln(a/(1 + a)) = ln(1 − 1/α)` without cancellation for large a.
fn ln_ratio(a: f64) -> f64 {
    if a > 1.0 {
        -(1.0 / a).ln_1p()
    } else {
        a.ln() - a.ln_1p()
    }
}

/// CKS ε at α = 1 + e^s, and the sum of the absolute values of its terms (for rounding).
///
/// With a = α − 1: `ε = (1 + a)ρ + ln(a/(1 + a)) − (ln δ + ln(1 + a))/a`.
fn cks_epsilon(rho: f64, log_delta: f64, s: f64) -> (f64, f64) {
    let a = s.exp();
    let t1 = (1.0 + a) * rho;
    let t2 = ln_ratio(a);
    let t3 = -(log_delta + a.ln_1p()) / a;
    let value = t1 + t2 + t3;
    if value.is_nan() {
        return (f64::INFINITY, f64::INFINITY);
    }
    (value, t1.abs() + t2.abs() + t3.abs() + log_delta.abs() / a)
}

/// CKS ln δ at α = 1 + e^s, and the sum of the absolute values of its terms.
///
/// With a = α − 1: `ln δ = a((1 + a)ρ − ε) + a(ln a − ln(1 + a)) − ln(1 + a)`.
fn cks_log_delta(rho: f64, epsilon: f64, s: f64) -> (f64, f64) {
    let a = s.exp();
    let t1 = a * ((1.0 + a) * rho - epsilon);
    let t2 = a * ln_ratio(a);
    let t3 = -a.ln_1p();
    let value = t1 + t2 + t3;
    if value.is_nan() {
        return (f64::INFINITY, f64::INFINITY);
    }
    let magnitude = a * ((1.0 + a) * rho + epsilon) + t2.abs() + t3.abs();
    (value, magnitude)
}

/// Minimiser of `f` over `s ∈ [centre − 20, centre + 20]`: a coarse scan, then golden-section
/// search in the best grid cell. Any returned point is acceptable (the bound is valid at every
/// α), so no convexity assumption is needed for correctness, only for optimality.
fn minimise(centre: f64, f: impl Fn(f64) -> f64) -> f64 {
    let centre = if centre.is_finite() { centre } else { 0.0 };
    let lo = centre - SEARCH_HALF_WIDTH;
    let step = 2.0 * SEARCH_HALF_WIDTH / (GRID_POINTS - 1) as f64;
    let mut best = lo;
    let mut best_value = f64::INFINITY;
    for i in 0..GRID_POINTS {
        let s = lo + step * i as f64;
        let v = f(s);
        if v < best_value {
            best_value = v;
            best = s;
        }
    }
    let (mut a, mut b) = (best - step, best + step);
    let inv_phi = 0.5 * (5.0_f64.sqrt() - 1.0);
    let mut c = b - inv_phi * (b - a);
    let mut d = a + inv_phi * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..80 {
        if fc <= fd {
            b = d;
            d = c;
            fd = fc;
            c = b - inv_phi * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + inv_phi * (b - a);
            fd = f(d);
        }
    }
    let s = 0.5 * (a + b);
    if f(s) <= best_value {
        s
    } else {
        best
    }
}
