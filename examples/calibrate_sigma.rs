//! Calibrating DP-SGD's noise: the smallest σ whose guaranteed ε stays within a target.
//!
//! The specification is an ordinary one with the unknown written `null`; `calibrate` searches
//! it, and the answer's bracket comes from a fresh accountant call at the value returned, so
//! its upper bound is itself the guarantee (at most the target).
//!
//! Run with `cargo run --release --example calibrate_sigma`.

use pld_accountant::{calibrate, AccountantOptions, CalibrationProblem};

fn main() -> Result<(), pld_accountant::Error> {
    // 10,000 steps at Poisson rate 0.01, clipping norm 1: what σ for (ε, δ) = (2, 1e-5)?
    let problem = CalibrationProblem::from_json_str(
        r#"{"events": [{"mechanism": "gaussian", "sigma": null,
                        "sampling": {"poisson": 0.01}, "count": 10000}]}"#,
    )?;
    let (target_epsilon, delta) = (2.0, 1e-5);
    let mut calls = 0;
    let result = calibrate(
        &problem,
        target_epsilon,
        delta,
        AccountantOptions::default(),
        &mut |_progress| calls += 1,
    )?;
    println!(
        "smallest σ with ε ≤ {target_epsilon} at δ = {delta:e}: {:.4} ({} = {:.4}, {calls} accountant calls)",
        result.value, result.location, result.value
    );
    println!(
        "guaranteed ε at that σ: [{:.4}, {:.4}]",
        result.epsilon.lower, result.epsilon.upper
    );
    assert!(result.epsilon.upper <= target_epsilon);
    Ok(())
}
