//! The standard normal distribution: CDF, survival function, log-CDF and quantile.
//!
//! ```text
//! Φ(z) = ½ erfc(−z/√2),     Φ̄(z) = 1 − Φ(z) = Φ(−z)
//! ln Φ(z) ~ −z²/2 − ln(−z) − ½ln(2π) + ln(1 − 1/z² + 3/z⁴ − 15/z⁶ + …)   (z → −∞)
//! ```
//! `erfc` is musl's implementation (via the `libm` crate), accurate to about one ulp in
//! relative terms over its whole range, so tails are evaluated without cancellation.

use std::f64::consts::{FRAC_1_SQRT_2, PI};

/// Below this z, `Φ(z)` is computed from the asymptotic series in log space.
const ASYMPTOTIC_BELOW: f64 = -30.0;

/// Standard normal CDF Φ(z); relative accuracy a few ulps for all z (0 below about −38.5).
pub fn cdf(z: f64) -> f64 {
    0.5 * libm::erfc(-z * FRAC_1_SQRT_2)
}

/// Survival function Φ̄(z) = 1 − Φ(z) = Φ(−z), without cancellation.
pub fn sf(z: f64) -> f64 {
    cdf(-z)
}

/// Standard normal density φ(z).
pub fn pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * PI).sqrt()
}

/// ln Φ(z), accurate in both tails (no underflow for z → −∞).
pub fn log_cdf(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    if z > 0.0 {
        (-sf(z)).ln_1p()
    } else if z > ASYMPTOTIC_BELOW {
        cdf(z).ln()
    } else if z == f64::NEG_INFINITY {
        f64::NEG_INFINITY
    } else {
        asymptotic_log_cdf(z)
    }
}

/// ln Φ(z) from the asymptotic (Laplace) series of the Mills ratio, for z ≤ −30:
/// terms (−1)ⁿ (2n−1)!!/z²ⁿ; the tenth is below 1e-20 relative there.
fn asymptotic_log_cdf(z: f64) -> f64 {
    let inv_z2 = 1.0 / (z * z);
    let mut term = 1.0;
    let mut series = 1.0;
    for n in 1..=9 {
        term *= -((2 * n - 1) as f64) * inv_z2;
        series += term;
    }
    -0.5 * z * z - (-z).ln() - 0.5 * (2.0 * PI).ln() + series.ln()
}

/// ln Φ̄(z) = ln Φ(−z).
pub fn log_sf(z: f64) -> f64 {
    log_cdf(-z)
}

/// Quantile Φ⁻¹(p) for `p ∈ (0, 1)`; returns ∓∞ at 0 and 1.
///
/// Solved by bisection on ln Φ (for `p ≤ ½`; by symmetry otherwise), so it is monotone and
/// accurate to about 1e-15 absolute in z. It is used to choose truncation points, whose actual
/// tail masses are then recomputed from `cdf`, so its accuracy never affects a guarantee.
pub fn inverse_cdf(p: f64) -> f64 {
    if p.is_nan() || !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    if p > 0.5 {
        // Upper half by symmetry: Φ⁻¹(p) = −Φ⁻¹(1 − p), with ln(1 − p) computed as ln1p(−p).
        return -inverse_lower((-p).ln_1p());
    }
    inverse_lower(p.ln())
}

/// Solve ln Φ(z) = `log_p` for z ≤ 0 (`p ≤ ½`).
fn inverse_lower(log_p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0_f64, 0.0_f64);
    // ln Φ(−40) ≈ −804.6: below every representable p.
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid == lo || mid == hi {
            break;
        }
        if log_cdf(mid) < log_p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// One tail of a continuous distribution at a point, kept on the side where it is small
/// (constructed by [`Tail::at`] for the standard normal, and by the other noise
/// distributions for theirs).
///
/// Differences of two `Tail`s give interval probabilities without the cancellation that
/// `Φ(b) − Φ(a)` suffers in the right tail.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tail {
    /// `Φ(z)` for a point `z ≤ 0` (also used for z = −∞, with value 0).
    Left(f64),
    /// `Φ̄(z)` for a point `z > 0` (also used for z = +∞, with value 0).
    Right(f64),
}

impl Tail {
    /// The tail of the standard normal at z.
    pub fn at(z: f64) -> Tail {
        if z <= 0.0 {
            Tail::Left(cdf(z))
        } else {
            Tail::Right(sf(z))
        }
    }

    /// Probability of the interval between `self` (upper end) and `lower` (lower end).
    ///
    /// Non-negative by construction; exact up to the rounding of the two tails and one
    /// subtraction that only cancels when the interval is short on the same side.
    pub fn mass_above(self, lower: Tail) -> f64 {
        let m = match (lower, self) {
            (Tail::Left(a), Tail::Left(b)) => b - a,
            (Tail::Right(a), Tail::Right(b)) => a - b,
            (Tail::Left(a), Tail::Right(b)) => 1.0 - a - b,
            // Upper end below lower end: empty interval.
            (Tail::Right(_), Tail::Left(_)) => 0.0,
        };
        m.max(0.0)
    }

    /// Probability below this point, `Φ(z)`.
    pub fn below(self) -> f64 {
        match self {
            Tail::Left(a) => a,
            Tail::Right(b) => 1.0 - b,
        }
    }

    /// Probability above this point, `Φ̄(z)`.
    pub fn above(self) -> f64 {
        match self {
            Tail::Left(a) => 1.0 - a,
            Tail::Right(b) => b,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetry_and_known_values() {
        // Φ(0) = ½ exactly; Φ(−1) = 0.158655253931457 (A&S table 26.1).
        assert_eq!(cdf(0.0), 0.5);
        assert!((cdf(-1.0) - 0.158_655_253_931_457).abs() < 1e-15);
        assert!((cdf(1.0) + sf(1.0) - 1.0).abs() < 1e-16);
    }

    #[test]
    fn series_and_erfc_agree_where_both_are_accurate() {
        // Both branches of log_cdf evaluated at the same points around the switch.
        for z in [-36.0, -33.0, -30.0, -28.0, -25.0] {
            let direct = cdf(z).ln();
            let series = asymptotic_log_cdf(z);
            assert!(
                (direct - series).abs() < 1e-14 * direct.abs(),
                "z={z}: {direct} vs {series}"
            );
        }
    }

    #[test]
    fn quantile_inverts_cdf() {
        for &p in &[1e-300, 1e-30, 1e-10, 0.01, 0.3, 0.5, 0.7, 0.99, 1.0 - 1e-12] {
            let z = inverse_cdf(p);
            let back = if p < 0.5 { log_cdf(z).exp() } else { cdf(z) };
            assert!((back - p).abs() <= 1e-12 * p, "p={p} z={z} back={back}");
        }
    }
}
