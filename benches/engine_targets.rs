//! Benchmarks for the engine's targets: the default tolerance on the four DP-SGD cases that
//! the side-by-side comparison with dp_accounting uses, far tails (δ = 1e-12), and many
//! distinct events.
//!
//! Run with `cargo bench --bench engine_targets` (a few minutes: the 10,000-event case
//! takes about 6 s per query). Groups:
//!
//! * `default_tolerance`: ε(δ = 1e-5) with default options for σ 1 q 0.01 T 1e3 and 1e4,
//!   σ 0.8 q 0.004 T 1e5, and MNIST-like σ 1.1 q 256/60000 T 14063 (the cases of
//!   `benches/side_by_side/run.sh`).
//! * `tiny_delta`: ε(δ = 1e-12) of the `laplace-fixed-batch` preset (per-step losses within
//!   ±2e-3 nats) and of a mixed release (12 Laplace count queries, one Gaussian, 100
//!   randomized-response answers, replace).
//! * `distinct_events`: ε(δ = 1e-5) of n distinct subsampled Gaussians (σ evenly from 0.8 to
//!   1.5, q 0.01, 10 steps each), n = 200, 1000 and 10,000.
//!
//! Every query builds its accountant inside the timed closure: the whole cost of an answer.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use pld_accountant::spec::presets::PRESETS;
use pld_accountant::{Accountant, AccountantOptions, CompositionSpec};
use std::time::Duration;

/// ε upper bound of `spec` at `delta` with default options.
fn epsilon(spec: &CompositionSpec, delta: f64) -> f64 {
    Accountant::new(spec, AccountantOptions::default())
        .and_then(|accountant| accountant.epsilon_for_delta(delta))
        .expect("benchmark accounting succeeds")
        .epsilon
        .upper
}

fn bench_default_tolerance(c: &mut Criterion) {
    let mut group = c.benchmark_group("default_tolerance");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(4));
    for (sigma, q, steps) in [
        (1.0, 0.01, 1_000),
        (1.0, 0.01, 10_000),
        (0.8, 0.004, 100_000),
        (1.1, 256.0 / 60_000.0, 14_063),
    ] {
        let spec = CompositionSpec::dp_sgd(sigma, q, steps, 1.0).expect("valid case");
        let label = format!("sigma{sigma}_q{q:.6}_k{steps}");
        group.bench_with_input(BenchmarkId::from_parameter(label), &spec, |b, spec| {
            b.iter(|| black_box(epsilon(black_box(spec), 1e-5)))
        });
    }
    group.finish();
}

/// The release mixing Laplace, Gaussian and randomized-response events.
const MIXED: &str = r#"{"neighbouring":"replace","events":[
    {"mechanism":"laplace","scale":1.0,"sensitivity":1.0,"count":12},
    {"mechanism":"gaussian","sigma":2.0,"sensitivity":1.0},
    {"mechanism":"randomized_response","epsilon":0.5,"categories":2,"count":100}]}"#;

fn bench_tiny_delta(c: &mut Criterion) {
    let mut group = c.benchmark_group("tiny_delta");
    group.sample_size(10);
    let preset = PRESETS
        .iter()
        .find(|p| p.name() == "laplace-fixed-batch")
        .expect("preset exists")
        .spec()
        .expect("preset spec is valid");
    let mixed = CompositionSpec::from_json_str(MIXED).expect("valid spec");
    for (label, spec) in [("laplace-fixed-batch", preset), ("mixed", mixed)] {
        group.bench_with_input(BenchmarkId::from_parameter(label), &spec, |b, spec| {
            b.iter(|| black_box(epsilon(black_box(spec), 1e-12)))
        });
    }
    group.finish();
}

/// n distinct subsampled Gaussians: σ evenly from 0.8 to 1.5, q 0.01, 10 steps each.
fn distinct(n: usize) -> CompositionSpec {
    let events: Vec<String> = (0..n)
        .map(|i| {
            let sigma = 0.8 + 0.7 * i as f64 / (n - 1) as f64;
            format!(
                r#"{{"mechanism":"gaussian","sigma":{sigma},"sampling":{{"poisson":0.01}},"count":10}}"#
            )
        })
        .collect();
    CompositionSpec::from_json_str(&format!(
        r#"{{"neighbouring":"add_remove","events":[{}]}}"#,
        events.join(",")
    ))
    .expect("valid spec")
}

fn bench_distinct_events(c: &mut Criterion) {
    let mut group = c.benchmark_group("distinct_events");
    group.sample_size(10);
    for n in [200, 1000, 10_000] {
        let spec = distinct(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &spec, |b, spec| {
            b.iter(|| black_box(epsilon(black_box(spec), 1e-5)))
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    bench_default_tolerance,
    bench_tiny_delta,
    bench_distinct_events
);
criterion_main!(benches);
