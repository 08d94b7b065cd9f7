//! The ledger (record as releases happen, query at any time), its PLD budget filter, the
//! adaptive RDP and GDP filters, and the saved state.
//!
//! The acceptance run (10,000 DP-SGD steps recorded one at a time, ε(δ = 1e-5) after every
//! 1,000 equal to a fresh accountant's) is part of the default run; its timing against one
//! fresh composition is printed by the ignored `timing_*` tests:
//!
//! ```text
//! cargo test --release --test ledger -- --ignored --nocapture
//! ```

use pld_accountant::spec::{Event, MechanismSpec};
use pld_accountant::{
    Accountant, AccountantOptions, Budget, CompositionSpec, Error, GdpFilter, Ledger, Neighbouring,
    RdpFilter, LEDGER_FORMAT_VERSION,
};
use std::time::Instant;

/// One DP-SGD step: Gaussian σ = 1, Poisson q = 0.01.
fn dp_sgd_step() -> Event {
    MechanismSpec::gaussian(1.0)
        .and_then(|m| m.with_sensitivity(1.0)?.poisson(0.01))
        .unwrap()
}

fn gaussian(sigma: f64) -> Event {
    Event::new(
        MechanismSpec::gaussian(sigma)
            .and_then(|m| m.with_sensitivity(1.0))
            .unwrap(),
    )
}

fn fixed(step: f64) -> AccountantOptions {
    AccountantOptions {
        grid_step: Some(step),
        ..AccountantOptions::default()
    }
}

fn fresh(steps: u64, options: AccountantOptions) -> Accountant {
    let spec = CompositionSpec::dp_sgd(1.0, 0.01, steps, 1.0).unwrap();
    Accountant::new(&spec, options).unwrap()
}

fn relative_difference(a: f64, b: f64) -> f64 {
    if a == b {
        0.0
    } else {
        (a - b).abs() / a.abs().max(b.abs())
    }
}

/// Record 10,000 steps one at a time, asking ε(δ = 1e-5) after every 1,000; returns the
/// answers (upper, lower) and the ledger's total time.
fn ledger_run(options: AccountantOptions) -> (Vec<(f64, f64)>, f64) {
    let start = Instant::now();
    let mut ledger = Ledger::new(Neighbouring::AddRemove, options).unwrap();
    let mut answers = Vec::new();
    for i in 1..=10_000u64 {
        ledger.record(dp_sgd_step()).unwrap();
        if i % 1000 == 0 {
            let answer = ledger.epsilon_for_delta(1e-5).unwrap();
            answers.push((answer.epsilon.upper, answer.epsilon.lower));
        }
    }
    (answers, start.elapsed().as_secs_f64())
}

#[test]
fn acceptance_ten_thousand_steps_match_fresh_accountant() {
    let options = fixed(1e-3);
    let (answers, _) = ledger_run(options);
    assert_eq!(answers.len(), 10);
    for (i, &(upper, lower)) in answers.iter().enumerate() {
        let steps = 1000 * (i as u64 + 1);
        let expected = fresh(steps, options)
            .epsilon_for_delta(1e-5)
            .unwrap()
            .epsilon;
        assert!(
            relative_difference(upper, expected.upper) <= 1e-12
                && relative_difference(lower, expected.lower) <= 1e-12,
            "{steps} steps: ledger [{lower}, {upper}], fresh [{}, {}]",
            expected.lower,
            expected.upper
        );
    }
    // Sanity: ε grows with the steps, and the known value at 10,000 steps.
    assert!(answers.windows(2).all(|w| w[0].0 < w[1].0));
    assert!(answers[9].1 <= 6.1879 && 6.1877 <= answers[9].0);
}

/// Prints the ledger's total time for the acceptance run against one fresh composition of
/// all 10,000 steps, at a fixed grid and with the default (tolerance-driven) options.
#[test]
#[ignore = "timing figures, run with --ignored --nocapture"]
fn timing_ledger_against_one_fresh_composition() {
    for (name, options) in [
        ("fixed grid step 1e-3", fixed(1e-3)),
        ("fixed grid step 2e-4", fixed(2e-4)),
        ("default tolerance", AccountantOptions::default()),
    ] {
        // Best of five, for both sides (the machine may be shared).
        let fresh_time = (0..5)
            .map(|_| {
                let start = Instant::now();
                fresh(10_000, options).epsilon_for_delta(1e-5).unwrap();
                start.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min);
        let (answers, ledger_time) = (0..5)
            .map(|_| ledger_run(options))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        let record_time = {
            let start = Instant::now();
            let mut ledger = Ledger::new(Neighbouring::AddRemove, options).unwrap();
            for _ in 0..10_000 {
                ledger.record(dp_sgd_step()).unwrap();
            }
            start.elapsed().as_secs_f64()
        };
        // One more step after 10,000 and its query: the cost of composing one more event.
        let one_more = {
            let mut ledger = Ledger::new(Neighbouring::AddRemove, options).unwrap();
            ledger
                .record(dp_sgd_step().repeat(10_000).unwrap())
                .unwrap();
            ledger.epsilon_for_delta(1e-5).unwrap();
            (0..3)
                .map(|_| {
                    let start = Instant::now();
                    ledger.record(dp_sgd_step()).unwrap();
                    ledger.epsilon_for_delta(1e-5).unwrap();
                    start.elapsed().as_secs_f64()
                })
                .fold(f64::INFINITY, f64::min)
        };
        println!(
            "{name}: one more step after 10,000 and its query {one_more:.4} s ({:.2} of a fresh \
             composition)",
            one_more / fresh_time
        );
        let last = fresh(10_000, options)
            .epsilon_for_delta(1e-5)
            .unwrap()
            .epsilon;
        println!(
            "{name}: ledger {ledger_time:.3} s (10,000 records {record_time:.3} s + 10 queries), \
             one fresh composition {fresh_time:.3} s, ratio {:.2}; final ε ledger [{:.6}, {:.6}], \
             fresh [{:.6}, {:.6}]",
            ledger_time / fresh_time,
            answers[9].1,
            answers[9].0,
            last.lower,
            last.upper
        );
    }
}

#[test]
fn repeats_merge_into_one_group() {
    let mut ledger = Ledger::new(Neighbouring::AddRemove, fixed(1e-2)).unwrap();
    for _ in 0..3 {
        ledger.record(dp_sgd_step()).unwrap();
    }
    ledger.record(gaussian(4.0)).unwrap();
    ledger.record(dp_sgd_step().repeat(5).unwrap()).unwrap();
    let groups = ledger.groups();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0].count(), 8);
    assert_eq!(groups[1].count(), 1);
    assert_eq!(ledger.releases(), 5);
    assert_eq!(ledger.total_count(), 9);
    // Same answer as the merged specification.
    let spec = ledger.spec().unwrap().unwrap();
    let expected = Accountant::new(&spec, fixed(1e-2))
        .unwrap()
        .epsilon_for_delta(1e-5)
        .unwrap();
    assert_eq!(ledger.epsilon_for_delta(1e-5).unwrap(), expected);
    // A query at the same state is answered again identically.
    assert_eq!(ledger.epsilon_for_delta(1e-5).unwrap(), expected);
}

#[test]
fn empty_ledger_answers_zero_and_invalid_input_is_refused() {
    let ledger = Ledger::new(Neighbouring::AddRemove, AccountantOptions::default()).unwrap();
    assert_eq!(ledger.epsilon_for_delta(1e-5).unwrap().epsilon.upper, 0.0);
    assert_eq!(ledger.delta_for_epsilon(1.0).unwrap().delta.upper, 0.0);
    assert!(ledger.epsilon_for_delta(0.0).is_err());
    // An invalid event cannot be built, and is refused from JSON naming the field.
    let error = MechanismSpec::gaussian(-1.0).unwrap_err();
    assert!(error.to_string().contains("sigma = -1"), "{error}");
    let error = ledger
        .event_from_json(r#"{"mechanism": "gaussian", "sigma": -1}"#)
        .unwrap_err();
    assert!(error.to_string().contains("event.sigma"), "{error}");
    assert!(ledger.event_from_json(r#"{"mechanism": "nope"}"#).is_err());
    let fixed_batch = ledger.event_from_json(
        r#"{"mechanism": "gaussian", "sigma": 1, "sampling": {"fixed_batch": {"batch_size": 1, "dataset_size": 10}}}"#,
    );
    assert!(fixed_batch.is_err(), "fixed batches need replace-one");
    assert_eq!(ledger.total_count(), 0);
    assert!(Ledger::new(Neighbouring::AddRemove, fixed(0.0)).is_err());
}

#[test]
fn pld_filter_refusal_leaves_the_ledger_unchanged() {
    let mut ledger = Ledger::new(Neighbouring::AddRemove, fixed(1e-2)).unwrap();
    ledger.record(gaussian(1.0)).unwrap();
    ledger.epsilon_for_delta(1e-5).unwrap();
    let before = ledger.clone();
    let saved = ledger.to_json();
    let budget = Budget::new(1.0, 1e-5).unwrap();
    match ledger.try_record(gaussian(0.5), &budget) {
        Err(Error::BudgetExceeded {
            filter,
            epsilon,
            delta,
            budget,
        }) => {
            assert_eq!(filter, "pld");
            assert!(epsilon > budget && budget == 1.0 && delta == 1e-5);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(ledger, before);
    assert_eq!(ledger.to_json(), saved);
    let message = ledger
        .try_record(gaussian(0.5), &budget)
        .unwrap_err()
        .to_string();
    assert!(message.contains("over the budget ε = 1"), "{message}");
}

#[test]
fn pld_filter_stops_exactly_where_the_budget_is_exceeded() {
    let options = fixed(5e-3);
    let budget = Budget::new(1.0, 1e-5).unwrap();
    let mut ledger = Ledger::new(Neighbouring::AddRemove, options).unwrap();
    let mut accepted = 0u64;
    loop {
        match ledger.try_record(dp_sgd_step(), &budget) {
            Ok(answer) => {
                assert!(answer.epsilon.upper <= 1.0);
                accepted += 1;
            }
            Err(Error::BudgetExceeded { .. }) => break,
            Err(other) => panic!("{other}"),
        }
        assert!(accepted < 5000, "the filter never stopped");
    }
    assert_eq!(ledger.total_count(), accepted);
    let upper = |steps| {
        fresh(steps, options)
            .epsilon_for_delta(1e-5)
            .unwrap()
            .epsilon
            .upper
    };
    assert!(upper(accepted) <= 1.0, "accepted {accepted} steps");
    assert!(
        upper(accepted + 1) > 1.0,
        "stopped early at {accepted} steps"
    );
    assert!(accepted > 10);
}

#[test]
fn budget_in_the_state_is_checked_by_record_checked() {
    let budget = Budget::new(2.0, 1e-5).unwrap();
    let mut ledger = Ledger::new(Neighbouring::AddRemove, fixed(1e-2))
        .unwrap()
        .with_budget(budget);
    assert!(ledger.record_checked(gaussian(4.0)).unwrap().is_some());
    assert!(matches!(
        ledger.record_checked(gaussian(0.3)),
        Err(Error::BudgetExceeded { .. })
    ));
    assert_eq!(ledger.total_count(), 1);
    assert!(Budget::new(1.0, 0.0).is_err());
    assert!(Budget::new(f64::NAN, 1e-5).is_err());
}

/// Save and restore mid-way: the same answers as never having stopped, with the default
/// (tolerance-driven) options, whose grid depends on the queries before.
#[test]
fn saved_and_restored_ledger_answers_identically() {
    for options in [AccountantOptions::default(), fixed(2e-3)] {
        let mut running = Ledger::new(Neighbouring::AddRemove, options)
            .unwrap()
            .with_budget(Budget::new(8.0, 1e-6).unwrap());
        for _ in 0..300 {
            running.record(dp_sgd_step()).unwrap();
        }
        running.epsilon_for_delta(1e-5).unwrap();
        running.record(gaussian(10.0)).unwrap();
        running.delta_for_epsilon(1.0).unwrap();
        let saved = running.to_json();
        let mut restored = Ledger::from_json_str(&saved).unwrap();
        assert_eq!(restored, running);
        // Through serde as well.
        let via_serde: Ledger =
            serde_json::from_value(serde_json::to_value(&running).unwrap()).unwrap();
        assert_eq!(via_serde, running);
        for ledger in [&mut running, &mut restored] {
            for _ in 0..700 {
                ledger.record(dp_sgd_step()).unwrap();
            }
        }
        for delta in [1e-5, 1e-7] {
            assert_eq!(
                running.epsilon_for_delta(delta).unwrap(),
                restored.epsilon_for_delta(delta).unwrap()
            );
        }
        assert_eq!(
            running.delta_for_epsilon(2.0).unwrap(),
            restored.delta_for_epsilon(2.0).unwrap()
        );
        assert_eq!(restored.to_json(), running.to_json());
    }
}

#[test]
fn unknown_format_version_is_refused_naming_it() {
    let mut ledger = Ledger::new(Neighbouring::AddRemove, fixed(1e-2)).unwrap();
    ledger.record(dp_sgd_step()).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&ledger.to_json()).unwrap();
    assert_eq!(value["version"], LEDGER_FORMAT_VERSION);
    value["version"] = 7.into();
    let error = Ledger::from_json_value(&value).unwrap_err();
    assert_eq!(
        error,
        Error::UnsupportedVersion {
            version: "7".into(),
            supported: LEDGER_FORMAT_VERSION
        }
    );
    assert!(error.to_string().contains("version 7"), "{error}");
    let via_serde = serde_json::from_value::<Ledger>(value).unwrap_err();
    assert!(via_serde.to_string().contains("version 7"), "{via_serde}");
    assert!(matches!(
        Ledger::from_json_str("{\"format\": \"pld-ledger\"}"),
        Err(Error::MalformedSpec { .. })
    ));
    assert!(matches!(
        Ledger::from_json_str("[1, 2]"),
        Err(Error::MalformedSpec { .. })
    ));
}

/// Closed form: an unsampled Gaussian of σ has RDP α/(2σ²) at every order α, so with one
/// order the filter accepts exactly ⌊B(α)·2σ²/α⌋ events, B(α) = ε − ln(1/δ)/(α − 1).
#[test]
fn rdp_filter_single_order_stops_at_the_closed_form_count() {
    let (epsilon, delta, alpha, sigma) = (2.0, 1e-5, 12.0, 10.0);
    let budget = Budget::new(epsilon, delta).unwrap();
    let mut filter = RdpFilter::with_orders(budget, Neighbouring::AddRemove, vec![alpha]).unwrap();
    let rdp_budget = epsilon - (1.0 / delta).ln() / (alpha - 1.0);
    assert!((filter.rdp_budget()[0] - rdp_budget).abs() < 1e-15);
    let per_event = alpha / (2.0 * sigma * sigma);
    let expected = (rdp_budget / per_event).floor() as u64;
    assert!(expected > 10);
    while filter.try_record(&gaussian(sigma)).is_ok() {
        assert!(filter.accepted() <= expected);
    }
    assert_eq!(filter.accepted(), expected);
    // Refusal leaves the state unchanged, and says why.
    let before = filter.clone();
    let error = filter.try_record(&gaussian(sigma)).unwrap_err();
    assert_eq!(filter, before);
    match error {
        Error::BudgetExceeded {
            filter, epsilon, ..
        } => assert!(filter == "rdp" && epsilon > 2.0),
        other => panic!("{other}"),
    }
    // A smaller release may still fit (the filter is fully adaptive).
    let spare = rdp_budget - expected as f64 * per_event;
    let small_sigma = (alpha / (2.0 * spare)).sqrt() * 1.01;
    filter.try_record(&gaussian(small_sigma)).unwrap();
    assert!(filter.spent()[0] <= rdp_budget);
    assert!(filter.epsilon_spent() <= epsilon);
}

/// Adaptively chosen events (the noise picked from a pseudo-random "output" of the previous
/// step): whatever is accepted satisfies the filter's bound at some order.
#[test]
fn rdp_filter_adaptive_sequence_stays_within_budget() {
    let budget = Budget::new(3.0, 1e-6).unwrap();
    let mut filter = RdpFilter::new(budget, Neighbouring::AddRemove).unwrap();
    let mut state = 12345u64;
    let mut refused = 0;
    for _ in 0..3000 {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let output = (state >> 11) as f64 / (1u64 << 53) as f64;
        let event = if output < 0.5 {
            MechanismSpec::gaussian(0.8 + output)
                .and_then(|m| {
                    m.with_sensitivity(1.0)?
                        .poisson(0.02)?
                        .repeat(1 + (state % 3))
                })
                .unwrap()
        } else {
            Event::new(
                MechanismSpec::laplace(20.0 * output)
                    .and_then(|m| m.with_sensitivity(1.0))
                    .unwrap(),
            )
        };
        let before = filter.clone();
        match filter.try_record(&event) {
            Ok(()) => {}
            Err(Error::BudgetExceeded { .. }) => {
                assert_eq!(filter, before);
                refused += 1;
            }
            Err(other) => panic!("{other}"),
        }
        let fits = filter
            .spent()
            .iter()
            .zip(filter.rdp_budget())
            .any(|(s, b)| *s <= b);
        assert!(fits || filter.accepted() == 0);
        assert!(filter.epsilon_spent() <= 3.0);
    }
    assert!(refused > 0 && filter.accepted() > 0);
    // Not an RDP mechanism: refused with a reason, state unchanged.
    let before = filter.clone();
    let eps_delta = Event::new(MechanismSpec::eps_delta(0.1, 1e-9).unwrap());
    assert!(matches!(
        filter.try_record(&eps_delta),
        Err(Error::NotImplemented { .. })
    ));
    assert_eq!(filter, before);
}

/// Φ, for the closed-form Gaussian δ.
fn normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// Closed form: with the budget δ = δ_μ(ε) of μ = 1, μ_B = 1, and events of μ = 0.3 fit
/// exactly ⌊1/0.09⌋ = 11 times.
#[test]
fn gdp_filter_matches_the_closed_form() {
    let epsilon = 1.0;
    let delta = normal_cdf(-epsilon + 0.5) - epsilon.exp() * normal_cdf(-epsilon - 0.5);
    let budget = Budget::new(epsilon, delta).unwrap();
    let mut filter = GdpFilter::new(budget, Neighbouring::AddRemove).unwrap();
    assert!(
        (filter.mu_budget() - 1.0).abs() < 1e-9,
        "μ_B = {}",
        filter.mu_budget()
    );
    let event = gaussian(1.0 / 0.3);
    while filter.try_record(&event).is_ok() {}
    assert_eq!(filter.accepted(), 11);
    assert!(filter.mu_spent() <= filter.mu_budget());
    assert!(filter.epsilon_spent() <= epsilon);
    let before = filter.clone();
    assert!(matches!(
        filter.try_record(&event),
        Err(Error::BudgetExceeded { ref filter, epsilon, .. }) if filter == "gdp" && epsilon > 1.0
    ));
    assert_eq!(filter, before);
    // μ² = 1 − 0.99 = 0.01 is left: an event of μ = 0.09 fits, one of μ = 0.11 does not.
    assert!(filter.try_record(&gaussian(1.0 / 0.11)).is_err());
    filter.try_record(&gaussian(1.0 / 0.09)).unwrap();
    // Only unsampled Gaussians.
    assert!(matches!(
        filter.try_record(&dp_sgd_step()),
        Err(Error::NotImplemented { .. })
    ));
    // Replace-one doubles the shift: μ = 2/σ.
    let mut replace = GdpFilter::new(budget, Neighbouring::Replace).unwrap();
    let event = gaussian(2.0 / 0.3);
    while replace.try_record(&event).is_ok() {}
    assert_eq!(replace.accepted(), 11);
}
