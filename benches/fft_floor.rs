//! The engine against the cost of its transforms alone: for the four DP-SGD cases of the
//! side-by-side comparison (`benches/side_by_side/run.sh`), ε(δ = 1e-5) at `--grid-step
//! 1e-4` is computed once with the transforms recorded
//! ([`pld_accountant::numeric::transform_log`]); the "realfft floor" is the time the
//! `realfft` crate takes for all of them, one after the other on one thread (planned
//! beforehand, warm buffers): the query's FFTs alone.
//!
//! The machine is shared and its speed drifts from one moment to the next, so the two are
//! measured in 31 rounds of one whole query (library default allocator, threads started,
//! FFT plans cached) followed at once by one pass of its transforms. Printed per case: the
//! median floor, the median query and their ratio, the fastest query against the fastest
//! floor, and the median of the rounds' own ratios ("paired": each query against the floor
//! measured beside it, the figure least moved by the machine's load).
//!
//! Run with `cargo bench --bench fft_floor` (a few seconds). Whole-process times, as a user
//! sees them, are in the side-by-side script, which runs this bench too.

use pld_accountant::numeric::transform_log::{self, Direction};
use pld_accountant::{Accountant, AccountantOptions, CompositionSpec};
use realfft::num_complex::Complex;
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// Rounds of one query and one pass of its transforms.
const ROUNDS: usize = 31;

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

/// Planned realfft transforms of one real length, with warm buffers.
struct Planned {
    forward: Arc<dyn RealToComplex<f64>>,
    inverse: Arc<dyn ComplexToReal<f64>>,
    signal: Vec<f64>,
    spectrum: Vec<Complex<f64>>,
    forward_scratch: Vec<Complex<f64>>,
    inverse_scratch: Vec<Complex<f64>>,
}

impl Planned {
    fn new(planner: &mut RealFftPlanner<f64>, n: usize) -> Planned {
        let forward = planner.plan_fft_forward(n);
        let inverse = planner.plan_fft_inverse(n);
        let mut planned = Planned {
            signal: (0..n).map(|i| ((i * 7919) % 1000) as f64 * 1e-3).collect(),
            spectrum: forward.make_output_vec(),
            forward_scratch: forward.make_scratch_vec(),
            inverse_scratch: inverse.make_scratch_vec(),
            forward,
            inverse,
        };
        planned.run(Direction::Forward);
        planned.run(Direction::Inverse);
        planned.run(Direction::Forward);
        planned
    }

    /// One transform in `direction` (the inverse consumes its input: it is timed on
    /// whatever the buffer holds, which costs the same).
    fn run(&mut self, direction: Direction) {
        match direction {
            Direction::Forward => self
                .forward
                .process_with_scratch(
                    &mut self.signal,
                    &mut self.spectrum,
                    &mut self.forward_scratch,
                )
                .expect("lengths match"),
            Direction::Inverse => {
                self.spectrum[0].im = 0.0;
                if let Some(last) = self.spectrum.last_mut() {
                    last.im = 0.0;
                }
                self.inverse
                    .process_with_scratch(
                        &mut self.spectrum,
                        &mut self.signal,
                        &mut self.inverse_scratch,
                    )
                    .expect("lengths match")
            }
        }
    }
}

/// The median of `values` (sorted here).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let mut planner = RealFftPlanner::<f64>::new();
    let mut planned: HashMap<usize, Planned> = HashMap::new();
    println!(
        "{:<28} {:>10} {:>8} {:>14} {:>13} {:>7} {:>13} {:>7} {:>13}",
        "case (--grid-step 1e-4)",
        "transforms",
        "longest",
        "realfft floor",
        "engine (med)",
        "ratio",
        "engine (best)",
        "ratio",
        "paired ratio"
    );
    for (sigma, q, steps) in CASES {
        let spec = CompositionSpec::dp_sgd(sigma, q, steps, 1.0).expect("valid case");
        query(&spec);
        transform_log::start();
        query(&spec);
        let recorded = transform_log::stop();
        for &(n, _) in &recorded {
            planned
                .entry(n)
                .or_insert_with(|| Planned::new(&mut planner, n));
        }
        // Rounds of one query and then one pass of the recorded transforms, so that each
        // query is compared with a floor measured under the same load.
        let (mut engine, mut floor, mut paired) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let start = Instant::now();
            std::hint::black_box(query(&spec));
            let query_seconds = start.elapsed().as_secs_f64();
            let start = Instant::now();
            for &(n, direction) in &recorded {
                if let Some(transform) = planned.get_mut(&n) {
                    transform.run(direction);
                }
            }
            let floor_seconds = start.elapsed().as_secs_f64();
            engine.push(query_seconds);
            floor.push(floor_seconds);
            paired.push(query_seconds / floor_seconds);
        }
        let best = engine.iter().copied().fold(f64::INFINITY, f64::min);
        let best_floor = floor.iter().copied().fold(f64::INFINITY, f64::min);
        let engine = median(&mut engine);
        let floor = median(&mut floor);
        let longest = recorded.iter().map(|&(n, _)| n).max().unwrap_or(0);
        println!(
            "{:<28} {:>10} {:>8} {:>11.2} ms {:>10.2} ms {:>6.1}x {:>10.2} ms {:>6.1}x {:>12.1}x",
            format!("σ {sigma} q {q:.6} T {steps}"),
            recorded.len(),
            longest,
            floor * 1e3,
            engine * 1e3,
            engine / floor,
            best * 1e3,
            best / best_floor,
            median(&mut paired)
        );
    }
}
