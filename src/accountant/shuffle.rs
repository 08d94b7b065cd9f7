//! One epoch of shuffled batches with Gaussian noise, as the accountant composes it: an
//! upper bound without amplification and a lower bound from datasets computed exactly. No
//! bound with amplification is proven for shuffling, so the bracket is wide by nature.
//!
//! - **Upper**: each record is in exactly one batch per epoch, and, given the shuffle, the
//!   other batches do not depend on it. By joint convexity over the shuffle the epoch is at
//!   most one Gaussian step with the relation's shift `s` (Δ under add/remove, read here as
//!   zero-out: the record replaced by one contributing nothing, so batch sizes stay fixed;
//!   2Δ or the `replace_sensitivity` under replace).
//! - **Lower**: two attained pairs of datasets, the better one kept (chosen by a rule that
//!   does not look at the answer, so it stays a lower bound):
//!   - every other record contributing what the neighbour's record does: the epoch's outputs
//!     are random allocation's pair `(1/t) Σ_j N(s e_j, σ²I)` against `N(0, σ²I)`, whose
//!     certified lower bound [`crate::discretize::random_allocation`] computes;
//!   - under add/remove (zero-out), every other record contributing `−Δ` and the record `+Δ`
//!     against `0` (Chua et al., ICML 2024): mixtures of shifts 2Δ and Δ, bounded through
//!     the epoch's largest output ([`crate::discretize::shuffle_max`]). Under replace the
//!     same test on shifts `s` and 0 is the fallback when the allocation pair cannot be built.

use super::allocation::COMPARED_EPSILONS;
use super::plan::no_loss_lower;
use super::*;
use crate::discretize::random_allocation::{epoch_pld_kept, EpochLaws};
use crate::discretize::shuffle_max::max_statistic_pld;

/// One epoch of shuffling (t ≥ 2 steps) of Gaussian steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct ShuffleEpoch {
    /// The step with the relation's pair shift `s`: the epoch without amplification.
    pub(super) step: Gaussian,
    /// One record's contribution Δ, when the zero-out pair of Chua et al. applies
    /// (add/remove); `None` under replace.
    pub(super) zero_out_shift: Option<f64>,
    pub(super) steps_per_epoch: u64,
}

impl ShuffleEpoch {
    /// The epoch's PLD in one bound (both directions), on the grid of step `step`.
    pub(super) fn pld(
        &self,
        bound: Bound,
        step: f64,
        tail_mass: f64,
        epoch_laws: &EpochLaws<Gaussian>,
    ) -> Result<PrivacyLossDistribution> {
        match bound {
            Bound::Upper => PrivacyLossDistribution::from_mechanism(
                &self.step,
                Symmetry::Asymmetric,
                step,
                tail_mass,
                Bound::Upper,
            ),
            Bound::Lower => self.lower(step, tail_mass, epoch_laws),
        }
    }

    fn lower(
        &self,
        step: f64,
        tail_mass: f64,
        epoch_laws: &EpochLaws<Gaussian>,
    ) -> Result<PrivacyLossDistribution> {
        let sigma = self.step.sigma();
        let t = self.steps_per_epoch;
        let allocation = epoch_pld_kept(&self.step, t, step, tail_mass, Bound::Lower, epoch_laws);
        let max_test = match self.zero_out_shift {
            Some(delta) => Some(max_statistic_pld(
                2.0 * delta / sigma,
                delta / sigma,
                t,
                step,
            )),
            None if allocation.is_err() => Some(max_statistic_pld(self.step.mu(), 0.0, t, step)),
            None => None,
        };
        match (allocation, max_test) {
            (Ok(a), Some(Ok(m))) => {
                let wins = COMPARED_EPSILONS
                    .iter()
                    .filter(|&&e| m.delta_for_epsilon(e) > a.delta_for_epsilon(e))
                    .count();
                Ok(if 2 * wins > COMPARED_EPSILONS.len() {
                    m
                } else {
                    a
                })
            }
            (Ok(a), _) => Ok(a),
            (Err(_), Some(Ok(m))) => Ok(m),
            // Neither pair could be built: no loss at all is still a lower bound.
            (Err(_), _) => no_loss_lower(step),
        }
    }
}
