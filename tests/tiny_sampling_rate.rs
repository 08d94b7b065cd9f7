//! One step of the Poisson-subsampled Gaussian at sampling rates down to 1e-15: the bracket
//! must contain the exact δ(ε) and ε(δ), in relative terms however small δ is.
//!
//! At a small rate q every privacy loss lies within about q of 0, so the bin masses P_I and
//! Q_I the discretizations work with agree to about q, and δ ~ q is their difference. Computed
//! as a difference of masses ~0.5, it carried an absolute rounding of ~1e-16, a relative
//! error of 1e-16/q: upper bounds fell below the truth and lower bounds rose above it (the
//! four reproducers below). These tests compare the accountant's brackets with an exact δ
//! computed here, independently of the library.
//!
//! # The exact δ (computed in this file)
//! REMOVE pair P = (1−q)Q₀ + qP₀, Q = Q₀ with (P₀, Q₀) = (N(−1, σ²), N(0, σ²)), μ = 1/σ:
//! ```text
//! δ_R(ε) = q·δ₀(β),   β = ln(1 + (e^ε − 1)/q)                      (ε ≥ 0 > ln(1−q))
//! δ_A(ε) = sup_S Q(S) − e^ε P(S) = c·δ₀(γ),  c = 1 − e^ε(1−q),  γ = ε + ln q − ln c   (c > 0)
//!        = 0                                                       (c ≤ 0)
//! δ₀(β)  = Φ(a) − e^β Φ(a − μ) = ∫_0^∞ φ(a − u)·(1 − e^{−μu}) du,   a = μ/2 − β/μ
//! ```
//! (δ_A: `(1 − e^ε(1−q))Q₀(S) − e^ε q P₀(S)`, and the Gaussian pair is symmetric. The integral
//! form of δ₀ follows from `e^β φ(a − μ) = φ(a)` and has a non-negative integrand, so it does
//! not cancel; it is evaluated by adaptive Gauss–Legendre quadrature in log space.) The exact
//! δ is `max(δ_R, δ_A)`, and ε(δ) is checked through it: a valid upper bound ε_U has
//! `δ(ε_U) ≤ δ`, a valid lower bound ε_L > 0 has `δ(ε_L) ≥ δ`.
//!
//! The evaluator is checked against closed forms where they do not cancel and against values
//! computed with mpmath 1.3.0 at 60 significant digits (listed with the regression tests).

use pld_accountant::{
    Accountant, AccountantOptions, Bound, CompositionSpec, Gaussian, PoissonSubsampled,
    PrivacyLossDistribution, Symmetry,
};
use std::f64::consts::PI;
use std::sync::OnceLock;

/// Relative accuracy of the exact δ computed here (in ln δ).
const TRUTH_LOG_TOLERANCE: f64 = 1e-11;

// ---------------------------------------------------------------------------------------
// The exact δ.

/// ln φ(z).
fn log_pdf(z: f64) -> f64 {
    -0.5 * z * z - 0.5 * (2.0 * PI).ln()
}

/// Gauss–Legendre nodes and weights on [−1, 1] (Newton on P_n).
fn gauss_legendre() -> &'static [(f64, f64)] {
    static RULE: OnceLock<Vec<(f64, f64)>> = OnceLock::new();
    RULE.get_or_init(|| {
        let n = 20;
        (0..n)
            .map(|i| {
                let mut x = (PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
                let mut derivative = 0.0;
                for _ in 0..100 {
                    let (mut p0, mut p1) = (1.0, x);
                    for k in 2..=n {
                        let p2 = ((2 * k - 1) as f64 * x * p1 - (k - 1) as f64 * p0) / k as f64;
                        p0 = p1;
                        p1 = p2;
                    }
                    derivative = n as f64 * (x * p1 - p0) / (x * x - 1.0);
                    let dx = p1 / derivative;
                    x -= dx;
                    if dx.abs() < 1e-16 {
                        break;
                    }
                }
                (x, 2.0 / ((1.0 - x * x) * derivative * derivative))
            })
            .collect()
    })
}

fn gl(f: &dyn Fn(f64) -> f64, a: f64, b: f64) -> f64 {
    let (mid, half) = (0.5 * (a + b), 0.5 * (b - a));
    half * gauss_legendre()
        .iter()
        .map(|&(x, w)| w * f(mid + half * x))
        .sum::<f64>()
}

/// Adaptive Gauss–Legendre: `whole` is the rule on [a, b]; splits until the halves agree with
/// it to `tol` (absolute, the same for every piece: the 20-point rule converges so fast that
/// the pieces' errors are far below it once they agree) or to rounding.
fn adaptive(f: &dyn Fn(f64) -> f64, a: f64, b: f64, whole: f64, tol: f64, depth: u32) -> f64 {
    let m = 0.5 * (a + b);
    let (left, right) = (gl(f, a, m), gl(f, m, b));
    let sum = left + right;
    if (sum - whole).abs() <= tol.max(1e-15 * sum.abs()) || depth > 30 {
        return sum;
    }
    adaptive(f, a, m, left, tol, depth + 1) + adaptive(f, m, b, right, tol, depth + 1)
}

/// ∫ f over [lo, hi], split geometrically from `lo` at `scale` so every feature is resolved.
fn integrate(f: &dyn Fn(f64) -> f64, lo: f64, hi: f64, scale: f64) -> f64 {
    let mut points = vec![lo];
    let mut width = scale;
    while points[points.len() - 1] + width < hi {
        points.push(points[points.len() - 1] + width);
        width *= 2.0;
    }
    points.push(hi);
    let pieces: Vec<f64> = points.windows(2).map(|w| gl(f, w[0], w[1])).collect();
    let rough: f64 = pieces.iter().sum();
    let tol = 1e-16 * rough.abs();
    points
        .windows(2)
        .zip(&pieces)
        .map(|(w, &piece)| adaptive(f, w[0], w[1], piece, tol, 0))
        .sum()
}

/// ln δ₀(β) of the Gaussian pair with parameter μ.
fn log_delta0(mu: f64, beta: f64) -> f64 {
    if beta == f64::NEG_INFINITY {
        return 0.0;
    }
    let a = 0.5 * mu - beta / mu;
    if a <= 0.0 {
        // δ₀ = φ(a)·∫_0^∞ e^{au − u²/2}(1 − e^{−μu}) du; the integrand is below e^{−60} of its
        // largest value beyond U.
        let upper = a + (a * a + 120.0).sqrt();
        let f = |u: f64| (a * u - 0.5 * u * u).exp() * -(-mu * u).exp_m1();
        let scale = 1e-3 * (1.0 / (1.0 - a)).min(1.0 / mu);
        log_pdf(a) + integrate(&f, 0.0, upper, scale).ln()
    } else {
        // δ₀ = ∫ φ(a − u)(1 − e^{−μu}) du, the density centred at u = a.
        let f = |u: f64| log_pdf(a - u).exp() * -(-mu * u).exp_m1();
        let lo = (a - 40.0).max(0.0);
        let scale = 1e-3 * (1.0 / mu).min(1.0);
        let left = if lo < a {
            // [lo, a] split from a downwards (mirror so the fine pieces sit at lo = 0 side).
            integrate(&f, lo, a, scale)
        } else {
            0.0
        };
        (left + integrate(&f, a, a + 40.0, scale)).ln()
    }
}

/// `ε + ln(1 − q)` without cancellation when ε ≈ q.
fn epsilon_plus_log_keep_out(epsilon: f64, q: f64) -> f64 {
    // q + ln(1 − q) = −Σ_{k≥2} q^k/k.
    let h = if q < 1e-3 {
        let mut sum = 0.0;
        let mut power = q;
        for k in 2..40 {
            power *= q;
            sum -= power / k as f64;
        }
        sum
    } else {
        q + (-q).ln_1p()
    };
    (epsilon - q) + h
}

/// ln of the exact δ(ε) of one step (the maximum over both directions), ε ≥ 0.
fn log_exact_delta(sigma: f64, q: f64, epsilon: f64) -> f64 {
    let mu = 1.0 / sigma;
    if epsilon == f64::INFINITY {
        return f64::NEG_INFINITY;
    }
    // REMOVE.
    let beta = (epsilon.exp_m1() / q).ln_1p();
    let remove = q.ln() + log_delta0(mu, beta);
    // ADD.
    let s = epsilon_plus_log_keep_out(epsilon, q);
    let add = if s >= 0.0 {
        f64::NEG_INFINITY
    } else {
        let c = -s.exp_m1();
        let gamma = epsilon + q.ln() - c.ln();
        c.ln() + log_delta0(mu, gamma)
    };
    remove.max(add)
}

/// A quick upper bound on `log_exact_delta` far in the tail, where the quadrature is slow
/// (ε in the thousands: upper ends past the grid's loss range come from a closed form): the
/// ADD part is 0 once ε ≥ −ln(1 − q), and δ₀(μ, β) = Φ(a) − e^β·Φ(a − μ) ≤ Φ(a) ≤ φ(a)/|a|
/// for a = μ/2 − β/μ < 0 (Mills' ratio). +∞ where it does not apply.
fn log_delta_tail_bound(sigma: f64, q: f64, epsilon: f64) -> f64 {
    if epsilon_plus_log_keep_out(epsilon, q) < 0.0 {
        return f64::INFINITY;
    }
    let mu = 1.0 / sigma;
    // β = ln(1 + (e^ε − 1)/q), without overflow for large ε.
    let beta = if epsilon > 30.0 {
        epsilon - q.ln() + ((q - 1.0) * (-epsilon).exp()).ln_1p()
    } else {
        (epsilon.exp_m1() / q).ln_1p()
    };
    let a = 0.5 * mu - beta / mu;
    if a.is_nan() || a >= -1.0 {
        return f64::INFINITY;
    }
    q.ln() + log_pdf(a) - (-a).ln()
}

// ---------------------------------------------------------------------------------------
// The accountant.

fn accountant(sigma: f64, q: f64) -> Accountant {
    let spec = CompositionSpec::from_json_str(&format!(
        r#"{{"events":[{{"mechanism":"gaussian","sigma":{sigma:e},"sampling":{{"poisson":{q:e}}}}}]}}"#
    ))
    .expect("valid spec");
    Accountant::new(&spec, AccountantOptions::default()).expect("valid options")
}

/// Checks `lower ≤ exact ≤ upper` for δ(ε); returns a description of the failure, if any.
fn check_delta(acc: &Accountant, sigma: f64, q: f64, epsilon: f64) -> Option<String> {
    let answer = acc.delta_for_epsilon(epsilon).expect("delta_for_epsilon");
    let (upper, lower) = (answer.delta.upper, answer.delta.lower);
    let exact = log_exact_delta(sigma, q, epsilon);
    let min_log = f64::MIN_POSITIVE.ln();
    let upper_ok = exact < min_log || upper.ln() >= exact - TRUTH_LOG_TOLERANCE;
    let lower_ok = lower <= 0.0 || lower.ln() <= exact + TRUTH_LOG_TOLERANCE;
    (!(upper_ok && lower_ok)).then(|| {
        format!(
            "σ={sigma:e} q={q:e} ε={epsilon:e}: δ bracket [{lower:e}, {upper:e}], exact {:e} (ln {exact})",
            exact.exp()
        )
    })
}

/// Checks `lower ≤ exact ≤ upper` for ε(δ) through the exact δ(ε).
fn check_epsilon(acc: &Accountant, sigma: f64, q: f64, delta: f64) -> Option<String> {
    let answer = acc.epsilon_for_delta(delta).expect("epsilon_for_delta");
    let (upper, lower) = (answer.epsilon.upper, answer.epsilon.lower);
    let log_delta = delta.ln();
    let upper_ok = upper == f64::INFINITY
        || log_delta_tail_bound(sigma, q, upper) <= log_delta + TRUTH_LOG_TOLERANCE
        || log_exact_delta(sigma, q, upper) <= log_delta + TRUTH_LOG_TOLERANCE;
    let lower_ok =
        lower <= 0.0 || log_exact_delta(sigma, q, lower) >= log_delta - TRUTH_LOG_TOLERANCE;
    (!(upper_ok && lower_ok)).then(|| {
        format!(
            "σ={sigma:e} q={q:e} δ={delta:e}: ε bracket [{lower:e}, {upper:e}], exact δ there \
             [{:e}, {:e}]",
            log_exact_delta(sigma, q, lower.max(0.0)).exp(),
            log_exact_delta(sigma, q, upper).exp()
        )
    })
}

const RATES: [f64; 7] = [1e-15, 1e-12, 1e-9, 1e-6, 1e-3, 0.1, 0.5];
const SIGMAS: [f64; 7] = [0.01, 0.5, 1.0, 3.0, 100.0, 1e6, 1e9];
const EPSILONS: [f64; 6] = [0.0, 1e-12, 1e-6, 0.01, 1.0, 10.0];
/// δ for the ε(δ) queries, down to 1e-300 (the smallest default truncation mass: bin masses
/// there are near the underflow threshold, which once put the upper bound below the truth and
/// the lower one above it).
const DELTAS: [f64; 8] = [1e-3, 1e-8, 1e-15, 1e-30, 1e-60, 1e-150, 1e-250, 1e-300];

#[test]
fn delta_bracket_contains_the_exact_delta() {
    let mut failures = Vec::new();
    for &q in &RATES {
        for &sigma in &SIGMAS {
            let acc = accountant(sigma, q);
            for &epsilon in &EPSILONS {
                failures.extend(check_delta(&acc, sigma, q, epsilon));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn epsilon_bracket_contains_the_exact_epsilon() {
    let mut failures = Vec::new();
    for &q in &RATES {
        for &sigma in &SIGMAS {
            let acc = accountant(sigma, q);
            // Meaningful δ: below δ(0) (above it ε = 0).
            let at_zero = log_exact_delta(sigma, q, 0.0);
            for &delta in DELTAS.iter().filter(|&&d| d.ln() < at_zero) {
                failures.extend(check_epsilon(&acc, sigma, q, delta));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------
// The evaluator itself.

#[test]
fn exact_delta_matches_closed_forms_where_they_do_not_cancel() {
    // δ₀(0) = 2Φ(μ/2) − 1 = erf(μ/(2√2)); erf does not cancel for small arguments.
    for mu in [1e-9, 1e-6, 1e-3, 0.1, 1.0, 3.0] {
        let closed = libm::erf(mu / (2.0 * 2f64.sqrt()));
        let ours = log_delta0(mu, 0.0).exp();
        assert!(
            (ours / closed - 1.0).abs() < 1e-12,
            "μ={mu}: {ours:e} vs {closed:e}"
        );
    }
    // Large μ, β = 0: the direct form 2Φ(μ/2) − 1 is accurate there.
    for mu in [5.0, 20.0, 100.0] {
        let closed = 1.0 - libm::erfc(mu / (2.0 * 2f64.sqrt()));
        let ours = log_delta0(mu, 0.0).exp();
        assert!((ours / closed - 1.0).abs() < 1e-12, "μ={mu}");
    }
}

/// Values of `max(δ_R, δ_A)` from mpmath 1.3.0 (`mp.dps = 60`, 17 digits kept), evaluated as
/// `q*(ncdf(a) - exp(beta)*ncdf(a - mu))` with `beta = log(1 + expm1(eps)/q)` (and the ADD
/// formula of the module docs), every input converted exactly from its f64.
const MPMATH: [(f64, f64, f64, f64); 4] = [
    (1.0, 1e-12, 0.0, 3.829_249_225_480_262e-13),
    (1e6, 1e-12, 0.0, 3.989_422_804_014_160_5e-19),
    (1e9, 1e-4, 0.0, 3.989_422_804_014_327e-14),
    (3.0, 1e-14, 1e-12, 1.602_736_041_973_477_4e-58),
];

#[test]
fn exact_delta_matches_mpmath() {
    for (sigma, q, epsilon, reference) in MPMATH {
        let ours = log_exact_delta(sigma, q, epsilon).exp();
        assert!(
            (ours / reference - 1.0).abs() < 1e-11,
            "σ={sigma} q={q} ε={epsilon}: {ours:e} vs {reference:e}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// The four reproducers (upper below the truth, upper 0, upper 9e-4 relative too low, lower
// above the truth), each with its exact δ from `MPMATH`.

fn assert_bracket(sigma: f64, q: f64, epsilon: f64, exact: f64) {
    let answer = accountant(sigma, q).delta_for_epsilon(epsilon).unwrap();
    assert!(
        answer.delta.lower <= exact && exact <= answer.delta.upper,
        "σ={sigma} q={q} ε={epsilon}: [{:e}, {:e}] does not contain {exact:e}",
        answer.delta.lower,
        answer.delta.upper
    );
}

#[test]
fn regression_sigma_1_rate_1e_12_upper_not_below_exact() {
    // Was 3.829159e-13 < exact 3.829249e-13.
    assert_bracket(1.0, 1e-12, 0.0, MPMATH[0].3);
}

#[test]
fn regression_sigma_1e6_rate_1e_12_upper_not_zero() {
    // Was 0 (exact 3.99e-19).
    assert_bracket(1e6, 1e-12, 0.0, MPMATH[1].3);
}

#[test]
fn regression_sigma_1e9_rate_1e_4_upper_not_too_low() {
    // Was 9e-4 relative below the exact value.
    assert_bracket(1e9, 1e-4, 0.0, MPMATH[2].3);
}

#[test]
fn regression_sigma_3_rate_1e_14_lower_not_above_exact() {
    // Was 6.1e-57 > exact 1.6e-58 (ε = 1e-12; the ADD direction has δ = 0 there).
    assert_bracket(3.0, 1e-14, 1e-12, MPMATH[3].3);
}

/// `pld epsilon --sigma 1 --sampling-rate 0.01 --delta 1e-5 --steps 1 --grid-step 5e-324`
/// panicked (index out of bounds in the lower-bound discretization) and `--grid-step 1e-19`
/// aborted allocating 8e17 bytes. The accountant now refuses such a step up front (it is
/// below `MIN_GRID_STEP`), and the discretization itself reports a grid too large.
#[test]
fn regression_grid_step_far_too_fine_is_an_error_not_a_panic() {
    let spec = CompositionSpec::from_json_str(
        r#"{"events":[{"mechanism":"gaussian","sigma":1,"sampling":{"poisson":0.01}}]}"#,
    )
    .unwrap();
    let mechanism = PoissonSubsampled::new(Gaussian::new(1.0, 1.0).unwrap(), 0.01).unwrap();
    for step in [5e-324, 1e-19] {
        let options = AccountantOptions {
            grid_step: Some(step),
            ..AccountantOptions::default()
        };
        let refused = Accountant::new(&spec, options);
        assert!(
            matches!(refused, Err(pld_accountant::Error::InvalidParameter { ref name, .. }) if name == "grid_step"),
            "step {step:e}: {refused:?}"
        );
        for bound in [Bound::Upper, Bound::Lower] {
            let result = PrivacyLossDistribution::from_mechanism(
                &mechanism,
                Symmetry::Asymmetric,
                step,
                1e-14,
                bound,
            );
            assert!(
                matches!(result, Err(pld_accountant::Error::GridTooLarge { .. })),
                "step {step:e}, {bound:?}: {result:?}"
            );
        }
    }
}
