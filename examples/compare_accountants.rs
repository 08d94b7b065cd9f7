//! Every accountant on one composition: the PLD bracket beside RDP, the CLT estimate and
//! whatever else applies, with the kind of each number (upper bound, lower bound, estimate).
//!
//! Run with `cargo run --release --example compare_accountants`.

use pld_accountant::{compare, AccountantOptions, CompositionSpec, Kind};

fn main() -> Result<(), pld_accountant::Error> {
    // 1,000 DP-SGD steps (σ = 1, q = 0.01) followed by 10 Laplace-noised counts.
    let spec = CompositionSpec::from_json_str(
        r#"{"events": [
            {"mechanism": "gaussian", "sigma": 1.0, "sampling": {"poisson": 0.01}, "count": 1000},
            {"mechanism": "laplace", "scale": 20.0, "count": 10}
        ]}"#,
    )?;
    let delta = 1e-6;
    let comparison = compare(&spec, delta, AccountantOptions::default())?;
    println!("ε at δ = {delta:e}");
    for row in &comparison.rows {
        let kind = match row.kind {
            Kind::UpperBound => "upper bound",
            Kind::LowerBound => "lower bound",
            Kind::Estimate => "estimate",
        };
        println!("  {:<28} {:>10.4}  {kind}", row.method, row.epsilon);
    }
    for row in &comparison.not_applicable {
        println!("  (not applicable: {})", row.method);
    }
    // Every guaranteed upper bound is at least the PLD lower bound.
    let lower = comparison.row("pld_lower").map_or(0.0, |r| r.epsilon);
    for row in comparison
        .rows
        .iter()
        .filter(|r| r.kind == Kind::UpperBound)
    {
        assert!(
            row.epsilon >= lower,
            "{} below the PLD lower bound",
            row.method
        );
    }
    Ok(())
}
