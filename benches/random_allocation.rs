//! Random allocation (balls-in-bins batching): ε at δ = 1e-5 for the issue's speed case,
//! σ = 1, t = 1000 steps per epoch, one participation, 10 epochs, at the default tolerance
//! (the accountant refines its grid itself), a fresh accountant per iteration.
//!
//! Run with `cargo bench --bench random_allocation`. For the peer's time on the same case
//! (PLD_accounting 2.0, `gaussian_allocation_epsilon_range`), see the `seconds` of the
//! headline case in `fixtures/random_allocation/pld_accounting.json` (median of 3 runs on the
//! machine that generated it), or rerun `fixtures/generate_pld_accounting.sh`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use pld_accountant::{Accountant, AccountantOptions, CompositionSpec};
use std::time::Duration;

fn spec(sigma: f64, t: u64, k: u64, epochs: u64) -> CompositionSpec {
    CompositionSpec::from_json_str(&format!(
        r#"{{"events": [{{"mechanism": "gaussian", "sigma": {sigma},
            "sampling": {{"random_allocation": {{"steps_per_epoch": {t}, "participations": {k}}}}},
            "count": {epochs}}}]}}"#
    ))
    .expect("a valid specification")
}

fn random_allocation(c: &mut Criterion) {
    let mut group = c.benchmark_group("random_allocation_epsilon");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    for (label, sigma, t, k, epochs) in [
        ("sigma1_t1000_k1_epochs10", 1.0, 1000, 1, 10),
        ("sigma2_t100_k1_epochs10", 2.0, 100, 1, 10),
        ("sigma1_t100_k5_epochs10", 1.0, 100, 5, 10),
        // Below σ 1 with k > 1 (the lattice cut-limited at 4M points): seconds, not ms.
        ("sigma0.8_t235_k2_epochs30", 0.8, 235, 2, 30),
    ] {
        let spec = spec(sigma, t, k, epochs);
        group.bench_function(label, |b| {
            b.iter(|| {
                let accountant = Accountant::new(&spec, AccountantOptions::default())
                    .expect("a valid specification");
                black_box(accountant.epsilon_for_delta(1e-5).expect("an answer"))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, random_allocation);
criterion_main!(benches);
