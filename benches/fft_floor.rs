//! The engine against the cost of its transforms alone: for the four DP-SGD cases of the
//! side-by-side comparison (`benches/side_by_side/run.sh`), ε(δ = 1e-5) at `--grid-step
//! 1e-4` is computed once with the transforms recorded
//! ([`pld_accountant::numeric::transform_log`]), and every recorded transform is then timed
//! with the `realfft` crate (planned beforehand, warm buffers, best of 5 runs): their sum is
//! the "realfft floor", the time the query's FFTs alone would take on one thread. Beside it,
//! the median wall time of the whole query in this process (20 runs, after one warm-up: FFT
//! plans cached, threads started; the library's default allocator, not the CLI's settings)
//! and the ratio of the two. The floor is a best of 5, so on a busy machine it is measured
//! nearer its quiet value than a median is: the fastest of the 20 queries, and its ratio to
//! the floor, are printed too (best against best).
//!
//! Run with `cargo bench --bench fft_floor` (a few seconds). Whole-process times, as a user
//! sees them, are in the side-by-side script, which runs this bench too.

use pld_accountant::numeric::transform_log::{self, Direction};
use pld_accountant::{Accountant, AccountantOptions, CompositionSpec};
use realfft::RealFftPlanner;
use std::collections::HashMap;
use std::time::Instant;

const CASES: [(f64, f64, u64); 4] = [
    (1.0, 0.01, 1_000),
    (1.0, 0.01, 10_000),
    (0.8, 0.004, 100_000),
    (1.1, 256.0 / 60_000.0, 14_063),
];

fn query(spec: &CompositionSpec) -> f64 {
    let options = AccountantOptions {
        grid_step: Some(1e-4),
        ..AccountantOptions::default()
    };
    Accountant::new(spec, options)
        .and_then(|accountant| accountant.epsilon_for_delta(1e-5))
        .expect("benchmark accounting succeeds")
        .epsilon
        .upper
}

/// Seconds realfft takes for one transform of real length n in `direction` (best of 5).
fn realfft_seconds(planner: &mut RealFftPlanner<f64>, n: usize, direction: Direction) -> f64 {
    let forward = planner.plan_fft_forward(n);
    let inverse = planner.plan_fft_inverse(n);
    let mut signal: Vec<f64> = (0..n).map(|i| ((i * 7919) % 1000) as f64 * 1e-3).collect();
    let mut spectrum = forward.make_output_vec();
    let mut scratch = forward.make_scratch_vec();
    forward
        .process_with_scratch(&mut signal, &mut spectrum, &mut scratch)
        .expect("lengths match");
    let mut inverse_scratch = inverse.make_scratch_vec();
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let start = Instant::now();
        match direction {
            Direction::Forward => forward
                .process_with_scratch(&mut signal, &mut spectrum, &mut scratch)
                .expect("lengths match"),
            Direction::Inverse => {
                // The inverse consumes its input: time it on a fresh copy's worth of work.
                spectrum[0].im = 0.0;
                if let Some(last) = spectrum.last_mut() {
                    last.im = 0.0;
                }
                inverse
                    .process_with_scratch(&mut spectrum, &mut signal, &mut inverse_scratch)
                    .expect("lengths match")
            }
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    best
}

fn main() {
    let mut planner = RealFftPlanner::<f64>::new();
    let mut cache: HashMap<(usize, bool), f64> = HashMap::new();
    println!(
        "{:<28} {:>10} {:>12} {:>14} {:>13} {:>7} {:>13} {:>7}",
        "case (--grid-step 1e-4)",
        "transforms",
        "longest",
        "realfft floor",
        "engine (med)",
        "ratio",
        "engine (best)",
        "ratio"
    );
    for (sigma, q, steps) in CASES {
        let spec = CompositionSpec::dp_sgd(sigma, q, steps, 1.0).expect("valid case");
        query(&spec);
        transform_log::start();
        query(&spec);
        let recorded = transform_log::stop();
        let mut times = Vec::new();
        for _ in 0..20 {
            let start = Instant::now();
            std::hint::black_box(query(&spec));
            times.push(start.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        let engine = times[times.len() / 2];
        let best = times[0];
        let floor: f64 = recorded
            .iter()
            .map(|&(n, direction)| {
                *cache
                    .entry((n, direction == Direction::Forward))
                    .or_insert_with(|| realfft_seconds(&mut planner, n, direction))
            })
            .sum();
        let longest = recorded.iter().map(|&(n, _)| n).max().unwrap_or(0);
        println!(
            "{:<28} {:>10} {:>12} {:>11.2} ms {:>10.2} ms {:>6.1}x {:>10.2} ms {:>6.1}x",
            format!("σ {sigma} q {q:.6} T {steps}"),
            recorded.len(),
            longest,
            floor * 1e3,
            engine * 1e3,
            engine / floor,
            best * 1e3,
            best / floor
        );
    }
}
