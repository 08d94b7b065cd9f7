//! A training loop accounted by a [`Ledger`] with a budget: every DP-SGD step is recorded
//! as it happens, and training stops at the first step the budget would not allow.
//!
//! ```text
//! cargo run --release --example training_loop_ledger
//! ```
//!
//! The steps here are fixed in advance (same σ and sampling rate every step), the case the
//! ledger's PLD filter is valid for; a loop that picks the next step's noise from the model
//! trained so far would use an `RdpFilter` or a `GdpFilter` instead.

use pld_accountant::{AccountantOptions, Budget, Error, Ledger, Neighbouring};
use std::time::Instant;

fn main() -> Result<(), Error> {
    let budget = Budget::new(2.0, 1e-5)?;
    let mut ledger =
        Ledger::new(Neighbouring::AddRemove, AccountantOptions::default())?.with_budget(budget);
    // One step: a Poisson-sampled batch (q = 1%), clipped gradients summed and noised (σ = 1).
    let step = ledger.event_from_json(
        r#"{"mechanism": "gaussian", "sigma": 1, "sampling": {"poisson": 0.01}}"#,
    )?;
    let start = Instant::now();
    // Steps are accounted in chunks of 50 (the chunk is released only if all of it fits),
    // then one at a time near the end of the budget.
    let mut chunk = 50;
    let mut steps = 0u64;
    loop {
        let event = step.clone().repeat(chunk)?;
        match ledger.record_checked(event) {
            Ok(spent) => {
                // ... train `chunk` steps here ...
                steps += chunk;
                if steps.is_multiple_of(500) {
                    let epsilon = spent.map_or(f64::NAN, |s| s.epsilon.upper);
                    println!("step {steps:5}: ε ≤ {epsilon:.4} at δ = 1e-5");
                }
            }
            Err(Error::BudgetExceeded { epsilon, .. }) if chunk > 1 => {
                println!(
                    "step {steps:5}: {chunk} more steps would reach ε = {epsilon:.4}; going \
                     one step at a time"
                );
                chunk = 1;
            }
            Err(Error::BudgetExceeded {
                epsilon, budget, ..
            }) => {
                println!(
                    "step {steps:5}: stop, one more step would reach ε = {epsilon:.4} > {budget}"
                );
                break;
            }
            Err(other) => return Err(other),
        }
    }
    let answer = ledger.epsilon_for_delta(budget.delta)?;
    println!(
        "trained {steps} steps in {:.2} s of accounting; ε ∈ [{:.4}, {:.4}] at δ = {}",
        start.elapsed().as_secs_f64(),
        answer.epsilon.lower,
        answer.epsilon.upper,
        budget.delta
    );
    // The state can be saved and restored between runs.
    let restored = Ledger::from_json_str(&ledger.to_json())?;
    assert_eq!(restored.total_count(), steps);
    Ok(())
}
