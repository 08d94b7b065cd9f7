//! The nastiest command lines and specifications found by `scripts/fuzz_cli.sh`, run against the
//! `pld` binary: each must exit with 0, 1 or 2 (never a panic, 101, or an abort, 134), and
//! must not print NaN. The whole file takes a few seconds; the generated fuzzing is the
//! script (`scripts/fuzz_cli.sh [RUNS]`).

use assert_cmd::Command;
use std::io::Write;

/// Run `pld args` with `spec` written to a file that replaces the argument `{spec}` (if
/// given); check the exit code is 0, 1 or 2 and nothing panicked or printed NaN; return it.
fn exit_code(args: &[&str], spec: Option<&str>) -> i32 {
    let path = spec.map(spec_file);
    let args: Vec<&str> = args
        .iter()
        .map(|a| match (&path, *a) {
            (Some(p), "{spec}") => p.as_str(),
            _ => a,
        })
        .collect();
    let output = Command::cargo_bin("pld")
        .expect("the pld binary is built for integration tests")
        .args(&args)
        .arg("--quiet")
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .expect("pld runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let code = output.status.code().unwrap_or(-1);
    let shown = spec.map(|s| s.chars().take(300).collect::<String>());
    assert!(
        matches!(code, 0..=2) && !stderr.contains("panicked"),
        "pld {args:?} (spec {shown:?}) exited with {code}\nstderr: {stderr}"
    );
    assert!(
        !stdout.to_lowercase().contains("nan"),
        "pld {args:?} (spec {shown:?}) printed NaN:\n{stdout}"
    );
    code
}

/// `text` in a fresh file under the target directory; its path.
fn spec_file(text: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "cli_fuzz_{}_{}.json",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .expect("temporary spec file");
    path.to_str().expect("UTF-8 path").to_string()
}

const DP_SGD: [&str; 6] = ["--sigma", "1", "--sampling-rate", "0.01", "--steps", "1"];

#[test]
fn grid_steps_out_of_range_are_refused_with_exit_code_2() {
    for step in [
        "1e-19", "5e-324", "1e-310", "1e-300", "1e-13", "0", "-0", "-1", "1.5", "NaN", "inf",
    ] {
        let mut args = vec!["epsilon", "--delta", "1e-5", "--grid-step", step];
        args.extend(DP_SGD);
        assert_eq!(exit_code(&args, None), 2, "--grid-step {step}");
    }
    // Randomized response puts its atoms on the grid: the same refusal.
    let rr = r#"{"events": [{"mechanism": "randomized_response", "epsilon": 1}]}"#;
    for step in ["1e-20", "5e-324"] {
        let args = [
            "epsilon",
            "--spec",
            "{spec}",
            "--delta",
            "1e-5",
            "--grid-step",
            step,
        ];
        assert_eq!(
            exit_code(&args, Some(rr)),
            2,
            "randomized response, --grid-step {step}"
        );
    }
    // The smallest accepted step: too fine for DP-SGD, a limit of the computation (exit 1).
    let mut args = vec!["epsilon", "--delta", "1e-5", "--grid-step", "1e-12"];
    args.extend(DP_SGD);
    assert_eq!(exit_code(&args, None), 1);
}

#[test]
fn extreme_flags_never_panic() {
    let cases: &[&[&str]] = &[
        &[
            "epsilon",
            "--sigma",
            "1e-300",
            "--sampling-rate",
            "0.01",
            "--steps",
            "10",
            "--delta",
            "1e-5",
        ],
        &[
            "epsilon",
            "--sigma",
            "1e308",
            "--sampling-rate",
            "0.01",
            "--steps",
            "10",
            "--delta",
            "1e-5",
        ],
        &[
            "epsilon",
            "--sigma",
            "1",
            "--sensitivity",
            "1e308",
            "--delta",
            "1e-5",
        ],
        &[
            "epsilon",
            "--sigma",
            "1",
            "--sampling-rate",
            "5e-324",
            "--steps",
            "10",
            "--delta",
            "1e-5",
        ],
        &[
            "epsilon",
            "--sigma",
            "1",
            "--sampling-rate",
            "0.01",
            "--steps",
            "10",
            "--delta",
            "5e-324",
        ],
        &[
            "epsilon",
            "--sigma",
            "1",
            "--sampling-rate",
            "0.01",
            "--steps",
            "18446744073709551615",
            "--delta",
            "1e-5",
        ],
        &[
            "epsilon",
            "--sigma",
            "1",
            "--sampling-rate",
            "0.01",
            "--epochs",
            "1e308",
            "--delta",
            "1e-5",
        ],
        &[
            "epsilon",
            "--noise-multiplier",
            "1",
            "--batch-size",
            "1",
            "--dataset-size",
            "18446744073709551615",
            "--steps",
            "10",
            "--delta",
            "1e-5",
        ],
        &["epsilon", "--sigma", "NaN", "--delta", "1e-5"],
        &[
            "epsilon",
            "--sigma",
            "1",
            "--delta",
            "1e-5",
            "--tolerance",
            "1e-300",
        ],
        &[
            "epsilon",
            "--sigma",
            "1",
            "--sampling-rate",
            "0.01",
            "--steps",
            "10",
            "--delta",
            "1e-5",
            "--tolerance",
            "0",
        ],
        &[
            "delta",
            "--sigma",
            "1",
            "--sampling-rate",
            "0.01",
            "--steps",
            "10",
            "--epsilon",
            "1e308",
        ],
        &["delta", "--sigma", "1", "--epsilon", "inf"],
        &[
            "curve",
            "--sigma",
            "1",
            "--sampling-rate",
            "0.01",
            "--steps",
            "10",
            "--deltas",
            "5e-324,1e-300,0.999999999999",
        ],
        &["curve", "--sigma", "1", "--epsilons", "0,1e-300,1e308"],
        &[
            "compare",
            "--sigma",
            "1e-300",
            "--sampling-rate",
            "0.5",
            "--steps",
            "3",
            "--delta",
            "1e-5",
        ],
    ];
    for args in cases {
        exit_code(args, None);
    }
}

#[test]
fn extreme_specifications_never_panic() {
    let specs = [
        "",
        "{",
        "null",
        "[]",
        r#"{"events": []}"#,
        // Δ/σ underflows to a subnormal μ (was NaN inside an Ok δ bracket).
        r#"{"neighbouring": "replace", "events": [{"mechanism": "gaussian",
            "sigma": 1.7976931348623157e308, "sensitivity": 0.57}]}"#,
        r#"{"events": [{"mechanism": "gaussian", "sigma": 1e308, "sensitivity": 1e-308,
            "sampling": {"poisson": 0.5}}, {"mechanism": "laplace", "scale": 1}]}"#,
        r#"{"events": [{"mechanism": "randomized_response", "epsilon": 1e-300}]}"#,
        r#"{"events": [{"mechanism": "randomized_response", "epsilon": 1e308,
            "categories": 18446744073709551615}]}"#,
        r#"{"events": [{"mechanism": "discrete_laplace", "scale": 1e-300,
            "sensitivity": 18446744073709551615}]}"#,
        // 2·Δ overflows u64 under replace-one (wrapped around before).
        r#"{"neighbouring": "replace", "events": [{"mechanism": "discrete_gaussian", "sigma": 1,
            "sensitivity": 18446744073709551615}]}"#,
        r#"{"events": [{"mechanism": "eps_delta", "epsilon": 1e308, "delta": 5e-324,
            "count": 1000000000000}]}"#,
        r#"{"events": [{"mechanism": "laplace", "scale": 5e-324, "sampling": {"poisson": 1e-300},
            "count": 1000000000000}]}"#,
        r#"{"events": [{"mechanism": "mixture_of_gaussians", "sigma": 1e-300,
            "sensitivities": [0, 1e308], "probabilities": [0.5, 0.5]}]}"#,
        r#"{"events": [{"mechanism": "pmf_pair", "p": [1, 0], "q": [5e-324, 1]}]}"#,
        r#"{"events": [{"mechanism": "gaussian", "sigma": 1e999}]}"#,
    ];
    for spec in specs {
        for args in [
            &["epsilon", "--spec", "{spec}", "--delta", "1e-5"][..],
            &["delta", "--spec", "{spec}", "--epsilon", "1"][..],
        ] {
            exit_code(args, Some(spec));
        }
    }
    // Deep nesting and very long lists.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    exit_code(
        &["epsilon", "--spec", "{spec}", "--delta", "1e-5"],
        Some(&deep),
    );
    let n = 100_000;
    let list = vec![format!("{}", 1.0 / n as f64); n].join(",");
    let long =
        format!(r#"{{"events": [{{"mechanism": "pmf_pair", "p": [{list}], "q": [{list}]}}]}}"#);
    exit_code(
        &["epsilon", "--spec", "{spec}", "--delta", "1e-5"],
        Some(&long),
    );
    // Calibration with extreme targets.
    let calibration = r#"{"events": [{"mechanism": "gaussian", "sigma": null,
        "sampling": {"poisson": 0.01}, "count": 10}]}"#;
    for (epsilon, delta) in [("1e-300", "1e-5"), ("1e308", "1e-5"), ("1", "5e-324")] {
        let args = [
            "calibrate",
            "--spec",
            "{spec}",
            "--epsilon",
            epsilon,
            "--delta",
            delta,
        ];
        exit_code(&args, Some(calibration));
    }
}
