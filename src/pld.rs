//! Privacy loss distributions with both directions of add/remove neighbouring.
//!
//! The last stage before the answer: [`crate::pmf`] grid PMFs grouped by direction (ADD and
//! REMOVE) and by bound (upper and lower, [`BracketedPld`]), composed direction by direction;
//! the [`crate::accountant`] reads its brackets from here.

use crate::bound::{Bound, Bracket};
use crate::discretize::loss_atoms::LossAtoms;
use crate::discretize::loss_bins::LossBins;
use crate::discretize::lumped_atoms::LumpedAtoms;
use crate::error::{Error, Result};
use crate::mechanism::MonotonePrivacyLoss;
use crate::pmf::composition::compose_all;
use crate::pmf::grid_pmf::GridPmf;
use std::sync::{Arc, OnceLock};

/// The privacy loss distribution of a mechanism (or a composition), on a grid, in one bound.
///
/// Under add/remove neighbouring both ordered pairs matter: REMOVE = PLD(M(D ∪ {z}) ‖ M(D))
/// and ADD = PLD(M(D) ‖ M(D ∪ {z})). The two are composed separately (the adversarial pair is
/// fixed for a whole run) and only the final query takes the worse of the two. When the
/// mechanism is symmetric (e.g. unsampled Gaussian noise) the two coincide and one is stored.
#[derive(Debug, Clone)]
pub struct PrivacyLossDistribution {
    remove: GridPmf,
    add: AddDirection,
}

/// How the ADD direction is held.
#[derive(Clone)]
enum AddDirection {
    /// ADD has the same distribution as REMOVE.
    Same,
    /// ADD's own PMF.
    Stored(GridPmf),
    /// ADD rounded on first use from what the discretization kept (the swapped bins, the
    /// lumped atoms). A query often never needs it (the accountant first checks ADD on a much
    /// coarser grid), and rounding it was about a quarter of a discretization's cost.
    Deferred(Arc<DeferredPmf>, Arc<OnceLock<GridPmf>>),
}

/// How a deferred ADD PMF is made.
type DeferredPmf = dyn Fn() -> GridPmf + Send + Sync;

impl std::fmt::Debug for AddDirection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AddDirection::Same => f.write_str("Same"),
            AddDirection::Stored(pmf) => f.debug_tuple("Stored").field(pmf).finish(),
            AddDirection::Deferred(_, pmf) => f.debug_tuple("Deferred").field(&pmf.get()).finish(),
        }
    }
}

impl AddDirection {
    fn from_option(add: Option<GridPmf>) -> AddDirection {
        add.map_or(AddDirection::Same, AddDirection::Stored)
    }

    /// ADD made by `make` when first needed.
    fn deferred(make: impl Fn() -> GridPmf + Send + Sync + 'static) -> AddDirection {
        AddDirection::Deferred(Arc::new(make), Arc::new(OnceLock::new()))
    }
}

/// Two PLDs are equal when both directions' PMFs are (whether or not ADD was rounded yet).
impl PartialEq for PrivacyLossDistribution {
    fn eq(&self, other: &Self) -> bool {
        self.remove == other.remove && self.add_pmf() == other.add_pmf()
    }
}

/// Whether the ADD direction of a mechanism equals its REMOVE direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symmetry {
    /// ADD and REMOVE have the same PLD (symmetric additive noise without sampling).
    Symmetric,
    /// ADD is the REMOVE pair swapped and must be tracked separately.
    Asymmetric,
}

/// A grid step as an invalid parameter unless it is finite and > 0.
fn check_step(step: f64) -> Result<()> {
    if step.is_finite() && step > 0.0 {
        Ok(())
    } else {
        Err(Error::invalid("step", step, "a finite number > 0 (nats)"))
    }
}

impl PrivacyLossDistribution {
    /// Discretize a mechanism given by its REMOVE pair. The ADD direction (when asymmetric) is
    /// the swapped pair, binned from the same CDF evaluations.
    ///
    /// # Guarantee
    /// Upper or lower bound on both directions, per `bound` (upper: connect-the-dots on
    /// [`LossBins`]; lower: [`LumpedAtoms`], or [`LossAtoms::merged_from_mechanism`] when the PLD
    /// has atoms).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless `step` is finite and > 0 and `tail_mass` is in
    /// (0, 1); otherwise as [`LossBins::from_mechanism`].
    pub fn from_mechanism<M: MonotonePrivacyLoss>(
        mechanism: &M,
        symmetry: Symmetry,
        step: f64,
        tail_mass: f64,
        bound: Bound,
    ) -> Result<Self> {
        Self::with_merged_tails(mechanism, symmetry, step, tail_mass, bound, 0.0)
    }

    /// As [`PrivacyLossDistribution::from_mechanism`], with the bins (upper) or landings
    /// (lower) of little mass merged where their mass times width is at most `merge_budget`
    /// (see [`LossBins::with_merged_tails`] and [`LumpedAtoms::with_merged_tails`]): each
    /// direction's δ moves by at most about `merge_budget` at every ε, for far fewer CDF
    /// evaluations. Mechanisms with loss atoms (Laplace) keep their exact lower rounding.
    ///
    /// # Guarantee
    /// As [`PrivacyLossDistribution::from_mechanism`], whatever the budget.
    ///
    /// # Errors
    /// As [`PrivacyLossDistribution::from_mechanism`]; [`Error::InvalidParameter`] unless
    /// `merge_budget` is finite and ≥ 0.
    pub fn with_merged_tails<M: MonotonePrivacyLoss>(
        mechanism: &M,
        symmetry: Symmetry,
        step: f64,
        tail_mass: f64,
        bound: Bound,
        merge_budget: f64,
    ) -> Result<Self> {
        check_step(step)?;
        if !(tail_mass > 0.0 && tail_mass < 1.0) {
            return Err(Error::invalid("tail_mass", tail_mass, "a number in (0, 1)"));
        }
        Ok(match bound {
            Bound::Upper => {
                let bins = LossBins::with_merged_tails(mechanism, step, tail_mass, merge_budget)?;
                let remove = bins.connect_the_dots();
                let add = match symmetry {
                    Symmetry::Symmetric => AddDirection::Same,
                    Symmetry::Asymmetric => {
                        AddDirection::deferred(move || bins.swapped().connect_the_dots())
                    }
                };
                PrivacyLossDistribution { remove, add }
            }
            Bound::Lower if mechanism.constant_loss_regions() != (None, None) => {
                // The PLD has atoms (e.g. ±ε₀ for Laplace noise): keep them whole and merge the
                // continuous part around them (see `LossAtoms::lower_pmf`).
                let atoms = LossAtoms::merged_from_mechanism(mechanism, 0.5 * step, tail_mass)?;
                PrivacyLossDistribution {
                    remove: atoms.lower_pmf(step)?,
                    add: AddDirection::from_option(match symmetry {
                        Symmetry::Symmetric => None,
                        Symmetry::Asymmetric => Some(atoms.swapped().lower_pmf(step)?),
                    }),
                }
            }
            Bound::Lower => {
                let atoms =
                    LumpedAtoms::with_merged_tails(mechanism, step, tail_mass, merge_budget)?;
                PrivacyLossDistribution {
                    remove: atoms.remove_pmf(),
                    add: match symmetry {
                        Symmetry::Symmetric => AddDirection::Same,
                        Symmetry::Asymmetric => AddDirection::deferred(move || atoms.add_pmf()),
                    },
                }
            }
        })
    }

    /// Round exact atoms onto the grid of step `step` (see [`LossAtoms::upper_pmf`] and
    /// [`LossAtoms::lower_pmf`]); the ADD direction, when asymmetric, is the swapped pair.
    ///
    /// # Guarantee
    /// Upper or lower bound on both directions, per `bound`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless `step` is finite and > 0; [`Error::GridTooLarge`] if
    /// the atoms span too many grid points.
    pub fn from_atoms(
        atoms: &LossAtoms,
        symmetry: Symmetry,
        step: f64,
        bound: Bound,
    ) -> Result<Self> {
        check_step(step)?;
        let (remove, add) = match (bound, symmetry) {
            (Bound::Upper, Symmetry::Symmetric) => (atoms.upper_pmf(step)?, None),
            (Bound::Upper, Symmetry::Asymmetric) => {
                (atoms.upper_pmf(step)?, Some(atoms.swapped_upper_pmf(step)?))
            }
            (Bound::Lower, Symmetry::Symmetric) => (atoms.lower_pmf(step)?, None),
            (Bound::Lower, Symmetry::Asymmetric) => (
                atoms.lower_pmf(step)?,
                Some(atoms.swapped().lower_pmf(step)?),
            ),
        };
        Ok(PrivacyLossDistribution {
            remove,
            add: AddDirection::from_option(add),
        })
    }

    /// A PLD from explicit grid PMFs (both of the same bound and step).
    ///
    /// # Errors
    /// [`Error::IncompatibleDistributions`] if the bounds or steps differ.
    pub fn from_pmfs(remove: GridPmf, add: Option<GridPmf>) -> Result<Self> {
        if let Some(add) = &add {
            if add.bound() != remove.bound() || add.step() != remove.step() {
                return Err(Error::IncompatibleDistributions {
                    reason: "ADD and REMOVE must share bound and grid step".into(),
                });
            }
        }
        Ok(PrivacyLossDistribution {
            remove,
            add: AddDirection::from_option(add),
        })
    }

    /// The revealed mixture `Σ wᵢ·PLDᵢ` (pair i used with probability wᵢ, the same under
    /// both datasets, and the index seen), direction by direction (see
    /// [`GridPmf::mixture`]).
    ///
    /// # Guarantee
    /// An upper (lower) bound on the revealed mixture when every part is one on its pair.
    ///
    /// # Errors
    /// As [`GridPmf::mixture`].
    pub fn mixture(parts: &[(f64, &PrivacyLossDistribution)]) -> Result<Self> {
        let remove: Vec<(f64, &GridPmf)> = parts.iter().map(|(w, p)| (*w, p.remove())).collect();
        let add = if parts.iter().all(|(_, p)| p.add_pmf().is_none()) {
            None
        } else {
            let add: Vec<(f64, &GridPmf)> = parts.iter().map(|(w, p)| (*w, p.add())).collect();
            Some(GridPmf::mixture(&add)?)
        };
        Ok(PrivacyLossDistribution {
            remove: GridPmf::mixture(&remove)?,
            add: AddDirection::from_option(add),
        })
    }

    /// The REMOVE direction.
    pub fn remove(&self) -> &GridPmf {
        &self.remove
    }

    /// The ADD direction (the same PMF as REMOVE when symmetric).
    pub fn add(&self) -> &GridPmf {
        self.add_pmf().unwrap_or(&self.remove)
    }

    /// ADD's own PMF, `None` when it is REMOVE's (rounded here on first use when deferred).
    fn add_pmf(&self) -> Option<&GridPmf> {
        match &self.add {
            AddDirection::Same => None,
            AddDirection::Stored(add) => Some(add),
            AddDirection::Deferred(make, add) => Some(add.get_or_init(|| make())),
        }
    }

    /// Whether ADD is stored separately.
    pub fn symmetry(&self) -> Symmetry {
        match self.add {
            AddDirection::Same => Symmetry::Symmetric,
            _ => Symmetry::Asymmetric,
        }
    }

    /// The bound both directions represent.
    pub fn bound(&self) -> Bound {
        self.remove.bound()
    }

    /// Compose with another PLD, direction by direction.
    ///
    /// # Errors
    /// As [`GridPmf::compose`].
    pub fn compose(&self, other: &Self, tail_mass: f64) -> Result<Self> {
        Self::compose_many(&[self, other], tail_mass)
    }

    /// Compose several PLDs direction by direction, pairing them in a balanced tree.
    ///
    /// # Errors
    /// As [`GridPmf::compose`].
    pub fn compose_many(plds: &[&Self], tail_mass: f64) -> Result<Self> {
        let remove = compose_all(plds.iter().map(|p| p.remove.clone()).collect(), tail_mass)?;
        let add = if plds.iter().all(|p| p.symmetry() == Symmetry::Symmetric) {
            None
        } else {
            Some(compose_all(
                plds.iter().map(|p| p.add().clone()).collect(),
                tail_mass,
            )?)
        };
        Ok(PrivacyLossDistribution {
            remove,
            add: AddDirection::from_option(add),
        })
    }

    /// The k-fold composition with itself, direction by direction.
    ///
    /// # Errors
    /// As [`GridPmf::self_compose`].
    pub fn self_compose(&self, k: u64, tail_mass: f64) -> Result<Self> {
        self.self_compose_tilted(k, tail_mass, 0)
    }

    /// k-fold self-composition with `tilts` extra tilted FFT powers for relative accuracy in
    /// the upper tail (see [`GridPmf::self_compose_tilted`]).
    ///
    /// # Errors
    /// As [`GridPmf::self_compose`].
    pub fn self_compose_tilted(&self, k: u64, tail_mass: f64, tilts: usize) -> Result<Self> {
        Ok(PrivacyLossDistribution {
            remove: self.remove.self_compose_tilted(k, tail_mass, tilts)?,
            add: AddDirection::from_option(match self.add_pmf() {
                Some(add) => Some(add.self_compose_tilted(k, tail_mass, tilts)?),
                None => None,
            }),
        })
    }

    /// δ(ε) of the worse direction.
    ///
    /// # Guarantee
    /// An upper bound on the true δ(ε) for an `Upper` PLD, a lower bound for a `Lower` one.
    pub fn delta_for_epsilon(&self, epsilon: f64) -> f64 {
        let remove = self.remove.delta_for_epsilon(epsilon);
        match self.add_pmf() {
            Some(add) => remove.max(add.delta_for_epsilon(epsilon)),
            None => remove,
        }
    }

    /// δ(ε) of the worse direction at many ε at once (one walk per direction, see
    /// [`GridPmf::delta_for_epsilons`]).
    ///
    /// # Guarantee
    /// As [`Self::delta_for_epsilon`] at each value.
    pub fn delta_for_epsilons(&self, epsilons: &[f64]) -> Vec<f64> {
        let mut deltas = self.remove.delta_for_epsilons(epsilons);
        if let Some(add) = self.add_pmf() {
            for (d, a) in deltas.iter_mut().zip(add.delta_for_epsilons(epsilons)) {
                *d = d.max(a);
            }
        }
        deltas
    }

    /// ε(δ) of the worse direction.
    ///
    /// # Guarantee
    /// An upper bound on the true ε(δ) for an `Upper` PLD, a lower bound for a `Lower` one.
    pub fn epsilon_for_delta(&self, delta: f64) -> f64 {
        let remove = self.remove.epsilon_for_delta(delta);
        match self.add_pmf() {
            Some(add) => remove.max(add.epsilon_for_delta(delta)),
            None => remove,
        }
    }
}

/// An upper and a lower PLD of the same mechanism, answering with guaranteed brackets.
///
/// The lower end may also be read from lower PLDs of the same composition on coarser grids
/// (`coarser_lowers`, filled by [`crate::Accountant::pld`] with the grids 2h, 4h, …): every
/// one of them is a lower bound, so their maximum is one too. Second-order lower roundings
/// on different grids are not nested (halving h can loosen them at some ε by a fraction of
/// their O(h²) error); with the coarser grids included, halving h never loosens the lower end,
/// because the grids of h/2 include those of h.
#[derive(Debug, Clone, PartialEq)]
pub struct BracketedPld {
    /// Pessimistic PLD.
    pub upper: PrivacyLossDistribution,
    /// Optimistic PLD on the same grid as `upper`.
    pub lower: PrivacyLossDistribution,
    /// Optimistic PLDs of the same composition on coarser grids (may be empty).
    pub coarser_lowers: Vec<PrivacyLossDistribution>,
}

impl BracketedPld {
    /// Discretize a mechanism in both bounds from one set of CDF evaluations.
    ///
    /// # Errors
    /// As [`LossBins::from_mechanism`].
    pub fn from_mechanism<M: MonotonePrivacyLoss>(
        mechanism: &M,
        symmetry: Symmetry,
        step: f64,
        tail_mass: f64,
    ) -> Result<Self> {
        Ok(BracketedPld {
            upper: PrivacyLossDistribution::from_mechanism(
                mechanism,
                symmetry,
                step,
                tail_mass,
                Bound::Upper,
            )?,
            lower: PrivacyLossDistribution::from_mechanism(
                mechanism,
                symmetry,
                step,
                tail_mass,
                Bound::Lower,
            )?,
            coarser_lowers: Vec::new(),
        })
    }

    /// Compose several, bound by bound (the finest lower PLDs only: `coarser_lowers` of the
    /// result is empty).
    ///
    /// # Errors
    /// As [`GridPmf::compose`].
    pub fn compose_many(plds: &[Self], tail_mass: f64) -> Result<Self> {
        let uppers: Vec<&PrivacyLossDistribution> = plds.iter().map(|p| &p.upper).collect();
        let lowers: Vec<&PrivacyLossDistribution> = plds.iter().map(|p| &p.lower).collect();
        Ok(BracketedPld {
            upper: PrivacyLossDistribution::compose_many(&uppers, tail_mass)?,
            lower: PrivacyLossDistribution::compose_many(&lowers, tail_mass)?,
            coarser_lowers: Vec::new(),
        })
    }

    /// k-fold self-composition, bound by bound.
    ///
    /// # Errors
    /// As [`GridPmf::self_compose`].
    pub fn self_compose(&self, k: u64, tail_mass: f64) -> Result<Self> {
        self.self_compose_tilted(k, tail_mass, 0)
    }

    /// k-fold self-composition with extra tilted FFT powers for tail accuracy, bound by bound
    /// (see [`GridPmf::self_compose_tilted`]); `coarser_lowers` are composed too.
    ///
    /// # Errors
    /// As [`GridPmf::self_compose`].
    pub fn self_compose_tilted(&self, k: u64, tail_mass: f64, tilts: usize) -> Result<Self> {
        Ok(BracketedPld {
            upper: self.upper.self_compose_tilted(k, tail_mass, tilts)?,
            lower: self.lower.self_compose_tilted(k, tail_mass, tilts)?,
            coarser_lowers: self
                .coarser_lowers
                .iter()
                .map(|pld| pld.self_compose_tilted(k, tail_mass, tilts))
                .collect::<Result<_>>()?,
        })
    }

    /// Every lower PLD: `lower`, then `coarser_lowers`.
    pub fn lowers(&self) -> impl Iterator<Item = &PrivacyLossDistribution> {
        std::iter::once(&self.lower).chain(&self.coarser_lowers)
    }

    /// Guaranteed bracket on δ(ε): the lower end is the largest over [`Self::lowers`].
    pub fn delta_for_epsilon(&self, epsilon: f64) -> Bracket {
        let upper = self.upper.delta_for_epsilon(epsilon);
        Bracket {
            upper,
            lower: self
                .lowers()
                .map(|pld| pld.delta_for_epsilon(epsilon))
                .fold(0.0, f64::max)
                .min(upper),
        }
    }

    /// Guaranteed brackets on δ(ε) at many ε at once, as [`Self::delta_for_epsilon`] gives
    /// each (one walk down each grid).
    pub fn delta_for_epsilons(&self, epsilons: &[f64]) -> Vec<Bracket> {
        let upper = self.upper.delta_for_epsilons(epsilons);
        let mut lower = vec![0.0f64; epsilons.len()];
        for pld in self.lowers() {
            for (l, d) in lower.iter_mut().zip(pld.delta_for_epsilons(epsilons)) {
                *l = l.max(d);
            }
        }
        upper
            .into_iter()
            .zip(lower)
            .map(|(upper, lower)| Bracket {
                upper,
                lower: lower.min(upper),
            })
            .collect()
    }

    /// Guaranteed bracket on ε(δ): the lower end is the largest over [`Self::lowers`].
    pub fn epsilon_for_delta(&self, delta: f64) -> Bracket {
        Bracket {
            upper: self.upper.epsilon_for_delta(delta),
            lower: self
                .lowers()
                .map(|pld| pld.epsilon_for_delta(delta))
                .fold(0.0, f64::max),
        }
    }
}
