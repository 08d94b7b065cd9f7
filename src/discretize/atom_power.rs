//! The exact k-fold composition of a pair with a few outcomes: a multinomial over its atoms.
//!
//! A pair with m finite-loss atoms `(lⱼ, pⱼ, qⱼ)` composed k times has the atoms
//! ```text
//! loss Σ nⱼ lⱼ,   P = C(n)·Π pⱼ^{nⱼ},   Q = C(n)·Π qⱼ^{nⱼ},   C(n) = k!/Π nⱼ!,   Σ nⱼ = k,
//! ```
//! one per count vector n: C(k+m−1, m−1) of them. Rounding the composed atoms onto the grid
//! once costs one rounding's error; rounding the single pair and composing on the grid costs
//! k of them, and for the lower bound of atoms off the grid that error is first order in the
//! step (an isolated atom can only be moved down to the grid point below it): Poisson-sampled
//! randomized response composed 200 times gave a bracket 15% wide at a step of 5e-4 nats.
//!
//! Masses are computed in log space, `ln C(n)` from a compensated table of `ln i!`, so every
//! atom's P- and Q-mass is within a few ulps of its logarithm's magnitude (≲ 1e-12 relative
//! for the counts accepted here); masses below the smallest positive double underflow to 0:
//! their P-mass (at most one such double per atom) is charged to loss +∞ in the result, so no
//! upper bound loses it.

use crate::discretize::loss_atoms::{LossAtom, LossAtoms};
use crate::numeric::summation::neumaier_sum;

/// Largest count composed exactly: `ln k!` and the products stay within ~1e-12 relative.
pub const MAX_EXACT_COUNT: u64 = 10_000;

impl LossAtoms {
    /// The exact k-fold composition of this pair as atoms, when it has no tails, at most
    /// four finite atoms, and at most `max_atoms` count vectors (`C(k+m−1, m−1)`); `None`
    /// otherwise (or for k = 0 or k > [`MAX_EXACT_COUNT`]).
    ///
    /// Infinite losses compose as runs: P-mass at +∞ is `1 − (1 − m_∞)^k`, Q-mass at −∞
    /// `1 − (1 − m_{−∞})^k` (computed as `−expm1(k·ln1p(−m))`).
    ///
    /// # Guarantee
    /// The composed pair's exact PLD up to rounding (a few ulps of each mass's logarithm),
    /// with the P-mass of underflowed atoms moved to +∞.
    pub fn power(&self, k: u64, max_atoms: usize) -> Option<LossAtoms> {
        let atoms = self.atoms();
        let m = atoms.len();
        if k == 0 || k > MAX_EXACT_COUNT || m == 0 || m > 4 || self.has_tails() {
            return None;
        }
        if count_vectors(k, m)? > max_atoms as u64 {
            return None;
        }
        let k_index = k as usize;
        // ln i! for i ≤ k, each a compensated running sum of ln 2, …, ln i.
        let mut ln_factorial = Vec::with_capacity(k_index + 1);
        let (mut sum, mut compensation) = (0.0_f64, 0.0_f64);
        ln_factorial.push(0.0);
        for i in 1..=k_index {
            let term = (i as f64).ln();
            let t = sum + term;
            compensation += if sum.abs() >= term.abs() {
                (sum - t) + term
            } else {
                (term - t) + sum
            };
            sum = t;
            ln_factorial.push(sum + compensation);
        }
        let ln_p: Vec<f64> = atoms.iter().map(|a| a.p.ln()).collect();
        let ln_q: Vec<f64> = atoms.iter().map(|a| a.q.ln()).collect();
        let mut out = Vec::new();
        let mut underflowed = Vec::new();
        let mut counts = vec![0usize; m];
        enumerate(&mut counts, 0, k_index, &mut |n: &[usize]| {
            let ln_c = ln_factorial[k_index] - n.iter().map(|&c| ln_factorial[c]).sum::<f64>();
            let dot = |logs: &[f64]| -> f64 {
                n.iter()
                    .zip(logs)
                    .filter(|(&c, _)| c > 0)
                    .map(|(&c, &l)| c as f64 * l)
                    .sum::<f64>()
            };
            let p = (ln_c + dot(&ln_p)).exp();
            let q = (ln_c + dot(&ln_q)).exp();
            let loss = n
                .iter()
                .zip(atoms)
                .filter(|(&c, _)| c > 0)
                .map(|(&c, a)| c as f64 * a.loss)
                .sum::<f64>();
            if p > 0.0 && q > 0.0 {
                out.push(LossAtom { loss, p, q });
            } else if p > 0.0 || loss > 0.0 {
                // Q underflowed (or both did, above loss 0): P's mass, below 1e-308 when both
                // did, is charged to +∞.
                underflowed.push(p.max(f64::MIN_POSITIVE));
            }
        });
        let runs = |mass: f64| {
            if mass > 0.0 {
                -(k as f64 * (-mass).ln_1p()).exp_m1()
            } else {
                0.0
            }
        };
        let p_infinity = runs(self.p_infinity()) + neumaier_sum(underflowed.iter().copied());
        Some(LossAtoms::from_atoms(
            out,
            p_infinity,
            runs(self.q_neg_infinity()),
        ))
    }
}

/// `C(k+m−1, m−1)`, the number of count vectors of m atoms summing to k; `None` on overflow.
fn count_vectors(k: u64, m: usize) -> Option<u64> {
    let mut c: u64 = 1;
    for i in 1..m as u64 {
        c = c.checked_mul(k + i)? / i;
    }
    Some(c)
}

/// Call `visit` with every vector of non-negative counts from index `at` on summing to `left`.
fn enumerate(counts: &mut [usize], at: usize, left: usize, visit: &mut impl FnMut(&[usize])) {
    if at + 1 == counts.len() {
        counts[at] = left;
        visit(counts);
        return;
    }
    for c in 0..=left {
        counts[at] = c;
        enumerate(counts, at + 1, left - c, visit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two atoms composed k times: the binomial, checked against a direct product of the
    /// pair with itself, and the exact hockey stick against a brute-force sum.
    #[test]
    fn two_atoms_compose_to_the_binomial() {
        let pair = LossAtoms::from_pair(&[0.7, 0.3], &[0.4, 0.6]);
        let k = 12;
        let composed = pair.power(k, 1000).unwrap();
        assert_eq!(composed.atoms().len(), k as usize + 1);
        let total_p: f64 = composed.atoms().iter().map(|a| a.p).sum();
        let total_q: f64 = composed.atoms().iter().map(|a| a.q).sum();
        assert!((total_p - 1.0).abs() < 1e-14 && (total_q - 1.0).abs() < 1e-14);
        // δ(ε) by brute force over the 2^12 outcome sequences.
        for epsilon in [0.0_f64, 0.5, 1.5, 3.0] {
            let mut delta = 0.0_f64;
            for bits in 0u32..(1 << k) {
                let (mut p, mut q) = (1.0_f64, 1.0_f64);
                for i in 0..k {
                    if bits >> i & 1 == 1 {
                        p *= 0.7;
                        q *= 0.4;
                    } else {
                        p *= 0.3;
                        q *= 0.6;
                    }
                }
                delta += (p - epsilon.exp() * q).max(0.0);
            }
            let exact = composed.hockey_stick(epsilon);
            assert!(
                (exact - delta).abs() <= 1e-13 * delta.max(1e-300),
                "ε {epsilon}: {exact} vs {delta}"
            );
        }
    }

    /// Three atoms with infinite masses: totals and the +∞ run probability.
    #[test]
    fn infinite_masses_compose_as_runs() {
        let pair = LossAtoms::from_pair(&[0.45, 0.3, 0.2, 0.05, 0.0], &[0.3, 0.3, 0.3, 0.0, 0.1]);
        let k = 30;
        let composed = pair.power(k, 10_000).unwrap();
        let expected_inf = 1.0 - 0.95f64.powi(k as i32);
        assert!((composed.p_infinity() - expected_inf).abs() < 1e-14);
        let finite_p: f64 = composed.atoms().iter().map(|a| a.p).sum();
        assert!((finite_p + composed.p_infinity() - 1.0).abs() < 1e-13);
        let finite_q: f64 = composed.atoms().iter().map(|a| a.q).sum();
        let expected_neg_inf = 1.0 - 0.9f64.powi(k as i32);
        assert!((composed.q_neg_infinity() - expected_neg_inf).abs() < 1e-14);
        assert!((finite_q + composed.q_neg_infinity() - 1.0).abs() < 1e-13);
    }

    #[test]
    fn too_many_count_vectors_or_atoms_is_none() {
        let pair = LossAtoms::from_pair(&[0.5, 0.3, 0.2], &[0.3, 0.3, 0.4]);
        assert!(pair.power(1000, 1000).is_none()); // C(1002, 2) = 501501
        assert!(pair.power(0, 1000).is_none());
        let five = LossAtoms::from_pair(&[0.2; 5], &[0.1, 0.2, 0.2, 0.2, 0.3]);
        assert!(five.power(2, 1000).is_none());
    }
}
