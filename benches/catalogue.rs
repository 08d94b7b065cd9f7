//! One heterogeneous composition of the mechanism catalogue: 12 different mechanisms (Gaussian
//! unsampled and Poisson-sampled, Laplace unsampled and sampled, k-ary randomized response,
//! eps_delta, discrete Laplace, discrete Gaussian, mixture of Gaussians), 100 releases each,
//! ε at δ = 1e-5.
//!
//! Target (issue 4): ≤ 50 ms at the default tolerance. dp_accounting 0.6.0 needs about 3.6 s
//! for 10 mechanisms × 100 releases at its default grid step 1e-4.
//!
//! Run: `cargo bench --bench catalogue -- --noplot`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use pld_accountant::{Accountant, AccountantOptions, CompositionSpec};

/// The mixed composition (add/remove).
const MIXED: &str = r#"{"events": [
 {"mechanism": "gaussian", "sigma": 20, "count": 100},
 {"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": 0.01}, "count": 100},
 {"mechanism": "gaussian", "sigma": 1.5, "sampling": {"poisson": 0.05}, "count": 100},
 {"mechanism": "laplace", "scale": 100, "count": 100},
 {"mechanism": "laplace", "scale": 50, "count": 100},
 {"mechanism": "laplace", "scale": 5, "sampling": {"poisson": 0.01}, "count": 100},
 {"mechanism": "randomized_response", "epsilon": 0.01, "count": 100},
 {"mechanism": "randomized_response", "epsilon": 0.02, "categories": 4, "count": 100},
 {"mechanism": "eps_delta", "epsilon": 0.01, "delta": 1e-8, "count": 100},
 {"mechanism": "discrete_laplace", "scale": 100, "count": 100},
 {"mechanism": "discrete_gaussian", "sigma": 20, "count": 100},
 {"mechanism": "mixture_of_gaussians", "sigma": 2, "sensitivities": [0, 1, 2],
  "probabilities": [0.9, 0.09, 0.01], "count": 100}
]}"#;

fn epsilon(spec: &CompositionSpec, options: AccountantOptions) -> f64 {
    let accountant = Accountant::new(spec, options).expect("valid spec");
    accountant
        .epsilon_for_delta(1e-5)
        .expect("computable")
        .epsilon
        .upper
}

fn bench_mixed(c: &mut Criterion) {
    let spec = CompositionSpec::from_json_str(MIXED).expect("valid spec");
    let mut group = c.benchmark_group("catalogue_mixed_12x100");
    group.sample_size(20);
    group.bench_function("default_tolerance", |b| {
        b.iter(|| epsilon(black_box(&spec), AccountantOptions::default()))
    });
    group.bench_function("fixed_grid_1e-4", |b| {
        let options = AccountantOptions {
            grid_step: Some(1e-4),
            ..AccountantOptions::default()
        };
        b.iter(|| epsilon(black_box(&spec), options))
    });
    group.finish();
}

criterion_group!(benches, bench_mixed);
criterion_main!(benches);
