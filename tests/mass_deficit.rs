//! An upper PMF whose stored total falls short of 1 (its entries rounded a little low, as a
//! discretizer's normalization can leave them) must still compose to an upper bound on the
//! composition of the full-mass PMF it stands for.
//!
//! The shortfall is spread over the entries, so each entry of a k-fold composition is about
//! k times that short in relative terms, at every loss. Putting the missing total back at the
//! lowest loss of the result (this crate's rule until 2026-12) leaves every δ(ε) above that
//! loss short by about k·d·δ(ε): with d = 1e-9 and k = 1,000, 1e-6 of δ, far above the
//! round-off the result charges. These tests compose the short PMF and compare with the exact
//! composition of the full one (direct convolution in double-double, every term
//! non-negative), for self-composition, pairwise composition and the FFT product.

mod support;

use pld_accountant::pmf::product::compose_product;
use pld_accountant::{Bound, GridPmf};
use support::convolve_reference;

const STEP: f64 = 0.1;

/// Losses −0.2, 0 and 0.1 (offset −2) with P-masses that sum to 1 and Q-mass
/// 0.1·e^{0.2} + 0.6 + 0.3·e^{−0.1} ≈ 0.993 ≤ 1: a valid privacy loss distribution.
const FULL: [f64; 4] = [0.1, 0.0, 0.6, 0.3];

/// Losses −0.1, 0, 0.2 (offset −1), Q-mass ≈ 0.992.
const OTHER: [f64; 4] = [0.3, 0.55, 0.0, 0.15];

/// Relative shortfall of the stored entries.
const SHORT: f64 = 1e-9;

fn upper(offset: i64, probs: &[f64], scale: f64) -> GridPmf {
    let probs = probs.iter().map(|p| p * scale).collect();
    GridPmf::new(STEP, offset, probs, 0.0, Bound::Upper).unwrap()
}

/// The exact composition of `runs` (PMF, count): (lowest loss, probabilities).
fn exact(runs: &[(&GridPmf, u64)]) -> (f64, Vec<f64>) {
    let mut probs = vec![1.0];
    let mut lowest = 0.0;
    for (pmf, k) in runs {
        for _ in 0..*k {
            probs = convolve_reference(&probs, pmf.probs());
        }
        lowest += *k as f64 * pmf.loss(0);
    }
    (lowest, probs)
}

/// Checks that `composed` reads δ(ε) at least the exact one at every ε ≥ `from_epsilon` where that is above
/// 1e-300, over a range that takes δ from about 1 down to far below 1e-100, and at most 1e-6
/// above it in relative terms plus 1e-9 (round-off): the shortfall is made up in proportion,
/// not charged whole (k·d, 1e-6 and more here). Returns how many ε were checked.
fn assert_bounds(composed: &GridPmf, exact: &(f64, Vec<f64>), from_epsilon: f64) -> usize {
    let (lowest, probs) = exact;
    let top = lowest + (probs.len() - 1) as f64 * STEP;
    let mut checked = 0;
    for i in 0..400 {
        let epsilon = from_epsilon + (top - from_epsilon) * i as f64 / 400.0;
        let truth: f64 = probs
            .iter()
            .enumerate()
            .map(|(j, p)| {
                let loss = lowest + j as f64 * STEP;
                if loss > epsilon {
                    p * -(epsilon - loss).exp_m1()
                } else {
                    0.0
                }
            })
            .sum();
        if truth < 1e-300 {
            continue;
        }
        let read = composed.delta_for_epsilon(epsilon);
        assert!(
            read >= truth,
            "ε {epsilon}: read {read:e} < exact {truth:e}"
        );
        assert!(
            read - truth <= 1e-6 * truth + 1e-9,
            "ε {epsilon}: read {read:e}, exact {truth:e}"
        );
        checked += 1;
    }
    assert!(checked >= 100, "{checked}");
    checked
}

#[test]
fn a_short_pmf_self_composes_to_an_upper_bound_on_the_full_one() {
    let full = upper(-2, &FULL, 1.0);
    let short = upper(-2, &FULL, 1.0 - SHORT);
    for k in [1_000, 3_000] {
        for (tail_mass, tilts) in [(0.0, 0), (1e-30, 0), (1e-30, 3)] {
            let composed = short.self_compose_tilted(k, tail_mass, tilts).unwrap();
            assert_bounds(&composed, &exact(&[(&full, k)]), 0.0);
        }
    }
}

#[test]
fn short_pmfs_compose_pairwise_to_an_upper_bound_on_the_full_ones() {
    // Composed once, the shortfall is only 2d: make it large enough to see (1e-7).
    let short = 1e-7;
    let (full_a, full_b) = (upper(-2, &FULL, 1.0), upper(-1, &OTHER, 1.0));
    let (a, b) = (
        upper(-2, &FULL, 1.0 - short),
        upper(-1, &OTHER, 1.0 - short),
    );
    let composed = a.compose(&b, 0.0).unwrap();
    assert_bounds(&composed, &exact(&[(&full_a, 1), (&full_b, 1)]), 0.0);
}

#[test]
fn short_pmfs_compose_by_one_product_to_an_upper_bound_on_the_full_ones() {
    let (full_a, full_b) = (upper(-2, &FULL, 1.0), upper(-1, &OTHER, 1.0));
    let (a, b) = (
        upper(-2, &FULL, 1.0 - SHORT),
        upper(-1, &OTHER, 1.0 - SHORT),
    );
    for (tail_mass, tilts) in [(0.0, 0), (1e-30, 0), (1e-30, 3)] {
        let composed = compose_product(&[(&a, 700), (&b, 500)], tail_mass, tilts)
            .expect("the product applies")
            .unwrap();
        assert_bounds(&composed, &exact(&[(&full_a, 700), (&full_b, 500)]), 0.0);
    }
}

#[test]
fn a_short_pmf_tail_power_is_an_upper_bound_on_the_full_ones_tail() {
    // 3,000 steps: the composed loss has mean 30 and standard deviation 4.5 nats.
    let (full, short) = (upper(-2, &FULL, 1.0), upper(-2, &FULL, 1.0 - SHORT));
    let k = 3_000;
    let composed = short
        .upper_tail_power(k, 1e-30, 45.0, 50.0)
        .expect("the tilted power applies");
    assert_bounds(&composed, &exact(&[(&full, k)]), 45.0);
}
