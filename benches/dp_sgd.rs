//! Benchmarks for DP-SGD accounting and the convolution behind it.
//!
//! Run with `cargo bench --bench dp_sgd`. Four groups:
//!
//! * `dp_sgd_epsilon_default_tolerance`: ε(δ = 1e-5) for four DP-SGD compositions with the
//!   accuracy-driven defaults (the accountant picks and refines the grid itself).
//! * `dp_sgd_epsilon_fixed_grid_1e-4`: the first two compositions on a fixed grid step of
//!   1e-4 nats, the default of Google's `dp_accounting.pld`, for comparison.
//! * `pld_vs_analytic`: the same ε(δ = 1e-5) queries by each accountant side by side: the
//!   PLD bracket (default tolerance), RDP, zCDP (unsampled only), the CLT estimate, and the
//!   whole comparison report; methods that do not apply to a case are skipped.
//! * `convolution`: the real-FFT convolution beside its baseline, direct convolution, over
//!   sizes (direct only up to 4096, where it is already far behind).
//!
//! All inputs are built outside the timed closures.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use pld_accountant::analytic::clt;
use pld_accountant::comparison::{self, Method};
use pld_accountant::numeric::fft_convolution::{convolve_direct, convolve_fft};
use pld_accountant::{Accountant, AccountantOptions, CompositionSpec};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

/// The δ every accounting benchmark asks about.
const DELTA: f64 = 1e-5;

/// One DP-SGD composition: noise multiplier σ, Poisson sampling rate q, number of steps.
#[derive(Debug, Clone, Copy)]
struct DpSgdCase {
    sigma: f64,
    sampling_rate: f64,
    steps: u64,
}

impl DpSgdCase {
    const fn new(sigma: f64, sampling_rate: f64, steps: u64) -> Self {
        DpSgdCase {
            sigma,
            sampling_rate,
            steps,
        }
    }

    /// Benchmark parameter label, e.g. `sigma1_q0.01_k1000`.
    fn label(&self) -> String {
        format!(
            "sigma{}_q{}_k{}",
            self.sigma, self.sampling_rate, self.steps
        )
    }

    /// The composition, with sensitivity (clipping norm) 1.
    fn spec(&self) -> CompositionSpec {
        CompositionSpec::dp_sgd(self.sigma, self.sampling_rate, self.steps, 1.0)
            .expect("benchmark DP-SGD parameters are valid")
    }
}

/// Typical DP-SGD settings, from short to long training runs; the last one (q = 1) takes the
/// exact analytic-Gaussian path and marks the floor of what an ε query costs.
const CASES: [DpSgdCase; 4] = [
    DpSgdCase::new(1.0, 0.01, 1_000),
    DpSgdCase::new(1.0, 0.01, 10_000),
    DpSgdCase::new(0.8, 0.004, 100_000),
    DpSgdCase::new(2.0, 1.0, 100),
];

/// Grid step of `dp_accounting.pld`'s default (`value_discretization_interval = 1e-4`).
const DP_ACCOUNTING_GRID_STEP: f64 = 1e-4;

/// Build the accountant and ask for ε(δ): the whole cost of one query.
fn epsilon(spec: &CompositionSpec, options: AccountantOptions) -> f64 {
    let answer = Accountant::new(spec, options)
        .and_then(|accountant| accountant.epsilon_for_delta(DELTA))
        .expect("benchmark accounting succeeds");
    answer.epsilon.upper
}

fn bench_epsilon_default_tolerance(c: &mut Criterion) {
    let mut group = c.benchmark_group("dp_sgd_epsilon_default_tolerance");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(5));
    for case in CASES {
        let spec = case.spec();
        group.bench_with_input(
            BenchmarkId::from_parameter(case.label()),
            &spec,
            |b, spec| b.iter(|| black_box(epsilon(black_box(spec), AccountantOptions::default()))),
        );
    }
    group.finish();
}

fn bench_epsilon_fixed_grid(c: &mut Criterion) {
    let mut group = c.benchmark_group("dp_sgd_epsilon_fixed_grid_1e-4");
    group.sample_size(10);
    let options = AccountantOptions {
        grid_step: Some(DP_ACCOUNTING_GRID_STEP),
        ..Default::default()
    };
    for case in &CASES[..2] {
        let spec = case.spec();
        group.bench_with_input(
            BenchmarkId::from_parameter(case.label()),
            &spec,
            |b, spec| b.iter(|| black_box(epsilon(black_box(spec), options))),
        );
    }
    group.finish();
}

fn bench_pld_vs_analytic(c: &mut Criterion) {
    let mut group = c.benchmark_group("pld_vs_analytic");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(3));
    let analytic: [(&str, Method); 3] = [
        ("rdp", comparison::rdp_epsilon),
        ("zcdp", comparison::zcdp_epsilon),
        ("clt_estimate", |spec, delta| {
            clt::estimate(spec, delta).map(|e| (e.epsilon, String::new()))
        }),
    ];
    for case in CASES {
        let spec = case.spec();
        group.bench_with_input(BenchmarkId::new("pld", case.label()), &spec, |b, spec| {
            b.iter(|| black_box(epsilon(black_box(spec), AccountantOptions::default())))
        });
        for (method, run) in analytic {
            if run(&spec, DELTA).is_err() {
                continue;
            }
            group.bench_with_input(BenchmarkId::new(method, case.label()), &spec, |b, spec| {
                b.iter(|| black_box(run(black_box(spec), DELTA).map(|r| r.0)))
            });
        }
        group.bench_with_input(
            BenchmarkId::new("compare_all", case.label()),
            &spec,
            |b, spec| {
                b.iter(|| {
                    black_box(comparison::compare(
                        black_box(spec),
                        DELTA,
                        AccountantOptions::default(),
                    ))
                })
            },
        );
    }
    group.finish();
}

/// Seed for the random convolution inputs, so every run times the same vectors.
const CONVOLUTION_SEED: u64 = 0x5EED_C0DE;
/// Sizes timed with both methods.
const DIRECT_SIZES: [usize; 3] = [256, 1024, 4096];
/// Sizes timed with the FFT.
const FFT_SIZES: [usize; 5] = [256, 1024, 4096, 16_384, 65_536];

/// A random PMF-like vector: non-negative entries summing to 1.
fn random_pmf(rng: &mut ChaCha8Rng, n: usize) -> Vec<f64> {
    let mut v: Vec<f64> = (0..n).map(|_| rng.gen::<f64>()).collect();
    let total: f64 = v.iter().sum();
    v.iter_mut().for_each(|x| *x /= total);
    v
}

fn bench_convolution(c: &mut Criterion) {
    let mut group = c.benchmark_group("convolution");
    let mut rng = ChaCha8Rng::seed_from_u64(CONVOLUTION_SEED);
    for n in FFT_SIZES {
        let a = random_pmf(&mut rng, n);
        let b = random_pmf(&mut rng, n);
        let inputs = (a, b);
        group.bench_with_input(BenchmarkId::new("fft", n), &inputs, |bench, (a, b)| {
            bench.iter(|| black_box(convolve_fft(black_box(a), black_box(b))))
        });
        if DIRECT_SIZES.contains(&n) {
            group.bench_with_input(BenchmarkId::new("direct", n), &inputs, |bench, (a, b)| {
                bench.iter(|| black_box(convolve_direct(black_box(a), black_box(b))))
            });
        }
    }
    group.finish();
}

criterion_group!(
    benches,
    bench_epsilon_default_tolerance,
    bench_epsilon_fixed_grid,
    bench_pld_vs_analytic,
    bench_convolution
);
criterion_main!(benches);
