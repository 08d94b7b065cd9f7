//! Shuffled batches (`{"shuffle": {"steps_per_epoch": t}}`) through the spec and the accountant.
//!
//! What is independent of the code under test:
//! - `fixtures/shuffle/chua_lower.json` (scipy and dp_accounting 0.6.0, script beside it): the
//!   lower bound of Chua et al. (ICML 2024) — for one epoch the best threshold test on the
//!   epoch's largest output, written from their formula; for several epochs the binned law
//!   of that output composed by dp_accounting — the closed-form Gaussian without
//!   amplification, and what Poisson accounting at rate 1/t claims.
//! - t = 1 is no sampling: both bounds must be the unsampled Gaussian's, bit for bit.
//! - Under replace, the datasets "every other record equal to the neighbour's" give random
//!   allocation's pair with the replace shift: the shuffle's lower bound is at least that
//!   pair's (accounted as random allocation with sensitivity 2Δ under add/remove).

mod support;

use pld_accountant::mechanism::analytic_gaussian;
use pld_accountant::{Accountant, AccountantOptions, CompositionSpec};
use support::{fixture, number};

/// A one-event spec; `sampling` is the JSON value of the event's `sampling` key, or empty
/// for none.
fn spec(
    relation: &str,
    sigma: f64,
    sensitivity: f64,
    sampling: &str,
    count: u64,
) -> CompositionSpec {
    let sampling = if sampling.is_empty() {
        String::new()
    } else {
        format!(r#""sampling": {sampling},"#)
    };
    CompositionSpec::from_json_str(&format!(
        r#"{{"neighbouring": "{relation}", "events": [{{"mechanism": "gaussian",
            "sigma": {sigma}, "sensitivity": {sensitivity}, {sampling} "count": {count}}}]}}"#
    ))
    .unwrap()
}

fn shuffled(sigma: f64, t: u64, epochs: u64) -> CompositionSpec {
    spec(
        "add_remove",
        sigma,
        1.0,
        &format!(r#"{{"shuffle": {{"steps_per_epoch": {t}}}}}"#),
        epochs,
    )
}

fn delta(spec: &CompositionSpec, epsilon: f64) -> (f64, f64) {
    let a = Accountant::new(spec, AccountantOptions::default())
        .unwrap()
        .delta_for_epsilon(epsilon)
        .unwrap();
    (a.delta.lower, a.delta.upper)
}

/// Our lower bound against the threshold test (one epoch): the intervals we bin the largest
/// output into refine every threshold up to half an interval, and the masses carry a 1e-9
/// safety margin, so ours may fall short of the best threshold by a hair only.
/// The grid's rounding (losses moved down onto the grid, at the step the accountant stops
/// at: its refinement stops once the bracket, wide by nature, no longer narrows) costs up
/// to about 5e-4 of δ more at small ε (σ 2, ε 0.05).
const THRESHOLD_RELATIVE: f64 = 1e-3;
/// Against the composed binned law (several epochs, dp_accounting's slices of 1e-3σ² with
/// losses floored to 1e-3): a different binning, so not an order; ours must not be looser by
/// more than this.
const COMPOSED_RELATIVE: f64 = 1e-2;

/// The fixture's cases, split: every case of σ ≥ 0.6 and the first of each heavy-tailed
/// group (σ, steps per epoch, epochs) by default, the other heavy-tailed cases (σ 0.35 and
/// 0.5: 10 to 12 s each, the lower bound being random allocation's at heavy tails) in
/// [`chua_et_al_heavy_tailed_cases`] (`--ignored`), so that the suite stays short.
fn chua_cases(heavy_rest: bool) -> Vec<serde_json::Value> {
    let doc = fixture("shuffle/chua_lower.json");
    let cases = doc["cases"].as_array().unwrap();
    assert!(cases.len() >= 30);
    let mut groups_seen = Vec::new();
    cases
        .iter()
        .filter(|case| {
            let group = (
                number(case, "sigma"),
                case["steps_per_epoch"].as_u64().unwrap(),
                case["epochs"].as_u64().unwrap(),
            );
            let first_of_group = !groups_seen.contains(&group);
            groups_seen.push(group);
            let by_default = group.0 >= 0.6 || first_of_group;
            by_default != heavy_rest
        })
        .cloned()
        .collect()
}

/// The cases on two threads (each query is mostly serial): a failing case panics its
/// thread, and the scope then fails the test after the panic message has named the case.
fn check_chua_cases(cases: &[serde_json::Value]) {
    let halves = cases.split_at(cases.len() / 2);
    std::thread::scope(|scope| {
        for half in [halves.0, halves.1] {
            scope.spawn(move || half.iter().for_each(check_chua_case));
        }
    });
}

#[test]
fn brackets_contain_chua_et_al_lower_bound_and_meet_the_unamplified_gaussian() {
    let cases = chua_cases(false);
    // 17 cases of σ ≥ 0.6 and one of each of the three heavy-tailed groups.
    assert_eq!(cases.len(), 20);
    check_chua_cases(&cases);
}

/// The heavy-tailed cases the default run leaves out (about 2 minutes on two cores).
#[test]
#[ignore = "about a minute: cargo test --release --test shuffle -- --ignored"]
fn chua_et_al_heavy_tailed_cases() {
    let cases = chua_cases(true);
    assert_eq!(cases.len(), 11);
    check_chua_cases(&cases);
}

/// One case of `shuffle/chua_lower.json`: our bracket against Chua et al.'s lower bound,
/// the unamplified Gaussian and the Poisson claim.
fn check_chua_case(case: &serde_json::Value) {
    let label = case["label"].as_str().unwrap();
    let sigma = number(case, "sigma");
    let t = case["steps_per_epoch"].as_u64().unwrap();
    let epochs = case["epochs"].as_u64().unwrap();
    let eps = number(case, "epsilon");
    let (lower, upper) = delta(&shuffled(sigma, t, epochs), eps);
    let chua = number(case, "delta_lower");
    let unamplified = number(case, "delta_deterministic");
    let claim = number(case, "delta_poisson");
    let tolerance = if case["method"] == "threshold" {
        THRESHOLD_RELATIVE
    } else {
        COMPOSED_RELATIVE
    };
    assert!(
        lower >= chua * (1.0 - tolerance),
        "{label} ε {eps}: our lower {lower} below Chua et al.'s {chua}"
    );
    assert!(lower <= upper, "{label} ε {eps}: {lower} > {upper}");
    // The upper bound is the Gaussian without amplification, to the accountant's
    // tolerance (and never below it).
    assert!(
        upper >= unamplified * (1.0 - 1e-12) && upper <= unamplified * (1.0 + 1e-4) + 1e-15,
        "{label} ε {eps}: upper {upper} vs the unamplified Gaussian {unamplified}"
    );
    // In every case here the Poisson claim is below what is proven to leak.
    assert!(
        claim < lower,
        "{label} ε {eps}: Poisson claims {claim}, proven lower bound {lower}"
    );
}

#[test]
fn one_batch_per_epoch_is_the_unsampled_gaussian() {
    for (relation, shift) in [("add_remove", 1.0), ("replace", 2.0)] {
        let one = spec(
            relation,
            0.8,
            1.0,
            r#"{"shuffle": {"steps_per_epoch": 1}}"#,
            7,
        );
        let plain = spec(relation, 0.8, 1.0, "", 7);
        let mu = (7.0f64).sqrt() * shift / 0.8;
        for eps in [0.0, 0.5, 2.0, 6.0] {
            let (lower, upper) = delta(&one, eps);
            assert_eq!((lower, upper), delta(&plain, eps), "{relation} ε {eps}");
            // And that is the Gaussian of μ = √7·shift/σ, to its rounding allowance.
            let exact = analytic_gaussian::delta_for_epsilon(mu, eps);
            assert!(
                lower <= exact.upper && upper >= exact.lower,
                "{relation} ε {eps}"
            );
            assert!((upper - exact.upper).abs() <= 1e-12 * exact.upper.max(1e-300));
        }
    }
}

#[test]
fn replace_is_at_least_random_allocation_with_the_replace_shift() {
    let (sigma, t, epochs) = (3.0, 20, 3);
    let shuffle = spec(
        "replace",
        sigma,
        1.0,
        &format!(r#"{{"shuffle": {{"steps_per_epoch": {t}}}}}"#),
        epochs,
    );
    let allocation = spec(
        "add_remove",
        sigma,
        2.0,
        &format!(r#"{{"random_allocation": {{"steps_per_epoch": {t}}}}}"#),
        epochs,
    );
    let unamplified =
        analytic_gaussian::delta_for_epsilon((epochs as f64).sqrt() * 2.0 / sigma, 1.0);
    // Both on the same fixed grid: the same pair, rounded the same way.
    let options = AccountantOptions {
        grid_step: Some(2e-3),
        ..AccountantOptions::default()
    };
    let on_grid = |spec: &CompositionSpec, eps: f64| {
        let a = Accountant::new(spec, options)
            .unwrap()
            .delta_for_epsilon(eps)
            .unwrap();
        (a.delta.lower, a.delta.upper)
    };
    for eps in [0.1, 0.5, 1.0] {
        let (lower, upper) = on_grid(&shuffle, eps);
        let (allocated_lower, _) = on_grid(&allocation, eps);
        assert!(
            lower >= allocated_lower * (1.0 - 1e-12),
            "ε {eps}: {lower} < {allocated_lower}"
        );
        assert!(lower <= upper);
        if eps == 1.0 {
            assert!(upper >= unamplified.upper * (1.0 - 1e-12));
        }
    }
}

#[test]
fn shuffle_is_refused_where_it_is_not_accounted() {
    for bad in [
        r#"{"events": [{"mechanism": "laplace", "scale": 1, "sampling": {"shuffle": {"steps_per_epoch": 10}}}]}"#,
        r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": {"shuffle": {"steps_per_epoch": 0}}}]}"#,
        r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": {"shuffle": {}}}]}"#,
        r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": {"shuffle": {"steps_per_epoch": 10, "k": 2}}}]}"#,
        r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": {"shuffle": 10}}]}"#,
    ] {
        let err = CompositionSpec::from_json_str(bad).unwrap_err().to_string();
        assert!(
            err.contains("shuffle") || err.contains("sampling"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn the_spec_round_trips() {
    let s = shuffled(1.0, 100, 5);
    let json = serde_json::to_string(&s).unwrap();
    assert!(
        json.contains(r#""shuffle":{"steps_per_epoch":100}"#),
        "{json}"
    );
    let back: CompositionSpec = serde_json::from_str(&json).unwrap();
    assert_eq!(back, s);
}

/// Past the grid's loss range (600 nats) the upper bound is the closed-form Gaussian of the
/// composed epochs, not ∞: σ 1, t 10⁶, 1000 epochs is the unamplified Gaussian of
/// μ = √1000, whose ε at δ 1e-5 is about 634 nats. It must equal (to the rounding of μ) the
/// answer for that Gaussian written as one event, and stay above the lower bound.
#[test]
fn upper_bound_past_the_grid_range_is_the_closed_form_gaussian() {
    let shuffled_spec = shuffled(1.0, 1_000_000, 1000);
    let answer = Accountant::new(&shuffled_spec, AccountantOptions::default())
        .unwrap()
        .epsilon_for_delta(1e-5)
        .unwrap();
    let one_gaussian = spec("add_remove", 1.0, 1000f64.sqrt(), "", 1);
    let reference = Accountant::new(&one_gaussian, AccountantOptions::default())
        .unwrap()
        .epsilon_for_delta(1e-5)
        .unwrap();
    assert_eq!(reference.settings.method, "analytic_gaussian");
    let exact = reference.epsilon.upper;
    assert!((633.0..635.0).contains(&exact), "reference ε {exact}");
    let upper = answer.epsilon.upper;
    assert!(
        upper >= reference.epsilon.lower && upper <= exact * (1.0 + 1e-12),
        "shuffled upper {upper} against the Gaussian's [{}, {exact}]",
        reference.epsilon.lower
    );
    assert_eq!(
        answer.settings.upper_method.as_deref(),
        Some("analytic_gaussian")
    );
    assert!(answer.epsilon.lower > 0.0 && answer.epsilon.lower <= upper);
    // δ(ε) too: at ε 640 the Gaussian's δ is finite and small.
    let delta = Accountant::new(&shuffled_spec, AccountantOptions::default())
        .unwrap()
        .delta_for_epsilon(640.0)
        .unwrap();
    let exact_delta = analytic_gaussian::delta_for_epsilon(1000f64.sqrt(), 640.0).upper;
    assert!(exact_delta > 0.0 && exact_delta < 1e-5);
    assert!(
        delta.delta.upper >= exact_delta * (1.0 - 1e-9) && delta.delta.upper <= exact_delta * 1.001,
        "δ upper {} against the Gaussian's {exact_delta}",
        delta.delta.upper
    );
}

/// The closed form applies only when every group is shuffled: a Poisson-sampled event beside
/// the shuffled ones keeps the grid's upper bound (no `upper_method`); an unsampled Gaussian
/// beside them joins the closed form (μ² adds up).
#[test]
fn closed_form_upper_only_when_every_group_is_shuffled_or_unsampled() {
    let with = |extra: &str| {
        CompositionSpec::from_json_str(&format!(
            r#"{{"neighbouring": "add_remove", "events": [
                {{"mechanism": "gaussian", "sigma": 2, "sensitivity": 1,
                  "sampling": {{"shuffle": {{"steps_per_epoch": 100}}}}, "count": 3}},
                {extra}]}}"#
        ))
        .unwrap()
    };
    let poisson = with(
        r#"{"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": 0.01}, "count": 10}"#,
    );
    let answer = Accountant::new(&poisson, AccountantOptions::default())
        .unwrap()
        .epsilon_for_delta(1e-5)
        .unwrap();
    assert_eq!(answer.settings.upper_method, None);
    let unsampled = with(r#"{"mechanism": "gaussian", "sigma": 4, "sensitivity": 1, "count": 2}"#);
    let answer = Accountant::new(&unsampled, AccountantOptions::default())
        .unwrap()
        .epsilon_for_delta(1e-5)
        .unwrap();
    // μ² = 3·(1/2)² + 2·(1/4)² = 0.875.
    let exact = analytic_gaussian::epsilon_upper_for_delta(0.875f64.sqrt(), 1e-5);
    assert_eq!(
        answer.settings.upper_method.as_deref(),
        Some("analytic_gaussian")
    );
    assert!(
        answer.epsilon.upper >= exact * (1.0 - 1e-12)
            && answer.epsilon.upper <= exact * (1.0 + 1e-12),
        "upper {} against the closed form {exact}",
        answer.epsilon.upper
    );
}
