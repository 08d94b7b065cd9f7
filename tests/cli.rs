//! End-to-end tests of the `pld` binary against the contract of INTERFACE.md: success paths
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

/// Check the INTERFACE.md shape of an `epsilon` (`asked = "delta"`, `answered = "epsilon"`)
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
            &["epsilon", "--sigma", "0", "--delta", "1e-5"],
            &["sigma", "0"],
        ),
        flags(
            &["epsilon", "--sigma", "-1", "--delta", "1e-5"],
            &["sigma", "-1"],
        ),
        flags(
            &["epsilon", "--sigma", "NaN", "--delta", "1e-5"],
            &["sigma", "NaN"],
        ),
        flags(
            &["epsilon", "--sigma", "inf", "--delta", "1e-5"],
            &["sigma", "inf"],
        ),
        flags(
            &[
                "epsilon",
                "--sigma",
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
        usage(&["epsilon", "--sigma", "abc", "--delta", "1e-5"]),
        flags(
            &["epsilon", "--sigma", "1", "--delta", "0"],
            &["delta", "0"],
        ),
        flags(
            &["epsilon", "--sigma", "1", "--delta", "1"],
            &["delta", "1"],
        ),
        flags(
            &["epsilon", "--sigma", "1", "--delta", "-1"],
            &["delta", "-1"],
        ),
        flags(
            &["epsilon", "--sigma", "1", "--delta", "NaN"],
            &["delta", "NaN"],
        ),
        flags(
            &["epsilon", "--sigma", "1", "--delta", "inf"],
            &["delta", "inf"],
        ),
        usage(&["epsilon", "--sigma", "1"]),
        flags(
            &["delta", "--sigma", "1", "--epsilon", "-1"],
            &["epsilon", "-1"],
        ),
        flags(
            &["delta", "--sigma", "1", "--epsilon", "NaN"],
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
            "epsilon", "--sigma", "1", "--delta", "1e-5", "--format", "xml",
        ]),
        flags(
            &[
                "epsilon",
                "--sigma",
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
    ]
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
    if !row.usage {
        let lines: Vec<&str> = stderr.lines().collect();
        if lines.len() != 1 {
            problems.push(format!("{} stderr lines, expected 1", lines.len()));
        }
        if !stderr.starts_with("error: ") || stderr.trim() == "error:" {
            problems.push("stderr does not start with a non-empty `error: ` line".into());
        }
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
    assert!(rows.len() >= 25);
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
    for command in ["epsilon", "delta"] {
        pld()
            .args([command, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Example"));
    }
    pld()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("epsilon").and(predicate::str::contains("delta")));
}
