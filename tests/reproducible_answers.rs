//! An answer depends on its inputs only, not on what the process computed before: the same
//! query after others gives the same bits as `pld` in a new process. (The Python package and
//! any long-running user ask many questions in one process, and are promised the CLI's
//! numbers.)
//!
//! Found by the Python package's CLI-equality tests: with one shared FFT planner, ε(1e-9) of
//! this composition asked after a query at `grid_step` 1e-3 moved by 1e-9 relative, because
//! the planner built a length's transform from the sub-transforms earlier lengths had cached.
//! (One test in this file: it must be the first query of its process.)

use assert_cmd::Command;
use pld_accountant::{Accountant, AccountantOptions, Bracket, CompositionSpec, Tolerance};

const SPEC: &str = r#"{"events": [{"mechanism": "discrete_laplace", "scale": 3.0, "count": 20},
    {"mechanism": "discrete_gaussian", "sigma": 4.0, "sensitivity": 2, "count": 5}]}"#;

fn epsilon(spec: &CompositionSpec, delta: f64, options: AccountantOptions) -> Bracket {
    Accountant::new(spec, options)
        .and_then(|a| a.epsilon_for_delta(delta))
        .unwrap_or_else(|e| panic!("δ = {delta:e}, {options:?}: {e}"))
        .epsilon
}

/// ε(1e-9) of [`SPEC`] by `pld` in a process of its own.
fn in_a_new_process() -> Bracket {
    let output = Command::cargo_bin("pld")
        .expect("the pld binary is built for integration tests")
        .args([
            "epsilon", "--spec", "-", "--delta", "1e-9", "--format", "json",
        ])
        .write_stdin(SPEC)
        .output()
        .expect("pld runs");
    assert!(output.status.success(), "{output:?}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    serde_json::from_value(json["epsilon"].clone()).expect("a bracket")
}

#[test]
fn a_query_gives_the_same_bits_whatever_the_process_computed_before() {
    let spec = CompositionSpec::from_json_str(SPEC).expect("valid");
    let dp_sgd = CompositionSpec::dp_sgd(1.0, 0.01, 1000, 1.0).expect("valid");
    let defaults = AccountantOptions::default();
    // Other queries first: they plan other FFT lengths (other grids, other windows).
    let fixed = AccountantOptions {
        grid_step: Some(1e-3),
        ..defaults
    };
    let tight = AccountantOptions {
        tolerance: Tolerance::epsilon_relative(1e-4),
        ..defaults
    };
    epsilon(&spec, 1e-5, fixed);
    epsilon(&dp_sgd, 1e-9, defaults);
    epsilon(&dp_sgd, 1e-5, tight);
    let here = epsilon(&spec, 1e-9, defaults);
    let fresh = in_a_new_process();
    assert_eq!(
        (here.upper.to_bits(), here.lower.to_bits()),
        (fresh.upper.to_bits(), fresh.lower.to_bits()),
        "after other queries: {here:?}; in a new process: {fresh:?}"
    );
}
