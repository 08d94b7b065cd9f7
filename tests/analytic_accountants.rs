//! The analytic accountants through the specification and the comparison entry point:
//! reference values (closed forms, exact compositions, dp_accounting), the CLT estimate, and the cross-check
//! that no valid upper bound is below the truth (PLD bracket, or exact compositions computed
//! here independently).

mod support;

use support::{epsilon_by_bisection, exact_binary_rr_epsilon, log_binomial};

use pld_accountant::analytic::clt;
use pld_accountant::analytic::composition_theorems::CompositionTheorem;
use pld_accountant::comparison::{
    self, compare, Kind, CLT_ESTIMATE, OPTIMAL_COMPOSITION, PLD_LOWER, PLD_UPPER, RDP, ZCDP,
};
use pld_accountant::{AccountantOptions, CompositionSpec};
use proptest::prelude::*;

/// Relative slack on comparisons between two valid bounds computed by different formulas in
/// f64: rounding only (each side is accurate to ~1e-12 relative).
const ROUNDING_RELATIVE: f64 = 1e-9;

fn spec(json: &str) -> CompositionSpec {
    CompositionSpec::from_json_str(json).expect("test spec is valid")
}

fn dp_sgd(sigma: f64, q: f64, steps: u64) -> CompositionSpec {
    CompositionSpec::dp_sgd(sigma, q, steps, 1.0).expect("valid DP-SGD parameters")
}

/// `a ≤ b` up to rounding.
fn at_most(a: f64, b: f64) -> bool {
    a <= b + ROUNDING_RELATIVE * b.abs().max(1.0)
}

#[test]
fn dp_sgd_report_has_pld_rdp_and_a_labelled_clt_estimate() {
    let comparison = compare(&dp_sgd(1.0, 0.01, 1000), 1e-5, AccountantOptions::default())
        .expect("comparison runs");
    let upper = comparison.row(PLD_UPPER).expect("PLD upper row");
    let lower = comparison.row(PLD_LOWER).expect("PLD lower row");
    assert_eq!(upper.kind, Kind::UpperBound);
    assert_eq!(lower.kind, Kind::LowerBound);
    // DP-SGD (q = 0.01, σ = 1, 1000 steps, δ = 1e-5): the true value is 1.82824.
    assert!(lower.epsilon <= 1.82825 && upper.epsilon >= 1.82824);

    // dp_accounting 0.6.0's RdpAccountant at its default orders (2.10137).
    let reference = support::fixture("rdp/dp_accounting.json")["dp_sgd"]
        .as_array()
        .expect("dp_sgd cases")
        .iter()
        .find(|c| c["steps"] == 1000 && c["sampling_rate"] == 0.01 && c["sigma"] == 1.0)
        .map(|c| support::number(c, "epsilon"))
        .expect("the σ = 1, q = 0.01, 1000-step case");
    assert!((reference - 2.10137).abs() < 1e-5);
    let rdp = comparison.row(RDP).expect("RDP applies to DP-SGD");
    assert_eq!(rdp.kind, Kind::UpperBound);
    assert!(
        rdp.epsilon <= reference * 1.001,
        "RDP ε {} vs dp_accounting {reference}",
        rdp.epsilon
    );
    assert!(rdp.epsilon >= upper.epsilon, "RDP below the PLD bound");

    let clt = comparison.row(CLT_ESTIMATE).expect("CLT row");
    assert_eq!(clt.kind, Kind::Estimate);
    assert!(
        (clt.epsilon - 1.62).abs() < 0.005,
        "CLT estimate {}",
        clt.epsilon
    );

    // Subsampled Gaussians: no zCDP, no (ε, δ) guarantee for the composition theorems.
    let not_applicable: Vec<&str> = comparison
        .not_applicable
        .iter()
        .map(|r| r.method.as_ref())
        .collect();
    assert!(not_applicable.contains(&ZCDP));
    assert!(not_applicable.contains(&OPTIMAL_COMPOSITION));
    for theorem in CompositionTheorem::ALL {
        assert!(
            not_applicable.contains(&theorem.name()),
            "{}",
            theorem.name()
        );
    }
    for row in &comparison.not_applicable {
        assert!(!row.reason.is_empty(), "{} has no reason", row.method);
    }
    for row in &comparison.rows {
        assert!(row.seconds >= 0.0 && row.seconds < 10.0);
    }
}

#[test]
fn comparison_serializes_with_the_interface_keys() {
    let comparison = compare(&dp_sgd(1.0, 0.01, 100), 1e-5, AccountantOptions::default())
        .expect("comparison runs");
    let json = serde_json::to_value(&comparison).expect("serializes");
    assert_eq!(json["delta"], 1e-5);
    let rows = json["rows"].as_array().expect("rows");
    assert!(!rows.is_empty());
    for row in rows {
        for key in ["method", "epsilon", "kind", "seconds"] {
            assert!(row.get(key).is_some(), "row {row} lacks {key}");
        }
        let kind = row["kind"].as_str().expect("kind is a string");
        assert!(["upper_bound", "lower_bound", "estimate"].contains(&kind));
    }
}

/// Binary randomized response, ε₀ = 0.1, 100 runs, δ = 1e-6, through the spec.
#[test]
fn randomized_response_reference_table() {
    let comparison = compare(
        &spec(
            r#"{"events": [{"mechanism": "randomized_response", "epsilon": 0.1, "count": 100}]}"#,
        ),
        1e-6,
        AccountantOptions::default(),
    )
    .expect("comparison runs");
    let value = |method: &str| comparison.row(method).map(|r| r.epsilon);
    let exact = 4.7745675881;
    let expected = [
        (CompositionTheorem::Basic.name(), 10.0),
        (
            CompositionTheorem::AdvancedDworkRothblumVadhan.name(),
            6.308,
        ),
        (CompositionTheorem::AdvancedTanh.name(), 5.756),
        (CompositionTheorem::KairouzOhViswanath.name(), 5.756),
    ];
    for (method, table) in expected {
        let ours = value(method).unwrap_or_else(|| panic!("{method} applies"));
        assert!(
            (ours - table).abs() < 6e-4,
            "{method}: {ours} vs table {table}"
        );
    }
    // Tighter conversions than the table's are welcome; never below the exact value.
    for (method, table) in [(ZCDP, 5.757), (RDP, 5.073)] {
        let ours = value(method).unwrap_or_else(|| panic!("{method} applies"));
        assert!(ours <= table + 6e-4, "{method}: {ours} vs table {table}");
        assert!(ours >= exact, "{method}: {ours} below the exact {exact}");
    }
    let optimal = value(OPTIMAL_COMPOSITION).expect("optimal composition applies");
    assert!(
        optimal >= exact && optimal - exact < 1e-8,
        "optimal {optimal} vs exact {exact}"
    );
    assert!(at_most(exact_binary_rr_epsilon(0.1, 100, 1e-6), optimal));
}

/// The CLT estimate is exact for unsampled Gaussians (μ = √k·Δ/σ) and is Bu et al.'s DP-SGD
/// μ = q·sqrt(T(e^{1/σ²} − 1)) for Poisson-subsampled ones.
#[test]
fn clt_mu_matches_closed_forms() {
    let gaussian = spec(r#"{"events": [{"mechanism": "gaussian", "sigma": 20, "count": 400}]}"#);
    let estimate = clt::estimate(&gaussian, 1e-5).expect("applies");
    assert!((estimate.mu - 1.0).abs() < 1e-9, "μ = {}", estimate.mu);
    // The exact Gaussian ε(1e-5) at μ = 1.
    assert!((estimate.epsilon - 4.37717809568).abs() < 1e-8);

    // Poisson rate 1 is the unsampled Gaussian: zCDP applies and is above the exact value.
    let full_batch =
        compare(&dp_sgd(2.0, 1.0, 100), 1e-5, AccountantOptions::default()).expect("runs");
    let zcdp = full_batch.row(ZCDP).expect("zCDP applies at q = 1").epsilon;
    assert!(zcdp >= full_batch.row(PLD_UPPER).expect("PLD").epsilon);

    for (sigma, q, steps) in [(1.0, 0.01, 1000), (0.8, 0.004, 100_000), (3.0, 0.1, 50)] {
        let estimate = clt::estimate(&dp_sgd(sigma, q, steps), 1e-5).expect("applies");
        let bu = q * (steps as f64 * (1.0 / (sigma * sigma)).exp_m1()).sqrt();
        assert!((estimate.mu - bu).abs() < 1e-12 * bu, "{sigma} {q} {steps}");
    }
}

/// Binary randomized response and discrete Laplace with sensitivity 1 are the same mechanism
/// (the PLD `{±ε₀}` with ε₀ = 1/scale), so every accountant must agree on them.
#[test]
fn discrete_laplace_with_sensitivity_one_is_binary_randomized_response() {
    let rr =
        spec(r#"{"events": [{"mechanism": "randomized_response", "epsilon": 0.1, "count": 100}]}"#);
    let dl = spec(r#"{"events": [{"mechanism": "discrete_laplace", "scale": 10, "count": 100}]}"#);
    let a = compare(&rr, 1e-6, AccountantOptions::default()).expect("runs");
    let b = compare(&dl, 1e-6, AccountantOptions::default()).expect("runs");
    for row in &a.rows {
        let other = b.row(&row.method).expect("same methods apply");
        if row.kind == Kind::Estimate {
            assert!((row.epsilon - other.epsilon).abs() < 1e-6 * row.epsilon);
        } else {
            assert!(
                (row.epsilon - other.epsilon).abs() < 1e-9 * row.epsilon.max(1.0),
                "{}: {} vs {}",
                row.method,
                row.epsilon,
                other.epsilon
            );
        }
    }
}

/// k-ary randomized response (replace-one) composed `runs` times, exactly: each run has loss
/// `+L₁` w.p. `1 − p + p/k`, `−L₁` w.p. `p/k` and 0 otherwise, `p = k/(e^ε + k − 1)`,
/// `L₁ = ε`; the trinomial distribution of the counts gives the composed loss.
fn exact_k_ary_rr_epsilon(epsilon: f64, categories: u64, runs: u64, delta: f64) -> f64 {
    let k = categories as f64;
    let p = k / (epsilon.exp() + k - 1.0);
    let (plus, minus) = (1.0 - p + p / k, p / k);
    let zero = (1.0 - plus - minus).max(0.0);
    let mut atoms = Vec::new();
    for a in 0..=runs {
        for b in 0..=(runs - a) {
            let c = runs - a - b;
            let mut log_mass = log_binomial(runs, a) + log_binomial(runs - a, b);
            log_mass += a as f64 * plus.ln() + b as f64 * minus.ln();
            if c > 0 {
                log_mass += c as f64 * zero.ln();
            }
            atoms.push(((a as f64 - b as f64) * epsilon, log_mass.exp()));
        }
    }
    epsilon_by_bisection(&atoms, delta)
}

#[test]
fn exact_references_of_this_file_match_known_values() {
    // Exact binomial sum: ε(1e-6) = 4.7745675881 for ε₀ = 0.1, k = 100.
    assert!((exact_binary_rr_epsilon(0.1, 100, 1e-6) - 4.7745675881).abs() < 1e-9);
    // k = 2 categories is binary randomized response.
    let binary = exact_binary_rr_epsilon(0.7, 30, 1e-5);
    assert!((exact_k_ary_rr_epsilon(0.7, 2, 30, 1e-5) - binary).abs() < 1e-9);
}

/// Every upper-bound row against the truth: the PLD bracket when it applies (upper within its
/// own width, lower below), else an exact or lower-bound value of the true ε.
fn check_upper_bounds(comparison: &comparison::Comparison, truth_at_most: Option<f64>) {
    let pld = comparison
        .row(PLD_UPPER)
        .zip(comparison.row(PLD_LOWER))
        .map(|(u, l)| (u.epsilon, l.epsilon));
    for row in comparison
        .rows
        .iter()
        .filter(|r| r.kind == Kind::UpperBound)
    {
        assert!(!row.epsilon.is_nan(), "{} is NaN", row.method);
        if let Some((upper, lower)) = pld {
            assert!(
                at_most(lower, row.epsilon),
                "{}: {} below the PLD lower bound {lower}",
                row.method,
                row.epsilon
            );
            assert!(
                at_most(upper, row.epsilon + (upper - lower)),
                "{}: {} below the PLD upper bound {upper} minus its width",
                row.method,
                row.epsilon
            );
        }
        if let Some(truth) = truth_at_most {
            assert!(
                at_most(truth, row.epsilon),
                "{}: {} below the true ε ≥ {truth}",
                row.method,
                row.epsilon
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn gaussian_bounds_are_above_the_pld_bracket(
        sigma in 0.5f64..20.0,
        count in 1u64..2000,
        replace in proptest::bool::ANY,
        delta_exponent in 2.0f64..10.0,
    ) {
        let relation = if replace { "replace" } else { "add_remove" };
        let spec = spec(&format!(
            r#"{{"neighbouring": "{relation}",
                "events": [{{"mechanism": "gaussian", "sigma": {sigma}, "count": {count}}}]}}"#
        ));
        let delta = 10f64.powf(-delta_exponent);
        let comparison = compare(&spec, delta, AccountantOptions::default()).expect("runs");
        prop_assert!(comparison.row(PLD_UPPER).is_some());
        prop_assert!(comparison.row(RDP).is_some() && comparison.row(ZCDP).is_some());
        check_upper_bounds(&comparison, None);
    }

    #[test]
    fn subsampled_gaussian_bounds_are_above_the_pld_bracket(
        sigma in 0.6f64..4.0,
        q_exponent in 0.5f64..3.0,
        count in 1u64..3000,
        delta_exponent in 3.0f64..8.0,
    ) {
        let spec = dp_sgd(sigma, 10f64.powf(-q_exponent), count);
        let delta = 10f64.powf(-delta_exponent);
        let comparison = compare(&spec, delta, AccountantOptions::default()).expect("runs");
        prop_assert!(comparison.row(PLD_UPPER).is_some() && comparison.row(RDP).is_some());
        check_upper_bounds(&comparison, None);
    }

    #[test]
    fn randomized_response_bounds_are_above_the_exact_composition(
        epsilon in 0.01f64..2.0,
        categories in 2u64..6,
        runs in 1u64..60,
        delta_exponent in 2.0f64..9.0,
    ) {
        let spec = spec(&format!(
            r#"{{"events": [{{"mechanism": "randomized_response", "epsilon": {epsilon},
                "categories": {categories}, "count": {runs}}}]}}"#
        ));
        let delta = 10f64.powf(-delta_exponent);
        let comparison = compare(&spec, delta, AccountantOptions::default()).expect("runs");
        let exact = exact_k_ary_rr_epsilon(epsilon, categories, runs, delta);
        check_upper_bounds(&comparison, Some(exact));
        prop_assert!(comparison.row(RDP).is_some());
    }

    /// One Laplace release has the closed form δ(ε) = 1 − e^{(ε−ε₀)/2};
    /// a composition of k is at least as private-loss-heavy as k thresholded copies, each a
    /// binary randomized response with e^{ε'} = 2e^{ε₀/2} − 1 (a post-processing), so that
    /// exact composition is a lower bound on the true ε.
    #[test]
    fn laplace_bounds_are_above_the_truth(
        scale in 0.2f64..20.0,
        runs in 1u64..200,
        delta_exponent in 2.0f64..9.0,
    ) {
        let spec = spec(&format!(
            r#"{{"events": [{{"mechanism": "laplace", "scale": {scale}, "count": {runs}}}]}}"#
        ));
        let delta = 10f64.powf(-delta_exponent);
        let epsilon0 = 1.0 / scale;
        let truth_at_least = if runs == 1 {
            // Solve 1 − e^{(ε−ε₀)/2} = δ.
            (epsilon0 + 2.0 * (1.0 - delta).ln()).max(0.0)
        } else {
            let thresholded = (2.0 * (epsilon0 / 2.0).exp() - 1.0).ln();
            exact_binary_rr_epsilon(thresholded, runs, delta)
        };
        let comparison = compare(&spec, delta, AccountantOptions::default()).expect("runs");
        check_upper_bounds(&comparison, Some(truth_at_least));
        prop_assert!(comparison.row(RDP).is_some() && comparison.row(ZCDP).is_some());
    }
}

/// Extreme inputs (ranges of issue 3): every analytic method returns a finite value, +∞, or
/// "not applicable" — never NaN, never a panic.
#[test]
fn analytic_methods_survive_extreme_inputs() {
    let sigmas = [0.05, 0.3, 1.0, 50.0, 1e4];
    let rates = [1e-9, 1e-4, 0.5, 1.0];
    let counts = [1u64, 1000, 1_000_000_000];
    let deltas = [0.5, 1e-5, 1e-300];
    let methods: [(&str, comparison::Method); 4] = [
        ("rdp", comparison::rdp_epsilon),
        ("zcdp", comparison::zcdp_epsilon),
        ("optimal", comparison::optimal_composition_epsilon),
        ("clt", |s, d| {
            clt::estimate(s, d).map(|e| (e.epsilon, String::new()))
        }),
    ];
    let mut specs = Vec::new();
    for &sigma in &sigmas {
        for &count in &counts {
            for &q in &rates {
                specs.push(dp_sgd(sigma, q, count));
            }
            specs.push(spec(&format!(
                r#"{{"events": [{{"mechanism": "laplace", "scale": {sigma}, "count": {count},
                    "sampling": {{"poisson": 0.001}}}}]}}"#
            )));
            specs.push(spec(&format!(
                r#"{{"events": [{{"mechanism": "randomized_response", "epsilon": {},
                    "categories": 7, "count": {count}}}]}}"#,
                1.0 / sigma
            )));
            specs.push(spec(&format!(
                r#"{{"events": [{{"mechanism": "eps_delta", "epsilon": {}, "delta": 1e-12,
                    "count": {count}}}]}}"#,
                1.0 / sigma
            )));
            specs.push(spec(&format!(
                r#"{{"neighbouring": "replace", "events": [{{"mechanism": "gaussian",
                    "sigma": {sigma}, "count": {count},
                    "sampling": {{"fixed_batch": {{"batch_size": 1, "dataset_size": 1000000}}}}}}]}}"#
            )));
        }
    }
    for spec in &specs {
        for &delta in &deltas {
            for (name, run) in methods {
                if let Ok((epsilon, _)) = run(spec, delta) {
                    assert!(
                        !epsilon.is_nan() && epsilon >= 0.0,
                        "{name} gave {epsilon} for {spec:?} at δ = {delta}"
                    );
                }
            }
            for theorem in CompositionTheorem::ALL {
                if let Ok(events) = spec
                    .events()
                    .iter()
                    .map(|e| {
                        pld_accountant::analytic::event_bounds::approximate_dp(
                            e,
                            spec.neighbouring(),
                        )
                        .map(|g| (g, e.count()))
                    })
                    .collect::<Result<Vec<_>, _>>()
                {
                    let epsilon = theorem.epsilon(&events, delta);
                    assert!(!epsilon.is_nan() && epsilon >= 0.0, "{}", theorem.name());
                }
            }
        }
    }
}

#[test]
fn delta_outside_the_unit_interval_is_rejected() {
    for delta in [0.0, 1.0, -1e-5, f64::NAN, f64::INFINITY] {
        let error = compare(&dp_sgd(1.0, 0.01, 10), delta, AccountantOptions::default())
            .expect_err("invalid δ");
        assert!(error.to_string().contains("delta"), "{error}");
    }
}

/// The exact optimal composition of distinct (εᵢ, δᵢ) guarantees, by enumeration: each run of
/// event i is a leaky randomized response (+∞ w.p. δᵢ; ±εᵢ w.p. (1−δᵢ)·(p, 1−p)); the
/// composed loss of the finite part is Σᵢ (cᵢ − 2jᵢ)εᵢ with jᵢ ~ Binomial(cᵢ, 1 − pᵢ).
/// ε(δ) by bisection on δ(ε) = 1 − s + s·Σ mass·(1 − e^{ε − loss})₊, s = Π(1−δᵢ)^{cᵢ}.
fn exact_heterogeneous_optimal_epsilon(events: &[(f64, f64, u64)], delta: f64) -> f64 {
    let mut atoms = vec![(0.0f64, 0.0f64)];
    let mut survive = 1.0;
    for &(epsilon0, delta0, count) in events {
        survive *= (1.0 - delta0).powi(count as i32);
        let p = 1.0 / (1.0 + (-epsilon0).exp());
        let mut next = Vec::new();
        for &(loss, log_mass) in &atoms {
            for j in 0..=count {
                let log_term = log_binomial(count, j)
                    + (count - j) as f64 * p.ln()
                    + j as f64 * (1.0 - p).ln();
                next.push((
                    loss + (count as f64 - 2.0 * j as f64) * epsilon0,
                    log_mass + log_term,
                ));
            }
        }
        atoms = next;
    }
    let finite: Vec<(f64, f64)> = atoms
        .into_iter()
        .map(|(loss, log_mass)| (loss, survive * log_mass.exp()))
        .collect();
    // The infinite outcomes contribute 1 − s at every ε: bisect on the rest.
    epsilon_by_bisection(&finite, delta - (1.0 - survive))
}

/// Distinct events: the `optimal_composition` row is the exact heterogeneous optimum up to
/// the grid (never below it), never worse than basic or advanced composition, and well below
/// the homogeneous formula at the worst event's guarantee (what the row used to report).
#[test]
fn heterogeneous_optimal_composition_is_the_exact_optimum() {
    let events = [(0.1, 0.0, 30u64), (0.5, 1e-7, 6), (1.2, 1e-8, 2)];
    let json: Vec<String> = events
        .iter()
        .map(|(e, d, c)| {
            format!(r#"{{"mechanism": "eps_delta", "epsilon": {e}, "delta": {d}, "count": {c}}}"#)
        })
        .collect();
    let spec = spec(&format!(r#"{{"events": [{}]}}"#, json.join(",")));
    for delta in [1e-3, 1e-5, 1e-6] {
        let truth = exact_heterogeneous_optimal_epsilon(&events, delta);
        let (row, detail) = comparison::optimal_composition_epsilon(&spec, delta).expect("applies");
        assert!(
            at_most(truth, row) && row <= truth * (1.0 + 1e-6),
            "δ {delta}: row {row} ({detail}), exact optimum {truth}"
        );
        let approx: Vec<_> = events
            .iter()
            .map(|&(epsilon, delta, count)| {
                (
                    pld_accountant::analytic::composition_theorems::ApproxDp { epsilon, delta },
                    count,
                )
            })
            .collect();
        for theorem in CompositionTheorem::ALL {
            assert!(row <= theorem.epsilon(&approx, delta), "{}", theorem.name());
        }
        let worst =
            pld_accountant::analytic::optimal_composition::epsilon_for_delta(1.2, 1e-7, 38, delta);
        assert!(
            row < 0.5 * worst,
            "δ {delta}: {row} vs worst-for-all {worst}"
        );
    }
}
