//! Far tails (δ down to 1e-15) of compositions whose per-step losses are tiny: the default
//! accountant meets its tolerance, its bracket overlaps the bracket of a computation on a
//! fixed grid (both hold the truth), and δ read at its ends agrees with it.
//!
//! Failure this found: the `laplace-fixed-batch` preset (per-step losses within ±2e-3
//! nats) at δ = 1e-12 gave [0.1655, 0.1744] after 2 s of refinements, not met, and at
//! δ = 1e-15 [0.1665, 0.3467]. Its Chernoff windows and tilted tails used tilts of at most
//! 30 nats⁻¹, while the saddle points of such tails lie at thousands of nats⁻¹; tilts
//! relative to the PMF's span (`pmf::tail_moments::SPAN_TILTS`) fixed both.

use pld_accountant::spec::presets::PRESETS;
use pld_accountant::{Accountant, AccountantOptions};

fn preset(name: &str) -> pld_accountant::CompositionSpec {
    PRESETS
        .iter()
        .find(|p| p.name() == name)
        .expect("preset exists")
        .spec()
        .expect("preset spec is valid")
}

#[test]
fn tiny_per_step_losses_meet_the_tolerance_in_far_tails() {
    let spec = preset("laplace-fixed-batch");
    let default = Accountant::new(&spec, AccountantOptions::default()).unwrap();
    let fixed = Accountant::new(
        &spec,
        AccountantOptions {
            grid_step: Some(1e-4),
            ..AccountantOptions::default()
        },
    )
    .unwrap();
    for delta in [1e-10, 1e-12, 1e-15] {
        let answer = default.epsilon_for_delta(delta).unwrap();
        let e = answer.epsilon;
        assert!(
            answer.settings.tolerance_met,
            "δ = {delta:e}: [{}, {}] not met",
            e.lower, e.upper
        );
        let reference = fixed.epsilon_for_delta(delta).unwrap().epsilon;
        // Both brackets hold the truth, so they overlap.
        assert!(
            e.upper >= reference.lower && e.lower <= reference.upper,
            "δ = {delta:e}: [{}, {}] and the fixed grid's [{}, {}] do not overlap",
            e.lower,
            e.upper,
            reference.lower,
            reference.upper
        );
        // The δ bracket at the reported ε ends agrees with the ε bracket.
        let at_upper = default.delta_for_epsilon(e.upper).unwrap().delta;
        let at_lower = default.delta_for_epsilon(e.lower).unwrap().delta;
        assert!(
            at_upper.lower <= delta * (1.0 + 1e-6),
            "δ({}) ≥ {:e}",
            e.upper,
            at_upper.lower
        );
        assert!(
            at_lower.upper >= delta * (1.0 - 1e-6),
            "δ({}) ≤ {:e}",
            e.lower,
            at_lower.upper
        );
    }
}

/// The presets whose steps are not tiny keep meeting the tolerance at δ = 1e-12 and 1e-15.
#[test]
fn every_preset_meets_the_tolerance_at_tiny_delta() {
    for p in PRESETS {
        let accountant = Accountant::new(&p.spec().unwrap(), AccountantOptions::default()).unwrap();
        for delta in [1e-12, 1e-15] {
            let answer = accountant.epsilon_for_delta(delta).unwrap();
            assert!(
                answer.settings.tolerance_met,
                "{} at δ = {delta:e}: [{}, {}] not met",
                p.name(),
                answer.epsilon.lower,
                answer.epsilon.upper
            );
        }
    }
}
