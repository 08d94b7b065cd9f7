//! End-to-end tests of the `pld` binary against the documented contract (README, docs/spec.md): success paths
//! (flags, spec files, standard input, JSON and table output), the bad-input table (exit code 2,
//! one `error: ` line naming the field and the value), and the help texts.
//!
//! Every run here is small (at most a few thousand sampled steps), so the whole file takes a
//! few seconds.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use std::path::PathBuf;

/// ε(δ = 1e-5) of σ = 1, q = 0.01, 1000 steps (Poisson-subsampled Gaussian, add/remove).
const DP_SGD_EPSILON: f64 = 1.82824;
/// ε(δ = 1e-5) of 100 unsampled Gaussians with σ = 2 (μ = 5), from the closed form.
const CLOSED_FORM_EPSILON: f64 = 33.103732335922466;

fn pld() -> Command {
    Command::cargo_bin("pld").expect("the pld binary is built for integration tests")
}

fn fixture(name: &str) -> String {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "cli_fixtures", name]
        .iter()
        .collect();
    path.to_str().expect("UTF-8 path").to_string()
}

/// Run `pld args` (with optional standard input), require exit 0 and an empty stderr, and
/// return standard output.
fn run_ok(args: &[&str], stdin: Option<&str>) -> String {
    let mut cmd = pld();
    cmd.args(args);
    if let Some(text) = stdin {
        cmd.write_stdin(text);
    }
    let output = cmd.output().expect("pld runs");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 stdout");
    let stderr = String::from_utf8(output.stderr).expect("UTF-8 stderr");
    assert_eq!(
        output.status.code(),
        Some(0),
        "pld {args:?} failed\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stderr.is_empty(), "pld {args:?} wrote to stderr: {stderr}");
    stdout
}

/// As [`run_ok`], parsing standard output as JSON.
fn run_json(args: &[&str], stdin: Option<&str>) -> Value {
    let stdout = run_ok(args, stdin);
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("pld {args:?} did not print JSON ({e}):\n{stdout}"))
}

/// A number of the output: a JSON number, or the string "inf" for +∞.
fn number(value: &Value, what: &str) -> f64 {
    match value {
        Value::Number(n) => n.as_f64().expect("f64"),
        Value::String(s) if s == "inf" => f64::INFINITY,
        other => panic!("{what} is not a number or \"inf\": {other}"),
    }
}

/// Check the documented JSON shape of an `epsilon` (`asked = "delta"`, `answered = "epsilon"`)
/// or `delta` answer and return (asked value, upper, lower).
fn bracket(json: &Value, asked: &str, answered: &str) -> (f64, f64, f64) {
    let object = json.as_object().expect("top level is an object");
    for key in [asked, answered, "settings"] {
        assert!(object.contains_key(key), "missing key {key:?} in {json}");
    }
    assert!(json["settings"].is_object(), "settings is not an object");
    let pair = json[answered]
        .as_object()
        .unwrap_or_else(|| panic!("{answered} is not an object: {json}"));
    for key in ["upper", "lower"] {
        assert!(pair.contains_key(key), "missing {answered}.{key} in {json}");
    }
    let value = number(&json[asked], asked);
    let upper = number(&json[answered]["upper"], "upper");
    let lower = number(&json[answered]["lower"], "lower");
    assert!(lower <= upper, "lower {lower} > upper {upper} in {json}");
    (value, upper, lower)
}

/// (upper, lower) of a finite ε answer for δ = `delta`.
fn epsilon_bracket(json: &Value, delta: f64) -> (f64, f64) {
    let (d, upper, lower) = bracket(json, "delta", "epsilon");
    assert_eq!(d, delta, "delta is not echoed: {json}");
    assert!(upper.is_finite() && lower.is_finite(), "not finite: {json}");
    assert!(lower >= 0.0, "negative epsilon lower bound: {json}");
    (upper, lower)
}

/// (upper, lower) of a finite δ answer for ε = `epsilon`.
fn delta_bracket(json: &Value, epsilon: f64) -> (f64, f64) {
    let (e, upper, lower) = bracket(json, "epsilon", "delta");
    assert_eq!(e, epsilon, "epsilon is not echoed: {json}");
    assert!(upper.is_finite() && lower.is_finite(), "not finite: {json}");
    assert!(
        (0.0..=1.0).contains(&lower) && upper <= 1.0,
        "delta outside [0, 1]: {json}"
    );
    (upper, lower)
}

fn assert_dp_sgd_epsilon(upper: f64, lower: f64) {
    assert!(
        (1.828..=1.8315).contains(&upper),
        "upper {upper} outside [1.828, 1.8315] (true value {DP_SGD_EPSILON})"
    );
    assert!(
        (1.8265..=1.82825).contains(&lower),
        "lower {lower} outside [1.8265, 1.82825] (true value {DP_SGD_EPSILON})"
    );
}

fn assert_close(x: f64, expected: f64, relative: f64, what: &str) {
    assert!(
        ((x - expected) / expected).abs() <= relative,
        "{what} = {x}, expected {expected} within {relative} relative"
    );
}

const DP_SGD_FLAGS: [&str; 9] = [
    "--sigma",
    "1",
    "--sampling-rate",
    "0.01",
    "--steps",
    "1000",
    "--delta",
    "1e-5",
    "--format",
];

// ---------------------------------------------------------------------------------------------
// Success paths.

#[test]
fn epsilon_flags_json() {
    let mut args = vec!["epsilon"];
    args.extend(DP_SGD_FLAGS);
    args.push("json");
    let (upper, lower) = epsilon_bracket(&run_json(&args, None), 1e-5);
    assert_dp_sgd_epsilon(upper, lower);
}

#[test]
fn epsilon_flags_table() {
    let stdout = run_ok(
        &[
            "epsilon",
            "--sigma",
            "1",
            "--sampling-rate",
            "0.01",
            "--steps",
            "1000",
            "--delta",
            "1e-5",
        ],
        None,
    );
    assert!(
        serde_json::from_str::<Value>(&stdout).is_err(),
        "table is JSON"
    );
    let lower = stdout.to_lowercase();
    assert!(lower.contains("upper"), "no upper bound row:\n{stdout}");
    assert!(lower.contains("lower"), "no lower bound row:\n{stdout}");
    assert!(
        stdout.contains("1.82"),
        "no ε ≈ 1.828 in the table:\n{stdout}"
    );
    // `--format table` is the default and gives the same text.
    let mut args = vec!["epsilon"];
    args.extend(DP_SGD_FLAGS);
    args.push("table");
    assert_eq!(run_ok(&args, None), stdout);
}

#[test]
fn epsilon_spec_file_matches_flags() {
    let file = fixture("dp_sgd.json");
    let from_file = run_json(
        &[
            "epsilon", "--spec", &file, "--delta", "1e-5", "--format", "json",
        ],
        None,
    );
    let (upper, lower) = epsilon_bracket(&from_file, 1e-5);
    assert_dp_sgd_epsilon(upper, lower);

    let mut args = vec!["epsilon"];
    args.extend(DP_SGD_FLAGS);
    args.push("json");
    let from_flags = run_json(&args, None);
    assert_eq!(from_file["epsilon"], from_flags["epsilon"]);
}

#[test]
fn epsilon_spec_from_stdin() {
    let spec = std::fs::read_to_string(fixture("dp_sgd.json")).unwrap();
    let json = run_json(
        &[
            "epsilon", "--spec", "-", "--delta", "1e-5", "--format", "json",
        ],
        Some(&spec),
    );
    let (upper, lower) = epsilon_bracket(&json, 1e-5);
    assert_dp_sgd_epsilon(upper, lower);
}

#[test]
fn delta_flags_and_spec() {
    let epsilon = DP_SGD_EPSILON;
    let e = epsilon.to_string();
    let from_flags = run_json(
        &[
            "delta",
            "--sigma",
            "1",
            "--sampling-rate",
            "0.01",
            "--steps",
            "1000",
            "--epsilon",
            &e,
            "--format",
            "json",
        ],
        None,
    );
    let (upper, lower) = delta_bracket(&from_flags, epsilon);
    // ε(1e-5) = 1.82824 to the digits given, so δ(1.82824) is 1e-5 to about 1e-3 relative.
    assert!((0.9995e-5..=1.002e-5).contains(&upper), "upper {upper}");
    assert!((0.998e-5..=1.0005e-5).contains(&lower), "lower {lower}");

    let file = fixture("dp_sgd.json");
    let from_file = run_json(
        &[
            "delta",
            "--spec",
            &file,
            "--epsilon",
            &e,
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(from_file["delta"], from_flags["delta"]);

    let spec = std::fs::read_to_string(&file).unwrap();
    let from_stdin = run_json(
        &["delta", "--spec", "-", "--epsilon", &e, "--format", "json"],
        Some(&spec),
    );
    assert_eq!(from_stdin["delta"], from_flags["delta"]);
}

#[test]
fn delta_table() {
    let stdout = run_ok(
        &[
            "delta",
            "--sigma",
            "1",
            "--sampling-rate",
            "0.01",
            "--steps",
            "1000",
            "--epsilon",
            "1.82824",
        ],
        None,
    );
    let lower = stdout.to_lowercase();
    assert!(lower.contains("delta"), "{stdout}");
    assert!(
        lower.contains("upper") && lower.contains("lower"),
        "{stdout}"
    );
}

#[test]
fn unsampled_gaussian_matches_closed_form() {
    // μ = √100 / 2 = 5.
    let json = run_json(
        &[
            "epsilon", "--sigma", "2", "--steps", "100", "--delta", "1e-5", "--format", "json",
        ],
        None,
    );
    let (upper, lower) = epsilon_bracket(&json, 1e-5);
    assert_close(upper, CLOSED_FORM_EPSILON, 1e-9, "upper");
    assert_close(lower, CLOSED_FORM_EPSILON, 1e-9, "lower");

    // The same composition written as a spec: split counts, and q = 1 (no sampling).
    let spec = r#"{"events": [
        {"mechanism": "gaussian", "sigma": 2, "count": 60},
        {"mechanism": "gaussian", "sigma": 2, "sensitivity": 1, "count": 30},
        {"mechanism": "gaussian", "sigma": 2, "sampling": {"poisson": 1}, "count": 10}
    ]}"#;
    let json = run_json(
        &[
            "epsilon", "--spec", "-", "--delta", "1e-5", "--format", "json",
        ],
        Some(spec),
    );
    let (upper, lower) = epsilon_bracket(&json, 1e-5);
    assert_close(upper, CLOSED_FORM_EPSILON, 1e-9, "upper (split spec)");
    assert_close(lower, CLOSED_FORM_EPSILON, 1e-9, "lower (split spec)");

    // And the other direction: δ(ε) at the closed-form ε is 1e-5.
    let e = CLOSED_FORM_EPSILON.to_string();
    let json = run_json(
        &[
            "delta",
            "--sigma",
            "2",
            "--steps",
            "100",
            "--epsilon",
            &e,
            "--format",
            "json",
        ],
        None,
    );
    let (upper, lower) = delta_bracket(&json, CLOSED_FORM_EPSILON);
    assert_close(upper, 1e-5, 1e-8, "delta upper");
    assert_close(lower, 1e-5, 1e-8, "delta lower");
}

#[test]
fn replace_neighbouring_doubles_the_sensitivity() {
    // Under "replace" an unsampled Gaussian's outputs differ by 2Δ: σ = 4, 100 steps is
    // μ = 10 · 2 / 4 = 5, the same composition as σ = 2, 100 steps under add/remove.
    let spec = r#"{"neighbouring": "replace", "events": [
        {"mechanism": "gaussian", "sigma": 4, "count": 100}
    ]}"#;
    let json = run_json(
        &[
            "epsilon", "--spec", "-", "--delta", "1e-5", "--format", "json",
        ],
        Some(spec),
    );
    let (upper, lower) = epsilon_bracket(&json, 1e-5);
    assert_close(upper, CLOSED_FORM_EPSILON, 1e-9, "upper");
    assert_close(lower, CLOSED_FORM_EPSILON, 1e-9, "lower");
}

#[test]
fn several_events_mixed_sampling() {
    let file = fixture("mixed.json");
    let json = run_json(
        &[
            "epsilon", "--spec", &file, "--delta", "1e-5", "--format", "json",
        ],
        None,
    );
    let (upper, lower) = epsilon_bracket(&json, 1e-5);
    // Adding events can only increase ε: the composition is well above DP-SGD alone.
    assert!(
        lower > 1.8315,
        "lower {lower} not above the DP-SGD part alone"
    );
    assert!(upper < 10.0, "upper {upper} implausibly large");
    assert!(
        upper - lower <= 0.01 * upper,
        "bracket [{lower}, {upper}] wider than 1%"
    );

    // Splitting a sampled event's count changes nothing.
    let split = r#"{"events": [
        {"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": 0.01}, "count": 400},
        {"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": 0.01}, "count": 600}
    ]}"#;
    let json = run_json(
        &[
            "epsilon", "--spec", "-", "--delta", "1e-5", "--format", "json",
        ],
        Some(split),
    );
    let (upper, lower) = epsilon_bracket(&json, 1e-5);
    assert_dp_sgd_epsilon(upper, lower);

    // δ of the mixed spec is a sane bracket too.
    let json = run_json(
        &[
            "delta",
            "--spec",
            &file,
            "--epsilon",
            "2",
            "--format",
            "json",
        ],
        None,
    );
    let (upper, lower) = delta_bracket(&json, 2.0);
    assert!(
        lower > 1e-5,
        "δ(2) lower {lower}: composition is worse than DP-SGD"
    );
    assert!(upper < 1.0, "δ(2) upper {upper}");
}

#[test]
fn tolerance_and_grid_step_flags() {
    let mut args = vec!["epsilon"];
    args.extend(DP_SGD_FLAGS);
    args.extend(["json", "--tolerance", "1e-4"]);
    let (upper, lower) = epsilon_bracket(&run_json(&args, None), 1e-5);
    assert!(lower <= DP_SGD_EPSILON + 1e-5 && upper >= DP_SGD_EPSILON - 1e-5);
    assert!(upper - lower <= 2e-4 * upper, "tolerance 1e-4 not reached");

    let mut args = vec!["epsilon"];
    args.extend(DP_SGD_FLAGS);
    args.extend(["json", "--grid-step", "0.001"]);
    let (upper, lower) = epsilon_bracket(&run_json(&args, None), 1e-5);
    assert!(lower <= DP_SGD_EPSILON + 1e-5 && upper >= DP_SGD_EPSILON - 1e-5);
}

/// The bracket must contain the true value at any grid step: a coarse grid may only widen it.
#[test]
fn coarse_grid_step_still_brackets_the_truth() {
    let mut misses = Vec::new();
    for step in ["0.5", "0.1", "0.05", "0.01"] {
        let mut args = vec!["epsilon"];
        args.extend(DP_SGD_FLAGS);
        args.extend(["json", "--grid-step", step]);
        let (upper, lower) = epsilon_bracket(&run_json(&args, None), 1e-5);
        if !(lower <= 1.82825 && upper >= 1.82823) {
            misses.push(format!(
                "--grid-step {step}: ε(1e-5) bracket [{lower}, {upper}], true ε = {DP_SGD_EPSILON}"
            ));
        }

        let json = run_json(
            &[
                "delta",
                "--sigma",
                "1",
                "--sampling-rate",
                "0.01",
                "--steps",
                "1000",
                "--epsilon",
                "1.82824",
                "--format",
                "json",
                "--grid-step",
                step,
            ],
            None,
        );
        let (upper, lower) = delta_bracket(&json, DP_SGD_EPSILON);
        // δ(1.82824) lies in [0.9997e-5, 1.0005e-5] (fine-grid bracket).
        if !(lower <= 1.0005e-5 && upper >= 0.9996e-5) {
            misses.push(format!(
                "--grid-step {step}: δ(1.82824) bracket [{lower}, {upper}], true δ ≈ 1e-5"
            ));
        }
    }
    assert!(
        misses.is_empty(),
        "σ = 1, q = 0.01, 1000 steps: the bracket misses the true value\n{}",
        misses.join("\n")
    );
}

#[test]
fn infinite_epsilon_is_written_as_inf() {
    let json = run_json(
        &[
            "delta",
            "--sigma",
            "2",
            "--steps",
            "100",
            "--epsilon",
            "inf",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(
        json["epsilon"],
        Value::String("inf".into()),
        "ε = ∞ must be written as \"inf\": {json}"
    );
    let (_, upper, lower) = bracket(&json, "epsilon", "delta");
    assert_eq!(upper, 0.0, "δ(∞) of a Gaussian is 0: {json}");
    assert_eq!(lower, 0.0, "δ(∞) of a Gaussian is 0: {json}");
}

#[test]
fn grid_too_large_is_exit_code_1() {
    let mut args = vec!["epsilon"];
    args.extend(DP_SGD_FLAGS);
    args.extend(["json", "--grid-step", "1e-9"]);
    let output = pld().args(&args).output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(1), "stderr: {stderr}");
    assert!(stderr.starts_with("error: ") && stderr.trim_end().lines().count() == 1);
    assert!(!stderr.contains("panicked"));
}

// ---------------------------------------------------------------------------------------------
// Bad input: exit code 2, one line `error: ...` naming the field and the value.

/// One bad invocation.
struct Bad {
    args: &'static [&'static str],
    /// Standard input (for `--spec -`).
    stdin: Option<&'static str>,
    /// Substrings stderr must contain (field name, offending value).
    expect: &'static [&'static str],
    /// A usage error reported by the argument parser: only exit code 2 is required.
    usage: bool,
}

const fn flags(args: &'static [&'static str], expect: &'static [&'static str]) -> Bad {
    Bad {
        args,
        stdin: None,
        expect,
        usage: false,
    }
}

const fn usage(args: &'static [&'static str]) -> Bad {
    Bad {
        args,
        stdin: None,
        expect: &[],
        usage: true,
    }
}

const EPSILON_STDIN: &[&str] = &["epsilon", "--spec", "-", "--delta", "1e-5"];
const DELTA_STDIN: &[&str] = &["delta", "--spec", "-", "--epsilon", "1"];

const fn spec(json: &'static str, expect: &'static [&'static str]) -> Bad {
    Bad {
        args: EPSILON_STDIN,
        stdin: Some(json),
        expect,
        usage: false,
    }
}

const CURVE_STDIN: &[&str] = &["curve", "--spec", "-", "--deltas", "1e-5"];
const COMPARE_STDIN: &[&str] = &["compare", "--spec", "-", "--delta", "1e-5"];

const fn spec_for(
    args: &'static [&'static str],
    json: &'static str,
    expect: &'static [&'static str],
) -> Bad {
    Bad {
        args,
        stdin: Some(json),
        expect,
        usage: false,
    }
}

const fn delta_spec(json: &'static str, expect: &'static [&'static str]) -> Bad {
    Bad {
        args: DELTA_STDIN,
        stdin: Some(json),
        expect,
        usage: false,
    }
}

fn bad_rows() -> Vec<Bad> {
    vec![
        // --- convenience flags -----------------------------------------------------------
        flags(
            &["epsilon", "--sigma", "0", "--steps", "1", "--delta", "1e-5"],
            &["sigma", "0"],
        ),
        flags(
            &[
                "epsilon", "--sigma", "-1", "--steps", "1", "--delta", "1e-5",
            ],
            &["sigma", "-1"],
        ),
        flags(
            &[
                "epsilon", "--sigma", "NaN", "--steps", "1", "--delta", "1e-5",
            ],
            &["sigma", "NaN"],
        ),
        flags(
            &[
                "epsilon", "--sigma", "inf", "--steps", "1", "--delta", "1e-5",
            ],
            &["sigma", "inf"],
        ),
        flags(
            &[
                "epsilon",
                "--sigma",
                "1",
                "--steps",
                "1",
                "--sensitivity",
                "0",
                "--delta",
                "1e-5",
            ],
            &["sensitivity", "0"],
        ),
        flags(
            &[
                "epsilon",
                "--sigma",
                "1",
                "--steps",
                "1",
                "--sensitivity",
                "NaN",
                "--delta",
                "1e-5",
            ],
            &["sensitivity", "NaN"],
        ),
        flags(
            &[
                "epsilon",
                "--sigma",
                "1",
                "--steps",
                "1",
                "--sampling-rate",
                "0",
                "--delta",
                "1e-5",
            ],
            &["sampling", "0"],
        ),
        flags(
            &[
                "epsilon",
                "--sigma",
                "1",
                "--steps",
                "1",
                "--sampling-rate",
                "1.5",
                "--delta",
                "1e-5",
            ],
            &["sampling", "1.5"],
        ),
        flags(
            &[
                "epsilon",
                "--sigma",
                "1",
                "--steps",
                "1",
                "--sampling-rate",
                "-0.1",
                "--delta",
                "1e-5",
            ],
            &["sampling", "-0.1"],
        ),
        flags(
            &[
                "epsilon",
                "--sigma",
                "1",
                "--steps",
                "1",
                "--sampling-rate",
                "NaN",
                "--delta",
                "1e-5",
            ],
            &["sampling", "NaN"],
        ),
        flags(
            &["epsilon", "--sigma", "1", "--steps", "0", "--delta", "1e-5"],
            &["steps", "0"],
        ),
        flags(
            &[
                "epsilon",
                "--sigma",
                "1",
                "--steps",
                "1000000000001",
                "--delta",
                "1e-5",
            ],
            &["1000000000001"],
        ),
        usage(&[
            "epsilon", "--sigma", "1", "--steps", "1.5", "--delta", "1e-5",
        ]),
        usage(&[
            "epsilon", "--sigma", "1", "--steps", "-3", "--delta", "1e-5",
        ]),
        usage(&[
            "epsilon", "--sigma", "abc", "--steps", "1", "--delta", "1e-5",
        ]),
        flags(
            &["epsilon", "--sigma", "1", "--steps", "1", "--delta", "0"],
            &["delta", "0"],
        ),
        flags(
            &["epsilon", "--sigma", "1", "--steps", "1", "--delta", "1"],
            &["delta", "1"],
        ),
        flags(
            &["epsilon", "--sigma", "1", "--steps", "1", "--delta", "-1"],
            &["delta", "-1"],
        ),
        flags(
            &["epsilon", "--sigma", "1", "--steps", "1", "--delta", "NaN"],
            &["delta", "NaN"],
        ),
        flags(
            &["epsilon", "--sigma", "1", "--steps", "1", "--delta", "inf"],
            &["delta", "inf"],
        ),
        usage(&["epsilon", "--sigma", "1"]),
        flags(
            &["delta", "--sigma", "1", "--steps", "1", "--epsilon", "-1"],
            &["epsilon", "-1"],
        ),
        flags(
            &["delta", "--sigma", "1", "--steps", "1", "--epsilon", "NaN"],
            &["epsilon", "NaN"],
        ),
        // Validation happens before any work, even for a huge composition.
        flags(
            &[
                "epsilon",
                "--sigma",
                "1",
                "--sampling-rate",
                "0.01",
                "--steps",
                "1000000000000",
                "--delta",
                "0",
            ],
            &["delta", "0"],
        ),
        // --- spec / flag combinations ------------------------------------------------------
        flags(
            &[
                "epsilon",
                "--spec",
                "tests/cli_fixtures/does_not_exist.json",
                "--delta",
                "1e-5",
            ],
            &["does_not_exist.json"],
        ),
        flags(
            &[
                "epsilon",
                "--spec",
                "tests/cli_fixtures/dp_sgd.json",
                "--sigma",
                "1",
                "--delta",
                "1e-5",
            ],
            &["--spec", "--sigma"],
        ),
        flags(&["epsilon", "--delta", "1e-5"], &["--spec", "--sigma"]),
        flags(&["delta", "--epsilon", "1"], &["--spec", "--sigma"]),
        flags(
            &[
                "epsilon",
                "--spec",
                "tests/cli_fixtures/bad_count.json",
                "--delta",
                "1e-5",
            ],
            &["events[1].count", "0"],
        ),
        // --- output and accuracy options ---------------------------------------------------
        usage(&[
            "epsilon", "--sigma", "1", "--steps", "1", "--delta", "1e-5", "--format", "xml",
        ]),
        flags(
            &[
                "epsilon",
                "--sigma",
                "1",
                "--steps",
                "1",
                "--delta",
                "1e-5",
                "--tolerance",
                "-0.1",
            ],
            &["tolerance", "-0.1"],
        ),
        flags(
            &[
                "epsilon",
                "--sigma",
                "1",
                "--steps",
                "1",
                "--delta",
                "1e-5",
                "--tolerance",
                "NaN",
            ],
            &["tolerance", "NaN"],
        ),
        flags(
            &[
                "epsilon",
                "--sigma",
                "1",
                "--steps",
                "1",
                "--delta",
                "1e-5",
                "--grid-step",
                "0",
            ],
            &["grid", "0"],
        ),
        flags(
            &[
                "delta",
                "--sigma",
                "1",
                "--steps",
                "1",
                "--sampling-rate",
                "0.1",
                "--epsilon",
                "1",
                "--grid-step",
                "-0.01",
            ],
            &["grid", "-0.01"],
        ),
        // --- spec contents -----------------------------------------------------------------
        spec(
            r#"{"events": [{"mechanism": "gaussian"}]}"#,
            &["events[0].sigma"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 0}]}"#,
            &["events[0].sigma", "0"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": -2}]}"#,
            &["events[0].sigma", "-2"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": "NaN"}]}"#,
            &["events[0].sigma", "NaN"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sensitivity": 0}]}"#,
            &["events[0].sensitivity", "0"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1,
                "sampling": {"poisson": 0}}]}"#,
            &["events[0].sampling.poisson", "0"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1,
                "sampling": {"poisson": 1.5}}]}"#,
            &["events[0].sampling.poisson", "1.5"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1,
                "sampling": {"poisson": -0.5}}]}"#,
            &["events[0].sampling.poisson", "-0.5"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "count": 0}]}"#,
            &["events[0].count", "0"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "count": 1.5}]}"#,
            &["events[0].count", "1.5"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "count": "ten"}]}"#,
            &["events[0].count", "ten"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "count": -5}]}"#,
            &["events[0].count", "-5"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1},
                           {"mechanism": "gaussian", "sigma": 1, "count": 0}]}"#,
            &["events[1].count", "0"],
        ),
        spec(
            r#"{"events": [{"mechanism": "foo", "sigma": 1}]}"#,
            &["events[0].mechanism", "unknown mechanism", "foo"],
        ),
        spec(
            r#"{"events": [{"mechanism": "Gaussian", "sigma": 1}]}"#,
            &["events[0].mechanism", "unknown mechanism", "Gaussian"],
        ),
        spec(r#"{"events": [{"sigma": 1}]}"#, &["events[0].mechanism"]),
        // The catalogue's new parameters (mixture_of_gaussians, pmf_pair) and the sampling
        // combinations that have no worst-case pair.
        spec(
            r#"{"events": [{"mechanism": "mixture_of_gaussians", "sigma": 1,
                "sensitivities": [0, 1], "probabilities": [0.5, 0.6]}]}"#,
            &["events[0].probabilities", "1.1", "summing to 1"],
        ),
        spec(
            r#"{"events": [{"mechanism": "mixture_of_gaussians", "sigma": 1,
                "sensitivities": [0, -1], "probabilities": [0.5, 0.5]}]}"#,
            &["events[0].sensitivities[1]", "-1"],
        ),
        spec(
            r#"{"events": [{"mechanism": "mixture_of_gaussians", "sigma": 1,
                "sensitivities": [0, 1, 2], "probabilities": [0.5, 0.5]}]}"#,
            &[
                "events[0].probabilities",
                "2 probabilities",
                "3 sensitivities",
            ],
        ),
        spec(
            r#"{"events": [{"mechanism": "mixture_of_gaussians", "sigma": 1,
                "sensitivities": [], "probabilities": []}]}"#,
            &["events[0].sensitivities", "[]"],
        ),
        spec(
            r#"{"events": [{"mechanism": "mixture_of_gaussians", "sigma": 1,
                "sensitivities": [0, 1], "probabilities": [0.9, 0.1],
                "sampling": {"poisson": 0.1}}]}"#,
            &["events[0].sampling", "mixture_of_gaussians"],
        ),
        spec(
            r#"{"neighbouring": "replace", "events": [{"mechanism": "mixture_of_gaussians",
                "sigma": 1, "sensitivities": [0, 1], "probabilities": [0.9, 0.1]}]}"#,
            &["events[0].mechanism", "add_remove"],
        ),
        spec(
            r#"{"events": [{"mechanism": "mixture_of_gaussians", "sensitivities": [1],
                "probabilities": [1]}]}"#,
            &["events[0].sigma"],
        ),
        spec(
            r#"{"events": [{"mechanism": "pmf_pair", "p": [0.5, 0.5], "q": [0.2, 0.3, 0.5]}]}"#,
            &["events[0].q", "3 outcomes", "2"],
        ),
        spec(
            r#"{"events": [{"mechanism": "pmf_pair", "p": [0.5, 0.6], "q": [0.5, 0.5]}]}"#,
            &["events[0].p", "1.1"],
        ),
        spec(
            r#"{"events": [{"mechanism": "pmf_pair", "p": [1.5, -0.5], "q": [0.5, 0.5]}]}"#,
            &["events[0].p[1]", "-0.5"],
        ),
        spec(
            r#"{"events": [{"mechanism": "pmf_pair", "p": ["a"], "q": [1]}]}"#,
            &["events[0].p[0]", "a"],
        ),
        spec(
            r#"{"events": [{"mechanism": "pmf_pair", "p": [1]}]}"#,
            &["events[0].q"],
        ),
        spec(
            r#"{"events": [{"mechanism": "pmf_pair", "p": 0.5, "q": [1]}]}"#,
            &["events[0].p", "0.5"],
        ),
        spec(
            r#"{"events": [{"mechanism": "pmf_pair", "p": [0.5, 0.5], "q": [0.5, 0.5],
                "sampling": {"poisson": 0.5}}]}"#,
            &["events[0].sampling", "pmf_pair"],
        ),
        spec(
            r#"{"neighbouring": "replace", "events": [{"mechanism": "randomized_response",
                "epsilon": 1, "sampling": {"fixed_batch": {"batch_size": 1, "dataset_size": 10}}}]}"#,
            &["events[0].sampling.fixed_batch", "randomized_response"],
        ),
        spec(
            r#"{"neighbouring": "replace", "events": [{"mechanism": "eps_delta", "epsilon": 1,
                "delta": 0, "sampling": {"fixed_batch": {"batch_size": 1, "dataset_size": 10}}}]}"#,
            &["events[0].sampling.fixed_batch", "eps_delta"],
        ),
        spec(
            r#"{"events": [{"mechanism": "laplace", "scale": 1e-300, "sensitivity": 1e300}]}"#,
            &["events[0].sensitivity / scale", "inf"],
        ),
        // Parameters of the other mechanisms are validated even before their PLD exists.
        spec(
            r#"{"events": [{"mechanism": "laplace", "scale": -1}]}"#,
            &["events[0].scale", "-1"],
        ),
        spec(
            r#"{"events": [{"mechanism": "laplace"}]}"#,
            &["events[0].scale"],
        ),
        spec(
            r#"{"events": [{"mechanism": "laplace", "scale": 1, "sensitivity": 0}]}"#,
            &["events[0].sensitivity", "0"],
        ),
        spec(
            r#"{"events": [{"mechanism": "discrete_laplace", "scale": 1, "sensitivity": 1.5}]}"#,
            &["events[0].sensitivity", "1.5"],
        ),
        spec(
            r#"{"events": [{"mechanism": "discrete_gaussian", "sigma": 1, "sensitivity": 0}]}"#,
            &["events[0].sensitivity", "0"],
        ),
        spec(
            r#"{"events": [{"mechanism": "randomized_response", "epsilon": 0.5, "categories": 1}]}"#,
            &["events[0].categories", "1"],
        ),
        spec(
            r#"{"events": [{"mechanism": "randomized_response", "epsilon": 0}]}"#,
            &["events[0].epsilon", "0"],
        ),
        spec(
            r#"{"events": [{"mechanism": "eps_delta", "epsilon": 0.1, "delta": 1.5}]}"#,
            &["events[0].delta", "1.5"],
        ),
        spec(
            r#"{"events": [{"mechanism": "eps_delta", "epsilon": -0.1, "delta": 0}]}"#,
            &["events[0].epsilon", "-0.1"],
        ),
        spec(
            r#"{"events": [{"mechanism": "eps_delta", "epsilon": 0.1}]}"#,
            &["events[0].delta"],
        ),
        spec(
            r#"{"events": [{"mechanism": "laplace", "scale": 1, "sigma": 1}]}"#,
            &["events[0].sigma"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1}"#,
            &["malformed", "line"],
        ),
        spec("", &["malformed"]),
        spec("[1, 2]", &["object"]),
        spec(r#"{"events": []}"#, &["events", "[]"]),
        spec("{}", &["events"]),
        spec(
            r#"{"events": {"mechanism": "gaussian", "sigma": 1}}"#,
            &["events"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigam": 1}]}"#,
            &["events[0].sigam"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1}], "neighbors": "replace"}"#,
            &["neighbors"],
        ),
        spec(
            r#"{"neighbouring": "swap", "events": [{"mechanism": "gaussian", "sigma": 1}]}"#,
            &["neighbouring", "swap"],
        ),
        spec(
            r#"{"neighbouring": "replace", "events": [{"mechanism": "gaussian", "sigma": 1,
                "sampling": {"poisson": 0.1}}]}"#,
            &["events[0].sampling.poisson", "replace"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1,
                "sampling": {"fixed_batch": {"batch_size": 10, "dataset_size": 100}}}]}"#,
            &["events[0].sampling.fixed_batch", "replace"],
        ),
        spec(
            r#"{"neighbouring": "replace", "events": [{"mechanism": "gaussian", "sigma": 1,
                "sampling": {"fixed_batch": {"batch_size": 200, "dataset_size": 100}}}]}"#,
            &["events[0].sampling.fixed_batch", "200", "100"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1,
                "sampling": {"uniform": 0.1}}]}"#,
            &["events[0].sampling", "uniform"],
        ),
        // The same validation through the delta command.
        delta_spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 0}]}"#,
            &["events[0].sigma", "0"],
        ),
        delta_spec(
            r#"{"events": [{"mechanism": "bogus", "sigma": 1}]}"#,
            &["events[0].mechanism", "unknown mechanism", "bogus"],
        ),
        delta_spec(
            r#"{"events": [{"mechanism": "pmf_pair", "p": [0.5, 0.5], "q": [0.5]}]}"#,
            &["events[0].q"],
        ),
        // --- the DP-SGD flags in Opacus' words ---------------------------------------------
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "0",
                "--steps",
                "1",
                "--delta",
                "1e-5",
            ],
            &["--noise-multiplier", "0"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "NaN",
                "--steps",
                "1",
                "--delta",
                "1e-5",
            ],
            &["--noise-multiplier", "NaN"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--steps",
                "1",
                "--sigma",
                "1",
                "--delta",
                "1e-5",
            ],
            &["--noise-multiplier", "--sigma"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--steps",
                "1",
                "--sampling-rate",
                "0.01",
                "--batch-size",
                "100",
                "--dataset-size",
                "10000",
                "--delta",
                "1e-5",
            ],
            &["--batch-size", "--sampling-rate"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--steps",
                "1",
                "--batch-size",
                "100",
                "--delta",
                "1e-5",
            ],
            &["--dataset-size"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--steps",
                "1",
                "--dataset-size",
                "100",
                "--delta",
                "1e-5",
            ],
            &["--batch-size"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--steps",
                "1",
                "--batch-size",
                "0",
                "--dataset-size",
                "100",
                "--delta",
                "1e-5",
            ],
            &["--batch-size", "0"],
        ),
        // --sampling: each scheme's refusals name the flag and the reason.
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--sampling",
                "shuffle",
                "--sampling-rate",
                "0.03",
                "--epochs",
                "1",
                "--delta",
                "1e-5",
            ],
            &["--sampling-rate", "0.03", "shuffle"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--sampling",
                "truncated-poisson",
                "--sampling-rate",
                "0.01",
                "--steps",
                "10",
                "--delta",
                "1e-5",
            ],
            &["--max-batch-size", "truncated-poisson"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--sampling",
                "balls-in-bins",
                "--sampling-rate",
                "0.003",
                "--epochs",
                "1",
                "--delta",
                "1e-5",
            ],
            &["--sampling-rate", "0.003", "whole number"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--sampling",
                "balls-in-bins",
                "--sampling-rate",
                "0.01",
                "--delta",
                "1e-5",
            ],
            &["--epochs"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--sampling",
                "fixed-batch",
                "--sampling-rate",
                "0.01",
                "--steps",
                "10",
                "--delta",
                "1e-5",
            ],
            &["--batch-size", "fixed-batch"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--max-batch-size",
                "5",
                "--sampling-rate",
                "0.01",
                "--steps",
                "10",
                "--delta",
                "1e-5",
            ],
            &["--max-batch-size", "truncated-poisson"],
        ),
        usage(&[
            "epsilon",
            "--noise-multiplier",
            "1",
            "--sampling",
            "bogus",
            "--steps",
            "1",
            "--delta",
            "1e-5",
        ]),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--steps",
                "1",
                "--batch-size",
                "200",
                "--dataset-size",
                "100",
                "--delta",
                "1e-5",
            ],
            &["--batch-size", "200", "100"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--steps",
                "1",
                "--batch-size",
                "1",
                "--dataset-size",
                "0",
                "--delta",
                "1e-5",
            ],
            &["--dataset-size", "0"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--sampling-rate",
                "0.01",
                "--steps",
                "10",
                "--epochs",
                "1",
                "--delta",
                "1e-5",
            ],
            &["--epochs", "--steps"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--sampling-rate",
                "0.01",
                "--epochs",
                "0",
                "--delta",
                "1e-5",
            ],
            &["--epochs", "0"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--sampling-rate",
                "0.01",
                "--epochs",
                "-2",
                "--delta",
                "1e-5",
            ],
            &["--epochs", "-2"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--sampling-rate",
                "0.01",
                "--epochs",
                "NaN",
                "--delta",
                "1e-5",
            ],
            &["--epochs", "NaN"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--sampling-rate",
                "1e-9",
                "--epochs",
                "1e9",
                "--delta",
                "1e-5",
            ],
            &["--epochs", "1000000000"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--sampling-rate",
                "0",
                "--epochs",
                "1",
                "--delta",
                "1e-5",
            ],
            &["--sampling-rate", "0"],
        ),
        flags(
            &[
                "epsilon",
                "--noise-multiplier",
                "1",
                "--steps",
                "1",
                "--max-grad-norm",
                "-1",
                "--delta",
                "1e-5",
            ],
            &["--sensitivity", "-1"],
        ),
        flags(
            &["epsilon", "--steps", "10", "--delta", "1e-5"],
            &["--steps", "--noise-multiplier"],
        ),
        flags(
            &[
                "epsilon",
                "--batch-size",
                "10",
                "--dataset-size",
                "100",
                "--delta",
                "1e-5",
            ],
            &["--batch-size", "--noise-multiplier"],
        ),
        // --- presets -----------------------------------------------------------------------
        flags(
            &["epsilon", "--preset", "nope", "--delta", "1e-5"],
            &["--preset", "nope", "mnist-dp-sgd"],
        ),
        flags(
            &["compare", "--preset", "Poisson-DP-SGD"],
            &["--preset", "Poisson-DP-SGD"],
        ),
        flags(
            &["compare", "--preset", "poisson-dp-sgd", "--sigma", "1"],
            &["--preset", "--sigma"],
        ),
        flags(
            &[
                "compare",
                "--preset",
                "poisson-dp-sgd",
                "--spec",
                "tests/cli_fixtures/dp_sgd.json",
            ],
            &["--spec", "--preset"],
        ),
        flags(
            &["compare", "--preset", "poisson-dp-sgd", "--steps", "10"],
            &["--steps", "--preset"],
        ),
        flags(
            &["compare", "--preset", "poisson-dp-sgd", "--epochs", "2"],
            &["--epochs", "--preset"],
        ),
        flags(&["presets", "nope"], &["preset", "nope"]),
        // --- compare -----------------------------------------------------------------------
        flags(
            &["compare", "--spec", "tests/cli_fixtures/dp_sgd.json"],
            &["--delta"],
        ),
        flags(&["compare", "--delta", "1e-5"], &["--spec", "--preset"]),
        flags(
            &["compare", "--preset", "poisson-dp-sgd", "--delta", "0"],
            &["delta", "0"],
        ),
        flags(
            &["compare", "--preset", "poisson-dp-sgd", "--delta", "1.5"],
            &["delta", "1.5"],
        ),
        flags(
            &["compare", "--preset", "poisson-dp-sgd", "--delta", "NaN"],
            &["delta", "NaN"],
        ),
        flags(
            &["compare", "--preset", "poisson-dp-sgd", "--tolerance", "-1"],
            &["tolerance", "-1"],
        ),
        flags(
            &["compare", "--preset", "poisson-dp-sgd", "--grid-step", "2"],
            &["grid_step", "2"],
        ),
        flags(
            &[
                "compare",
                "--preset",
                "poisson-dp-sgd",
                "--plot",
                "compare.pdf",
            ],
            &["--plot", "compare.pdf", ".svg or .png"],
        ),
        flags(
            &[
                "compare",
                "--preset",
                "poisson-dp-sgd",
                "--plot",
                "tests/no_such_directory/compare.svg",
            ],
            &["--plot", "no_such_directory"],
        ),
        flags(
            &[
                "compare",
                "--preset",
                "poisson-dp-sgd",
                "--plot",
                "tests.svg/",
            ],
            &["--plot", "tests.svg"],
        ),
        flags(
            &[
                "compare",
                "--spec",
                "tests/cli_fixtures/bad_count.json",
                "--delta",
                "1e-5",
            ],
            &["events[1].count", "0"],
        ),
        usage(&["compare", "--preset", "poisson-dp-sgd", "--format", "yaml"]),
        usage(&["compare", "--preset", "poisson-dp-sgd", "--delta", "abc"]),
        usage(&["compare", "--preset", "poisson-dp-sgd", "--epsilon", "1"]),
        usage(&[
            "compare",
            "--preset",
            "poisson-dp-sgd",
            "--quiet",
            "--verbose",
        ]),
        // --- curve -------------------------------------------------------------------------
        flags(
            &["curve", "--preset", "poisson-dp-sgd", "--deltas", "1e-3,2"],
            &["--deltas[1]", "2"],
        ),
        flags(
            &["curve", "--preset", "poisson-dp-sgd", "--deltas", "0"],
            &["--deltas[0]", "0"],
        ),
        flags(
            &["curve", "--preset", "poisson-dp-sgd", "--deltas", "NaN"],
            &["--deltas[0]", "NaN"],
        ),
        flags(
            &["curve", "--preset", "poisson-dp-sgd", "--epsilons", "1,-1"],
            &["--epsilons[1]", "-1"],
        ),
        flags(
            &["curve", "--preset", "poisson-dp-sgd", "--epsilons", "NaN"],
            &["--epsilons[0]", "NaN"],
        ),
        flags(
            &["curve", "--preset", "poisson-dp-sgd", "--plot", "curve.txt"],
            &["--plot", "curve.txt"],
        ),
        flags(&["curve", "--deltas", "1e-5"], &["--spec", "--preset"]),
        // Validation happens before any work: a bad list fails fast even for a big spec.
        flags(
            &[
                "curve",
                "--sigma",
                "1",
                "--sampling-rate",
                "0.01",
                "--steps",
                "1000000000000",
                "--deltas",
                "1e-5,1",
            ],
            &["--deltas[1]", "1"],
        ),
        usage(&[
            "curve",
            "--preset",
            "poisson-dp-sgd",
            "--deltas",
            "1e-5",
            "--epsilons",
            "1",
        ]),
        usage(&["curve", "--preset", "poisson-dp-sgd", "--deltas", ""]),
        usage(&[
            "curve",
            "--preset",
            "poisson-dp-sgd",
            "--deltas",
            "1e-5,,1e-3",
        ]),
        usage(&["curve", "--preset", "poisson-dp-sgd", "--format", "xml"]),
        usage(&["nonsense"]),
        spec_for(
            CURVE_STDIN,
            r#"{"events": [{"mechanism": "gaussian", "sigma": -1}]}"#,
            &["events[0].sigma", "-1"],
        ),
        spec_for(
            COMPARE_STDIN,
            r#"{"events": [{"mechanism": "laplace", "scale": 0}]}"#,
            &["events[0].scale", "0"],
        ),
        spec_for(COMPARE_STDIN, "{", &["malformed"]),
        // --- calibrate: the specification's one null -----------------------------------------
        calibrate_spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1}]}"#,
            &["calibration parameter", "null"],
        ),
        calibrate_spec(r#"{"events": []}"#, &["calibration parameter", "null"]),
        calibrate_spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": null, "count": null}]}"#,
            &["events[0].sigma", "events[0].count"],
        ),
        calibrate_spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": null},
                           {"mechanism": "laplace", "scale": null}]}"#,
            &["events[0].sigma", "events[1].scale"],
        ),
        calibrate_spec(
            r#"{"events": [{"mechanism": "randomized_response", "epsilon": null}]}"#,
            &["events[0].epsilon", "null"],
        ),
        calibrate_spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sensitivity": null}]}"#,
            &["events[0].sensitivity", "null"],
        ),
        calibrate_spec(
            r#"{"events": [{"mechanism": "laplace", "sigma": null}]}"#,
            &["events[0].sigma", "null", "scale"],
        ),
        calibrate_spec(
            r#"{"events": [{"mechanism": "eps_delta", "epsilon": 1, "delta": null}]}"#,
            &["events[0].delta", "null"],
        ),
        calibrate_spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": null}]}"#,
            &["events[0].sampling", "null", "poisson"],
        ),
        calibrate_spec(
            r#"{"neighbouring": null, "events": [{"mechanism": "gaussian", "sigma": 1}]}"#,
            &["neighbouring", "null"],
        ),
        calibrate_spec(
            r#"{"neighbouring": "replace", "events": [{"mechanism": "gaussian", "sigma": 1,
                "sampling": {"fixed_batch": {"batch_size": null, "dataset_size": 100}}}]}"#,
            &["events[0].sampling.fixed_batch.batch_size", "null"],
        ),
        // The rest of the specification is validated as usual.
        calibrate_spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": null, "count": 0}]}"#,
            &["events[0].count", "0"],
        ),
        calibrate_spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": null,
                            "sampling": {"poisson": 1.5}}]}"#,
            &["events[0].sampling.poisson", "1.5"],
        ),
        calibrate_spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": null, "noise": 1}]}"#,
            &["events[0].noise"],
        ),
        calibrate_spec("{", &["malformed"]),
        calibrate_spec("null", &["malformed"]),
        // Infeasible targets: exit code 2, naming the calibrated field and why.
        calibrate_spec(
            // One release already has δ = 1e-4 > 1e-5 at any ε: no count meets it.
            r#"{"events": [{"mechanism": "eps_delta", "epsilon": 0.1, "delta": 1e-4,
                            "count": null}]}"#,
            &["events[0].count", "count = 1"],
        ),
        calibrate_spec(
            // Laplace with scale 0.1 alone has ε = 10 > 2: no σ of the other event helps.
            r#"{"events": [{"mechanism": "gaussian", "sigma": null,
                            "sampling": {"poisson": 0.01}, "count": 1000},
                           {"mechanism": "laplace", "scale": 0.1}]}"#,
            &["events[0].sigma", "other events"],
        ),
        calibrate_spec(
            r#"{"events": [{"mechanism": "laplace", "scale": 0.1},
                           {"mechanism": "gaussian", "sigma": 1,
                            "sampling": {"poisson": null}, "count": 1000}]}"#,
            &["events[1].sampling.poisson", "other events"],
        ),
        // --- calibrate: the target and the flags ---------------------------------------------
        calibrate_flags(&["--epsilon", "0", "--delta", "1e-5"], &["--epsilon", "0"]),
        calibrate_flags(
            &["--epsilon", "-1", "--delta", "1e-5"],
            &["--epsilon", "-1"],
        ),
        calibrate_flags(
            &["--epsilon", "NaN", "--delta", "1e-5"],
            &["--epsilon", "NaN"],
        ),
        calibrate_flags(
            &["--epsilon", "inf", "--delta", "1e-5"],
            &["--epsilon", "inf"],
        ),
        calibrate_flags(&["--epsilon", "2", "--delta", "0"], &["--delta", "0"]),
        calibrate_flags(&["--epsilon", "2", "--delta", "1"], &["--delta", "1"]),
        calibrate_flags(&["--epsilon", "2", "--delta", "-0.5"], &["--delta", "-0.5"]),
        calibrate_flags(&["--epsilon", "2", "--delta", "NaN"], &["--delta", "NaN"]),
        calibrate_flags(&["--delta", "1e-5"], &["--epsilon"]),
        calibrate_flags(&["--epsilon", "2"], &["--delta"]),
        calibrate_flags(&["--epsilon", "x", "--delta", "1e-5"], &["--epsilon", "x"]),
        calibrate_flags(
            &["--epsilon", "2", "--delta", "1e-5", "--format", "xml"],
            &["--format", "xml"],
        ),
        calibrate_flags(
            &["--epsilon", "2", "--delta", "1e-5", "--tolerance", "-1"],
            &["tolerance", "-1"],
        ),
        calibrate_flags(
            &["--epsilon", "2", "--delta", "1e-5", "--grid-step", "2"],
            &["grid_step", "2"],
        ),
        flags(
            &["calibrate", "--epsilon", "2", "--delta", "1e-5"],
            &["--spec"],
        ),
        flags(
            &[
                "calibrate",
                "--spec",
                "tests/cli_fixtures/no_such_file.json",
                "--epsilon",
                "2",
                "--delta",
                "1e-5",
            ],
            &["no_such_file.json"],
        ),
        flags(
            &[
                "calibrate",
                "--preset",
                "mnist-dp-sgd",
                "--epsilon",
                "2",
                "--delta",
                "1e-5",
            ],
            &["--preset", "pld presets"],
        ),
        flags(
            &[
                "calibrate",
                "--spec",
                "tests/cli_fixtures/calibrate_sigma.json",
                "--sigma",
                "1",
                "--epsilon",
                "2",
                "--delta",
                "1e-5",
            ],
            &["--sigma"],
        ),
        // A null is for calibrate only: the other commands refuse it (naming the field).
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": null}]}"#,
            &["events[0].sigma"],
        ),
        // ... also where the key has a default (a calibration file must not run with it).
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "count": null}]}"#,
            &["events[0].count", "null", "calibrate"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sensitivity": null}]}"#,
            &["events[0].sensitivity", "null"],
        ),
        spec(
            r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sampling": null}]}"#,
            &["events[0].sampling", "null"],
        ),
        spec(
            r#"{"neighbouring": null, "events": [{"mechanism": "gaussian", "sigma": 1}]}"#,
            &["neighbouring", "null"],
        ),
    ]
}

const CALIBRATE_STDIN: &[&str] = &[
    "calibrate",
    "--spec",
    "-",
    "--epsilon",
    "2",
    "--delta",
    "1e-5",
];

const fn calibrate_spec(json: &'static str, expect: &'static [&'static str]) -> Bad {
    spec_for(CALIBRATE_STDIN, json, expect)
}

/// `pld calibrate` of a valid specification (σ to calibrate) with these flags.
fn calibrate_flags(flags: &'static [&'static str], expect: &'static [&'static str]) -> Bad {
    let mut args = vec!["calibrate", "--spec", "-"];
    args.extend(flags);
    Bad {
        args: Vec::leak(args),
        stdin: Some(r#"{"events": [{"mechanism": "gaussian", "sigma": null}]}"#),
        expect,
        usage: false,
    }
}

/// Run one bad row; return a description of what is wrong with the CLI's answer, if anything.
fn check_bad(row: &Bad) -> Option<String> {
    let mut cmd = pld();
    cmd.current_dir(env!("CARGO_MANIFEST_DIR")).args(row.args);
    cmd.write_stdin(row.stdin.unwrap_or(""));
    let output = cmd.output().expect("pld runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut problems = Vec::new();
    if output.status.code() != Some(2) {
        problems.push(format!("exit code {:?}, expected 2", output.status.code()));
    }
    if stderr.contains("panicked") {
        problems.push("panicked".into());
    }
    // Usage errors from the argument parser are one line too (clap's message, folded).
    let lines: Vec<&str> = stderr.lines().collect();
    if lines.len() != 1 {
        problems.push(format!("{} stderr lines, expected 1", lines.len()));
    }
    if !stderr.starts_with("error: ") || stderr.trim() == "error:" {
        problems.push("stderr does not start with a non-empty `error: ` line".into());
    }
    if !row.usage {
        for needle in row.expect {
            if !stderr.contains(needle) {
                problems.push(format!("stderr lacks {needle:?}"));
            }
        }
        if !stdout.is_empty() {
            problems.push("wrote to stdout".into());
        }
    }
    if problems.is_empty() {
        None
    } else {
        Some(format!(
            "pld {}{}\n    problems: {}\n    stderr: {}\n    stdout: {}",
            row.args.join(" "),
            row.stdin
                .map(|s| format!(
                    "  <<< {}",
                    s.split_whitespace().collect::<Vec<_>>().join(" ")
                ))
                .unwrap_or_default(),
            problems.join("; "),
            stderr.trim_end(),
            stdout.lines().next().unwrap_or(""),
        ))
    }
}

#[test]
fn bad_input_is_exit_code_2_with_one_line_naming_field_and_value() {
    let rows = bad_rows();
    assert!(rows.len() >= 30);
    // Two threads: each row is a few milliseconds, but there are many.
    let (first, second) = rows.split_at(rows.len() / 2);
    let failures: Vec<String> = std::thread::scope(|scope| {
        let other = scope.spawn(|| second.iter().filter_map(check_bad).collect::<Vec<_>>());
        let mut failures: Vec<String> = first.iter().filter_map(check_bad).collect();
        failures.extend(other.join().expect("no panic"));
        failures
    });
    assert!(
        failures.is_empty(),
        "{} of {} bad-input rows are not handled as specified:\n\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n\n")
    );
}

// ---------------------------------------------------------------------------------------------
// Help.

#[test]
fn help_of_each_subcommand_has_an_example() {
    for command in [
        "epsilon",
        "delta",
        "compare",
        "curve",
        "calibrate",
        "presets",
        "tradeoff",
        "sweep",
        "ledger",
    ] {
        pld()
            .args([command, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Example"));
    }
    pld().arg("--help").assert().success().stdout(
        predicate::str::contains("epsilon")
            .and(predicate::str::contains("delta"))
            .and(predicate::str::contains("compare"))
            .and(predicate::str::contains("curve"))
            .and(predicate::str::contains("calibrate"))
            .and(predicate::str::contains("presets")),
    );
    // Each command's one-line summary is its own (a subcommand without a doc comment once
    // showed the summary of a flattened argument group: "sweep  How to print the result").
    let output = pld().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&output.stdout).into_owned();
    let commands = help
        .split("Commands:")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_else(|| panic!("no command list in:\n{help}"));
    let mut summaries = std::collections::HashSet::new();
    for line in commands.lines().filter(|l| !l.trim().is_empty()) {
        let (name, summary) = line.trim().split_once(' ').unwrap_or((line.trim(), ""));
        let summary = summary.trim();
        assert!(
            !summary.is_empty() && !summary.starts_with("How to print"),
            "{name}: summary {summary:?}"
        );
        assert!(
            summaries.insert(summary.to_string()),
            "{name}: {summary:?} twice"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// compare, curve, presets and the DP-SGD flags.

/// The kinds allowed in `compare` rows.
const KINDS: [&str; 3] = ["upper_bound", "lower_bound", "estimate"];

/// Check the documented `compare` JSON and return (method, ε) of every row.
fn compare_rows(json: &Value, delta: f64) -> Vec<(String, f64)> {
    assert_eq!(
        number(&json["delta"], "delta"),
        delta,
        "delta not echoed: {json}"
    );
    let rows = json["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("rows is not a list: {json}"));
    assert!(!rows.is_empty(), "no rows: {json}");
    let mut out = Vec::new();
    for row in rows {
        for key in ["method", "epsilon", "kind", "seconds"] {
            assert!(row.get(key).is_some(), "row lacks {key:?}: {row}");
        }
        let kind = row["kind"].as_str().expect("kind is a string");
        assert!(KINDS.contains(&kind), "unknown kind {kind:?}: {row}");
        let seconds = row["seconds"].as_f64().expect("seconds is a number");
        assert!(seconds >= 0.0, "negative time: {row}");
        let method = row["method"]
            .as_str()
            .expect("method is a string")
            .to_string();
        out.push((method, number(&row["epsilon"], "epsilon")));
    }
    for row in json["not_applicable"]
        .as_array()
        .expect("not_applicable list")
    {
        assert!(
            row["method"].is_string() && row["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "not_applicable row without method and reason: {row}"
        );
    }
    out
}

fn epsilon_of(rows: &[(String, f64)], method: &str) -> f64 {
    rows.iter()
        .find(|r| r.0 == method)
        .unwrap_or_else(|| panic!("no {method} row in {rows:?}"))
        .1
}

#[test]
fn compare_preset_json_has_the_interface_keys_and_sane_rows() {
    // The preset carries δ = 1e-5: no --delta needed.
    let json = run_json(
        &["compare", "--preset", "poisson-dp-sgd", "--format", "json"],
        None,
    );
    let rows = compare_rows(&json, 1e-5);
    let (upper, lower) = (
        epsilon_of(&rows, "pld_upper"),
        epsilon_of(&rows, "pld_lower"),
    );
    assert_dp_sgd_epsilon(upper, lower);
    // RDP is a valid upper bound: never below the PLD's lower bound.
    assert!(epsilon_of(&rows, "rdp") >= lower, "{rows:?}");
    assert!(rows.iter().any(|r| r.0 == "clt_estimate"), "{rows:?}");
    // Extras: the ratio to the PLD upper bound, and why zCDP does not apply.
    for row in json["rows"].as_array().unwrap() {
        let ratio = number(&row["ratio_to_pld_upper"], "ratio");
        let epsilon = number(&row["epsilon"], "epsilon");
        assert_close(ratio, epsilon / upper, 1e-12, "ratio_to_pld_upper");
    }
    let zcdp = json["not_applicable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["method"] == "zcdp")
        .unwrap_or_else(|| panic!("zcdp not listed as not applicable: {json}"));
    assert!(zcdp["reason"].as_str().unwrap().contains("subsampling"));
}

#[test]
fn compare_delta_overrides_the_presets_and_matches_the_flags() {
    let from_preset = run_json(
        &[
            "compare",
            "--preset",
            "poisson-dp-sgd",
            "--delta",
            "1e-6",
            "--format",
            "json",
        ],
        None,
    );
    let rows = compare_rows(&from_preset, 1e-6);
    let from_flags = run_json(
        &[
            "compare",
            "--noise-multiplier",
            "1",
            "--sampling-rate",
            "0.01",
            "--steps",
            "1000",
            "--delta",
            "1e-6",
            "--format",
            "json",
        ],
        None,
    );
    let flag_rows = compare_rows(&from_flags, 1e-6);
    assert_eq!(
        epsilon_of(&rows, "pld_upper"),
        epsilon_of(&flag_rows, "pld_upper")
    );
    assert_eq!(epsilon_of(&rows, "rdp"), epsilon_of(&flag_rows, "rdp"));
    // Smaller δ, larger ε.
    assert!(epsilon_of(&rows, "pld_lower") > DP_SGD_EPSILON);
}

#[test]
fn compare_with_pure_dp_events_lists_the_composition_theorems() {
    // 100 runs of binary randomized response with ε₀ = 0.1 (README): every method applies.
    let spec = r#"{"events": [{"mechanism": "randomized_response", "epsilon": 0.1,
                                "count": 100}]}"#;
    let json = run_json(
        &[
            "compare", "--spec", "-", "--delta", "1e-6", "--format", "json",
        ],
        Some(spec),
    );
    let rows = compare_rows(&json, 1e-6);
    assert_close(
        epsilon_of(&rows, "basic_composition"),
        10.0,
        1e-12,
        "basic composition",
    );
    let exact = epsilon_of(&rows, "optimal_composition");
    assert!(epsilon_of(&rows, "pld_lower") <= exact + 1e-9, "{rows:?}");
    assert!(epsilon_of(&rows, "pld_upper") >= exact - 1e-9, "{rows:?}");
}

#[test]
fn compare_csv_has_one_line_per_method_and_reason() {
    let json = run_json(
        &["compare", "--preset", "poisson-dp-sgd", "--format", "json"],
        None,
    );
    let methods = json["rows"].as_array().unwrap().len();
    let missing = json["not_applicable"].as_array().unwrap().len();
    let csv = run_ok(
        &["compare", "--preset", "poisson-dp-sgd", "--format", "csv"],
        None,
    );
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "delta,method,epsilon,kind,ratio_to_pld_upper,seconds,detail,not_applicable_reason"
    );
    assert_eq!(lines.len(), 1 + methods + missing, "{csv}");
    let pld = lines
        .iter()
        .find(|l| l.contains(",pld_upper,"))
        .expect("pld_upper line");
    let epsilon: f64 = pld.split(',').nth(2).unwrap().parse().expect("ε parses");
    assert_dp_sgd_epsilon(epsilon, 1.827);
    // A method that does not apply: empty ε, a reason.
    let zcdp = lines
        .iter()
        .find(|l| l.contains(",zcdp,"))
        .expect("zcdp line");
    assert!(zcdp.starts_with("0.00001,zcdp,,,,,,"), "{zcdp}");
    assert!(zcdp.len() > "0.00001,zcdp,,,,,,".len(), "no reason: {zcdp}");
}

#[test]
fn compare_table_fits_in_100_columns() {
    for preset in ["poisson-dp-sgd", "full-batch-gaussian", "mnist-dp-sgd"] {
        let table = run_ok(&["compare", "--preset", preset], None);
        for line in table.lines() {
            assert!(
                line.chars().count() <= 100,
                "{preset}: line of {} columns:\n{line}",
                line.chars().count()
            );
        }
        assert!(
            table.contains("pld_upper") && table.contains("not applicable"),
            "{table}"
        );
        // Markdown: a GitHub table with right-aligned numbers.
        let markdown = run_ok(
            &["compare", "--preset", preset, "--format", "markdown"],
            None,
        );
        assert!(markdown.contains("| method | ε | kind |"), "{markdown}");
        assert!(markdown.contains("| --- | ---: |"), "{markdown}");
    }
}

/// The table prints bounds rounded outward: the printed upper bound, read back, is never below
/// the one in the JSON answer, the printed lower bound never above it.
#[test]
fn printed_bounds_are_rounded_outward() {
    let cases: [(&[&str], &str); 4] = [
        (&["epsilon", "--preset", "poisson-dp-sgd"], "epsilon"),
        (&["epsilon", "--preset", "full-batch-gaussian"], "epsilon"),
        (
            &["delta", "--preset", "poisson-dp-sgd", "--epsilon", "1"],
            "delta",
        ),
        (
            &[
                "delta",
                "--preset",
                "full-batch-gaussian",
                "--epsilon",
                "0.5",
            ],
            "delta",
        ),
    ];
    for (args, key) in cases {
        let json: serde_json::Value =
            serde_json::from_str(&run_ok(&[args, &["--format", "json"]].concat(), None))
                .expect("JSON");
        let table = run_ok(args, None);
        let printed = |label: &str| -> f64 {
            let line = table
                .lines()
                .find(|l| l.trim_start().starts_with(label))
                .unwrap_or_else(|| panic!("no {label:?} line in\n{table}"));
            line.split_whitespace()
                .last()
                .and_then(|w| w.parse().ok())
                .unwrap_or_else(|| panic!("no number at the end of {line:?}"))
        };
        let (upper, lower) = (
            json[key]["upper"].as_f64().expect("upper"),
            json[key]["lower"].as_f64().expect("lower"),
        );
        assert!(printed("upper bound") >= upper, "{args:?}: {table}");
        assert!(printed("lower bound") <= lower, "{args:?}: {table}");
    }
}

// --- golden files ----------------------------------------------------------------------------

/// Replace every duration (`12.3 ms`, `1.25 s`), with the spaces that align it, by ` <time>`:
/// the golden files hold everything but the timings.
fn mask_times(text: &str) -> String {
    text.lines()
        .map(|line| {
            let words: Vec<&str> = line.split(' ').collect();
            let mut out: Vec<String> = Vec::new();
            let mut i = 0;
            while i < words.len() {
                let is_number = {
                    let w = words[i];
                    !w.is_empty()
                        && w.chars().all(|c| c.is_ascii_digit() || c == '.')
                        && w.contains('.')
                };
                // The unit, and punctuation that follows it ("s)." in a sentence).
                let unit = words.get(i + 1).copied().unwrap_or_default();
                let bare = unit.trim_end_matches([')', '.', ',', ';']);
                if is_number && matches!(bare, "ms" | "s") {
                    // Drop the alignment padding before the duration.
                    while out.last().is_some_and(|w| w.is_empty()) {
                        out.pop();
                    }
                    out.push(format!("<time>{}", &unit[bare.len()..]));
                    i += 2;
                } else {
                    out.push(words[i].to_string());
                    i += 1;
                }
            }
            out.join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn mask_times_removes_timings_and_their_padding() {
    assert_eq!(
        mask_times("pld_upper  1.0000      0.0 ms\nrdp  1.0979     12.5 ms\n| x | 1.25 s |\n(9 in 0.03 s)."),
        "pld_upper  1.0000 <time>\nrdp  1.0979 <time>\n| x | <time> |\n(9 in <time>)."
    );
}

/// Compare `actual` with the checked-in `tests/golden/<name>`; `UPDATE_GOLDEN=1` rewrites it.
fn assert_golden(name: &str, actual: &str) {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "golden", name]
        .iter()
        .collect();
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::write(&path, actual).expect("golden file written");
        eprintln!("updated {}", path.display());
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read golden file {} ({e}); create it deliberately with \
             UPDATE_GOLDEN=1 cargo test --release --test cli {name}",
            path.display()
        )
    });
    if expected == actual {
        return;
    }
    let (old, new): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let mut diff = String::new();
    for i in 0..old.len().max(new.len()) {
        match (old.get(i), new.get(i)) {
            (Some(a), Some(b)) if a == b => diff.push_str(&format!("  {a}\n")),
            (a, b) => {
                if let Some(a) = a {
                    diff.push_str(&format!("- {a}\n"));
                }
                if let Some(b) = b {
                    diff.push_str(&format!("+ {b}\n"));
                }
            }
        }
    }
    panic!(
        "output differs from the golden file {} (- golden, + now; timings masked):\n{diff}\n\
         If the change is intended, review the diff above and update the file deliberately:\n  \
         UPDATE_GOLDEN=1 cargo test --release --test cli golden\nthen commit it with the \
         change that caused it.",
        path.display()
    );
}

/// The preset of the golden files: unsampled Gaussians, so the PLD rows are the exact closed
/// form (no FFT, whose SIMD path may differ between machines in the last digits).
const GOLDEN_PRESET: &str = "full-batch-gaussian";

#[test]
fn golden_compare_table() {
    let table = run_ok(&["compare", "--preset", GOLDEN_PRESET], None);
    assert_golden("compare_full_batch_gaussian.txt", &mask_times(&table));
}

#[test]
fn golden_compare_markdown() {
    let markdown = run_ok(
        &["compare", "--preset", GOLDEN_PRESET, "--format", "markdown"],
        None,
    );
    assert_golden("compare_full_batch_gaussian.md", &mask_times(&markdown));
}

/// `pld curve` tables: tiny δ in scientific notation, an exact zero as `0`, and a column that
/// flags every point whose tolerance was not met (a fixed coarse grid), with the reason.
#[test]
fn golden_curve_tables() {
    let exact = run_ok(
        &["curve", "--preset", GOLDEN_PRESET, "--epsilons", "0.5,2,8"],
        None,
    );
    assert_golden("curve_full_batch_gaussian.txt", &mask_times(&exact));
    // From standard input, so that the title does not depend on where the checkout is.
    let spec = std::fs::read_to_string(fixture("laplace_20.json")).expect("fixture");
    let coarse = run_ok(
        &[
            "curve",
            "--spec",
            "-",
            "--epsilons",
            "0.5,3,12",
            "--grid-step",
            "0.2",
        ],
        Some(&spec),
    );
    assert_golden("curve_laplace_coarse_grid.txt", &mask_times(&coarse));
    let markdown = run_ok(
        &[
            "curve",
            "--spec",
            "-",
            "--deltas",
            "1e-2,1e-6",
            "--grid-step",
            "0.2",
            "--format",
            "markdown",
        ],
        Some(&spec),
    );
    assert_golden("curve_laplace_coarse_grid.md", &mask_times(&markdown));
}

// --- plots -----------------------------------------------------------------------------------

/// A fresh path for a plot under cargo's scratch directory for integration tests.
fn plot_path(name: &str) -> PathBuf {
    let path: PathBuf = [env!("CARGO_TARGET_TMPDIR"), name].iter().collect();
    let _ = std::fs::remove_file(&path);
    path
}

/// Parse an SVG file as XML; return the text of every `<text>` element.
fn svg_texts(path: &PathBuf) -> Vec<String> {
    let svg = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no plot at {}: {e}", path.display()));
    assert!(!svg.contains("NaN"), "NaN in {}", path.display());
    let document = roxmltree::Document::parse(&svg)
        .unwrap_or_else(|e| panic!("{} is not valid XML: {e}", path.display()));
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    for id in ["x-label", "y-label", "legend"] {
        assert!(
            document
                .descendants()
                .any(|n| n.attribute("id") == Some(id)),
            "no element with id {id:?} in {}",
            path.display()
        );
    }
    document
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn compare_plot_is_valid_svg_with_axes_and_legend() {
    let path = plot_path("compare.svg");
    let stdout = run_ok(
        &[
            "compare",
            "--preset",
            "poisson-dp-sgd",
            "--plot",
            path.to_str().unwrap(),
        ],
        None,
    );
    assert!(
        stdout.contains("pld_upper"),
        "the table is still printed: {stdout}"
    );
    let texts = svg_texts(&path);
    let has = |t: &str| texts.iter().any(|x| x.contains(t));
    assert!(has("δ") && has("ε"), "axis labels missing: {texts:?}");
    // People's names in the legend, never the JSON identifiers.
    for method in [
        "PLD upper bound (publish this)",
        "PLD lower bound",
        "RDP (Rényi DP) — upper bound",
        "CLT estimate (no guarantee)",
        "PLD bracket",
    ] {
        assert!(has(method), "legend lacks {method}: {texts:?}");
    }
    for identifier in ["pld_upper", "pld_lower", "clt_estimate"] {
        assert!(!has(identifier), "legend shows {identifier}: {texts:?}");
    }
    // The requested δ and the answer at it are marked.
    let table_upper = stdout
        .lines()
        .find(|l| l.starts_with("pld_upper"))
        .and_then(|l| l.split_whitespace().nth(1))
        .expect("pld_upper row");
    assert!(has("δ = 1e-5"), "{texts:?}");
    assert!(has(&format!("ε ≤ {table_upper}")), "{texts:?}");
    // Decade ticks from 1e-12 to 1e-1.
    assert!(has("1e-12") && has("1e-1"), "{texts:?}");
    // Six points per decade, one path per method, each drawn with its own colour and dash.
    let svg = std::fs::read_to_string(&path).expect("plot");
    let document = roxmltree::Document::parse(&svg).expect("XML");
    let looks: Vec<(String, String, usize)> = document
        .descendants()
        .filter(|n| n.has_tag_name("path"))
        .map(|n| {
            (
                n.attribute("stroke").unwrap_or_default().to_string(),
                n.attribute("stroke-dasharray")
                    .unwrap_or_default()
                    .to_string(),
                n.attribute("d").unwrap_or_default().matches('L').count() + 1,
            )
        })
        .collect();
    assert_eq!(looks.len(), 4, "{looks:?}");
    for (i, a) in looks.iter().enumerate() {
        assert_eq!(a.2, 67, "points of curve {i}: {looks:?}");
        for b in &looks[i + 1..] {
            assert!(a.0 != b.0 && a.1 != b.1, "two curves look alike: {looks:?}");
        }
    }
}

/// Width and height of a PNG file, and whether it holds a pixel of colour `rgb`.
fn png_facts(path: &PathBuf, rgb: [u8; 3]) -> (u32, u32, bool) {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().expect("a PNG header");
    let mut pixels = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut pixels).expect("PNG pixels decode");
    let channels = info.color_type.samples();
    let found = pixels[..info.buffer_size()]
        .chunks(channels)
        .any(|p| p[..3] == rgb);
    (info.width, info.height, found)
}

/// `width` and `height` attributes of an SVG file.
fn svg_size(path: &PathBuf) -> (f64, f64) {
    let svg = std::fs::read_to_string(path).expect("plot");
    let document = roxmltree::Document::parse(&svg).expect("XML");
    let root = document.root_element();
    let number = |name: &str| -> f64 {
        root.attribute(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} on <svg>"))
    };
    (number("width"), number("height"))
}

#[test]
fn png_plots_decode_at_twice_the_svg_size_and_are_deterministic() {
    for (command, name) in [("tradeoff", "roc"), ("curve", "curve")] {
        let svg = plot_path(&format!("{name}_for_size.svg"));
        let png = plot_path(&format!("{name}.png"));
        let again = plot_path(&format!("{name}_again.png"));
        for path in [&svg, &png, &again] {
            run_ok(
                &[
                    command,
                    "--preset",
                    "poisson-dp-sgd",
                    "--plot",
                    path.to_str().unwrap(),
                ],
                None,
            );
        }
        svg_texts(&svg);
        let (width, height) = svg_size(&svg);
        // The PLD upper bound's colour (#0072b2) is drawn.
        let (w, h, has_curve) = png_facts(&png, [0x00, 0x72, 0xb2]);
        assert_eq!((f64::from(w), f64::from(h)), (2.0 * width, 2.0 * height));
        assert!(
            has_curve,
            "{name}.png has no pixel of the upper bound's colour"
        );
        let (_, _, has_text) = png_facts(&png, [0, 0, 0]);
        assert!(has_text, "{name}.png has no black pixel: no text drawn");
        assert_eq!(
            std::fs::read(&png).unwrap(),
            std::fs::read(&again).unwrap(),
            "{name}.png differs between two runs"
        );
    }
}

#[test]
fn golden_epsilon_over_epochs_table() {
    let args = [
        "curve",
        "--noise-multiplier",
        "1.1",
        "--batch-size",
        "256",
        "--dataset-size",
        "60000",
        "--steps",
        "800",
        "--over",
        "epochs",
        "--delta",
        "1e-5",
    ];
    // 800 steps of 234.375 per epoch: three whole epochs, then the run's end inside the fourth.
    assert_golden("epochs_dp_sgd.txt", &mask_times(&run_ok(&args, None)));
    let csv: Vec<&str> = args.iter().copied().chain(["--format", "csv"]).collect();
    assert_golden("epochs_dp_sgd.csv", &run_ok(&csv, None));
}

/// The README's images exist, decode, and sit next to the command that makes them.
#[test]
fn readme_images_are_made_by_the_commands_beside_them() {
    // A command continued over lines (a backslash at the end) is read as one line.
    let readme = std::fs::read_to_string("README.md")
        .expect("README.md")
        .replace(" \\\n  ", " ");
    for (image, command) in [
        (
            "docs/compare_dp_sgd.svg",
            "pld compare --preset mnist-dp-sgd --plot docs/compare_dp_sgd.svg",
        ),
        (
            "docs/epsilon_over_epochs.png",
            "pld curve --preset mnist-dp-sgd --over epochs --plot docs/epsilon_over_epochs.png",
        ),
        (
            "docs/tradeoff_roc.png",
            "pld tradeoff --noise-multiplier 1 --sampling-rate 0.01 --steps 10000 --plot \
             docs/tradeoff_roc.png",
        ),
        (
            "docs/sweep_dp_sgd.svg",
            "pld sweep --x noise-multiplier=0.5..2:16 --y epochs=5..100:20 --batch-size 256 \
             --dataset-size 60000 --delta 1e-5 --plot docs/sweep_dp_sgd.svg",
        ),
    ] {
        assert!(
            readme.contains(&format!("]({image})")),
            "README lacks {image}"
        );
        assert!(readme.contains(command), "README lacks `{command}`");
        let path = PathBuf::from(image);
        if image.ends_with(".png") {
            let (width, height, has_curve) = png_facts(&path, [0x00, 0x72, 0xb2]);
            assert!(width == 1800 && height > 1000 && has_curve, "{image}");
        } else {
            svg_texts(&path);
        }
    }
}

#[test]
fn epsilon_over_epochs_is_confirmed_by_pld_epsilon() {
    let flags = [
        "--noise-multiplier",
        "1.1",
        "--batch-size",
        "256",
        "--dataset-size",
        "60000",
    ];
    let path = plot_path("epochs.png");
    let args: Vec<&str> = ["curve"]
        .iter()
        .copied()
        .chain(flags)
        .chain([
            "--epochs",
            "3",
            "--over",
            "epochs",
            "--delta",
            "1e-5",
            "--format",
            "json",
            "--plot",
            path.to_str().unwrap(),
        ])
        .collect();
    let json = run_json(&args, None);
    assert_eq!(json["over"], "epochs");
    assert_eq!(json["count_unit"], "steps");
    let points = json["points"].as_array().expect("points");
    let got: Vec<(f64, u64)> = points
        .iter()
        .map(|p| (p["epochs"].as_f64().unwrap(), p["count"].as_u64().unwrap()))
        .collect();
    // ⌈E · 60000 / 256⌉ steps after E epochs.
    assert_eq!(got, [(1.0, 235), (2.0, 469), (3.0, 704)]);
    let mut previous = 0.0;
    for (p, epochs) in points.iter().zip(["1", "2", "3"]) {
        let upper = p["epsilon"]["upper"].as_f64().unwrap();
        let lower = p["epsilon"]["lower"].as_f64().unwrap();
        assert!(lower <= upper && upper > previous, "{p}");
        previous = upper;
        let confirm: Vec<&str> = ["epsilon"]
            .iter()
            .copied()
            .chain(flags)
            .chain(["--epochs", epochs, "--delta", "1e-5", "--format", "json"])
            .collect();
        let answer = run_json(&confirm, None);
        assert_eq!(
            answer["epsilon"]["upper"].as_f64(),
            Some(upper),
            "{epochs} epochs"
        );
        assert_eq!(
            answer["epsilon"]["lower"].as_f64(),
            Some(lower),
            "{epochs} epochs"
        );
    }
    let (width, _, has_curve) = png_facts(&path, [0x00, 0x72, 0xb2]);
    assert!(width == 1800 && has_curve);
    // A composition of two events has no epochs.
    let output = pld()
        .args([
            "curve",
            "--spec",
            "tests/cli_fixtures/mixed.json",
            "--over",
            "epochs",
            "--delta",
            "1e-5",
        ])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--over") && stderr.contains("events"),
        "{stderr}"
    );
}

#[test]
fn curve_plot_is_valid_svg() {
    let path = plot_path("curve.svg");
    run_ok(
        &[
            "curve",
            "--preset",
            "poisson-dp-sgd",
            "--epsilons",
            "0.5,1,2,inf",
            "--plot",
            path.to_str().unwrap(),
        ],
        None,
    );
    let texts = svg_texts(&path);
    assert!(
        texts.iter().any(|t| t.contains("PLD upper bound")),
        "{texts:?}"
    );
    // δ(∞) is left out of a linear ε axis, and said so.
    assert!(texts.iter().any(|t| t.contains("left out")), "{texts:?}");
}

// --- tradeoff --------------------------------------------------------------------------------

#[test]
fn golden_tradeoff_table() {
    let table = run_ok(&["tradeoff", "--preset", GOLDEN_PRESET], None);
    assert_golden("tradeoff_full_batch_gaussian.txt", &mask_times(&table));
}

/// The JSON keys of the interface, and a bracket that holds the Gaussian's closed form
/// G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) (μ = 2: one run of σ = 0.5), with TPR = 1 − β.
#[test]
fn tradeoff_json_has_the_interface_keys_and_holds_the_gaussian() {
    let json = run_json(
        &[
            "tradeoff",
            "--sigma",
            "0.5",
            "--steps",
            "1",
            "--alphas",
            "0.001,0.05,0.5",
            "--format",
            "json",
        ],
        None,
    );
    let phi = |x: f64| 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2);
    // Φ⁻¹(p) from the closed form Φ above, by bisection.
    let quantile = |p: f64| {
        let (mut lo, mut hi) = (-40.0f64, 40.0f64);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if phi(mid) < p {
                lo = mid
            } else {
                hi = mid
            }
        }
        lo
    };
    let points = json["points"].as_array().expect("points");
    assert_eq!(points.len(), 3);
    for point in points {
        let alpha = point["alpha"].as_f64().expect("alpha");
        let (upper, lower) = (
            point["beta"]["upper"].as_f64().expect("beta.upper"),
            point["beta"]["lower"].as_f64().expect("beta.lower"),
        );
        let exact = phi(quantile(1.0 - alpha) - 2.0);
        assert!(
            lower <= exact + 1e-12 && exact <= upper + 1e-12,
            "α {alpha}: {point}"
        );
    }
    let tpr = json["tpr_at_fpr"].as_array().expect("tpr_at_fpr");
    let fprs: Vec<f64> = tpr.iter().map(|t| t["fpr"].as_f64().unwrap()).collect();
    assert_eq!(fprs, [1e-3, 1e-2, 1e-1]);
    for t in tpr {
        assert!(
            t["tpr"]["upper"].as_f64() >= t["tpr"]["lower"].as_f64(),
            "{t}"
        );
    }
    // Advantage = total variation 2Φ(μ/2) − 1.
    let tv = 2.0 * phi(1.0) - 1.0;
    let advantage = &json["advantage"];
    assert!(
        advantage["lower"].as_f64().unwrap() <= tv && tv <= advantage["upper"].as_f64().unwrap()
    );
    assert!(json["inputs"].is_object());
}

#[test]
fn tradeoff_plot_is_valid_svg_and_bad_alphas_exit_2() {
    let path = plot_path("tradeoff.svg");
    run_ok(
        &[
            "tradeoff",
            "--preset",
            "poisson-dp-sgd",
            "--plot",
            path.to_str().unwrap(),
        ],
        None,
    );
    let texts = svg_texts(&path);
    assert!(texts.iter().any(|t| t.contains("guarantee")), "{texts:?}");
    assert!(
        texts.iter().any(|t| t.contains("random guess")),
        "{texts:?}"
    );
    let output = pld()
        .args([
            "tradeoff",
            "--preset",
            "poisson-dp-sgd",
            "--alphas",
            "0.1,1.5",
        ])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("alphas[1]") && stderr.contains("1.5"),
        "{stderr}"
    );
}

// --- calibrate with DP-SGD flags -------------------------------------------------------------

/// `ε upper` of `pld epsilon` with these DP-SGD flags at δ = 1e-5.
fn epsilon_upper_of(flags: &[&str]) -> f64 {
    let json = run_json(
        &[
            &["epsilon"],
            flags,
            &["--delta", "1e-5", "--format", "json"],
        ]
        .concat(),
        None,
    );
    json["epsilon"]["upper"].as_f64().expect("epsilon.upper")
}

/// "How many epochs fit in ε = 8" comes back in epochs, and `pld epsilon` confirms it: E
/// epochs meet the target, E + 1 do not.
#[test]
fn calibrate_solve_epochs_answers_in_epochs_and_pld_epsilon_confirms() {
    let run = [
        "--noise-multiplier",
        "1",
        "--batch-size",
        "600",
        "--dataset-size",
        "60000",
    ];
    let json = run_json(
        &[
            &["calibrate", "--solve", "epochs"][..],
            &run,
            &["--epsilon", "8", "--delta", "1e-5", "--format", "json"],
        ]
        .concat(),
        None,
    );
    let answer = &json["dp_sgd"];
    assert_eq!(answer["solve"], "epochs");
    let epochs = answer["value"].as_f64().expect("value");
    assert!(epochs >= 1.0 && epochs.fract() == 0.0, "{answer}");
    assert_eq!(answer["failing_value"].as_f64(), Some(epochs + 1.0));
    let text = |e: f64| format!("{e}");
    let meets = epsilon_upper_of(&[&run[..], &["--epochs", &text(epochs)]].concat());
    let misses = epsilon_upper_of(&[&run[..], &["--epochs", &text(epochs + 1.0)]].concat());
    assert!(
        meets <= 8.0 && misses > 8.0,
        "{epochs} epochs: {meets}, one more: {misses}"
    );
    assert_eq!(answer["steps"].as_u64(), Some((epochs * 100.0) as u64));
    // The table says it in epochs, with the steps they mean.
    let table = run_ok(
        &[
            &["calibrate", "--solve", "epochs"][..],
            &run,
            &["--epsilon", "8", "--delta", "1e-5"],
        ]
        .concat(),
        None,
    );
    assert!(
        table.contains(&format!("epochs (use this)       {epochs}")),
        "{table}"
    );
}

/// The smallest noise multiplier: `pld epsilon` at the printed value meets the target.
#[test]
fn calibrate_solve_noise_multiplier_is_confirmed_by_pld_epsilon() {
    let run = [
        "--batch-size",
        "256",
        "--dataset-size",
        "60000",
        "--epochs",
        "60",
    ];
    let table = run_ok(
        &[
            &["calibrate", "--solve", "noise-multiplier"][..],
            &run,
            &["--epsilon", "3", "--delta", "1e-5"],
        ]
        .concat(),
        None,
    );
    let printed = table
        .lines()
        .find(|l| l.trim_start().starts_with("noise multiplier (use this)"))
        .and_then(|l| l.split_whitespace().nth(4))
        .unwrap_or_else(|| panic!("no value in\n{table}"))
        .to_string();
    let z: f64 = printed.parse().expect("a number");
    assert!(z > 0.5 && z < 2.0, "{table}");
    let upper = epsilon_upper_of(&[&run[..], &["--noise-multiplier", &printed]].concat());
    assert!(upper <= 3.0, "noise multiplier {printed}: ε upper {upper}");
}

#[test]
fn calibrate_solve_refuses_the_flag_it_solves_and_flags_without_solve() {
    for (args, named) in [
        (
            vec![
                "--solve",
                "epochs",
                "--noise-multiplier",
                "1",
                "--sampling-rate",
                "0.01",
                "--steps",
                "5",
            ],
            "--steps",
        ),
        (
            vec!["--noise-multiplier", "1", "--sampling-rate", "0.01"],
            "--solve",
        ),
        (
            vec![
                "--solve",
                "batch-size",
                "--noise-multiplier",
                "1",
                "--dataset-size",
                "1000",
                "--epochs",
                "2",
            ],
            "--steps",
        ),
    ] {
        let output = pld()
            .args(
                [
                    &["calibrate"][..],
                    &args,
                    &["--epsilon", "8", "--delta", "1e-5"],
                ]
                .concat(),
            )
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(named), "{args:?}: {stderr}");
    }
}

// --- curve -----------------------------------------------------------------------------------

#[test]
fn curve_default_deltas_json() {
    let json = run_json(
        &["curve", "--preset", "poisson-dp-sgd", "--format", "json"],
        None,
    );
    assert_eq!(json["query"], "epsilon_for_delta");
    let points = json["points"].as_array().expect("points list");
    assert_eq!(points.len(), 12, "δ = 1e-1 ... 1e-12");
    let mut previous = 0.0;
    for (i, point) in points.iter().enumerate() {
        let delta = 10f64.powi(-(i as i32) - 1);
        let (upper, lower) = epsilon_bracket(point, delta);
        assert!(lower > previous, "ε not increasing as δ decreases: {json}");
        previous = upper;
    }
    let (upper, lower) = epsilon_bracket(&points[4], 1e-5);
    assert_dp_sgd_epsilon(upper, lower);
}

#[test]
fn curve_epsilons_gives_delta_brackets() {
    let json = run_json(
        &[
            "curve",
            "--preset",
            "poisson-dp-sgd",
            "--epsilons",
            "1.82824,3",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(json["query"], "delta_for_epsilon");
    let points = json["points"].as_array().expect("points list");
    let (upper, lower) = delta_bracket(&points[0], DP_SGD_EPSILON);
    assert!((0.9995e-5..=1.002e-5).contains(&upper), "upper {upper}");
    assert!((0.998e-5..=1.0005e-5).contains(&lower), "lower {lower}");
    let (upper3, _) = delta_bracket(&points[1], 3.0);
    assert!(upper3 < lower, "δ(3) ≥ δ(1.83): {json}");
}

#[test]
fn curve_table_csv_and_markdown() {
    let args = [
        "curve",
        "--preset",
        "poisson-dp-sgd",
        "--deltas",
        "1e-3,1e-5",
    ];
    let table = run_ok(&args, None);
    assert!(
        table.contains("ε upper bound") && table.contains("1e-5"),
        "{table}"
    );
    let mut csv_args = args.to_vec();
    csv_args.extend(["--format", "csv"]);
    let csv = run_ok(&csv_args, None);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(
        lines[0].starts_with("delta,epsilon_upper,epsilon_lower,"),
        "{csv}"
    );
    let upper: f64 = lines[2].split(',').nth(1).unwrap().parse().unwrap();
    let lower: f64 = lines[2].split(',').nth(2).unwrap().parse().unwrap();
    assert_dp_sgd_epsilon(upper, lower);
    let mut md_args = args.to_vec();
    md_args.extend(["--format", "markdown"]);
    let markdown = run_ok(&md_args, None);
    assert!(
        markdown.contains("| δ | ε upper bound | ε lower bound |"),
        "{markdown}"
    );
}

// --- epsilon and delta in the new formats ------------------------------------------------------

#[test]
fn epsilon_and_delta_csv_and_markdown() {
    let mut args = vec!["epsilon"];
    args.extend(DP_SGD_FLAGS);
    args.push("csv");
    let csv = run_ok(&args, None);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(
        lines[0].starts_with("delta,epsilon_upper,epsilon_lower"),
        "{csv}"
    );
    let fields: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(fields[0].parse::<f64>().unwrap(), 1e-5);
    assert_dp_sgd_epsilon(fields[1].parse().unwrap(), fields[2].parse().unwrap());

    let markdown = run_ok(
        &[
            "delta",
            "--preset",
            "poisson-dp-sgd",
            "--epsilon",
            "2",
            "--format",
            "markdown",
        ],
        None,
    );
    assert!(
        markdown.starts_with("| ε | δ upper bound | δ lower bound |"),
        "{markdown}"
    );
    // `pld epsilon --preset` uses the preset's δ.
    let json = run_json(
        &["epsilon", "--preset", "poisson-dp-sgd", "--format", "json"],
        None,
    );
    let (upper, lower) = epsilon_bracket(&json, 1e-5);
    assert_dp_sgd_epsilon(upper, lower);
}

// --- the DP-SGD flags --------------------------------------------------------------------------

#[test]
fn opacus_flags_describe_the_same_run() {
    let epsilon = |args: &[&str]| -> Value {
        let mut all = vec!["epsilon"];
        all.extend(args);
        all.extend(["--delta", "1e-5", "--format", "json"]);
        run_json(&all, None)["epsilon"].clone()
    };
    let reference = epsilon(&["--sigma", "1", "--sampling-rate", "0.01", "--steps", "1000"]);
    // q = B/N and steps = epochs·N/B: 100 of 10,000 for 10 epochs is q = 0.01, 1000 steps.
    for (args, what) in [
        (
            vec![
                "--noise-multiplier",
                "1",
                "--sampling-rate",
                "0.01",
                "--steps",
                "1000",
            ],
            "--noise-multiplier",
        ),
        (
            vec![
                "--noise-multiplier",
                "1",
                "--batch-size",
                "100",
                "--dataset-size",
                "10000",
                "--epochs",
                "10",
            ],
            "--batch-size/--dataset-size/--epochs",
        ),
        (
            vec![
                "--noise-multiplier",
                "1",
                "--sampling-rate",
                "0.01",
                "--epochs",
                "10",
            ],
            "--sampling-rate/--epochs",
        ),
        // The noise multiplier is σ over the clipping norm: the same privacy at any norm.
        (
            vec![
                "--noise-multiplier",
                "1",
                "--max-grad-norm",
                "3",
                "--sampling-rate",
                "0.01",
                "--steps",
                "1000",
            ],
            "--max-grad-norm",
        ),
    ] {
        let answer = epsilon(&args);
        for bound in ["upper", "lower"] {
            // σ = 3·1 against Δ = 3 is the same ratio up to rounding in the last digits.
            let (x, y) = (
                number(&answer[bound], bound),
                number(&reference[bound], bound),
            );
            assert_close(x, y, 1e-7, &format!("{what} {bound}: {args:?}"));
        }
    }
    // Epochs round up: 60 epochs of 256 out of 60,000 are ⌈14062.5⌉ = 14063 steps, the
    // mnist-dp-sgd preset.
    let flags = epsilon(&[
        "--noise-multiplier",
        "1.1",
        "--batch-size",
        "256",
        "--dataset-size",
        "60000",
        "--epochs",
        "60",
    ]);
    let preset = run_json(
        &["epsilon", "--preset", "mnist-dp-sgd", "--format", "json"],
        None,
    );
    assert_eq!(flags, preset["epsilon"]);
}

// --- presets -----------------------------------------------------------------------------------

#[test]
fn presets_are_listed_one_line_each_and_print_their_spec() {
    let list = run_ok(&["presets"], None);
    let json = run_json(&["presets", "--format", "json"], None);
    let presets = json.as_array().expect("a list");
    assert!(presets.len() >= 4, "{json}");
    for preset in presets {
        let name = preset["name"].as_str().expect("name");
        assert!(
            preset["description"].is_string() && preset["spec"].is_object(),
            "{preset}"
        );
        let delta = number(&preset["delta"], "delta");
        assert!(delta > 0.0 && delta < 1.0, "{preset}");
        let lines: Vec<&str> = list.lines().filter(|l| l.starts_with(name)).collect();
        assert_eq!(lines.len(), 1, "{name} is not on exactly one line:\n{list}");
        assert!(lines[0].chars().count() <= 100, "{}", lines[0]);
    }
    for name in [
        "laplace-fixed-batch",
        "full-batch-gaussian",
        "poisson-dp-sgd",
        "mnist-dp-sgd",
    ] {
        assert!(presets.iter().any(|p| p["name"] == name), "{name} missing");
    }
    // `pld presets NAME` prints a specification that --spec reads to the same answer.
    let spec = run_ok(&["presets", "poisson-dp-sgd"], None);
    let from_spec = run_json(
        &[
            "epsilon", "--spec", "-", "--delta", "1e-5", "--format", "json",
        ],
        Some(&spec),
    );
    let from_preset = run_json(
        &["epsilon", "--preset", "poisson-dp-sgd", "--format", "json"],
        None,
    );
    assert_eq!(from_spec["epsilon"], from_preset["epsilon"]);
    let csv = run_ok(&["presets", "--format", "csv"], None);
    assert!(csv.starts_with("name,delta,description"), "{csv}");
    assert!(run_ok(&["presets", "--format", "markdown"], None).contains("| name |"));
}

// --- standard error ----------------------------------------------------------------------------

#[test]
fn verbose_reports_on_stderr_and_quiet_is_silent() {
    let output = pld()
        .args(["compare", "--preset", "poisson-dp-sgd", "--verbose"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("pld: input: preset poisson-dp-sgd"),
        "{stderr}"
    );
    assert!(stderr.contains("took"), "no timing: {stderr}");
    assert!(
        String::from_utf8(output.stdout)
            .unwrap()
            .contains("pld_upper"),
        "stdout keeps the table"
    );
    // Not a terminal (and --quiet): nothing on stderr, even for a plot.
    let path = plot_path("quiet.svg");
    run_ok(
        &[
            "curve",
            "--preset",
            "poisson-dp-sgd",
            "--deltas",
            "1e-3",
            "--quiet",
            "--plot",
            path.to_str().unwrap(),
        ],
        None,
    );
}

// --- calibrate ---------------------------------------------------------------------------------

/// The target of the calibration tests: ε ≤ 2 at δ = 1e-5.
const CALIBRATE_TARGET: [&str; 4] = ["--epsilon", "2", "--delta", "1e-5"];

/// `pld calibrate` of a fixture for [`CALIBRATE_TARGET`] in `format`.
fn calibrate_output(fixture_name: &str, format: &str) -> String {
    let spec = fixture(fixture_name);
    let mut args = vec!["calibrate", "--spec", spec.as_str()];
    args.extend(CALIBRATE_TARGET);
    args.extend(["--format", format]);
    run_ok(&args, None)
}

fn calibrate_json(fixture_name: &str) -> Value {
    let stdout = calibrate_output(fixture_name, "json");
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("calibrate {fixture_name} did not print JSON ({e}):\n{stdout}"))
}

/// Check the documented keys and what a calibration promises (the value meets the target, the
/// failing value misses it); return (value, failing value).
fn check_calibration(json: &Value, parameter: &str, location: &str) -> (f64, Option<f64>) {
    let object = json.as_object().expect("top level is an object");
    for key in [
        "parameter",
        "value",
        "epsilon",
        "delta",
        "location",
        "target_epsilon",
        "failing_value",
        "failing_epsilon",
        "search_range",
        "evaluations",
        "settings",
        "seconds",
        "source",
    ] {
        assert!(object.contains_key(key), "missing key {key:?} in {json}");
    }
    assert_eq!(json["parameter"], parameter, "{json}");
    assert_eq!(json["location"], location, "{json}");
    let (delta, upper, _) = bracket(json, "delta", "epsilon");
    assert_eq!(delta, 1e-5, "delta is not echoed: {json}");
    assert_eq!(number(&json["target_epsilon"], "target_epsilon"), 2.0);
    assert!(upper <= 2.0, "the value found misses the target: {json}");
    let value = number(&json["value"], "value");
    let failing = json["failing_value"].as_f64();
    if failing.is_some() {
        let missed = number(&json["failing_epsilon"]["upper"], "failing_epsilon.upper");
        assert!(missed > 2.0, "the failing value meets the target: {json}");
    } else {
        assert!(json["failing_value"].is_null(), "{json}");
    }
    let evaluations = json["evaluations"]
        .as_u64()
        .expect("evaluations is an integer");
    assert!(
        (2..=100).contains(&evaluations),
        "{evaluations} evaluations: {json}"
    );
    (value, failing)
}

/// `pld epsilon`'s upper bound at δ = 1e-5 for a calibration fixture with its `null` replaced
/// by `value` (an independent check of the calibration).
fn epsilon_upper_with(fixture_name: &str, value: f64) -> f64 {
    let text = std::fs::read_to_string(fixture(fixture_name)).expect("fixture");
    assert_eq!(text.matches("null").count(), 1, "{fixture_name}: one null");
    // `{}` of an f64 is the shortest text that reads back to the same number.
    let spec = text.replace("null", &value.to_string());
    let json = run_json(
        &[
            "epsilon", "--spec", "-", "--delta", "1e-5", "--format", "json",
        ],
        Some(&spec),
    );
    epsilon_bracket(&json, 1e-5).0
}

/// The acceptance case: DP-SGD with sensitivity 1, Poisson q = 0.01, 1000 steps, σ unknown,
/// for ε ≤ 2 at δ = 1e-5. The σ found meets the target when `pld epsilon` checks it; 1% less
/// noise does not.
#[test]
fn calibrate_dp_sgd_sigma_meets_the_target_and_one_percent_less_noise_misses() {
    let json = calibrate_json("calibrate_sigma.json");
    let (sigma, failing) = check_calibration(&json, "sigma", "events[0].sigma");
    // σ = 1 gives ε = 1.828 (DP_SGD_EPSILON), so a little less noise is allowed.
    assert!((0.9..1.0).contains(&sigma), "σ = {sigma}");
    let failing = failing.expect("a failing σ below the one found");
    assert!(
        failing < sigma && sigma - failing <= 1.01e-4 * sigma,
        "failing σ {failing} is not within 1e-4 below σ = {sigma}"
    );

    let at_sigma = epsilon_upper_with("calibrate_sigma.json", sigma);
    assert!(
        at_sigma <= 2.0,
        "pld epsilon at σ = {sigma}: upper {at_sigma} > 2"
    );
    // The same accountant and options as the calibration's verification: the same bracket.
    assert_close(
        at_sigma,
        number(&json["epsilon"]["upper"], "epsilon.upper"),
        1e-9,
        "pld epsilon's upper bound at the calibrated σ",
    );
    let less_noise = epsilon_upper_with("calibrate_sigma.json", 0.99 * sigma);
    assert!(
        less_noise > 2.0,
        "pld epsilon at 0.99·σ = {}: upper {less_noise} ≤ 2, so σ = {sigma} is not the best",
        0.99 * sigma
    );

    // The DP-SGD flags of `pld epsilon` agree.
    let flags = run_json(
        &[
            "epsilon",
            "--sigma",
            &sigma.to_string(),
            "--sampling-rate",
            "0.01",
            "--steps",
            "1000",
            "--delta",
            "1e-5",
            "--format",
            "json",
        ],
        None,
    );
    assert!(epsilon_bracket(&flags, 1e-5).0 <= 2.0, "{flags}");
}

#[test]
fn calibrate_count_is_a_whole_number_and_one_more_step_misses() {
    let json = calibrate_json("calibrate_count.json");
    let (count, failing) = check_calibration(&json, "count", "events[0].count");
    assert!(
        json["value"].is_u64(),
        "count is not a JSON integer: {json}"
    );
    assert!(json["failing_value"].is_u64(), "{json}");
    assert_eq!(failing, Some(count + 1.0), "{json}");
    // σ = 1, q = 0.01: 1000 steps give ε = 1.828 < 2.
    assert!(count > 1000.0, "count = {count}");
    assert!(epsilon_upper_with("calibrate_count.json", count) <= 2.0);
    assert!(epsilon_upper_with("calibrate_count.json", count + 1.0) > 2.0);

    // When the end of the searched range meets the target, there is no failing value.
    let json = run_json(
        &[
            "calibrate",
            "--spec",
            "-",
            "--epsilon",
            "2",
            "--delta",
            "1e-5",
            "--format",
            "json",
        ],
        Some(r#"{"events": [{"mechanism": "gaussian", "sigma": 1e9, "count": null}]}"#),
    );
    let (count, failing) = check_calibration(&json, "count", "events[0].count");
    assert_eq!(json["value"].as_u64(), Some(1_000_000_000_000), "{json}");
    assert_eq!((count, failing), (1e12, None));
    assert!(json["failing_epsilon"].is_null(), "{json}");
}

#[test]
fn calibrate_poisson_rate_is_the_largest_that_meets() {
    let json = calibrate_json("calibrate_rate.json");
    let (rate, failing) = check_calibration(&json, "poisson", "events[0].sampling.poisson");
    // σ = 1, q = 0.01, 1000 steps: ε = 1.828 < 2, so a slightly larger rate is allowed.
    assert!((0.01..0.02).contains(&rate), "q = {rate}");
    let failing = failing.expect("a failing rate above the one found");
    assert!(
        failing > rate && failing - rate <= 1.01e-4 * rate,
        "failing q {failing} is not within 1e-4 above q = {rate}"
    );
    assert!(epsilon_upper_with("calibrate_rate.json", rate) <= 2.0);
    assert!(epsilon_upper_with("calibrate_rate.json", 1.01 * rate) > 2.0);
}

#[test]
fn calibrate_table_csv_and_markdown() {
    let table = calibrate_output("calibrate_sigma.json", "table");
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0], "calibration of events[0].sigma for epsilon <= 2 at delta = 1e-5",
        "{table}"
    );
    for label in [
        "sigma (use this)",
        "epsilon upper bound",
        "epsilon lower bound",
        "nearest failing sigma",
        "delta",
        "method",
        "search",
    ] {
        assert!(
            lines.iter().any(|l| l.trim_start().starts_with(label)),
            "no {label:?} line:\n{table}"
        );
    }
    assert!(lines.iter().all(|l| l.chars().count() <= 100), "{table}");
    // The σ printed (rounded up) is safe to use as printed.
    let shown: f64 = lines[1]
        .split_whitespace()
        .nth(3)
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no σ in {:?}", lines[1]));
    let json = calibrate_json("calibrate_sigma.json");
    let sigma = number(&json["value"], "value");
    assert!(
        shown >= sigma && shown <= sigma * (1.0 + 1e-5),
        "printed σ {shown}, calibrated {sigma}"
    );
    assert!(epsilon_upper_with("calibrate_sigma.json", shown) <= 2.0);

    let csv = calibrate_output("calibrate_count.json", "csv");
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    assert_eq!(
        rows[0][..7],
        [
            "parameter",
            "location",
            "value",
            "target_epsilon",
            "delta",
            "epsilon_upper",
            "epsilon_lower"
        ]
    );
    assert_eq!(rows[0].len(), rows[1].len(), "{csv}");
    let field = |name: &str| rows[1][rows[0].iter().position(|h| *h == name).unwrap()];
    assert_eq!(field("parameter"), "count");
    assert_eq!(field("location"), "events[0].count");
    let count: u64 = field("value").parse().expect("a whole count");
    assert_eq!(field("failing_value").parse::<u64>(), Ok(count + 1));
    assert!(field("epsilon_upper").parse::<f64>().unwrap() <= 2.0);
    assert!(field("failing_epsilon_upper").parse::<f64>().unwrap() > 2.0);
    assert_eq!(field("delta").parse::<f64>(), Ok(1e-5));

    let markdown = calibrate_output("calibrate_rate.json", "markdown");
    assert!(
        markdown.starts_with("**calibration of events[0].sampling.poisson"),
        "{markdown}"
    );
    let table_lines: Vec<&str> = markdown.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(table_lines.len(), 3, "header, rule, one row:\n{markdown}");
    assert!(
        table_lines[2].starts_with("| `events[0].sampling.poisson` |"),
        "{markdown}"
    );
}

#[test]
fn calibrate_verbose_prints_every_evaluation_and_quiet_nothing() {
    let spec = fixture("calibrate_sigma.json");
    let mut args = vec!["calibrate", "--spec", spec.as_str()];
    args.extend(CALIBRATE_TARGET);
    args.extend(["--format", "json", "--verbose"]);
    let output = pld().args(&args).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8(output.stderr).unwrap();
    let json: Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    let evaluations: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("pld: evaluation "))
        .collect();
    assert_eq!(
        evaluations.len() as u64,
        json["evaluations"].as_u64().unwrap(),
        "one line per accountant call:\n{stderr}"
    );
    assert!(evaluations.iter().all(|l| l.contains("sigma = ")
        && l.contains("ε upper bound")
        && (l.ends_with(", meets") || l.ends_with(", misses"))));
    assert!(
        evaluations.iter().any(|l| l.ends_with(", misses")),
        "{stderr}"
    );
    assert!(
        evaluations.last().unwrap().contains("(verification)")
            && evaluations.last().unwrap().ends_with(", meets"),
        "{stderr}"
    );
    assert!(stderr.contains("pld: input: specification"), "{stderr}");
    assert!(stderr.contains("took"), "no timing: {stderr}");

    // Not a terminal, or --quiet: nothing on stderr (run_ok checks).
    let mut args = vec!["calibrate", "--spec", spec.as_str(), "--quiet"];
    args.extend(CALIBRATE_TARGET);
    run_ok(&args, None);
}

// --- the README ----------------------------------------------------------------------------------

/// The README's main job is `compare` on a preset, and the table it shows is what that command
/// prints (timings masked; numbers to 1e-6 relative, as the FFT's last digits may differ
/// between machines).
#[test]
fn readme_shows_the_main_job_output() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let setup = readme.split("## Set-up").nth(1).expect("a set-up section");
    let first_command = setup
        .lines()
        .find(|l| l.starts_with("cargo "))
        .expect("a cargo command in the set-up");
    assert_eq!(
        first_command,
        "cargo run --release -- compare --preset mnist-dp-sgd"
    );
    let shown = readme
        .split("$ pld compare --preset mnist-dp-sgd\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the main job's output in the README");
    let actual = run_ok(&["compare", "--preset", "mnist-dp-sgd"], None);
    assert_shows(shown, &actual);
}

/// The README's calibration example: the specification it writes, calibrated, prints what the
/// README shows.
#[test]
fn readme_shows_the_calibrate_output() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let section = readme
        .split("## Calibrate")
        .nth(1)
        .expect("a Calibrate section");
    let spec = section
        .split("cat > dp_sgd_sigma.json <<'JSON'\n")
        .nth(1)
        .and_then(|rest| rest.split("\nJSON\n").next())
        .expect("the specification the README writes");
    let shown = section
        .split("$ pld calibrate --spec dp_sgd_sigma.json --epsilon 2 --delta 1e-5\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the calibration's output in the README");
    let actual = run_ok(
        &[
            "calibrate",
            "--spec",
            "-",
            "--epsilon",
            "2",
            "--delta",
            "1e-5",
        ],
        Some(spec),
    );
    assert_shows(shown, &actual);
}

/// `shown` (a README block) is what `actual` prints: timings masked, numbers to 1e-6 relative
/// (the FFT's last digits may differ between machines).
fn assert_shows(shown: &str, actual: &str) {
    let (shown, actual) = (mask_times(shown.trim_end()), mask_times(actual.trim_end()));
    let (shown, actual): (Vec<&str>, Vec<&str>) =
        (shown.lines().collect(), actual.lines().collect());
    assert_eq!(
        shown.len(),
        actual.len(),
        "README:\n{shown:#?}\nnow:\n{actual:#?}"
    );
    for (s, a) in shown.iter().zip(&actual) {
        let (sw, aw): (Vec<&str>, Vec<&str>) = (
            s.split_whitespace().collect(),
            a.split_whitespace().collect(),
        );
        let same = sw.len() == aw.len()
            && sw.iter().zip(&aw).all(|(x, y)| {
                x == y
                    || matches!((x.parse::<f64>(), y.parse::<f64>()),
                        (Ok(x), Ok(y)) if (x - y).abs() <= 1e-6 * x.abs().max(1.0))
            });
        assert!(same, "README line\n  {s}\ndiffers from the output\n  {a}");
    }
}

// ---------------------------------------------------------------------------------------------
// No silent defaults.

#[test]
fn dp_sgd_flags_without_a_run_length_are_refused() {
    for command in ["epsilon", "compare"] {
        let out = pld()
            .args([
                command,
                "--sigma",
                "1",
                "--sampling-rate",
                "0.01",
                "--delta",
                "1e-5",
            ])
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.contains("--steps") && stderr.contains("--epochs"),
            "{stderr}"
        );
    }
}

#[test]
fn negative_numbers_reach_validation() {
    for (args, expected) in [
        (
            vec![
                "epsilon", "--sigma", "1", "--steps", "10", "--delta", "-1e-5",
            ],
            "invalid delta = -1e-5",
        ),
        (
            vec!["delta", "--sigma", "1", "--steps", "10", "--epsilon", "-2"],
            "invalid epsilon = -2",
        ),
        (
            vec![
                "epsilon", "--sigma", "-1", "--steps", "10", "--delta", "1e-5",
            ],
            "invalid --sigma = -1",
        ),
    ] {
        let out = pld().args(&args).output().expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn answers_echo_their_inputs() {
    let v = run_json(
        &[
            "epsilon",
            "--noise-multiplier",
            "1.1",
            "--batch-size",
            "256",
            "--dataset-size",
            "60000",
            "--epochs",
            "2",
            "--delta",
            "1e-5",
            "--format",
            "json",
        ],
        None,
    );
    let run = &v["inputs"]["dp_sgd"];
    assert_eq!(run["sigma"].as_f64(), Some(1.1));
    assert_eq!(run["sensitivity"].as_f64(), Some(1.0));
    assert_eq!(run["sampling_rate"].as_f64(), Some(256.0 / 60000.0));
    // ⌈2 · 60000 / 256⌉ = ⌈468.75⌉.
    assert_eq!(run["steps"].as_u64(), Some(469));
    assert_eq!(v["inputs"]["total_count"].as_u64(), Some(469));

    let v = run_json(
        &[
            "delta",
            "--preset",
            "mnist-dp-sgd",
            "--epsilon",
            "2",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(v["inputs"]["source"], "preset mnist-dp-sgd");
    assert_eq!(v["inputs"]["total_count"].as_u64(), Some(14063));
    assert!(v["inputs"].get("dp_sgd").is_none());

    let table = run_ok(
        &["epsilon", "--sigma", "2", "--steps", "7", "--delta", "1e-5"],
        None,
    );
    let last = table.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("inputs: DP-SGD, σ = 2") && last.ends_with("; 7 mechanism runs"),
        "{table}"
    );
}

#[test]
fn a_tighter_tolerance_is_not_capped_by_the_absolute_floor() {
    // ε ≈ 6.19: the old fixed absolute floor 1e-4 would stop at a relative width of 1.6e-5.
    let v = run_json(
        &[
            "epsilon",
            "--sigma",
            "1",
            "--sampling-rate",
            "0.01",
            "--steps",
            "10000",
            "--delta",
            "1e-5",
            "--tolerance",
            "1e-5",
            "--format",
            "json",
        ],
        None,
    );
    let upper = v["epsilon"]["upper"].as_f64().expect("upper");
    let lower = v["epsilon"]["lower"].as_f64().expect("lower");
    assert!(upper - lower <= 1e-5 * upper, "[{lower}, {upper}]");
    let absolute = v["settings"]["tolerance"]["absolute_epsilon"]
        .as_f64()
        .expect("absolute");
    assert!((absolute - 1e-6).abs() <= 1e-18, "{absolute}");
    assert_eq!(v["settings"]["tolerance_met"], true);
}

/// `--memory-budget`: a tolerance the budget cannot reach is answered with the bracket that
/// fits and says so; a fixed grid over it exits 1 naming it; a budget below 16 MiB exits 2.
#[test]
fn memory_budget_limits_the_grid_and_says_so() {
    let dp_sgd = [
        "epsilon",
        "--quiet",
        "--sigma",
        "1",
        "--sampling-rate",
        "0.01",
        "--steps",
        "10000",
        "--delta",
        "1e-5",
    ];
    let json = run_json(
        &[
            &dp_sgd[..],
            &[
                "--tolerance",
                "1e-6",
                "--memory-budget",
                "32",
                "--format",
                "json",
            ],
        ]
        .concat(),
        None,
    );
    assert_eq!(json["settings"]["tolerance_met"], false, "{json}");
    assert_eq!(json["settings"]["stopped_by"], "memory budget", "{json}");
    let (upper, lower) = epsilon_bracket(&json, 1e-5);
    // dp_accounting 0.6.0 at h = 1e-4 gives 6.187745 (fixtures/dp_accounting): the truth is
    // below it and above our lower bounds.
    assert!(lower < 6.18775 && upper > 6.1877, "[{lower}, {upper}]");
    let output = pld()
        .args(
            [
                &dp_sgd[..],
                &["--grid-step", "1e-5", "--memory-budget", "16"],
            ]
            .concat(),
        )
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("memory budget"), "{stderr}");
    let output = pld()
        .args([&dp_sgd[..], &["--memory-budget", "1"]].concat())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--memory-budget = 1"), "{stderr}");
}

/// An ε past the grids' 600-nat loss range (DP-SGD σ 0.6, q 0.05, 10⁵ steps: RDP says 1265)
/// cannot meet its tolerance on any grid, and the answer says why: `stopped_by` "loss
/// range", the lower end near 600 nats, the upper end RDP's.
#[test]
fn an_epsilon_past_the_loss_range_says_so() {
    let args = [
        "epsilon",
        "--noise-multiplier",
        "0.6",
        "--sampling-rate",
        "0.05",
        "--steps",
        "100000",
        "--delta",
        "1e-5",
    ];
    let json = run_json(&[&args[..], &["--format", "json"]].concat(), None);
    assert_eq!(json["settings"]["tolerance_met"], false, "{json}");
    assert_eq!(json["settings"]["stopped_by"], "loss range", "{json}");
    assert_eq!(json["settings"]["upper_method"], "rdp_conversion", "{json}");
    let (upper, lower) = epsilon_bracket(&json, 1e-5);
    assert!(
        (599.0..=600.0).contains(&lower) && upper > 1000.0,
        "[{lower}, {upper}]"
    );
    let text = run_ok(&args, None);
    assert!(text.contains("NOT met: loss range"), "{text}");
}

/// An upper end past the loss range whose lower end is far below it is not put down to the
/// answer lying there: one epoch of random allocation over two steps at σ 0.699 (a known
/// limit: its lattice charges `Q(S′ = 0)` to ADD's +∞ loss, 1.6e-4 at a grid of 0.02) at
/// δ 1e-3 says "mass at infinite loss", its lower end near 4.23 and its upper end the
/// Gaussian without amplification. It said "ε lies past the grid's 600 nats".
#[test]
fn an_upper_end_held_by_mass_at_infinite_loss_says_so() {
    let spec = r#"{"events": [{"mechanism": "gaussian", "sigma": 0.699,
        "sampling": {"random_allocation": {"steps_per_epoch": 2}}}]}"#;
    let args = ["epsilon", "--spec", "-", "--delta", "1e-3"];
    let json = run_json(&[&args[..], &["--format", "json"]].concat(), Some(spec));
    assert_eq!(json["settings"]["tolerance_met"], false, "{json}");
    assert_eq!(
        json["settings"]["stopped_by"], "mass at infinite loss",
        "{json}"
    );
    assert_eq!(
        json["settings"]["upper_method"], "analytic_gaussian",
        "{json}"
    );
    let (upper, lower) = epsilon_bracket(&json, 1e-3);
    let unamplified =
        pld_accountant::mechanism::analytic_gaussian::epsilon_upper_for_delta(1.0 / 0.699, 1e-3);
    assert!(
        (4.2..4.3).contains(&lower) && (upper - unamplified).abs() <= 1e-12 * unamplified,
        "[{lower}, {upper}] against the unamplified Gaussian's {unamplified}"
    );
    let text = run_ok(&args, Some(spec));
    assert!(text.contains("NOT met: mass at infinite loss"), "{text}");
}

/// Counts may be written in exponent form (`--steps 1e4`), as people write 1e9; a count
/// that is not a whole number is refused naming the flag.
#[test]
fn counts_accept_exponent_form() {
    let run = |steps: &str| {
        run_json(
            &[
                "epsilon",
                "--quiet",
                "--sigma",
                "1",
                "--sampling-rate",
                "0.01",
                "--steps",
                steps,
                "--delta",
                "1e-5",
                "--format",
                "json",
            ],
            None,
        )
    };
    assert_eq!(run("1e4")["epsilon"], run("10000")["epsilon"]);
    for bad in ["1.5", "-5", "1e400"] {
        let output = pld()
            .args(["epsilon", "--sigma", "1", "--steps", bad, "--delta", "1e-5"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{bad}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("--steps") && stderr.contains(bad),
            "{stderr}"
        );
    }
}

// --- --sampling ----------------------------------------------------------------------------

/// Random allocation with several participations says why its bracket stays wide; one
/// participation does not.
#[test]
fn several_participations_carry_their_caveat() {
    let spec = |k: u64| {
        format!(
            r#"{{"events": [{{"mechanism": "gaussian", "sigma": 2,
            "sampling": {{"random_allocation": {{"steps_per_epoch": 100, "participations": {k}}}}},
            "count": 1}}]}}"#
        )
    };
    let args = [
        "epsilon", "--spec", "-", "--delta", "1e-5", "--format", "json",
    ];
    let several = run_json(&args, Some(&spec(2)));
    let caveat = several["inputs"]["caveats"][0].as_str().unwrap_or("");
    assert!(caveat.contains("no exact construction"), "{several}");
    let epsilon = &several["epsilon"];
    let (lower, upper) = (
        epsilon["lower"].as_f64().unwrap(),
        epsilon["upper"].as_f64().unwrap(),
    );
    // σ 2, t 100, k 2: the bracket is 0.12% wide (the split upper bound and the Poisson-loss
    // statistic's lower bound).
    assert!(lower <= upper && upper - lower <= 0.01 * upper, "{several}");
    let single = run_json(&args, Some(&spec(1)));
    assert!(single["inputs"].get("caveats").is_none(), "{single}");
}

/// Balls-in-bins flags are the random-allocation spec they describe (t = ⌈N/B⌉, whole
/// epochs, a partial last epoch counted whole), echoed as epochs; fixed batches are the
/// replace-one fixed-batch spec; `compare` adds what Poisson accounting would claim.
#[test]
fn sampling_flags_build_the_scheme_they_name() {
    let allocation = r#"{"events": [{"mechanism": "gaussian", "sigma": 1,
        "sampling": {"random_allocation": {"steps_per_epoch": 100}}, "count": 3}]}"#;
    let from_spec = run_json(
        &[
            "epsilon", "--spec", "-", "--delta", "1e-5", "--format", "json",
        ],
        Some(allocation),
    );
    for flags in [
        &[
            "--batch-size",
            "600",
            "--dataset-size",
            "60000",
            "--epochs",
            "3",
        ][..],
        &[
            "--batch-size",
            "600",
            "--dataset-size",
            "59950",
            "--epochs",
            "2.5",
        ][..],
        &["--sampling-rate", "0.01", "--steps", "201"][..],
    ] {
        let mut args = vec![
            "epsilon",
            "--noise-multiplier",
            "1",
            "--sampling",
            "balls-in-bins",
            "--delta",
            "1e-5",
            "--format",
            "json",
        ];
        args.extend(flags);
        let json = run_json(&args, None);
        assert_eq!(json["epsilon"], from_spec["epsilon"], "{flags:?}");
        let inputs = &json["inputs"]["dp_sgd"];
        assert_eq!(inputs["sampling"], "balls-in-bins", "{json}");
        assert_eq!(inputs["steps_per_epoch"], 100, "{json}");
        assert_eq!(inputs["epochs"], 3, "{json}");
        assert_eq!(json["inputs"]["total_runs"], 300, "{json}");
    }
    let table = run_ok(
        &[
            "epsilon",
            "--noise-multiplier",
            "1",
            "--sampling",
            "balls-in-bins",
            "--sampling-rate",
            "0.01",
            "--epochs",
            "3",
            "--delta",
            "1e-5",
        ],
        None,
    );
    assert!(
        table.contains("300 mechanism runs in 3 epochs of random allocation"),
        "{table}"
    );

    // Shuffle: the flags give the spec's answer, say which sampling was accounted and why
    // the bracket is wide; compare shows the Poisson claim at rate 1/t.
    let shuffled = r#"{"events": [{"mechanism": "gaussian", "sigma": 1,
        "sampling": {"shuffle": {"steps_per_epoch": 100}}, "count": 3}]}"#;
    let from_spec = run_json(
        &[
            "epsilon", "--spec", "-", "--delta", "1e-5", "--format", "json",
        ],
        Some(shuffled),
    );
    let shuffle_flags = [
        "--noise-multiplier",
        "1",
        "--sampling",
        "shuffle",
        "--batch-size",
        "600",
        "--dataset-size",
        "60000",
        "--epochs",
        "3",
        "--delta",
        "1e-5",
        "--format",
        "json",
    ];
    let mut args = vec!["epsilon"];
    args.extend(shuffle_flags);
    let json = run_json(&args, None);
    assert_eq!(json["epsilon"], from_spec["epsilon"], "{json}");
    assert_eq!(json["inputs"]["dp_sgd"]["sampling"], "shuffle", "{json}");
    assert_eq!(json["inputs"]["sampling"][0], "shuffle", "{json}");
    assert_eq!(json["inputs"]["total_runs"], 300, "{json}");
    let caveat = json["inputs"]["caveats"][0].as_str().unwrap();
    assert!(caveat.contains("no bound with amplification"), "{json}");
    let mut args = vec!["compare"];
    args.extend(shuffle_flags);
    let compare = run_json(&args, None);
    let rows = compare["rows"].as_array().unwrap();
    let value = |method: &str| {
        rows.iter()
            .find(|r| r["method"] == method)
            .unwrap_or_else(|| panic!("{method}: {compare}"))["epsilon"]
            .as_f64()
            .unwrap()
    };
    let poisson = run_json(
        &[
            "epsilon",
            "--noise-multiplier",
            "1",
            "--sampling-rate",
            "0.01",
            "--steps",
            "300",
            "--delta",
            "1e-5",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(
        value("poisson_claim"),
        poisson["epsilon"]["upper"].as_f64().unwrap()
    );
    assert!(value("poisson_claim") < value("pld_lower"), "{compare}");

    let fixed = r#"{"neighbouring": "replace", "events": [{"mechanism": "gaussian", "sigma": 1,
        "sampling": {"fixed_batch": {"batch_size": 600, "dataset_size": 60000}}, "count": 200}]}"#;
    let from_spec = run_json(
        &[
            "epsilon", "--spec", "-", "--delta", "1e-5", "--format", "json",
        ],
        Some(fixed),
    );
    let json = run_json(
        &[
            "epsilon",
            "--noise-multiplier",
            "1",
            "--sampling",
            "fixed-batch",
            "--batch-size",
            "600",
            "--dataset-size",
            "60000",
            "--epochs",
            "2",
            "--delta",
            "1e-5",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(json["epsilon"], from_spec["epsilon"]);

    // compare: the Poisson claim of fixed batches is the Poisson spec's own PLD upper bound.
    let poisson = run_json(
        &[
            "epsilon",
            "--noise-multiplier",
            "1",
            "--sampling-rate",
            "0.01",
            "--steps",
            "200",
            "--delta",
            "1e-5",
            "--format",
            "json",
        ],
        None,
    );
    let compare = run_json(
        &[
            "compare",
            "--noise-multiplier",
            "1",
            "--sampling",
            "fixed-batch",
            "--batch-size",
            "600",
            "--dataset-size",
            "60000",
            "--epochs",
            "2",
            "--delta",
            "1e-5",
            "--format",
            "json",
        ],
        None,
    );
    let rows = compare["rows"].as_array().unwrap();
    let claim = rows
        .iter()
        .find(|r| r["method"] == "poisson_claim")
        .expect("a poisson_claim row");
    assert_eq!(claim["kind"], "estimate");
    assert_eq!(claim["epsilon"], poisson["epsilon"]["upper"]);
    let upper = rows.iter().find(|r| r["method"] == "pld_upper").unwrap();
    assert_eq!(upper["epsilon"], json["epsilon"]["upper"]);
    // Poisson compositions have no such row.
    let plain = run_json(
        &[
            "compare",
            "--noise-multiplier",
            "1",
            "--sampling-rate",
            "0.01",
            "--steps",
            "200",
            "--delta",
            "1e-5",
            "--format",
            "json",
        ],
        None,
    );
    assert!(plain["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["method"] != "poisson_claim"));
}

// --- sweep -----------------------------------------------------------------------------------

/// The fixed flags and axes of the small sweep the tests run.
const SWEEP: [&str; 10] = [
    "sweep",
    "--x",
    "noise-multiplier=0.8,1.1,1.5",
    "--y",
    "epochs=1..3:3",
    "--batch-size",
    "256",
    "--dataset-size",
    "60000",
    "--delta",
];

#[test]
fn golden_sweep_table() {
    let args: Vec<&str> = SWEEP.iter().copied().chain(["1e-5"]).collect();
    assert_golden("sweep_dp_sgd.txt", &mask_times(&run_ok(&args, None)));
    let markdown: Vec<&str> = args
        .iter()
        .copied()
        .chain(["--format", "markdown"])
        .collect();
    assert_golden("sweep_dp_sgd.md", &mask_times(&run_ok(&markdown, None)));
}

/// Every cell is what `pld epsilon` answers for the same flags, bit for bit.
#[test]
fn sweep_cells_are_confirmed_by_pld_epsilon_and_the_heatmap_draws_every_cell() {
    let svg = plot_path("sweep.svg");
    let png = plot_path("sweep.png");
    let mut json = Value::Null;
    for path in [&svg, &png] {
        let args: Vec<&str> = SWEEP
            .iter()
            .copied()
            .chain(["1e-5", "--format", "json", "--plot", path.to_str().unwrap()])
            .collect();
        json = run_json(&args, None);
    }
    assert_eq!(json["x"]["parameter"], "noise-multiplier");
    assert_eq!(json["y"]["parameter"], "epochs");
    let cells = json["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 9);
    // Row-major: every x for the first y first.
    let coordinates: Vec<(f64, f64)> = cells
        .iter()
        .map(|c| (c["x"].as_f64().unwrap(), c["y"].as_f64().unwrap()))
        .collect();
    assert_eq!(coordinates[1], (1.1, 1.0));
    assert_eq!(coordinates[3], (0.8, 2.0));
    for c in [&cells[0], &cells[4], &cells[8]] {
        let (x, y) = (c["x"].to_string(), c["y"].to_string());
        let answer = run_json(
            &[
                "epsilon",
                "--noise-multiplier",
                &x,
                "--epochs",
                &y,
                "--batch-size",
                "256",
                "--dataset-size",
                "60000",
                "--delta",
                "1e-5",
                "--format",
                "json",
            ],
            None,
        );
        assert_eq!(answer["epsilon"], c["epsilon"], "cell {x}, {y}");
        assert!(c["tolerance_met"].as_bool().unwrap());
    }
    // ε falls with the noise and grows with the epochs.
    let upper = |k: usize| cells[k]["epsilon"]["upper"].as_f64().unwrap();
    assert!(upper(0) > upper(1) && upper(1) > upper(2) && upper(2) < upper(5));
    let texts = svg_texts(&svg);
    assert!(texts.iter().any(|t| t == "noise-multiplier"), "{texts:?}");
    let document_text = std::fs::read_to_string(&svg).unwrap();
    let document = roxmltree::Document::parse(&document_text).unwrap();
    let cell_group = document
        .descendants()
        .find(|n| n.attribute("id") == Some("cells"))
        .expect("cells group");
    assert_eq!(
        cell_group
            .children()
            .filter(|n| n.has_tag_name("rect"))
            .count(),
        9
    );
    let (width, height) = svg_size(&svg);
    let (w, h, _) = png_facts(&png, [0, 0, 0]);
    assert_eq!((f64::from(w), f64::from(h)), (2.0 * width, 2.0 * height));
}

#[test]
fn sweep_refusals_name_the_flag_and_the_cell() {
    let cases: [(&[&str], &[&str]); 6] = [
        (
            &[
                "--noise-multiplier",
                "1",
                "--batch-size",
                "256",
                "--dataset-size",
                "60000",
            ],
            &["--noise-multiplier", "--x"],
        ),
        (
            &[
                "--x",
                "epochs=1,2",
                "--batch-size",
                "256",
                "--dataset-size",
                "60000",
            ],
            &["--y", "epochs"],
        ),
        (&["--preset", "mnist-dp-sgd"], &["--preset"]),
        (
            &["--batch-size", "6000", "--dataset-size", "600"],
            &["--batch-size", "noise-multiplier = 0.8", "epochs = 1"],
        ),
        (
            &[
                "--batch-size",
                "256",
                "--dataset-size",
                "60000",
                "--x",
                "noise=1",
            ],
            &["--x", "noise=1", "NAME"],
        ),
        (
            &[
                "--batch-size",
                "256",
                "--dataset-size",
                "60000",
                "--delta",
                "2",
            ],
            &["--delta", "2"],
        ),
    ];
    for (extra, expected) in cases {
        // Later flags override earlier ones of the same name in this list, so each case
        // starts from the small sweep and replaces what it tests.
        let mut args: Vec<&str> = vec![
            "sweep",
            "--x",
            "noise-multiplier=0.8,1.1",
            "--y",
            "epochs=1,2",
            "--delta",
            "1e-5",
        ];
        for pair in extra.chunks(2) {
            if let Some(at) = args.iter().position(|a| *a == pair[0]) {
                args[at + 1] = pair[1];
            } else {
                args.extend(pair);
            }
        }
        let output = pld().args(&args).output().expect("runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        for text in expected {
            assert!(stderr.contains(text), "{args:?}: {stderr}");
        }
    }
}

/// The issue's budget: a 20 × 20 DP-SGD sweep in at most 5 s (a timing, so not in CI).
#[test]
#[ignore = "timing; run with --ignored on a quiet machine"]
fn sweep_of_20_by_20_takes_at_most_5_s() {
    let started = std::time::Instant::now();
    run_ok(
        &[
            "sweep",
            "--x",
            "noise-multiplier=0.5..2:20",
            "--y",
            "epochs=5..100:20",
            "--batch-size",
            "256",
            "--dataset-size",
            "60000",
            "--delta",
            "1e-5",
        ],
        None,
    );
    let seconds = started.elapsed().as_secs_f64();
    eprintln!("20 × 20 sweep: {seconds:.2} s");
    assert!(seconds <= 5.0, "{seconds} s");
}

// --- mechanisms known by their guarantee -------------------------------------------------------

#[test]
fn mixed_release_preset_through_the_cli() {
    let json = run_json(
        &["compare", "--preset", "mixed-release", "--format", "json"],
        None,
    );
    assert_eq!(json["delta"].as_f64(), Some(1e-6));
    let rows = json["rows"].as_array().expect("rows");
    let epsilon = |method: &str| {
        rows.iter()
            .find(|r| r["method"] == method)
            .and_then(|r| r["epsilon"].as_f64())
            .unwrap_or_else(|| panic!("no {method} row: {json}"))
    };
    assert!(epsilon("pld_lower") <= epsilon("pld_upper"));
    // The accountant takes the RDP conversion too, its divergences widened by a rounding
    // bound: equal to the row up to that widening.
    assert!(epsilon("pld_upper") <= epsilon("rdp") * (1.0 + 1e-12));
    let spec = run_ok(&["presets", "mixed-release"], None);
    for name in ["laplace_log_normal", "exponential", "gaussian"] {
        assert!(spec.contains(name), "{spec}");
    }
}
