//! Independent "truth" oracles for the soundness suite (`tests/soundness.rs`,
//! `tests/soundness_regressions.rs`).
//!
//! Nothing here calls the crate's numerics. Every oracle returns a *bracket* `(lo, hi)` on the
//! exact δ(ε) of some neighbouring pair (or composition), with its own rounding and truncation
//! charged to the bracket, so that a check `upper ≥ lo` or `lower ≤ hi` can only fail when the
//! accountant is wrong. The sources of each value:
//!
//! * Gaussian mechanism with parameter μ (also any composition of unsampled Gaussians, with
//!   μ = √Σ count·(Δ/σ)², Dong, Roth & Su, "Gaussian differential privacy", JRSS-B 2022,
//!   Cor. 3.3): δ(ε) = E_P[(1 − e^{ε−L})₊] with L ~ N(μ²/2, μ²) under P, computed by
//!   Gauss–Legendre quadrature of the (cancellation-free) integrand `−expm1(ε − L)·φ`, in log
//!   space far in the tail. This equals the closed form Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)
//!   (Balle & Wang, ICML 2018, Thm 8), which is only used to cross-check the quadrature.
//! * Binary randomized response with ε₀, composed m times (also `eps_delta` with δ₀ = 0, and
//!   discrete Laplace with effective sensitivity 1): the loss is (2j − m)ε₀ with
//!   j ~ Bin(m, e^{ε₀}/(1 + e^{ε₀})) under P, and δ(ε) = Σ_{j: loss > ε} P(j)(1 − e^{ε − loss})
//!   (Kairouz, Oh & Viswanath, ICML 2015). Binomial probabilities are computed with Loader's
//!   saddle-point form ("Fast and accurate computation of binomial probabilities", 2000),
//!   the sum over a window with Chernoff bounds for what lies outside it.
//! * Three-atom symmetric pairs (k-ary randomized response, discrete Laplace with effective
//!   sensitivity 2): with probability r an outcome has loss 0 under both P and Q, otherwise
//!   the pair is binary RR; so δ = E_{c ~ Bin(m, r)}[δ_bin(m − c)], bracketed by blocks of c
//!   using that δ_bin(m) is non-decreasing in m.
//! * `eps_delta` (the pair "+∞ with probability δ₀, else binary RR(ε₀)"): the k-fold
//!   composition has mass 1 − (1 − δ₀)^k at +∞ and is (1 − δ₀)^k·RR otherwise.
//! * Finite atom lists (one run of discrete Laplace / discrete Gaussian / `pmf_pair`, or a few
//!   runs of `pmf_pair` by multinomial enumeration): δ(ε) = Σ P(atom)·(1 − e^{ε − loss})₊.
//! * Poisson subsampling at rate q of a symmetric pair (P₀, Q₀): REMOVE is
//!   ((1−q)Q₀ + qP₀, Q₀), δ_remove(ε) = q·δ₀(ln(1 + (e^ε − 1)/q)) (= 1 − e^ε when
//!   ε ≤ ln(1 − q)); ADD is the swap, δ_add(ε) = (1 − (1−q)e^ε)·δ₀(ε + ln q − ln(1 − (1−q)e^ε))
//!   (0 when (1−q)e^ε ≥ 1). The truth is the larger of the two (Zhu, Dong & Wang, AISTATS
//!   2022, §5).
//! * One Laplace release with ε₀ = Δ/b: δ(ε) = 1 − e^{(ε−ε₀)/2} for |ε| ≤ ε₀, 1 − e^ε below
//!   −ε₀, 0 above ε₀.

#![allow(dead_code)]

use std::sync::OnceLock;
use std::time::Instant;

/// Unit round-off of f64.
pub const U: f64 = f64::EPSILON / 2.0;
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// A bracket on δ(ε) for any real ε (some oracles only for ε ≥ 0 where noted).
pub type DeltaFn = Box<dyn Fn(f64) -> (f64, f64) + Send + Sync>;

/// `(−expm1(x))₊`: the factor `1 − e^{x}` of one atom of loss ℓ with `x = ε − ℓ`.
fn one_minus_exp(x: f64) -> f64 {
    if x >= 0.0 {
        0.0
    } else {
        -x.exp_m1()
    }
}

/// Neumaier's compensated sum.
#[derive(Default, Clone, Copy)]
pub struct Sum {
    s: f64,
    c: f64,
}

impl Sum {
    pub fn add(&mut self, x: f64) {
        let t = self.s + x;
        if self.s.abs() >= x.abs() {
            self.c += (self.s - t) + x;
        } else {
            self.c += (x - t) + self.s;
        }
        self.s = t;
    }
    pub fn value(&self) -> f64 {
        self.s + self.c
    }
}

// ---------------------------------------------------------------------------------------------
// Gaussian mechanism by quadrature.

/// 20-point Gauss–Legendre nodes and weights on [−1, 1] (Newton iteration on P₂₀).
fn gauss_legendre() -> &'static Vec<(f64, f64)> {
    static NODES: OnceLock<Vec<(f64, f64)>> = OnceLock::new();
    NODES.get_or_init(|| {
        let n = 20;
        let mut out = Vec::with_capacity(n);
        for i in 1..=n {
            let mut x = (std::f64::consts::PI * (i as f64 - 0.25) / (n as f64 + 0.5)).cos();
            let mut dp = 0.0;
            for _ in 0..100 {
                let (mut p0, mut p1) = (1.0, x);
                for k in 2..=n {
                    let p2 = ((2 * k - 1) as f64 * x * p1 - (k - 1) as f64 * p0) / k as f64;
                    p0 = p1;
                    p1 = p2;
                }
                dp = n as f64 * (x * p1 - p0) / (x * x - 1.0);
                let dx = p1 / dp;
                x -= dx;
                if dx.abs() < 1e-17 {
                    break;
                }
            }
            out.push((x, 2.0 / ((1.0 - x * x) * dp * dp)));
        }
        out
    })
}

/// ∫ f over [a, b] by 20-point Gauss–Legendre.
fn gl(a: f64, b: f64, f: &impl Fn(f64) -> f64, sum: &mut Sum) {
    let (c, h) = (0.5 * (a + b), 0.5 * (b - a));
    for &(x, w) in gauss_legendre() {
        sum.add(w * h * f(c + h * x));
    }
}

/// ∫₀^∞ f over panels: geometric from `first` (doubling) up to width `max_width`, then
/// uniform panels of that width up to `end`; [0, first] is one panel.
fn integrate_panels(f: &impl Fn(f64) -> f64, first: f64, max_width: f64, end: f64) -> f64 {
    let mut sum = Sum::default();
    let mut a = 0.0;
    let mut width = first.min(max_width).min(end);
    while a < end {
        let b = (a + width).min(end);
        gl(a, b, f, &mut sum);
        a = b;
        width = (2.0 * width).min(max_width);
    }
    sum.value()
}

/// ln δ(ε) of the Gaussian mechanism with parameter μ > 0, any real ε, by quadrature of
/// δ = ∫_{z₀}^∞ −expm1(−μ(z − z₀))·φ(z) dz with z₀ = ε/μ − μ/2 (the privacy loss is
/// μ²/2 + μz under P). Relative accuracy ≈ 1e-14 (checked against the closed form with
/// `libm::erfc` in tests/soundness.rs).
pub fn gaussian_ln_delta(mu: f64, epsilon: f64) -> f64 {
    assert!(mu > 0.0 && mu.is_finite());
    if epsilon == f64::INFINITY {
        return f64::NEG_INFINITY;
    }
    let s = mu;
    let z0 = epsilon / mu - 0.5 * mu;
    if z0 >= 0.0 {
        // δ = φ(z₀)·∫₀^∞ −expm1(−s u)·e^{−z₀u − u²/2} du.
        let f = |u: f64| -(-s * u).exp_m1() * (-z0 * u - 0.5 * u * u).exp();
        let decay = 1.0 / z0.max(1.0);
        let end = -z0 + (z0 * z0 + 140.0).sqrt();
        let first = (0.125 / s).min(0.5 * decay);
        let integral = integrate_panels(&f, first, 0.5 * decay, end);
        -0.5 * z0 * z0 - LN_SQRT_2PI + integral.ln()
    } else {
        // u = z − z₀ ≥ 0: δ = ∫ −expm1(−s u)·φ(z₀ + u) du, the bulk within 40 of u = −z₀.
        let phi = |z: f64| (-0.5 * z * z - LN_SQRT_2PI).exp();
        let start = (-z0 - 40.0).max(0.0);
        let end = -z0 + 40.0;
        let f = |v: f64| -(-s * (start + v)).exp_m1() * phi(z0 + start + v);
        let first = if start > 0.0 {
            0.25
        } else {
            (0.125 / s).min(0.25)
        };
        integrate_panels(&f, first, 0.25, end - start).ln()
    }
}

/// Relative half-width charged to [`gaussian_ln_delta`] (quadrature and summation ≈ 1e-14;
/// ten times that, plus the effect of a rounding of ε of 4 ulps, is carried by
/// [`gaussian_delta`]).
pub const GAUSSIAN_QUADRATURE_RELATIVE: f64 = 1e-13;

/// Bracket on δ(ε) of the Gaussian mechanism μ.
pub fn gaussian_delta(mu: f64, epsilon: f64) -> (f64, f64) {
    // ε/μ − μ/2 carries rounding of about u·(|ε|/μ + μ): charged as a shift of ε.
    let eta = 4.0 * U * (epsilon.abs() + mu * mu) + 1e-300;
    let lo = gaussian_ln_delta(mu, epsilon + eta).exp() * (1.0 - GAUSSIAN_QUADRATURE_RELATIVE);
    let hi = gaussian_ln_delta(mu, epsilon - eta).exp() * (1.0 + GAUSSIAN_QUADRATURE_RELATIVE);
    (lo.clamp(0.0, 1.0), hi.min(1.0))
}

/// The closed form Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ) with `libm::erfc`, for cross-checks only
/// (it cancels catastrophically for tiny μ and far in the tail).
pub fn gaussian_delta_closed_form(mu: f64, epsilon: f64) -> f64 {
    let cdf = |x: f64| 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2);
    cdf(0.5 * mu - epsilon / mu) - epsilon.exp() * cdf(-0.5 * mu - epsilon / mu)
}

// ---------------------------------------------------------------------------------------------
// Binomial probabilities (Loader 2000).

/// ln n! − (n + ½) ln n + n − ln √(2π) for whole n ≥ 1.
fn stirlerr(n: f64) -> f64 {
    const S0: f64 = 1.0 / 12.0;
    const S1: f64 = 1.0 / 360.0;
    const S2: f64 = 1.0 / 1260.0;
    const S3: f64 = 1.0 / 1680.0;
    const S4: f64 = 1.0 / 1188.0;
    if n <= 15.0 {
        return libm::lgamma(n + 1.0) - (n + 0.5) * n.ln() + n - LN_SQRT_2PI;
    }
    let nn = n * n;
    if n > 500.0 {
        (S0 - S1 / nn) / n
    } else if n > 80.0 {
        (S0 - (S1 - S2 / nn) / nn) / n
    } else if n > 35.0 {
        (S0 - (S1 - (S2 - S3 / nn) / nn) / nn) / n
    } else {
        (S0 - (S1 - (S2 - (S3 - S4 / nn) / nn) / nn) / nn) / n
    }
}

/// x ln(x/np) + np − x, without cancellation, with np given as its logarithm.
fn bd0(x: f64, ln_np: f64) -> f64 {
    let np = ln_np.exp();
    if x == 0.0 {
        return np;
    }
    if np > 1e-300 && (x - np).abs() < 0.1 * (x + np) {
        let v = (x - np) / (x + np);
        let mut s = (x - np) * v;
        let mut ej = 2.0 * x * v;
        let v2 = v * v;
        for j in 1..1000 {
            ej *= v2;
            let s1 = s + ej / (2 * j + 1) as f64;
            if s1 == s {
                return s1;
            }
            s = s1;
        }
        s
    } else {
        x * (x.ln() - ln_np) + np - x
    }
}

/// ln P(X = x) for X ~ Bin(m, p), given ln p and ln q = ln(1 − p).
pub fn ln_dbinom(x: f64, m: f64, ln_p: f64, ln_q: f64) -> f64 {
    if x == 0.0 {
        return m * ln_q;
    }
    if x == m {
        return m * ln_p;
    }
    let ln_m = m.ln();
    stirlerr(m) - stirlerr(x) - stirlerr(m - x) - bd0(x, ln_m + ln_p) - bd0(m - x, ln_m + ln_q)
        + 0.5 * (m / (2.0 * std::f64::consts::PI * x * (m - x))).ln()
}

/// Chernoff bound on P(X ≥ a) (a above the mean) or P(X ≤ a) (a below): exp(−m·KL(a/m‖p)),
/// slightly enlarged to cover its own rounding; 1 when a is on the mean's other side.
fn chernoff(a: f64, m: f64, ln_p: f64, ln_q: f64) -> f64 {
    let alpha = (a / m).clamp(0.0, 1.0);
    let p = ln_p.exp();
    if (alpha - p).abs() < 1e-9 {
        return 1.0;
    }
    let term = |x: f64, ln_x_ref: f64| {
        if x == 0.0 {
            0.0
        } else {
            x * (x.ln() - ln_x_ref)
        }
    };
    let kl = term(alpha, ln_p) + term(1.0 - alpha, ln_q);
    (-(m * kl) * (1.0 - 1e-9) + 1e-9).exp().min(1.0)
}

/// Largest number of blocks one window sum may take (the rest is bounded, not summed).
pub fn window_cap() -> usize {
    std::env::var("SOUNDNESS_WINDOW_CAP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4_000)
}

/// δ(ε) of binary randomized response with ε₀ composed m times (replace-one pair; also
/// `eps_delta` with δ₀ = 0 and discrete Laplace with effective sensitivity 1).
#[derive(Clone, Copy, Debug)]
pub struct BinaryRr {
    pub m: u64,
    pub e: f64,
    ln_p: f64,
    ln_q: f64,
}

impl BinaryRr {
    pub fn new(m: u64, e: f64) -> Self {
        // p = 1/(1 + e^{−ε₀}), q = e^{−ε₀}/(1 + e^{−ε₀}).
        let ln_p = -(-e).exp().ln_1p();
        BinaryRr {
            m,
            e,
            ln_p,
            ln_q: -e + ln_p,
        }
    }

    fn loss(&self, j: u64) -> f64 {
        (2.0 * j as f64 - self.m as f64) * self.e
    }

    /// Bracket on δ(ε), any real ε.
    pub fn delta(&self, epsilon: f64) -> (f64, f64) {
        self.delta_capped(epsilon, window_cap() as u64)
    }

    /// [`Self::delta`] summing at most `cap` blocks.
    pub fn delta_capped(&self, epsilon: f64, cap: u64) -> (f64, f64) {
        // Rounding of the losses (2j − m)ε₀ moves them by ≤ 2 ulps: shift ε instead.
        let eta = 8.0 * U * (epsilon.abs() + self.e);
        let lo = self.delta_raw(epsilon + eta, cap).0;
        let hi = self.delta_raw(epsilon - eta, cap).1;
        (lo, hi.min(1.0))
    }

    fn delta_raw(&self, epsilon: f64, cap: u64) -> (f64, f64) {
        let (m, e) = (self.m, self.e);
        if m == 0 || e == 0.0 {
            let d = one_minus_exp(epsilon);
            return (d, d);
        }
        if e.is_nan() || epsilon.is_nan() {
            return (0.0, 1.0);
        }
        if e == f64::INFINITY {
            // p = 1: all P-mass at j = m, loss +∞.
            let d = if epsilon < f64::INFINITY { 1.0 } else { 0.0 };
            return (d, d);
        }
        let mf = m as f64;
        // First j with loss > ε (the losses are non-decreasing in j), by binary search.
        let (mut lo_j, mut hi_j) = (0u64, m + 1);
        while lo_j < hi_j {
            let mid = lo_j + (hi_j - lo_j) / 2;
            if self.loss(mid) > epsilon {
                hi_j = mid;
            } else {
                lo_j = mid + 1;
            }
        }
        let j0 = lo_j;
        if j0 > m {
            return (0.0, 0.0);
        }
        let (ln_p, ln_q) = (self.ln_p, self.ln_q);
        let (p, q) = (ln_p.exp(), ln_q.exp());
        let mean = mf * p;
        let sd = (mf * p * q).sqrt();
        let reach = 40.0 * sd + 20.0;
        let start = if (j0 as f64) < mean - reach {
            (mean - reach).floor() as u64
        } else {
            j0
        };
        // Everything in [j0, start) lies more than 40 sd below the mean.
        let mut remainder = if start > j0 {
            chernoff(start as f64 - 1.0, mf, ln_p, ln_q)
        } else {
            0.0
        };
        // ln P(j+1)/P(j), non-increasing in j.
        let ln_ratio = |j: u64| ((mf - j as f64) / (j as f64 + 1.0)).ln() + ln_p - ln_q;
        // ln Σ_{i<s} y^i with y = e^{lr} (no overflow).
        let ln_geom = |lr: f64, s: u64| -> f64 {
            let sf = s as f64;
            if s == 1 {
                0.0
            } else if lr == 0.0 {
                sf.ln()
            } else if lr > 0.0 {
                sf * lr + (-(-sf * lr).exp_m1()).ln() - lr.exp_m1().ln()
            } else if lr == f64::NEG_INFINITY {
                0.0
            } else {
                (-(sf * lr).exp_m1()).ln() - (-lr.exp_m1()).ln()
            }
        };
        // Blocks [a, a + s): P(a + i) lies between P(a)·r(a + s − 2)^i and P(a)·r(a)^i
        // (log-concavity), and the factor 1 − e^{ε − loss} between its values at the block's
        // ends. Blocks of one term (exact) when the window holds at most `cap` terms; otherwise
        // the size that covers it in `cap` blocks.
        let cap = cap.max(1);
        let span = (mean + reach).min(mf) - start as f64 + 1.0;
        let s = ((span / cap as f64).ceil() as u64).max(1);
        let (mut lo, mut hi) = (Sum::default(), Sum::default());
        let mut a = start;
        let mut blocks = 0u64;
        loop {
            let ln_pa = ln_dbinom(a as f64, mf, ln_p, ln_q);
            let af = a as f64;
            if af > mean && a < m {
                let lr = ln_ratio(a);
                if lr < 0.0 {
                    // Everything from a on is below P(a)·r(a)^i.
                    let tail = ln_pa.exp() / (-lr.exp_m1());
                    if tail <= 1e-20 * lo.value() || af > mean + reach {
                        remainder += tail.min(chernoff(af, mf, ln_p, ln_q));
                        break;
                    }
                }
            }
            if blocks >= cap {
                remainder += if af > mean {
                    chernoff(af, mf, ln_p, ln_q)
                } else {
                    1.0
                };
                break;
            }
            let size = s.min(m - a + 1);
            let last = a + size - 1;
            let (lr_hi, lr_lo) = if size <= 2 {
                let lr = if size == 2 { ln_ratio(a) } else { 0.0 };
                (lr, lr)
            } else {
                (ln_ratio(a), ln_ratio(last - 1))
            };
            // f(i) = 1 − e^{x₀ − 2ε₀i} is concave in i: above its chord, below its tangent
            // f₀ + e^{x₀}·2ε₀·i, and below f(s − 1). Σ y^i(α + βi) = G(y)(α + β·ī(y)).
            let x0 = epsilon - self.loss(a);
            let f0 = one_minus_exp(x0);
            let f1 = one_minus_exp(epsilon - self.loss(last));
            let (g_lo, g_hi) = (
                (ln_pa + ln_geom(lr_lo, size)).exp(),
                (ln_pa + ln_geom(lr_hi, size)).exp(),
            );
            let (block_lo, block_hi) = if size == 1 {
                (g_lo * f0, g_hi * f0)
            } else {
                let chord = ((f1 - f0) / (size - 1) as f64).max(0.0);
                let tangent = x0.exp() * 2.0 * e;
                let lo_mean = mean_index(lr_lo, size) * (1.0 - 1e-10);
                let hi_mean = mean_index(lr_hi, size) * (1.0 + 1e-10);
                (
                    g_lo * (f0 + chord * lo_mean) * (1.0 - 1e-13),
                    g_hi * f1.min((f0 + tangent * hi_mean) * (1.0 + 1e-13)),
                )
            };
            lo.add(block_lo);
            hi.add(block_hi);
            blocks += 1;
            if last == m {
                break;
            }
            a = last + 1;
        }
        let rel = 1e-12 + 1e-13 * sd;
        (
            (lo.value() * (1.0 - rel)).max(0.0),
            (hi.value() * (1.0 + rel) + remainder).min(1.0),
        )
    }
}

/// ī(y) = Σ_{i<s} i·y^i / Σ_{i<s} y^i for y = e^{lr} (the mean index of a geometric block),
/// within ~1e-11 relative; non-decreasing in lr.
fn mean_index(lr: f64, s: u64) -> f64 {
    let sf = s as f64;
    if s <= 1 || lr == f64::NEG_INFINITY {
        return 0.0;
    }
    let t = sf * lr;
    if t.abs() < 1e-4 {
        // The cumulants of the uniform law on {0, …, s−1}: the third vanishes.
        0.5 * (sf - 1.0) + (sf * sf - 1.0) / 12.0 * lr
    } else {
        // s/(1 − e^{−s·lr}) − 1/(1 − e^{−lr}).
        (sf / -(-t).exp_m1() - 1.0 / -(-lr).exp_m1()).clamp(0.0, sf - 1.0)
    }
}

/// A symmetric three-atom pair composed m times: with probability `r` loss 0 (both P and Q),
/// otherwise binary RR with ε₀ = `e`. k-ary randomized response: r = (k−2)/(e^{ε₀} + k − 1).
#[derive(Clone, Debug)]
pub struct ThreeAtom {
    pub m: u64,
    pub e: f64,
    /// ln r (−∞: plain binary RR).
    ln_r: f64,
    /// Block boundaries c₀ < c₁ < … of the number c of loss-0 runs, with the exact
    /// Bin(m, r) mass of each block [c_i, c_{i+1} − 1] (computed once).
    bounds: Vec<u64>,
    masses: Vec<f64>,
    /// Mass outside [c₀, c_last − 1] (Chernoff).
    outside: f64,
    /// Relative error charged to the masses.
    rel: f64,
}

/// Most terms summed (once) for the block masses of a [`ThreeAtom`].
const THREE_ATOM_MASS_TERMS: u64 = 2_000_000;

impl ThreeAtom {
    pub fn new(m: u64, e: f64, ln_r: f64, ln_not_r: f64) -> Self {
        let mut t = ThreeAtom {
            m,
            e,
            ln_r,
            bounds: Vec::new(),
            masses: Vec::new(),
            outside: 0.0,
            rel: 0.0,
        };
        if ln_r == f64::NEG_INFINITY {
            return t;
        }
        let mf = m as f64;
        let ln_q = ln_not_r;
        let r = ln_r.exp();
        let mean = mf * r;
        let sd = (mf * r * (1.0 - r)).sqrt();
        let tau_reach = 40.0 * sd + 20.0;
        let c_lo = (mean - tau_reach).floor().max(0.0) as u64;
        let c_hi = ((mean + tau_reach).ceil() as u64).min(m);
        t.outside = if c_lo > 0 {
            chernoff(c_lo as f64 - 1.0, mf, ln_r, ln_q)
        } else {
            0.0
        } + if c_hi < m {
            chernoff(c_hi as f64 + 1.0, mf, ln_r, ln_q)
        } else {
            0.0
        };
        t.rel = 1e-12 + 1e-13 * sd;
        let width = c_hi - c_lo + 1;
        // Boundaries: the two ends, and 16 equal pieces of mean ± 8 sd (or of the whole range
        // when it is narrow).
        let mut bounds = vec![c_lo, c_hi + 1];
        let (inner_lo, inner_hi) = if width <= 64 {
            (c_lo as f64, (c_hi + 1) as f64)
        } else {
            (mean - 8.0 * sd, mean + 8.0 * sd)
        };
        for i in 0..=16 {
            let x = inner_lo + (inner_hi - inner_lo) * i as f64 / 16.0;
            bounds.push((x.round().max(0.0) as u64).clamp(c_lo, c_hi + 1));
        }
        bounds.sort_unstable();
        bounds.dedup();
        if width > THREE_ATOM_MASS_TERMS {
            // Too many terms to sum: one block of mass ≤ 1 (the two ends bracket the average).
            t.bounds = vec![c_lo, c_hi + 1];
            t.masses = vec![1.0];
            return t;
        }
        for w in bounds.windows(2) {
            let (a, b) = (w[0], w[1] - 1);
            let mut mass = Sum::default();
            let mut ln_pc = 0.0;
            for c in a..=b {
                if (c - a) % 256 == 0 {
                    ln_pc = ln_dbinom(c as f64, mf, ln_r, ln_q);
                }
                mass.add(ln_pc.exp());
                ln_pc += ((mf - c as f64) / (c as f64 + 1.0)).ln() + ln_r - ln_q;
            }
            t.masses.push(mass.value());
        }
        t.bounds = bounds;
        t
    }

    /// k-ary randomized response with ε₀, composed m times.
    pub fn randomized_response(m: u64, e: f64, categories: u64) -> Self {
        let k = categories as f64;
        // r = (k−2)/(e^{ε₀} + k − 1) = (k−2)e^{−ε₀}/(1 + (k−1)e^{−ε₀}).
        let denominator = ((k - 1.0) * (-e).exp()).ln_1p();
        let ln_r = if categories == 2 {
            f64::NEG_INFINITY
        } else {
            (k - 2.0).ln() - e - denominator
        };
        // 1 − r = (1 + e^{−ε₀})/(1 + (k−1)e^{−ε₀}).
        let ln_not_r = (-e).exp().ln_1p() - denominator;
        ThreeAtom::new(m, e, ln_r, ln_not_r)
    }

    pub fn delta(&self, epsilon: f64) -> (f64, f64) {
        if self.ln_r == f64::NEG_INFINITY {
            return BinaryRr::new(self.m, self.e).delta(epsilon);
        }
        // δ_bin(m − c) is non-increasing in c: on block [c_i, c_{i+1} − 1] it lies between its
        // values at c_{i+1} and at c_i (each boundary evaluated once).
        let bin = |c: u64| {
            if c > self.m {
                (0.0, 0.0)
            } else {
                BinaryRr::new(self.m - c, self.e).delta(epsilon)
            }
        };
        let values: Vec<(f64, f64)> = self.bounds.iter().map(|&c| bin(c)).collect();
        let (mut lo, mut hi) = (Sum::default(), Sum::default());
        for (i, &mass) in self.masses.iter().enumerate() {
            lo.add(mass * values[i + 1].0);
            hi.add(mass * values[i].1);
        }
        let rel = self.rel;
        (
            (lo.value() * (1.0 - rel) * (1.0 - self.outside)).max(0.0),
            (hi.value() * (1.0 + rel) + self.outside).min(1.0),
        )
    }
}

/// `eps_delta` (ε₀, δ₀) composed k times (KOV's leaky randomized response).
pub fn eps_delta(k: u64, e: f64, d: f64, epsilon: f64) -> (f64, f64) {
    // Mass at +∞: 1 − (1 − δ₀)^k; the rest is (1 − δ₀)^k times binary RR(ε₀)^k.
    let ln_keep = k as f64 * (-d).ln_1p();
    let infinite = -ln_keep.exp_m1();
    let keep = ln_keep.exp();
    let (lo, hi) = BinaryRr::new(k, e).delta(epsilon);
    let r = 1e-14;
    (
        (infinite * (1.0 - r) + keep * (1.0 - r) * lo).max(0.0),
        (infinite * (1.0 + r) + keep * (1.0 + r) * hi).min(1.0),
    )
}

/// One Laplace release with ε₀ = Δ/b (any real ε).
pub fn laplace(epsilon0: f64, epsilon: f64) -> (f64, f64) {
    let eta = 8.0 * U * (epsilon.abs() + epsilon0);
    let f = |x: f64| {
        if x >= epsilon0 {
            0.0
        } else if x >= -epsilon0 {
            -(0.5 * (x - epsilon0)).exp_m1()
        } else {
            -x.exp_m1()
        }
    };
    let r = 1e-14;
    (
        f(epsilon + eta) * (1.0 - r),
        (f(epsilon - eta) * (1.0 + r)).min(1.0),
    )
}

// ---------------------------------------------------------------------------------------------
// Finite atom lists.

/// Atoms (loss, ln P-mass) of a pair, sorted by decreasing loss, plus an upper bound on the
/// P-mass left out (charged as if at +∞).
#[derive(Clone, Debug)]
pub struct Atoms {
    pub atoms: Vec<(f64, f64)>,
    pub left_out: f64,
    /// Largest |loss| (for the rounding allowance).
    scale: f64,
    /// Relative error charged to the masses.
    pub rel: f64,
}

impl Atoms {
    pub fn new(mut atoms: Vec<(f64, f64)>, left_out: f64) -> Self {
        atoms.sort_by(|a, b| b.0.total_cmp(&a.0));
        let scale = atoms
            .iter()
            .map(|a| a.0.abs())
            .filter(|x| x.is_finite())
            .fold(0.0, f64::max);
        Atoms {
            atoms,
            left_out,
            scale,
            rel: 1e-12,
        }
    }

    fn raw(&self, epsilon: f64) -> f64 {
        let mut sum = Sum::default();
        for &(loss, ln_p) in &self.atoms {
            if loss <= epsilon {
                break;
            }
            let factor = if loss == f64::INFINITY {
                1.0
            } else {
                one_minus_exp(epsilon - loss)
            };
            sum.add(ln_p.exp() * factor);
        }
        sum.value()
    }

    /// Bracket on δ(ε): losses and masses carry a few ulps each (charged as a shift of ε by
    /// 16 ulps of the largest loss and 1e-12 relative).
    pub fn delta(&self, epsilon: f64) -> (f64, f64) {
        let eta = 16.0 * U * (epsilon.abs() + self.scale) + 1e-300;
        let r = self.rel;
        (
            (self.raw(epsilon + eta) * (1.0 - r)).max(0.0),
            (self.raw(epsilon - eta) * (1.0 + r) + self.left_out).min(1.0),
        )
    }
}

/// One run of discrete Laplace noise (scale b, a = 1/b) with integer shift Δ: the REMOVE pair
/// P = μ(·+Δ), Q = μ, μ(x) = tanh(a/2)e^{−a|x|}. Losses a(|x| − |x+Δ|), constant outside
/// [−Δ, 0]. None if Δ is too large to list.
pub fn discrete_laplace_atoms(scale: f64, shift: u64) -> Option<Atoms> {
    if shift > 2_000_000 {
        return None;
    }
    let a = 1.0 / scale;
    let d = shift as i64;
    // ln μ(y) = ln tanh(a/2) − a|y|; ln tanh(a/2) = ln(−expm1(−a)) − ln1p(e^{−a}).
    let ln_c = (-(-a).exp_m1()).ln() - (-a).exp().ln_1p();
    let ln_mu = |y: i64| ln_c - a * y.unsigned_abs() as f64;
    let loss = |x: i64| a * (x.unsigned_abs() as f64 - (x + d).unsigned_abs() as f64);
    let mut atoms = Vec::with_capacity(shift as usize + 3);
    for x in -d..=0 {
        atoms.push((loss(x), ln_mu(x + d)));
    }
    // x ≤ −Δ−1: loss aΔ, P = P(Y ≤ −1) = e^{−a}/(1 + e^{−a}).
    atoms.push((a * d as f64, -a - (-a).exp().ln_1p()));
    // x ≥ 1: loss −aΔ, P = P(Y ≥ Δ+1) = e^{−a(Δ+1)}/(1 + e^{−a}).
    atoms.push((-a * d as f64, -a * (d + 1) as f64 - (-a).exp().ln_1p()));
    Some(Atoms::new(atoms, 0.0))
}

/// One run of discrete Gaussian noise (σ) with integer shift Δ: P = μ(·+Δ), Q = μ,
/// μ(x) = e^{−x²/(2σ²)}/Z, loss −Δ(2x + Δ)/(2σ²). Atoms cover |x + Δ| ≤ T = 40σ + 2; the mass
/// beyond is bounded by 2·e^{−T²/(2σ²)}(1 + σ²/T)/Z (first term plus the Gaussian integral).
/// None when that is more than `max_atoms` atoms.
pub fn discrete_gaussian_atoms(sigma: f64, shift: u64, max_atoms: usize) -> Option<Atoms> {
    let reach = (40.0 * sigma).ceil() + 2.0;
    if 2.0 * reach + 1.0 > max_atoms as f64 {
        return None;
    }
    let t = reach as i64;
    let s2 = sigma * sigma;
    // Z by direct summation, smallest terms first.
    let mut weights: Vec<f64> = (-t - 5..=t + 5)
        .map(|x| (-((x as f64).powi(2)) / (2.0 * s2)).exp())
        .collect();
    weights.sort_by(f64::total_cmp);
    let mut z = Sum::default();
    weights.iter().for_each(|&w| z.add(w));
    let tail = |t: f64| 2.0 * (-(t * t) / (2.0 * s2)).exp() * (1.0 + s2 / t);
    let ln_z = z.value().ln();
    let d = shift as i64;
    let df = shift as f64;
    let atoms: Vec<(f64, f64)> = (-t..=t)
        .map(|y| {
            let x = y - d;
            let loss = -df * (2.0 * x as f64 + df) / (2.0 * s2);
            (loss, -((y as f64).powi(2)) / (2.0 * s2) - ln_z)
        })
        .collect();
    let left_out = tail(t as f64 + 1.0) / z.value();
    Some(Atoms::new(atoms, left_out))
}

/// The k-fold composition of a finite pair (p, q) in the REMOVE order p‖q, as atoms, by
/// enumerating multinomial count vectors. None if there are more than `max` vectors.
pub fn pmf_pair_atoms(p: &[f64], q: &[f64], k: u64, max: usize) -> Option<Atoms> {
    let losses: Vec<f64> = p
        .iter()
        .zip(q)
        .map(|(&a, &b)| {
            if a == 0.0 {
                f64::NEG_INFINITY
            } else if b == 0.0 {
                f64::INFINITY
            } else {
                a.ln() - b.ln()
            }
        })
        .collect();
    composed_atoms(p, &losses, k, max)
}

/// The Poisson-sampled pair of a finite base pair (P, Q) at rate `rate`, composed k times,
/// as atoms: REMOVE `((1 − rate)Q + rate·P, Q)` (or, with `add`, the swapped order). The
/// losses are taken as `ln1p(rate·expm1(ln P − ln Q))`, accurate for any rate: the log of
/// the rounded mixture would lose them below an ulp of 1 (rate 1e-12). None if there are
/// more than `max` count vectors.
pub fn sampled_pair_atoms(
    p: &[f64],
    q: &[f64],
    rate: f64,
    add: bool,
    k: u64,
    max: usize,
) -> Option<Atoms> {
    let mut masses = Vec::new();
    let mut losses = Vec::new();
    for (&a, &b) in p.iter().zip(q) {
        let mixed = (1.0 - rate) * b + rate * a;
        let loss = if b == 0.0 {
            f64::INFINITY
        } else if a == 0.0 {
            (-rate).ln_1p()
        } else {
            (rate * (a.ln() - b.ln()).exp_m1()).ln_1p()
        };
        let (mass, loss) = if add { (b, -loss) } else { (mixed, loss) };
        if mass > 0.0 {
            masses.push(mass);
            losses.push(loss);
        }
    }
    composed_atoms(&masses, &losses, k, max)
}

/// The k-fold composition of a finite PLD given as outcome P-masses and their losses, by
/// enumerating multinomial count vectors. None if there are more than `max` vectors.
fn composed_atoms(p: &[f64], losses: &[f64], k: u64, max: usize) -> Option<Atoms> {
    let n = p.len();
    // Number of count vectors C(k + n − 1, n − 1).
    let mut vectors = 1.0f64;
    for i in 1..n {
        vectors *= (k as f64 + i as f64) / i as f64;
    }
    if vectors > max as f64 {
        return None;
    }
    let lnfact = |x: u64| libm::lgamma(x as f64 + 1.0);
    let mut atoms = Vec::new();
    let mut counts = vec![0u64; n];
    fn rec(i: usize, left: u64, counts: &mut Vec<u64>, visit: &mut dyn FnMut(&[u64])) {
        if i + 1 == counts.len() {
            counts[i] = left;
            visit(counts);
            return;
        }
        for c in 0..=left {
            counts[i] = c;
            rec(i + 1, left - c, counts, visit);
        }
    }
    rec(0, k, &mut counts, &mut |c: &[u64]| {
        if c.iter().zip(p).any(|(&ci, &pi)| ci > 0 && pi == 0.0) {
            return; // P-mass 0
        }
        let mut ln_prob = lnfact(k);
        let mut loss = 0.0;
        for i in 0..n {
            if c[i] > 0 {
                ln_prob += c[i] as f64 * p[i].ln() - lnfact(c[i]);
                loss += c[i] as f64 * losses[i];
            }
        }
        atoms.push((loss, ln_prob));
    });
    // lgamma of numbers up to ~1e5 carries ~1e-15·ln k! absolute error: charge it.
    let mut result = Atoms::new(atoms, 0.0);
    result.rel = 1e-12 + 4e-14 * (1.0 + lnfact(k));
    // A composed loss Σ cᵢℓᵢ carries a few ulps of each term, up to k·max|ℓᵢ| in all even
    // where the terms cancel: charge the shift of ε on that scale.
    let largest = losses
        .iter()
        .filter(|l| l.is_finite())
        .fold(0.0f64, |m, l| m.max(l.abs()));
    result.scale = result.scale.max(k as f64 * largest);
    Some(result)
}

// ---------------------------------------------------------------------------------------------
// Combinators.

/// δ(ε) of Poisson subsampling at rate q of a symmetric pair with δ₀ = `base` (any real ε),
/// the worse of REMOVE and ADD.
pub fn subsampled(q: f64, epsilon: f64, base: &dyn Fn(f64) -> (f64, f64)) -> (f64, f64) {
    if q >= 1.0 {
        return base(epsilon);
    }
    let ln_q = q.ln();
    let eta = 1e-14 * (1.0 + epsilon.abs() + ln_q.abs());
    let r = 1e-14;
    // REMOVE.
    let ln_keep = (-q).ln_1p(); // ln(1 − q)
    let remove = if epsilon <= ln_keep {
        let d = -epsilon.exp_m1();
        (d * (1.0 - r), d * (1.0 + r))
    } else {
        let x = if epsilon > 0.0 {
            epsilon - ln_q + (-(1.0 - q) * (-epsilon).exp()).ln_1p()
        } else {
            (epsilon.exp_m1() / q).ln_1p()
        };
        let (lo, _) = base(x + eta);
        let (_, hi) = base(x - eta);
        (q * lo * (1.0 - r), q * hi * (1.0 + r))
    };
    // ADD: 1 − (1−q)e^ε = −expm1(ε + ln(1 − q)).
    let shifted = epsilon + ln_keep;
    let add = if shifted >= 0.0 {
        (0.0, 0.0)
    } else {
        let weight = -shifted.exp_m1();
        let x = epsilon + ln_q - weight.ln();
        let (lo, _) = base(x + eta);
        let (_, hi) = base(x - eta);
        (weight * lo * (1.0 - r), weight * hi * (1.0 + r))
    };
    (
        remove.0.max(add.0).clamp(0.0, 1.0),
        remove.1.max(add.1).min(1.0),
    )
}

// ---------------------------------------------------------------------------------------------
// Work budget.

thread_local! {
    static DEADLINE: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// Set (or clear) this thread's deadline for oracle work: past it, inversions stop refining
/// and return the (looser, still rigorous) bracket they hold, and callers skip further
/// sources. Without a deadline every oracle runs to its full accuracy.
pub fn set_deadline(deadline: Option<Instant>) {
    DEADLINE.with(|d| d.set(deadline));
}

/// Whether this thread's deadline has passed.
pub fn past_deadline() -> bool {
    DEADLINE
        .with(|d| d.get())
        .is_some_and(|t| Instant::now() >= t)
}

/// Relative width at which the inversions stop.
const INVERT_RELATIVE: f64 = 1e-12;
/// Largest ε the inversions look at.
const INVERT_LIMIT: f64 = 1e18;

/// The next point to try in (a, b): the midpoint, or the geometric mean when the bracket
/// spans more than a factor 4 (so tiny ε are reached in few steps); None when done.
fn next_point(a: f64, b: f64) -> Option<f64> {
    if b - a <= INVERT_RELATIVE * b {
        return None;
    }
    let mid = if a == 0.0 && b > 1e-300 {
        b * 2f64.powi(-16)
    } else if a > 0.0 && b > 4.0 * a {
        (a.sqrt() * b.sqrt()).clamp(a, b)
    } else {
        0.5 * (a + b)
    };
    if mid <= a || mid >= b {
        None
    } else {
        Some(mid)
    }
}

/// A point where the δ upper bound `hi` is at most `target` (so the true ε(δ) is at most it),
/// as small as the bisection finds within the budget: an upper bound on ε(δ) (+∞ if none).
pub fn invert_upper(hi: &dyn Fn(f64) -> f64, target: f64) -> f64 {
    if hi(0.0) <= target {
        return 0.0;
    }
    // hi(a) > target ≥ hi(b).
    let (mut a, mut b) = (0.0, 1.0);
    while hi(b) > target {
        a = b;
        b *= 2.0;
        if b > INVERT_LIMIT || past_deadline() {
            return f64::INFINITY;
        }
    }
    for _ in 0..400 {
        let Some(mid) = next_point(a, b) else { break };
        if past_deadline() {
            break;
        }
        if hi(mid) <= target {
            b = mid;
        } else {
            a = mid;
        }
    }
    b
}

/// A point where the δ lower bound `lo` still exceeds `target` (so the true ε(δ) is above it),
/// as large as the bisection finds within the budget: a lower bound on ε(δ).
pub fn invert_lower(lo: &dyn Fn(f64) -> f64, target: f64) -> f64 {
    if lo(0.0) <= target {
        return 0.0;
    }
    // lo(a) > target ≥ lo(b).
    let (mut a, mut b) = (0.0, 1.0);
    while lo(b) > target {
        a = b;
        b *= 2.0;
        if b > INVERT_LIMIT || past_deadline() {
            return a; // the true ε exceeds a (perhaps infinite)
        }
    }
    for _ in 0..400 {
        let Some(mid) = next_point(a, b) else { break };
        if past_deadline() {
            break;
        }
        if lo(mid) > target {
            a = mid;
        } else {
            b = mid;
        }
    }
    a
}

/// Bracket on ε(δ) = inf{ε ≥ 0: δ(ε) ≤ target} from a δ bracket: the low end is a point where
/// the δ lower bound still exceeds the target (so the true ε is above it), the high end a point
/// where the δ upper bound is at most the target. Either end may be +∞.
pub fn invert(delta: &dyn Fn(f64) -> (f64, f64), target: f64) -> (f64, f64) {
    (
        invert_lower(&|e| delta(e).0, target),
        invert_upper(&|e| delta(e).1, target),
    )
}

// ---------------------------------------------------------------------------------------------
// Continuous location families by quadrature.

/// Lower bounds on δ(ε) between a noise law P (density `h`) and its shift Q (density
/// `h(· − shift)`), by quadrature.
///
/// δ(ε) = sup_S P(S) − e^ε·Q(S) over sets S, and any S gives a lower bound. Integrals are
/// 20-point Gauss–Legendre in the variable u with z = c·sinh(u) (c = 1 + shift) over cells of
/// width `2·u_max/cells` on [−u_max, u_max], which covers polynomial tails (dz = c·cosh(u)du
/// makes the integrand decay like e^{−d·|u|} for a tail |z|^{−(d+1)}), split at z = 0 and
/// z = shift (the cusps of Laplace-type densities, with cells halving in width towards them)
/// and z = shift/2, so that each cell's integrand is smooth. S is the union of the cells whose integral of h − e^ε·h(· − shift) is
/// positive, with each boundary between a kept and a dropped cell moved to the zero of the
/// integrand found by bisection inside the two cells (so S is the positive set up to how
/// finely the cells detect sign changes). Leaving out the rest of the line only lowers the
/// value, which is fine for a lower bound. The quadrature of these smooth pieces is accurate
/// far beyond the allowance charged: a relative 1e-9 of P(S) + e^ε·Q(S) (checked against the
/// Laplace and Gaussian closed forms and the Cauchy arctan form in tests/soundness.rs).
pub struct ShiftedDensity {
    density: Box<dyn Fn(f64) -> f64 + Send + Sync>,
    shift: f64,
    /// Cell ends in u.
    ends: Vec<f64>,
    /// Per cell: (∫ h, ∫ h(· − shift)) over it.
    cells: Vec<(f64, f64)>,
}

impl ShiftedDensity {
    pub fn new(
        density: impl Fn(f64) -> f64 + Send + Sync + 'static,
        shift: f64,
        u_max: f64,
        cells: usize,
    ) -> Self {
        let c = 1.0 + shift;
        let width = 2.0 * u_max / cells as f64;
        let mut ends: Vec<f64> = (0..=cells).map(|i| -u_max + i as f64 * width).collect();
        let cusps = [0.0, (shift / c).asinh()];
        ends.extend(cusps);
        ends.push((0.5 * shift / c).asinh());
        // Geometric refinement towards each cusp (a scale mixture of Laplace laws, like
        // Laplace-log-normal, has spikes there as narrow as its smallest scales).
        for u0 in cusps {
            for k in 1..=40 {
                let d = width * 0.5f64.powi(k);
                ends.extend([u0 - d, u0 + d]);
            }
        }
        ends.sort_by(f64::total_cmp);
        ends.dedup();
        let mut out = ShiftedDensity {
            density: Box::new(density),
            shift,
            ends,
            cells: Vec::new(),
        };
        out.cells = out
            .ends
            .windows(2)
            .map(|ab| out.integrals(ab[0], ab[1]))
            .collect();
        out
    }

    /// (∫ h, ∫ h(· − shift)) over u ∈ [a, b] (one Gauss–Legendre panel).
    fn integrals(&self, a: f64, b: f64) -> (f64, f64) {
        let c = 1.0 + self.shift;
        let (mid, half) = (0.5 * (a + b), 0.5 * (b - a));
        let (mut p, mut q) = (Sum::default(), Sum::default());
        for &(x, w) in gauss_legendre() {
            let u = mid + half * x;
            let (z, jac) = (c * u.sinh(), c * u.cosh());
            p.add(w * half * jac * (self.density)(z));
            q.add(w * half * jac * (self.density)(z - self.shift));
        }
        (p.value(), q.value())
    }

    /// ∫ h over [−u_max, u_max] (1 up to the cut tails: a check of the density).
    pub fn mass(&self) -> f64 {
        self.cells.iter().map(|c| c.0).sum()
    }

    /// (lower bound on δ(ε), 1): only a lower-truth source.
    pub fn delta(&self, epsilon: f64) -> (f64, f64) {
        let scale = epsilon.exp();
        let c = 1.0 + self.shift;
        let f = |u: f64| {
            let z = c * u.sinh();
            (self.density)(z) - scale * (self.density)(z - self.shift)
        };
        let kept: Vec<bool> = self
            .cells
            .iter()
            .map(|&(p, q)| p - scale * q > 0.0)
            .collect();
        let (mut value, mut size) = (Sum::default(), 0.0);
        let mut add = |(p, q): (f64, f64)| {
            value.add(p - scale * q);
            size += p + scale * q;
        };
        let n = self.cells.len();
        let mut i = 0;
        let mut previous_right = f64::NEG_INFINITY;
        while i < n {
            if !kept[i] {
                i += 1;
                continue;
            }
            // A run of kept cells [i, j): its ends move to the zero of the integrand in the
            // two cells around each, when one is bracketed there (never back over the run
            // before, so the pieces of S stay disjoint).
            let mut j = i;
            while j < n && kept[j] {
                j += 1;
            }
            let mut left = self.ends[i];
            if i > 0 {
                if let Some(z) = bisect(&f, self.ends[i - 1], self.ends[i + 1]) {
                    left = z;
                }
            }
            let left = left.max(previous_right);
            let mut right = self.ends[j];
            if j < n {
                if let Some(z) = bisect(&f, self.ends[j - 1], self.ends[j + 1]) {
                    right = z;
                }
            }
            if left < right {
                // ∫ over [left, right], cut at the cell ends inside (whole cells from the
                // table).
                let mut cuts = vec![left];
                cuts.extend(self.ends.iter().copied().filter(|&e| e > left && e < right));
                cuts.push(right);
                for ab in cuts.windows(2) {
                    let k = self.ends.partition_point(|&e| e < ab[0]);
                    if k + 1 < self.ends.len() && self.ends[k] == ab[0] && self.ends[k + 1] == ab[1]
                    {
                        add(self.cells[k]);
                    } else {
                        add(self.integrals(ab[0], ab[1]));
                    }
                }
                previous_right = right;
            }
            i = j;
        }
        ((value.value() - 1e-9 * size).max(0.0), 1.0)
    }
}

/// A zero of f in [a, b] when f changes sign there, by 60 bisections.
fn bisect(f: &impl Fn(f64) -> f64, mut a: f64, mut b: f64) -> Option<f64> {
    let (fa, fb) = (f(a), f(b));
    if fa == 0.0 {
        return Some(a);
    }
    if fb == 0.0 {
        return Some(b);
    }
    if (fa > 0.0) == (fb > 0.0) {
        return None;
    }
    for _ in 0..60 {
        let m = 0.5 * (a + b);
        if (f(m) > 0.0) == (fa > 0.0) {
            a = m;
        } else {
            b = m;
        }
    }
    Some(0.5 * (a + b))
}

/// Density of Student's t law with `d` degrees of freedom.
pub fn student_t_density(d: f64) -> impl Fn(f64) -> f64 {
    let log_norm = libm::lgamma((d + 1.0) / 2.0)
        - libm::lgamma(d / 2.0)
        - 0.5 * (d * std::f64::consts::PI).ln();
    move |z: f64| (log_norm - (d + 1.0) / 2.0 * (z * z / d).ln_1p()).exp()
}

/// Density of the Laplace-log-normal law Z = X·e^{σY} (X standard Laplace, Y standard
/// normal): h(z) = E_Y[e^{−σY}/2 · exp(−|z|e^{−σY})], by the trapezoid rule in y on
/// [−σ − 9, σ + 9] with 50 points per unit (the Gaussian weight makes the rule converge
/// geometrically; the cut tails weigh below 1e-18 relative to the peak).
pub fn laplace_log_normal_density(sigma: f64) -> impl Fn(f64) -> f64 {
    let (lo, hi) = (-sigma - 9.0, sigma + 9.0);
    let n = ((hi - lo) * 50.0).ceil() as usize;
    let step = (hi - lo) / n as f64;
    let ys: Vec<(f64, f64)> = (0..=n)
        .map(|i| {
            let y = lo + i as f64 * step;
            let end = if i == 0 || i == n { 0.5 } else { 1.0 };
            // ln of the weight φ(y)·e^{−σy}/2 and the rate e^{−σy}.
            (
                (end * step).ln() - 0.5 * y * y - LN_SQRT_2PI - sigma * y - std::f64::consts::LN_2,
                (-sigma * y).exp(),
            )
        })
        .collect();
    move |z: f64| {
        let a = z.abs();
        ys.iter().map(|&(lw, rate)| (lw - a * rate).exp()).sum()
    }
}
