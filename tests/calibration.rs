//! Calibration (`pld_accountant::calibration`): the best σ, scale, count or sampling rate
//! that still meets a target (ε, δ), in steps of trust:
//!
//! 1. closed forms: one unsampled Gaussian (analytic δ(ε; μ)), one Laplace release
//!    (`ε(δ) = ε₀ + 2 ln(1 − δ)`), Poisson-sampled `eps_delta` (the rate where the mass at
//!    +∞ reaches δ);
//! 2. brute force: the calibrated count against a scan of counts with the accountant itself;
//! 3. the DP-SGD acceptance case: σ meets, 0.99·σ does not, by fresh accountant calls;
//! 4. infeasible targets and plateaus end quickly with an error naming the field, or with the
//!    end of the searched range;
//! 5. bad problems and bad targets are refused before any accountant call.
//!
//! Every case is small; the whole file runs in a few seconds (release).

use pld_accountant::calibration::{Parameter, Stage, NOISE_RANGE, RESOLUTION};
use pld_accountant::{
    calibrate, Accountant, AccountantOptions, Calibration, CalibrationProblem, CalibrationProgress,
    CompositionSpec, Error, Gaussian,
};
use serde_json::Value;

/// Relative slack on the resolution check: the reported values are `exp` of coordinates
/// resolved to 0.99·ln(1 + 1e-4), so only rounding separates them from the bound.
const RESOLUTION_SLACK: f64 = 1e-12;

/// Accountant calls allowed for a well-behaved calibration (a proxy for speed that does not
/// depend on the machine; the DP-SGD case makes 8).
const TYPICAL_EVALUATIONS: u32 = 20;

/// Accountant calls allowed before an infeasible target is reported: one when the limit
/// (σ → ∞, q → 0, count = 1) already misses the target...
const LIMIT_EVALUATIONS: u32 = 1;
/// ... and a short search when only the end of the searched range does.
const RANGE_END_EVALUATIONS: u32 = 16;

fn problem(json: &str) -> CalibrationProblem {
    CalibrationProblem::from_json_str(json)
        .unwrap_or_else(|e| panic!("valid calibration problem refused: {e}\n{json}"))
}

/// Calibrate with default options, recording progress.
fn run(
    json: &str,
    epsilon: f64,
    delta: f64,
) -> (Result<Calibration, Error>, Vec<CalibrationProgress>) {
    run_with(json, epsilon, delta, AccountantOptions::default())
}

fn run_with(
    json: &str,
    epsilon: f64,
    delta: f64,
    options: AccountantOptions,
) -> (Result<Calibration, Error>, Vec<CalibrationProgress>) {
    let problem = problem(json);
    let mut log = Vec::new();
    let result = calibrate(&problem, epsilon, delta, options, &mut |p| log.push(*p));
    (result, log)
}

fn ok(json: &str, epsilon: f64, delta: f64) -> Calibration {
    let (result, log) = run(json, epsilon, delta);
    result.unwrap_or_else(|e| panic!("calibration failed: {e}\n{json}\nprogress: {log:#?}"))
}

/// Fresh accountant upper bound on ε(δ) with the unknown set to `value`.
fn upper_at(problem: &CalibrationProblem, value: f64, delta: f64) -> f64 {
    let spec = problem.spec_with(value).expect("value in range");
    Accountant::new(&spec, AccountantOptions::default())
        .and_then(|a| a.epsilon_for_delta(delta))
        .expect("accountant succeeds")
        .epsilon
        .upper
}

/// The relative gap between a calibrated value and its failing neighbour.
fn relative_gap(c: &Calibration) -> f64 {
    let failing = c.failing_value.expect("a failing value was found");
    (failing / c.value - 1.0).abs()
}

/// The general promises of a successful calibration.
fn check_promises(c: &Calibration, log: &[CalibrationProgress], json: &str) {
    assert!(
        c.epsilon.upper <= c.target_epsilon && c.epsilon.lower <= c.epsilon.upper,
        "{json}: {c:#?}"
    );
    if let Some(failing) = c.failing_epsilon {
        assert!(failing.upper > c.target_epsilon, "{json}: {c:#?}");
    }
    assert_eq!(
        log.len() as u32,
        c.evaluations,
        "{json}: one progress report per call"
    );
    let last = log.last().expect("progress was reported");
    assert_eq!(last.stage, Stage::Verification);
    assert_eq!(last.value, c.value);
    assert!(last.meets);
    assert!(log
        .windows(2)
        .all(|w| w[1].evaluations == w[0].evaluations + 1));
}

// ---------------------------------------------------------------------------------------
// 1. Closed forms
// ---------------------------------------------------------------------------------------

/// μ with `δ(ε; μ) = delta` for the Gaussian mechanism (δ increases with μ), by bisection on
/// the closed form to full precision.
fn gaussian_mu_for(epsilon: f64, delta: f64) -> f64 {
    let (mut lo, mut hi) = (1e-6, 1e3);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if Gaussian::delta_for_mu(mid, epsilon) > delta {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    0.5 * (lo + hi)
}

#[test]
fn unsampled_gaussian_sigma_matches_the_closed_form() {
    for (sensitivity, epsilon, delta) in [(1.0, 1.0, 1e-5), (2.0, 0.5, 1e-9), (0.3, 4.0, 1e-6)] {
        let json = format!(
            r#"{{"events": [{{"mechanism": "gaussian", "sigma": null, "sensitivity": {sensitivity}}}]}}"#
        );
        let (result, log) = run(&json, epsilon, delta);
        let c = result.unwrap_or_else(|e| panic!("{json}: {e}"));
        check_promises(&c, &log, &json);
        let exact = sensitivity / gaussian_mu_for(epsilon, delta);
        // The value meets, so it is at least the exact σ (up to the closed form's 1e-12
        // rounding allowance), and within the resolution of it.
        assert!(
            c.value >= exact * (1.0 - 1e-9) && c.value <= exact * (1.0 + RESOLUTION),
            "{json} ε = {epsilon} δ = {delta}: σ = {} vs exact {exact} (relative {:e})",
            c.value,
            c.value / exact - 1.0
        );
        assert!(
            relative_gap(&c) <= RESOLUTION * (1.0 + RESOLUTION_SLACK),
            "{c:#?}"
        );
        assert!(c.evaluations <= TYPICAL_EVALUATIONS, "{c:#?}");
    }
}

#[test]
fn laplace_scale_matches_the_closed_form() {
    // One Laplace release with ε₀ = Δ/b has δ(ε) = 1 − e^{(ε − ε₀)/2} for 0 ≤ ε ≤ ε₀, so
    // ε(δ) = ε₀ + 2 ln(1 − δ) and the calibrated scale is b = Δ / (ε − 2 ln(1 − δ)).
    for (sensitivity, epsilon, delta) in [(1.0, 1.0, 1e-5), (3.0, 0.2, 1e-3), (1.0, 5.0, 1e-8)] {
        let json = format!(
            r#"{{"events": [{{"mechanism": "laplace", "scale": null, "sensitivity": {sensitivity}}}]}}"#
        );
        let (result, log) = run(&json, epsilon, delta);
        let c = result.unwrap_or_else(|e| panic!("{json}: {e}"));
        check_promises(&c, &log, &json);
        let exact = sensitivity / (epsilon - 2.0 * (-delta).ln_1p());
        assert!(
            c.value >= exact * (1.0 - 1e-9) && c.value <= exact * (1.0 + RESOLUTION),
            "{json} ε = {epsilon} δ = {delta}: scale = {} vs exact {exact} (relative {:e})",
            c.value,
            c.value / exact - 1.0
        );
        assert_eq!(c.parameter, Parameter::Scale);
    }
}

#[test]
fn sampled_eps_delta_rate_stops_where_the_mass_at_infinity_reaches_delta() {
    // Ten Poisson-sampled (1, 1e-3)-DP events: the mass at +∞ is 1 − (1 − q·1e-3)^10, and
    // ε(δ) is finite exactly while that is ≤ δ = 1e-5 (the accountant inflates it by at most
    // a relative 1e-9).
    let json = r#"{"events": [{"mechanism": "eps_delta", "epsilon": 1, "delta": 1e-3,
                    "sampling": {"poisson": null}, "count": 10}]}"#;
    let (delta, event_delta, count) = (1e-5_f64, 1e-3_f64, 10.0_f64);
    let (result, log) = run(json, 2.0, delta);
    let c = result.unwrap_or_else(|e| panic!("{e}"));
    check_promises(&c, &log, json);
    // 1 − (1 − q·δₑ)^10 = δ  ⇔  q = (1 − (1 − δ)^{1/10}) / δₑ.
    let boundary = -((-delta).ln_1p() / count).exp_m1() / event_delta;
    assert!(
        c.value <= boundary && c.failing_value.unwrap() >= boundary * (1.0 - 1e-6),
        "q = {} .. {:?}, boundary {boundary}",
        c.value,
        c.failing_value
    );
    assert!(c.epsilon.upper.is_finite());
    assert_eq!(c.failing_epsilon.unwrap().upper, f64::INFINITY);
    assert!(c.evaluations <= 40, "a jump to ∞ is bisected: {c:#?}");
    // JSON: the infinite bracket is written "inf".
    let v: Value = serde_json::to_value(&c).unwrap();
    assert_eq!(v["failing_epsilon"]["upper"], "inf");
    assert_eq!(v["parameter"], "poisson");
    assert_eq!(v["location"], "events[0].sampling.poisson");
}

// ---------------------------------------------------------------------------------------
// 2. Brute force
// ---------------------------------------------------------------------------------------

#[test]
fn count_matches_a_scan_of_counts() {
    // Laplace (exact on its lattice): scan every count from 1.
    let json = r#"{"events": [{"mechanism": "laplace", "scale": 10, "count": null}]}"#;
    let c = ok(json, 1.0, 1e-5);
    let p = problem(json);
    let scanned = (1..=30)
        .take_while(|&k| upper_at(&p, k as f64, 1e-5) <= 1.0)
        .last()
        .expect("count 1 meets");
    assert_eq!(c.value, scanned as f64, "{c:#?}");
    assert_eq!(c.failing_value, Some(scanned as f64 + 1.0));
    let v: Value = serde_json::to_value(&c).unwrap();
    assert!(v["value"].is_u64(), "counts are JSON integers: {v}");

    // DP-SGD steps: the counts around the answer switch exactly there.
    let json = r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": 0.01},
                    "count": null}]}"#;
    let (result, log) = run(json, 2.0, 1e-5);
    let c = result.unwrap_or_else(|e| panic!("{e}"));
    check_promises(&c, &log, json);
    let p = problem(json);
    let k = c.value as u64;
    for count in k - 3..=k + 3 {
        let upper = upper_at(&p, count as f64, 1e-5);
        assert_eq!(
            upper <= 2.0,
            count <= k,
            "count {count}: upper ε = {upper} (calibrated {k})"
        );
    }
    assert!(c.evaluations <= TYPICAL_EVALUATIONS, "{c:#?}");
}

// ---------------------------------------------------------------------------------------
// 3. DP-SGD acceptance
// ---------------------------------------------------------------------------------------

const DP_SGD_SIGMA: &str = r#"{"events": [{"mechanism": "gaussian", "sigma": null,
    "sensitivity": 1, "sampling": {"poisson": 0.01}, "count": 1000}]}"#;

#[test]
fn dp_sgd_sigma_meets_and_one_percent_less_does_not() {
    let started = std::time::Instant::now();
    let (result, log) = run(DP_SGD_SIGMA, 2.0, 1e-5);
    let seconds = started.elapsed().as_secs_f64();
    let c = result.unwrap_or_else(|e| panic!("{e}"));
    check_promises(&c, &log, DP_SGD_SIGMA);
    let p = problem(DP_SGD_SIGMA);
    let at_value = upper_at(&p, c.value, 1e-5);
    let below = upper_at(&p, 0.99 * c.value, 1e-5);
    assert!(at_value <= 2.0, "σ = {} gives ε ≤ {at_value}", c.value);
    assert!(below > 2.0, "0.99·σ = {} gives ε ≤ {below}", 0.99 * c.value);
    let failing = c.failing_value.unwrap();
    assert!(
        failing < c.value && upper_at(&p, failing, 1e-5) > 2.0,
        "{c:#?}"
    );
    assert!(
        relative_gap(&c) <= RESOLUTION * (1.0 + RESOLUTION_SLACK),
        "{c:#?}"
    );
    assert!(
        c.evaluations <= TYPICAL_EVALUATIONS,
        "{} accountant calls ({seconds:.3} s): {log:#?}",
        c.evaluations
    );
    // The documented JSON keys, and the extra ones.
    let v: Value = serde_json::to_value(&c).unwrap();
    assert_eq!(v["parameter"], "sigma");
    assert_eq!(v["location"], "events[0].sigma");
    assert_eq!(v["value"].as_f64(), Some(c.value));
    assert_eq!(v["epsilon"]["upper"].as_f64(), Some(c.epsilon.upper));
    assert_eq!(v["epsilon"]["lower"].as_f64(), Some(c.epsilon.lower));
    assert_eq!(v["delta"].as_f64(), Some(1e-5));
    assert_eq!(v["target_epsilon"].as_f64(), Some(2.0));
    assert_eq!(v["failing_value"].as_f64(), Some(failing));
    assert_eq!(v["evaluations"].as_u64(), Some(c.evaluations as u64));
    assert_eq!(v["settings"]["method"], "pld");
}

#[test]
fn dp_sgd_rate_meets_and_one_percent_more_does_not() {
    let json = r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": null},
                    "count": 1000}]}"#;
    let (result, log) = run(json, 2.0, 1e-5);
    let c = result.unwrap_or_else(|e| panic!("{e}"));
    check_promises(&c, &log, json);
    let p = problem(json);
    assert!(upper_at(&p, c.value, 1e-5) <= 2.0);
    assert!(upper_at(&p, 1.01 * c.value, 1e-5) > 2.0, "{c:#?}");
    let failing = c.failing_value.unwrap();
    assert!(failing > c.value && upper_at(&p, failing, 1e-5) > 2.0);
    assert!(
        relative_gap(&c) <= RESOLUTION * (1.0 + RESOLUTION_SLACK),
        "{c:#?}"
    );
    assert!(c.evaluations <= TYPICAL_EVALUATIONS, "{c:#?}");
}

#[test]
fn a_fixed_grid_step_is_used_throughout() {
    let options = AccountantOptions {
        grid_step: Some(2e-3),
        ..Default::default()
    };
    let (result, log) = run_with(DP_SGD_SIGMA, 2.0, 1e-5, options);
    let c = result.unwrap_or_else(|e| panic!("{e}"));
    check_promises(&c, &log, DP_SGD_SIGMA);
    assert_eq!(c.settings.grid_step, Some(2e-3));
    assert!(
        log.iter().all(|p| p.stage != Stage::Coarse),
        "no coarse stage: {log:#?}"
    );
}

/// A fixed grid step too fine for the composition is the caller's to change: the first
/// evaluation reports it (as `pld epsilon` does) instead of the search treating every value
/// as failing.
#[test]
fn a_fixed_grid_step_too_fine_is_reported_at_once() {
    let options = AccountantOptions {
        grid_step: Some(1e-9),
        ..Default::default()
    };
    let (result, log) = run_with(DP_SGD_SIGMA, 2.0, 1e-5, options);
    // Too large for the grid limits, or for the memory budget: either is reported at once.
    assert!(
        matches!(
            result,
            Err(Error::GridTooLarge { .. } | Error::MemoryBudget { .. })
        ),
        "expected GridTooLarge or MemoryBudget, got {result:?}"
    );
    assert!(log.len() <= 2, "stopped at once: {log:#?}");
}

#[test]
fn noise_of_one_event_among_several() {
    // A sampled Gaussian beside Laplace releases: the Laplace events stay within the budget.
    let json = r#"{"events": [
        {"mechanism": "laplace", "scale": 20, "count": 5},
        {"mechanism": "gaussian", "sigma": null, "sampling": {"poisson": 0.01}, "count": 1000}]}"#;
    let (result, log) = run(json, 2.0, 1e-5);
    let c = result.unwrap_or_else(|e| panic!("{e}"));
    check_promises(&c, &log, json);
    assert_eq!(c.location, "events[1].sigma");
    assert_eq!(
        log[0].stage,
        Stage::Limit,
        "the σ → ∞ limit is checked first"
    );
    assert_eq!(log[0].value, f64::INFINITY);
    let p = problem(json);
    assert!(upper_at(&p, 0.99 * c.value, 1e-5) > 2.0);
}

// ---------------------------------------------------------------------------------------
// 4. Infeasible targets and plateaus
// ---------------------------------------------------------------------------------------

/// Assert an [`Error::Infeasible`] naming `field`, reached in few accountant calls.
fn assert_infeasible(json: &str, epsilon: f64, delta: f64, field: &str, calls: u32) {
    let (result, log) = run(json, epsilon, delta);
    match result {
        Err(ref e @ Error::Infeasible { field: ref f, .. }) => {
            assert_eq!(f, field, "{e}");
            assert!(
                e.to_string().contains(field),
                "message names the field: {e}"
            );
        }
        other => panic!("{json}: expected Infeasible naming {field}, got {other:?}"),
    }
    assert!(
        log.len() as u32 <= calls,
        "{json}: {} accountant calls before giving up",
        log.len()
    );
}

#[test]
fn infeasible_targets_are_reported_quickly() {
    // Even one run of a (0.1, 1e-3)-DP mechanism misses δ = 1e-5.
    assert_infeasible(
        r#"{"events": [{"mechanism": "eps_delta", "epsilon": 0.1, "delta": 1e-3, "count": null}]}"#,
        1.0,
        1e-5,
        "events[0].count",
        LIMIT_EVALUATIONS,
    );
    // Another event alone exceeds the ε budget: no σ can help (σ → ∞ limit).
    assert_infeasible(
        r#"{"events": [{"mechanism": "gaussian", "sigma": null},
                       {"mechanism": "eps_delta", "epsilon": 3, "delta": 0}]}"#,
        2.0,
        1e-5,
        "events[0].sigma",
        LIMIT_EVALUATIONS,
    );
    // Another event alone exceeds δ: no sampling rate can help (q → 0 limit).
    assert_infeasible(
        r#"{"events": [{"mechanism": "eps_delta", "epsilon": 1, "delta": 1e-3},
                       {"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": null}}]}"#,
        2.0,
        1e-5,
        "events[1].sampling.poisson",
        LIMIT_EVALUATIONS,
    );
    // The other event leaves 1e-3 of the budget, and 10^12 Gaussian releases need more even
    // at σ = 10^9 (the end of the searched range).
    assert_infeasible(
        r#"{"events": [{"mechanism": "gaussian", "sigma": null, "count": 1000000000000},
                       {"mechanism": "eps_delta", "epsilon": 1.999, "delta": 0}]}"#,
        2.0,
        1e-5,
        "events[0].sigma",
        RANGE_END_EVALUATIONS,
    );
}

#[test]
fn plateaus_end_at_the_searched_range() {
    // A mechanism that leaks nothing can run the largest count accepted.
    let json = r#"{"events": [{"mechanism": "mixture_of_gaussians", "sigma": 1,
                    "sensitivities": [0], "probabilities": [1], "count": null}]}"#;
    let (result, log) = run(json, 1.0, 1e-5);
    let c = result.unwrap_or_else(|e| panic!("{e}"));
    check_promises(&c, &log, json);
    assert_eq!(c.value, 1e12);
    assert_eq!(c.failing_value, None);
    assert!(c.evaluations <= TYPICAL_EVALUATIONS, "{c:#?}");

    // Sampling rate 1e-6 below δ = 1e-5: every σ meets, down to the end of the range.
    let json = r#"{"events": [{"mechanism": "gaussian", "sigma": null, "sensitivity": 2,
                    "sampling": {"poisson": 1e-6}}]}"#;
    let (result, log) = run(json, 1.0, 1e-5);
    let c = result.unwrap_or_else(|e| panic!("{e}"));
    check_promises(&c, &log, json);
    assert!(
        (c.value / (2.0 * NOISE_RANGE.0) - 1.0).abs() < 1e-9,
        "{c:#?}"
    );
    assert_eq!(c.search_range[0], c.value);
    assert_eq!(c.failing_value, None);
    let v: Value = serde_json::to_value(&c).unwrap();
    assert!(v["failing_value"].is_null());

    // A rate of 1 that meets is the answer.
    let json =
        r#"{"events": [{"mechanism": "gaussian", "sigma": 10, "sampling": {"poisson": null}}]}"#;
    let c = ok(json, 1.0, 1e-5);
    assert_eq!((c.value, c.failing_value), (1.0, None));
}

// ---------------------------------------------------------------------------------------
// 5. Bad problems and targets
// ---------------------------------------------------------------------------------------

fn refused(json: &str) -> Error {
    match CalibrationProblem::from_json_str(json) {
        Ok(p) => panic!("accepted {json} as a problem for {}", p.location()),
        Err(e) => e,
    }
}

#[test]
fn problems_name_their_unknown() {
    for (json, parameter, location) in [
        (
            r#"{"events": [{"mechanism": "gaussian", "sigma": null}]}"#,
            "sigma",
            "events[0].sigma",
        ),
        (
            r#"{"events": [{"mechanism": "discrete_laplace", "scale": 1}, {"mechanism": "laplace", "scale": null}]}"#,
            "scale",
            "events[1].scale",
        ),
        (
            r#"{"events": [{"mechanism": "randomized_response", "epsilon": 1, "count": null}]}"#,
            "count",
            "events[0].count",
        ),
        (
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": null}}]}"#,
            "poisson",
            "events[0].sampling.poisson",
        ),
        (
            r#"{"events": [{"mechanism": "mixture_of_gaussians", "sigma": null, "sensitivities": [1], "probabilities": [1]}]}"#,
            "sigma",
            "events[0].sigma",
        ),
    ] {
        let p = problem(json);
        assert_eq!(
            (p.parameter(), p.location()),
            (parameter, location),
            "{json}"
        );
    }
}

#[test]
fn spec_with_validates_the_value_like_the_parser() {
    let sigma = problem(r#"{"events": [{"mechanism": "gaussian", "sigma": null}]}"#);
    let spec = sigma.spec_with(2.5).unwrap();
    assert_eq!(
        spec,
        CompositionSpec::from_json_str(r#"{"events": [{"mechanism": "gaussian", "sigma": 2.5}]}"#)
            .unwrap()
    );
    let count = problem(r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "count": null}]}"#);
    assert_eq!(count.spec_with(7.0).unwrap().events()[0].count(), 7);
    let rate = problem(
        r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": null}}]}"#,
    );
    for (p, value, name) in [
        (&sigma, -1.0, "events[0].sigma"),
        (&sigma, f64::NAN, "events[0].sigma"),
        (&sigma, f64::INFINITY, "events[0].sigma"),
        (&count, 2.5, "events[0].count"),
        (&count, 0.0, "events[0].count"),
        (&rate, 1.5, "events[0].sampling.poisson"),
        (&rate, 0.0, "events[0].sampling.poisson"),
    ] {
        match p.spec_with(value) {
            Err(e @ Error::InvalidParameter { .. }) => {
                assert!(e.to_string().contains(name), "{value}: {e}")
            }
            other => panic!("{name} = {value}: expected InvalidParameter, got {other:?}"),
        }
    }
}

#[test]
fn problems_without_exactly_one_calibratable_null_are_refused() {
    // No null.
    let e = refused(r#"{"events": [{"mechanism": "gaussian", "sigma": 1}]}"#);
    assert!(matches!(e, Error::MissingParameter { .. }), "{e}");
    assert!(e.to_string().contains("null"), "{e}");
    // Two nulls: both named.
    let e = refused(r#"{"events": [{"mechanism": "gaussian", "sigma": null, "count": null}]}"#);
    assert!(matches!(e, Error::Incompatible { .. }), "{e}");
    assert!(
        e.to_string().contains("events[0].sigma") && e.to_string().contains("events[0].count"),
        "{e}"
    );
    // Nulls where nothing can be calibrated: named, with the calibratable fields listed.
    for (json, field) in [
        (
            r#"{"events": [{"mechanism": "randomized_response", "epsilon": null}]}"#,
            "events[0].epsilon",
        ),
        (
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sensitivity": null}]}"#,
            "events[0].sensitivity",
        ),
        (
            r#"{"events": [{"mechanism": "laplace", "sigma": null}]}"#,
            "events[0].sigma",
        ),
        (
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": null}]}"#,
            "events[0].sampling",
        ),
        (
            r#"{"neighbouring": null, "events": [{"mechanism": "gaussian", "sigma": 1}]}"#,
            "neighbouring",
        ),
        (
            r#"{"events": [{"mechanism": "mixture_of_gaussians", "sigma": 1, "sensitivities": [0, null], "probabilities": [0.5, 0.5]}]}"#,
            "events[0].sensitivities[1]",
        ),
        (
            r#"{"events": [{"mechanism": null, "sigma": 1}]}"#,
            "events[0].mechanism",
        ),
    ] {
        let e = refused(json);
        assert!(
            matches!(&e, Error::InvalidParameter { name, .. } if name == field),
            "{json}: {e:?}"
        );
        let message = e.to_string();
        assert!(
            message.contains("sigma") && message.contains("count"),
            "{message}"
        );
    }
    assert!(
        refused(r#"{"events": [{"mechanism": "laplace", "sigma": null}]}"#)
            .to_string()
            .contains("for laplace: scale")
    );
    assert!(
        refused(r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": null}]}"#)
            .to_string()
            .contains("{\"poisson\": null}")
    );
}

#[test]
fn the_rest_of_the_problem_is_validated_like_a_spec() {
    for (json, field) in [
        // count null with sampling that does not fit the relation
        (
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "count": null,
                "sampling": {"fixed_batch": {"batch_size": 10, "dataset_size": 100}}}]}"#,
            "events[0].sampling.fixed_batch",
        ),
        // Poisson rate under replace-one
        (
            r#"{"neighbouring": "replace", "events": [{"mechanism": "gaussian", "sigma": 1,
                "sampling": {"poisson": null}}]}"#,
            "events[0].sampling.poisson",
        ),
        // a mechanism that cannot be sampled
        (
            r#"{"events": [{"mechanism": "mixture_of_gaussians", "sigma": 1, "sensitivities": [1],
                "probabilities": [1], "sampling": {"poisson": null}}]}"#,
            "events[0].sampling",
        ),
        // another field out of range
        (
            r#"{"events": [{"mechanism": "gaussian", "sigma": null, "sensitivity": -1}]}"#,
            "events[0].sensitivity",
        ),
        (
            r#"{"events": [{"mechanism": "gaussian", "sigma": null}, {"mechanism": "laplace", "scale": 0}]}"#,
            "events[1].scale",
        ),
    ] {
        let e = refused(json);
        assert!(e.to_string().contains(field), "{json}: {e}");
    }
    assert!(matches!(
        refused("{\"events\": ["),
        Error::MalformedSpec { .. }
    ));
}

#[test]
fn bad_targets_are_refused_before_any_work() {
    for (epsilon, delta, name) in [
        (0.0, 1e-5, "epsilon"),
        (-1.0, 1e-5, "epsilon"),
        (f64::NAN, 1e-5, "epsilon"),
        (f64::INFINITY, 1e-5, "epsilon"),
        (1.0, 0.0, "delta"),
        (1.0, 1.0, "delta"),
        (1.0, f64::NAN, "delta"),
        (1.0, -1e-5, "delta"),
    ] {
        let (result, log) = run(DP_SGD_SIGMA, epsilon, delta);
        match result {
            Err(Error::InvalidParameter { name: n, .. }) => assert_eq!(n, name),
            other => panic!("ε = {epsilon}, δ = {delta}: expected InvalidParameter, got {other:?}"),
        }
        assert!(log.is_empty(), "no accountant call for a bad target");
    }
}
