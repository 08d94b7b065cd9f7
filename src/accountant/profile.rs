//! The privacy profile δ(ε) at many ε from one computation (for trade-off curves and plots).

use super::{Accountant, DELTA_QUERY_TAIL_MASS};
use crate::bound::Bracket;
use crate::error::{Error, Result};
use crate::mechanism::analytic_gaussian;
use serde::{Deserialize, Serialize};

/// One of the two queries that choose the grid of a profile: ε(δ = 1e-6) is refined to the
/// tolerance (and δ(ε = 0) too), and the finer grid step is used for every ε.
pub const PROFILE_REFERENCE_DELTA: f64 = 1e-6;

/// Guaranteed brackets on δ(ε) at a list of ε, with the grid they were read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeltaProfile {
    /// The ε values asked for, in the order given.
    pub epsilons: Vec<f64>,
    /// `deltas[i]` brackets δ(`epsilons[i]`) of the worse direction.
    pub deltas: Vec<Bracket>,
    /// Grid step of the PLD read (nats); `None` for the closed-form Gaussian.
    pub grid_step: Option<f64>,
}

impl Accountant {
    /// Guaranteed brackets on δ(ε) at every ε of `epsilons`, from one bracketed PLD.
    ///
    /// The grid is the finer of those the accountant refines ε at δ =
    /// [`PROFILE_REFERENCE_DELTA`] and δ at ε = 0 to (or the fixed `grid_step` of the
    /// options), truncated at 1e-20 (or the options'
    /// `tail_mass`); the PLD is then read at every ε in one walk per grid
    /// ([`crate::BracketedPld::delta_for_epsilons`]). Compositions of unsampled Gaussians are
    /// read from the closed form. Unlike [`Accountant::delta_for_epsilon`], no ε gets a grid
    /// of its own, so the bracket at a given ε may be wider than that call's; it is as valid.
    ///
    /// # Guarantee
    /// `deltas[i].lower ≤ δ(epsilons[i]) ≤ deltas[i].upper` for the worse direction.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for an empty list or an ε that is NaN or negative; the
    /// accountant's errors otherwise.
    pub fn delta_profile(&self, epsilons: &[f64]) -> Result<DeltaProfile> {
        if epsilons.is_empty() {
            return Err(Error::invalid(
                "epsilons",
                "an empty list",
                "at least one ε",
            ));
        }
        if let Some((i, &e)) = epsilons
            .iter()
            .enumerate()
            .find(|(_, e)| e.is_nan() || **e < 0.0)
        {
            return Err(Error::invalid(format!("epsilons[{i}]"), e, "a number ≥ 0"));
        }
        if let Some((mu_lo, mu_hi)) = self.plan.analytic_mu() {
            let deltas = epsilons
                .iter()
                .map(|&e| Bracket {
                    upper: analytic_gaussian::delta_for_epsilon(mu_hi, e).upper,
                    lower: analytic_gaussian::delta_for_epsilon(mu_lo, e).lower,
                })
                .collect();
            return Ok(DeltaProfile {
                epsilons: epsilons.to_vec(),
                deltas,
                grid_step: None,
            });
        }
        let step = match self.options.grid_step {
            Some(h) => h,
            None => {
                // The finer of the grids refined for ε at δ = 1e-6 and for δ at ε = 0 (where δ
                // is largest, so the relative δ tolerance asks the most of the grid).
                let for_epsilon = self
                    .epsilon_for_delta(PROFILE_REFERENCE_DELTA)?
                    .settings
                    .grid_step;
                let for_delta = self.delta_for_epsilon(0.0)?.settings.grid_step;
                match (for_epsilon, for_delta) {
                    (Some(a), Some(b)) => a.min(b),
                    (Some(h), None) | (None, Some(h)) => h,
                    // Answered without a grid: any step gives valid brackets; 1e-3 nats is a
                    // moderate one.
                    (None, None) => 1e-3,
                }
            }
        };
        let tail_mass = self.options.tail_mass.unwrap_or(DELTA_QUERY_TAIL_MASS);
        let pld = self.pld(step, tail_mass)?;
        Ok(DeltaProfile {
            epsilons: epsilons.to_vec(),
            deltas: pld.delta_for_epsilons(epsilons),
            grid_step: Some(step),
        })
    }
}
