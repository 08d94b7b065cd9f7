//! The FFT product of distinct events (`pmf::product`), truncated to a Chernoff window and
//! tilted, against the exact composition of the same discretized PMFs (double-double direct
//! convolution of every run, no truncation): an upper PMF's δ(ε) never falls below the exact
//! one and exceeds it by at most the truncated mass and round-off; a lower PMF mirrors it.
//! The PMFs are real discretizations (Poisson-subsampled Gaussians of six noise levels), so
//! the comparison covers the window, the aliasing charges and the per-entry tilted errors
//! on the shapes the accountant feeds the product.

mod support;

use pld_accountant::pmf::product::compose_product;
use pld_accountant::{
    Bound, Gaussian, GridPmf, PoissonSubsampled, PrivacyLossDistribution, Symmetry,
};
use support::convolve_reference;

const STEP: f64 = 1e-2;

/// (σ, count) of the events composed.
const EVENTS: [(f64, u64); 6] = [(0.7, 2), (0.85, 3), (1.0, 1), (1.2, 2), (1.5, 4), (2.0, 2)];

fn singles(bound: Bound) -> Vec<(GridPmf, u64)> {
    EVENTS
        .iter()
        .map(|&(sigma, count)| {
            let mechanism =
                PoissonSubsampled::new(Gaussian::new(sigma, 1.0).unwrap(), 0.05).unwrap();
            let pld = PrivacyLossDistribution::from_mechanism(
                &mechanism,
                Symmetry::Asymmetric,
                STEP,
                1e-14,
                bound,
            )
            .unwrap();
            (pld.remove().clone(), count)
        })
        .collect()
}

/// The exact composition of `parts` (no truncation): (first loss, probabilities, +∞ mass).
fn exact(parts: &[(GridPmf, u64)]) -> (f64, Vec<f64>, f64) {
    let mut probs = vec![1.0];
    let mut first_loss = 0.0;
    let mut kept = 1.0;
    for (pmf, k) in parts {
        for _ in 0..*k {
            probs = convolve_reference(&probs, pmf.probs());
        }
        first_loss += *k as f64 * pmf.loss(0);
        kept *= (1.0 - pmf.infinity_mass()).powi(*k as i32);
    }
    (first_loss, probs, 1.0 - kept)
}

/// δ(ε) of the exact composition, term by term.
fn exact_delta(exact: &(f64, Vec<f64>, f64), epsilon: f64) -> f64 {
    let (first_loss, probs, infinity) = exact;
    infinity
        + probs
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let loss = first_loss + i as f64 * STEP;
                if loss > epsilon {
                    p * -(epsilon - loss).exp_m1()
                } else {
                    0.0
                }
            })
            .sum::<f64>()
}

#[test]
fn product_brackets_the_exact_composition_of_its_inputs() {
    for bound in [Bound::Upper, Bound::Lower] {
        let parts = singles(bound);
        let truth = exact(&parts);
        let factors: Vec<(&GridPmf, u64)> = parts.iter().map(|(p, k)| (p, *k)).collect();
        // A window that keeps all but 1e-12 (Chernoff: far less in fact), and one that cuts
        // off real mass (up to 1e-4), which must go to +∞ (upper) or be dropped (lower).
        for (tail_mass, tilts) in [(1e-12, 0), (1e-12, 1), (1e-12, 3), (1e-4, 0), (1e-4, 2)] {
            let product = compose_product(&factors, tail_mass, tilts)
                .expect("the product applies")
                .unwrap();
            // The window is narrower than the full sum: truncation is exercised.
            assert!(product.len() < truth.1.len(), "{bound:?}, tilts {tilts}");
            // The window cuts off real mass at τ = 1e-4 (the exact δ at its top end is
            // above the round-off, so dropping it would show).
            if tail_mass == 1e-4 {
                let top = product.loss(product.len() - 1);
                assert!(exact_delta(&truth, top) > 1e-12, "{bound:?}, tilts {tilts}");
            }
            let mut checked = 0;
            for i in 0..60 {
                let epsilon = 0.1 * i as f64;
                let want = exact_delta(&truth, epsilon);
                if want < 1e-15 {
                    break;
                }
                checked += 1;
                let got = product.delta_for_epsilon(epsilon);
                let context = format!(
                    "{bound:?}, τ {tail_mass:e}, tilts {tilts}, ε = {epsilon}: product δ {got:e}, \
                     exact {want:e}"
                );
                match bound {
                    Bound::Upper => {
                        assert!(got >= want * (1.0 - 1e-12), "below the truth: {context}");
                        assert!(
                            got <= want * (1.0 + 1e-6) + 2.0 * tail_mass,
                            "loose: {context}"
                        );
                    }
                    Bound::Lower => {
                        assert!(got <= want * (1.0 + 1e-12), "above the truth: {context}");
                        assert!(
                            got >= want * (1.0 - 1e-6) - 2.0 * tail_mass,
                            "loose: {context}"
                        );
                    }
                }
            }
            assert!(checked > 20, "too few ε with δ ≥ 1e-15: {checked}");
        }
    }
}

/// Tilted products keep the far tail accurate in relative terms: where the exact δ is 1e-11
/// or so, the untilted product's absolute round-off allowance would dominate.
#[test]
fn tilted_product_is_accurate_in_the_far_tail() {
    let parts = singles(Bound::Upper);
    let truth = exact(&parts);
    let factors: Vec<(&GridPmf, u64)> = parts.iter().map(|(p, k)| (p, *k)).collect();
    let tilted = compose_product(&factors, 1e-20, 2).unwrap().unwrap();
    let epsilon = (0..2000)
        .map(|i| 0.01 * i as f64)
        .find(|&e| exact_delta(&truth, e) < 1e-11)
        .expect("δ falls below 1e-11");
    let want = exact_delta(&truth, epsilon);
    let got = tilted.delta_for_epsilon(epsilon);
    assert!(
        got >= want && got <= want * (1.0 + 1e-4),
        "ε = {epsilon}: tilted δ {got:e}, exact {want:e}"
    );
}
