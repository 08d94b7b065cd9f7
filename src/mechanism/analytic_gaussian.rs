//! Exact accounting for compositions of unsampled Gaussian mechanisms, with no grid at all.
//!
//! The composition of Gaussian mechanisms with `μᵢ = Δᵢ/σᵢ` is exactly a Gaussian mechanism
//! with `μ = √(Σ μᵢ²)` (Dong, Roth & Su, "Gaussian differential privacy", JRSS-B 2022,
//! Cor. 3.3), whose δ(ε) has the closed form of Balle & Wang. This module evaluates that closed
//! form without cancellation and with a rigorous error bound, for every `μ > 0` and every ε.
//!
//! # The evaluation
//! With `m = ε/μ`, `h = μ/2`, `x = m − h = −a`, `y = m + h = −b` and the Mills ratio
//! `R(z) = Φ̄(z)/φ(z) = ∫₀^∞ e^{−zs − s²/2} ds`, the identity `e^ε φ(b) = φ(a)` gives
//! ```text
//! δ(ε) = Φ(a) − e^ε Φ(b)                                   a = μ/2 − ε/μ,  b = a − μ
//!      = φ(x)·(R(x) − R(y))
//!      = φ(x)·D,   D = ∫₀^∞ e^{−ms − s²/2}·2 sinh(hs) ds = 2 Σ_{j≥0} M_{2j+1}(m) h^{2j+1}/(2j+1)!
//!   M_k(m) = ∫₀^∞ s^k e^{−ms − s²/2} ds      (M₀ = R(m), M₁ = 1 − m R(m),
//!                                               M_{k+1} = k M_{k−1} − m M_k)
//! ```
//! The two terms of `Φ(a) − e^ε Φ(b)` agree to about `μ/max(1, x)` relative when μ is small,
//! so the textbook evaluation loses all its digits at `μ ≈ 1e-12`. Three branches avoid that:
//!
//! 1. **`x ≥ 30` (asymptotic).** Expanding `e^{−s²/2}` in `D = ∫ e^{−s²/2}(e^{−xs} − e^{−ys}) ds`
//!    (its partial sums alternate around it, and `e^{−xs} − e^{−ys} ≥ 0`) gives, exactly,
//!    ```text
//!    D = μ/(x y) · [ Σ_{n<N} (−1)ⁿ (2n−1)!! x^{−2n} gₙ  +  θ (2N−1)!! x^{−2N} g_N ],  |θ| ≤ 1,
//!    gₙ = (1 − q^{2n+1})/(1 − q) = Σ_{j≤2n} q^j,  q = x/y ∈ (0, 1)
//!    ```
//!    with every bracket `x^{−p} − y^{−p}` written as a sum of positive terms; evaluated in log
//!    space, `ln δ = −x²/2 − ½ ln 2π + ln μ − ln x − ln y + ln[…]`, N = 10.
//! 2. **No cancellation (direct).** When `B = φ(x) R(y) = e^ε Φ(b)` is at most half of
//!    `A = Φ(−x) = Φ(a)`, `δ = A − B` loses at most one bit.
//! 3. **Cancellation (series).** Otherwise the positive series for `D` above, whose terms
//!    satisfy `T_{j+1}/T_j ≤ h²/(2j+2)` (because `M_k/M_{k−1} ≤ √k` for `m ≥ 0`, from the
//!    log-convexity of moments and the recurrence), so its tail after `T_{J−1}` is at most
//!    `T_{J−1}·q/(1 − q)` with `q = h²/(2J) < 1`. The moments come from the forward recurrence
//!    for `m ≤ 1`, and for `m > 1` from the ratios `r_k = M_k/M_{k−1} = k/(m + r_{k+1})`
//!    run backwards from a depth where `r_{N+1}` is known to lie in
//!    `[2N/(m + √(m² + 4N)), 2(N+1)/(m + √(m² + 4N + 4))]`.
//!
//! Negative ε use `δ(ε) = 1 − e^ε + e^ε δ(−ε)` (the Gaussian pair is symmetric).
//!
//! # Guarantee
//! Every quantity is carried as a ball (value, radius) whose radius bounds the distance to the
//! exact real value: each `+ − × ÷` adds `2⁻⁵²·|result|` (twice the unit roundoff of
//! round-to-nearest) plus the smallest subnormal, each radius computation is itself widened by
//! `1 + 2⁻⁵⁰`, and the inputs' propagated radii use first-order-exact bounds (e.g.
//! `|e^{c'} − e^c| ≤ e^c expm1(r)`, `|erfc(c') − erfc(c)| ≤ r·(2/√π)·e^{−(|c|−r)₊²}`). Series
//! truncation errors are bounded as stated above and added to the radius. The one assumption
//! is that libm's `exp`, `exp_m1`, `ln`, `ln_1p` and `erfc` have relative error at most
//! [`LIBM_RELATIVE_ERROR`] (8 ulps; musl, which the `libm` crate ports, documents at most
//! 1–2 ulps for these), apart from an absolute error of a few subnormal units on underflow.
//!
//! So `delta_for_epsilon(μ, ε)` returns `lower ≤ δ(ε) ≤ upper` for the exact doubles μ, ε.
//! It is also tight: the relative width is of order `2⁻⁵²·(1 + |x|·y + min(y, 30)²)`, the
//! sensitivity of φ(x) and R(y) to the rounding of `ε/μ` (which moves x by about `2⁻⁵³ y`) and
//! of `y²/2`. Against mpmath (`tests/analytic_gaussian_tiny_mu.rs`: `μ ∈ [1e-12, 1e4]`,
//! `ε ∈ [0, 1000]` and 300 random points) it stays below 5e-11 wherever δ ≥ 1e-300, and below
//! 5e-13 on the `ε ≤ 1000` grid.
//! When δ underflows, `upper` is a positive subnormal or the smallest subnormal, never 0, and
//! `lower` may be 0.
//!
//! # References
//! - Balle & Wang, "Improving the Gaussian mechanism for differential privacy: analytical
//!   calibration and optimal denoising", ICML 2018, Thm 8 (the closed form).
//! - Dong, Roth & Su, "Gaussian differential privacy", JRSS-B 2022, Cor. 3.3 (composition).
//! - Abramowitz & Stegun, *Handbook of Mathematical Functions*, 26.2.12 (the asymptotic series
//!   of the Mills ratio) and 26.2.14 (its continued fraction, whose tails are the `r_k`).
//! - Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §2.2 and §3.3 (the
//!   rounding model and running error bounds used for the balls).

use crate::bound::Bracket;

/// Relative error assumed for the libm functions (`exp`, `exp_m1`, `ln`, `ln_1p`, `erfc`) in
/// the normal range: 8 ulps of 1, i.e. `8·2⁻⁵²`. musl documents errors below 1–2 ulps.
pub const LIBM_RELATIVE_ERROR: f64 = 8.0 * f64::EPSILON;

/// Relative rounding error bound of one correctly rounded operation, with a factor 2 to spare.
const U: f64 = f64::EPSILON;
/// Smallest positive subnormal: absolute rounding error floor below the normal range.
const TINY: f64 = 5e-324;
/// Largest ε (nats) the ε(δ) searches try: beyond it an upper end is ∞ and a lower end
/// stops there. Every μ below about 1e150 has ε(δ) ≈ μ²/2 + μ·z well below it (μ = 3.3e6,
/// the sum of 10¹² Gaussian steps at σ 0.3, needs ε ≈ 5.6e12).
const EPSILON_SEARCH_LIMIT: f64 = 1e300;
/// Beyond this x, δ is evaluated in log space from the asymptotic series.
const ASYMPTOTIC_FROM: f64 = 30.0;
/// Number of asymptotic terms (the remainder is below 4e-20 relative at x = 30).
const ASYMPTOTIC_TERMS: usize = 10;

/// Guaranteed bracket on δ(ε) for a Gaussian mechanism with parameter `mu` (= Δ/σ).
///
/// ```text
/// δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)          (dimensionless; ε in nats)
/// ```
/// # Guarantee
/// `lower ≤ δ(ε) ≤ upper` for the exact values of the doubles `mu > 0` and ε (any sign, ±∞
/// allowed), with `upper > 0` whenever δ(ε) > 0; see the module documentation for the proof
/// and the tightness (relative width below about 5e-11 where δ ≥ 1e-300). NaN inputs, or
/// `mu ≤ 0`, give a NaN bracket.
///
/// # References
/// Balle & Wang, ICML 2018, Thm 8.
pub fn delta_for_epsilon(mu: f64, epsilon: f64) -> Bracket {
    delta_with_estimate(mu, epsilon).0
}

/// Best estimate of δ(ε): the centre of the ball that [`delta_for_epsilon`] widens (for
/// δ below the double range, the nearest double, 0). Not a bound on either side.
pub fn delta_estimate(mu: f64, epsilon: f64) -> f64 {
    delta_with_estimate(mu, epsilon).1
}

/// The bracket of [`delta_for_epsilon`] and the estimate of [`delta_estimate`].
fn delta_with_estimate(mu: f64, epsilon: f64) -> (Bracket, f64) {
    let exact = |v: f64| (Bracket { upper: v, lower: v }, v);
    if mu.is_nan() || epsilon.is_nan() || mu < 0.0 {
        return exact(f64::NAN);
    }
    if mu == 0.0 {
        // Identical distributions: δ(ε) = max(0, 1 − e^ε).
        return exact((-epsilon.exp_m1()).max(0.0));
    }
    if epsilon == f64::INFINITY {
        return exact(0.0);
    }
    if epsilon == f64::NEG_INFINITY || mu == f64::INFINITY {
        return exact(1.0);
    }
    if epsilon < 0.0 {
        // δ(ε) = −expm1(ε) + e^ε δ(−ε): a sum of non-negative terms.
        let positive = delta_for_epsilon(mu, -epsilon);
        let v = 0.5 * (positive.upper + positive.lower);
        let d = Ball {
            v,
            r: widen(0.5 * (positive.upper - positive.lower) + U * v),
        };
        let e = Ball::exact(epsilon);
        let total = e.exp_m1().neg().add(e.exp().mul(d));
        return (total.bracket(), total.v.clamp(0.0, 1.0));
    }
    match evaluate(mu, epsilon) {
        Value::Linear(ball) => (ball.bracket(), ball.v.clamp(0.0, 1.0)),
        Value::Log(ball) => (ball.exp_bracket(), ball.v.exp().min(1.0)),
        Value::Bracket(b) => (b, 0.0),
    }
}

/// Guaranteed bracket on ε(δ) for a Gaussian mechanism with parameter `mu`: the ends of
/// [`epsilon_upper_for_delta`] and [`epsilon_lower_for_delta`].
///
/// # Guarantee
/// `lower ≤ ε(δ) ≤ upper`, ε(δ) being the smallest ε ≥ 0 with δ(ε) ≤ δ for the exact doubles
/// `mu` and `delta`; `upper = ∞` only if no ε ≤ 1e300 can be certified.
pub fn epsilon_for_delta(mu: f64, delta: f64) -> Bracket {
    let upper = epsilon_upper_for_delta(mu, delta);
    Bracket {
        upper,
        lower: epsilon_lower_for_delta(mu, delta, upper),
    }
}

/// Upper bound on ε(δ): an ε whose δ bracket ([`delta_for_epsilon`]) lies entirely at or
/// below the target, so the true δ(ε) ≤ δ and the true ε(δ) ≤ it; the smallest such ε up to
/// a few ulps. The search keeps that invariant whether or not the brackets are monotone in
/// ε, so the result is sound.
///
/// # Guarantee
/// Upper bound on ε(δ) for the exact doubles `mu` and `delta`; ∞ only if no ε ≤ 1e300 can
/// be certified (μ above about 1e150).
pub fn epsilon_upper_for_delta(mu: f64, delta: f64) -> f64 {
    // Signed distance of the bracket's upper end from the target, in log space: ≤ 0 exactly
    // when δ is certainly at most the target.
    let upper_gap = |eps: f64| log_ratio(delta_for_epsilon(mu, eps).upper, delta);
    if upper_gap(0.0) <= 0.0 {
        return 0.0;
    }
    // A quick guess from the plain log-space formula (not trusted: at tiny μ it cancels) puts
    // the search next to the answer; only the bracket's signs decide where the ends go.
    if let Some(guess) = plain_epsilon_guess(mu, delta) {
        let (below, above) = (guess * (1.0 - 1e-11), guess * (1.0 + 1e-11) + 1e-300);
        let g_above = upper_gap(above);
        if g_above <= 0.0 {
            let g_below = upper_gap(below);
            if g_below > 0.0 {
                return boundary_from(below, g_below, above, g_above, ULP_TOLERANCE, upper_gap).1;
            }
        }
    }
    // Find an ε whose δ is certainly below the target, then search all of [0, it].
    let mut hi = 1.0_f64;
    while upper_gap(hi) > 0.0 {
        hi *= 2.0;
        if hi > EPSILON_SEARCH_LIMIT {
            return f64::INFINITY;
        }
    }
    boundary(0.0, hi, upper_gap).1
}

/// Lower bound on ε(δ): an ε whose δ bracket lies entirely above the target (so the true
/// ε(δ) is larger), the largest such ε up to a few ulps; 0 if even ε = 0 cannot be shown to
/// exceed it. `hint` is any ε at or above the answer, e.g. [`epsilon_upper_for_delta`] for
/// the same or a larger μ: the search starts just below it (the δ bracket is narrow, so the
/// answer is usually within a hair), else covers all of `[0, hint]`.
///
/// # Guarantee
/// Lower bound on ε(δ) for the exact doubles `mu` and `delta`, whatever `hint` is.
pub fn epsilon_lower_for_delta(mu: f64, delta: f64, hint: f64) -> f64 {
    // > 0 exactly when the bracket's lower end is certainly above the target.
    let lower_gap = |eps: f64| log_ratio(delta_for_epsilon(mu, eps).lower, delta);
    let top = if hint.is_finite() && hint > 0.0 {
        hint
    } else {
        // No usable hint: double until the bracket no longer certifies δ(ε) > δ.
        let mut e = 1.0_f64;
        while lower_gap(e) > 0.0 {
            if e >= EPSILON_SEARCH_LIMIT {
                return e;
            }
            e *= 2.0;
        }
        e
    };
    let g_top = lower_gap(top);
    if g_top > 0.0 {
        // The hint is itself certainly below ε(δ): it is the best lower end at hand.
        return top;
    }
    let near = top * (1.0 - 1e-10);
    let g_near = lower_gap(near);
    if near > 0.0 && g_near > 0.0 {
        return boundary_from(near, g_near, top, g_top, ULP_TOLERANCE, lower_gap).0;
    }
    let g_zero = lower_gap(0.0);
    if g_zero > 0.0 {
        boundary_from(0.0, g_zero, top, g_top, ULP_TOLERANCE, lower_gap).0
    } else {
        0.0
    }
}

/// ε with `δ(ε) = delta` for the plain formula `Φ(a)·(1 − exp(ε + ln Φ(b) − ln Φ(a)))` (by
/// doubling, then regula falsi): a starting point only, it may be off where the formula
/// cancels; `None` if it finds none below [`EPSILON_SEARCH_LIMIT`].
fn plain_epsilon_guess(mu: f64, delta: f64) -> Option<f64> {
    let plain = |eps: f64| {
        let a = mu / 2.0 - eps / mu;
        let b = -mu / 2.0 - eps / mu;
        let log_a = crate::numeric::normal::log_cdf(a);
        let r = eps + crate::numeric::normal::log_cdf(b) - log_a;
        let value = if r >= 0.0 {
            0.0
        } else {
            log_a.exp() * -r.exp_m1()
        };
        log_ratio(value, delta)
    };
    let mut hi = 1.0_f64;
    while plain(hi) > 0.0 {
        hi *= 2.0;
        if hi > EPSILON_SEARCH_LIMIT {
            return None;
        }
    }
    // Far finer than the ±1e-11 window the caller checks around it.
    let (a, b) = boundary_from(0.0, plain(0.0), hi, plain(hi), 1e-13, plain);
    Some(0.5 * (a + b)).filter(|g| g.is_finite() && *g > 0.0)
}

/// `ln(value/target)` (−∞ for a value of 0), the quantity whose sign the bisection follows.
///
/// The sign is exactly that of `value − target` (the rounded logarithms alone can tie or
/// swap for values an ulp apart, which would certify an ε whose δ bound exceeds the target).
fn log_ratio(value: f64, target: f64) -> f64 {
    let gap = value.ln() - target.ln();
    if value > target {
        gap.max(f64::MIN_POSITIVE)
    } else if value < target {
        gap.min(-f64::MIN_POSITIVE)
    } else if value == target {
        0.0
    } else {
        f64::NAN // certifies neither end
    }
}

/// The switch of a sign: given `gap(lo) > 0 ≥ gap(hi)`, returns `(a, b)` with `gap(a) > 0`,
/// `gap(b) ≤ 0` and `b − a` within a few ulps of b (or after 400 steps).
///
/// Regula falsi with the Illinois modification on the values of `gap` (ln δ is nearly linear
/// in ε, so it converges in a handful of steps), with a plain halving every fourth step so
/// that the interval shrinks whatever the values. Only the signs decide which end moves, so
/// the ends keep their meaning even if `gap` is not monotone or not smooth.
fn boundary(lo: f64, hi: f64, gap: impl Fn(f64) -> f64) -> (f64, f64) {
    boundary_from(lo, gap(lo), hi, gap(hi), ULP_TOLERANCE, gap)
}

/// Relative width at which [`boundary`] stops: a few ulps.
const ULP_TOLERANCE: f64 = 4.0 * f64::EPSILON;

/// [`boundary`] with the values of `gap` at the ends already known.
fn boundary_from(
    lo: f64,
    g_lo: f64,
    hi: f64,
    g_hi: f64,
    relative_tolerance: f64,
    gap: impl Fn(f64) -> f64,
) -> (f64, f64) {
    let (mut a, mut b) = (lo, hi);
    let (mut ga, mut gb) = (g_lo, g_hi);
    let mut last_moved = 0i8;
    for step in 0..400 {
        if b - a <= relative_tolerance * b.abs() {
            break;
        }
        let secant = b - gb * (b - a) / (gb - ga);
        let x = if step % 4 == 3 || !(secant > a && secant < b) {
            0.5 * (a + b)
        } else {
            secant
        };
        if x <= a || x >= b {
            break;
        }
        let gx = gap(x);
        if gx <= 0.0 {
            (b, gb) = (x, gx);
            if last_moved == -1 {
                ga *= 0.5;
            }
            last_moved = -1;
        } else {
            (a, ga) = (x, gx);
            if last_moved == 1 {
                gb *= 0.5;
            }
            last_moved = 1;
        }
    }
    (a, b)
}

/// A real number known to lie in `[v − r, v + r]`.
#[derive(Debug, Clone, Copy)]
struct Ball {
    v: f64,
    r: f64,
}

/// Rounds a radius computation up: covers the rounding of the few operations that made it.
fn widen(r: f64) -> f64 {
    r * (1.0 + 4.0 * U) + TINY
}

/// The next double above `x` (x finite, or −∞).
fn next_up(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x == 0.0 {
        return TINY;
    }
    let bits = x.to_bits();
    f64::from_bits(if x > 0.0 { bits + 1 } else { bits - 1 })
}

/// The next double below `x`.
fn next_down(x: f64) -> f64 {
    -next_up(-x)
}

impl Ball {
    fn exact(v: f64) -> Ball {
        Ball { v, r: 0.0 }
    }

    /// A correctly rounded constant or the result of one rounded operation.
    fn rounded(v: f64) -> Ball {
        Ball { v, r: U * v.abs() }
    }

    fn upper(self) -> f64 {
        next_up(self.v + self.r)
    }

    fn lower(self) -> f64 {
        next_down(self.v - self.r)
    }

    fn neg(self) -> Ball {
        Ball {
            v: -self.v,
            r: self.r,
        }
    }

    fn add(self, o: Ball) -> Ball {
        let v = self.v + o.v;
        Ball {
            v,
            r: widen(self.r + o.r + U * v.abs()),
        }
    }

    fn sub(self, o: Ball) -> Ball {
        self.add(o.neg())
    }

    fn mul(self, o: Ball) -> Ball {
        let v = self.v * o.v;
        Ball {
            v,
            r: widen(self.v.abs() * o.r + o.v.abs() * self.r + self.r * o.r + U * v.abs()),
        }
    }

    /// Multiplication by an exact power of two (exact unless it under- or overflows).
    fn scale(self, two_power: f64) -> Ball {
        Ball {
            v: self.v * two_power,
            r: widen(self.r * two_power.abs()),
        }
    }

    /// `|a'/b' − a/b| ≤ (r_a + |a/b| r_b)/(|b| − r_b)`; NaN unless `|b| > r_b`.
    fn div(self, o: Ball) -> Ball {
        let d = o.v.abs() - o.r;
        if d.is_nan() || d <= 0.0 {
            return Ball {
                v: f64::NAN,
                r: f64::INFINITY,
            };
        }
        let v = self.v / o.v;
        Ball {
            v,
            r: widen((self.r + v.abs() * (1.0 + U) * o.r) / (d * (1.0 - 2.0 * U)) + U * v.abs()),
        }
    }

    /// `|e^{c'} − e^c| ≤ e^c·expm1(r)`, plus libm's error.
    fn exp(self) -> Ball {
        let v = self.v.exp();
        if !v.is_finite() {
            return Ball {
                v,
                r: f64::INFINITY,
            };
        }
        // Largest possible exact e^c given the computed v (relative error, or underflow).
        let ec = v / (1.0 - LIBM_RELATIVE_ERROR) + 2.0 * TINY;
        let spread = self.r.exp_m1() * (1.0 + LIBM_RELATIVE_ERROR);
        Ball {
            v,
            r: widen(ec * spread + LIBM_RELATIVE_ERROR * ec + 2.0 * TINY),
        }
    }

    /// expm1, for |c| + r ≤ 1 or any c ≤ 0 (used for ε < 0 only).
    fn exp_m1(self) -> Ball {
        let v = self.v.exp_m1();
        // |expm1(c') − expm1(c)| = e^c |expm1(c' − c)| ≤ e^{c}·expm1(r).
        let ec = self.v.exp() / (1.0 - LIBM_RELATIVE_ERROR) + 2.0 * TINY;
        let spread = self.r.exp_m1() * (1.0 + LIBM_RELATIVE_ERROR);
        Ball {
            v,
            r: widen(ec * spread + LIBM_RELATIVE_ERROR * v.abs() + 2.0 * TINY),
        }
    }

    /// `|ln c' − ln c| ≤ −ln(1 − r/c)`; NaN unless `c > r`.
    fn ln(self) -> Ball {
        if self.v.is_nan() || self.r.is_nan() || self.v <= self.r {
            return Ball {
                v: f64::NAN,
                r: f64::INFINITY,
            };
        }
        let v = self.v.ln();
        let ratio = (self.r / self.v) * (1.0 + 2.0 * U);
        if ratio >= 1.0 {
            return Ball {
                v,
                r: f64::INFINITY,
            };
        }
        let spread = -(-ratio).ln_1p() * (1.0 + LIBM_RELATIVE_ERROR);
        Ball {
            v,
            r: widen(spread + LIBM_RELATIVE_ERROR * v.abs()),
        }
    }

    /// erfc, with `|erfc(c') − erfc(c)| ≤ r·(2/√π)·e^{−t²}`, `t = (|c| − r)₊`.
    fn erfc(self) -> Ball {
        let v = libm::erfc(self.v);
        let t = ((self.v.abs() - self.r) * (1.0 - 4.0 * U)).max(0.0);
        let slope = (-(t * t) * (1.0 - 2.0 * U)).exp() * (1.0 + LIBM_RELATIVE_ERROR) + 2.0 * TINY;
        let two_over_sqrt_pi = std::f64::consts::FRAC_2_SQRT_PI * (1.0 + U);
        Ball {
            v,
            r: widen(self.r * two_over_sqrt_pi * slope + LIBM_RELATIVE_ERROR * v + 4.0 * TINY),
        }
    }

    /// Outward-rounded bracket `[v − r, v + r] ∩ [0, 1]`.
    fn bracket(self) -> Bracket {
        if self.v.is_nan() || self.r.is_nan() {
            return Bracket {
                upper: 1.0,
                lower: 0.0,
            };
        }
        Bracket {
            upper: self.upper().clamp(TINY, 1.0),
            lower: self.lower().clamp(0.0, 1.0),
        }
    }

    /// Outward-rounded bracket on `e^ball`, intersected with `[0, 1]` (upper never 0).
    fn exp_bracket(self) -> Bracket {
        if self.v.is_nan() || self.r.is_nan() {
            return Bracket {
                upper: 1.0,
                lower: 0.0,
            };
        }
        let hi = (self.v + self.r) * (1.0 + U) + TINY;
        let lo = (self.v - self.r) * (1.0 + U) - TINY;
        let upper = next_up(hi.exp() / (1.0 - LIBM_RELATIVE_ERROR) + 2.0 * TINY);
        let lower = next_down(lo.exp() * (1.0 - LIBM_RELATIVE_ERROR) - 2.0 * TINY);
        Bracket {
            upper: upper.clamp(TINY, 1.0),
            lower: lower.clamp(0.0, 1.0),
        }
    }
}

/// √(2π) and ½ ln(2π), correctly rounded.
const SQRT_2PI: f64 = 2.506_628_274_631_000_7;
const HALF_LN_2PI: f64 = 0.918_938_533_204_672_8;

/// Φ̄(z) = ½ erfc(z/√2).
fn normal_sf(z: Ball) -> Ball {
    z.mul(Ball::rounded(std::f64::consts::FRAC_1_SQRT_2))
        .erfc()
        .scale(0.5)
}

/// φ(z) = e^{−z²/2}/√(2π).
fn normal_pdf(z: Ball) -> Ball {
    z.mul(z).scale(-0.5).exp().div(Ball::rounded(SQRT_2PI))
}

/// Mills ratio R(z) = Φ̄(z)/φ(z) for z ≥ 0: directly for z ≤ 30, else from the asymptotic
/// series `Σ_{n<N} (−1)ⁿ (2n−1)!!/z^{2n+1}`, whose error is at most the first omitted term.
fn mills(z: Ball) -> Ball {
    if z.v <= ASYMPTOTIC_FROM {
        return Ball::rounded(SQRT_2PI)
            .mul(z.mul(z).scale(0.5).exp())
            .mul(normal_sf(z));
    }
    let inv = Ball::exact(1.0).div(z);
    let w = inv.mul(inv);
    let mut term = inv;
    let mut sum = inv;
    for n in 1..ASYMPTOTIC_TERMS {
        term = term.mul(w).mul(Ball::exact(-((2 * n - 1) as f64)));
        sum = sum.add(term);
    }
    let omitted = term
        .mul(w)
        .mul(Ball::exact((2 * ASYMPTOTIC_TERMS - 1) as f64));
    Ball {
        v: sum.v,
        r: widen(sum.r + omitted.v.abs() + omitted.r),
    }
}

/// The result of the core evaluation.
enum Value {
    /// δ itself.
    Linear(Ball),
    /// ln δ.
    Log(Ball),
    /// A bracket found directly.
    Bracket(Bracket),
}

/// δ(ε) for finite `mu > 0`, finite `epsilon ≥ 0`.
fn evaluate(mu: f64, epsilon: f64) -> Value {
    let m = Ball::rounded(epsilon / mu);
    if !m.v.is_finite() {
        // ε/μ overflows: x > 1e300, so δ < Φ(−x) underflows.
        return Value::Bracket(Bracket {
            upper: TINY,
            lower: 0.0,
        });
    }
    // h = μ/2 is exact unless μ is subnormal; the radius covers that case.
    let h = Ball::rounded(0.5 * mu);
    let x = m.sub(h);
    let y = m.add(h);
    if x.v - x.r >= ASYMPTOTIC_FROM {
        if x.v > 1e150 {
            // δ < Φ(−x) < e^{−x²/2} underflows by far.
            return Value::Bracket(Bracket {
                upper: TINY,
                lower: 0.0,
            });
        }
        return Value::Log(asymptotic_log_delta(mu, x, y));
    }
    let a_term = normal_sf(x); // Φ(a) = Φ̄(x)
    let b_term = normal_pdf(x).mul(mills(y)); // e^ε Φ(b) = φ(x) R(y)
    let half_mu = 0.5 * mu;
    if b_term.v <= 0.5 * a_term.v || half_mu > 4.0 {
        return Value::Linear(a_term.sub(b_term));
    }
    Value::Linear(normal_pdf(x).mul(sinh_series(m, half_mu)))
}

/// ln δ for x ≥ 30 from the asymptotic series of `D = R(x) − R(y)` (module docs, branch 1).
fn asymptotic_log_delta(mu: f64, x: Ball, y: Ball) -> Ball {
    let q = x.div(y);
    let inv_x2 = Ball::exact(1.0).div(x.mul(x));
    // gₙ = Σ_{j ≤ 2n} q^j, built incrementally.
    let mut q_power = Ball::exact(1.0);
    let mut g = Ball::exact(1.0);
    let mut coefficient = Ball::exact(1.0); // (−1)ⁿ (2n−1)!! x^{−2n}
    let mut sum = Ball::exact(1.0);
    let mut omitted = Ball::exact(0.0);
    for n in 1..=ASYMPTOTIC_TERMS {
        for _ in 0..2 {
            q_power = q_power.mul(q);
            g = g.add(q_power);
        }
        coefficient = coefficient
            .mul(inv_x2)
            .mul(Ball::exact(-((2 * n - 1) as f64)));
        let term = coefficient.mul(g);
        if n < ASYMPTOTIC_TERMS {
            sum = sum.add(term);
        } else {
            omitted = term;
        }
    }
    let bracket = Ball {
        v: sum.v,
        r: widen(sum.r + omitted.v.abs() + omitted.r),
    };
    x.mul(x)
        .scale(-0.5)
        .sub(Ball::rounded(HALF_LN_2PI))
        .add(Ball::exact(mu).ln())
        .sub(x.ln())
        .sub(y.ln())
        .add(bracket.ln())
}

/// `D = 2 Σ_j M_{2j+1}(m) h^{2j+1}/(2j+1)!` with its truncation bound (module docs, branch 3).
fn sinh_series(m: Ball, h: f64) -> Ball {
    // Smallest J with (h²/2)^J/J! ≤ 1e-22 (so the tail is far below T₀) and h²/(2J) ≤ ½.
    let h2 = h * h;
    let mut terms = 1usize;
    let mut bound = 1.0_f64;
    loop {
        bound *= 0.5 * h2 / terms as f64;
        if bound <= 1e-22 && h2 <= terms as f64 {
            break;
        }
        terms += 1;
    }
    let max_order = 2 * terms - 1;
    let moments = moments(m, max_order);
    let hb = Ball::rounded(h);
    let hb2 = hb.mul(hb);
    // T_j = 2 M_{2j+1} h^{2j+1}/(2j+1)!; the factor h^{2j+1}/(2j+1)! is kept in `factor`.
    let mut factor = hb;
    let mut sum = Ball::exact(0.0);
    let mut last = Ball::exact(0.0);
    for j in 0..terms {
        if j > 0 {
            let k = 2 * j + 1;
            factor = factor.mul(hb2).div(Ball::exact((k * (k - 1)) as f64));
        }
        last = moments[2 * j + 1].mul(factor).scale(2.0);
        sum = sum.add(last);
    }
    // Tail Σ_{j ≥ J} T_j ≤ T_{J−1}·q/(1 − q), q = h²/(2J) ≤ ½.
    let q = (h2 * (1.0 + 4.0 * U)) / (2.0 * terms as f64);
    let tail = (last.v.abs() + last.r) * q / (1.0 - q) * (1.0 + 8.0 * U);
    Ball {
        v: sum.v + 0.5 * tail,
        r: widen(sum.r + 0.5 * tail + U * sum.v.abs()),
    }
}

/// Balls around `M_0(m) … M_K(m)`, `M_k(m) = ∫₀^∞ s^k e^{−ms − s²/2} ds`, `m ≥ 0`.
fn moments(m: Ball, max_order: usize) -> Vec<Ball> {
    let m0 = mills(m);
    let mut out = Vec::with_capacity(max_order + 1);
    out.push(m0);
    if m.v <= 1.0 {
        // Forward recurrence: stable enough for m ≤ 1 (the balls track its error growth).
        out.push(Ball::exact(1.0).sub(m.mul(m0)));
        for k in 1..max_order {
            let next = Ball::exact(k as f64).mul(out[k - 1]).sub(m.mul(out[k]));
            out.push(next);
        }
        return out;
    }
    // Ratios r_k = M_k/M_{k−1} = k/(m + r_{k+1}), backwards from a depth where the start
    // interval has contracted far below one ulp: the factor per level is about √k/(m + √k).
    let mv = m.v;
    let depth_root = (max_order as f64).sqrt() + 25.0 / mv;
    let depth = ((depth_root * depth_root).ceil() as usize + max_order).min(200_000);
    let start_lo = {
        let n = depth as f64;
        2.0 * n / (mv + (mv * mv + 4.0 * n).sqrt())
    };
    let start_hi = {
        let n = depth as f64 + 1.0;
        2.0 * n / (mv + (mv * mv + 4.0 * n).sqrt())
    };
    // Slack covers the rounding of the two ends and m's own radius (|dr/dm| < 1).
    let mut r = Ball {
        v: 0.5 * (start_lo + start_hi),
        r: 0.5 * (start_hi - start_lo) + 1e-10 * start_hi + m.r,
    };
    let mut ratios = vec![Ball::exact(0.0); max_order + 1];
    for k in (1..=depth).rev() {
        r = Ball::exact(k as f64).div(m.add(r));
        if k <= max_order {
            ratios[k] = r;
        }
    }
    for k in 1..=max_order {
        let next = out[k - 1].mul(ratios[k]);
        out.push(next);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_up_and_down_step_one_ulp() {
        assert_eq!(next_up(1.0), 1.0 + f64::EPSILON);
        assert_eq!(next_down(1.0), 1.0 - f64::EPSILON / 2.0);
        assert_eq!(next_up(0.0), TINY);
        assert_eq!(next_down(0.0), -TINY);
        assert_eq!(next_up(-TINY), -0.0);
    }

    #[test]
    fn constants_are_correctly_rounded() {
        // The doubles nearest √(2π) and ½ ln(2π), from mpmath 1.4.1 at mp.dps = 50:
        // float(sqrt(2*pi)).hex() and float(log(2*pi)/2).hex().
        assert_eq!(SQRT_2PI.to_bits(), 0x4004_0d93_1ff6_2706);
        assert_eq!(HALF_LN_2PI.to_bits(), 0x3fed_67f1_c864_beb5);
    }

    /// The lower end is certified by the δ bracket itself (δ(lower) certainly above the
    /// target, so ε(δ) > lower) whatever hint the caller passes, and stays within a hair of
    /// the upper end when the hint is the upper end.
    #[test]
    fn lower_search_is_sound_for_any_hint() {
        for &mu in &[1e-9, 0.01, 0.5, 1.0, 5.0, 40.0] {
            for &delta in &[1e-300, 1e-12, 1e-5, 0.3] {
                let upper = epsilon_upper_for_delta(mu, delta);
                assert!(
                    delta_for_epsilon(mu, upper).upper <= delta,
                    "mu {mu} delta {delta}"
                );
                for hint in [
                    f64::NAN,
                    f64::INFINITY,
                    -1.0,
                    0.0,
                    upper * 0.5,
                    upper,
                    upper * 3.0,
                ] {
                    let lower = epsilon_lower_for_delta(mu, delta, hint);
                    assert!(
                        lower <= upper,
                        "mu {mu} delta {delta} hint {hint}: {lower} > {upper}"
                    );
                    assert!(
                        lower == 0.0 || delta_for_epsilon(mu, lower).lower > delta,
                        "mu {mu} delta {delta} hint {hint}: lower {lower} not certified"
                    );
                }
                let tight = epsilon_lower_for_delta(mu, delta, upper);
                if upper > 0.0 {
                    assert!(
                        upper - tight <= 1e-9 * upper + 1e-300,
                        "mu {mu:e} delta {delta:e}: {tight:e} {upper:e}"
                    );
                }
            }
        }
    }

    /// Huge μ (10¹² unamplified steps at σ 0.3 compose to μ ≈ 3.3e6): ε(δ) is finite and
    /// tight up to μ of about 1e150, where μ²/2 nears the largest double. Independent check:
    /// with `a = μ/2 − ε/μ` and `y = ε/μ + μ/2`, `δ = Φ(a) − e^ε Φ(−y) = Φ(a) − φ(a)·R(y)`
    /// (R the Mills ratio, `R(y) = 1/y − O(y⁻³)`), so `Φ(a) = δ + φ(a)/y` and, with
    /// `z = Φ⁻¹(δ)` (mpmath 1.4.1, 50 digits: `float(-sqrt(2)*erfinv(1-2*mpf('1e-5')))`),
    /// `a = z + 1/y + O(μ⁻²)`, i.e. `ε = μ·(μ/2 − z) − μ/(μ − z)` up to O(1/μ) nats.
    #[test]
    fn huge_mu_keeps_a_finite_tight_epsilon() {
        let z: f64 = -4.264_890_793_922_825;
        for mu in [1e6, 3.333e6, 1e9, 1e12] {
            let b = epsilon_for_delta(mu, 1e-5);
            let expected = mu * (0.5 * mu - z) - mu / (mu - z);
            assert!(
                (b.upper - expected).abs() <= 1e-14 * expected,
                "mu {mu:e}: upper {:e} vs {expected:e}",
                b.upper
            );
            assert!(b.lower <= b.upper && b.upper - b.lower <= 1e-12 * b.upper);
        }
        // Past 1e150 the answer leaves the double range: ∞, never NaN.
        let upper = epsilon_upper_for_delta(1e140, 1e-5);
        assert!(upper.is_finite() && upper >= 0.5e280, "{upper:e}");
        assert_eq!(epsilon_upper_for_delta(1e200, 1e-5), f64::INFINITY);
        assert_eq!(epsilon_upper_for_delta(f64::MAX, 1e-5), f64::INFINITY);
    }
}
