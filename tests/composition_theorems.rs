//! The analytic composition accountants: zCDP conversions, the classical composition theorems
//! and the exact optimal (Kairouz–Oh–Viswanath) homogeneous composition.
//!
//! Steps of trust: closed-form reference values (binary randomized response) → mpmath fixtures
//! (`fixtures/composition/kov_exact.json`) → properties over seeded random inputs (every
//! theorem ≥ the exact optimum, monotone in δ, +∞ when the δ budget is spent) → extreme inputs
//! (no NaN, no panic) → cross-check of zCDP against the exact Gaussian mechanism.

mod support;

use pld_accountant::analytic::composition_theorems::{ApproxDp, CompositionTheorem};
use pld_accountant::analytic::optimal_composition as optimal;
use pld_accountant::analytic::zcdp::{self, ZcdpConversion};
use pld_accountant::mechanism::analytic_gaussian;
use pld_accountant::Gaussian;
use rand::Rng;
use support::{fixture, number, rng};

/// Relative agreement of the exact optimal δ(ε) (upper bound) with mpmath for k ≤ 10⁵: the
/// module's rounding allowance is 8u·(256 + |j − kq| + |ln P|) ≲ 2e-13 there, plus one
/// truncation of 2⁻⁶⁴; 1e-10 is the brief's target and leaves three orders of magnitude.
const KOV_DELTA_RELATIVE: f64 = 1e-10;

/// The same for k = 10⁹ (ε₀ = 1e-4): the allowance grows with the window, |j − kq| ≈ 2e5, to
/// ≈ 2e-10 per side (the upper bound is inflated by it); the *lower* end of the bracket is
/// deflated by the same amount. Measured raw error ≈ 1e-11.
const KOV_DELTA_RELATIVE_HUGE_K: f64 = 5e-10;

/// How far the returned optimal ε may exceed the exact one, relative to max(1, ε): the
/// inversion solves the segment in closed form from sums with the allowance above.
const KOV_EPSILON_EXCESS: f64 = 1e-9;

/// Closed-form theorems computed in f64 vs mpmath: a few ulps of rounding plus the
/// deliberate upward rounding (≤ 16u), so 1e-13 relative.
const CLOSED_FORM_RELATIVE: f64 = 1e-13;

/// The binary randomized-response reference case: ε₀ = 0.1, k = 100, δ = 1e-6.
const RR: (f64, u64, f64) = (0.1, 100, 1e-6);

fn pure(epsilon: f64, count: u64) -> [(ApproxDp, u64); 1] {
    [(
        ApproxDp {
            epsilon,
            delta: 0.0,
        },
        count,
    )]
}

fn homogeneous(epsilon: f64, delta: f64, count: u64) -> [(ApproxDp, u64); 1] {
    [(ApproxDp { epsilon, delta }, count)]
}

fn cases<'a>(file: &'a serde_json::Value, list: &str) -> &'a Vec<serde_json::Value> {
    file[list].as_array().expect("a list of cases")
}

fn u64_field(case: &serde_json::Value, key: &str) -> u64 {
    case[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not an integer"))
}

fn round_to(x: f64, digits: i32) -> f64 {
    let s = 10f64.powi(digits);
    (x * s).round() / s
}

#[test]
fn reference_table_binary_randomized_response() {
    let (e0, k, delta) = RR;
    let events = pure(e0, k);
    let eps = |t: CompositionTheorem| t.epsilon(&events, delta);
    let basic = eps(CompositionTheorem::Basic);
    let drv = eps(CompositionTheorem::AdvancedDworkRothblumVadhan);
    let tanh = eps(CompositionTheorem::AdvancedTanh);
    let kov = eps(CompositionTheorem::KairouzOhViswanath);
    let zcdp = eps(CompositionTheorem::ViaZcdp);
    let exact = optimal::epsilon_for_delta(e0, 0.0, k, delta);
    println!("basic {basic}  drv {drv}  tanh {tanh}  kov {kov}  zcdp {zcdp}  exact {exact}");

    assert!((basic - 10.0).abs() < 1e-12, "basic {basic}");
    assert_eq!(round_to(drv, 3), 6.308, "DRV {drv}");
    assert_eq!(round_to(tanh, 3), 5.756, "tanh {tanh}");
    assert_eq!(round_to(kov, 3), 5.756, "KOV {kov}");
    // The simple zCDP conversion gives 5.757; the CKS conversion is tighter.
    assert!(zcdp <= 5.757, "zCDP {zcdp}");
    assert!((exact - 4.7745675881).abs() < 1e-9, "exact {exact}");
    for (name, v) in [
        ("basic", basic),
        ("drv", drv),
        ("tanh", tanh),
        ("kov", kov),
        ("zcdp", zcdp),
    ] {
        assert!(exact <= v, "exact {exact} > {name} {v}");
    }
    // The exact δ values of the randomized-response and eps_delta reference cases.
    let d = optimal::delta_for_epsilon(e0, 0.0, k, 1.0);
    // The references have 15 digits; ours is an upper bound inflated by ≲ 3e-13 (module docs).
    assert!((d / 0.125688390240637 - 1.0).abs() < 1e-12, "RR δ(1) = {d}");
    for (eps, want) in [
        (0.0, 0.557056552805855),
        (1.0, 0.331685166113793),
        (3.0, 0.041038004282216),
    ] {
        let d = optimal::delta_for_epsilon(0.5, 1e-6, 10, eps);
        assert!(
            (d / want - 1.0).abs() < 1e-12,
            "KOV(0.5, 1e-6, 10) δ({eps}) = {d}"
        );
    }
}

#[test]
fn theorem_names_are_stable_snake_case() {
    let names: Vec<&str> = CompositionTheorem::ALL.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        [
            "basic_composition",
            "advanced_composition_drv",
            "advanced_composition_tanh",
            "kov_closed_form",
            "zcdp_composition"
        ]
    );
}

#[test]
fn closed_forms_match_mpmath() {
    let file = fixture("composition/kov_exact.json");
    let mut failures = Vec::new();
    for case in cases(&file, "theorems") {
        let e0 = number(case, "epsilon0");
        let k = u64_field(case, "k");
        let delta = number(case, "delta");
        let events = pure(e0, k);
        for (theorem, key) in [
            (CompositionTheorem::Basic, "basic"),
            (CompositionTheorem::AdvancedDworkRothblumVadhan, "drv"),
            (CompositionTheorem::AdvancedTanh, "tanh"),
            (CompositionTheorem::KairouzOhViswanath, "kov_closed_form"),
        ] {
            let ours = theorem.epsilon(&events, delta);
            let want = number(case, key).min(number(case, "basic"));
            let rel = (ours - want) / want;
            if !(0.0..=CLOSED_FORM_RELATIVE).contains(&rel) {
                failures.push(format!(
                    "{key} ε₀={e0} k={k} δ={delta}: {ours} vs {want} ({rel:e})"
                ));
            }
        }
        // Ours uses the CKS conversion when it is tighter, so it is at most the simple form.
        let ours = CompositionTheorem::ViaZcdp.epsilon(&events, delta);
        let simple = number(case, "zcdp_simple").min(number(case, "basic"));
        if ours > simple * (1.0 + CLOSED_FORM_RELATIVE) {
            failures.push(format!(
                "zcdp ε₀={e0} k={k} δ={delta}: {ours} > simple {simple}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn optimal_delta_matches_mpmath() {
    let file = fixture("composition/kov_exact.json");
    let mut failures = Vec::new();
    let (mut worst, mut worst_huge) = (0.0_f64, 0.0_f64);
    for case in cases(&file, "cases") {
        let e0 = number(case, "epsilon0");
        let d0 = number(case, "delta0");
        let k = u64_field(case, "k");
        let eps = number(case, "epsilon");
        let exact = number(case, "delta");
        let b = optimal::delta_for_epsilon_bracket(e0, d0, k, eps);
        let tol = if k > 1_000_000 {
            KOV_DELTA_RELATIVE_HUGE_K
        } else {
            KOV_DELTA_RELATIVE
        };
        // `exact` is the double nearest the 30-digit value: allow its half-ulp.
        let ulp = exact * f64::EPSILON;
        let rel_up = (b.upper - exact) / exact;
        let rel_lo = (exact - b.lower) / exact;
        if k > 1_000_000 {
            worst_huge = worst_huge.max(rel_up.max(rel_lo));
        } else {
            worst = worst.max(rel_up.max(rel_lo));
        }
        if b.upper + ulp < exact || b.lower - ulp > exact || rel_up > tol || rel_lo > tol {
            failures.push(format!(
                "ε₀={e0} δ₀={d0} k={k} ε={eps}: [{:e}, {:e}] exact {exact:e} (rel +{rel_up:e} −{rel_lo:e})",
                b.lower, b.upper
            ));
        }
    }
    println!("largest relative bracket half-width: k ≤ 1e5 {worst:e}, k = 1e9 {worst_huge:e}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn optimal_epsilon_matches_mpmath_and_round_trips() {
    let file = fixture("composition/kov_exact.json");
    let mut failures = Vec::new();
    let mut worst = 0.0_f64;
    for case in cases(&file, "epsilon_for_delta") {
        let e0 = number(case, "epsilon0");
        let d0 = number(case, "delta0");
        let k = u64_field(case, "k");
        let delta = number(case, "delta");
        let exact = number(case, "epsilon");
        let ours = optimal::epsilon_for_delta(e0, d0, k, delta);
        let what = format!("ε₀={e0} δ₀={d0} k={k} δ={delta}: ours {ours} exact {exact}");
        if exact.is_infinite() {
            if ours.is_finite() {
                failures.push(what);
            }
            continue;
        }
        let excess = ours - exact;
        worst = worst.max(excess / exact.max(1.0));
        let ulp = exact * f64::EPSILON;
        if excess < -ulp || excess > KOV_EPSILON_EXCESS * exact.max(1.0) {
            failures.push(format!("{what} (excess {excess:e})"));
        }
        let d = optimal::delta_for_epsilon(e0, d0, k, ours);
        if d > delta {
            failures.push(format!("{what}: δ(ours) = {d:e} > {delta:e}"));
        }
    }
    println!("largest excess of the optimal ε over mpmath, relative to max(1, ε): {worst:e}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Random homogeneous inputs: (ε₀, δ₀, k, δ).
fn random_homogeneous(rng: &mut impl Rng) -> (f64, f64, u64, f64) {
    let e0 = 10f64.powf(rng.gen_range(-3.0..1.0));
    let d0 = if rng.gen_bool(0.5) {
        0.0
    } else {
        10f64.powf(rng.gen_range(-14.0..-6.0))
    };
    let k = 10f64.powf(rng.gen_range(0.0..4.0)).round() as u64;
    let delta = 10f64.powf(rng.gen_range(-12.0..-0.5));
    (e0, d0, k, delta)
}

#[test]
fn every_theorem_is_above_the_optimum() {
    let mut rng = rng(31);
    let mut failures = Vec::new();
    for _ in 0..300 {
        let (e0, d0, k, delta) = random_homogeneous(&mut rng);
        let exact = optimal::epsilon_for_delta(e0, d0, k, delta);
        for t in CompositionTheorem::ALL {
            let bound = t.epsilon(&homogeneous(e0, d0, k), delta);
            if bound < exact {
                failures.push(format!(
                    "{} ε₀={e0} δ₀={d0} k={k} δ={delta}: {bound} < exact {exact}",
                    t.name()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn optimal_delta_bracket_is_ordered_and_decreasing() {
    let mut rng = rng(32);
    for _ in 0..100 {
        let (e0, d0, k, _) = random_homogeneous(&mut rng);
        let top = k as f64 * e0;
        let mut previous = f64::INFINITY;
        for i in 0..=20 {
            let eps = top * i as f64 / 20.0;
            let b = optimal::delta_for_epsilon_bracket(e0, d0, k, eps);
            let what = format!("ε₀={e0} δ₀={d0} k={k} ε={eps}: {b:?}");
            assert!(
                0.0 <= b.lower && b.lower <= b.upper && b.upper <= 1.0,
                "{what}"
            );
            assert!(
                b.upper <= previous * (1.0 + 1e-12),
                "not decreasing: {what}"
            );
            previous = b.upper;
        }
    }
}

#[test]
fn bounds_are_monotone_in_delta() {
    let mut rng = rng(33);
    for _ in 0..100 {
        let (e0, d0, k, delta) = random_homogeneous(&mut rng);
        let events = homogeneous(e0, d0, k);
        let smaller = delta * 0.1;
        let what = format!("ε₀={e0} δ₀={d0} k={k} δ={delta}");
        for t in CompositionTheorem::ALL {
            let (a, b) = (t.epsilon(&events, smaller), t.epsilon(&events, delta));
            assert!(a >= b, "{} {what}: ε(δ/10) = {a} < ε(δ) = {b}", t.name());
        }
        let (a, b) = (
            optimal::epsilon_for_delta(e0, d0, k, smaller),
            optimal::epsilon_for_delta(e0, d0, k, delta),
        );
        assert!(a >= b, "optimal {what}: ε(δ/10) = {a} < ε(δ) = {b}");
    }
}

#[test]
fn exhausted_delta_budget_gives_infinity() {
    // 1000 events at δ₀ = 1e-6 spend 1e-3 (KOV/optimal: 1 − (1 − 1e-6)^1000 ≈ 9.995e-4).
    let events = homogeneous(0.1, 1e-6, 1000);
    for delta in [0.0, 1e-9, 9e-4] {
        for t in CompositionTheorem::ALL {
            assert_eq!(
                t.epsilon(&events, delta),
                f64::INFINITY,
                "{} δ={delta}",
                t.name()
            );
        }
        assert_eq!(
            optimal::epsilon_for_delta(0.1, 1e-6, 1000, delta),
            f64::INFINITY
        );
    }
    // Just above the infinity mass: the optimum and KOV are finite, the additive ones not.
    let delta = 9.997e-4;
    assert!(optimal::epsilon_for_delta(0.1, 1e-6, 1000, delta).is_finite());
    assert!(CompositionTheorem::KairouzOhViswanath
        .epsilon(&events, delta)
        .is_finite());
    assert_eq!(
        CompositionTheorem::Basic.epsilon(&events, delta),
        f64::INFINITY
    );
    // Exactly spent by basic composition: basic is valid, advanced forms have no slack left.
    let exact_budget = homogeneous(0.5, 0.25, 2);
    assert_eq!(CompositionTheorem::Basic.epsilon(&exact_budget, 0.5), 1.0);
    // Pure DP at δ = 0: basic composition (and the optimum) give kε₀.
    assert!((CompositionTheorem::Basic.epsilon(&pure(0.1, 10), 0.0) - 1.0).abs() < 1e-14);
    assert!((optimal::epsilon_for_delta(0.1, 0.0, 10, 0.0) - 1.0).abs() < 1e-14);
}

#[test]
fn heterogeneous_events() {
    let events = [
        (
            ApproxDp {
                epsilon: 0.1,
                delta: 1e-8,
            },
            50,
        ),
        (
            ApproxDp {
                epsilon: 0.5,
                delta: 0.0,
            },
            4,
        ),
        (
            ApproxDp {
                epsilon: 2.0,
                delta: 1e-9,
            },
            0,
        ),
    ];
    let delta = 1e-5;
    let basic = CompositionTheorem::Basic.epsilon(&events, delta);
    assert!((basic - 7.0).abs() < 1e-12, "basic {basic}");
    // The homogeneous theorems use ε₀ = 0.5, δ₀ = 1e-8, k = 54 (the count-0 event is ignored).
    let hom = homogeneous(0.5, 1e-8, 54);
    for t in CompositionTheorem::ALL {
        let e = t.epsilon(&events, delta);
        assert!(e.is_finite() && e <= basic, "{}: {e}", t.name());
        if t != CompositionTheorem::Basic && t != CompositionTheorem::ViaZcdp {
            assert_eq!(e, t.epsilon(&hom, delta).min(basic), "{}", t.name());
        }
    }
    // zCDP: ρ = ½(50·0.01 + 4·0.25) = 0.75 at δ' = 1e-5 − 5e-7.
    let want = zcdp::epsilon_for_delta(0.75, 1e-5 - 5e-7).epsilon;
    let got = CompositionTheorem::ViaZcdp.epsilon(&events, delta);
    assert!((got / want - 1.0).abs() < 1e-12, "zCDP {got} vs {want}");
    // No events at all: nothing is released.
    for t in CompositionTheorem::ALL {
        assert_eq!(t.epsilon(&[], 1e-6), 0.0);
    }
}

#[test]
fn extreme_inputs_never_give_nan() {
    let counts = [1_u64, 1_000_000, 1_000_000_000_000];
    let eps0s = [1e-9, 1e-3, 1.0, 30.0, 700.0];
    let deltas = [1e-300, 1e-10, 0.5];
    let delta0s = [0.0, 1e-300, 1e-15];
    for &k in &counts {
        for &e0 in &eps0s {
            for &d0 in &delta0s {
                for &delta in &deltas {
                    let events = homogeneous(e0, d0, k);
                    for t in CompositionTheorem::ALL {
                        let e = t.epsilon(&events, delta);
                        assert!(
                            !e.is_nan() && e >= 0.0,
                            "{} ε₀={e0} δ₀={d0} k={k} δ={delta}: {e}",
                            t.name()
                        );
                    }
                }
            }
        }
    }
    // The exact optimum. At k = 1e12 and ε₀ ≤ 1 the window has ~10⁷ terms (≈ 0.1 s per
    // evaluation), so only one δ there.
    let mut exact_cases = Vec::new();
    for &k in &counts {
        for &e0 in &eps0s {
            for &delta in &deltas {
                if k == 1_000_000_000_000 && e0 <= 1.0 && delta != 1e-10 {
                    continue;
                }
                exact_cases.push((e0, 0.0, k, delta));
            }
        }
    }
    exact_cases.push((0.5, 1e-15, 1_000_000_000_000, 0.5)); // c₀ ≈ 1e-3
    exact_cases.push((0.5, 1e-300, 1_000_000, 1e-290));
    // Below the infinity mass 1 − (1 − 1e-300)^1e6 ≈ 1e-294: nothing to be had.
    assert_eq!(
        optimal::epsilon_for_delta(0.5, 1e-300, 1_000_000, 1e-300),
        f64::INFINITY
    );
    for (e0, d0, k, delta) in exact_cases {
        let what = format!("ε₀={e0} δ₀={d0} k={k} δ={delta}");
        let eps = optimal::epsilon_for_delta(e0, d0, k, delta);
        assert!(!eps.is_nan() && eps >= 0.0, "{what}: ε = {eps}");
        assert!(
            eps <= k as f64 * e0 * (1.0 + 1e-12),
            "{what}: ε = {eps} > kε₀"
        );
        let xs: &[f64] = if k == 1_000_000_000_000 && e0 <= 1.0 {
            &[1.0]
        } else {
            &[0.0, 1e-6, 1.0, 1e3]
        };
        for &x in xs {
            let b = optimal::delta_for_epsilon_bracket(e0, d0, k, x);
            assert!(
                0.0 <= b.lower && b.lower <= b.upper && b.upper <= 1.0,
                "{what} ε={x}: {b:?}"
            );
        }
    }
    // Degenerate arguments.
    assert_eq!(optimal::epsilon_for_delta(0.1, 0.0, 0, 1e-6), 0.0);
    assert_eq!(
        optimal::epsilon_for_delta(f64::NAN, 0.0, 10, 1e-6),
        f64::INFINITY
    );
    assert_eq!(optimal::delta_for_epsilon(f64::NAN, 0.0, 10, 1.0), 1.0);
    assert_eq!(optimal::epsilon_for_delta(0.0, 0.0, 10, 1e-6), 0.0);
    assert_eq!(
        optimal::epsilon_for_delta(f64::INFINITY, 0.0, 10, 1e-6),
        f64::INFINITY
    );
}

#[test]
fn zcdp_conversions() {
    assert_eq!(zcdp::gaussian_rho(1.0), 0.5);
    assert_eq!(zcdp::gaussian_rho(2.0), 0.125);
    assert_eq!(zcdp::pure_dp_rho(0.1), 0.005000000000000001);
    // Simple conversion at ρ = 0.5, δ = 1e-6: 0.5 + 2 sqrt(0.5 ln 1e6) = 5.75652176975694.
    let r = zcdp::epsilon_for_delta(0.5, 1e-6);
    assert!(
        (r.epsilon_simple / 5.756521769756937 - 1.0).abs() < 1e-14,
        "{r:?}"
    );
    assert!(r.epsilon <= r.epsilon_simple);
    assert_eq!(r.conversion, ZcdpConversion::CanonneKamathSteinke);
    // Special values.
    assert_eq!(zcdp::epsilon_for_delta(0.0, 1e-6).epsilon, 0.0);
    assert_eq!(
        zcdp::epsilon_for_delta(f64::INFINITY, 1e-6).epsilon,
        f64::INFINITY
    );
    assert_eq!(zcdp::epsilon_for_delta(0.3, 1.0).epsilon, 0.0);
    for rho in [1e-12, 1e-3, 1.0, 1e3, 1e8] {
        for delta in [1e-300, 1e-100, 1e-10, 0.1, 0.999] {
            let r = zcdp::epsilon_for_delta(rho, delta);
            let what = format!("ρ={rho} δ={delta}: {r:?}");
            assert!(r.epsilon.is_finite() && r.epsilon >= 0.0, "{what}");
            assert!(r.epsilon <= r.epsilon_simple, "{what}");
            // Round trip: the δ at the returned ε is no larger than δ (up to rounding).
            let d = zcdp::delta_for_epsilon(rho, r.epsilon);
            assert!(d <= delta * (1.0 + 1e-9), "{what}: δ(ε) = {d:e}");
            let d = zcdp::delta_for_epsilon(rho, 1.0);
            assert!((0.0..=1.0).contains(&d), "ρ={rho}: δ(1) = {d}");
        }
    }
}

#[test]
fn zcdp_is_above_the_exact_gaussian() {
    let mut failures = Vec::new();
    for sigma in [0.5, 1.0, 2.0, 5.0, 20.0] {
        let rho = zcdp::gaussian_rho(sigma);
        let mu = 1.0 / sigma;
        for delta in [1e-3, 1e-6, 1e-10, 1e-30] {
            let exact = analytic_gaussian::epsilon_for_delta(mu, delta).upper;
            let z = zcdp::epsilon_for_delta(rho, delta).epsilon;
            if z < exact {
                failures.push(format!("σ={sigma} δ={delta}: zCDP ε {z} < exact {exact}"));
            }
        }
        for eps in [0.1, 1.0, 3.0] {
            let exact = Gaussian::delta_for_mu(mu, eps);
            let z = zcdp::delta_for_epsilon(rho, eps);
            if z < exact {
                failures.push(format!("σ={sigma} ε={eps}: zCDP δ {z:e} < exact {exact:e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Basic composition's δ(ε): Σδᵢ from ε = Σεᵢ on, 1 below it; 0 for no runs.
#[test]
fn basic_composition_delta() {
    let events = [
        (
            ApproxDp {
                epsilon: 0.25,
                delta: 1e-9,
            },
            3,
        ),
        (
            ApproxDp {
                epsilon: 0.5,
                delta: 0.0,
            },
            2,
        ),
    ];
    // Σε = 1.75 exactly in binary; Σδ = 3e-9, rounded up.
    let at = |epsilon| CompositionTheorem::basic_delta(&events, epsilon);
    assert_eq!(at(1.7499), 1.0);
    assert!(at(1.75) >= 3e-9 && at(1.75) <= 3e-9 * (1.0 + 1e-15));
    assert_eq!(at(100.0), at(1.75));
    assert_eq!(
        CompositionTheorem::basic_delta(&[(events[0].0, 0)], 0.0),
        0.0
    );
}

/// The accountant's answer is at most every composition theorem's where every event has an
/// (ε, δ) guarantee: at δ 1e-10, four binary pairs (ε = ln(p/q) each) and one ε-DP pair
/// reach nearly their largest loss Σεᵢ, and the grid's upper end, rounded up by up to a
/// step, lay above it (0.150968 against 0.150903) until basic composition capped it; for
/// ε ≥ Σεᵢ the δ is exactly 0.
#[test]
fn the_accountant_is_at_most_basic_composition_near_the_largest_loss() {
    use pld_accountant::{Accountant, AccountantOptions, CompositionSpec};
    let (p, q) = (0.5093597358948648f64, 0.49064026410513517f64);
    let spec = CompositionSpec::from_json_str(&format!(
        r#"{{"events": [
            {{"mechanism": "pmf_pair", "p": [{p}, {q}], "q": [{q}, {p}], "count": 4}},
            {{"mechanism": "eps_delta", "epsilon": 0.00113, "delta": 0}}]}}"#
    ))
    .unwrap();
    let sum = 4.0 * (p / q).ln() + 0.00113;
    let accountant = Accountant::new(&spec, AccountantOptions::default()).unwrap();
    let answer = accountant.epsilon_for_delta(1e-10).unwrap();
    assert!(
        answer.epsilon.upper <= sum * (1.0 + 1e-12),
        "upper {} above Σε {sum}",
        answer.epsilon.upper
    );
    assert!(answer.epsilon.lower <= answer.epsilon.upper && answer.epsilon.lower > 0.99 * sum);
    assert!(answer.settings.tolerance_met);
    let answer = accountant.delta_for_epsilon(sum * (1.0 + 1e-9)).unwrap();
    assert_eq!(answer.delta.upper, 0.0);
}

/// The optimal ε(δ) from below against mpmath: at or under the exact value (its half-ulp
/// allowed) and within 1e-8 of it wherever the bracket on δ is exact (k ≤ 10⁵ here).
#[test]
fn optimal_epsilon_lower_bound_matches_mpmath() {
    let file = fixture("composition/kov_exact.json");
    let mut failures = Vec::new();
    for case in cases(&file, "epsilon_for_delta") {
        let e0 = number(case, "epsilon0");
        let d0 = number(case, "delta0");
        let k = u64_field(case, "k");
        let delta = number(case, "delta");
        let exact = number(case, "epsilon");
        let lower = optimal::epsilon_for_delta_lower(e0, d0, k, delta);
        let upper = optimal::epsilon_for_delta(e0, d0, k, delta);
        let ulp = exact.abs() * f64::EPSILON;
        let loose = exact.is_finite() && exact > 0.0 && lower < exact * (1.0 - 1e-8);
        if lower - ulp > exact || lower > upper || (k <= 100_000 && loose) {
            failures.push(format!(
                "ε₀={e0} δ₀={d0} k={k} δ={delta}: lower {lower} exact {exact} upper {upper}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
