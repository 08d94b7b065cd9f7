//! Answers, comparisons and calibrations read back from their own JSON unchanged (serde both
//! ways), infinities included (written as the string "inf").

use pld_accountant::{
    calibrate, compare, Accountant, AccountantOptions, Bracket, Calibration, CalibrationProblem,
    Comparison, CompositionSpec, DeltaAnswer, EpsilonAnswer,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt::Debug;

/// Serialize, read back, and require equality (and the same JSON again).
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(value: &T) -> T {
    let text = serde_json::to_string(value).expect("serializes");
    let back: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(&back, value, "{text}");
    assert_eq!(serde_json::to_string(&back).expect("serializes"), text);
    back
}

fn options() -> AccountantOptions {
    AccountantOptions {
        grid_step: Some(1e-3),
        ..AccountantOptions::default()
    }
}

#[test]
fn epsilon_and_delta_answers_round_trip() -> pld_accountant::Result<()> {
    let dp_sgd = CompositionSpec::dp_sgd(1.0, 0.01, 1000, 1.0)?;
    let accountant = Accountant::new(&dp_sgd, options())?;
    round_trip(&accountant.epsilon_for_delta(1e-5)?);
    round_trip(&accountant.delta_for_epsilon(1.0)?);
    // The closed-form path (no grid step in its settings).
    let gaussian = CompositionSpec::dp_sgd(2.0, 1.0, 10, 1.0)?;
    let answer =
        Accountant::new(&gaussian, AccountantOptions::default())?.epsilon_for_delta(1e-5)?;
    assert!(answer.settings.grid_step.is_none());
    round_trip(&answer);
    // An infinite upper bound: δ below what an (ε, δ) event guarantees.
    let pure = CompositionSpec::from_json_str(
        r#"{"events": [{"mechanism": "eps_delta", "epsilon": 1, "delta": 1e-3}]}"#,
    )?;
    let answer: EpsilonAnswer = Accountant::new(&pure, options())?.epsilon_for_delta(1e-6)?;
    assert_eq!(answer.epsilon.upper, f64::INFINITY);
    let text = serde_json::to_string(&answer).expect("serializes");
    assert!(text.contains(r#""upper":"inf""#), "{text}");
    round_trip(&answer);
    let _: DeltaAnswer = round_trip(&Accountant::new(&pure, options())?.delta_for_epsilon(0.5)?);
    Ok(())
}

#[test]
fn brackets_read_inf_in_any_spelling_and_refuse_other_strings() {
    let b: Bracket = serde_json::from_str(r#"{"upper": "Infinity", "lower": 2}"#).expect("reads");
    assert_eq!(b.upper, f64::INFINITY);
    assert_eq!(b.lower, 2.0);
    let error = serde_json::from_str::<Bracket>(r#"{"upper": "lots", "lower": 0}"#)
        .expect_err("refused")
        .to_string();
    assert!(error.contains("lots"), "{error}");
}

#[test]
fn comparison_round_trips() -> pld_accountant::Result<()> {
    let spec = CompositionSpec::from_json_str(
        r#"{"events": [{"mechanism": "laplace", "scale": 2, "count": 12},
                       {"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": 0.01},
                        "count": 100}]}"#,
    )?;
    let comparison: Comparison = compare(&spec, 1e-6, options())?;
    assert!(!comparison.rows.is_empty() && !comparison.not_applicable.is_empty());
    round_trip(&comparison);
    Ok(())
}

#[test]
fn calibration_round_trips() -> pld_accountant::Result<()> {
    let problem = CalibrationProblem::from_json_str(
        r#"{"events": [{"mechanism": "gaussian", "sigma": null,
                        "sampling": {"poisson": 0.01}, "count": 100}]}"#,
    )?;
    let result: Calibration = calibrate(&problem, 1.0, 1e-5, options(), &mut |_| {})?;
    round_trip(&result);
    Ok(())
}
