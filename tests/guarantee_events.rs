//! Mechanisms known only by a Rényi guarantee (`zcdp`, `rdp_curve`) composed in the PLD: the
//! bracket against the zCDP conversion (CKS) and the RDP row above, and against a Gaussian
//! that has the guarantee below; composition, the specification, and refusals.

use pld_accountant::comparison::{compare, PLD_LOWER, PLD_UPPER, RDP, ZCDP};
use pld_accountant::mechanism::analytic_gaussian;
use pld_accountant::{Accountant, AccountantOptions, CompositionSpec, Error, MechanismSpec};

fn spec(json: &str) -> CompositionSpec {
    CompositionSpec::from_json_str(json).expect("test spec is valid")
}

fn deltas() -> Vec<f64> {
    (1..=12).map(|k| 10f64.powi(-k)).collect()
}

/// ε of the Gaussian with μ (exact up to the closed form's own bracket).
fn gaussian_epsilon(mu: f64, delta: f64) -> (f64, f64) {
    let upper = analytic_gaussian::epsilon_upper_for_delta(mu, delta);
    (
        analytic_gaussian::epsilon_lower_for_delta(mu, delta, upper),
        upper,
    )
}

/// A ρ-zCDP event composed alone: the PLD upper bound is at most the zCDP row (the best
/// classical conversion, CKS) at every δ from 1e-1 to 1e-12, and the bracket holds the
/// Gaussian with μ = √(2ρ), which is exactly ρ-zCDP (so the worst case is at least its ε).
#[test]
fn zcdp_alone_is_between_the_attaining_gaussian_and_the_cks_conversion() {
    for rho in [0.02f64, 0.5, 3.0] {
        let spec = spec(&format!(
            r#"{{"events": [{{"mechanism": "zcdp", "rho": {rho}}}]}}"#
        ));
        let mu = (2.0 * rho).sqrt();
        for delta in deltas() {
            let comparison = compare(&spec, delta, AccountantOptions::default()).unwrap();
            let upper = comparison.row(PLD_UPPER).unwrap().epsilon;
            let lower = comparison.row(PLD_LOWER).unwrap().epsilon;
            let cks = comparison.row(ZCDP).expect("zcdp row").epsilon;
            let (g_lo, g_hi) = gaussian_epsilon(mu, delta);
            // The accountant widens ρ by a bound on its rounding; the row does not.
            assert!(
                upper <= cks * (1.0 + 1e-12),
                "ρ {rho} δ {delta:e}: PLD {upper} > CKS {cks}"
            );
            assert!(
                upper >= g_lo,
                "ρ {rho} δ {delta:e}: PLD {upper} < Gaussian {g_lo}"
            );
            assert!(
                lower <= g_hi,
                "ρ {rho} δ {delta:e}: lower {lower} > Gaussian {g_hi}"
            );
            assert!(
                lower >= 0.98 * g_lo,
                "ρ {rho} δ {delta:e}: lower {lower} far below"
            );
        }
    }
}

/// An RDP curve built from the Gaussian's own curve αμ²/2 (μ = 1) at a few orders: the upper
/// bound is at least the Gaussian's exact ε and at most the RDP row.
#[test]
fn rdp_curve_of_a_gaussian_is_between_its_exact_value_and_the_rdp_row() {
    let orders = [
        1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 64.0,
    ];
    let values: Vec<f64> = orders.iter().map(|a| a * 0.5).collect();
    let spec = CompositionSpec::add_remove()
        .event(
            MechanismSpec::rdp_curve(orders.to_vec(), values)
                .unwrap()
                .repeat(4)
                .unwrap(),
        )
        .build()
        .unwrap();
    // Four runs of μ = 1: μ = 2 in all.
    for delta in [1e-2, 1e-5, 1e-8, 1e-12] {
        let comparison = compare(&spec, delta, AccountantOptions::default()).unwrap();
        let upper = comparison.row(PLD_UPPER).unwrap().epsilon;
        let rdp = comparison.row(RDP).expect("rdp row").epsilon;
        let (g_lo, g_hi) = gaussian_epsilon(2.0, delta);
        assert!(upper >= g_lo, "δ {delta:e}: PLD {upper} < Gaussian {g_lo}");
        assert!(
            upper <= rdp * (1.0 + 1e-12),
            "δ {delta:e}: PLD {upper} > RDP {rdp}"
        );
        let lower = comparison.row(PLD_LOWER).unwrap().epsilon;
        assert!(
            lower <= g_hi,
            "δ {delta:e}: lower {lower} > Gaussian {g_hi}"
        );
    }
}

/// Guarantees compose before the pair is built: three events of ρ answer as one of 3ρ, and
/// composed with DP-SGD steps the PLD upper bound stays at most the RDP row.
#[test]
fn guarantees_compose_exactly_and_mix_with_other_mechanisms() {
    let three = spec(r#"{"events": [{"mechanism": "zcdp", "rho": 0.1, "count": 3}]}"#);
    let one = spec(r#"{"events": [{"mechanism": "zcdp", "rho": 0.30000000000000004}]}"#);
    let options = AccountantOptions::default();
    let a = Accountant::new(&three, options)
        .unwrap()
        .epsilon_for_delta(1e-6)
        .unwrap();
    let b = Accountant::new(&one, options)
        .unwrap()
        .epsilon_for_delta(1e-6)
        .unwrap();
    assert_eq!(a.epsilon, b.epsilon);
    let mixed = spec(
        r#"{"events": [
            {"mechanism": "zcdp", "rho": 0.05, "count": 2},
            {"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": 0.01}, "count": 1000},
            {"mechanism": "laplace", "scale": 10.0, "count": 5}
        ]}"#,
    );
    for delta in [1e-3, 1e-6, 1e-9] {
        let comparison = compare(&mixed, delta, options).unwrap();
        let upper = comparison.row(PLD_UPPER).unwrap().epsilon;
        let lower = comparison.row(PLD_LOWER).unwrap().epsilon;
        let rdp = comparison.row(RDP).expect("rdp row").epsilon;
        assert!(
            lower <= upper && upper <= rdp,
            "δ {delta:e}: [{lower}, {upper}], RDP {rdp}"
        );
    }
}

#[test]
fn the_specification_reads_writes_and_refuses_guarantees() {
    let text = r#"{"neighbouring":"add_remove","events":[{"mechanism":"zcdp","rho":0.25,"count":2},{"mechanism":"rdp_curve","orders":[2.0,4.0],"values":[0.5,1.0],"count":1}]}"#;
    let parsed = spec(text);
    let again = CompositionSpec::from_json_value(&parsed.to_json_value()).unwrap();
    assert_eq!(parsed, again);
    assert_eq!(parsed.events()[0].mechanism().rho(), Some(0.25));
    let refused = |json: &str, field: &str| {
        let message = match CompositionSpec::from_json_str(json) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted: {json}"),
        };
        assert!(message.contains(field), "{json}: {message}");
    };
    refused(r#"{"events":[{"mechanism":"zcdp","rho":0}]}"#, "rho");
    refused(r#"{"events":[{"mechanism":"zcdp","rho":-1}]}"#, "rho");
    refused(r#"{"events":[{"mechanism":"zcdp"}]}"#, "rho");
    refused(
        r#"{"events":[{"mechanism":"zcdp","rho":1,"sampling":{"poisson":0.1}}]}"#,
        "sampling",
    );
    refused(
        r#"{"events":[{"mechanism":"rdp_curve","orders":[1.0],"values":[1.0]}]}"#,
        "orders[0]",
    );
    refused(
        r#"{"events":[{"mechanism":"rdp_curve","orders":[2.0,3.0],"values":[1.0]}]}"#,
        "values",
    );
    refused(
        r#"{"events":[{"mechanism":"rdp_curve","orders":[2.0],"values":[-1.0]}]}"#,
        "values[0]",
    );
    assert!(matches!(
        MechanismSpec::zcdp(f64::NAN),
        Err(Error::InvalidParameter { .. })
    ));
    // A total that overflows is refused, not accounted as infinite privacy.
    let huge = spec(r#"{"events":[{"mechanism":"zcdp","rho":1e300,"count":1000000000000}]}"#);
    assert!(Accountant::new(&huge, AccountantOptions::default()).is_err());
}

/// Laplace-log-normal smooth-sensitivity noise is accounted by its zCDP guarantee,
/// ρ = ½(t/σ + e^{3σ²/2}·s)² (Bun & Steinke 2019): the same upper bound as a `zcdp` event of
/// that ρ; no lower bound is known for the mechanism itself, so alone its lower bound is 0.
#[test]
fn laplace_log_normal_is_accounted_by_its_zcdp_guarantee() {
    let (sigma, s, t) = (0.5f64, 0.1f64, 0.1f64);
    let epsilon = t / sigma + (1.5 * sigma * sigma).exp() * s;
    let rho = 0.5 * epsilon * epsilon;
    let lln = spec(&format!(
        r#"{{"events": [{{"mechanism": "laplace_log_normal", "sigma": {sigma}, "s": {s}, "t": {t}}}]}}"#
    ));
    assert_eq!(
        lln.events()[0].mechanism().rho().unwrap(),
        rho * (1.0 + 8.0 * f64::EPSILON)
    );
    let again = CompositionSpec::from_json_value(&lln.to_json_value()).unwrap();
    assert_eq!(lln, again);
    let options = AccountantOptions::default();
    let answer = Accountant::new(&lln, options)
        .unwrap()
        .epsilon_for_delta(1e-6)
        .unwrap();
    let cks = pld_accountant::analytic::zcdp::epsilon_for_delta(rho, 1e-6).epsilon;
    assert!(
        answer.epsilon.upper <= cks * (1.0 + 1e-12),
        "{answer:?} vs {cks}"
    );
    assert!(answer.epsilon.upper >= gaussian_epsilon((2.0 * rho).sqrt(), 1e-6).0);
    assert_eq!(answer.epsilon.lower, 0.0);
    // Beside a zcdp event, only the zcdp part has an attaining Gaussian below.
    let both = spec(&format!(
        r#"{{"events": [{{"mechanism": "laplace_log_normal", "sigma": {sigma}, "s": {s}, "t": {t}}},
                       {{"mechanism": "zcdp", "rho": 0.5}}]}}"#
    ));
    let answer = Accountant::new(&both, options)
        .unwrap()
        .epsilon_for_delta(1e-6)
        .unwrap();
    let (g_lo, g_hi) = gaussian_epsilon(1.0, 1e-6);
    assert!(answer.epsilon.lower <= g_hi && answer.epsilon.lower >= 0.98 * g_lo);
    for (json, field) in [
        (
            r#"{"mechanism": "laplace_log_normal", "sigma": 0, "s": 1, "t": 1}"#,
            "sigma",
        ),
        (
            r#"{"mechanism": "laplace_log_normal", "sigma": 1, "s": -1, "t": 1}"#,
            "s",
        ),
        (
            r#"{"mechanism": "laplace_log_normal", "sigma": 1, "s": 1}"#,
            "t",
        ),
        (
            r#"{"mechanism": "laplace_log_normal", "sigma": 40, "s": 1, "t": 1}"#,
            "sigma",
        ),
    ] {
        let message = CompositionSpec::from_json_str(&format!(r#"{{"events": [{json}]}}"#))
            .unwrap_err()
            .to_string();
        assert!(message.contains(field), "{json}: {message}");
    }
}

/// The exponential mechanism as ε-bounded range: the bracket is never below the two-output
/// exponential mechanism (randomized response with ε/2) and lies strictly below the generic
/// ε-DP accounting (`eps_delta` with δ = 0, whose composition is the exact optimal
/// composition theorem), alone and in a mix.
#[test]
fn the_exponential_mechanism_is_accounted_as_bounded_range() {
    let options = AccountantOptions::default();
    for (epsilon, count) in [(0.1f64, 100u64), (1.0, 100), (1.0, 1), (3.0, 10)] {
        let em = spec(&format!(
            r#"{{"events": [{{"mechanism": "exponential", "epsilon": {epsilon}, "count": {count}}}]}}"#
        ));
        let generic = spec(&format!(
            r#"{{"events": [{{"mechanism": "eps_delta", "epsilon": {epsilon}, "delta": 0, "count": {count}}}]}}"#
        ));
        let attained = spec(&format!(
            r#"{{"events": [{{"mechanism": "randomized_response", "epsilon": {}, "count": {count}}}]}}"#,
            epsilon / 2.0
        ));
        for delta in [1e-3, 1e-6, 1e-10] {
            let a = Accountant::new(&em, options)
                .unwrap()
                .epsilon_for_delta(delta)
                .unwrap();
            let g = Accountant::new(&generic, options)
                .unwrap()
                .epsilon_for_delta(delta)
                .unwrap();
            let r = Accountant::new(&attained, options)
                .unwrap()
                .epsilon_for_delta(delta)
                .unwrap();
            assert!(
                a.epsilon.upper < g.epsilon.lower,
                "ε {epsilon} ×{count} δ {delta:e}: BR {:?} not below ε-DP {:?}",
                a.epsilon,
                g.epsilon
            );
            // The attained two-output exponential mechanism is inside the bracket or below it
            // (alone, the adaptive lattice bracket finds worse exponential mechanisms).
            assert!(r.epsilon.lower <= a.epsilon.upper, "{a:?} vs {r:?}");
            // Off the attained pair's lattice the grid costs a little of the lower bound.
            assert!(a.epsilon.lower >= r.epsilon.lower * 0.99, "{a:?} vs {r:?}");
        }
    }
    let mixed = spec(
        r#"{"events": [{"mechanism": "exponential", "epsilon": 0.5, "count": 3},
                       {"mechanism": "zcdp", "rho": 0.01},
                       {"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": 0.01}, "count": 100}]}"#,
    );
    let comparison = compare(&mixed, 1e-6, options).unwrap();
    let upper = comparison.row(PLD_UPPER).unwrap().epsilon;
    for row in &comparison.rows {
        if row.kind == pld_accountant::Kind::UpperBound {
            assert!(
                upper <= row.epsilon * (1.0 + 1e-12),
                "{}: {} < PLD {upper}",
                row.method,
                row.epsilon
            );
        }
    }
    let again = CompositionSpec::from_json_value(&mixed.to_json_value()).unwrap();
    assert_eq!(mixed, again);
    for json in [
        r#"{"mechanism": "exponential", "epsilon": 0}"#,
        r#"{"mechanism": "exponential", "epsilon": 1, "sampling": {"poisson": 0.5}}"#,
    ] {
        assert!(CompositionSpec::from_json_str(&format!(r#"{{"events": [{json}]}}"#)).is_err());
    }
}

/// The mixed preset (smooth-sensitivity median, DP-SGD, exponential-mechanism selection):
/// the bracket is valid and its upper end is at most every analytic upper bound, at every δ.
#[test]
fn the_mixed_release_preset_is_at_most_every_analytic_row() {
    let preset = pld_accountant::spec::presets::find("mixed-release").unwrap();
    let spec = preset.spec().unwrap();
    for delta in [1e-3, 1e-6, 1e-9, 1e-12] {
        let comparison = compare(&spec, delta, AccountantOptions::default()).unwrap();
        let upper = comparison.row(PLD_UPPER).unwrap().epsilon;
        let lower = comparison.row(PLD_LOWER).unwrap().epsilon;
        assert!(
            0.0 <= lower && lower <= upper,
            "δ {delta:e}: [{lower}, {upper}]"
        );
        let analytic: Vec<_> = comparison
            .rows
            .iter()
            .filter(|r| r.kind == pld_accountant::Kind::UpperBound && r.method != PLD_UPPER)
            .collect();
        assert!(!analytic.is_empty(), "no analytic row at δ {delta:e}");
        for row in analytic {
            // (The accountant's own RDP conversion widens the divergences by their rounding.)
            assert!(
                upper <= row.epsilon * (1.0 + 1e-12),
                "δ {delta:e}: PLD {upper} > {} {}",
                row.method,
                row.epsilon
            );
        }
    }
}

/// A mix whose every event has a zCDP guarantee: the answer's upper end is at most the zCDP
/// conversion of ρ added by hand (Gaussians 1/(2σ²), exponential selections ε²/8, ε-DP pairs
/// ε²/2, their δ₀ set aside), in both queries. Beside other events the PLD holds each
/// exponential selection by the ε-DP pair, four times its ε²/8: on this mix its own upper end
/// was 58.07 at δ 1e-8, the conversion 55.01, which the answer now is.
#[test]
fn a_mix_of_events_with_zcdp_guarantees_is_at_most_their_zcdp_conversion() {
    let spec = spec(
        r#"{"events": [
            {"mechanism": "gaussian", "sigma": 0.915, "count": 23},
            {"mechanism": "exponential", "epsilon": 0.642, "count": 82},
            {"mechanism": "eps_delta", "epsilon": 0.124, "delta": 1e-12, "count": 15},
            {"mechanism": "laplace", "scale": 43.0, "count": 45},
            {"mechanism": "gaussian", "sigma": 2.67, "count": 13}]}"#,
    );
    let rho = 23.0 / (2.0 * 0.915f64.powi(2))
        + 82.0 * 0.642f64.powi(2) / 8.0
        + 15.0 * 0.124f64.powi(2) / 2.0
        + 45.0 * (1.0f64 / 43.0).powi(2) / 2.0
        + 13.0 / (2.0 * 2.67f64.powi(2));
    let spent = 15.0 * 1e-12;
    let accountant = Accountant::new(&spec, AccountantOptions::default()).unwrap();
    for delta in [1e-3, 1e-8] {
        let conversion = pld_accountant::analytic::zcdp::epsilon_for_delta(rho, delta - spent);
        let answer = accountant.epsilon_for_delta(delta).unwrap();
        assert!(
            answer.epsilon.upper <= conversion.epsilon * (1.0 + 1e-12),
            "δ {delta:e}: upper {} above the zCDP conversion {}",
            answer.epsilon.upper,
            conversion.epsilon
        );
        assert!(answer.epsilon.lower <= answer.epsilon.upper);
    }
    let answer = accountant.epsilon_for_delta(1e-8).unwrap();
    assert_eq!(
        answer.settings.upper_method.as_deref(),
        Some("zcdp_conversion")
    );
    // `pld compare` says where its PLD row's upper end came from.
    let comparison = compare(&spec, 1e-8, AccountantOptions::default()).unwrap();
    let row = comparison.row(PLD_UPPER).unwrap();
    assert!(
        row.detail.ends_with("upper bound: zcdp_conversion"),
        "{}",
        row.detail
    );
    for epsilon in [20.0, 55.0] {
        let conversion = pld_accountant::analytic::zcdp::delta_for_epsilon(rho, epsilon) + spent;
        let answer = accountant.delta_for_epsilon(epsilon).unwrap();
        assert!(
            answer.delta.upper <= conversion * (1.0 + 1e-12),
            "ε {epsilon}: upper {} above the zCDP conversion {conversion}",
            answer.delta.upper
        );
        assert!(answer.delta.lower <= answer.delta.upper);
    }
}

/// δ(ε′) of one Student's t mechanism at its worst shift with constant smooth sensitivity
/// (t = 0): `∫ (h(u) − e^{ε′}·h(u + s))₊ du`, h the t density, by the trapezoid rule on
/// [−2000, 2000] with step 2·10⁻³ (beyond, the integrand is of order s/u³).
fn student_t_shift_delta(degrees: f64, s: f64, epsilon: f64) -> f64 {
    let log_norm = libm_lgamma((degrees + 1.0) / 2.0)
        - libm_lgamma(degrees / 2.0)
        - 0.5 * (degrees * std::f64::consts::PI).ln();
    let density = |z: f64| (log_norm - (degrees + 1.0) / 2.0 * (z * z / degrees).ln_1p()).exp();
    let step = 2e-3;
    let mut total = 0.0;
    let mut u = -2000.0;
    while u < 2000.0 {
        total += (density(u) - epsilon.exp() * density(u + s)).max(0.0) * step;
        u += step;
    }
    total
}

/// ln Γ(x) for x > 0 by Stirling's series after shifting x above 10 (ample for a test).
fn libm_lgamma(mut x: f64) -> f64 {
    let mut shift = 0.0;
    while x < 10.0 {
        shift -= x.ln();
        x += 1.0;
    }
    let series = 1.0 / (12.0 * x) - 1.0 / (360.0 * x.powi(3)) + 1.0 / (1260.0 * x.powi(5));
    shift + (x - 0.5) * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI).ln() + series
}

/// Student's t and Cauchy noise on smooth sensitivity are accounted by their ε-DP guarantee:
/// never below a real Student's t mechanism (a shift of s, integrated numerically), equal to
/// the exact optimal composition of that ε when composed alone, and lower bound 0.
#[test]
fn student_t_and_cauchy_are_accounted_by_their_pure_dp_guarantee() {
    for (degrees, s) in [(1.0, 0.5), (3.0, 0.4), (10.0, 1.0)] {
        let json = if degrees == 1.0 {
            format!(r#"{{"events": [{{"mechanism": "cauchy", "s": {s}, "t": 0}}]}}"#)
        } else {
            format!(
                r#"{{"events": [{{"mechanism": "student_t", "degrees": {degrees}, "s": {s}, "t": 0}}]}}"#
            )
        };
        let one = spec(&json);
        let again = CompositionSpec::from_json_value(&one.to_json_value()).unwrap();
        assert_eq!(one, again);
        let accountant = Accountant::new(&one, AccountantOptions::default()).unwrap();
        for epsilon in [0.0, 0.05, 0.1, 0.2] {
            let answer = accountant.delta_for_epsilon(epsilon).unwrap();
            let truth = student_t_shift_delta(degrees, s, epsilon);
            assert!(
                answer.delta.upper >= truth * (1.0 + 1e-6) + 1e-9,
                "d {degrees} s {s} ε {epsilon}: {:?} < {truth}",
                answer.delta
            );
            assert_eq!(answer.delta.lower, 0.0);
        }
    }
    // Ten runs: the exact optimal composition of ten ε-DP mechanisms.
    let ten = spec(
        r#"{"events": [{"mechanism": "student_t", "degrees": 3, "s": 0.4, "t": 0.1, "count": 10}]}"#,
    );
    let epsilon0 = 2.0 * (1.0 + 0.4 * (0.4 + (0.16f64 + 12.0).sqrt()) / 6.0).ln() + 0.3;
    let answer = Accountant::new(&ten, AccountantOptions::default())
        .unwrap()
        .epsilon_for_delta(1e-6)
        .unwrap();
    let optimal =
        pld_accountant::analytic::optimal_composition::epsilon_for_delta(epsilon0, 0.0, 10, 1e-6);
    assert!(
        answer.epsilon.upper <= optimal * (1.0 + 1e-9) && answer.epsilon.upper >= optimal * 0.999,
        "{answer:?} vs {optimal}"
    );
    // Sampling is refused, naming the field.
    let sampled = CompositionSpec::from_json_str(
        r#"{"events": [{"mechanism": "cauchy", "s": 1, "t": 0.1, "sampling": {"poisson": 0.1}}]}"#,
    );
    assert!(
        matches!(sampled, Err(Error::Incompatible { .. })),
        "{sampled:?}"
    );
    for bad in [
        r#"{"mechanism": "student_t", "degrees": 0, "s": 1, "t": 0}"#,
        r#"{"mechanism": "student_t", "degrees": 2, "s": 1}"#,
        r#"{"mechanism": "cauchy", "s": 0, "t": 0}"#,
        r#"{"mechanism": "cauchy", "s": 1, "t": -0.5}"#,
    ] {
        let result = CompositionSpec::from_json_str(&format!(r#"{{"events": [{bad}]}}"#));
        assert!(result.is_err(), "{bad}");
    }
}

/// ε(δ) of k-fold B(t) (the non-adaptive composition at one t, B(t) the binary ε-BR pair with
/// losses t and t − ε), by bisection on the binomial sum
/// `δ(ε_g) = Σ_i C(k,i) p^{k−i}(1−p)^i (1 − e^{ε_g − (kt − iε)})₊`, p = (1 − e^{t−ε})/(1 − e^{−ε}).
fn binary_power_epsilon(epsilon: f64, t: f64, k: u64, delta: f64) -> f64 {
    let p = -(t - epsilon).exp_m1() / -(-epsilon).exp_m1();
    let mut ln_choose = vec![0.0f64; k as usize + 1];
    for i in 1..=k as usize {
        ln_choose[i] = ln_choose[i - 1] + ((k as usize - i + 1) as f64 / i as f64).ln();
    }
    let delta_at = |eg: f64| -> f64 {
        (0..=k as usize)
            .map(|i| {
                let loss = k as f64 * t - i as f64 * epsilon;
                if loss <= eg {
                    return 0.0;
                }
                let ln_p = ln_choose[i]
                    + (k as usize - i) as f64 * p.ln()
                    + if i > 0 { i as f64 * (-p).ln_1p() } else { 0.0 };
                ln_p.exp() * -(eg - loss).exp_m1()
            })
            .sum()
    };
    let (mut lo, mut hi) = (0.0, k as f64 * epsilon);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if delta_at(mid) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// k exponential mechanisms at one ε: the accountant brackets the optimal ADAPTIVE
/// composition of ε-bounded-range mechanisms. Its upper end is below Dong, Durfee & Rogers'
/// efficiently computable adaptive bound (their Proposition 4, ICML 2020:
/// `min(kε, k·(x − 1 − ln x) + √(½·kε²·ln(1/δ)))`, x = ε/(1 − e^{−ε})), and its lower end at
/// least their non-adaptive optimum `max_t ε_{B(t)^{⊗k}}(δ)` (computed here by an independent
/// binomial sum over 199 values of t), up to the lattice step; the bracket is narrow.
#[test]
fn exponential_mechanisms_at_one_epsilon_bracket_the_optimal_adaptive_composition() {
    let options = AccountantOptions::default();
    for (epsilon, k, width) in [(1.0f64, 10u64, 1e-3), (0.1, 100, 1e-2), (1.0, 100, 1e-2)] {
        let em = spec(&format!(
            r#"{{"events": [{{"mechanism": "exponential", "epsilon": {epsilon}, "count": {k}}}]}}"#
        ));
        for delta in [1e-3, 1e-6, 1e-10] {
            let a = Accountant::new(&em, options)
                .unwrap()
                .epsilon_for_delta(delta)
                .unwrap();
            let x = epsilon / -(-epsilon).exp_m1();
            let proposition_4 = (k as f64 * epsilon).min(
                k as f64 * (x - 1.0 - x.ln())
                    + (0.5 * k as f64 * epsilon * epsilon * (1.0 / delta).ln()).sqrt(),
            );
            assert!(
                a.epsilon.upper <= proposition_4,
                "ε {epsilon} ×{k} δ {delta:e}: {:?} above Prop. 4's {proposition_4}",
                a.epsilon
            );
            let non_adaptive = (1..200)
                .map(|j| binary_power_epsilon(epsilon, epsilon * j as f64 / 200.0, k, delta))
                .fold(0.0, f64::max);
            assert!(
                a.epsilon.upper >= non_adaptive,
                "ε {epsilon} ×{k} δ {delta:e}: {:?} below the non-adaptive {non_adaptive}",
                a.epsilon
            );
            assert!(
                a.epsilon.lower >= non_adaptive - 0.01 * epsilon,
                "ε {epsilon} ×{k} δ {delta:e}: {:?} vs non-adaptive {non_adaptive}",
                a.epsilon
            );
            assert!(
                a.epsilon.width() <= width * a.epsilon.upper,
                "ε {epsilon} ×{k} δ {delta:e}: {:?}",
                a.epsilon
            );
            assert_eq!(
                a.settings.upper_method.as_deref(),
                Some("bounded_range_adaptive")
            );
        }
        // δ(ε) agrees with ε(δ).
        let accountant = Accountant::new(&em, options).unwrap();
        let e = accountant.epsilon_for_delta(1e-6).unwrap().epsilon;
        let d = accountant.delta_for_epsilon(e.upper).unwrap().delta;
        assert!(d.upper <= 1e-6 * (1.0 + 1e-9), "{e:?} {d:?}");
    }
}

/// A bracket wide by nature (here zCDP and RDP guarantees beside 2120 runs of a mixture of
/// Gaussians and 406 of a binary pair, δ 1e-12) stops refining once its upper end has
/// settled: its lower end then creeps towards a floor that no grid brings within the
/// tolerance. Refined until that creep fell under a tenth per grid, the same query took
/// three grids, down to 3.0e-5 nats, and 5.6 s (whole process) for an upper end 5.6e-5 lower
/// ([17.814316, 18.345881]); it now stops on a grid coarser than 1e-4 nats, its upper end
/// within a twentieth of the target width of a finer fixed grid's and its bracket overlapping
/// that grid's.
#[test]
fn a_bracket_wide_by_nature_stops_once_its_upper_end_has_settled() {
    let spec = spec(
        r#"{"events": [
        {"mechanism": "mixture_of_gaussians", "sigma": 2.26, "sensitivities": [0, 1],
         "probabilities": [0.99598522682649, 0.004014773173509942], "count": 2120},
        {"mechanism": "zcdp", "rho": 0.0635, "count": 19},
        {"mechanism": "rdp_curve", "orders": [1.5, 2, 4, 8, 16, 32, 64],
         "values": [0.00028140708084981026, 0.0003752094411330803, 0.0007504188822661606,
                    0.0015008377645323212, 0.0030016755290646424, 0.006003351058129285,
                    0.01200670211625857], "count": 10},
        {"mechanism": "pmf_pair", "p": [0.5201055088751338, 0.47989449112486615],
         "q": [0.47989449112486615, 0.5201055088751338], "count": 406}]}"#,
    );
    let answer = Accountant::new(&spec, AccountantOptions::default())
        .unwrap()
        .epsilon_for_delta(1e-12)
        .unwrap();
    let e = answer.epsilon;
    let settings = &answer.settings;
    assert_eq!(
        settings.stopped_by.as_deref(),
        Some("upper end converged"),
        "{e}: {settings:?}"
    );
    assert!(settings.grid_step.unwrap() > 1e-4, "{settings:?}");
    let fine = Accountant::new(
        &spec,
        AccountantOptions {
            grid_step: Some(2e-4),
            ..AccountantOptions::default()
        },
    )
    .unwrap()
    .epsilon_for_delta(1e-12)
    .unwrap()
    .epsilon;
    assert!(
        e.lower <= fine.upper && fine.lower <= e.upper,
        "{e} and {fine}"
    );
    assert!(
        e.upper <= fine.upper + settings.target_width / 20.0,
        "{e} against the fine grid's {fine} (target width {})",
        settings.target_width
    );
}

/// δ(ε) of k runs of binary randomized response at ε₀, summed directly:
/// `Σ_{j: L_j > ε} C(k, j) p^{k−j} q^j (1 − e^{ε − L_j})`, `L_j = (k − 2j)ε₀`,
/// `p = e^{ε₀}/(1 + e^{ε₀})`, binomial terms from `libm_lgamma` (relative error about 1e-8
/// at k = 10⁷), summed down from the largest j with `L_j > ε` until they vanish.
fn binary_rr_delta(epsilon0: f64, k: f64, epsilon: f64) -> f64 {
    let (ln_p, ln_q) = (-(-epsilon0).exp().ln_1p(), -epsilon0.exp().ln_1p());
    let ln_k_factorial = libm_lgamma(k + 1.0);
    let mut j = ((k - epsilon / epsilon0) / 2.0).ceil() - 1.0;
    let (mut total, mut largest) = (0.0f64, 0.0f64);
    while j >= 0.0 {
        let loss = (k - 2.0 * j) * epsilon0;
        if loss > epsilon {
            let ln_term = ln_k_factorial - libm_lgamma(j + 1.0) - libm_lgamma(k - j + 1.0)
                + (k - j) * ln_p
                + j * ln_q;
            let term = ln_term.exp() * -(epsilon - loss).exp_m1();
            total += term;
            largest = largest.max(term);
            if term < 1e-18 * largest && loss > epsilon + 1.0 {
                break;
            }
        }
        j -= 1.0;
    }
    total
}

/// More exponential selections at one ε than the optimal adaptive composition's lattice
/// holds (10⁷ at ε 0.001): the lower end is the exponential mechanism over two outputs,
/// randomized response at ε/2, composed exactly, within 1e-6 of its ε(δ) and δ(ε) summed
/// here directly (the grid's own lower end of that pair had collapsed to 0: its losses,
/// ±5e-4 nats a run, are far below the step).
#[test]
fn many_exponential_selections_keep_the_two_output_lower_bound() {
    let (epsilon, k) = (0.001, 1e7);
    let spec =
        spec(r#"{"events": [{"mechanism": "exponential", "epsilon": 0.001, "count": 10000000}]}"#);
    let accountant = Accountant::new(&spec, AccountantOptions::default()).unwrap();
    let delta = 1e-5;
    // The exact ε(δ) of the pair, by bisection on the direct sum (decreasing in ε).
    let (mut lo, mut hi) = (0.0, 20.0);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if binary_rr_delta(epsilon / 2.0, k, mid) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let answer = accountant.epsilon_for_delta(delta).unwrap();
    let lower = answer.epsilon.lower;
    assert!(
        lower <= hi * (1.0 + 1e-7) && lower >= lo * (1.0 - 1e-6),
        "lower {lower} against the pair's {lo}"
    );
    assert!(lower <= answer.epsilon.upper);
    assert_eq!(
        answer.settings.lower_method.as_deref(),
        Some("two_output_exponential")
    );
    let exact = binary_rr_delta(epsilon / 2.0, k, 5.0);
    let answer = accountant.delta_for_epsilon(5.0).unwrap();
    assert!(
        answer.delta.lower <= exact * (1.0 + 1e-7) && answer.delta.lower >= exact * (1.0 - 1e-6),
        "δ(5) lower {} against the pair's {exact}",
        answer.delta.lower
    );
    assert!(answer.delta.lower <= answer.delta.upper);
}

/// The same selections beside ten Gaussians (σ 10, so μ = √10/10): the lower pair's runs
/// are composed exactly in groups (as atoms off the grid's lattice), not rounded away one by
/// one (the lower end was 0). Checked against the lower pair's composition summed here:
/// `δ(ε) = Σ_j P(j)·δ_μ(ε − L_j)`, the Gaussian's δ at every shift (any sign) from the
/// closed form's upper end, so the ε found is at least the pair's: the lower end must not
/// exceed it, and reaches 99.9% of it (7.68957 against 7.69064).
#[test]
fn many_exponential_selections_beside_gaussians_keep_their_lower_bound() {
    let (epsilon0, k, mu) = (0.0005f64, 1e7f64, 10f64.sqrt() / 10.0);
    let spec = spec(
        r#"{"events": [{"mechanism": "exponential", "epsilon": 0.001, "count": 10000000},
                       {"mechanism": "gaussian", "sigma": 10, "count": 10}]}"#,
    );
    let (ln_p, ln_q) = (-(-epsilon0).exp().ln_1p(), -epsilon0.exp().ln_1p());
    let ln_k_factorial = libm_lgamma(k + 1.0);
    let mode = (k / (1.0 + epsilon0.exp())).round();
    let spread = (k * 0.25).sqrt();
    let pair_delta = |epsilon: f64| {
        let mut total = 0.0;
        let mut j = (mode - 12.0 * spread).max(0.0);
        while j <= (mode + 12.0 * spread).min(k) {
            let ln_term = ln_k_factorial - libm_lgamma(j + 1.0) - libm_lgamma(k - j + 1.0)
                + (k - j) * ln_p
                + j * ln_q;
            let loss = (k - 2.0 * j) * epsilon0;
            total += ln_term.exp() * analytic_gaussian::delta_for_epsilon(mu, epsilon - loss).upper;
            j += 1.0;
        }
        total
    };
    let delta = 1e-5;
    let (mut lo, mut hi) = (0.0, 20.0);
    for _ in 0..36 {
        let mid = 0.5 * (lo + hi);
        if pair_delta(mid) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let answer = Accountant::new(&spec, AccountantOptions::default())
        .unwrap()
        .epsilon_for_delta(delta)
        .unwrap();
    let lower = answer.epsilon.lower;
    assert!(
        lower <= hi && lower >= 0.999 * lo,
        "lower {lower} against the lower pair's {lo}"
    );
    assert!(lower <= answer.epsilon.upper);
}
