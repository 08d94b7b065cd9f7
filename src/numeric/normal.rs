//! The standard normal distribution: CDF, survival function, log-CDF and quantile.
//!
//! ```text
//! Φ(z) = ½ erfc(−z/√2),     Φ̄(z) = 1 − Φ(z) = Φ(−z)
//! ln Φ(z) ~ −z²/2 − ln(−z) − ½ln(2π) + ln(1 − 1/z² + 3/z⁴ − 15/z⁶ + …)   (z → −∞)
//! ```
//! `erfc` is [`super::erfc::erfc`], accurate to a few ulps in relative terms over its whole
//! range, so tails are evaluated without cancellation.

use std::f64::consts::{FRAC_1_SQRT_2, PI};

/// Below this z, `Φ(z)` is computed from the asymptotic series in log space.
const ASYMPTOTIC_BELOW: f64 = -30.0;

/// Standard normal CDF Φ(z); relative accuracy a few ulps for all z (0 below about −38.5).
#[inline]
pub fn cdf(z: f64) -> f64 {
    0.5 * super::erfc::erfc(-z * FRAC_1_SQRT_2)
}

/// Survival function Φ̄(z) = 1 − Φ(z) = Φ(−z), without cancellation.
#[inline]
pub fn sf(z: f64) -> f64 {
    cdf(-z)
}

/// Standard normal density φ(z).
pub fn pdf(z: f64) -> f64 {
    (-0.5 * z * z).exp() / (2.0 * PI).sqrt()
}

/// Whether [`mass_between_shifted`] uses its series at (z, s), `s·(|z − s/2| + s) ≤ 1`;
/// elsewhere it is the plain difference of the two tails, which callers that already hold
/// them can take themselves.
pub fn shifted_series_applies(z: f64, s: f64) -> bool {
    s * ((z - 0.5 * s).abs() + s) <= 1.0
}

/// `Φ(z) − Φ(z − s)` for a shift `s ≥ 0`: the standard normal mass of `(z − s, z]`, accurate in
/// relative terms however small s is.
///
/// ```text
/// ∫_{z−s}^{z} φ = s·φ(m)·Σ_{j≥0} He_{2j}(m)·(s/2)^{2j}/(2j+1)!,     m = z − s/2
/// ```
/// (Taylor expansion of φ about the midpoint, `φ^{(k)} = (−1)^k He_k φ`), used where
/// `s·(|m| + s) ≤ 1` so that the terms fall off like `(s|m|/2)^{2j}/(2j+1)!`; elsewhere the
/// two tails differ by a factor of more than about 1.5 and their difference (on the side where
/// they are small) does not cancel.
pub fn mass_between_shifted(z: f64, s: f64) -> f64 {
    if s.is_nan() || s <= 0.0 || z.is_infinite() || z.is_nan() {
        return 0.0;
    }
    let m = z - 0.5 * s;
    if !shifted_series_applies(z, s) {
        let (hi, lo) = (z, z - s);
        let direct = if lo >= 0.0 {
            sf(lo) - sf(hi)
        } else if hi <= 0.0 {
            cdf(hi) - cdf(lo)
        } else {
            1.0 - cdf(lo) - sf(hi)
        };
        return direct.max(0.0);
    }
    if m.abs() > 39.0 {
        // φ underflows on the whole interval (it is shorter than 1/39).
        return 0.0;
    }
    let x = 0.25 * s * s;
    // Cramér: |He_n(m)| ≤ 1.0865·√(n!)·e^{m²/4}, which bounds every term from j on.
    let envelope = 1.0865 * (0.25 * m * m).exp();
    // He_{n+1}(m) = m·He_n(m) − n·He_{n−1}(m).
    let (mut he_prev, mut he) = (1.0, m); // He_0, He_1
    let mut n = 1.0; // index of `he`
    let mut sum = 1.0; // j = 0 term
    let mut power = 1.0; // (s/2)^{2j} / (2j+1)!
    let mut sqrt_factorial = 1.0; // √((2j)!)
    for j in 1..80 {
        // Two steps of the recurrence: afterwards `he_prev` = He_{2j}, `he` = He_{2j+1}.
        for _ in 0..2 {
            let next = m * he - n * he_prev;
            he_prev = he;
            he = next;
            n += 1.0;
        }
        let k = 2.0 * j as f64;
        power *= x / (k * (k + 1.0));
        sqrt_factorial *= ((k - 1.0) * k).sqrt();
        sum += he_prev * power;
        // The later terms shrink by a factor ≤ x/k each: stop once their bound is negligible.
        if envelope * sqrt_factorial * power <= 1e-18 * sum.abs() {
            break;
        }
    }
    (s * pdf(m) * sum).max(0.0)
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
    #[inline]
    pub fn at(z: f64) -> Tail {
        if z <= 0.0 {
            Tail::Left(cdf(z))
        } else {
            Tail::Right(sf(z))
        }
    }

    /// [`Tail::at`] at every point of `z`, the same values: the tails' erfc are computed in
    /// one batch ([`super::erfc::erfc_non_negative`], vector instructions), a NaN point
    /// alone as by [`Tail::at`].
    pub fn at_each(z: &[f64]) -> Vec<Tail> {
        // erfc's argument on either side: −z/√2 for Φ(z) (z ≤ 0), z/√2 for Φ̄(z) = Φ(−z).
        let arguments: Vec<f64> = z.iter().map(|&z| z.abs() * FRAC_1_SQRT_2).collect();
        let mut values = vec![0.0; z.len()];
        super::erfc::erfc_non_negative(&arguments, &mut values);
        z.iter()
            .zip(values)
            .map(|(&z, value)| {
                if z <= 0.0 {
                    Tail::Left(0.5 * value)
                } else if z > 0.0 {
                    Tail::Right(0.5 * value)
                } else {
                    Tail::at(z)
                }
            })
            .collect()
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

    /// The batch gives [`Tail::at`]'s tail at every point, bit for bit: both sides, ±0, the
    /// far tails, ±∞ and NaN.
    #[test]
    fn tails_in_a_batch_are_tails_one_at_a_time() {
        let mut z: Vec<f64> = (0..=200_000)
            .map(|i| -60.0 + 120.0 * i as f64 / 200_000.0)
            .collect();
        z.extend([
            0.0,
            -0.0,
            1e-300,
            -1e-300,
            38.0,
            -38.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ]);
        z.push(f64::NAN);
        let bits = |tail: Tail| match tail {
            Tail::Left(v) => (0, v.to_bits()),
            Tail::Right(v) => (1, v.to_bits()),
        };
        for (&z, tail) in z.iter().zip(Tail::at_each(&z)) {
            assert_eq!(bits(tail), bits(Tail::at(z)), "z = {z}");
        }
    }

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
    fn shifted_mass_matches_the_difference_where_it_does_not_cancel_and_the_limit_where_it_does() {
        for z in [-37.0, -10.0, -1.0, 0.0, 0.3, 2.0, 10.0] {
            // Large shifts: the direct difference is accurate.
            for s in [0.7, 1.5, 3.0] {
                let direct = cdf(z) - cdf(z - s);
                let direct = if z - s > 0.0 {
                    sf(z - s) - sf(z)
                } else {
                    direct
                };
                let ours = mass_between_shifted(z, s);
                assert!((ours - direct).abs() <= 1e-13 * direct, "z={z} s={s}");
            }
            // Tiny shifts: s·φ(z − s/2)·(1 + (m² − 1)s²/24).
            for s in [1e-12, 1e-6] {
                let m = z - 0.5 * s;
                let limit = s * pdf(m) * (1.0 + (m * m - 1.0) * s * s / 24.0);
                let ours = mass_between_shifted(z, s);
                assert!((ours - limit).abs() <= 1e-12 * limit, "z={z} s={s}");
            }
        }
        // Where the series is used with s·|m| near 1 it must agree with the direct form too.
        for (z, s) in [(-2.0, 0.4), (3.0, 0.3), (-30.0, 0.033)] {
            let direct = if z - s > 0.0 {
                sf(z - s) - sf(z)
            } else {
                cdf(z) - cdf(z - s)
            };
            let ours = mass_between_shifted(z, s);
            assert!((ours - direct).abs() <= 1e-12 * direct, "z={z} s={s}");
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
