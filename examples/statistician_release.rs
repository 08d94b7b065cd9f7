//! A statistician's year of releases from one dataset, each with its own mechanism, accounted
//! together: 12 monthly counts with Laplace noise, 4 quarterly sums with Gaussian noise, one
//! survey question answered by randomized response, and a synthetic-data release known only
//! to be (ε, δ)-DP.
//!
//! Built with the checked builder: every parameter is validated where it is given.
//!
//! Heterogeneous compositions are where the PLD gains most over the composition theorems:
//! each mechanism keeps its own exact privacy loss distribution instead of being reduced to
//! one (ε, δ) pair. The example prints the year's ε at several δ, and δ at ε = 1.
//!
//! Run with `cargo run --release --example statistician_release`.

use pld_accountant::{compare, Accountant, AccountantOptions, CompositionSpec, MechanismSpec};

fn main() -> Result<(), pld_accountant::Error> {
    // Neighbouring datasets differ in one person's record (replace-one). A count then moves
    // by at most 1, and a sum of values clipped to [0, 10] by at most 10: said with
    // `replace_sensitivity`, so nothing is doubled (`sensitivity` is the add/remove bound,
    // which replace-one doubles).
    let year = CompositionSpec::replace()
        .event(
            MechanismSpec::laplace(40.0)?
                .with_replace_sensitivity(1.0)?
                .repeat(12)?,
        )
        .event(
            MechanismSpec::gaussian(200.0)?
                .with_replace_sensitivity(10.0)?
                .repeat(4)?,
        )
        .event(MechanismSpec::randomized_response(0.1, 4)?.once())
        .event(MechanismSpec::eps_delta(0.05, 1e-8)?.once())
        .build()?;
    let accountant = Accountant::new(&year, AccountantOptions::default())?;
    println!(
        "one year of releases ({} mechanism runs)",
        year.total_count()
    );
    // No δ below the synthetic-data release's own 1e-8 can be met at any finite ε.
    for delta in [1e-5, 1e-6, 1e-7, 1e-9] {
        let answer = accountant.epsilon_for_delta(delta)?;
        println!(
            "  ε at δ = {delta:e}: at most {:.4} (at least {:.4})",
            answer.epsilon.upper, answer.epsilon.lower
        );
    }
    let at_one = accountant.delta_for_epsilon(1.0)?;
    println!(
        "  δ at ε = 1: at most {:.3e} (at least {:.3e})",
        at_one.delta.upper, at_one.delta.lower
    );

    // What the composition theorems would have charged for the same year.
    let comparison = compare(&year, 1e-7, AccountantOptions::default())?;
    println!("at δ = 1e-7, every method:");
    for row in &comparison.rows {
        println!("  {:<28} {:>10.4}", row.method, row.epsilon);
    }
    Ok(())
}
