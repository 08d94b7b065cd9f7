//! DP-SGD with Laplace noise and fixed batches: the lecture's pure-DP calibration next to the
//! PLD accountant.
//!
//! Source: S. Yıldırım, "Differential Privacy" (lecture, Trustworthy AI, Galatasaray
//! Üniversitesi, 30 March 2024), DP-SGD, Scenario 1: ε-DP after T iterations, each on a batch
//! of m out of n records drawn without replacement, with Laplace(σ) noise on the batch-average
//! gradient whose per-example L1 norm is clipped to B1/2 (so replacing one example moves the
//! average by at most B1/m).
//!
//! ```text
//! per step, no sampling:      ε0 = B1/(mσ)
//! amplified by the batch:     ε1 = ln[1 + (m/n)(e^{ε0} − 1)]      (Balle, Barthe & Gaboardi 2018)
//! T steps, basic composition: ε  = T·ε1
//! solved for σ:               σ  = B1 / (m ln[1 + (e^{ε/T} − 1) n/m])
//! ```
//!
//! The accountant gets the same mechanism, built in Rust: `laplace` with scale b = σ under
//! `replace` neighbouring, whose two outputs differ by up to B1/m (`replace_sensitivity`, the
//! same as a per-record `sensitivity` Δ = B1/(2m), which `replace` doubles), sampled
//! `fixed_batch` m of n, repeated T times.
//!
//! # What is a fair comparison
//!
//! The lecture's guarantee is *pure* DP: (ε, 0). The PLD accountant answers (ε, δ) questions,
//! and δ = 0 is outside `epsilon_for_delta`'s domain, so the like-for-like question is the other
//! one: δ at the lecture's ε. It comes out 0 (up to the upper bound's discretization), which
//! confirms the lecture. It cannot be beaten in that currency: the lecture's ε is the exact
//! pure-DP ε of this mechanism. Take every other example's clipped gradient equal to +B1/2 and
//! the changed example to be −B1/2 in one dataset and +B1/2 in the other: one output is always
//! Laplace around the same point, the other is a (1 − m/n, m/n) mixture of that and a copy
//! shifted by B1/m, and their likelihood ratio equals `1 + (m/n)(e^{ε0} − 1)` on a half-line
//! of positive probability, at every step. So δ(ε') > 0 for every ε' < ε.
//!
//! What the PLD adds is the (ε, δ) trade-off, which the lecture does not consider. ε at
//! δ = 1e-10 is several times smaller than the pure ε, but it is a different, weaker kind of
//! guarantee (it tolerates a failure with probability δ), so read the gap as the price of
//! insisting on δ = 0: the pure ε is set by one extreme event (the record in every batch and
//! the noise on the far side every time) whose probability is astronomically small. The δ(ε)
//! rows at smaller ε show how small.
//!
//! Run with `cargo run --release --example scenario1_fixed_batch_laplace`.

use pld_accountant::{Accountant, AccountantOptions, Bracket, CompositionSpec, MechanismSpec};

/// Dataset size n.
const DATASET_SIZE: u64 = 60_000;
/// Batch size m.
const BATCH_SIZE: u64 = 256;
/// Iterations T.
const STEPS: u64 = 1_000;
/// Clipping bound B1 (L1 norm of the difference of two clipped per-example gradients).
const CLIP: f64 = 1.0;
/// The pure-DP target ε of the lecture.
const TARGET_EPSILON: f64 = 1.0;

/// The lecture's noise scale `σ = B1 / (m ln[1 + (e^{ε/T} − 1) n/m])`.
fn lecture_sigma(epsilon: f64, steps: u64, batch: u64, dataset: u64, clip: f64) -> f64 {
    let (m, n) = (batch as f64, dataset as f64);
    clip / (m * ((epsilon / steps as f64).exp_m1() * n / m).ln_1p())
}

/// Amplification by sampling without replacement of a pure ε0: `ln[1 + γ(e^{ε0} − 1)]`.
fn amplified(epsilon0: f64, gamma: f64) -> f64 {
    (gamma * epsilon0.exp_m1()).ln_1p()
}

fn delta_cell(delta: f64) -> String {
    if delta == 0.0 {
        "0".to_string()
    } else {
        format!("{delta:.3e}")
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let gamma = BATCH_SIZE as f64 / DATASET_SIZE as f64;
    let sigma = lecture_sigma(TARGET_EPSILON, STEPS, BATCH_SIZE, DATASET_SIZE, CLIP);
    let epsilon0 = CLIP / (BATCH_SIZE as f64 * sigma);
    let per_step = amplified(epsilon0, gamma);
    let lecture_epsilon = STEPS as f64 * per_step;

    println!(
        "DP-SGD, Laplace noise, fixed batches: n = {DATASET_SIZE}, m = {BATCH_SIZE} \
         (γ = {gamma:.6}), T = {STEPS}, B1 = {CLIP}"
    );
    println!();
    println!("Lecture (Scenario 1), target ε = {TARGET_EPSILON} pure DP");
    println!("  σ = B1 / (m ln[1 + (e^(ε/T) − 1) n/m])      {sigma:.9}");
    println!("  per-step ε0 = B1/(mσ), no sampling          {epsilon0:.6}");
    println!("  per-step ε1 = ln[1 + γ(e^ε0 − 1)]           {per_step:.9}");
    println!("  ε = T·ε1 (basic composition), δ = 0         {lecture_epsilon:.6}");
    println!();

    // Replacing one example moves the batch average by at most B1/m: that is the shift
    // between the two outputs, given as it is (`replace_sensitivity`, not doubled).
    let spec = CompositionSpec::replace()
        .event(
            MechanismSpec::laplace(sigma)?
                .with_replace_sensitivity(CLIP / BATCH_SIZE as f64)?
                .fixed_batch(BATCH_SIZE, DATASET_SIZE)?
                .repeat(STEPS)?,
        )
        .build()?;
    let accountant = Accountant::new(&spec, AccountantOptions::default())?;

    println!("PLD accountant, same σ (guaranteed brackets)");
    println!("  {:<34} {:>12} {:>12}", "question", "upper", "lower");
    let delta_row = |label: String, epsilon: f64| -> Result<(), pld_accountant::Error> {
        let Bracket { upper, lower } = accountant.delta_for_epsilon(epsilon)?.delta;
        println!(
            "  {label:<34} {:>12} {:>12}",
            delta_cell(upper),
            delta_cell(lower)
        );
        Ok(())
    };
    delta_row(
        format!("δ at ε = {lecture_epsilon:.4} (the lecture's)"),
        lecture_epsilon,
    )?;
    for delta in [1e-5, 1e-8, 1e-10] {
        let Bracket { upper, lower } = accountant.epsilon_for_delta(delta)?.epsilon;
        println!(
            "  {:<34} {upper:>12.6} {lower:>12.6}",
            format!("ε at δ = {delta:e}")
        );
    }
    for epsilon in [0.5, 0.3, 0.2, 0.15, 0.1] {
        delta_row(format!("δ at ε = {epsilon}"), epsilon)?;
    }
    Ok(())
}
