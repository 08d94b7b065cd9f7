//! Exact optimal composition of k copies of an (ε₀, δ₀)-DP mechanism (Kairouz–Oh–Viswanath).
//!
//! Every (ε₀, δ₀)-DP pair of distributions is a post-processing of the "leaky randomized
//! response" pair (Kairouz, Oh & Viswanath, ICML 2015, Lemma 3.1), whose privacy loss is
//! `{+∞: δ₀, +ε₀: (1−δ₀)p, −ε₀: (1−δ₀)(1−p)}` with `p = e^{ε₀}/(1 + e^{ε₀})`. Its k-fold
//! composition therefore gives the exact optimal composition theorem. With
//! `X ~ Binomial(k, q)`, `q = 1 − p = 1/(1 + e^{ε₀})` (the number of `−ε₀` outcomes) and the
//! loss `L_j = (k − 2j)ε₀`:
//! ```text
//! δ(ε) = 1 − (1−δ₀)^k + (1−δ₀)^k Σ_{j: L_j > ε} C(k,j) p^{k−j} q^j (1 − e^{ε − L_j})
//! ```
//!
//! # Numerics
//! - Everything is in log space or scaled by the largest binomial term: no overflow at
//!   k = 10⁵, ε₀ = 1 or anywhere else (`1 − (1−δ₀)^k = −expm1(k ln1p(−δ₀))`,
//!   `1 − e^{ε−L_j} = −expm1(ε − L_j)` with `L_j − ε` from one fused multiply-add).
//! - Binomial log-probabilities use Loader's saddle-point form (`stirlerr`, `bd0`), accurate
//!   to a few ulps per nat even at k = 10¹², where `lgamma` differences would lose ~6 digits.
//!   Between such anchors (every 64 terms) the terms come from the ratio recurrence.
//! - Only a window of j around the relevant mass is summed: the sweep stops once a rigorous
//!   geometric bound on the omitted terms (`Σ_{i<j} P(X=i) ≤ P(X=j)·r/(1−r)`, with
//!   `r = P(X=j−1)/P(X=j) < 1` decreasing further out; likewise above) is below 2⁻⁶⁴ of what was
//!   summed. The omitted mass is *added* to upper bounds (each term is at most its binomial
//!   probability). The window is O(√(k p q)) terms (≈ 20σ), or less in the tails.
//! - Floating-point error: relative ≲ 8u·(256 + max|j − kq| + |ln P(X=j)|) over the window
//!   (u = 2⁻⁵³), i.e. ≲ 2e-12 for k ≤ 10⁵ and ≲ 3e-10 for k = 10⁹ in the bulk. Upper bounds are
//!   inflated by this amount, lower bounds deflated. (An error budget from the analysis of the
//!   steps, not a machine-checked proof; measured against mpmath: ≤ 1.4e-12 for k ≤ 10⁵.)
//! - Windows longer than 10⁸ terms (k·p·q ≳ 10¹³) or k > 2⁵³ fall back to a Chernoff bound
//!   on the binomial tail: still an upper bound, no longer exact.
//!
//! # References
//! - Kairouz, Oh & Viswanath, "The composition theorem for differential privacy", ICML 2015
//!   (arXiv:1311.0776), Thm 3.3.
//! - Murtagh & Vadhan, "The complexity of computing the optimal composition of differential
//!   privacy", TCC 2016.
//! - Loader, "Fast and accurate computation of binomial probabilities", 2000 (the `dbinom`
//!   algorithm of R).

use crate::bound::Bracket;
use crate::numeric::binomial::{bd0, stirlerr};
use crate::numeric::summation::NeumaierSum;

/// Unit round-off of f64.
const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// Omitted mass is below this fraction of what was summed (2⁻⁶⁴).
const TRUNCATION: f64 = 5.421_010_862_427_522e-20;

/// A recurrence run is re-anchored to an exact log-probability every this many terms.
const ANCHOR_EVERY: u64 = 64;

/// Above this many terms, a window is abandoned for the Chernoff fallback.
const MAX_WINDOW: u64 = 100_000_000;

/// Above this ε₀ the ratio `e^{ε₀}` of the recurrence could overflow: anchor every term.
const RECURRENCE_MAX_EPSILON0: f64 = 600.0;

/// Largest k whose integers are exact in f64.
const MAX_EXACT_K: u64 = 1 << 53;

/// δ(ε) of k-fold composition of the worst (ε₀, δ₀) pair, as a guaranteed upper bound.
///
/// See the module documentation for the formula and the numerics. Invalid inputs (NaN,
/// ε₀ < 0, δ₀ outside [0, 1], NaN ε) give the trivial bound 1. Never NaN; in [0, 1].
///
/// # Guarantee
/// Upper bound on the exact optimal δ(ε) (truncated mass added, rounding covered). Relative
/// excess ≲ 2e-12 for k ≤ 10⁵ (see module docs).
///
/// # References
/// Kairouz, Oh & Viswanath 2015, Thm 3.3.
pub fn delta_for_epsilon(epsilon0: f64, delta0: f64, k: u64, epsilon: f64) -> f64 {
    delta_for_epsilon_bracket(epsilon0, delta0, k, epsilon).upper
}

/// δ(ε) of k-fold composition of the worst (ε₀, δ₀) pair: a guaranteed lower bound.
///
/// The windowed sum without the omitted tails, deflated by the rounding allowance.
///
/// # Guarantee
/// Lower bound on the exact optimal δ(ε) (0 in the Chernoff-fallback regime).
pub fn delta_for_epsilon_lower(epsilon0: f64, delta0: f64, k: u64, epsilon: f64) -> f64 {
    delta_for_epsilon_bracket(epsilon0, delta0, k, epsilon).lower
}

/// Both bounds on δ(ε): `lower ≤ δ_exact ≤ upper`.
///
/// # Guarantee
/// `upper` is an upper bound and `lower` a lower bound on the exact optimal δ(ε).
pub fn delta_for_epsilon_bracket(epsilon0: f64, delta0: f64, k: u64, epsilon: f64) -> Bracket {
    let trivial = Bracket {
        upper: 1.0,
        lower: 0.0,
    };
    if epsilon0.is_nan() || delta0.is_nan() || epsilon.is_nan() {
        return trivial;
    }
    if epsilon0 < 0.0 || !(0.0..=1.0).contains(&delta0) {
        return trivial;
    }
    if k == 0 {
        // Identical distributions: δ(ε) = max(0, 1 − e^ε).
        let d = (-epsilon.min(0.0).exp_m1()).max(0.0);
        return Bracket {
            upper: (d * (1.0 + 4.0 * UNIT_ROUNDOFF)).min(1.0),
            lower: d * (1.0 - 4.0 * UNIT_ROUNDOFF),
        };
    }
    if delta0 == 1.0 {
        return Bracket {
            upper: 1.0,
            lower: 1.0,
        };
    }
    let leak = Leak::new(delta0, k);
    if epsilon0 == f64::INFINITY {
        // The loss is +∞ with probability 1 − (1−δ₀)^k (1 − p)^k = 1 (p = 1).
        return Bracket {
            upper: 1.0,
            lower: leak.c0_lower,
        };
    }
    if epsilon0 == 0.0 {
        // Every finite loss is 0.
        let d = if epsilon < 0.0 {
            -epsilon.exp_m1()
        } else {
            0.0
        };
        return leak.combine(
            d * (1.0 + 4.0 * UNIT_ROUNDOFF),
            d * (1.0 - 4.0 * UNIT_ROUNDOFF),
        );
    }
    let b = Binomial::new(epsilon0, k);
    if b.too_wide() {
        return leak.combine(chernoff_sum(&b, epsilon), 0.0);
    }
    let (upper, lower) = b.hockey_stick(epsilon);
    leak.combine(upper, lower)
}

/// Smallest ε ≥ 0 with δ(ε) ≤ `delta`, rounded up: a guaranteed upper bound on the optimal ε.
///
/// `δ(ε)` is continuous, convex and decreasing between the breakpoints `L_j = (k − 2j)ε₀`.
/// One upward pass over the window locates the segment `(L_{j+1}, L_j]` that contains the
/// answer (breakpoint values by the positive recurrence
/// `B(j+1) = e^{−2ε₀} B(j) + (1 − e^{−2ε₀}) P(X ≤ j)`); inside it
/// `δ(ε) = c₀ + c₁ (P − e^{ε−L_j} E)` with `P = Σ_{i≤j} P(X=i)`,
/// `E = Σ_{i≤j} P(X=i) e^{−2(j−i)ε₀}`, solved in closed form with P rounded up and E down.
/// The result is then checked with [`delta_for_epsilon`] and nudged up until the check passes.
///
/// Special cases: δ ≥ 1 or k = 0 → 0; δ < 1 − (1−δ₀)^k → +∞ (δ = 1 − (1−δ₀)^k gives kε₀);
/// invalid inputs → +∞. Never NaN.
///
/// # Guarantee
/// Upper bound: the k-fold composition is (ε, δ)-DP with the returned ε, and δ(ε) ≤ δ holds for
/// the rigorous upper bound [`delta_for_epsilon`]. The excess over the exact ε is ≲ 1e-10
/// relative for moderate k.
///
/// # References
/// Kairouz, Oh & Viswanath 2015, Thm 3.3.
pub fn epsilon_for_delta(epsilon0: f64, delta0: f64, k: u64, delta: f64) -> f64 {
    if epsilon0.is_nan() || delta0.is_nan() || delta.is_nan() {
        return f64::INFINITY;
    }
    if epsilon0 < 0.0 || !(0.0..=1.0).contains(&delta0) {
        return f64::INFINITY;
    }
    if delta >= 1.0 || k == 0 {
        return 0.0;
    }
    if epsilon0 == f64::INFINITY || delta0 == 1.0 {
        return f64::INFINITY;
    }
    let leak = Leak::new(delta0, k);
    if delta < leak.c0_upper {
        return f64::INFINITY;
    }
    let check = |eps: f64| delta_for_epsilon(epsilon0, delta0, k, eps) <= delta;
    if check(0.0) {
        return 0.0;
    }
    // δ(kε₀) = 1 − (1−δ₀)^k ≤ δ: kε₀ is always valid from here on.
    let top = k as f64 * epsilon0 * (1.0 + 2.0 * UNIT_ROUNDOFF);
    let b = Binomial::new(epsilon0, k);
    // Target for the normalised sum S(ε) = (δ(ε) − c₀)/c₁, rounded down.
    let target = (delta - leak.c0_upper) / leak.c1_upper * (1.0 - 4.0 * UNIT_ROUNDOFF);
    let candidate = if b.too_wide() || target <= 0.0 {
        None
    } else {
        b.solve(target)
    };
    let mut eps = match candidate {
        Some(e) if e.is_finite() => e.clamp(0.0, top),
        _ => return bisect_epsilon(0.0, top, check),
    };
    // Nudge up until the rigorous δ passes.
    let mut step = 1e-14 * eps.abs().max(1e-300);
    for _ in 0..64 {
        if eps >= top {
            return top;
        }
        if check(eps) {
            return eps;
        }
        eps += step;
        step *= 4.0;
    }
    top
}

/// ε(δ) of k-fold composition of the worst (ε₀, δ₀) pair: a guaranteed lower bound.
///
/// An ε at which the rigorous lower bound [`delta_for_epsilon_lower`] still exceeds δ, found
/// below the upper bound [`epsilon_for_delta`] by steps of 1e-10 of it, growing fourfold
/// (the upper bound is within ~1e-10 of the exact ε, so the first or second step usually
/// passes): then δ_exact(ε) > δ, and the exact ε(δ) is above it. 0 when none passes within
/// 40 steps (the Chernoff-fallback regime, where the lower bound on δ is 0) or δ ≥ 1.
///
/// # Guarantee
/// Lower bound on the exact optimal ε(δ) (never above [`epsilon_for_delta`]).
pub fn epsilon_for_delta_lower(epsilon0: f64, delta0: f64, k: u64, delta: f64) -> f64 {
    let upper = epsilon_for_delta(epsilon0, delta0, k, delta);
    if !upper.is_finite() || upper <= 0.0 {
        // (∞: the infinity mass alone exceeds δ, rounded up; not claimed from below.)
        return 0.0;
    }
    let mut step = 1e-10 * upper;
    let mut epsilon = upper - step;
    for _ in 0..40 {
        if epsilon <= 0.0 {
            return 0.0;
        }
        if delta_for_epsilon_lower(epsilon0, delta0, k, epsilon) > delta {
            return epsilon;
        }
        step *= 4.0;
        epsilon = upper - step;
    }
    0.0
}

/// Bisection for the smallest ε in [lo, hi] passing `check` (which passes at `hi`).
fn bisect_epsilon(mut lo: f64, mut hi: f64, check: impl Fn(f64) -> bool) -> f64 {
    if check(lo) {
        return lo;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if check(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// The infinity mass `c₀ = 1 − (1−δ₀)^k` and the weight `c₁ = (1−δ₀)^k` of the finite part,
/// each as an interval.
#[derive(Debug, Clone, Copy)]
struct Leak {
    c0_upper: f64,
    c0_lower: f64,
    c1_upper: f64,
    c1_lower: f64,
}

impl Leak {
    fn new(delta0: f64, k: u64) -> Leak {
        let x = k as f64 * (-delta0).ln_1p(); // ≤ 0, relative error ≤ 2u
        let slack = 4.0 * UNIT_ROUNDOFF * x.abs();
        let c0 = -x.exp_m1();
        let c1 = x.exp();
        Leak {
            c0_upper: (c0 * (1.0 + 4.0 * UNIT_ROUNDOFF + slack)).min(1.0),
            c0_lower: c0 * (1.0 - 4.0 * UNIT_ROUNDOFF - slack),
            c1_upper: (c1 * (1.0 + 4.0 * UNIT_ROUNDOFF + slack)).min(1.0),
            c1_lower: c1 * (1.0 - 4.0 * UNIT_ROUNDOFF - slack),
        }
    }

    /// δ = c₀ + c₁ S for bounds on the normalised sum S.
    fn combine(&self, s_upper: f64, s_lower: f64) -> Bracket {
        // Two roundings (product, sum) when S > 0; none when S = 0.
        let up = 1.0 + 4.0 * UNIT_ROUNDOFF;
        let upper = if s_upper > 0.0 {
            (self.c0_upper + self.c1_upper * s_upper) * up
        } else {
            self.c0_upper
        };
        let lower = if s_lower > 0.0 {
            (self.c0_lower + self.c1_lower * s_lower) / up
        } else {
            self.c0_lower
        };
        Bracket {
            upper: upper.clamp(0.0, 1.0),
            lower: lower.clamp(0.0, 1.0),
        }
    }
}

/// X ~ Binomial(k, q), q = 1/(1 + e^{ε₀}): the number of `−ε₀` outcomes in k leaky-RR draws.
#[derive(Debug, Clone, Copy)]
struct Binomial {
    k: u64,
    kf: f64,
    epsilon0: f64,
    ln_p: f64,
    ln_q: f64,
    mean: f64,
    ln_mean: f64,
    mean_p: f64,
    ln_mean_p: f64,
    /// The mode (argmax of the pmf).
    mode: u64,
    /// Smallest j ≥ mode whose upper-tail bound is below TRUNCATION × P(X = mode).
    high: u64,
    /// e^{ε₀} and e^{−ε₀}, if the recurrence is used.
    exp_eps0: f64,
    exp_neg_eps0: f64,
    recurrence: bool,
}

impl Binomial {
    fn new(epsilon0: f64, k: u64) -> Binomial {
        let ln_p = -(-epsilon0).exp().ln_1p();
        let ln_q = -epsilon0 + ln_p;
        let kf = k as f64;
        // q = ½(1 − tanh(ε₀/2)) has no cancellation for small ε₀.
        let q = if epsilon0 < 1.0 {
            0.5 * (1.0 - (0.5 * epsilon0).tanh())
        } else {
            ln_q.exp()
        };
        let p = if epsilon0 < 1.0 {
            0.5 * (1.0 + (0.5 * epsilon0).tanh())
        } else {
            ln_p.exp()
        };
        let mut b = Binomial {
            k,
            kf,
            epsilon0,
            ln_p,
            ln_q,
            mean: kf * q,
            ln_mean: kf.ln() + ln_q,
            mean_p: kf * p,
            ln_mean_p: kf.ln() + ln_p,
            mode: 0,
            high: 0,
            exp_eps0: epsilon0.exp(),
            exp_neg_eps0: (-epsilon0).exp(),
            recurrence: epsilon0 < RECURRENCE_MAX_EPSILON0,
        };
        let mut mode = (((kf + 1.0) * q).floor() as u64).min(k);
        while mode < k && b.ln_ratio_up(mode) >= 0.0 {
            mode += 1;
        }
        while mode > 0 && b.ln_ratio_down(mode) > 0.0 {
            mode -= 1;
        }
        b.mode = mode;
        // Upper window edge by bisection: the tail bound decreases in j above the mode.
        let threshold = b.ln_pmf(mode) + TRUNCATION.ln();
        let (mut lo, mut hi) = (mode, k);
        if b.ln_upper_tail(lo) <= threshold {
            hi = lo;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if b.ln_upper_tail(mid) <= threshold {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        b.high = hi;
        b
    }

    /// Whether the window is too long to sum (then the Chernoff fallback is used).
    fn too_wide(&self) -> bool {
        self.k > MAX_EXACT_K || self.high.saturating_sub(self.lowest_relevant()) > MAX_WINDOW
    }

    /// A rough lower window edge (20 standard deviations below the mean), for sizing only.
    fn lowest_relevant(&self) -> u64 {
        let sd = (self.mean * (1.0 - self.mean / self.kf)).max(0.0).sqrt();
        (self.mean - 20.0 * sd - 64.0).max(0.0) as u64
    }

    /// ln P(X = j), Loader's saddle-point form.
    fn ln_pmf(&self, j: u64) -> f64 {
        if j == 0 {
            return self.kf * self.ln_p;
        }
        if j == self.k {
            return self.kf * self.ln_q;
        }
        let x = j as f64;
        let y = (self.k - j) as f64;
        let lc = stirlerr(self.k)
            - stirlerr(j)
            - stirlerr(self.k - j)
            - bd0(x, self.mean, self.ln_mean)
            - bd0(y, self.mean_p, self.ln_mean_p);
        let lf = (2.0 * std::f64::consts::PI).ln() + x.ln() + (-x / self.kf).ln_1p();
        lc - 0.5 * lf
    }

    /// ln[P(X = j−1)/P(X = j)] = ln(j/(k−j+1)) + ε₀, for j ≥ 1.
    fn ln_ratio_down(&self, j: u64) -> f64 {
        (j as f64 / (self.k - j + 1) as f64).ln() + self.epsilon0
    }

    /// ln[P(X = j+1)/P(X = j)] = ln((k−j)/(j+1)) − ε₀, for j < k.
    fn ln_ratio_up(&self, j: u64) -> f64 {
        ((self.k - j) as f64 / (j + 1) as f64).ln() - self.epsilon0
    }

    /// ln of a bound on P(X < j): `P(X=j) r/(1−r)` with `r` the down-ratio at j (+∞ if r ≥ 1).
    fn ln_lower_tail(&self, j: u64) -> f64 {
        if j == 0 {
            return f64::NEG_INFINITY;
        }
        let lr = self.ln_ratio_down(j);
        if lr >= 0.0 {
            return f64::INFINITY;
        }
        (self.ln_pmf(j) + lr - (-lr.exp_m1()).ln()) + 1e-12
    }

    /// ln of a bound on P(X > j): `P(X=j) r/(1−r)` with `r` the up-ratio at j (+∞ if r ≥ 1).
    fn ln_upper_tail(&self, j: u64) -> f64 {
        if j >= self.k {
            return f64::NEG_INFINITY;
        }
        let lr = self.ln_ratio_up(j);
        if lr >= 0.0 {
            return f64::INFINITY;
        }
        (self.ln_pmf(j) + lr - (-lr.exp_m1()).ln()) + 1e-12
    }

    /// `L_j − ε = (k − 2j)ε₀ − ε`, correctly rounded (one fused multiply-add).
    fn gap(&self, j: u64, epsilon: f64) -> f64 {
        let m = self.k as i128 - 2 * j as i128;
        (m as f64).mul_add(self.epsilon0, -epsilon)
    }

    /// Largest j with L_j > ε, if any.
    fn last_above(&self, epsilon: f64) -> Option<u64> {
        let x = 0.5 * (self.kf - epsilon / self.epsilon0);
        let mut j = if x.is_nan() || x <= 0.0 {
            0
        } else if x >= self.kf {
            self.k
        } else {
            x.floor() as u64
        };
        while j < self.k && self.gap(j + 1, epsilon) > 0.0 {
            j += 1;
        }
        loop {
            if self.gap(j, epsilon) > 0.0 {
                return Some(j);
            }
            if j == 0 {
                return None;
            }
            j -= 1;
        }
    }

    /// Relative rounding allowance for sums over j in [low, high] scaled by e^{ln_scale}.
    fn allowance(&self, low: u64, high: u64, ln_scale: f64) -> f64 {
        let dev = (low as f64 - self.mean)
            .abs()
            .max((high as f64 - self.mean).abs());
        8.0 * UNIT_ROUNDOFF * (256.0 + dev + ln_scale.abs())
    }

    /// Bounds (upper, lower) on the normalised sum `S(ε) = Σ_{L_j > ε} P(X=j)(1 − e^{ε−L_j})`.
    fn hockey_stick(&self, epsilon: f64) -> (f64, f64) {
        let Some(last) = self.last_above(epsilon) else {
            return (0.0, 0.0);
        };
        let top = last.min(self.high);
        let ln_scale = self.ln_pmf(top.min(self.mode));
        let mut sweep = Sweep::start_down(self, top, ln_scale);
        let mut sum = NeumaierSum::default();
        let mut terms = 0_u64;
        let tail_scaled = loop {
            let j = sweep.j;
            let w = -(-self.gap(j, epsilon)).exp_m1();
            sum.add(sweep.value * w);
            terms += 1;
            if j == 0 {
                break 0.0;
            }
            if terms.is_multiple_of(ANCHOR_EVERY) || terms > MAX_WINDOW {
                if let Some(t) = sweep.tail_if_negligible(sum.value(), terms > MAX_WINDOW) {
                    break t;
                }
            }
            sweep.step_down();
        };
        let low = sweep.j;
        let s = sum.value();
        let right = if last > self.high {
            (self.ln_upper_tail(self.high) - ln_scale).exp()
        } else {
            0.0
        };
        let eta = self.allowance(low, top, ln_scale);
        let underflow = terms as f64 * f64::MIN_POSITIVE;
        let upper_scaled = (s + tail_scaled + right + underflow) * (1.0 + eta);
        let lower_scaled = s * (1.0 - eta);
        (
            scale_up(upper_scaled, ln_scale).min(1.0),
            scale_down(lower_scaled, ln_scale),
        )
    }

    /// ε solving `S(ε) = target` (approximately upper), or None if the pass fails.
    fn solve(&self, target: f64) -> Option<f64> {
        // Breakpoints with L_j > 0: j ≤ (k − 1)/2.
        let j_max = (self.k - 1) / 2;
        let ln_scale = self.ln_pmf(self.mode);
        let t = (target.ln() - ln_scale).exp();
        // Lower window edge: the omitted mass is negligible next to the target.
        let threshold = target.ln() + TRUNCATION.ln();
        let (mut lo, mut hi) = (0_u64, self.mode);
        if self.ln_lower_tail(hi) <= threshold {
            lo = hi;
        } else {
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if self.ln_lower_tail(mid) <= threshold {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
        }
        let start = lo.min(j_max);
        let tail = (self.ln_lower_tail(start) - ln_scale).exp();
        let end = j_max.min(self.high);
        if end - start > MAX_WINDOW {
            return None;
        }
        // Upward pass: b = B(j) (breakpoint value at L_j), a = P(X < j), both scaled.
        let e2 = (-2.0 * self.epsilon0).exp();
        let one_minus_e2 = -(-2.0 * self.epsilon0).exp_m1();
        let mut sweep = Sweep::start_up(self, start, ln_scale);
        let mut a = tail;
        let mut b = tail;
        let mut segment = None;
        loop {
            let j = sweep.j;
            if b > t {
                segment = Some(j.saturating_sub(1));
                break;
            }
            a += sweep.value;
            b = e2 * b + one_minus_e2 * a;
            if j >= end {
                break;
            }
            sweep.step_up();
        }
        let (j, extended) = match segment {
            Some(j) => (j, false),
            // B(end + 1) > t: the answer is in (L_{end+1}, L_end].
            None if b > t || end == j_max => (end, false),
            None => (end, true),
        };
        Some(self.solve_segment(j, extended, target))
    }

    /// Closed-form ε on the segment below `L_j` where the active terms are i ≤ j.
    /// `extended`: j = high and the segment extends down to ε = 0 (the terms above `high`
    /// are bounded by the upper tail).
    fn solve_segment(&self, j: u64, extended: bool, target: f64) -> f64 {
        let ln_scale = self.ln_pmf(j.min(self.mode));
        let t = (target.ln() - ln_scale).exp();
        let mut sweep = Sweep::start_down(self, j, ln_scale);
        let mut p = NeumaierSum::default();
        let mut e = NeumaierSum::default();
        let mut terms = 0_u64;
        let tail = loop {
            let i = sweep.j;
            let w = (-2.0 * (j - i) as f64 * self.epsilon0).exp();
            p.add(sweep.value);
            e.add(sweep.value * w);
            terms += 1;
            if i == 0 {
                break 0.0;
            }
            if terms.is_multiple_of(ANCHOR_EVERY) || terms > MAX_WINDOW {
                if let Some(tl) = sweep.tail_if_negligible(e.value(), terms > MAX_WINDOW) {
                    break tl;
                }
            }
            sweep.step_down();
        };
        let right = if extended {
            (self.ln_upper_tail(self.high) - ln_scale).exp()
        } else {
            0.0
        };
        let eta = self.allowance(sweep.j, j, ln_scale);
        let p_up = (p.value() + tail + right) * (1.0 + eta);
        let e_low = e.value() * (1.0 - eta);
        let l_j = (self.k as i128 - 2 * j as i128) as f64 * self.epsilon0;
        let l_next = if extended {
            0.0
        } else {
            (self.k as i128 - 2 * j as i128 - 2) as f64 * self.epsilon0
        };
        let floor = l_next.max(0.0);
        let room = p_up - t;
        if room <= 0.0 || e_low <= 0.0 {
            return floor;
        }
        let eps = l_j + (room / e_low).ln();
        eps.clamp(floor, l_j)
    }
}

/// `x·e^{ln_scale}` rounded up (never 0 when x > 0).
fn scale_up(x: f64, ln_scale: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    let v = (x.ln() + ln_scale).exp() * (1.0 + 4.0 * UNIT_ROUNDOFF);
    if v == 0.0 {
        f64::from_bits(1)
    } else {
        v
    }
}

/// `x·e^{ln_scale}` rounded down.
fn scale_down(x: f64, ln_scale: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    (x.ln() + ln_scale).exp() * (1.0 - 4.0 * UNIT_ROUNDOFF)
}

/// A walk over j producing `P(X = j)/e^{ln_scale}`: exact log-probabilities every
/// [`ANCHOR_EVERY`] steps, the ratio recurrence in between.
struct Sweep<'a> {
    b: &'a Binomial,
    j: u64,
    value: f64,
    ln_scale: f64,
    since_anchor: u64,
}

impl<'a> Sweep<'a> {
    fn anchored(b: &'a Binomial, j: u64, ln_scale: f64) -> Sweep<'a> {
        Sweep {
            b,
            j,
            value: (b.ln_pmf(j) - ln_scale).exp(),
            ln_scale,
            since_anchor: 0,
        }
    }

    fn start_down(b: &'a Binomial, j: u64, ln_scale: f64) -> Sweep<'a> {
        Sweep::anchored(b, j, ln_scale)
    }

    fn start_up(b: &'a Binomial, j: u64, ln_scale: f64) -> Sweep<'a> {
        Sweep::anchored(b, j, ln_scale)
    }

    fn reanchor(&mut self) {
        self.value = (self.b.ln_pmf(self.j) - self.ln_scale).exp();
        self.since_anchor = 0;
    }

    /// j → j − 1 (requires j ≥ 1).
    fn step_down(&mut self) {
        let j = self.j;
        self.j = j - 1;
        self.since_anchor += 1;
        if !self.b.recurrence || self.since_anchor >= ANCHOR_EVERY || self.value == 0.0 {
            self.reanchor();
        } else {
            // P(j−1)/P(j) = j/(k−j+1) · e^{ε₀}
            self.value *= j as f64 / (self.b.k - j + 1) as f64 * self.b.exp_eps0;
        }
    }

    /// j → j + 1 (requires j < k).
    fn step_up(&mut self) {
        let j = self.j;
        self.j = j + 1;
        self.since_anchor += 1;
        if !self.b.recurrence || self.since_anchor >= ANCHOR_EVERY || self.value == 0.0 {
            self.reanchor();
        } else {
            // P(j+1)/P(j) = (k−j)/(j+1) · e^{−ε₀}
            self.value *= (self.b.k - j) as f64 / (j + 1) as f64 * self.b.exp_neg_eps0;
        }
    }

    /// The scaled bound on `P(X < j)` if it is below TRUNCATION × `summed` (or `force`d and
    /// finite; with `force` and the ratio ≥ 1 the whole mass 1 is returned).
    fn tail_if_negligible(&self, summed: f64, force: bool) -> Option<f64> {
        let lr = self.b.ln_ratio_down(self.j);
        if lr >= 0.0 {
            return if force {
                Some((-self.ln_scale).exp())
            } else {
                None
            };
        }
        let tail = (self.b.ln_lower_tail(self.j) - self.ln_scale).exp();
        if force || tail <= TRUNCATION * summed {
            Some(tail)
        } else {
            None
        }
    }
}

/// Chernoff bound on the normalised sum: `S(ε) ≤ P(L > ε) = P(X ≤ J) ≤ exp(−k KL(J/k ‖ q))`
/// for `J < kq` (else 1). Used only when the exact window is too long.
fn chernoff_sum(b: &Binomial, epsilon: f64) -> f64 {
    let Some(last) = b.last_above(epsilon) else {
        return 0.0;
    };
    let a = last as f64 / b.kf;
    let q = b.ln_q.exp();
    if a >= q {
        return 1.0;
    }
    let kl = if a == 0.0 {
        -b.ln_p
    } else {
        a * (a.ln() - b.ln_q) + (1.0 - a) * ((-a).ln_1p() - b.ln_p)
    };
    let exponent = -b.kf * kl * (1.0 - 1e-9);
    exponent.exp().min(1.0)
}
