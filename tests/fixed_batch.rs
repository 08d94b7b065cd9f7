//! Sampling without replacement (a fixed batch of m out of n records, `γ = m/n`) under
//! replace-one neighbouring, for additive noise with per-record bound Δ.
//!
//! # The worst case these tests hold the accountant to
//!
//! Fix the neighbouring datasets D and D′ that differ in record i. A uniform batch of m
//! records contains i with probability γ; when it does not, its m-th slot holds some *other*
//! record. So the outputs are, conditionally on the rest of the batch, a mixture of a common
//! part and a part that differs — but the part that "does not differ" still carries another
//! record's contribution. Take every other record's contribution to be `+v` (`‖v‖ = Δ`) and
//! record i to be `−v` in D and `+v` in D′. Then, shifting by the common sum,
//!
//! ```text
//! M(D′) = μ                               (the batch sum is the same whichever batch is drawn)
//! M(D)  = (1−γ) μ + γ μ(· + 2Δ)           (i in the batch: the sum moves by 2Δ)
//! ```
//!
//! which is Poisson subsampling at rate γ of noise with shift 2Δ, REMOVE direction; swapping
//! D and D′ gives the ADD direction. These pairs are *attained*, so no valid upper bound may be
//! below their δ(ε) (the assertions marked "soundness" below rely on nothing else). They are
//! also the worst case: (γP + (1−γ)Q, Q) with (P, Q) the unsampled replace-one pair dominates
//! subsampling without replacement under replace-one (Zhu, Dong & Wang, "Optimal accounting of
//! differential privacy via characteristic function", AISTATS 2022; autodp's
//! `AmplificationBySampling_pld`, subset-sampling branch), and for pure DP their largest loss
//! is Balle–Barthe–Gaboardi's `ln(1 + γ(e^{ε0} − 1))`, `ε0 = 2Δ/b`, which the lecture's
//! Scenario 1 uses. The assertions marked "tightness" rely on this.
//!
//! The symmetric pair `(1−γ)μ + γμ(·+Δ)` vs `(1−γ)μ + γμ(·−Δ)` (dp_accounting's REPLACE
//! adjacency with *Poisson* sampling) is **not** a worst case for fixed batches: it ignores the
//! record that fills the slot, and its δ(ε) is below the attained one
//! (`symmetric_mixture_pair_is_below_an_attained_fixed_batch_pair`).
//!
//! # Steps of trust
//! 1. γ = 1: the unsampled Gaussian with shift 2Δ, exact closed form.
//! 2. One Laplace step: δ(ε) by quadrature of the hockey-stick integral, computed here.
//! 3. Gaussian, many steps: the attained pair through the (separately tested) Poisson PLD.
//! 4. Cross-check against the RDP bound of Wang, Balle & Kasiviswanathan.
//! 5. The lecture's Scenario 1 (Laplace noise, pure DP by amplification + basic composition).
//!
//! The tolerances are defined at the top of this file (not in `support/`, which this file was
//! written without touching).

use pld_accountant::comparison::rdp_epsilon;
use pld_accountant::mechanism::analytic_gaussian;
use pld_accountant::{Accountant, AccountantOptions, Bracket, CompositionSpec};
use serde_json::json;

/// Relative error of the quadrature reference δ: 16-point Gauss–Legendre on pieces of width
/// b/8 integrates each exponential piece to ~1e-15; the roots of `p − e^ε q` are bisected to
/// one ulp. 1e-10 leaves five orders of magnitude.
const QUADRATURE_RELATIVE: f64 = 1e-10;

/// Absolute error of the quadrature reference δ, per unit of `max(1, e^ε)`: cancellation in
/// `p − e^ε q` (a few ulps of densities ≤ 1/(2b), integrated over ~120 b) plus the tails
/// beyond ±60 b (mass `e^{−60}` ≈ 1e-26).
const QUADRATURE_ABS: f64 = 1e-14;

/// How close the PLD δ upper bound must come to the exact δ: `upper − truth ≤
/// DELTA_ACCURACY_RELATIVE·truth + DELTA_ACCURACY_ABS`. The accountant is asked for a bracket
/// of relative width [`REQUESTED_DELTA_WIDTH`], half of this, so meeting it leaves margin.
const DELTA_ACCURACY_RELATIVE: f64 = 1e-4;
/// See [`DELTA_ACCURACY_RELATIVE`].
const DELTA_ACCURACY_ABS: f64 = 1e-12;
/// Relative δ-bracket width requested from the accountant in the quadrature test.
const REQUESTED_DELTA_WIDTH: f64 = 5e-5;

/// ε slack when the ε bracket at δ = truth(ε) must contain ε: the reference δ is only accurate
/// to [`QUADRATURE_RELATIVE`], which moves the ε it corresponds to by ~1e-10/|d ln δ/dε|.
const EPSILON_FROM_REFERENCE_ABS: f64 = 1e-8;

/// How far the PLD ε upper bound may be above the exact Gaussian ε: twice the default
/// tolerance (`max(1e-3·ε, 1e-4)`), in case refinement stops at the grid-size limit.
const GAUSSIAN_EPSILON_RELATIVE: f64 = 2e-3;
/// See [`GAUSSIAN_EPSILON_RELATIVE`].
const GAUSSIAN_EPSILON_ABS: f64 = 2e-4;

/// Relative slack between two valid bounds computed by different formulas in f64.
const ROUNDING_RELATIVE: f64 = 1e-9;

/// Largest δ upper bound accepted where the true δ is exactly 0 (the composition is pure DP
/// at that ε): what discretization (losses rounded up by one grid step) and truncation (mass
/// moved to +∞, ≤ 1e-20 per truncation by default) can leave.
const PURE_DP_DELTA_ABS: f64 = 1e-12;

/// ε at δ = 1e-10 of the Scenario 1 test's composition (n = 10,000, m = 100, T = 100, B1 = 1,
/// lecture σ), from an independent numerical PLD of the attained pairs (REMOVE and ADD):
/// numpy, privacy buckets on a 1e-5-nat grid rounded up (upper) and down (lower), FFT
/// self-composition with exponential tilting (θ = 200) for the tail. The bracket is ≈ T·h wide.
const SCENARIO_1_EPSILON_AT_1E_10: Bracket = Bracket {
    upper: 0.383184,
    lower: 0.382688,
};

fn fixed_batch(mechanism: serde_json::Value, m: u64, n: u64, count: u64) -> CompositionSpec {
    let mut event = mechanism;
    event["sampling"] = json!({"fixed_batch": {"batch_size": m, "dataset_size": n}});
    event["count"] = json!(count);
    CompositionSpec::from_json_value(&json!({"neighbouring": "replace", "events": [event]}))
        .expect("test spec is valid")
}

fn gaussian_fixed_batch(
    sigma: f64,
    sensitivity: f64,
    m: u64,
    n: u64,
    count: u64,
) -> CompositionSpec {
    fixed_batch(
        json!({"mechanism": "gaussian", "sigma": sigma, "sensitivity": sensitivity}),
        m,
        n,
        count,
    )
}

fn laplace_fixed_batch(
    scale: f64,
    sensitivity: f64,
    m: u64,
    n: u64,
    count: u64,
) -> CompositionSpec {
    fixed_batch(
        json!({"mechanism": "laplace", "scale": scale, "sensitivity": sensitivity}),
        m,
        n,
        count,
    )
}

fn accountant(spec: &CompositionSpec) -> Accountant {
    accountant_with(spec, AccountantOptions::default())
}

fn accountant_with(spec: &CompositionSpec, options: AccountantOptions) -> Accountant {
    Accountant::new(spec, options).unwrap_or_else(|e| panic!("accountant for {spec:?}: {e}"))
}

/// A bracket whose lower end is above its upper end cannot contain the truth.
fn assert_ordered(bracket: &Bracket, context: &str) {
    assert!(
        bracket.lower <= bracket.upper,
        "inverted bracket [{}, {}]: {context}",
        bracket.lower,
        bracket.upper
    );
}

/// `a ≤ b` up to rounding.
fn at_most(a: f64, b: f64) -> bool {
    a <= b + ROUNDING_RELATIVE * b.abs().max(1.0)
}

// ---------------------------------------------------------------------------------------------
// Quadrature of the hockey-stick divergence of two Laplace mixtures.

/// A mixture of Laplace densities with a common scale: `Σ wᵢ e^{−|x−cᵢ|/b}/(2b)`.
#[derive(Debug, Clone)]
struct LaplaceMixture {
    scale: f64,
    /// (weight, centre); weights sum to 1.
    components: Vec<(f64, f64)>,
}

impl LaplaceMixture {
    fn new(scale: f64, components: &[(f64, f64)]) -> Self {
        LaplaceMixture {
            scale,
            components: components.iter().copied().filter(|c| c.0 > 0.0).collect(),
        }
    }

    fn density(&self, x: f64) -> f64 {
        let b = self.scale;
        self.components
            .iter()
            .map(|&(w, c)| w * (-(x - c).abs() / b).exp() / (2.0 * b))
            .sum()
    }
}

/// Nodes and weights of n-point Gauss–Legendre quadrature on [−1, 1] (Newton's method on the
/// Legendre polynomial from the Chebyshev-like initial guess).
fn gauss_legendre(n: usize) -> Vec<(f64, f64)> {
    // (P_n(x), P_n'(x)) by the three-term recurrence.
    let legendre = |x: f64| {
        let (mut p0, mut p1) = (1.0, x);
        for k in 2..=n {
            let k = k as f64;
            let p2 = ((2.0 * k - 1.0) * x * p1 - (k - 1.0) * p0) / k;
            p0 = p1;
            p1 = p2;
        }
        (p1, n as f64 * (x * p1 - p0) / (x * x - 1.0))
    };
    (0..n)
        .map(|i| {
            let mut x = (std::f64::consts::PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
            for _ in 0..100 {
                let (p, dp) = legendre(x);
                let step = p / dp;
                x -= step;
                if step.abs() < 1e-16 {
                    break;
                }
            }
            let (_, dp) = legendre(x);
            (x, 2.0 / ((1.0 - x * x) * dp * dp))
        })
        .collect()
}

/// `δ(ε) = ∫ (p(x) − e^ε q(x))₊ dx` by composite Gauss–Legendre quadrature.
///
/// The line is cut at every component centre (the densities' kinks) and at every root of
/// `p − e^ε q` (the kinks of the positive part), found by scanning 8 sub-steps per piece of
/// width b/8 for sign changes and bisecting; between cuts the integrand is a smooth sum of
/// exponentials of rate 1/b. The range is the centres ± 60 b (the mass beyond is < 1e-26).
fn hockey_stick(p: &LaplaceMixture, q: &LaplaceMixture, epsilon: f64) -> f64 {
    assert_eq!(p.scale, q.scale, "one common scale");
    let b = p.scale;
    let factor = epsilon.exp();
    let g = |x: f64| p.density(x) - factor * q.density(x);
    let mut cuts: Vec<f64> = p
        .components
        .iter()
        .chain(&q.components)
        .map(|c| c.1)
        .collect();
    let low = cuts.iter().copied().fold(f64::INFINITY, f64::min) - 60.0 * b;
    let high = cuts.iter().copied().fold(f64::NEG_INFINITY, f64::max) + 60.0 * b;
    cuts.push(low);
    cuts.push(high);
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    let rule = gauss_legendre(16);
    let integrate = |a: f64, c: f64| -> f64 {
        let (mid, half) = ((a + c) / 2.0, (c - a) / 2.0);
        half * rule
            .iter()
            .map(|&(x, w)| w * g(mid + half * x))
            .sum::<f64>()
    };
    let root = |mut a: f64, mut c: f64| -> f64 {
        let positive_at_a = g(a) > 0.0;
        for _ in 0..200 {
            let mid = 0.5 * (a + c);
            if mid <= a || mid >= c {
                break;
            }
            if (g(mid) > 0.0) == positive_at_a {
                a = mid;
            } else {
                c = mid;
            }
        }
        0.5 * (a + c)
    };
    let mut total = 0.0;
    for window in cuts.windows(2) {
        let (start, end) = (window[0], window[1]);
        let pieces = ((end - start) / (b / 8.0)).ceil().max(1.0) as usize;
        let width = (end - start) / pieces as f64;
        for k in 0..pieces {
            let u = start + k as f64 * width;
            let v = if k + 1 == pieces { end } else { u + width };
            // Cut the piece at the sign changes of g.
            let mut points = vec![u];
            let scan = 8;
            for j in 0..scan {
                let a = u + (v - u) * j as f64 / scan as f64;
                let c = u + (v - u) * (j + 1) as f64 / scan as f64;
                if (g(a) > 0.0) != (g(c) > 0.0) {
                    points.push(root(a, c));
                }
            }
            points.push(v);
            for pair in points.windows(2) {
                let (a, c) = (pair[0], pair[1]);
                if c > a && g(0.5 * (a + c)) > 0.0 {
                    total += integrate(a, c).max(0.0);
                }
            }
        }
    }
    total.min(1.0)
}

/// The two attained pairs of one fixed-batch Laplace step (module docs): REMOVE
/// `((1−γ)L(0) + γL(−2Δ), L(0))` and ADD `(L(0), (1−γ)L(0) + γL(2Δ))`.
fn attained_laplace_pairs(
    scale: f64,
    sensitivity: f64,
    gamma: f64,
) -> [(LaplaceMixture, LaplaceMixture); 2] {
    let shift = 2.0 * sensitivity;
    let plain = LaplaceMixture::new(scale, &[(1.0, 0.0)]);
    [
        (
            LaplaceMixture::new(scale, &[(1.0 - gamma, 0.0), (gamma, -shift)]),
            plain.clone(),
        ),
        (
            plain,
            LaplaceMixture::new(scale, &[(1.0 - gamma, 0.0), (gamma, shift)]),
        ),
    ]
}

/// Exact δ(ε) of one fixed-batch Laplace step: the worse of the two attained pairs.
fn laplace_fixed_batch_delta(scale: f64, sensitivity: f64, gamma: f64, epsilon: f64) -> f64 {
    attained_laplace_pairs(scale, sensitivity, gamma)
        .iter()
        .map(|(p, q)| hockey_stick(p, q, epsilon))
        .fold(0.0, f64::max)
}

/// Largest privacy loss of one fixed-batch Laplace step (REMOVE side, x ≤ −2Δ):
/// `ln(1 + γ(e^{ε0} − 1))`, `ε0 = 2Δ/b` (Balle–Barthe–Gaboardi's amplified ε).
fn laplace_fixed_batch_max_loss(scale: f64, sensitivity: f64, gamma: f64) -> f64 {
    (gamma * (2.0 * sensitivity / scale).exp_m1()).ln_1p()
}

#[test]
fn quadrature_reproduces_the_closed_form_of_a_monotone_pair() {
    // The test's own reference, checked first: for the REMOVE pair the loss is non-increasing
    // in x, so δ(ε) = F_P(x*) − e^ε F_Q(x*) at the x* where the loss equals ε.
    let (b, sensitivity, gamma) = (1.0, 1.0, 0.1);
    let shift = 2.0 * sensitivity;
    let cdf = |x: f64, c: f64| {
        if x < c {
            0.5 * ((x - c) / b).exp()
        } else {
            1.0 - 0.5 * (-(x - c) / b).exp()
        }
    };
    let [(p, q), _] = attained_laplace_pairs(b, sensitivity, gamma);
    for epsilon in [0.0, 0.1, 0.5, 1.0, 1.5] {
        // The loss is constant for x ≤ −2Δ (its largest value) and for x ≥ 0 (its smallest,
        // negative), and decreasing in between: find x* there by bisection.
        let loss = |x: f64| (p.density(x) / q.density(x)).ln();
        let (mut lo, mut hi) = (-shift, 0.0);
        if loss(lo) <= epsilon {
            // ε at or above the largest loss: δ = 0.
            assert!(hockey_stick(&p, &q, epsilon) <= QUADRATURE_ABS);
            continue;
        }
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if loss(mid) > epsilon {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let x = 0.5 * (lo + hi);
        let closed =
            (1.0 - gamma) * cdf(x, 0.0) + gamma * cdf(x, -shift) - epsilon.exp() * cdf(x, 0.0);
        let quadrature = hockey_stick(&p, &q, epsilon);
        assert!(
            (quadrature - closed).abs() <= QUADRATURE_RELATIVE * closed + QUADRATURE_ABS,
            "ε = {epsilon}: quadrature {quadrature:e}, closed form {closed:e}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Step 1: γ = 1 is the unsampled Gaussian with shift 2Δ.

#[test]
fn full_batch_gaussian_is_the_unsampled_gaussian_with_twice_the_sensitivity() {
    let sensitivity = 1.0;
    let n = 100;
    for (sigma, steps) in [(1.0, 1), (1.0, 10), (2.0, 10), (4.0, 100), (8.0, 1000)] {
        let mu = 2.0 * sensitivity / sigma * (steps as f64).sqrt();
        let accountant = accountant(&gaussian_fixed_batch(sigma, sensitivity, n, n, steps));
        for delta in [1e-5, 1e-10] {
            let exact = analytic_gaussian::epsilon_for_delta(mu, delta);
            let pld = accountant
                .epsilon_for_delta(delta)
                .unwrap_or_else(|e| panic!("σ = {sigma}, T = {steps}, δ = {delta}: {e}"))
                .epsilon;
            let context = format!(
                "σ = {sigma}, T = {steps} (μ = {mu:.4}), δ = {delta:e}: PLD [{}, {}], exact [{}, {}]",
                pld.lower, pld.upper, exact.lower, exact.upper
            );
            assert_ordered(&pld, &context);
            assert!(
                at_most(pld.lower, exact.upper),
                "lower bound above the truth: {context}"
            );
            assert!(
                at_most(exact.lower, pld.upper),
                "upper bound below the truth: {context}"
            );
            assert!(
                pld.upper - exact.upper
                    <= (GAUSSIAN_EPSILON_RELATIVE * exact.upper).max(GAUSSIAN_EPSILON_ABS),
                "upper bound too loose: {context}"
            );
        }
        for epsilon in [0.5, 2.0] {
            let exact = analytic_gaussian::delta_for_epsilon(mu, epsilon);
            let pld = accountant
                .delta_for_epsilon(epsilon)
                .unwrap_or_else(|e| panic!("σ = {sigma}, T = {steps}, ε = {epsilon}: {e}"))
                .delta;
            let context = format!(
                "σ = {sigma}, T = {steps} (μ = {mu:.4}), ε = {epsilon}: PLD δ [{:e}, {:e}], exact [{:e}, {:e}]",
                pld.lower, pld.upper, exact.lower, exact.upper
            );
            assert!(
                pld.lower <= exact.upper,
                "lower bound above the truth: {context}"
            );
            assert!(
                pld.upper >= exact.lower,
                "upper bound below the truth: {context}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Step 2: one Laplace step against quadrature.

#[test]
fn one_laplace_step_matches_the_quadrature_of_the_attained_pairs() {
    let scale = 1.0;
    let n = 100;
    let options = AccountantOptions {
        tolerance: pld_accountant::Tolerance {
            relative_delta: REQUESTED_DELTA_WIDTH,
            ..Default::default()
        },
        ..Default::default()
    };
    for sensitivity in [0.25, 1.0] {
        for m in [1, 10, 50, 100] {
            let gamma = m as f64 / n as f64;
            let accountant =
                accountant_with(&laplace_fixed_batch(scale, sensitivity, m, n, 1), options);
            let max_loss = laplace_fixed_batch_max_loss(scale, sensitivity, gamma);
            for fraction in [0.0, 0.3, 0.7, 1.2] {
                let epsilon = fraction * max_loss;
                let truth = laplace_fixed_batch_delta(scale, sensitivity, gamma, epsilon);
                let reference_error = QUADRATURE_RELATIVE * truth + QUADRATURE_ABS * epsilon.exp();
                let answer = accountant.delta_for_epsilon(epsilon).unwrap_or_else(|e| {
                    panic!("Δ = {sensitivity}, γ = {gamma}, ε = {epsilon}: {e}")
                });
                let Bracket { upper, lower } = answer.delta;
                let context = format!(
                    "b = {scale}, Δ = {sensitivity}, γ = {gamma}, ε = {epsilon:.6} \
                     ({fraction} × max loss {max_loss:.6}): PLD δ [{lower:e}, {upper:e}], \
                     quadrature {truth:e}"
                );
                // Soundness: the attained pairs' δ is a lower bound on the truth.
                assert!(
                    upper >= truth - reference_error,
                    "upper bound below the truth: {context}"
                );
                // Tightness (the attained pairs are the worst case).
                assert!(
                    lower <= truth + reference_error,
                    "lower bound above the truth: {context}"
                );
                if fraction > 1.0 {
                    assert!(truth == 0.0, "pure DP beyond the largest loss: {context}");
                    assert!(upper <= PURE_DP_DELTA_ABS, "{context}");
                } else {
                    assert!(
                        upper - truth <= DELTA_ACCURACY_RELATIVE * truth + DELTA_ACCURACY_ABS,
                        "upper bound too loose: {context}"
                    );
                }
                // The same point read the other way: ε at δ = truth(ε) must bracket ε.
                if truth > 0.0 && truth < 1.0 && epsilon > 0.0 {
                    let eps = accountant
                        .epsilon_for_delta(truth)
                        .unwrap_or_else(|e| panic!("{context}: ε for δ: {e}"))
                        .epsilon;
                    assert!(
                        eps.lower <= epsilon + EPSILON_FROM_REFERENCE_ABS
                            && epsilon - EPSILON_FROM_REFERENCE_ABS <= eps.upper,
                        "ε bracket [{}, {}] misses ε: {context}",
                        eps.lower,
                        eps.upper
                    );
                }
            }
        }
    }
}

/// The symmetric mixture pair of dp_accounting's REPLACE adjacency (Poisson sampling) has a
/// smaller largest loss than a pair of neighbouring datasets attains under fixed batches, so
/// an accountant using it would certify pure DP where it does not hold.
#[test]
fn symmetric_mixture_pair_is_below_an_attained_fixed_batch_pair() {
    let (scale, sensitivity, m, n) = (1.0, 1.0, 10, 100);
    let gamma = m as f64 / n as f64;
    let symmetric_p = LaplaceMixture::new(scale, &[(1.0 - gamma, 0.0), (gamma, -sensitivity)]);
    let symmetric_q = LaplaceMixture::new(scale, &[(1.0 - gamma, 0.0), (gamma, sensitivity)]);
    // Largest loss of the symmetric pair (x ≤ −Δ): ln[(1−γ+γe^{Δ/b}) / (1−γ+γe^{−Δ/b})].
    let symmetric_max_loss = (gamma * (sensitivity / scale).exp_m1()).ln_1p()
        - (gamma * (-sensitivity / scale).exp_m1()).ln_1p();
    assert!(hockey_stick(&symmetric_p, &symmetric_q, symmetric_max_loss) <= QUADRATURE_ABS);
    let attained = laplace_fixed_batch_delta(scale, sensitivity, gamma, symmetric_max_loss);
    assert!(
        attained > 1e-3,
        "the attained pair must have δ > 0 at the symmetric pair's largest loss \
         {symmetric_max_loss:.6} (got {attained:e})"
    );
    let upper = accountant(&laplace_fixed_batch(scale, sensitivity, m, n, 1))
        .delta_for_epsilon(symmetric_max_loss)
        .expect("δ query")
        .delta
        .upper;
    assert!(
        upper >= attained * (1.0 - QUADRATURE_RELATIVE),
        "the accountant certifies (ε = {symmetric_max_loss:.6}, δ = {upper:e}) for one fixed-batch \
         Laplace step (b = {scale}, Δ = {sensitivity}, γ = {gamma}), but the neighbouring datasets \
         'every other record +Δ, record i −Δ vs +Δ' have δ = {attained:e} there: the \
         symmetric (1−γ)μ + γμ(·±Δ) pair is not a worst case for fixed batches"
    );
}

// ---------------------------------------------------------------------------------------------
// Step 3: Gaussian fixed batches against the attained pair, computed by the Poisson PLD.

#[test]
fn gaussian_fixed_batch_equals_poisson_sampling_with_twice_the_sensitivity() {
    let (sensitivity, n) = (1.0, 1000);
    let delta = 1e-5;
    for sigma in [1.0, 2.0] {
        for m in [10, 100] {
            for steps in [10, 1000] {
                let gamma = m as f64 / n as f64;
                let fixed = accountant(&gaussian_fixed_batch(sigma, sensitivity, m, n, steps))
                    .epsilon_for_delta(delta)
                    .unwrap_or_else(|e| panic!("σ = {sigma}, γ = {gamma}, T = {steps}: {e}"))
                    .epsilon;
                let attained_spec = CompositionSpec::dp_sgd(sigma, gamma, steps, 2.0 * sensitivity)
                    .expect("valid DP-SGD parameters");
                let attained = accountant(&attained_spec)
                    .epsilon_for_delta(delta)
                    .expect("Poisson PLD")
                    .epsilon;
                let context = format!(
                    "σ = {sigma}, Δ = {sensitivity}, γ = {gamma}, T = {steps}, δ = {delta:e}: \
                     fixed batch [{}, {}], Poisson rate γ with shift 2Δ [{}, {}]",
                    fixed.lower, fixed.upper, attained.lower, attained.upper
                );
                println!("{context}");
                assert_ordered(&fixed, &context);
                // Soundness: datasets attaining the Poisson-2Δ pair exist.
                assert!(
                    at_most(attained.lower, fixed.upper),
                    "upper bound below an attained pair: {context}"
                );
                // Tightness: that pair is the worst case.
                assert!(
                    at_most(fixed.lower, attained.upper),
                    "lower bound above the worst case: {context}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Step 4: against the RDP bound for sampling without replacement (WBK19).

#[test]
fn gaussian_fixed_batch_is_never_above_and_mostly_well_below_rdp() {
    let (sensitivity, n) = (1.0, 1000);
    let delta = 1e-5;
    let mut cases = 0;
    let mut upper_below_rdp = 0;
    println!("σ      γ      T     PLD lower   PLD upper   RDP (WBK)   upper/RDP");
    for sigma in [0.8, 1.0, 2.0] {
        for m in [1, 10, 100] {
            for steps in [1, 10, 100, 1000] {
                let gamma = m as f64 / n as f64;
                let spec = gaussian_fixed_batch(sigma, sensitivity, m, n, steps);
                let (rdp, how) = rdp_epsilon(&spec, delta).unwrap_or_else(|e| {
                    panic!("RDP applies to fixed-batch Gaussians: {}", e.reason)
                });
                let pld = accountant(&spec)
                    .epsilon_for_delta(delta)
                    .unwrap_or_else(|e| panic!("σ = {sigma}, γ = {gamma}, T = {steps}: {e}"))
                    .epsilon;
                println!(
                    "{sigma:<6} {gamma:<6} {steps:<5} {:<11.6} {:<11.6} {rdp:<11.6} {:.3}",
                    pld.lower,
                    pld.upper,
                    pld.upper / rdp
                );
                assert_ordered(
                    &pld,
                    &format!("σ = {sigma}, γ = {gamma}, T = {steps}, δ = {delta:e}"),
                );
                // A guaranteed lower bound cannot exceed a guaranteed upper bound.
                assert!(
                    at_most(pld.lower, rdp),
                    "σ = {sigma}, γ = {gamma}, T = {steps}, δ = {delta:e}: PLD lower bound {} \
                     above the RDP upper bound {rdp} ({how})",
                    pld.lower
                );
                cases += 1;
                if pld.upper <= rdp {
                    upper_below_rdp += 1;
                }
            }
        }
    }
    // The PLD is tight; RDP is not (its conversion alone loses ~ln(1/δ)/(α−1)).
    assert!(
        upper_below_rdp * 10 >= cases * 9,
        "PLD upper bound below RDP in only {upper_below_rdp} of {cases} cases"
    );
}

// ---------------------------------------------------------------------------------------------
// Step 5: the lecture's Scenario 1.

/// Scenario 1 of the lecture "Differential Privacy" (S. Yıldırım, Trustworthy AI, 2024):
/// Laplace noise σ on the batch-average gradient (per-example L1 norm ≤ B1/2), fixed batches
/// of m out of n, T steps; σ is chosen so that amplification (BBG18) and basic composition
/// give exactly ε:
///
/// ```text
/// σ = B1 / (m ln[1 + (e^{ε/T} − 1) n/m]),   ε = T ln[1 + (m/n)(e^{B1/(mσ)} − 1)]
/// ```
///
/// In the crate's terms: scale b = σ, per-record sensitivity Δ = B1/(2m).
#[test]
fn scenario_1_lecture_pure_dp_is_confirmed_and_approximate_dp_is_far_smaller() {
    let (n, m, steps, b1, target) = (10_000_u64, 100_u64, 100_u64, 1.0, 1.0);
    let (nf, mf, tf) = (n as f64, m as f64, steps as f64);
    let gamma = mf / nf;
    let sigma = b1 / (mf * ((target / tf).exp_m1() * nf / mf).ln_1p());
    let epsilon0 = b1 / (mf * sigma);
    let lecture = tf * (gamma * epsilon0.exp_m1()).ln_1p();
    assert!(
        (lecture - target).abs() < 1e-12,
        "lecture ε recomputed: {lecture}"
    );

    let spec = laplace_fixed_batch(sigma, b1 / (2.0 * mf), m, n, steps);
    let accountant = accountant(&spec);

    // Approximate DP: far below the pure-DP ε.
    let at_small_delta = accountant
        .epsilon_for_delta(1e-10)
        .expect("ε query")
        .epsilon;
    let context = format!(
        "Scenario 1 (n = {n}, m = {m}, T = {steps}): σ = {sigma:.6}, lecture ε = {lecture:.6}; \
         PLD ε(1e-10) ∈ [{:.6}, {:.6}], independent reference [{}, {}]",
        at_small_delta.lower,
        at_small_delta.upper,
        SCENARIO_1_EPSILON_AT_1E_10.lower,
        SCENARIO_1_EPSILON_AT_1E_10.upper
    );
    println!("{context}");
    assert_ordered(&at_small_delta, &context);
    assert!(
        at_small_delta.lower <= SCENARIO_1_EPSILON_AT_1E_10.upper
            && SCENARIO_1_EPSILON_AT_1E_10.lower <= at_small_delta.upper,
        "PLD bracket disjoint from the independent reference: {context}"
    );
    assert!(
        at_small_delta.upper < lecture,
        "PLD ε at δ = 1e-10 ({}) not below the lecture's {lecture}",
        at_small_delta.upper
    );

    // Pure DP at the lecture's ε: the largest loss of the composition is exactly T·ε1 = ε, so
    // δ(ε) = 0.
    let at_lecture = accountant
        .delta_for_epsilon(lecture)
        .expect("δ query")
        .delta;
    println!(
        "  PLD δ(ε = {lecture:.6}) ∈ [{:e}, {:e}]",
        at_lecture.lower, at_lecture.upper
    );
    assert_ordered(&at_lecture, "δ at the lecture's ε");
    assert!(
        at_lecture.lower <= 0.0,
        "δ lower bound {} above the true 0",
        at_lecture.lower
    );
    assert!(
        at_lecture.upper <= PURE_DP_DELTA_ABS,
        "δ upper bound {:e} at the lecture's ε, where the true δ is 0",
        at_lecture.upper
    );

    // ...and the lecture's ε cannot be lowered for pure DP: neighbouring datasets attain every
    // step's largest loss (module docs), so δ(0.9 ε) > 0 (≈ 7e-46 by the independent PLD).
    let below = accountant
        .delta_for_epsilon(0.9 * lecture)
        .expect("δ query")
        .delta;
    println!(
        "  PLD δ(ε = {:.6}) ∈ [{:e}, {:e}]",
        0.9 * lecture,
        below.lower,
        below.upper
    );
    assert_ordered(&below, "δ at 0.9 × the lecture's ε");
    assert!(
        below.upper > 0.0,
        "δ upper bound 0 at ε = {}: pure DP claimed below the attained largest loss {lecture}",
        0.9 * lecture
    );
}
