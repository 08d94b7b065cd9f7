//! Exact accounting for compositions of unsampled Gaussian mechanisms, with no grid at all.
//!
//! The composition of Gaussian mechanisms with `μᵢ = Δᵢ/σᵢ` is exactly a Gaussian mechanism
//! with `μ = √(Σ μᵢ²)` (Dong, Roth & Su, "Gaussian differential privacy", JRSS-B 2022,
//! Cor. 3.3), whose δ(ε) has the closed form of [`Gaussian::delta_for_mu`].

use crate::bound::Bracket;
use crate::mechanism::Gaussian;

/// Relative error allowed for the closed-form δ, per nat of `|ln δ|` (plus one): the log-space
/// evaluation subtracts quantities of size `|ln Φ| ≈ |ln δ|`, so its absolute error in ln δ
/// grows like `|ln δ|·u`. Measured against mpmath (tests/reference_values.rs): below 1.2e-13
/// per nat down to δ = 1e-300; the allowance is ten times that.
pub const GAUSSIAN_RELATIVE_ERROR: f64 = 1e-12;

/// The relative error allowance of the closed form at a given δ.
pub fn relative_error(delta: f64) -> f64 {
    GAUSSIAN_RELATIVE_ERROR * (1.0 + delta.ln().abs().min(800.0))
}

/// Guaranteed bracket on δ(ε) for a Gaussian mechanism with parameter `mu`.
pub fn delta_for_epsilon(mu: f64, epsilon: f64) -> Bracket {
    let delta = Gaussian::delta_for_mu(mu, epsilon);
    let r = relative_error(delta);
    Bracket {
        upper: (delta * (1.0 + r)).min(1.0),
        lower: delta * (1.0 - r),
    }
}

/// Guaranteed bracket on ε(δ) for a Gaussian mechanism with parameter `mu`.
///
/// Bisection on the closed form, which is strictly decreasing where positive: the upper end
/// satisfies `δ(ε)·(1 + r) ≤ δ` and the lower end `δ(ε)·(1 − r) > δ`, so rounding of the
/// closed form cannot move the truth outside.
pub fn epsilon_for_delta(mu: f64, delta: f64) -> Bracket {
    let certainly_below = |eps: f64| {
        let d = Gaussian::delta_for_mu(mu, eps);
        d * (1.0 + relative_error(d)) <= delta
    };
    let certainly_above = |eps: f64| {
        let d = Gaussian::delta_for_mu(mu, eps);
        d * (1.0 - relative_error(d)) > delta
    };
    if certainly_below(0.0) {
        return Bracket {
            upper: 0.0,
            lower: 0.0,
        };
    }
    // Find an ε whose δ is certainly below the target.
    let mut hi = 1.0_f64;
    while !certainly_below(hi) {
        hi *= 2.0;
        if hi > 1e12 {
            return Bracket {
                upper: f64::INFINITY,
                lower: 0.0,
            };
        }
    }
    let upper = boundary(0.0, hi, certainly_below).1;
    let lower = if certainly_above(0.0) {
        boundary(0.0, upper, |eps| !certainly_above(eps)).0
    } else {
        0.0
    };
    Bracket { upper, lower }
}

/// Bisection for the switch of a monotone predicate: given `!right(lo)` and `right(hi)`,
/// returns adjacent floats `(a, b)` (to 1e-15 relative) with `!right(a)` and `right(b)`.
fn boundary(mut lo: f64, mut hi: f64, right: impl Fn(f64) -> bool) -> (f64, f64) {
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if right(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    (lo, hi)
}
