//! Merged tail bins (`LossBins::with_merged_tails`, `LumpedAtoms::with_merged_tails`): the
//! discretizations stay bounds whatever the budget, and merging costs what the docs claim.
//!
//! - Upper: the merged connect-the-dots curve lies between the one-step curve and that curve
//!   plus the budget, at every ε and in both directions (the claim of
//!   `LossBins::with_merged_tails`), and above the mechanism's exact δ; composed k times, it
//!   stays within k·budget of the one-step composition.
//! - Lower: the merged atoms stay below the exact δ, and composed they stay close to the
//!   one-step atoms (a measured tightness, not a proven one).
//! - Both take far fewer bins where the budget allows: the checks above would pass trivially
//!   if nothing were merged, so that is asserted too.

use pld_accountant::mechanism::MonotonePrivacyLoss;
use pld_accountant::{Gaussian, GridPmf, Laplace, LossBins, LumpedAtoms, PoissonSubsampled};

const STEP: f64 = 1e-3;
const TAIL_MASS: f64 = 1e-12;
/// The δ allowance of a PMF's reported δ (relative), with room for the two PMFs' roundings.
const ALLOWANCE: f64 = 3e-9;

fn epsilons() -> Vec<f64> {
    // Irregular points across the losses of every case, on and off the grid.
    (0..600).map(|i| -0.1 + 0.013_7 * i as f64).collect()
}

fn gaussian(sigma: f64, rate: f64) -> PoissonSubsampled<Gaussian> {
    PoissonSubsampled::new(Gaussian::new(sigma, 1.0).unwrap(), rate).unwrap()
}

fn laplace(scale: f64, rate: f64) -> PoissonSubsampled<Laplace> {
    PoissonSubsampled::new(Laplace::new(scale, 1.0).unwrap(), rate).unwrap()
}

/// One mechanism's upper-bound checks at one budget; returns (bins merged, bins fine).
fn check_upper<M: MonotonePrivacyLoss>(name: &str, mechanism: &M, budget: f64) -> (usize, usize) {
    let fine = LossBins::from_mechanism(mechanism, STEP, TAIL_MASS).unwrap();
    let merged = LossBins::with_merged_tails(mechanism, STEP, TAIL_MASS, budget).unwrap();
    assert_eq!(merged.nodes(), fine.nodes(), "{name}: same grid");
    for (direction, fine, merged) in [
        ("remove", fine.connect_the_dots(), merged.connect_the_dots()),
        (
            "add",
            fine.swapped().connect_the_dots(),
            merged.swapped().connect_the_dots(),
        ),
    ] {
        for epsilon in epsilons() {
            let (f, m) = (
                fine.delta_for_epsilon(epsilon),
                merged.delta_for_epsilon(epsilon),
            );
            assert!(
                m >= f * (1.0 - ALLOWANCE),
                "{name} {direction} budget {budget:e}: merged {m:e} below one-step {f:e} at ε {epsilon}"
            );
            assert!(
                m <= f * (1.0 + ALLOWANCE) + budget,
                "{name} {direction} budget {budget:e}: merged {m:e} above one-step {f:e} + budget at ε {epsilon}"
            );
            if direction == "remove" {
                let exact = mechanism.hockey_stick(epsilon);
                assert!(
                    m >= exact * (1.0 - 1e-8),
                    "{name} budget {budget:e}: merged upper {m:e} below the exact {exact:e} at ε {epsilon}"
                );
            }
        }
    }
    (merged.bins(), fine.bins())
}

/// One case's upper-bound checks at a budget, returning (bins merged, bins fine).
type BudgetCheck = dyn Fn(f64) -> (usize, usize);

#[test]
fn merged_upper_bins_stay_within_the_budget_in_both_directions() {
    let cases: Vec<(&str, Box<BudgetCheck>)> = vec![
        (
            "gaussian σ 1 q 0.01",
            Box::new(|b| check_upper("gaussian σ 1 q 0.01", &gaussian(1.0, 0.01), b)),
        ),
        (
            "gaussian σ 0.5 q 0.2",
            Box::new(|b| check_upper("gaussian σ 0.5 q 0.2", &gaussian(0.5, 0.2), b)),
        ),
        (
            "laplace b 1 q 0.05",
            Box::new(|b| check_upper("laplace b 1 q 0.05", &laplace(1.0, 0.05), b)),
        ),
    ];
    for (name, check) in &cases {
        let mut counts = Vec::new();
        for budget in [1e-14, 1e-11, 1e-8] {
            counts.push(check(budget));
        }
        // A larger budget never keeps more bins, and the largest merges most of them
        // (Laplace noise has no far tail: its losses stop at ±1 nat, all with real mass).
        assert!(
            counts.windows(2).all(|w| w[1].0 <= w[0].0),
            "{name}: {counts:?}"
        );
        let (merged, fine) = counts[2];
        if !name.starts_with("laplace") {
            assert!(2 * merged < fine, "{name}: {merged} of {fine} bins kept");
        }
    }
}

#[test]
fn composed_merged_upper_stays_within_k_budgets() {
    let mechanism = gaussian(1.0, 0.05);
    let budget = 1e-9;
    let k = 40;
    let fine = LossBins::from_mechanism(&mechanism, STEP, TAIL_MASS)
        .unwrap()
        .connect_the_dots()
        .self_compose(k, 1e-13)
        .unwrap();
    let merged = LossBins::with_merged_tails(&mechanism, STEP, TAIL_MASS, budget)
        .unwrap()
        .connect_the_dots()
        .self_compose(k, 1e-13)
        .unwrap();
    for epsilon in epsilons() {
        let (f, m) = (
            fine.delta_for_epsilon(epsilon),
            merged.delta_for_epsilon(epsilon),
        );
        // Round-off and truncation charges differ a little between the two compositions.
        let slack = 1e-7 * f + 1e-13;
        assert!(
            m <= f + k as f64 * budget + slack,
            "ε {epsilon}: merged {m:e} vs one-step {f:e} (k·budget {:e})",
            k as f64 * budget
        );
        assert!(
            m >= f - slack,
            "ε {epsilon}: merged {m:e} below one-step {f:e}"
        );
    }
}

#[test]
fn merged_lower_atoms_stay_below_the_truth_and_close_to_the_one_step_atoms() {
    let k = 40;
    let compose = |pmf: &GridPmf| pmf.self_compose(k, 1e-13).unwrap();
    let atoms = |pmf: &GridPmf| pmf.probs().iter().filter(|&&p| p > 0.0).count();
    for (name, mechanism) in [
        ("σ 1 q 0.01", gaussian(1.0, 0.01)),
        ("σ 0.5 q 0.2", gaussian(0.5, 0.2)),
        ("σ 2 q 0.5", gaussian(2.0, 0.5)),
    ] {
        let fine = LumpedAtoms::from_mechanism(&mechanism, STEP, TAIL_MASS).unwrap();
        let (fine_remove, fine_add) = (compose(&fine.remove_pmf()), compose(&fine.add_pmf()));
        // The accountant's budget for an ε(δ) query: 1e-5·δ over the number of events.
        for delta in [1e-3, 1e-6, 1e-9] {
            let budget = 1e-5 * delta / k as f64;
            let merged =
                LumpedAtoms::with_merged_tails(&mechanism, STEP, TAIL_MASS, budget).unwrap();
            let merged_remove = merged.remove_pmf();
            // Fewer atoms, and far fewer for the DP-SGD-like pair (most of its loss range
            // is a far tail; a noisier or more often sampled record has mass all along).
            let factor = if name == "σ 1 q 0.01" { 2 } else { 1 };
            if delta == 1e-3 {
                assert!(
                    factor * atoms(&merged_remove) < atoms(&fine.remove_pmf()),
                    "{name}: {} of {} atoms kept",
                    atoms(&merged_remove),
                    atoms(&fine.remove_pmf())
                );
            }
            for epsilon in epsilons() {
                let exact = mechanism.hockey_stick(epsilon);
                let m = merged_remove.delta_for_epsilon(epsilon);
                assert!(
                    m <= exact * (1.0 + 1e-8) + 1e-300,
                    "{name}: merged lower {m:e} above the exact {exact:e} at ε {epsilon}"
                );
            }
            for (direction, f, m) in [
                ("remove", &fine_remove, compose(&merged_remove)),
                ("add", &fine_add, compose(&merged.add_pmf())),
            ] {
                let (ef, em) = (f.epsilon_for_delta(delta), m.epsilon_for_delta(delta));
                assert!(
                    (ef - em).abs() <= 1e-6 * ef.max(1e-3),
                    "{name} {direction} δ {delta:e}: merged lower ε {em} vs one-step {ef}"
                );
            }
        }
    }
}

#[test]
fn halving_the_step_keeps_every_merged_bin_end() {
    // With ranges that double exactly (a grid step of 2^-10 and 2^-11 nats: both ends are
    // the same losses), every bin end of step h is a bin end of step h/2.
    let mechanism = gaussian(1.0, 0.01);
    let budget = 1e-10;
    let coarse_step = 1.0 / 1024.0;
    let coarse = LossBins::with_merged_tails(&mechanism, coarse_step, TAIL_MASS, budget).unwrap();
    let fine =
        LossBins::with_merged_tails(&mechanism, coarse_step / 2.0, TAIL_MASS, budget).unwrap();
    let ends = |bins: &LossBins, scale: f64| -> Vec<i64> {
        let first = bins.first_node();
        bins.bin_ends()
            .iter()
            .map(|&j| ((first + j as i64) as f64 * scale) as i64)
            .collect()
    };
    let coarse_ends = ends(&coarse, 2.0);
    let fine_ends: std::collections::HashSet<i64> = ends(&fine, 1.0).into_iter().collect();
    let (lo, hi) = (
        *fine_ends.iter().min().unwrap(),
        *fine_ends.iter().max().unwrap(),
    );
    let missing: Vec<i64> = coarse_ends
        .iter()
        .copied()
        .filter(|e| (lo..=hi).contains(e) && !fine_ends.contains(e))
        .collect();
    assert!(
        coarse.bins() < coarse.nodes() / 2,
        "nothing merged: {} bins",
        coarse.bins()
    );
    assert!(
        missing.is_empty(),
        "bin ends of step h lost at h/2: {missing:?}"
    );
}
