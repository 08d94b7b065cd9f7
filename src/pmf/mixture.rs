//! The PMF of a revealed mixture: pair i used with probability wᵢ, the index seen.
//!
//! When the index of the pair in use is part of the output and has the same law under both
//! datasets, the outcomes of different pairs never coincide, so the privacy loss of an
//! outcome is that of its own pair and
//! ```text
//! ω(l) = Σᵢ wᵢ·ωᵢ(l),        δ(ε) = Σᵢ wᵢ·δᵢ(ε)
//! ```
//! The weighted sum of upper PMFs is therefore an upper PMF of the mixture, and of lower PMFs a
//! lower one. (Hiding the index is a post-processing: the revealed mixture dominates the
//! plain one, so it also bounds a mechanism that mixes the pairs without saying which.)

use crate::error::{Error, Result};
use crate::pmf::grid_pmf::GridPmf;

impl GridPmf {
    /// `Σ wᵢ·PMFᵢ` on the common grid: probabilities, infinite mass and every recorded
    /// allowance weighted (the round-off counts added, the loss allowance the largest).
    ///
    /// # Guarantee
    /// An upper (lower) PMF of the revealed mixture when every part is an upper (lower) PMF of
    /// its pair and the weights are its probabilities (module docs). Each product and sum is
    /// rounded once, within the relative allowance every δ read from a PMF already carries.
    ///
    /// # Errors
    /// [`Error::IncompatibleDistributions`] for no parts, parts of different steps, bounds or
    /// grid offsets (half-step or not); [`Error::InvalidParameter`] for a weight that is
    /// negative or not finite.
    pub fn mixture(parts: &[(f64, &GridPmf)]) -> Result<GridPmf> {
        let Some((_, first)) = parts.first() else {
            return Err(Error::IncompatibleDistributions {
                reason: "a mixture needs at least one part".into(),
            });
        };
        for (i, (weight, pmf)) in parts.iter().enumerate() {
            if !(weight.is_finite() && *weight >= 0.0) {
                return Err(Error::invalid(
                    format!("weights[{i}]"),
                    weight,
                    "a finite number ≥ 0",
                ));
            }
            if pmf.step.to_bits() != first.step.to_bits()
                || pmf.bound != first.bound
                || pmf.half_offset != first.half_offset
            {
                return Err(Error::IncompatibleDistributions {
                    reason: "the parts of a mixture must share grid step, offset and bound".into(),
                });
            }
        }
        let bottom = parts.iter().map(|(_, p)| p.offset).min().unwrap_or(0);
        let top = parts
            .iter()
            .map(|(_, p)| p.offset + p.probs.len() as i64)
            .max()
            .unwrap_or(bottom);
        let len = (top - bottom).max(0) as usize;
        let mut probs = vec![0.0; len];
        let keep_errors = parts.iter().all(|(_, p)| p.entry_errors.is_some());
        let mut errors = keep_errors.then(|| vec![0.0; len]);
        let mut mixed = GridPmf::from_parts(first.step, bottom, Vec::new(), 0.0, first.bound);
        mixed.half_offset = first.half_offset;
        for &(weight, pmf) in parts {
            let start = (pmf.offset - bottom) as usize;
            for (slot, &p) in probs[start..].iter_mut().zip(&pmf.probs) {
                *slot += weight * p;
            }
            if let (Some(mixed_errors), Some(own)) = (errors.as_mut(), pmf.entry_errors.as_ref()) {
                for (slot, &e) in mixed_errors[start..].iter_mut().zip(own) {
                    *slot += weight * e;
                }
            }
            mixed.infinity_mass += weight * pmf.infinity_mass;
            mixed.roundoff_l2 += weight * pmf.roundoff_l2;
            mixed.roundoff_floor += weight * pmf.roundoff_floor;
            mixed.excess_mass += weight * pmf.excess_mass;
            mixed.folded_bottom += pmf.folded_bottom;
            mixed.folded_top += pmf.folded_top;
            mixed.folded_error += weight * pmf.folded_error;
            mixed.loss_allowance = mixed.loss_allowance.max(pmf.loss_allowance);
            // Each part's δ is within its own runs' bound (see `pmf::run_rounding`), and the
            // bound grows with the runs: the weighted sum is within the largest's.
            mixed.rounding_runs = mixed.rounding_runs.max(pmf.rounding_runs);
        }
        mixed.probs = probs;
        mixed.entry_errors = errors;
        Ok(mixed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bound::Bound;

    #[test]
    fn delta_of_a_mixture_is_the_weighted_delta() {
        let a = GridPmf::new(0.1, -2, vec![0.2, 0.3, 0.4], 0.1, Bound::Upper).unwrap();
        let b = GridPmf::new(0.1, 1, vec![0.5, 0.25, 0.25], 0.0, Bound::Upper).unwrap();
        let m = GridPmf::mixture(&[(0.7, &a), (0.3, &b)]).unwrap();
        assert_eq!(m.offset(), -2);
        assert_eq!(m.len(), 6);
        for eps in [-1.0, 0.0, 0.05, 0.15, 0.3] {
            let want = 0.7 * a.delta_for_epsilon(eps) + 0.3 * b.delta_for_epsilon(eps);
            let got = m.delta_for_epsilon(eps);
            assert!(
                (got - want).abs() < 1e-12 * want.max(1e-300),
                "{eps}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn mismatched_parts_are_refused() {
        let a = GridPmf::new(0.1, 0, vec![1.0], 0.0, Bound::Upper).unwrap();
        let b = GridPmf::new(0.2, 0, vec![1.0], 0.0, Bound::Upper).unwrap();
        let c = GridPmf::new(0.1, 0, vec![1.0], 0.0, Bound::Lower).unwrap();
        assert!(GridPmf::mixture(&[(0.5, &a), (0.5, &b)]).is_err());
        assert!(GridPmf::mixture(&[(0.5, &a), (0.5, &c)]).is_err());
        assert!(GridPmf::mixture(&[]).is_err());
        assert!(GridPmf::mixture(&[(f64::NAN, &a)]).is_err());
    }
}
