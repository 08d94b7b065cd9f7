//! Rényi divergences of subsampled mechanisms: Poisson subsampling (Gaussian exactly, any
//! mechanism through its base RDP curve) and sampling without replacement (Gaussian).
//!
//! Poisson subsampling at rate q under add/remove neighbouring: the REMOVE pair
//! `((1−q)Q + qP, Q)` dominates the ADD pair at every order (Steinke 2022, Thm 35; MTZ 2019),
//! so one direction suffices:
//! ```text
//! A_α = E_Q[(1 − q + q·P/Q)^α],      D_α = ln A_α / (α−1)
//! ```
//! For the Gaussian (`P = N(1, σ²)`, `Q = N(0, σ²)`) this is
//! `A_α = E_{z~N(0,σ²)}[(1 − q + q e^{(2z−1)/(2σ²)})^α]`.
//!
//! # Rounding
//! Every sum is accumulated in log space together with a running bound on its rounding error
//! (each term's exponent is the sum of a handful of computed parts; its absolute error is
//! taken as `4u·(1 + Σ|parts|)` plus the accumulated error of the log-binomial coefficient,
//! and the compensated sums add `4u` of the sum of magnitudes, `u = 2⁻⁵³`). The returned value
//! is the computed value plus that bound, so it stays an upper bound through rounding (to first
//! order in u). The extra is below 1e-14 relative for integer orders and about 1e-15 absolute in
//! `ln A` for the fractional-order series.

use crate::numeric::log_space::{ln_expm1, ln_neg_expm1_neg, log_add_exp, softplus};
use crate::numeric::normal;
use crate::numeric::summation::neumaier_sum;

/// Unit round-off of f64.
const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// The fractional-order series stops once the first omitted pair of terms is below
/// `e^{−30}` times the partial sum (and the stop is sound, see [`poisson_gaussian_log_a`]).
const SERIES_LOG_RELATIVE_TAIL: f64 = -30.0;

/// After this many terms the fractional-order series stops at the next sound point, whatever
/// the size of the tail (the result is still an upper bound, only less tight). Reached only
/// for q near ½ with large σ and α near 1, where the terms decay like `i^{−α−2}`.
const MAX_SERIES_TERMS: u64 = 20_000;

/// Orders above this give +∞ (a valid, trivial upper bound): the sums are linear in α.
const MAX_ORDER: f64 = 1.0e6;

/// Orders above this use the Stirling-type bound in [`without_replacement_gaussian`]
/// (dp_accounting's `max_alpha`).
const WOR_EXACT_MAX_ORDER: u64 = 256;

/// `ln A_α` of the Poisson-subsampled Gaussian with noise multiplier σ (sensitivity 1).
///
/// Integer α (exact binomial expansion of `(1 − q + q·P/Q)^α`; since the binomial weights sum
/// to 1, the terms i = 0, 1 cancel against the 1 and only non-negative terms remain):
/// ```text
/// A_α = Σ_{i=0}^{α} C(α,i) q^i (1−q)^{α−i} exp((i²−i)/(2σ²))
/// A_α − 1 = Σ_{i=2}^{α} C(α,i) q^i (1−q)^{α−i} expm1((i²−i)/(2σ²))    (summed; ln A = ln1p)
/// ```
/// Fractional α (Mironov–Talwar–Zhang 2019, §3.3), with the **signed** generalised binomial
/// coefficient `C(α,i) = α(α−1)…(α−i+1)/i!` and the split point where `q·P/Q = 1 − q`:
/// ```text
/// z0  = σ² ln(1/q − 1) + ½
/// A_α = Σ_{i≥0} C(α,i) [ q^i (1−q)^{α−i} e^{(i²−i)/(2σ²)} Φ((z0 − i)/σ)
///                      + q^{α−i} (1−q)^i e^{((α−i)²−(α−i))/(2σ²)} Φ((α − i − z0)/σ) ]
/// ```
/// (`Φ(−x/σ) = ½erfc(x/(√2σ))`; far in the tail the Gaussian exponent and ln Φ are combined
/// analytically so that no two huge numbers cancel).
///
/// **Truncation is sound.** On each side of z0 the integrand is a binomial series
/// `Σ C(α,i) xⁱ` with `0 ≤ x < 1`. For `i > α` its terms alternate in sign and decrease in
/// magnitude (`|C(α,i+1)/C(α,i)| = (i−α)/(i+1) < 1`), so, pointwise, the remainder after any
/// `n ≥ ⌊α⌋` has the sign of term `n+1` and is at most its size; integrating preserves both.
/// The sum therefore stops only before a **negative** term `n+1`: the partial sum is then an
/// upper bound on `A_α`, too large by at most that term, and the loop stops once that term is
/// below `e^{−30}·(A − 1)` (or `e^{−30}` of the rounding level `1e3·u·A` if that is larger), or
/// after 20 000 terms, at the next such point (still an upper bound).
///
/// Fractional α also uses the convexity of the cumulant `α ↦ ln A_α`:
/// ```text
/// ln A_α ≤ (1−t)·ln A_⌊α⌋ + t·ln A_⌈α⌉,      t = α − ⌊α⌋,   ln A_1 = 0
/// ```
/// and returns the smaller of the two upper bounds. The interpolation wins where the series
/// cannot resolve `A_α − 1` (e.g. σ = 10⁴, q = 10⁻⁹, where `ln A ~ 1e-26`).
///
/// Valid ranges: `0 ≤ q ≤ 1`, σ > 0, α ≥ 1 (tested for σ in [0.05, 1e4], q down to 1e-9,
/// α up to 1024). q = 0 or α ≤ 1 gives 0; q = 1 gives `α(α−1)/(2σ²)`; σ = 0, α = +∞,
/// α > 10⁶ or a NaN argument give +∞. The result may be +∞ but is never NaN.
///
/// # Guarantee
/// Upper bound on `ln A_α`. Integer α: exact up to a rounding allowance of order 1e-14
/// relative. Fractional α: the series value carries an allowance that is absolute in A
/// (about 1e-15 in ln A) plus a truncation excess below `e^{−30}·(A − 1)`; where A − 1 is too
/// small for the series to resolve (below ~1e-13) the convexity interpolation is returned,
/// which can be loose by a few per cent in relative terms (e.g. 1/15 at α = 2.5 as q → 0).
/// For q near ½ with large σ and α near 1 the series converges only like `i^{−α−2}` and is
/// cut after 20 000 terms, still an upper bound but loose by up to ~10 %
/// (measured 5 % at q = ½, σ = 10⁴, α = 1.1; there D_α ~ 1e-9).
///
/// # References
/// Mironov, Talwar & Zhang, "Rényi differential privacy of the sampled Gaussian mechanism",
/// arXiv:1908.10530 (2019), §3.3; Steinke, "Composition of differential privacy & privacy
/// amplification by subsampling", arXiv:2210.00597 (2022), Thm 34. The generalized binomial
/// coefficients keep their signs; dp_accounting 0.6.0 uses `|C(α,i)|`, a slight over-estimate
/// (3.2666e-4 against the exact 3.2636e-4 at q = 0.01, σ = 1, α = 2.5).
pub fn poisson_gaussian_log_a(q: f64, noise_multiplier: f64, alpha: f64) -> f64 {
    if q.is_nan() || noise_multiplier.is_nan() || alpha.is_nan() {
        return f64::INFINITY;
    }
    if q <= 0.0 || alpha <= 1.0 {
        return 0.0;
    }
    let sigma = noise_multiplier.abs();
    let two_var = 2.0 * sigma * sigma;
    if two_var == 0.0 || alpha > MAX_ORDER {
        return f64::INFINITY;
    }
    if q >= 1.0 {
        return alpha * (alpha - 1.0) / two_var;
    }
    let gaussian_exponent = |i: f64| {
        let m = i * i - i;
        if m == 0.0 {
            0.0
        } else {
            m / two_var
        }
    };
    if alpha.fract() == 0.0 {
        return integer_log_a(q, alpha as u64, |i| gaussian_exponent(i as f64));
    }
    let floor = alpha.floor();
    let t = alpha - floor;
    let log_a_floor = integer_log_a(q, floor as u64, |i| gaussian_exponent(i as f64));
    let log_a_ceil = integer_log_a(q, floor as u64 + 1, |i| gaussian_exponent(i as f64));
    let interpolated = (1.0 - t) * log_a_floor + t * log_a_ceil;
    match fractional_series_log_a(q, sigma, alpha) {
        Some(series) => series.min(interpolated),
        None => interpolated,
    }
}

/// RDP of the Poisson-subsampled Gaussian: `D_α = ln A_α/(α−1)` with
/// [`poisson_gaussian_log_a`] (α > 1; α ≤ 1 gives 0).
///
/// # Guarantee
/// Upper bound on the Rényi divergence at order α of the Poisson-subsampled Gaussian with
/// sampling rate q and noise multiplier σ (add/remove neighbouring, sensitivity 1).
///
/// # References
/// Mironov, Talwar & Zhang, "Rényi differential privacy of the sampled Gaussian mechanism",
/// arXiv:1908.10530 (2019), §3.
pub fn poisson_gaussian(alpha: f64, q: f64, noise_multiplier: f64) -> f64 {
    if alpha.is_nan() {
        return f64::INFINITY;
    }
    if alpha <= 1.0 {
        return 0.0;
    }
    let log_a = poisson_gaussian_log_a(q, noise_multiplier, alpha);
    let d = if alpha == f64::INFINITY {
        log_a
    } else {
        log_a / (alpha - 1.0)
    };
    // The series overflows for tiny noise (σ ≪ 1) and can give ∞ − ∞: no finite bound then.
    if d.is_nan() {
        f64::INFINITY
    } else {
        d
    }
}

/// Poisson subsampling (rate q, add/remove) of any mechanism with RDP curve `base`.
///
/// For integer α ≥ 2 (Steinke 2022, Thm 34; the first two terms are rewritten with
/// `Σ_i C(α,i)(1−q)^{α−i}q^i = 1` so that only non-negative terms remain):
/// ```text
/// e^{(α−1)D'_α} = (1−q)^{α−1}(1 + (α−1)q) + Σ_{i=2}^{α} C(α,i) (1−q)^{α−i} q^i e^{(i−1)·base(i)}
///               = 1 + Σ_{i=2}^{α} C(α,i) (1−q)^{α−i} q^i expm1((i−1)·base(i))
/// ```
/// For fractional α the bound at the neighbouring integers is carried over, by monotonicity
/// of `D_α` in α and by convexity of the cumulant `(α−1)D_α` (1 < ⌊α⌋ ≤ α < ⌈α⌉):
/// ```text
/// D'_α ≤ min( D'_⌈α⌉,  [(1−t)(⌊α⌋−1)·D'_⌊α⌋ + t(⌈α⌉−1)·D'_⌈α⌉] / (α−1) ),   t = α − ⌊α⌋
/// ```
/// (the same holds with the true divergences of each fixed pair of inputs, which `base` bounds).
/// With the Gaussian `base(i) = i/(2σ²)` the integer case is exactly the sum of
/// [`poisson_gaussian_log_a`].
///
/// `base` is called at integer orders 2 ..= ⌈α⌉ and must return upper bounds on the RDP of the
/// mechanism (under add/remove); +∞ or NaN values give +∞, negative values are read as 0.
/// q = 0 or α ≤ 1 gives 0; q = 1 gives `base(α)` directly.
///
/// # Guarantee
/// Upper bound on the RDP at order α of the Poisson-subsampled mechanism, given that `base` is
/// an upper bound (tight at integer orders when `base` is the exact divergence of a fixed worst
/// pair, as for the Gaussian and Laplace mechanisms).
///
/// # References
/// Steinke, "Composition of differential privacy & privacy amplification by subsampling",
/// arXiv:2210.00597 (2022), Thm 34 and Lemma 33 (monotonicity); Zhu & Wang, "Poisson
/// subsampled Rényi differential privacy", ICML 2019.
pub fn poisson_generic(alpha: f64, q: f64, base: &dyn Fn(f64) -> f64) -> f64 {
    // A base that overflows (e.g. Laplace with a huge ε₀) can make the sum ∞ − ∞: no finite
    // bound then.
    let d = poisson_generic_unguarded(alpha, q, base);
    if d.is_nan() {
        f64::INFINITY
    } else {
        d
    }
}

/// [`poisson_generic`] before NaN is read as +∞.
fn poisson_generic_unguarded(alpha: f64, q: f64, base: &dyn Fn(f64) -> f64) -> f64 {
    if alpha.is_nan() || q.is_nan() {
        return f64::INFINITY;
    }
    if q <= 0.0 || alpha <= 1.0 {
        return 0.0;
    }
    let sanitized = |a: f64| {
        let d = base(a);
        if d.is_nan() {
            f64::INFINITY
        } else {
            d.max(0.0)
        }
    };
    if q >= 1.0 {
        return sanitized(alpha);
    }
    if alpha > MAX_ORDER {
        return f64::INFINITY;
    }
    let integer_rdp = |n: u64| {
        if n <= 1 {
            return 0.0;
        }
        let log_a = integer_log_a(q, n, |i| {
            let d = sanitized(i as f64);
            if d == 0.0 {
                0.0
            } else {
                (i - 1) as f64 * d
            }
        });
        log_a / (n - 1) as f64
    };
    if alpha.fract() == 0.0 {
        return integer_rdp(alpha as u64);
    }
    let floor = alpha.floor();
    let t = alpha - floor;
    let d_floor = integer_rdp(floor as u64);
    let d_ceil = integer_rdp(floor as u64 + 1);
    let cumulant_floor = if floor > 1.0 {
        (floor - 1.0) * d_floor
    } else {
        0.0
    };
    let interpolated = ((1.0 - t) * cumulant_floor + t * floor * d_ceil) / (alpha - 1.0);
    interpolated.min(d_ceil)
}

/// Gaussian mechanism on a sample drawn **without replacement** (fraction γ = m/n), under
/// **replace-one** neighbouring.
///
/// σ is the noise multiplier relative to the replace-one sensitivity: for a sum of records
/// each clipped to ℓ2 norm Δ, replacing one record moves the sum by up to 2Δ, so the caller
/// passes `σ_noise/(2Δ)`.
///
/// Wang–Balle–Kasiviswanathan 2019, Theorem 27 (with the Gaussian's `ε(j) = j/(2σ²)`,
/// cumulant `K(j) = (j−1)ε(j)`), computed exactly as dp_accounting 0.6.0
/// `_compute_rdp_sample_wor_gaussian_int`. For integer α:
/// ```text
/// (α−1)D_α ≤ ln[ 1 + γ² C(α,2) min(4(e^{ε(2)} − 1), 2e^{ε(2)})
///               + Σ_{j=3}^{α} γ^j C(α,j) min(4·sqrt(|Δ^{2⌊j/2⌋} e^{K}| · |Δ^{2⌈j/2⌉} e^{K}|), 2e^{K(j)}) ]
/// ```
/// where `Δ^m e^{K}` are forward differences (computed in log space with signs, as
/// dp_accounting does, on the sequence `1, e^{K(1)}, e^{K(2)}, …`). Above α = 256 the
/// difference term is dropped (`2e^{K(j)}` only, dp_accounting's "Stirling" branch; O(α)).
/// Fractional α interpolates the cumulant between ⌊α⌋ and ⌈α⌉ (WBK19, Cor. 10):
/// ```text
/// D_α ≤ [(1−t)·K̂(⌊α⌋) + t·K̂(⌈α⌉)] / (α−1),   t = α − ⌊α⌋,   K̂(1) = 0
/// ```
/// γ ≥ 1 gives the plain Gaussian `α/(2σ²)`; γ = 0 gives 0; α ≤ 1 gives the value on (1, 2),
/// which is `K̂(2)`; σ = 0, α = +∞, α > 10⁶ or NaN give +∞.
///
/// # Guarantee
/// Upper bound on the RDP at order α (replace-one), as in WBK19 Thm 27 (dp_accounting's
/// numbers, up to rounding).
///
/// # References
/// Wang, Balle & Kasiviswanathan, "Subsampled Rényi differential privacy and analytical
/// moments accountant", AISTATS 2019 (arXiv:1808.00087), Thm 9/27 and Cor. 10; dp_accounting
/// 0.6.0 `rdp_privacy_accountant._compute_rdp_sample_wor_gaussian_scalar`.
pub fn without_replacement_gaussian(alpha: f64, gamma: f64, noise_multiplier: f64) -> f64 {
    if alpha.is_nan() || gamma.is_nan() || noise_multiplier.is_nan() {
        return f64::INFINITY;
    }
    if gamma <= 0.0 {
        return 0.0;
    }
    let sigma = noise_multiplier.abs();
    let two_var = 2.0 * sigma * sigma;
    if two_var == 0.0 || alpha > MAX_ORDER {
        return f64::INFINITY;
    }
    if gamma >= 1.0 {
        return alpha.max(1.0) / two_var;
    }
    if alpha < 2.0 {
        // On (1, 2) the interpolation gives ((1−t)·0 + t·K̂(2))/(α−1) = K̂(2); below, use
        // monotonicity in α.
        return without_replacement_cumulant(gamma, two_var, 2);
    }
    if alpha.fract() == 0.0 {
        return without_replacement_cumulant(gamma, two_var, alpha as u64) / (alpha - 1.0);
    }
    let floor = alpha.floor();
    let t = alpha - floor;
    let x = without_replacement_cumulant(gamma, two_var, floor as u64);
    let y = without_replacement_cumulant(gamma, two_var, floor as u64 + 1);
    ((1.0 - t) * x + t * y) / (alpha - 1.0)
}

/// dp_accounting's `_compute_rdp_sample_wor_gaussian_int`: the bound on `(α−1)D_α` for
/// integer α ≥ 1, with `two_var = 2σ²`.
fn without_replacement_cumulant(gamma: f64, two_var: f64, alpha: u64) -> f64 {
    if alpha <= 1 {
        return 0.0;
    }
    let cgf = |x: f64| x * (x + 1.0) / two_var;
    let func = |x: f64| x / two_var;
    let log_q = gamma.ln();
    let log_binom = log_binomials(alpha);
    let ln2 = std::f64::consts::LN_2;
    let ln4 = 2.0 * ln2;
    // ln(e^{ε(2)} − 1) without cancellation (dp_accounting's ε + ln(1 − e^{−ε}) is −∞ once
    // e^{−ε} rounds to 1, σ above about 1e8, which dropped the leading term).
    let log_f2m1 = ln_expm1(func(2.0));
    let first = 2.0 * log_q + log_binom[2].0 + (ln4 + log_f2m1).min(func(2.0) + ln2);
    let mut log_a = log_add_exp(0.0, first);
    if alpha <= WOR_EXACT_MAX_ORDER {
        let deltas = forward_differences_in_log(&cgf, alpha as usize);
        for (i, &(log_c, _)) in log_binom.iter().enumerate().skip(3) {
            let delta_lo = deltas[2 * (i / 2) - 1];
            let delta_hi = deltas[2 * i.div_ceil(2) - 1];
            let s = (ln4 + 0.5 * (delta_lo + delta_hi)).min(ln2 + cgf((i - 1) as f64));
            log_a = log_add_exp(log_a, s + i as f64 * log_q + log_c);
        }
    } else {
        for (i, &(log_c, _)) in log_binom.iter().enumerate().skip(3) {
            let s = ln2 + cgf((i - 1) as f64) + i as f64 * log_q + log_c;
            log_a = log_add_exp(log_a, s);
        }
    }
    log_a
}

/// dp_accounting's `_get_forward_diffs(fun, n)`: entry m is `ln|Δ^{m+1} s(0)|` for the
/// sequence `s = (1, e^{fun(0)}, e^{fun(1)}, …, e^{fun(n+1)})`, computed by repeated in-place
/// differencing in log space with explicit signs.
fn forward_differences_in_log(fun: &dyn Fn(f64) -> f64, n: usize) -> Vec<f64> {
    let mut values = vec![0.0; n + 3];
    let mut positive = vec![true; n + 3];
    for (i, v) in values.iter_mut().enumerate().skip(1) {
        *v = fun((i - 1) as f64);
    }
    let mut deltas = vec![0.0; n + 2];
    for (i, d) in deltas.iter_mut().enumerate() {
        difference_in_log(&mut values, &mut positive, n + 2 - i);
        *d = values[0];
    }
    deltas
}

/// dp_accounting's `_stable_inplace_diff_in_log`: replaces entries `0..count` of the signed
/// log-magnitude vector by the forward differences `v[j+1] − v[j]`.
fn difference_in_log(values: &mut [f64], positive: &mut [bool], count: usize) {
    for j in 0..count {
        if positive[j] == positive[j + 1] {
            let (sign, magnitude) = log_sub_sign(values[j + 1], values[j]);
            positive[j] = if positive[j + 1] { sign } else { !sign };
            values[j] = magnitude;
        } else {
            values[j] = log_add_exp(values[j], values[j + 1]);
            positive[j] = positive[j + 1];
        }
    }
}

/// `(e^x ≥ e^y, ln|e^x − e^y|)`, as dp_accounting's `_log_sub_sign`.
fn log_sub_sign(x: f64, y: f64) -> (bool, f64) {
    if x > y {
        (true, x + (-(y - x).exp()).ln_1p())
    } else if x < y {
        (false, y + (-(x - y).exp()).ln_1p())
    } else {
        (true, f64::NEG_INFINITY)
    }
}

/// `ln A` for integer order `n` of the binomial mixture
/// `A = Σ_{i=0}^{n} C(n,i) qⁱ (1−q)^{n−i} e^{c(i)}` with `c(0) = c(1) = 0`, `c(i) ≥ 0`, from
/// `A − 1 = Σ_{i≥2} C(n,i) qⁱ (1−q)^{n−i} expm1(c(i))`, plus the rounding allowance.
fn integer_log_a(q: f64, n: u64, exponent: impl Fn(u64) -> f64) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let log_q = q.ln();
    let log_1mq = (-q).ln_1p();
    let mut terms = Vec::with_capacity(n as usize);
    for (i, &(log_c, log_c_error)) in log_binomials(n).iter().enumerate().skip(2) {
        let c = exponent(i as u64);
        if c.is_nan() || c == f64::INFINITY {
            return f64::INFINITY;
        }
        if c <= 0.0 {
            continue;
        }
        let log_em1 = ln_expm1(c);
        let parts = [
            log_c,
            i as f64 * log_q,
            (n - i as u64) as f64 * log_1mq,
            log_em1,
        ];
        let magnitude: f64 = parts.iter().map(|p| p.abs()).sum::<f64>() + c;
        terms.push(Term {
            log_magnitude: parts.iter().sum(),
            negative: false,
            log_error: log_c_error + 4.0 * UNIT_ROUNDOFF * (1.0 + magnitude),
        });
    }
    match upper_log_sum(&terms) {
        Some(log_excess) => softplus(log_excess),
        // Unreachable for non-negative terms; +∞ is the safe answer.
        None => f64::INFINITY,
    }
}

/// `ln|C(n,i)|` for i = 0..=n (integer n), each with a bound on its absolute rounding error.
fn log_binomials(n: u64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(n as usize + 1);
    let (mut log_c, mut error) = (0.0_f64, 0.0_f64);
    out.push((log_c, error));
    for i in 1..=n {
        let log_ratio = ((n - i + 1) as f64 / i as f64).ln();
        log_c += log_ratio;
        error += UNIT_ROUNDOFF * (2.0 + log_ratio.abs() + log_c.abs());
        out.push((log_c, error));
    }
    out
}

/// The Mironov–Talwar–Zhang series for fractional α, as an upper bound on `ln A_α` (see
/// [`poisson_gaussian_log_a`]); `None` if rounding leaves it unresolved.
fn fractional_series_log_a(q: f64, sigma: f64, alpha: f64) -> Option<f64> {
    let two_var = 2.0 * sigma * sigma;
    let log_q = q.ln();
    let log_1mq = (-q).ln_1p();
    let setup = SeriesSetup {
        alpha,
        log_q,
        log_1mq,
        two_var,
        // z0 = σ² ln(1/q − 1) + ½, where q·e^{(2z−1)/(2σ²)} = 1 − q.
        z0: sigma * sigma * (log_1mq - log_q) + 0.5,
    };
    let last_positive = alpha.floor() as u64 + 1;
    let mut terms: Vec<Term> = Vec::new();
    // A running estimate of ln A (log-sum-exp of the signed terms so far), only used to
    // decide when to stop; the returned value is summed afresh by `upper_log_sum`.
    let (mut log_positive, mut log_negative) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    // ln|C(α,i)|, its sign, and a bound on its rounding error.
    let (mut log_c, mut negative, mut log_c_error) = (0.0_f64, false, 0.0_f64);
    let mut i: u64 = 0;
    loop {
        let fi = i as f64;
        let j = alpha - fi;
        let (e0, m0) = setup.side_exponent(fi, (setup.z0 - fi) / sigma);
        let (e1, m1) = setup.side_exponent(j, (j - setup.z0) / sigma);
        let (t0, t1) = (log_c + e0, log_c + e1);
        if negative && i > last_positive {
            // Sound stopping point: the omitted remainder is ≤ 0 and ≥ −(s0 + s1). Stop
            // once that is below e^{−30} of A − 1 (the part that matters for ln A), or of the
            // rounding level 1e3·u·A when A − 1 is smaller than that.
            let next = log_add_exp(t0, t1);
            let log_a = if log_positive > log_negative {
                log_positive + ln_neg_expm1_neg(log_positive - log_negative)
            } else {
                f64::NEG_INFINITY
            };
            let log_excess = if log_a > 0.0 {
                ln_expm1(log_a)
            } else {
                f64::NEG_INFINITY
            };
            let scale = log_excess.max(log_a + (1e3 * UNIT_ROUNDOFF).ln());
            if next <= scale + SERIES_LOG_RELATIVE_TAIL || i >= MAX_SERIES_TERMS {
                break;
            }
        }
        for (t, m) in [(t0, m0), (t1, m1)] {
            if negative {
                log_negative = log_add_exp(log_negative, t);
            } else {
                log_positive = log_add_exp(log_positive, t);
            }
            terms.push(Term {
                log_magnitude: t,
                negative,
                log_error: log_c_error + 4.0 * UNIT_ROUNDOFF * (1.0 + log_c.abs() + m),
            });
        }
        // C(α, i+1) = C(α, i)·(α − i)/(i + 1).
        let factor = (alpha - fi) / (fi + 1.0);
        let log_factor = factor.abs().ln();
        log_c += log_factor;
        log_c_error += UNIT_ROUNDOFF * (3.0 + log_factor.abs() + log_c.abs());
        if factor < 0.0 {
            negative = !negative;
        }
        i += 1;
    }
    upper_log_sum(&terms)
}

/// The constants of the fractional-order series.
#[derive(Debug, Clone, Copy)]
struct SeriesSetup {
    alpha: f64,
    log_q: f64,
    log_1mq: f64,
    /// 2σ².
    two_var: f64,
    /// The split point.
    z0: f64,
}

impl SeriesSetup {
    /// Log of one side's integral without the binomial coefficient, and the sum of the
    /// absolute values of its computed parts (for the rounding bound).
    ///
    /// With power `k` (k = i on the left side, k = α − i on the right) and `x` the argument of
    /// Φ (`(z0 − i)/σ` on the left, `(α − i − z0)/σ` on the right):
    /// ```text
    /// k ln q + (α−k) ln(1−q) + (k²−k)/(2σ²) + ln Φ(x)
    /// ```
    /// For `x < −30`, `ln Φ(x) = −x²/2 + ln M(x)` with the Mills-ratio part `ln M(x)`; since
    /// `(k²−k)/(2σ²) − x²/2 = k·ln((1−q)/q) − z0²/(2σ²)` (as `x² = (k − z0)²/σ²`), the exponent
    /// becomes `α ln(1−q) − z0²/(2σ²) + ln M(x)` and no two huge numbers cancel.
    fn side_exponent(&self, k: f64, x: f64) -> (f64, f64) {
        let parts = if x < -30.0 {
            [
                self.alpha * self.log_1mq,
                -self.z0 * self.z0 / self.two_var,
                log_mills_tail(x),
                0.0,
            ]
        } else {
            let m = k * k - k;
            let gauss = if m == 0.0 { 0.0 } else { m / self.two_var };
            [
                k * self.log_q,
                (self.alpha - k) * self.log_1mq,
                gauss,
                normal::log_cdf(x),
            ]
        };
        (parts.iter().sum(), parts.iter().map(|p| p.abs()).sum())
    }
}

/// `ln Φ(x) + x²/2` for `x ≤ −30`, from the asymptotic series of the Mills ratio
/// (`Σ (−1)ⁿ (2n−1)!!/x²ⁿ`; the tenth term is below 1e-20 relative there, as in
/// `crate::numeric::normal`).
fn log_mills_tail(x: f64) -> f64 {
    let inv_x2 = 1.0 / (x * x);
    let mut term = 1.0;
    let mut series = 1.0;
    for n in 1..=9 {
        term *= -((2 * n - 1) as f64) * inv_x2;
        series += term;
    }
    -(-x).ln() - 0.5 * (2.0 * std::f64::consts::PI).ln() + series.ln()
}

/// One signed term `±e^{log_magnitude}` of a sum, whose log may be off by `log_error`.
#[derive(Debug, Clone, Copy)]
struct Term {
    log_magnitude: f64,
    negative: bool,
    log_error: f64,
}

/// Upper bound on `ln Σ ±e^{tᵢ}` including rounding; `None` if the computed sum is not
/// positive (rounding swamped it).
///
/// ```text
/// M = max tᵢ,   S = Σ± e^{tᵢ−M}  (Neumaier-compensated, separately for each sign)
/// bound = M + ln( S + Σ e^{tᵢ−M}·expm1(ηᵢ + u|M|) + 4u·Σ e^{tᵢ−M} )
/// ```
/// `ηᵢ` bounds the error of `tᵢ`; `4u·Σ|x|` covers the `exp` roundings and the compensated
/// summation (Neumaier: `≤ 2u|S| + O(n u²)Σ|x|`).
fn upper_log_sum(terms: &[Term]) -> Option<f64> {
    let max = terms
        .iter()
        .map(|t| t.log_magnitude)
        .fold(f64::NEG_INFINITY, f64::max);
    if max.is_infinite() {
        return Some(max);
    }
    let scaled = |negative: bool| {
        neumaier_sum(
            terms
                .iter()
                .filter(move |t| t.negative == negative)
                .map(move |t| (t.log_magnitude - max).exp()),
        )
    };
    let (positive, negative) = (scaled(false), scaled(true));
    let value = positive - negative;
    if value.is_nan() || value <= 0.0 {
        return None;
    }
    let term_errors = neumaier_sum(terms.iter().map(|t| {
        (t.log_magnitude - max).exp() * (t.log_error + UNIT_ROUNDOFF * max.abs()).exp_m1()
    }));
    let bound = value + term_errors + 4.0 * UNIT_ROUNDOFF * (positive + negative);
    Some(max + bound.ln())
}
