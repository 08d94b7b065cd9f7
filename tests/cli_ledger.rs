//! `pld ledger`: a ledger file created, recorded into, refused over its budget (exit 1, the
//! file unchanged), queried and shown, in every output format that applies.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

const STEP: &str = r#"{"mechanism":"gaussian","sigma":1,"sampling":{"poisson":0.01}}"#;

fn pld() -> Command {
    Command::cargo_bin("pld").expect("the pld binary is built for integration tests")
}

/// A fresh path in a directory of its own (removed at the end of the test).
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("pld-cli-ledger-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
    fn file(&self) -> String {
        self.0.join("ledger.json").to_str().unwrap().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn json_of(args: &[&str]) -> Value {
    let output = pld().args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(path)).unwrap()
}

#[test]
fn init_record_query_show() {
    let scratch = Scratch::new("flow");
    let file = scratch.file();
    pld()
        .args([
            "ledger",
            "init",
            &file,
            "--budget-epsilon",
            "2",
            "--budget-delta",
            "1e-5",
            "--grid-step",
            "1e-3",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("0 releases"));
    let saved: Value = serde_json::from_str(&read(&file)).unwrap();
    assert_eq!(saved["version"], 1);
    assert_eq!(saved["budget"]["epsilon"], 2.0);
    // init never overwrites.
    pld()
        .args(["ledger", "init", &file])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("exists"));

    let recorded = json_of(&[
        "ledger", "record", &file, "--event", STEP, "--count", "600", "--format", "json",
    ]);
    assert_eq!(recorded["total_count"], 600);
    assert_eq!(recorded["recorded"]["count"], 600);
    let spent = recorded["budget"]["spent_epsilon"]["upper"]
        .as_f64()
        .unwrap();
    assert!(spent > 1.0 && spent < 2.0, "{spent}");
    let recorded = json_of(&[
        "ledger", "record", &file, "--event", STEP, "--count", "400", "--format", "json",
    ]);
    assert_eq!(recorded["releases"], 2);
    assert_eq!(
        recorded["events"].as_array().unwrap().len(),
        1,
        "repeats merge"
    );
    assert_eq!(recorded["events"][0]["count"], 1000);

    // ε of the ledger = ε of the same composition from flags (σ 1, q 0.01, 1000 steps) at
    // the same fixed grid step.
    let from_ledger = json_of(&[
        "ledger", "epsilon", &file, "--delta", "1e-5", "--format", "json",
    ]);
    let from_flags = json_of(&[
        "epsilon",
        "--sigma",
        "1",
        "--sampling-rate",
        "0.01",
        "--steps",
        "1000",
        "--delta",
        "1e-5",
        "--grid-step",
        "1e-3",
        "--format",
        "json",
    ]);
    assert_eq!(from_ledger["epsilon"], from_flags["epsilon"]);
    // The budget's δ is the default.
    let default_delta = json_of(&["ledger", "epsilon", &file, "--format", "json"]);
    assert_eq!(default_delta["epsilon"], from_flags["epsilon"]);
    let delta = json_of(&[
        "ledger",
        "delta",
        &file,
        "--epsilon",
        "2",
        "--format",
        "json",
    ]);
    assert!(delta["delta"]["upper"].as_f64().unwrap() < 1e-5);

    let shown = json_of(&["ledger", "show", &file, "--format", "json"]);
    assert_eq!(shown["total_count"], 1000);
    assert_eq!(shown["budget"]["delta"], 1e-5);
    pld()
        .args(["ledger", "show", &file])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("1000").and(predicate::str::contains("budget: epsilon 2")),
        );
    pld()
        .args(["ledger", "show", &file, "--format", "csv"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("count,event"));
}

#[test]
fn over_budget_is_refused_with_exit_1_and_the_file_unchanged() {
    let scratch = Scratch::new("refused");
    let file = scratch.file();
    pld()
        .args([
            "ledger",
            "init",
            &file,
            "--budget-epsilon",
            "1",
            "--budget-delta",
            "1e-5",
        ])
        .assert()
        .success();
    pld()
        .args(["ledger", "record", &file, "--event", STEP, "--count", "100"])
        .assert()
        .success();
    let before = read(&file);
    pld()
        .args([
            "ledger", "record", &file, "--event", STEP, "--count", "10000",
        ])
        .assert()
        .code(1)
        .stdout(predicate::str::is_empty())
        .stderr(
            predicate::str::contains("refused by the pld filter")
                .and(predicate::str::contains("over the budget ε = 1"))
                .and(predicate::str::contains("nothing was recorded")),
        );
    assert_eq!(read(&file), before);
    // Without a budget the same release is recorded.
    let free = Scratch::new("free");
    let free_file = free.file();
    pld()
        .args(["ledger", "init", &free_file])
        .assert()
        .success();
    pld()
        .args([
            "ledger", "record", &free_file, "--event", STEP, "--count", "10000",
        ])
        .assert()
        .success();
    pld()
        .args(["ledger", "epsilon", &free_file])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--delta"));
}

#[test]
fn bad_input_exits_2_naming_the_problem() {
    let scratch = Scratch::new("bad");
    let file = scratch.file();
    pld()
        .args(["ledger", "init", &file, "--grid-step", "1e-2"])
        .assert()
        .success();
    pld()
        .args([
            "ledger",
            "record",
            &file,
            "--event",
            r#"{"mechanism":"gaussian","sigma":-1}"#,
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("event.sigma"));
    pld()
        .args(["ledger", "record", &file, "--event", "{not json"])
        .assert()
        .code(2);
    pld()
        .args(["ledger", "record", &file, "--event", STEP, "--count", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("count"));
    pld()
        .args([
            "ledger",
            "init",
            &format!("{file}.2"),
            "--budget-epsilon",
            "1",
        ])
        .assert()
        .code(2);
    pld()
        .args(["ledger", "show", &format!("{file}.missing")])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot read"));
    // A file of another format version.
    let mut saved: Value = serde_json::from_str(&read(&file)).unwrap();
    saved["version"] = 99.into();
    std::fs::write(&file, saved.to_string()).unwrap();
    pld()
        .args(["ledger", "show", &file])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unsupported ledger format version 99",
        ));
}
