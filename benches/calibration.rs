//! Benchmarks for calibration: the best σ, count or sampling rate for a target (ε, δ).
//!
//! Run with `cargo bench --bench calibration`. One group, `calibration`, with each problem
//! timed two ways side by side:
//!
//! * `calibrate/<case>`: the whole calibration with the default accountant options (limit
//!   check, coarse and fine searches, verification);
//! * `one_epsilon_query/<case>`: its baseline, a single ε(δ) query at the calibrated value
//!   (default options), so the ratio is the effective number of accountant calls.
//!
//! The acceptance case is `dp_sgd_sigma` (σ for 1000 steps at q = 0.01, target ε = 2 at
//! δ = 1e-5): it must stay well under one second. Problems are parsed, and the calibrated
//! specifications built, outside the timed closures.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use pld_accountant::{calibrate, Accountant, AccountantOptions, CalibrationProblem};
use std::time::Duration;

/// One calibration problem with its target.
struct Case {
    label: &'static str,
    problem: &'static str,
    epsilon: f64,
    delta: f64,
}

const CASES: [Case; 5] = [
    Case {
        label: "dp_sgd_sigma",
        problem: r#"{"events": [{"mechanism": "gaussian", "sigma": null, "sensitivity": 1,
                     "sampling": {"poisson": 0.01}, "count": 1000}]}"#,
        epsilon: 2.0,
        delta: 1e-5,
    },
    Case {
        label: "dp_sgd_steps",
        problem: r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sensitivity": 1,
                     "sampling": {"poisson": 0.01}, "count": null}]}"#,
        epsilon: 2.0,
        delta: 1e-5,
    },
    Case {
        label: "dp_sgd_rate",
        problem: r#"{"events": [{"mechanism": "gaussian", "sigma": 1, "sensitivity": 1,
                     "sampling": {"poisson": null}, "count": 1000}]}"#,
        epsilon: 2.0,
        delta: 1e-5,
    },
    Case {
        label: "gaussian_sigma_analytic",
        problem: r#"{"events": [{"mechanism": "gaussian", "sigma": null, "count": 100}]}"#,
        epsilon: 1.0,
        delta: 1e-6,
    },
    Case {
        label: "laplace_scale",
        problem: r#"{"events": [{"mechanism": "laplace", "scale": null, "count": 10}]}"#,
        epsilon: 1.0,
        delta: 1e-6,
    },
];

fn bench_calibration(c: &mut Criterion) {
    let mut group = c.benchmark_group("calibration");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(5));
    for case in &CASES {
        let problem =
            CalibrationProblem::from_json_str(case.problem).expect("benchmark problems are valid");
        let options = AccountantOptions::default();
        group.bench_with_input(
            BenchmarkId::new("calibrate", case.label),
            &problem,
            |b, problem| {
                b.iter(|| {
                    black_box(calibrate(
                        black_box(problem),
                        case.epsilon,
                        case.delta,
                        options,
                        &mut |_| {},
                    ))
                })
            },
        );
        let value = calibrate(&problem, case.epsilon, case.delta, options, &mut |_| {})
            .expect("benchmark calibrations succeed")
            .value;
        let spec = problem.spec_with(value).expect("calibrated value is valid");
        group.bench_with_input(
            BenchmarkId::new("one_epsilon_query", case.label),
            &spec,
            |b, spec| {
                b.iter(|| {
                    black_box(
                        Accountant::new(black_box(spec), options)
                            .and_then(|a| a.epsilon_for_delta(case.delta)),
                    )
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench_calibration);
criterion_main!(benches);
