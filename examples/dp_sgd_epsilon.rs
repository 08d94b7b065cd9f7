//! The ε to publish for a DP-SGD training run, with its guaranteed bracket.
//!
//! The run: 60 epochs over 60,000 examples with expected batch 256 (Poisson sampling, q =
//! 256/60000, as Opacus), noise multiplier 1.1, clipping norm 1, i.e. ⌈60/q⌉ = 14,063 steps.
//! The example prints ε(δ = 1e-5) (publish the upper bound; the lower bound shows how much
//! tighter the truth could be), and the other direction, δ at that ε.
//!
//! Run with `cargo run --release --example dp_sgd_epsilon`.

use pld_accountant::{Accountant, AccountantOptions, CompositionSpec, MechanismSpec};

fn main() -> Result<(), pld_accountant::Error> {
    let (batch, dataset, epochs) = (256_u64, 60_000_u64, 60_u64);
    let sampling_rate = batch as f64 / dataset as f64;
    // ⌈epochs · n / B⌉ steps: rounding up never under-counts.
    let steps = (epochs * dataset).div_ceil(batch);
    let spec = CompositionSpec::dp_sgd(1.1, sampling_rate, steps, 1.0)?;
    // The same run with the builder, which reads like the release itself.
    let built = CompositionSpec::add_remove()
        .event(
            MechanismSpec::gaussian(1.1)?
                .with_sensitivity(1.0)?
                .poisson(sampling_rate)?
                .repeat(steps)?,
        )
        .build()?;
    assert_eq!(built, spec);
    let accountant = Accountant::new(&spec, AccountantOptions::default())?;

    let delta = 1e-5;
    let answer = accountant.epsilon_for_delta(delta)?;
    println!("DP-SGD: σ = 1.1, q = {sampling_rate:.6}, {steps} steps, clipping norm 1");
    println!(
        "ε at δ = {delta:e}: publish {:.4} (guaranteed upper bound); the truth is at least {:.4}",
        answer.epsilon.upper, answer.epsilon.lower
    );
    if let Some(step) = answer.settings.grid_step {
        println!(
            "  (PLD on a grid of step {step:.2e} nats, {} refinements)",
            answer.settings.refinements
        );
    }

    // The other direction: δ at the published ε is at most the target.
    let back = accountant.delta_for_epsilon(answer.epsilon.upper)?;
    println!(
        "δ at ε = {:.4}: in [{:.3e}, {:.3e}]",
        answer.epsilon.upper, back.delta.lower, back.delta.upper
    );
    assert!(
        back.delta.upper <= delta * 1.001,
        "the two directions agree"
    );
    Ok(())
}
