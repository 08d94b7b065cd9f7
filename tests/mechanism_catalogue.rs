//! The mechanism catalogue against exact values (closed forms and exact binomial sums).
//!
//! Every reference here is computed independently of the library's discretization: closed
//! forms (Laplace), exact binomial/multinomial sums (randomized response, and discrete Laplace
//! with sensitivity 1, which is binary RR), the exact optimal composition theorem (`eps_delta`,
//! KOV), direct sums over the integers (discrete Gaussian), and brute-force enumeration
//! (`pmf_pair`). At the default tolerance the accountant must return `lower ≤ exact ≤ upper`
//! with `upper − exact ≤ 1e-4·exact` (ε and δ queries; δ also within 1e-9 absolute).

mod support;

use pld_accountant::analytic::optimal_composition;
use pld_accountant::{
    Accountant, AccountantOptions, Bracket, CompositionSpec, Laplace, MonotonePrivacyLoss,
    PoissonSubsampled,
};

/// Relative gap allowed between the upper bound and the exact value (the issue's target).
const UPPER_RELATIVE: f64 = 1e-4;
/// Absolute gap allowed on δ queries.
const DELTA_ABSOLUTE: f64 = 1e-9;
/// Rounding slack on exact references computed in f64 (sums of up to ~10⁶ positive terms).
const EXACT_SLACK: f64 = 1e-11;

fn accountant(spec: &str) -> Accountant {
    let spec = CompositionSpec::from_json_str(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    Accountant::new(&spec, AccountantOptions::default()).unwrap()
}

/// `lower ≤ exact ≤ upper` and `upper − exact ≤ relative·exact + absolute`.
fn check(what: &str, bracket: Bracket, exact: f64, absolute: f64) {
    let slack = EXACT_SLACK * exact.abs() + 1e-15;
    assert!(
        bracket.lower <= exact + slack && exact <= bracket.upper + slack,
        "{what}: exact {exact:e} outside [{:e}, {:e}]",
        bracket.lower,
        bracket.upper
    );
    assert!(
        bracket.upper - exact <= UPPER_RELATIVE * exact + absolute + slack,
        "{what}: upper {:e} too far above exact {exact:e}",
        bracket.upper
    );
}

fn check_delta(acc: &Accountant, what: &str, epsilon: f64, exact: f64) {
    let answer = acc.delta_for_epsilon(epsilon).unwrap();
    check(
        &format!("{what}, δ({epsilon})"),
        answer.delta,
        exact,
        DELTA_ABSOLUTE,
    );
}

fn check_epsilon(acc: &Accountant, what: &str, delta: f64, exact: f64) {
    let answer = acc.epsilon_for_delta(delta).unwrap();
    check(
        &format!("{what}, ε({delta:e})"),
        answer.epsilon,
        exact,
        1e-12,
    );
}

/// The smallest ε ≥ 0 with `delta(ε) ≤ target`, by bisection on a non-increasing function.
fn invert(delta: impl Fn(f64) -> f64, target: f64, high: f64) -> f64 {
    if delta(0.0) <= target {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0, high);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if delta(mid) <= target {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// ln n! for n ≤ len.
fn log_factorials(len: usize) -> Vec<f64> {
    let mut out = vec![0.0; len + 1];
    for n in 1..=len {
        out[n] = out[n - 1] + (n as f64).ln();
    }
    out
}

/// The exact PLD of k-fold k-ary randomized response (replace-one pair), as probabilities of
/// the losses `dε₀`, `d = a − b ∈ [−k, k]` for a truthful, b swapped and c other answers:
/// a multinomial sum, grouped by d.
fn randomized_response_pld(epsilon0: f64, categories: u64, k: usize) -> Vec<f64> {
    let kk = categories as f64;
    let denominator = epsilon0.exp() + kk - 1.0;
    let (log_t, log_o) = (epsilon0 - denominator.ln(), -denominator.ln());
    let log_r = (kk - 2.0).ln() - denominator.ln();
    let lf = log_factorials(k);
    let mut by_difference = vec![0.0; 2 * k + 1];
    for a in 0..=k {
        for b in 0..=(k - a) {
            let c = k - a - b;
            if c > 0 && categories == 2 {
                continue;
            }
            let log_prob = lf[k] - lf[a] - lf[b] - lf[c]
                + a as f64 * log_t
                + b as f64 * log_o
                + if c > 0 { c as f64 * log_r } else { 0.0 };
            by_difference[k + a - b] += log_prob.exp();
        }
    }
    by_difference
}

/// δ(ε) of the PLD of [`randomized_response_pld`].
fn randomized_response_delta(pld: &[f64], epsilon0: f64, epsilon: f64) -> f64 {
    let k = (pld.len() - 1) / 2;
    let mut terms: Vec<f64> = pld
        .iter()
        .enumerate()
        .map(|(i, _)| (i as f64 - k as f64) * epsilon0)
        .zip(pld)
        .filter(|(loss, _)| *loss > epsilon)
        .map(|(loss, p)| p * -(epsilon - loss).exp_m1())
        .collect();
    terms.sort_by(f64::total_cmp);
    terms.iter().sum()
}

#[test]
fn laplace_matches_its_closed_form() {
    for (scale, sensitivity, relation, shift) in [
        (1.0, 1.0, "add_remove", 1.0),
        (0.5, 1.0, "add_remove", 1.0),
        (3.0, 2.0, "add_remove", 2.0),
        (2.0, 1.0, "replace", 2.0),
    ] {
        let acc = accountant(&format!(
            r#"{{"neighbouring": "{relation}", "events": [{{"mechanism": "laplace",
                "scale": {scale}, "sensitivity": {sensitivity}}}]}}"#
        ));
        let epsilon0: f64 = shift / scale;
        let what = format!("Laplace b={scale} Δ={sensitivity} {relation}");
        for fraction in [0.0, 0.1, 0.3, 0.5, 0.8, 0.95, 0.999] {
            let epsilon = fraction * epsilon0;
            check_delta(&acc, &what, epsilon, -(0.5 * (epsilon - epsilon0)).exp_m1());
        }
        // Beyond ε₀ the mechanism is ε₀-DP: δ = 0 exactly.
        assert_eq!(
            acc.delta_for_epsilon(epsilon0 * 1.01).unwrap().delta.upper,
            0.0
        );
        for delta in [1e-9, 1e-5, 1e-2, 0.1] {
            let exact = (epsilon0 + 2.0 * f64::ln_1p(-delta)).max(0.0);
            check_epsilon(&acc, &what, delta, exact);
        }
    }
    // One Laplace release, b = 1: δ(0.3) = 1 − e^{−0.35}.
    let acc = accountant(r#"{"events": [{"mechanism": "laplace", "scale": 1}]}"#);
    check_delta(&acc, "laplace b=1", 0.3, 0.295311910281287);
}

#[test]
fn randomized_response_composes_to_the_exact_multinomial_sum() {
    for (epsilon0, categories) in [(0.1, 2), (1.0, 2), (0.5, 4), (0.2, 7)] {
        for k in [1usize, 2, 10, 100, 1000] {
            let acc = accountant(&format!(
                r#"{{"neighbouring": "replace", "events": [{{"mechanism": "randomized_response",
                    "epsilon": {epsilon0}, "categories": {categories}, "count": {k}}}]}}"#
            ));
            let pld = randomized_response_pld(epsilon0, categories, k);
            let exact = |e: f64| randomized_response_delta(&pld, epsilon0, e);
            let what = format!("RR ε₀={epsilon0} k-ary={categories} ×{k}");
            // Losses beyond LOSS_LIMIT (600 nats) are folded to +∞ in the upper bound: query
            // below it.
            let top = (k as f64 * epsilon0).min(500.0);
            for fraction in [0.0, 0.05, 0.2, 0.5, 0.9] {
                let epsilon = fraction * top;
                check_delta(&acc, &what, epsilon, exact(epsilon));
            }
            for delta in [1e-8, 1e-5, 1e-2] {
                let epsilon = invert(exact, delta, k as f64 * epsilon0);
                if epsilon <= 400.0 {
                    check_epsilon(&acc, &what, delta, epsilon);
                }
            }
        }
    }
    // Binary randomized response, ε₀ = 0.1, 100 runs: exact binomial sums.
    let acc = accountant(
        r#"{"events": [{"mechanism": "randomized_response", "epsilon": 0.1, "count": 100}]}"#,
    );
    check_delta(&acc, "binary RR x100", 1.0, 0.125688390240637);
    check_epsilon(&acc, "binary RR x100", 1e-6, 4.7745675881);
}

#[test]
fn discrete_laplace_with_sensitivity_one_is_binary_randomized_response() {
    for (scale, k) in [(10.0, 100usize), (1.0, 10), (2.5, 1000)] {
        let epsilon0 = 1.0 / scale;
        let acc = accountant(&format!(
            r#"{{"events": [{{"mechanism": "discrete_laplace", "scale": {scale},
                "count": {k}}}]}}"#
        ));
        let pld = randomized_response_pld(epsilon0, 2, k);
        let exact = |e: f64| randomized_response_delta(&pld, epsilon0, e);
        let what = format!("discrete Laplace scale {scale} ×{k}");
        for epsilon in [0.0, 0.5, 1.0, 3.0] {
            check_delta(&acc, &what, epsilon, exact(epsilon));
        }
        for delta in [1e-6, 1e-3] {
            check_epsilon(
                &acc,
                &what,
                delta,
                invert(exact, delta, k as f64 * epsilon0),
            );
        }
    }
}

#[test]
fn eps_delta_composes_to_the_exact_optimal_composition_theorem() {
    for (epsilon0, delta0) in [(0.5, 1e-6), (0.1, 1e-8), (1.0, 0.0), (0.05, 1e-4)] {
        for k in [10u64, 100, 1000] {
            let acc = accountant(&format!(
                r#"{{"events": [{{"mechanism": "eps_delta", "epsilon": {epsilon0},
                    "delta": {delta0}, "count": {k}}}]}}"#
            ));
            let what = format!("eps_delta ({epsilon0}, {delta0}) ×{k}");
            for fraction in [0.0, 0.02, 0.1, 0.3] {
                let epsilon = fraction * k as f64 * epsilon0;
                let exact = optimal_composition::delta_for_epsilon(epsilon0, delta0, k, epsilon);
                check_delta(&acc, &what, epsilon, exact);
            }
            for delta in [1e-3, 1e-2] {
                if delta <= 1.0 - (1.0 - delta0).powi(k as i32) {
                    continue;
                }
                let exact = optimal_composition::epsilon_for_delta(epsilon0, delta0, k, delta);
                check_epsilon(&acc, &what, delta, exact);
            }
        }
    }
    // eps_delta (0.5, 1e-6), 10 runs: Kairouz–Oh–Viswanath's exact optimal composition.
    let acc = accountant(
        r#"{"events": [{"mechanism": "eps_delta", "epsilon": 0.5, "delta": 1e-6, "count": 10}]}"#,
    );
    check_delta(&acc, "eps_delta x10", 0.0, 0.557056552805855);
    check_delta(&acc, "eps_delta x10", 1.0, 0.331685166113793);
    check_delta(&acc, "eps_delta x10", 3.0, 0.041038004282216);
}

#[test]
fn subsampled_laplace_has_no_privacy_loss_beyond_the_amplified_epsilon() {
    for (scale, rate, k) in [(1.0, 0.1, 1u64), (0.5, 0.01, 1), (1.0, 0.1, 5)] {
        let epsilon0: f64 = 1.0 / scale;
        let amplified = (rate * epsilon0.exp_m1()).ln_1p();
        let acc = accountant(&format!(
            r#"{{"events": [{{"mechanism": "laplace", "scale": {scale},
                "sampling": {{"poisson": {rate}}}, "count": {k}}}]}}"#
        ));
        let top = k as f64 * amplified;
        for beyond in [top * (1.0 + 1e-9), top + 1e-3, top + 1.0] {
            let delta = acc.delta_for_epsilon(beyond).unwrap().delta;
            // Exactly 0 for one release; a composition's upper bound also carries the FFT
            // round-off allowance (≈ 1e-15 here).
            let allowance = if k == 1 { 0.0 } else { 1e-13 };
            assert!(
                delta.upper <= allowance,
                "q={rate} b={scale} ×{k}: δ({beyond}) = {delta:?}"
            );
        }
        assert!(acc.delta_for_epsilon(top * 0.99).unwrap().delta.lower > 0.0);
        if k == 1 {
            // One release: the exact curve, worse direction of REMOVE and its swap (ADD).
            let remove = PoissonSubsampled::new(Laplace::new(scale, 1.0).unwrap(), rate).unwrap();
            let exact = |e: f64| {
                let add = 1.0 - e.exp() + e.exp() * remove.hockey_stick(-e);
                remove.hockey_stick(e).max(add)
            };
            let what = format!("subsampled Laplace q={rate} b={scale}");
            for fraction in [0.0, 0.2, 0.5, 0.9] {
                check_delta(&acc, &what, fraction * top, exact(fraction * top));
            }
            // ε brackets meet the default relative tolerance (1e-3 of the upper bound).
            let answer = acc.epsilon_for_delta(1e-3).unwrap().epsilon;
            let exact_epsilon = invert(exact, 1e-3, top);
            assert!(answer.lower <= exact_epsilon && exact_epsilon <= answer.upper);
            assert!(
                answer.upper - exact_epsilon <= 1e-3 * exact_epsilon,
                "{answer:?}"
            );
        }
    }
}

/// Exact δ(ε) of one release of a discrete Gaussian pair: `Σ_x (P(x) − e^ε Q(x))₊` over the
/// integers (|x| ≤ 60σ + 2Δ), with `P = (1−q)μ + qμ(·+Δ)`, `Q = μ` (q = 1: unsampled), in the
/// worse of both orders.
fn discrete_gaussian_exact(sigma: f64, sensitivity: i64, rate: f64, epsilon: f64) -> f64 {
    let reach = (60.0 * sigma) as i64 + 2 * sensitivity + 2;
    let weight = |x: i64| (-((x * x) as f64) / (2.0 * sigma * sigma)).exp();
    let z: f64 = (-reach - 100..=reach + 100).map(weight).sum();
    let mu = |x: i64| weight(x) / z;
    let (mut forward, mut backward) = (0.0, 0.0);
    for x in -reach..=reach {
        let p = (1.0 - rate) * mu(x) + rate * mu(x + sensitivity);
        let q = mu(x);
        forward += (p - epsilon.exp() * q).max(0.0);
        backward += (q - epsilon.exp() * p).max(0.0);
    }
    f64::max(forward, backward)
}

#[test]
fn discrete_gaussian_matches_a_direct_sum_over_the_integers() {
    for (sigma, sensitivity, rate) in [
        (0.5, 1, 1.0),
        (1.0, 1, 1.0),
        (3.0, 2, 1.0),
        (10.0, 1, 1.0),
        (2.0, 1, 0.1),
    ] {
        let sampling = if rate < 1.0 {
            format!(r#", "sampling": {{"poisson": {rate}}}"#)
        } else {
            String::new()
        };
        let acc = accountant(&format!(
            r#"{{"events": [{{"mechanism": "discrete_gaussian", "sigma": {sigma},
                "sensitivity": {sensitivity}{sampling}}}]}}"#
        ));
        let what = format!("discrete Gaussian σ={sigma} Δ={sensitivity} q={rate}");
        for epsilon in [0.0, 0.1, 0.5, 1.0, 2.0] {
            let exact = discrete_gaussian_exact(sigma, sensitivity, rate, epsilon);
            check_delta(&acc, &what, epsilon, exact);
        }
    }
}

/// Exact δ(ε) of k-fold composition of a finite pair in both orders, by enumeration.
fn pmf_pair_exact(p: &[f64], q: &[f64], k: u32, epsilon: f64) -> f64 {
    let order = |a: &[f64], b: &[f64]| -> f64 {
        let n = a.len();
        let mut total = 0.0;
        for index in 0..n.pow(k) {
            let (mut pa, mut pb, mut i) = (1.0, 1.0, index);
            for _ in 0..k {
                pa *= a[i % n];
                pb *= b[i % n];
                i /= n;
            }
            total += (pa - epsilon.exp() * pb).max(0.0);
        }
        total
    };
    order(p, q).max(order(q, p))
}

#[test]
fn pmf_pair_matches_brute_force_enumeration() {
    let pairs: [(&[f64], &[f64]); 3] = [
        (&[0.5, 0.3, 0.2], &[0.2, 0.3, 0.5]),
        (&[0.6, 0.25, 0.15, 0.0], &[0.3, 0.3, 0.3, 0.1]),
        (&[0.7, 0.2, 0.1], &[0.1, 0.2, 0.7]),
    ];
    for (p, q) in pairs {
        for k in [1u32, 2, 5] {
            let list = |v: &[f64]| {
                v.iter()
                    .map(|x| format!("{x}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let acc = accountant(&format!(
                r#"{{"events": [{{"mechanism": "pmf_pair", "p": [{}], "q": [{}],
                    "count": {k}}}]}}"#,
                list(p),
                list(q)
            ));
            let what = format!("pmf_pair {p:?} vs {q:?} ×{k}");
            for epsilon in [0.0, 0.3, 1.0, 2.5] {
                check_delta(&acc, &what, epsilon, pmf_pair_exact(p, q, k, epsilon));
            }
        }
    }
}

#[test]
fn mixture_of_two_shifts_is_the_subsampled_gaussian() {
    for (sigma, rate, k) in [(1.0, 0.01, 100u64), (2.0, 0.1, 10)] {
        let mixture = accountant(&format!(
            r#"{{"events": [{{"mechanism": "mixture_of_gaussians", "sigma": {sigma},
                "sensitivities": [0, 1], "probabilities": [{}, {rate}], "count": {k}}}]}}"#,
            1.0 - rate
        ));
        let sampled = accountant(&format!(
            r#"{{"events": [{{"mechanism": "gaussian", "sigma": {sigma},
                "sampling": {{"poisson": {rate}}}, "count": {k}}}]}}"#
        ));
        for delta in [1e-8, 1e-5] {
            let a = mixture.epsilon_for_delta(delta).unwrap().epsilon;
            let b = sampled.epsilon_for_delta(delta).unwrap().epsilon;
            assert!(
                a.lower <= b.upper && b.lower <= a.upper,
                "σ={sigma} q={rate} ×{k} δ={delta}: mixture {a:?}, subsampled {b:?}"
            );
            assert!(
                (a.upper - b.upper).abs() <= 2e-3 * b.upper,
                "{a:?} vs {b:?}"
            );
        }
    }
}

#[test]
fn heterogeneous_composition_of_lattice_mechanisms_is_exact() {
    // eps_delta with δ = 0 and discrete Laplace with Δ = 1 (add/remove) are binary RR: these
    // 100 releases are RR(0.1) composed 100 times.
    let acc = accountant(
        r#"{"events": [
            {"mechanism": "randomized_response", "epsilon": 0.1, "count": 50},
            {"mechanism": "eps_delta", "epsilon": 0.1, "delta": 0, "count": 30},
            {"mechanism": "discrete_laplace", "scale": 10, "count": 20}]}"#,
    );
    check_delta(
        &acc,
        "RR + eps_delta + discrete Laplace",
        1.0,
        0.125688390240637,
    );
    check_epsilon(
        &acc,
        "RR + eps_delta + discrete Laplace",
        1e-6,
        4.7745675881,
    );
}
